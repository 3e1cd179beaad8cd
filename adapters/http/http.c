/*
 * http — curl's multi-socket interface driven by libuv (see http.h).
 *
 * The wiring follows curl's multi-uv pattern: curl tells us which sockets
 * to watch (CURLMOPT_SOCKETFUNCTION → one uv_poll_t per socket) and when to
 * call it back (CURLMOPT_TIMERFUNCTION → one uv_timer_t); readiness is fed
 * back with curl_multi_socket_action, and finished transfers are collected
 * with curl_multi_info_read. A second timer wakes the per-host dispatcher
 * when a paced request becomes due.
 */
#include "adapters/http/http.h"

#include "adapters/http/curl_shim.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/err.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#define LOG_COMP "http"

enum req_state { REQ_QUEUED, REQ_ACTIVE };

struct req {
	struct req *prev, *next; /* in c->queued or c->active */
	enum req_state state;
	uint64_t id;
	struct http_client *c;
	char host[HTTP_HOST_MAX];
	char *url;
	char *method;
	char *body;
	size_t body_len;
	struct curl_slist *hdrs;
	unsigned connect_timeout_ms, timeout_ms;
	size_t max_body;
	CURL *easy;
	struct strbuf resp_body;
	struct http_header resp_headers[HTTP_MAX_RESPONSE_HEADERS];
	size_t n_resp_headers;
	bool too_large;
	char errbuf[CURL_ERROR_SIZE];
	uint64_t started_ms;
	http_done_fn cb;
	void *ud;
};

struct host {
	char name[HTTP_HOST_MAX];
	bool used;
	bool configured; /* spacing set explicitly: recycle last */
	unsigned spacing_ms;
	uint64_t last_start_ms; /* uv_now; 0 = never */
	uint64_t hold_until_ms;
	uint64_t last_used_ms;
	unsigned pass; /* dispatcher pass that found it blocked */
};

struct sock {
	uv_poll_t poll;
	curl_socket_t fd;
	struct http_client *c;
};

struct list {
	struct req *head, *tail;
	size_t n;
};

struct http_client {
	uv_loop_t *loop;
	CURLM *multi;
	uv_timer_t curl_timer;
	uv_timer_t dispatch_timer;
	struct list queued, active;
	struct host hosts[HTTP_MAX_HOSTS];
	struct http_client_opts opts;
	uint64_t next_id;
	unsigned pass;
	int open_handles; /* uv handles not yet closed */
	int in_multi;     /* depth of check_multi_info / socket_action */
	bool closing;     /* http_client_close called */
	bool torn_down;   /* curl multi cleaned up, timers closing */
};

/* --- small helpers ------------------------------------------------------------- */

static void list_push(struct list *l, struct req *r)
{
	r->prev = l->tail;
	r->next = NULL;
	if (l->tail)
		l->tail->next = r;
	else
		l->head = r;
	l->tail = r;
	l->n++;
}

static void list_remove(struct list *l, struct req *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		l->head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		l->tail = r->prev;
	r->prev = r->next = NULL;
	l->n--;
}

const char *http_error_name(enum http_error e)
{
	switch (e) {
	case HTTP_OK:
		return "ok";
	case HTTP_ERR_TIMEOUT:
		return "timeout";
	case HTTP_ERR_CONNECT:
		return "connect";
	case HTTP_ERR_TLS:
		return "tls";
	case HTTP_ERR_TOO_LARGE:
		return "too_large";
	case HTTP_ERR_TRANSPORT:
		return "transport";
	case HTTP_ERR_CANCELLED:
		return "cancelled";
	}
	return "unknown";
}

static void format_size(size_t n, char *out, size_t cap)
{
	if (n >= 1024 * 1024 && n % (1024 * 1024) == 0)
		snprintf(out, cap, "%zu MiB", n / (1024 * 1024));
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(out, cap, "%zu KiB", n / 1024);
	else
		snprintf(out, cap, "%zu bytes", n);
}

int http_url_host(const char *url, char *out, size_t cap, struct ga_err *err)
{
	if (!url || !*url)
		return err_set(err, "the URL is empty");
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

int http_parse_retry_after(const char *value, int64_t now_ms, int64_t *delay_ms)
{
	if (!value)
		return -1;
	while (*value == ' ' || *value == '\t')
		value++;
	if (!*value)
		return -1;
	if (*value >= '0' && *value <= '9') {
		int64_t secs = 0;
		const char *p = value;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (secs > INT64_MAX / 10000)
				return -1; /* absurd: treat as unparseable */
			secs = secs * 10 + (*p - '0');
		}
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p)
			return -1;
		*delay_ms = secs * 1000;
		return 0;
	}
	time_t t = curl_getdate(value, NULL);
	if (t < 0)
		return -1;
	int64_t d = (int64_t)t * 1000 - now_ms;
	*delay_ms = d > 0 ? d : 0;
	return 0;
}

const char *http_response_header(const struct http_response *resp, const char *name)
{
	for (size_t i = 0; i < resp->n_headers; i++)
		if (strcasecmp(resp->headers[i].name, name) == 0)
			return resp->headers[i].value;
	return NULL;
}

/* --- hosts ------------------------------------------------------------------------- */

static struct host *host_get(struct http_client *c, const char *name, bool create)
{
	struct host *victim = NULL;
	for (size_t i = 0; i < HTTP_MAX_HOSTS; i++) {
		struct host *h = &c->hosts[i];
		if (h->used && strcmp(h->name, name) == 0) {
			h->last_used_ms = uv_now(c->loop);
			return h;
		}
	}
	if (!create)
		return NULL;
	/* Recycle: a free slot, else the least recently used unconfigured one,
	 * else the least recently used of all. A recycled entry only loses its
	 * pacing memory, which errs towards sending sooner, never dropping. */
	for (size_t i = 0; i < HTTP_MAX_HOSTS; i++) {
		struct host *h = &c->hosts[i];
		if (!h->used) {
			victim = h;
			break;
		}
		if (!victim || (victim->configured && !h->configured) ||
		    (victim->configured == h->configured && h->last_used_ms < victim->last_used_ms))
			victim = h;
	}
	memset(victim, 0, sizeof *victim);
	victim->used = true;
	snprintf(victim->name, sizeof victim->name, "%s", name);
	victim->spacing_ms = c->opts.default_spacing_ms;
	victim->last_used_ms = uv_now(c->loop);
	return victim;
}

void http_set_host_spacing(struct http_client *c, const char *host, unsigned spacing_ms)
{
	struct host *h = host_get(c, host, true);
	h->spacing_ms = spacing_ms;
	h->configured = true;
}

static void dispatch(struct http_client *c);

void http_hold_host(struct http_client *c, const char *host, uint64_t delay_ms)
{
	struct host *h = host_get(c, host, true);
	uint64_t until = uv_now(c->loop) + delay_ms;
	if (until > h->hold_until_ms)
		h->hold_until_ms = until;
	log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "host held", "host", host, "ms", LOG_INT(delay_ms));
}

uv_loop_t *http_client_loop(const struct http_client *c)
{
	return c->loop;
}

size_t http_pending(const struct http_client *c)
{
	return c->queued.n + c->active.n;
}

/* --- request memory ----------------------------------------------------------------- */

static void req_free(struct req *r)
{
	if (!r)
		return;
	if (r->easy)
		curl_easy_cleanup(r->easy);
	curl_slist_free_all(r->hdrs);
	free(r->url);
	free(r->method);
	free(r->body);
	sb_free(&r->resp_body);
	for (size_t i = 0; i < r->n_resp_headers; i++) {
		free(r->resp_headers[i].name);
		free(r->resp_headers[i].value);
	}
	free(r);
}

static void reset_resp_headers(struct req *r)
{
	for (size_t i = 0; i < r->n_resp_headers; i++) {
		free(r->resp_headers[i].name);
		free(r->resp_headers[i].value);
	}
	r->n_resp_headers = 0;
}

/* --- curl callbacks -------------------------------------------------------------------- */

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct req *r = ud;
	size_t n = size * nmemb;
	if (r->resp_body.len + n > r->max_body) {
		r->too_large = true;
		return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
	}
	if (sb_append(&r->resp_body, ptr, n) != 0) {
		r->too_large = true;
		return 0;
	}
	return n;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *ud)
{
	struct req *r = ud;
	size_t n = size * nitems;
	/* A new status line (after 100 Continue, or a proxy's CONNECT answer)
	 * starts a new header block: only the final response's headers count. */
	if (n >= 5 && memcmp(buf, "HTTP/", 5) == 0) {
		reset_resp_headers(r);
		return n;
	}
	if (n > HTTP_MAX_HEADER_BYTES || r->n_resp_headers >= HTTP_MAX_RESPONSE_HEADERS)
		return n; /* bounded: extra or oversized headers are ignored */
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
	struct http_header *h = &r->resp_headers[r->n_resp_headers++];
	h->name = xstrndup(buf, name_len);
	h->value = xstrndup(v, (size_t)(end - v));
	return n;
}

static void on_sock_closed(uv_handle_t *handle);
static void on_poll(uv_poll_t *p, int status, int events);
static void check_multi_info(struct http_client *c);
static void maybe_free(struct http_client *c);

static int on_curl_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct http_client *c = userp;
	struct sock *sk = socketp;
	if (what == CURL_POLL_REMOVE) {
		if (sk) {
			uv_poll_stop(&sk->poll);
			if (!c->torn_down)
				curl_multi_assign(c->multi, s, NULL);
			uv_close((uv_handle_t *)&sk->poll, on_sock_closed);
		}
		return 0;
	}
	if (!sk) {
		sk = xcalloc(1, sizeof *sk);
		sk->fd = s;
		sk->c = c;
		int rc = uv_poll_init_socket(c->loop, &sk->poll, s);
		if (rc != 0) {
			log_kv(LOG_LEVEL_ERROR, LOG_COMP, "cannot watch socket", "error",
			       uv_strerror(rc));
			free(sk);
			return -1; /* curl fails the transfer */
		}
		sk->poll.data = sk;
		c->open_handles++;
		curl_multi_assign(c->multi, s, sk);
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
	struct http_client *c = sk->c;
	free(sk);
	c->open_handles--;
	maybe_free(c);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	struct sock *sk = p->data;
	struct http_client *c = sk->c;
	if (c->torn_down)
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
	int running = 0;
	c->in_multi++;
	curl_multi_socket_action(c->multi, sk->fd, flags, &running);
	c->in_multi--;
	check_multi_info(c);
}

static void on_curl_timeout(uv_timer_t *t)
{
	struct http_client *c = t->data;
	if (c->torn_down)
		return;
	int running = 0;
	c->in_multi++;
	curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	c->in_multi--;
	check_multi_info(c);
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct http_client *c = userp;
	if (c->torn_down)
		return 0;
	if (timeout_ms < 0)
		uv_timer_stop(&c->curl_timer);
	else
		uv_timer_start(&c->curl_timer, on_curl_timeout, (uint64_t)timeout_ms, 0);
	return 0;
}

/* --- completion ---------------------------------------------------------------------------- */

static enum http_error classify_curl(CURLcode rc, struct req *r, char *msg, size_t cap)
{
	const char *detail = r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc);
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
		if (r->too_large || rc == CURLE_FILESIZE_EXCEEDED) {
			char sz[32];
			format_size(r->max_body, sz, sizeof sz);
			err_fmt(msg, cap, "response body larger than %s from %s", sz, r->host);
			return HTTP_ERR_TOO_LARGE;
		}
		break;
	default:
		break;
	}
	err_fmt(msg, cap, "request to %s failed: %s", r->host, detail);
	return HTTP_ERR_TRANSPORT;
}

static void finish(struct http_client *c, struct req *r, CURLcode rc)
{
	struct http_response resp;
	memset(&resp, 0, sizeof resp);
	long status = 0;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
	resp.status = status;
	if (rc != CURLE_OK)
		resp.error = classify_curl(rc, r, resp.error_msg, sizeof resp.error_msg);
	resp.headers = r->resp_headers;
	resp.n_headers = r->n_resp_headers;
	resp.body = sb_cstr(&r->resp_body);
	resp.body_len = r->resp_body.len;
	resp.url = r->url;
	resp.host = r->host;
	resp.id = r->id;
	resp.elapsed_ms = uv_now(c->loop) - r->started_ms;
	log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "response", "method", r->method, "host", r->host,
	       "status", LOG_INT(status), "error", http_error_name(resp.error), "ms",
	       LOG_INT(resp.elapsed_ms));
	if (status > 0 && c->opts.on_response)
		c->opts.on_response(c->opts.observe_ud, c, &resp);
	if (r->cb)
		r->cb(r->ud, &resp);
	req_free(r);
}

static void check_multi_info(struct http_client *c)
{
	CURLMsg *m;
	int left;
	c->in_multi++;
	while (!c->torn_down && (m = curl_multi_info_read(c->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		CURL *easy = m->easy_handle;
		CURLcode rc = m->data.result;
		struct req *r = NULL;
		curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&r);
		curl_multi_remove_handle(c->multi, easy);
		list_remove(&c->active, r);
		finish(c, r, rc);
	}
	c->in_multi--;
	if (c->closing && !c->torn_down && c->in_multi == 0) {
		/* close was requested from a callback: tear down now that curl is
		 * no longer on the stack. */
		http_client_close(c);
		return;
	}
	if (!c->closing)
		dispatch(c);
}

/* --- starting requests -------------------------------------------------------------------- */

/* Ends a request that never produced a response: its callback gets the
 * error ("request to <host> <what>") and the request is freed. */
static void fail_request(struct req *r, enum http_error kind, const char *what)
{
	struct http_response resp;
	memset(&resp, 0, sizeof resp);
	resp.error = kind;
	err_fmt(resp.error_msg, sizeof resp.error_msg, "request to %s %s", r->host, what);
	resp.body = "";
	resp.url = r->url;
	resp.host = r->host;
	resp.id = r->id;
	if (r->cb)
		r->cb(r->ud, &resp);
	req_free(r);
}

static int start(struct http_client *c, struct req *r)
{
	CURL *e = curl_easy_init();
	if (!e)
		return -1;
	r->easy = e;
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
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)r->max_body);
	if (r->hdrs)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->hdrs);
	if (strcmp(r->method, "GET") == 0) {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	} else if (strcmp(r->method, "HEAD") == 0) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else {
		if (strcmp(r->method, "POST") == 0)
			curl_easy_setopt(e, CURLOPT_POST, 1L);
		else
			curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body ? r->body : "");
	}
	r->started_ms = uv_now(c->loop);
	if (curl_multi_add_handle(c->multi, e) != CURLM_OK)
		return -1;
	r->state = REQ_ACTIVE;
	list_push(&c->active, r);
	return 0;
}

static void on_dispatch_timer(uv_timer_t *t)
{
	dispatch(t->data);
}

/* Starts every queued request whose host is ready, keeping FIFO order per
 * host, and arms the dispatch timer for the earliest one still waiting. */
static void dispatch(struct http_client *c)
{
	if (c->closing)
		return;
	uint64_t now = uv_now(c->loop);
	uint64_t wake = UINT64_MAX;
	unsigned pass = ++c->pass;
	struct req *r = c->queued.head;
	while (r) {
		struct req *next = r->next;
		struct host *h = host_get(c, r->host, true);
		if (h->pass == pass) {
			r = next; /* an earlier request to this host is still waiting */
			continue;
		}
		uint64_t ready = h->hold_until_ms;
		if (h->spacing_ms && h->last_start_ms && h->last_start_ms + h->spacing_ms > ready)
			ready = h->last_start_ms + h->spacing_ms;
		if (ready > now) {
			h->pass = pass;
			if (ready < wake)
				wake = ready;
			r = next;
			continue;
		}
		list_remove(&c->queued, r);
		h->last_start_ms = now ? now : 1;
		if (start(c, r) != 0) {
			/* Cannot even hand it to curl: report through the callback on
			 * the next turn, like any other failure. */
			fail_request(r, HTTP_ERR_TRANSPORT,
			             "could not be started (curl refused it)");
		}
		r = next;
		if (c->closing)
			return;
	}
	if (wake != UINT64_MAX)
		uv_timer_start(&c->dispatch_timer, on_dispatch_timer, wake - now, 0);
	else
		uv_timer_stop(&c->dispatch_timer);
}

static bool method_ok(const char *m)
{
	static const char *const ok[] = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
		if (strcmp(m, ok[i]) == 0)
			return true;
	return false;
}

uint64_t http_request(struct http_client *c, const struct http_request *req, http_done_fn cb,
                      void *ud, struct ga_err *err)
{
	if (c->closing) {
		err_set(err, "the HTTP client is shutting down");
		return 0;
	}
	const char *method = req->method ? req->method : "GET";
	if (!method_ok(method)) {
		err_set(err, "HTTP method '%s' is not supported", method);
		return 0;
	}
	if (http_pending(c) >= HTTP_MAX_REQUESTS) {
		err_set(err, "too many HTTP requests pending (%d): request to %s refused",
		        HTTP_MAX_REQUESTS, req->url ? req->url : "(null)");
		return 0;
	}
	struct req *r = xcalloc(1, sizeof *r);
	if (http_url_host(req->url, r->host, sizeof r->host, err) != 0) {
		free(r);
		return 0;
	}
	size_t nh = 0;
	for (const char *const *h = req->headers; h && *h; h++) {
		if (++nh > HTTP_MAX_REQUEST_HEADERS) {
			err_set(err, "too many request headers (limit %d)",
			        HTTP_MAX_REQUEST_HEADERS);
			req_free(r);
			return 0;
		}
		if (strpbrk(*h, "\r\n")) {
			err_set(err, "request header '%.40s' contains a line break", *h);
			req_free(r);
			return 0;
		}
		struct curl_slist *n = curl_slist_append(r->hdrs, *h);
		if (!n) {
			req_free(r);
			err_set(err, "out of memory building request headers");
			return 0;
		}
		r->hdrs = n;
	}
	r->c = c;
	r->id = ++c->next_id;
	r->url = xstrdup(req->url);
	r->method = xstrdup(method);
	if (req->body) {
		r->body = xmalloc(req->body_len + 1);
		memcpy(r->body, req->body, req->body_len);
		r->body[req->body_len] = '\0';
		r->body_len = req->body_len;
	}
	r->connect_timeout_ms =
	        req->connect_timeout_ms ? req->connect_timeout_ms : HTTP_DEFAULT_CONNECT_TIMEOUT_MS;
	r->timeout_ms = req->timeout_ms ? req->timeout_ms : HTTP_DEFAULT_TIMEOUT_MS;
	r->max_body = req->max_body_bytes ? req->max_body_bytes : HTTP_DEFAULT_MAX_BODY_BYTES;
	sb_init(&r->resp_body, r->max_body);
	r->cb = cb;
	r->ud = ud;
	r->state = REQ_QUEUED;
	list_push(&c->queued, r);
	/* Started from the dispatch timer on the next loop turn, so that no
	 * callback (not even a start failure) can run inside http_request. */
	uv_timer_start(&c->dispatch_timer, on_dispatch_timer, 0, 0);
	return r->id;
}

static struct req *find(struct list *l, uint64_t id)
{
	for (struct req *r = l->head; r; r = r->next)
		if (r->id == id)
			return r;
	return NULL;
}

int http_cancel(struct http_client *c, uint64_t id)
{
	struct req *r = find(&c->queued, id);
	if (r) {
		list_remove(&c->queued, r);
		req_free(r);
		return 0;
	}
	r = find(&c->active, id);
	if (!r)
		return -1;
	list_remove(&c->active, r);
	if (!c->torn_down)
		curl_multi_remove_handle(c->multi, r->easy);
	req_free(r);
	return 0;
}

/* --- lifetime ------------------------------------------------------------------------------- */

struct http_client *http_client_new(uv_loop_t *loop, const struct http_client_opts *opts,
                                    struct ga_err *err)
{
	if (curl_shim_load(err) != 0)
		return NULL;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		err_set(err, "libcurl could not be initialised");
		return NULL;
	}
	struct http_client *c = xcalloc(1, sizeof *c);
	c->loop = loop;
	if (opts)
		c->opts = *opts;
	c->multi = curl_multi_init();
	if (!c->multi) {
		free(c);
		curl_global_cleanup();
		err_set(err, "libcurl could not create a multi handle");
		return NULL;
	}
	uv_timer_init(loop, &c->curl_timer);
	c->curl_timer.data = c;
	uv_timer_init(loop, &c->dispatch_timer);
	c->dispatch_timer.data = c;
	c->open_handles = 2;
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
	return c;
}

static void maybe_free(struct http_client *c)
{
	if (c->torn_down && c->open_handles == 0) {
		free(c);
		curl_global_cleanup();
	}
}

static void on_timer_closed(uv_handle_t *h)
{
	struct http_client *c = h->data;
	c->open_handles--;
	maybe_free(c);
}

static void cancel_all(struct http_client *c, struct list *l)
{
	struct req *r;
	while ((r = l->head)) {
		list_remove(l, r);
		if (r->easy)
			curl_multi_remove_handle(c->multi, r->easy);
		fail_request(r, HTTP_ERR_CANCELLED, "cancelled: the HTTP client is shutting down");
	}
}

void http_client_close(struct http_client *c)
{
	if (!c || c->torn_down)
		return;
	bool first = !c->closing;
	c->closing = true;
	if (first) {
		cancel_all(c, &c->queued);
		cancel_all(c, &c->active);
	}
	if (c->in_multi > 0)
		return; /* check_multi_info finishes the teardown */
	/* Callbacks may have queued nothing (closing refuses), so both lists
	 * are empty now. curl_multi_cleanup reports CURL_POLL_REMOVE for the
	 * sockets it still watches; torn_down makes late timer calls no-ops. */
	c->torn_down = true;
	curl_multi_cleanup(c->multi);
	c->multi = NULL;
	uv_timer_stop(&c->curl_timer);
	uv_timer_stop(&c->dispatch_timer);
	uv_close((uv_handle_t *)&c->curl_timer, on_timer_closed);
	uv_close((uv_handle_t *)&c->dispatch_timer, on_timer_closed);
}
