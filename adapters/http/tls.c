/*
 * tls — GnuTLS client sessions over memory buffers (see tls.h).
 */
#include "adapters/http/tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "adapters/http/gnutls_shim.h"
#include "adapters/http/trust.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

struct tls {
	gnutls_session_t s;
	char *host;
	struct strbuf inbox; /* ciphertext not yet read by GnuTLS */
	size_t inbox_off;
	bool eof;
	tls_out_fn out;
	void *ud;
	char verify_msg[160]; /* why verification refused the peer */
};

static gnutls_certificate_credentials_t cred;
static int load_state; /* 0 not tried, 1 ok, -1 failed */
static char load_msg[GA_ERR_MSG_MAX];

/* Ciphertext received and not yet read by GnuTLS. */
static size_t unread(const struct tls *t)
{
	return t->inbox.len - t->inbox_off;
}

static ssize_t pull(gnutls_transport_ptr_t p, void *buf, size_t len)
{
	struct tls *t = p;
	size_t avail = t->inbox.len - t->inbox_off;
	if (avail == 0) {
		if (t->eof)
			return 0;
		gt.transport_set_errno(t->s, EAGAIN);
		return -1;
	}
	size_t n = avail < len ? avail : len;
	memcpy(buf, t->inbox.buf + t->inbox_off, n);
	t->inbox_off += n;
	if (t->inbox_off == t->inbox.len) {
		sb_reset(&t->inbox);
		t->inbox_off = 0;
	}
	return (ssize_t)n;
}

static ssize_t push(gnutls_transport_ptr_t p, const void *data, size_t len)
{
	struct tls *t = p;
	t->out(t->ud, data, len);
	return (ssize_t)len;
}

/* Called by GnuTLS once the server's certificate has arrived. */
static int verify_cb(gnutls_session_t s)
{
	struct tls *t = gt.session_get_ptr(s);
	return trust_verify(s, t->host, t->verify_msg, sizeof t->verify_msg) == 0
	               ? 0
	               : GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR;
}

int tls_load(struct ga_err *err)
{
	if (load_state == 0) {
		struct ga_err e = {{0}};
		load_state = -1;
		if (gnutls_shim_load(&e) != 0)
			snprintf(load_msg, sizeof load_msg, "%s", e.msg);
		else if (gt.global_init() < 0 || gt.cert_alloc(&cred) < 0)
			snprintf(load_msg, sizeof load_msg, "GnuTLS could not be initialised");
		else
			load_state = 1;
		if (load_state == 1)
			gt.cert_set_verify_function(cred, verify_cb);
	}
	if (load_state == 1)
		return 0;
	return err_set(err, "%s", load_msg);
}

static int setup(struct tls *t, bool ip_literal, bool offer_h2)
{
	static const gnutls_datum_t alpn[] = {{(unsigned char *)"h2", 2},
	                                      {(unsigned char *)"http/1.1", 8}};
	if (gt.set_default_priority(t->s) < 0 ||
	    gt.credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, cred) < 0 ||
	    gt.alpn_set_protocols(t->s, offer_h2 ? alpn : alpn + 1, offer_h2 ? 2 : 1, 0) < 0)
		return -1;
	if (!ip_literal && gt.server_name_set(t->s, GNUTLS_NAME_DNS, t->host, strlen(t->host)) < 0)
		return -1;
	gt.session_set_ptr(t->s, t);
	gt.transport_set_ptr(t->s, t);
	gt.transport_set_push(t->s, push);
	gt.transport_set_pull(t->s, pull);
	return 0;
}

struct tls *tls_new(const char *host, bool ip_literal, bool offer_h2, tls_out_fn out, void *ud,
                    struct ga_err *err)
{
	if (tls_load(err) != 0)
		return NULL;
	struct tls *t = xcalloc(1, sizeof *t);
	t->host = xstrdup(host);
	t->out = out;
	t->ud = ud;
	sb_init(&t->inbox, TLS_INBOX_MAX);
	if (gt.init(&t->s, GNUTLS_CLIENT | GNUTLS_NONBLOCK) < 0) {
		t->s = NULL;
		tls_free(t);
		err_set(err, "GnuTLS could not create a session");
		return NULL;
	}
	if (setup(t, ip_literal, offer_h2) != 0) {
		tls_free(t);
		err_set(err, "GnuTLS could not set up a session for %s", host);
		return NULL;
	}
	return t;
}

void tls_free(struct tls *t)
{
	if (!t)
		return;
	if (t->s)
		gt.deinit(t->s);
	sb_free(&t->inbox);
	free(t->host);
	free(t);
}

int tls_feed(struct tls *t, const char *data, size_t len)
{
	return sb_append(&t->inbox, data, len);
}

void tls_feed_eof(struct tls *t)
{
	t->eof = true;
}

int tls_handshake(struct tls *t, char *msg, size_t cap)
{
	int rc = GNUTLS_E_AGAIN;
	for (int i = 0; i < TLS_NONFATAL_MAX;) {
		size_t before = unread(t);
		rc = gt.handshake(t->s);
		if (rc == 0)
			return 1;
		if (rc == GNUTLS_E_AGAIN && unread(t) == 0 && !t->eof)
			return 0;
		if ((rc == GNUTLS_E_AGAIN && unread(t) == 0) ||
		    (rc != GNUTLS_E_AGAIN && gt.error_is_fatal(rc)))
			break;
		if (unread(t) == before)
			i++;
	}
	if (rc == GNUTLS_E_AGAIN) {
		snprintf(msg, cap, "the server closed the connection during the handshake");
		return -1;
	}
	if (t->verify_msg[0])
		snprintf(msg, cap, "%s", t->verify_msg);
	else
		snprintf(msg, cap, "the handshake failed: %s", gt.strerror(rc));
	return -1;
}

int tls_send(struct tls *t, const char *data, size_t len, char *msg, size_t cap)
{
	for (int again = 0; len;) {
		ssize_t n = gt.record_send(t->s, data, len);
		/* push never blocks, so AGAIN only resumes a record in progress */
		if ((n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) &&
		    ++again < TLS_NONFATAL_MAX)
			continue;
		if (n < 0) {
			snprintf(msg, cap, "sending failed: %s", gt.strerror((int)n));
			return -1;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

long tls_recv(struct tls *t, char *buf, size_t cap, char *msg, size_t msg_cap)
{
	ssize_t n = GNUTLS_E_AGAIN;
	for (int i = 0; i < TLS_NONFATAL_MAX;) {
		size_t before = unread(t);
		n = gt.record_recv(t->s, buf, cap);
		if (n > 0)
			return (long)n;
		if (n == 0 || n == GNUTLS_E_PREMATURE_TERMINATION)
			return -2;
		/* AGAIN after a post-handshake message (a session ticket) with
		 * records still waiting: go on with them. */
		if (n == GNUTLS_E_AGAIN && unread(t) == 0)
			return t->eof ? -2 : 0;
		if (n != GNUTLS_E_AGAIN && gt.error_is_fatal((int)n))
			break;
		if (unread(t) == before)
			i++;
	}
	snprintf(msg, msg_cap, "receiving failed: %s", gt.strerror((int)n));
	return -1;
}

bool tls_alpn_h2(struct tls *t)
{
	gnutls_datum_t p = {0};
	return gt.alpn_get_selected(t->s, &p) == 0 && p.size == 2 && memcmp(p.data, "h2", 2) == 0;
}
