/*
 * curl_transport — the libcurl transport of transport.h: curl's
 * multi-socket interface driven by libuv.
 *
 * The wiring follows curl's multi-uv pattern: curl tells us which sockets
 * to watch (CURLMOPT_SOCKETFUNCTION → one uv_poll_t per socket) and when to
 * call it back (CURLMOPT_TIMERFUNCTION → one uv_timer_t); readiness is fed
 * back with curl_multi_socket_action, and finished transfers are collected
 * with curl_multi_info_read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adapters/http/curl_shim.h"
#include "adapters/http/transport.h"
#include "common/err.h"
#include "common/log.h"
#include "common/xalloc.h"

#define LOG_COMP "http"

/* Per request: the easy handle and what its callbacks collect. */
struct creq {
	CURL *easy;
	struct curl_slist *hdrs;
	bool too_large;
	char errbuf[CURL_ERROR_SIZE];
};

struct sock {
	uv_poll_t poll;
	curl_socket_t fd;
	struct http_transport *t;
};

struct http_transport {
	uv_loop_t *loop;
	CURLM *multi;
	uv_timer_t curl_timer;
	int open_handles; /* uv handles not yet closed */
	int in_multi;     /* depth of check_multi_info / socket_action */
	bool closing;     /* transport_close called */
	bool torn_down;   /* curl multi cleaned up, timers closing */
	void (*done)(void *ud);
	void *done_ud;
};

int transport_url_host(const char *url, char *out, size_t cap, struct ga_err *err)
{
	if (curl_shim_load(err) != 0)
		return -1;
	CURLU *u = curl_url();
	if (!u)
		return err_set(err, "out of memory parsing URL");
	int rc = -1;
	char *scheme = NULL, *host = NULL;
	CURLUcode uc = curl_url_set(u, CURLUPART_URL, url, 0);
	if (uc != CURLUE_OK) {
		err_set(err, "'%s' is not a valid URL: %s", url, curl_url_strerror(uc));
		goto out;
	}
	if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0)) {
		err_set(err, "'%s' must start with http:// or https://", url);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host[0]) {
		err_set(err, "'%s' has no host name", url);
		goto out;
	}
	if (strlen(host) >= cap || strlen(host) >= HTTP_HOST_MAX) {
		err_set(err, "the host name in '%s' is too long", url);
		goto out;
	}
	strcpy(out, host);
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return rc;
}

time_t transport_parse_date(const char *value)
{
	if (curl_shim_load(NULL) != 0)
		return -1;
	return curl_getdate(value, NULL);
}

static void creq_free(struct http_req *r)
{
	struct creq *q = r->tr;
	if (!q)
		return;
	if (q->easy)
		curl_easy_cleanup(q->easy);
	curl_slist_free_all(q->hdrs);
	free(q);
	r->tr = NULL;
}

/* --- curl callbacks -------------------------------------------------------------------- */

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct http_req *r = ud;
	struct creq *q = r->tr;
	size_t n = size * nmemb;
	if (r->resp_body.len + n > r->max_body || sb_append(&r->resp_body, ptr, n) != 0) {
		q->too_large = true;
		return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
	}
	return n;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *ud)
{
	struct http_req *r = ud;
	size_t n = size * nitems;
	/* A new status line (after 100 Continue, or a proxy's CONNECT answer)
	 * starts a new header block: only the final response's headers count. */
	if (n >= 5 && memcmp(buf, "HTTP/", 5) == 0) {
		http_req_reset_headers(r);
		return n;
	}
	const char *colon = memchr(buf, ':', n);
	if (!colon || colon == buf)
		return n;
	size_t name_len = (size_t)(colon - buf);
	const char *v = colon + 1;
	const char *end = buf + n;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	http_req_add_header(r, buf, name_len, v, (size_t)(end - v));
	return n;
}

static void on_sock_closed(uv_handle_t *handle);
static void on_poll(uv_poll_t *p, int status, int events);
static void check_multi_info(struct http_transport *t);
static void maybe_done(struct http_transport *t);
static void teardown(struct http_transport *t);

static int on_curl_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	(void)easy;
	struct http_transport *t = userp;
	struct sock *sk = socketp;
	if (what == CURL_POLL_REMOVE) {
		if (sk) {
			uv_poll_stop(&sk->poll);
			if (!t->torn_down)
				curl_multi_assign(t->multi, s, NULL);
			uv_close((uv_handle_t *)&sk->poll, on_sock_closed);
		}
		return 0;
	}
	if (!sk) {
		sk = xcalloc(1, sizeof *sk);
		sk->fd = s;
		sk->t = t;
		int rc = uv_poll_init_socket(t->loop, &sk->poll, s);
		if (rc != 0) {
			log_kv(LOG_LEVEL_ERROR, LOG_COMP, "cannot watch socket", "error",
			       uv_strerror(rc));
			free(sk);
			return -1; /* curl fails the transfer */
		}
		sk->poll.data = sk;
		t->open_handles++;
		curl_multi_assign(t->multi, s, sk);
	}
	int events = 0;
	if (what & CURL_POLL_IN)
		events |= UV_READABLE;
	if (what & CURL_POLL_OUT)
		events |= UV_WRITABLE;
	uv_poll_start(&sk->poll, events, on_poll);
	return 0;
}

static void on_sock_closed(uv_handle_t *handle)
{
	struct sock *sk = handle->data;
	struct http_transport *t = sk->t;
	free(sk);
	t->open_handles--;
	maybe_done(t);
}

static void socket_action(struct http_transport *t, curl_socket_t fd, int flags)
{
	int running = 0;
	t->in_multi++;
	curl_multi_socket_action(t->multi, fd, flags, &running);
	t->in_multi--;
	check_multi_info(t);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	struct sock *sk = p->data;
	struct http_transport *t = sk->t;
	if (t->torn_down)
		return;
	int flags = 0;
	if (status < 0)
		flags = CURL_CSELECT_ERR;
	else {
		if (events & UV_READABLE)
			flags |= CURL_CSELECT_IN;
		if (events & UV_WRITABLE)
			flags |= CURL_CSELECT_OUT;
	}
	socket_action(t, sk->fd, flags);
}

static void on_curl_timeout(uv_timer_t *timer)
{
	struct http_transport *t = timer->data;
	if (!t->torn_down)
		socket_action(t, CURL_SOCKET_TIMEOUT, 0);
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
	(void)multi;
	struct http_transport *t = userp;
	if (t->torn_down)
		return 0;
	if (timeout_ms < 0)
		uv_timer_stop(&t->curl_timer);
	else
		uv_timer_start(&t->curl_timer, on_curl_timeout, (uint64_t)timeout_ms, 0);
	return 0;
}

/* --- completion ---------------------------------------------------------------------------- */

static enum http_error classify_curl(CURLcode rc, struct http_req *r, char *msg, size_t cap)
{
	struct creq *q = r->tr;
	const char *detail = q->errbuf[0] ? q->errbuf : curl_easy_strerror(rc);
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		err_fmt(msg, cap, "%s did not answer within %u ms (%s)", r->host, r->timeout_ms,
		        detail);
		return HTTP_ERR_TIMEOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
		err_fmt(msg, cap, "cannot connect to %s: %s", r->host, detail);
		return HTTP_ERR_CONNECT;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
		err_fmt(msg, cap, "TLS with %s failed: %s", r->host, detail);
		return HTTP_ERR_TLS;
	case CURLE_FILESIZE_EXCEEDED: /* Content-Length announced too much */
	case CURLE_WRITE_ERROR:
		if (q->too_large || rc == CURLE_FILESIZE_EXCEEDED) {
			http_req_too_large_msg(r, msg, cap);
			return HTTP_ERR_TOO_LARGE;
		}
		break;
	default:
		break;
	}
	err_fmt(msg, cap, "request to %s failed: %s", r->host, detail);
	return HTTP_ERR_TRANSPORT;
}

static void finish(struct http_req *r, CURLcode rc)
{
	struct creq *q = r->tr;
	long status = 0;
	curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &status);
	char msg[GA_ERR_MSG_MAX] = "";
	enum http_error kind = HTTP_OK;
	if (rc != CURLE_OK)
		kind = classify_curl(rc, r, msg, sizeof msg);
	creq_free(r);
	http_req_done(r, kind, status, msg);
}

static void check_multi_info(struct http_transport *t)
{
	CURLMsg *m;
	int left;
	t->in_multi++;
	while (!t->torn_down && (m = curl_multi_info_read(t->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		CURL *easy = m->easy_handle;
		CURLcode rc = m->data.result;
		struct http_req *r = NULL;
		curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&r);
		curl_multi_remove_handle(t->multi, easy);
		finish(r, rc);
	}
	t->in_multi--;
	/* close was requested from a callback: tear down now that curl is no
	 * longer on the stack. */
	if (t->closing && !t->torn_down && t->in_multi == 0)
		teardown(t);
}

/* --- starting requests -------------------------------------------------------------------- */

static void set_method(CURL *e, const struct http_req *r)
{
	if (strcmp(r->method, "GET") == 0) {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
		return;
	}
	if (strcmp(r->method, "HEAD") == 0) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
		return;
	}
	if (strcmp(r->method, "POST") == 0)
		curl_easy_setopt(e, CURLOPT_POST, 1L);
	else
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body ? r->body : "");
}

static void set_options(CURL *e, struct http_req *r, struct creq *q)
{
	curl_easy_setopt(e, CURLOPT_URL, r->url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)r);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, HTTP_USER_AGENT);
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)r->connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)r->timeout_ms);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, q->errbuf);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)r->max_body);
	if (q->hdrs)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, q->hdrs);
	set_method(e, r);
}

int transport_start(struct http_transport *t, struct http_req *r)
{
	struct creq *q = xcalloc(1, sizeof *q);
	r->tr = q;
	for (size_t i = 0; i < r->n_headers; i++) {
		struct curl_slist *n = curl_slist_append(q->hdrs, r->headers[i]);
		if (!n) {
			creq_free(r);
			return -1;
		}
		q->hdrs = n;
	}
	q->easy = curl_easy_init();
	if (!q->easy) {
		creq_free(r);
		return -1;
	}
	set_options(q->easy, r, q);
	if (curl_multi_add_handle(t->multi, q->easy) != CURLM_OK) {
		creq_free(r);
		return -1;
	}
	return 0;
}

void transport_cancel(struct http_transport *t, struct http_req *r)
{
	struct creq *q = r->tr;
	if (q && q->easy && !t->torn_down)
		curl_multi_remove_handle(t->multi, q->easy);
	creq_free(r);
}

/* --- lifetime ------------------------------------------------------------------------------- */

struct http_transport *transport_new(uv_loop_t *loop, struct ga_err *err)
{
	if (curl_shim_load(err) != 0)
		return NULL;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		err_set(err, "libcurl could not be initialised");
		return NULL;
	}
	struct http_transport *t = xcalloc(1, sizeof *t);
	t->loop = loop;
	t->multi = curl_multi_init();
	if (!t->multi) {
		free(t);
		curl_global_cleanup();
		err_set(err, "libcurl could not create a multi handle");
		return NULL;
	}
	uv_timer_init(loop, &t->curl_timer);
	t->curl_timer.data = t;
	t->open_handles = 1;
	curl_multi_setopt(t->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
	curl_multi_setopt(t->multi, CURLMOPT_SOCKETDATA, t);
	curl_multi_setopt(t->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
	curl_multi_setopt(t->multi, CURLMOPT_TIMERDATA, t);
	return t;
}

static void maybe_done(struct http_transport *t)
{
	if (t->torn_down && t->open_handles == 0) {
		void (*done)(void *) = t->done;
		void *ud = t->done_ud;
		free(t);
		curl_global_cleanup();
		if (done)
			done(ud);
	}
}

static void on_timer_closed(uv_handle_t *h)
{
	struct http_transport *t = h->data;
	t->open_handles--;
	maybe_done(t);
}

/* curl_multi_cleanup reports CURL_POLL_REMOVE for the sockets it still
 * watches; torn_down makes late timer calls no-ops. */
static void teardown(struct http_transport *t)
{
	t->torn_down = true;
	curl_multi_cleanup(t->multi);
	t->multi = NULL;
	uv_timer_stop(&t->curl_timer);
	uv_close((uv_handle_t *)&t->curl_timer, on_timer_closed);
}

void transport_close(struct http_transport *t, void (*done)(void *ud), void *ud)
{
	t->closing = true;
	t->done = done;
	t->done_ud = ud;
	if (t->in_multi == 0)
		teardown(t);
}
