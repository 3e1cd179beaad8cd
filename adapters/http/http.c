/*
 * http — the part of http.h above the wire: the request queue and its
 * bound, per-host pacing and holds, the observe hook, cancellation and
 * shutdown. Moving bytes is the transport's (transport.h): libcurl's
 * (curl_transport.c) or the native HTTP/1.1 one (native.c).
 *
 * A request is queued by http_request, started by the dispatcher (a timer,
 * so no callback runs inside http_request) once its host's spacing and hold
 * allow, and finished by the transport through http_req_done.
 */
#include "adapters/http/http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adapters/http/transport.h"
#include "common/err.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#define LOG_COMP "http"

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

struct list {
	struct http_req *head, *tail;
	size_t n;
};

struct http_client {
	uv_loop_t *loop;
	struct http_transport *tr;
	uv_timer_t dispatch_timer;
	struct list queued, active;
	struct host hosts[HTTP_MAX_HOSTS];
	struct http_client_opts opts;
	uint64_t next_id;
	unsigned pass;
	int open_parts; /* the dispatch timer and the transport, until closed */
	bool closing;   /* http_client_close called */
};

/* --- small helpers ------------------------------------------------------------- */

static void list_push(struct list *l, struct http_req *r)
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

static void list_remove(struct list *l, struct http_req *r)
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

void http_req_too_large_msg(const struct http_req *r, char *msg, size_t cap)
{
	char sz[32];
	format_size(r->max_body, sz, sizeof sz);
	err_fmt(msg, cap, "response body larger than %s from %s", sz, r->host);
}

int http_url_host(const char *url, char *out, size_t cap, struct ga_err *err)
{
	if (!url || !*url)
		return err_set(err, "the URL is empty");
	return transport_url_host(url, out, cap, err);
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
	time_t t = transport_parse_date(value);
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

void http_req_reset_headers(struct http_req *r)
{
	for (size_t i = 0; i < r->n_resp_headers; i++) {
		free(r->resp_headers[i].name);
		free(r->resp_headers[i].value);
	}
	r->n_resp_headers = 0;
}

void http_req_add_header(struct http_req *r, const char *name, size_t name_len, const char *value,
                         size_t value_len)
{
	if (name_len + value_len + 2 > HTTP_MAX_HEADER_BYTES ||
	    r->n_resp_headers >= HTTP_MAX_RESPONSE_HEADERS)
		return; /* bounded: extra or oversized headers are ignored */
	struct http_header *h = &r->resp_headers[r->n_resp_headers++];
	h->name = xstrndup(name, name_len);
	h->value = xstrndup(value, value_len);
}

static void req_free(struct http_req *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_headers; i++)
		free(r->headers[i]);
	free(r->headers);
	free(r->url);
	free(r->method);
	free(r->body);
	sb_free(&r->resp_body);
	http_req_reset_headers(r);
	free(r);
}

/* --- completion ---------------------------------------------------------------------------- */

static void respond(struct http_client *c, struct http_req *r, struct http_response *resp)
{
	resp->body = sb_cstr(&r->resp_body);
	resp->body_len = r->resp_body.len;
	resp->url = r->url;
	resp->host = r->host;
	resp->id = r->id;
	if (r->started_ms)
		resp->elapsed_ms = uv_now(c->loop) - r->started_ms;
	if (resp->status > 0 && c->opts.on_response)
		c->opts.on_response(c->opts.observe_ud, c, resp);
	if (r->cb)
		r->cb(r->ud, resp);
	req_free(r);
}

void http_req_done(struct http_req *r, enum http_error kind, long status, const char *msg)
{
	struct http_client *c = r->c;
	list_remove(&c->active, r);
	r->active = false;
	struct http_response resp;
	memset(&resp, 0, sizeof resp);
	resp.error = kind;
	resp.status = status;
	if (kind != HTTP_OK)
		snprintf(resp.error_msg, sizeof resp.error_msg, "%s", msg ? msg : "");
	resp.headers = r->resp_headers;
	resp.n_headers = r->n_resp_headers;
	log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "response", "method", r->method, "host", r->host,
	       "status", LOG_INT(status), "error", http_error_name(kind), "ms",
	       LOG_INT(uv_now(c->loop) - r->started_ms));
	respond(c, r, &resp);
}

/* Ends a request that never produced a response: its callback gets the
 * error ("request to <host> <what>") and the request is freed. */
static void fail_request(struct http_client *c, struct http_req *r, enum http_error kind,
                         const char *what)
{
	struct http_response resp;
	memset(&resp, 0, sizeof resp);
	resp.error = kind;
	err_fmt(resp.error_msg, sizeof resp.error_msg, "request to %s %s", r->host, what);
	respond(c, r, &resp);
}

/* --- starting requests -------------------------------------------------------------------- */

static void dispatch(struct http_client *c);

static void on_dispatch_timer(uv_timer_t *t)
{
	dispatch(t->data);
}

static void start(struct http_client *c, struct http_req *r)
{
	r->started_ms = uv_now(c->loop);
	r->active = true;
	list_push(&c->active, r);
	if (transport_start(c->tr, r) != 0) {
		/* Not even handed to the transport: reported like any other
		 * failure, from this timer callback. */
		list_remove(&c->active, r);
		r->active = false;
		fail_request(c, r, HTTP_ERR_TRANSPORT, "could not be started");
	}
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
	struct http_req *r = c->queued.head;
	while (r) {
		struct http_req *next = r->next;
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
		start(c, r);
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

/* Copies the caller's header lines into r; -1 with err when one is refused. */
static int copy_headers(struct http_req *r, const char *const *headers, struct ga_err *err)
{
	size_t nh = 0;
	for (const char *const *h = headers; h && *h; h++) {
		if (++nh > HTTP_MAX_REQUEST_HEADERS)
			return err_set(err, "too many request headers (limit %d)",
			               HTTP_MAX_REQUEST_HEADERS);
		if (strpbrk(*h, "\r\n"))
			return err_set(err, "request header '%.40s' contains a line break", *h);
	}
	r->headers = xcalloc(nh ? nh : 1, sizeof *r->headers);
	for (size_t i = 0; i < nh; i++)
		r->headers[r->n_headers++] = xstrdup(headers[i]);
	return 0;
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
	struct http_req *r = xcalloc(1, sizeof *r);
	if (http_url_host(req->url, r->host, sizeof r->host, err) != 0 ||
	    copy_headers(r, req->headers, err) != 0) {
		req_free(r);
		return 0;
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
	list_push(&c->queued, r);
	/* Started from the dispatch timer on the next loop turn, so that no
	 * callback (not even a start failure) can run inside http_request. */
	uv_timer_start(&c->dispatch_timer, on_dispatch_timer, 0, 0);
	return r->id;
}

static struct http_req *find(struct list *l, uint64_t id)
{
	for (struct http_req *r = l->head; r; r = r->next)
		if (r->id == id)
			return r;
	return NULL;
}

int http_cancel(struct http_client *c, uint64_t id)
{
	struct http_req *r = find(&c->queued, id);
	if (r) {
		list_remove(&c->queued, r);
		req_free(r);
		return 0;
	}
	r = find(&c->active, id);
	if (!r)
		return -1;
	list_remove(&c->active, r);
	transport_cancel(c->tr, r);
	req_free(r);
	return 0;
}

/* --- lifetime ------------------------------------------------------------------------------- */

struct http_client *http_client_new(uv_loop_t *loop, const struct http_client_opts *opts,
                                    struct ga_err *err)
{
	struct http_transport *tr = transport_new(loop, err);
	if (!tr)
		return NULL;
	struct http_client *c = xcalloc(1, sizeof *c);
	c->loop = loop;
	c->tr = tr;
	if (opts)
		c->opts = *opts;
	uv_timer_init(loop, &c->dispatch_timer);
	c->dispatch_timer.data = c;
	c->open_parts = 2;
	return c;
}

static void part_closed(void *ud)
{
	struct http_client *c = ud;
	if (--c->open_parts == 0)
		free(c);
}

static void on_timer_closed(uv_handle_t *h)
{
	part_closed(h->data);
}

static void cancel_all(struct http_client *c, struct list *l)
{
	struct http_req *r;
	while ((r = l->head)) {
		list_remove(l, r);
		if (r->active) {
			r->active = false;
			transport_cancel(c->tr, r);
		}
		fail_request(c, r, HTTP_ERR_CANCELLED,
		             "cancelled: the HTTP client is shutting down");
	}
}

void http_client_close(struct http_client *c)
{
	if (!c || c->closing)
		return;
	c->closing = true;
	cancel_all(c, &c->queued);
	cancel_all(c, &c->active);
	/* Callbacks could queue nothing (closing refuses), so both lists are
	 * empty now. */
	uv_timer_stop(&c->dispatch_timer);
	uv_close((uv_handle_t *)&c->dispatch_timer, on_timer_closed);
	transport_close(c->tr, part_closed, c);
}
