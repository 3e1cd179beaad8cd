/*
 * httpfake — the daemon, routes, responses and the request record.
 * Contract in httpfake.h; the JSON script loader is in httpfake_script.c.
 *
 * libmicrohttpd runs thread-per-connection, so a response delay is a timed
 * wait on the connection's own thread and holds up nobody else. Delays and
 * HANG wait on the fake's condition variable, which httpfake_free()
 * broadcasts before stopping the daemon: MHD_stop_daemon() joins connection
 * threads, and a thread asleep in our code would otherwise keep it waiting.
 */
#include "tests/fakes/httpfake/httpfake.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

enum matcher_kind { MATCH_QUERY, MATCH_PARAM, MATCH_BODY, MATCH_HEADER };

struct matcher {
	enum matcher_kind kind;
	char *a; /* substring, or name */
	char *b; /* value for PARAM and HEADER */
};

struct httpfake_route {
	struct httpfake *fake;
	struct httpfake_route *next;
	char *method;
	char *path;
	struct matcher matchers[HTTPFAKE_MATCHERS_MAX];
	size_t n_matchers;
	httpfake_handler_fn fn; /* NULL for a scripted route */
	void *userdata;
	struct httpfake_response **seq;
	size_t n_seq;
	uint64_t hits;
};

struct httpfake {
	struct MHD_Daemon *daemon;
	uint16_t port;
	char base_url[32];

	pthread_mutex_t lock;   /* everything below */
	pthread_cond_t changed; /* a request was recorded, or the fake stops */
	bool stopping;
	size_t body_limit;
	struct httpfake_route *routes, *routes_tail;
	struct httpfake_request *ring[HTTPFAKE_RECORD_MAX]; /* slot = seq % MAX */
	uint64_t count;
	httpfake_observer_fn observer;
	void *observer_ud;

	pthread_mutex_t handler_lock;  /* serialises handlers */
	pthread_mutex_t observer_lock; /* serialises observer calls */
};

/* Per-request state, created by the URI log callback (the only place the
 * raw query string is visible) and freed when MHD reports completion. */
struct conn_req {
	char *uri;
	bool started;
	size_t limit;
	char *body;
	size_t len, cap, total;
};

/* --- small helpers ------------------------------------------------------- */

/* A misconfigured fake is a bug in the test; stop it loudly. */
__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("httpfake: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die("out of memory allocating %zu bytes", n);
	return p;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		die("out of memory allocating %zu x %zu bytes", n, size);
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory allocating %zu bytes", n);
	return p;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}

static char *xmemdup0(const void *data, size_t len)
{
	char *p = xmalloc(len + 1);
	if (len)
		memcpy(p, data, len);
	p[len] = '\0';
	return p;
}

static void need(const void *p, const char *what, const char *fn)
{
	if (!p)
		die("%s() needs a %s, got NULL", fn, what);
}

static void headers_free(struct httpfake_header *h, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(h[i].name);
		free(h[i].value);
	}
	free(h);
}

static struct httpfake_header *headers_dup(const struct httpfake_header *h, size_t n)
{
	if (!n)
		return NULL;
	struct httpfake_header *c = xcalloc(n, sizeof(*c));
	for (size_t i = 0; i < n; i++) {
		c[i].name = xstrdup(h[i].name);
		c[i].value = xstrdup(h[i].value);
	}
	return c;
}

static void lock_owner(struct httpfake_response *resp)
{
	if (resp->owner)
		pthread_mutex_lock(&resp->owner->lock);
}

static void unlock_owner(struct httpfake_response *resp)
{
	if (resp->owner)
		pthread_mutex_unlock(&resp->owner->lock);
}

/* --- responses ------------------------------------------------------------- */

static void response_init(struct httpfake_response *resp)
{
	memset(resp, 0, sizeof(*resp));
	resp->status = 200;
}

static void response_clear(struct httpfake_response *resp)
{
	headers_free(resp->headers, resp->n_headers);
	free(resp->body);
	response_init(resp);
}

/* Deep copy without the owner: the copy belongs to one connection. */
static void response_copy(struct httpfake_response *dst, const struct httpfake_response *src)
{
	*dst = *src;
	dst->owner = NULL;
	dst->headers = headers_dup(src->headers, src->n_headers);
	dst->body = src->body ? xmemdup0(src->body, src->body_len) : NULL;
}

void httpfake_response_header(struct httpfake_response *resp, const char *name, const char *value)
{
	need(resp, "response", __func__);
	need(name, "header name", __func__);
	need(value, "header value", __func__);
	lock_owner(resp);
	if (resp->n_headers >= HTTPFAKE_HEADERS_MAX)
		die("a response may have at most %u headers; adding \"%s\" is one too many",
		    HTTPFAKE_HEADERS_MAX, name);
	resp->headers = xrealloc(resp->headers, (resp->n_headers + 1) * sizeof(*resp->headers));
	resp->headers[resp->n_headers].name = xstrdup(name);
	resp->headers[resp->n_headers].value = xstrdup(value);
	resp->n_headers++;
	unlock_owner(resp);
}

void httpfake_response_body(struct httpfake_response *resp, const void *data, size_t len)
{
	need(resp, "response", __func__);
	if (len)
		need(data, "body", __func__);
	lock_owner(resp);
	free(resp->body);
	resp->body = xmemdup0(data, len);
	resp->body_len = len;
	unlock_owner(resp);
}

void httpfake_response_json(struct httpfake_response *resp, int status, const char *json)
{
	need(json, "JSON body", __func__);
	httpfake_response_body(resp, json, strlen(json));
	lock_owner(resp);
	resp->status = status;
	/* Replace a Content-Type set earlier rather than send two. */
	for (size_t i = 0; i < resp->n_headers; i++) {
		if (strcasecmp(resp->headers[i].name, "Content-Type") == 0) {
			free(resp->headers[i].value);
			resp->headers[i].value = xstrdup("application/json");
			unlock_owner(resp);
			return;
		}
	}
	unlock_owner(resp);
	httpfake_response_header(resp, "Content-Type", "application/json");
}

void httpfake_response_cjson(struct httpfake_response *resp, int status, struct cJSON *json)
{
	need(json, "JSON tree", __func__);
	char *text = cJSON_PrintUnformatted(json);
	cJSON_Delete(json);
	if (!text)
		die("%s: out of memory printing the JSON body", __func__);
	httpfake_response_json(resp, status, text);
	free(text);
}

void httpfake_response_delay(struct httpfake_response *resp, unsigned delay_ms)
{
	need(resp, "response", __func__);
	lock_owner(resp);
	resp->delay_ms = delay_ms;
	unlock_owner(resp);
}

void httpfake_response_action(struct httpfake_response *resp, enum httpfake_action action)
{
	need(resp, "response", __func__);
	lock_owner(resp);
	resp->action = action;
	unlock_owner(resp);
}

/* --- requests ------------------------------------------------------------- */

void httpfake_request_free(struct httpfake_request *req)
{
	if (!req)
		return;
	free(req->method);
	free(req->path);
	free(req->query);
	headers_free(req->headers, req->n_headers);
	headers_free(req->params, req->n_params);
	free(req->body);
	free(req);
}

static struct httpfake_request *request_dup(const struct httpfake_request *r)
{
	struct httpfake_request *c = xmalloc(sizeof(*c));
	*c = *r;
	c->method = xstrdup(r->method);
	c->path = xstrdup(r->path);
	c->query = xstrdup(r->query);
	c->headers = headers_dup(r->headers, r->n_headers);
	c->params = headers_dup(r->params, r->n_params);
	c->body = xmemdup0(r->body, r->body_len);
	return c;
}

const char *httpfake_request_header(const struct httpfake_request *req, const char *name)
{
	for (size_t i = 0; req && name && i < req->n_headers; i++)
		if (strcasecmp(req->headers[i].name, name) == 0)
			return req->headers[i].value;
	return NULL;
}

const char *httpfake_request_param(const struct httpfake_request *req, const char *name)
{
	for (size_t i = 0; req && name && i < req->n_params; i++)
		if (strcmp(req->params[i].name, name) == 0)
			return req->params[i].value;
	return NULL;
}

struct kv_collect {
	struct httpfake_header *v;
	size_t n;
};

/* Headers past HTTPFAKE_HEADERS_MAX are not recorded (MHD's per-connection
 * memory pool bounds them anyway). */
static enum MHD_Result collect_kv(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value)
{
	struct kv_collect *kv = cls;
	if (kv->n >= HTTPFAKE_HEADERS_MAX)
		return MHD_NO;
	kv->v[kv->n].name = xstrdup(key ? key : "");
	kv->v[kv->n].value = xstrdup(value ? value : "");
	kv->n++;
	return MHD_YES;
}

static void collect(struct MHD_Connection *conn, enum MHD_ValueKind kind,
                    struct httpfake_header **out, size_t *n)
{
	struct kv_collect kv = {.v = xcalloc(HTTPFAKE_HEADERS_MAX, sizeof(*kv.v))};
	MHD_get_connection_values(conn, kind, collect_kv, &kv);
	if (!kv.n) {
		free(kv.v);
		kv.v = NULL;
	}
	*out = kv.v;
	*n = kv.n;
}

/* Takes the body out of cr. */
static struct httpfake_request *request_build(struct MHD_Connection *conn, const char *url,
                                              const char *method, struct conn_req *cr)
{
	struct httpfake_request *req = xcalloc(1, sizeof(*req));
	const char *q = cr->uri ? strchr(cr->uri, '?') : NULL;
	req->method = xstrdup(method);
	req->path = xstrdup(url);
	req->query = xstrdup(q ? q + 1 : "");
	collect(conn, MHD_HEADER_KIND, &req->headers, &req->n_headers);
	collect(conn, MHD_GET_ARGUMENT_KIND, &req->params, &req->n_params);
	req->body = cr->body ? cr->body : xstrdup("");
	req->body_len = cr->len;
	req->body_total = cr->total;
	req->body_truncated = cr->total > cr->len;
	cr->body = NULL;
	cr->len = cr->cap = 0;
	return req;
}

/* --- routes ------------------------------------------------------------------ */

static struct httpfake_route *route_add(struct httpfake *fake, const char *method, const char *path,
                                        httpfake_handler_fn fn, void *userdata)
{
	need(fake, "fake", "httpfake_route");
	need(method, "method", "httpfake_route");
	need(path, "path", "httpfake_route");
	struct httpfake_route *r = xcalloc(1, sizeof(*r));
	r->fake = fake;
	r->method = xstrdup(method);
	r->path = xstrdup(path);
	r->fn = fn;
	r->userdata = userdata;
	pthread_mutex_lock(&fake->lock);
	if (fake->routes_tail)
		fake->routes_tail->next = r;
	else
		fake->routes = r;
	fake->routes_tail = r;
	pthread_mutex_unlock(&fake->lock);
	return r;
}

struct httpfake_route *httpfake_route(struct httpfake *fake, const char *method, const char *path)
{
	return route_add(fake, method, path, NULL, NULL);
}

struct httpfake_route *httpfake_handle(struct httpfake *fake, const char *method, const char *path,
                                       httpfake_handler_fn fn, void *userdata)
{
	need((const void *)(uintptr_t)fn, "handler", __func__);
	return route_add(fake, method, path, fn, userdata);
}

static void matcher_add(struct httpfake_route *route, enum matcher_kind kind, const char *a,
                        const char *b, const char *fn)
{
	need(route, "route", fn);
	need(a, "string to match", fn);
	pthread_mutex_lock(&route->fake->lock);
	if (route->n_matchers >= HTTPFAKE_MATCHERS_MAX)
		die("route %s %s already has %u matchers, the most a route may have", route->method,
		    route->path, HTTPFAKE_MATCHERS_MAX);
	struct matcher *m = &route->matchers[route->n_matchers++];
	m->kind = kind;
	m->a = xstrdup(a);
	m->b = b ? xstrdup(b) : NULL;
	pthread_mutex_unlock(&route->fake->lock);
}

void httpfake_route_match_query(struct httpfake_route *route, const char *substring)
{
	matcher_add(route, MATCH_QUERY, substring, NULL, __func__);
}

void httpfake_route_match_param(struct httpfake_route *route, const char *name, const char *value)
{
	need(value, "parameter value", __func__);
	matcher_add(route, MATCH_PARAM, name, value, __func__);
}

void httpfake_route_match_body(struct httpfake_route *route, const char *substring)
{
	matcher_add(route, MATCH_BODY, substring, NULL, __func__);
}

void httpfake_route_match_header(struct httpfake_route *route, const char *name, const char *value)
{
	need(value, "header value", __func__);
	matcher_add(route, MATCH_HEADER, name, value, __func__);
}

struct httpfake_response *httpfake_route_respond(struct httpfake_route *route, int status,
                                                 const char *content_type, const char *body)
{
	need(route, "route", __func__);
	if (route->fn)
		die("route %s %s has a handler; it cannot also have scripted responses",
		    route->method, route->path);
	struct httpfake_response *resp = xmalloc(sizeof(*resp));
	response_init(resp);
	resp->status = status;
	if (content_type)
		httpfake_response_header(resp, "Content-Type", content_type);
	if (body)
		httpfake_response_body(resp, body, strlen(body));
	resp->owner = route->fake;

	pthread_mutex_lock(&route->fake->lock);
	if (route->n_seq >= HTTPFAKE_SEQUENCE_MAX)
		die("route %s %s already has %u responses, the most a sequence may hold",
		    route->method, route->path, HTTPFAKE_SEQUENCE_MAX);
	route->seq = xrealloc(route->seq, (route->n_seq + 1) * sizeof(*route->seq));
	route->seq[route->n_seq++] = resp;
	pthread_mutex_unlock(&route->fake->lock);
	return resp;
}

uint64_t httpfake_route_hits(const struct httpfake_route *route)
{
	need(route, "route", __func__);
	pthread_mutex_lock(&route->fake->lock);
	uint64_t hits = route->hits;
	pthread_mutex_unlock(&route->fake->lock);
	return hits;
}

static void route_free(struct httpfake_route *r)
{
	for (size_t i = 0; i < r->n_matchers; i++) {
		free(r->matchers[i].a);
		free(r->matchers[i].b);
	}
	for (size_t i = 0; i < r->n_seq; i++) {
		response_clear(r->seq[i]);
		free(r->seq[i]);
	}
	free(r->seq);
	free(r->method);
	free(r->path);
	free(r);
}

void httpfake_reset_routes(struct httpfake *fake)
{
	need(fake, "fake", __func__);
	pthread_mutex_lock(&fake->lock);
	struct httpfake_route *r = fake->routes;
	fake->routes = fake->routes_tail = NULL;
	pthread_mutex_unlock(&fake->lock);
	while (r) {
		struct httpfake_route *next = r->next;
		route_free(r);
		r = next;
	}
}

static bool path_matches(const char *pattern, const char *path)
{
	size_t n = strlen(pattern);
	if (n && pattern[n - 1] == '*')
		return strncmp(pattern, path, n - 1) == 0;
	return strcmp(pattern, path) == 0;
}

static bool matcher_ok(const struct matcher *m, const struct httpfake_request *req)
{
	switch (m->kind) {
	case MATCH_QUERY:
		return strstr(req->query, m->a) != NULL;
	case MATCH_BODY:
		/* The body may hold NULs; memmem keeps them from hiding a match. */
		return memmem(req->body, req->body_len, m->a, strlen(m->a)) != NULL;
	case MATCH_PARAM:
		for (size_t i = 0; i < req->n_params; i++)
			if (strcmp(req->params[i].name, m->a) == 0 &&
			    strcmp(req->params[i].value, m->b) == 0)
				return true;
		return false;
	case MATCH_HEADER:
		for (size_t i = 0; i < req->n_headers; i++)
			if (strcasecmp(req->headers[i].name, m->a) == 0 &&
			    strcmp(req->headers[i].value, m->b) == 0)
				return true;
		return false;
	}
	return false;
}

/* Caller holds fake->lock. */
static struct httpfake_route *route_find(struct httpfake *fake, const struct httpfake_request *req)
{
	for (struct httpfake_route *r = fake->routes; r; r = r->next) {
		if (strcmp(r->method, "*") != 0 && strcmp(r->method, req->method) != 0)
			continue;
		if (!path_matches(r->path, req->path))
			continue;
		size_t i = 0;
		while (i < r->n_matchers && matcher_ok(&r->matchers[i], req))
			i++;
		if (i == r->n_matchers)
			return r;
	}
	return NULL;
}

/* --- the record ------------------------------------------------------------ */

static bool method_path_is(const struct httpfake_request *r, const char *method, const char *path)
{
	return (!method || strcmp(method, "*") == 0 || strcmp(r->method, method) == 0) &&
	       (!path || strcmp(r->path, path) == 0);
}

/* Moves req into the ring, dropping the oldest when it is full. */
static uint64_t record(struct httpfake *fake, struct httpfake_request *req)
{
	pthread_mutex_lock(&fake->lock);
	uint64_t seq = req->seq = fake->count++;
	size_t slot = seq % HTTPFAKE_RECORD_MAX;
	httpfake_request_free(fake->ring[slot]);
	fake->ring[slot] = req;
	pthread_cond_broadcast(&fake->changed);
	pthread_mutex_unlock(&fake->lock);
	return seq;
}

uint64_t httpfake_request_count(struct httpfake *fake)
{
	need(fake, "fake", __func__);
	pthread_mutex_lock(&fake->lock);
	uint64_t n = fake->count;
	pthread_mutex_unlock(&fake->lock);
	return n;
}

/* Caller holds the lock. */
static struct httpfake_request *ring_at(struct httpfake *fake, uint64_t seq)
{
	if (seq >= fake->count)
		return NULL;
	struct httpfake_request *r = fake->ring[seq % HTTPFAKE_RECORD_MAX];
	return r && r->seq == seq ? r : NULL;
}

struct httpfake_request *httpfake_request_get(struct httpfake *fake, uint64_t seq)
{
	need(fake, "fake", __func__);
	pthread_mutex_lock(&fake->lock);
	struct httpfake_request *r = ring_at(fake, seq);
	r = r ? request_dup(r) : NULL;
	pthread_mutex_unlock(&fake->lock);
	return r;
}

static struct httpfake_request *find(struct httpfake *fake, const char *method, const char *path,
                                     bool last)
{
	need(fake, "fake", "httpfake_request_find");
	pthread_mutex_lock(&fake->lock);
	uint64_t first = fake->count > HTTPFAKE_RECORD_MAX ? fake->count - HTTPFAKE_RECORD_MAX : 0;
	struct httpfake_request *found = NULL;
	for (uint64_t i = 0; i < fake->count - first && !(found && !last); i++) {
		struct httpfake_request *r = ring_at(fake, first + i);
		if (r && method_path_is(r, method, path))
			found = r;
	}
	found = found ? request_dup(found) : NULL;
	pthread_mutex_unlock(&fake->lock);
	return found;
}

struct httpfake_request *httpfake_request_find(struct httpfake *fake, const char *method,
                                               const char *path)
{
	return find(fake, method, path, false);
}

struct httpfake_request *httpfake_request_find_last(struct httpfake *fake, const char *method,
                                                    const char *path)
{
	return find(fake, method, path, true);
}

static struct timespec deadline_on(clockid_t clock, unsigned ms)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

int httpfake_wait_counter(pthread_mutex_t *mu, pthread_cond_t *cond, const uint64_t *counter,
                          uint64_t n, unsigned timeout_ms)
{
	struct timespec until = deadline_on(CLOCK_REALTIME, timeout_ms);
	pthread_mutex_lock(mu);
	int rc = 0;
	while (*counter < n && rc == 0)
		rc = pthread_cond_timedwait(cond, mu, &until);
	bool ok = *counter >= n;
	pthread_mutex_unlock(mu);
	return ok ? 0 : -1;
}

int httpfake_wait_count(struct httpfake *fake, uint64_t n, unsigned timeout_ms)
{
	need(fake, "fake", __func__);
	struct timespec until = deadline_on(CLOCK_MONOTONIC, timeout_ms);
	int rc = 0;
	pthread_mutex_lock(&fake->lock);
	while (fake->count < n && rc == 0)
		if (pthread_cond_timedwait(&fake->changed, &fake->lock, &until) == ETIMEDOUT)
			rc = fake->count < n ? -1 : 0;
	pthread_mutex_unlock(&fake->lock);
	return rc;
}

void httpfake_clear_requests(struct httpfake *fake)
{
	need(fake, "fake", __func__);
	pthread_mutex_lock(&fake->lock);
	for (size_t i = 0; i < HTTPFAKE_RECORD_MAX; i++) {
		httpfake_request_free(fake->ring[i]);
		fake->ring[i] = NULL;
	}
	fake->count = 0;
	pthread_mutex_unlock(&fake->lock);
}

/* --- JSON form of a request -------------------------------------------------- */

static bool utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned c = s[i];
		size_t len;
		unsigned min;
		if (c == 0)
			return false; /* cJSON strings end at NUL */
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			len = 2, min = 0x80, c &= 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			len = 3, min = 0x800, c &= 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			len = 4, min = 0x10000, c &= 0x07;
		} else {
			return false;
		}
		if (i + len > n)
			return false;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			c = (c << 6) | (s[i + k] & 0x3f);
		}
		if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

static char *base64(const unsigned char *s, size_t n)
{
	static const char tab[] =
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = xmalloc((n + 2) / 3 * 4 + 1), *o = out;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)s[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)s[i + 1] << 8;
		if (i + 2 < n)
			v |= s[i + 2];
		*o++ = tab[(v >> 18) & 63];
		*o++ = tab[(v >> 12) & 63];
		*o++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		*o++ = i + 2 < n ? tab[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

char *httpfake_request_to_json(const struct httpfake_request *req)
{
	need(req, "request", __func__);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "seq", (double)req->seq);
	cJSON_AddStringToObject(o, "method", req->method);
	cJSON_AddStringToObject(o, "path", req->path);
	cJSON_AddStringToObject(o, "query", req->query);
	cJSON *h = cJSON_AddObjectToObject(o, "headers");
	for (size_t i = 0; i < req->n_headers; i++)
		cJSON_AddStringToObject(h, req->headers[i].name, req->headers[i].value);
	if (utf8_valid((const unsigned char *)req->body, req->body_len)) {
		cJSON_AddStringToObject(o, "body", req->body);
	} else {
		char *b64 = base64((const unsigned char *)req->body, req->body_len);
		cJSON_AddStringToObject(o, "body_base64", b64);
		free(b64);
	}
	cJSON_AddBoolToObject(o, "body_truncated", req->body_truncated);
	cJSON_AddNumberToObject(o, "body_total", (double)req->body_total);
	cJSON_AddNumberToObject(o, "status", req->status);
	cJSON_AddBoolToObject(o, "matched", req->matched);
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		die("out of memory printing a request as JSON");
	return s;
}

/* --- serving ---------------------------------------------------------------------- */

static void not_found(struct httpfake_response *resp, const struct httpfake_request *req)
{
	char msg[512];
	snprintf(msg, sizeof(msg), "httpfake: no route for %.200s %.200s", req->method, req->path);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "error", "NoRoute");
	cJSON_AddStringToObject(o, "message", msg);
	cJSON_AddStringToObject(o, "method", req->method);
	cJSON_AddStringToObject(o, "path", req->path);
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		die("out of memory printing a 404 body");
	httpfake_response_json(resp, 404, s);
	free(s);
}

static void plain_error(struct httpfake_response *resp, int status, const char *msg)
{
	response_clear(resp);
	resp->status = status;
	httpfake_response_header(resp, "Content-Type", "text/plain; charset=utf-8");
	httpfake_response_body(resp, msg, strlen(msg));
}

/* Waits out resp's delay (or forever for HANG). Returns false when the fake
 * started stopping instead. */
static bool hold(struct httpfake *fake, const struct httpfake_response *resp)
{
	bool forever = resp->action == HTTPFAKE_HANG;
	if (!forever && resp->delay_ms == 0)
		return true;
	struct timespec until = deadline_on(CLOCK_MONOTONIC, resp->delay_ms);
	pthread_mutex_lock(&fake->lock);
	while (!fake->stopping) {
		if (forever)
			pthread_cond_wait(&fake->changed, &fake->lock);
		else if (pthread_cond_timedwait(&fake->changed, &fake->lock, &until) == ETIMEDOUT)
			break;
	}
	bool go_on = !fake->stopping;
	pthread_mutex_unlock(&fake->lock);
	return go_on;
}

static enum MHD_Result send_response(struct MHD_Connection *conn,
                                     const struct httpfake_response *resp)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
	        resp->body_len, resp->body ? resp->body : (char *)"", MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	for (size_t i = 0; i < resp->n_headers; i++)
		if (MHD_add_response_header(r, resp->headers[i].name, resp->headers[i].value) !=
		    MHD_YES)
			fprintf(stderr,
			        "httpfake: libmicrohttpd refused response header \"%s: %s\" "
			        "(it sets Content-Length and Connection itself)\n",
			        resp->headers[i].name, resp->headers[i].value);
	enum MHD_Result rc = MHD_queue_response(conn, (unsigned)resp->status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result answer(struct httpfake *fake, struct MHD_Connection *conn, const char *url,
                              const char *method, struct conn_req *cr)
{
	struct httpfake_request *req = request_build(conn, url, method, cr);
	struct httpfake_response resp;
	response_init(&resp);
	httpfake_handler_fn fn = NULL;
	void *userdata = NULL;

	pthread_mutex_lock(&fake->lock);
	struct httpfake_route *route = route_find(fake, req);
	if (route) {
		route->hits++;
		req->matched = true;
		fn = route->fn;
		userdata = route->userdata;
		if (!fn && route->n_seq) {
			size_t i =
			        route->hits - 1 < route->n_seq ? route->hits - 1 : route->n_seq - 1;
			response_copy(&resp, route->seq[i]);
		} else if (!fn) {
			char msg[512];
			snprintf(msg, sizeof(msg),
			         "httpfake: route %.200s %.200s has no response yet\n",
			         route->method, route->path);
			plain_error(&resp, 500, msg);
		}
	}
	httpfake_observer_fn observer = fake->observer;
	void *observer_ud = fake->observer_ud;
	pthread_mutex_unlock(&fake->lock);

	if (!route) {
		not_found(&resp, req);
	} else if (fn) {
		pthread_mutex_lock(&fake->handler_lock);
		fn(req, &resp, userdata);
		pthread_mutex_unlock(&fake->handler_lock);
	}
	if (resp.action == HTTPFAKE_RESPOND && (resp.status < 100 || resp.status > 999)) {
		char msg[128];
		snprintf(msg, sizeof(msg), "httpfake: status %d is not an HTTP status\n",
		         resp.status);
		plain_error(&resp, 500, msg);
	}
	req->status = resp.action == HTTPFAKE_RESPOND ? resp.status : 0;

	/* The observer gets its own copy: once recorded, req may be dropped
	 * from the record by newer requests at any time. */
	struct httpfake_request *seen = observer ? request_dup(req) : NULL;
	uint64_t seq = record(fake, req); /* req belongs to the record now */
	if (seen) {
		seen->seq = seq;
		pthread_mutex_lock(&fake->observer_lock);
		observer(seen, observer_ud);
		pthread_mutex_unlock(&fake->observer_lock);
		httpfake_request_free(seen);
	}

	enum MHD_Result rc = MHD_NO; /* closes the connection without an answer */
	if (hold(fake, &resp) && resp.action == HTTPFAKE_RESPOND)
		rc = send_response(conn, &resp);
	response_clear(&resp);
	return rc;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **req_cls)
{
	struct httpfake *fake = cls;
	struct conn_req *cr = *req_cls;
	if (!cr) /* the URI log callback always runs first; be safe anyway */
		*req_cls = cr = xcalloc(1, sizeof(*cr));
	if (!cr->started) {
		cr->started = true;
		pthread_mutex_lock(&fake->lock);
		cr->limit = fake->body_limit;
		pthread_mutex_unlock(&fake->lock);
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;
		size_t keep = cr->len < cr->limit ? cr->limit - cr->len : 0;
		if (keep > n)
			keep = n;
		if (keep) {
			if (cr->len + keep + 1 > cr->cap) {
				size_t cap = cr->cap ? cr->cap : 4096;
				while (cap < cr->len + keep + 1)
					cap *= 2;
				if (cap > cr->limit + 1)
					cap = cr->limit + 1;
				cr->body = xrealloc(cr->body, cap);
				cr->cap = cap;
			}
			memcpy(cr->body + cr->len, upload_data, keep);
			cr->len += keep;
			cr->body[cr->len] = '\0';
		}
		cr->total += n;
		*upload_data_size = 0;
		return MHD_YES;
	}
	return answer(fake, conn, url, method, cr);
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct conn_req *cr = xcalloc(1, sizeof(*cr));
	cr->uri = xstrdup(uri ? uri : "");
	return cr;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
	struct conn_req *cr = *req_cls;
	if (!cr)
		return;
	free(cr->uri);
	free(cr->body);
	free(cr);
	*req_cls = NULL;
}

/* --- lifetime -------------------------------------------------------------------- */

/* libmicrohttpd's own messages, marked as ours: a DROP or HANG makes it
 * report "Application reported internal error", which is expected. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	size_t n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		msg[--n] = '\0';
	fprintf(stderr, "httpfake (libmicrohttpd): %s%s\n", msg,
	        strstr(msg, "internal error") ? " [expected for a dropped or held request]" : "");
}

static struct MHD_Daemon *start_daemon(struct httpfake *fake, uint16_t port, struct sockaddr_in *sa,
                                       const char *cert_pem, const char *key_pem)
{
	/* The logger must come first or MHD logs the early messages itself. */
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
	                 MHD_USE_POLL | MHD_USE_ERROR_LOG;
	if (!cert_pem)
		return MHD_start_daemon(
		        flags, port, NULL, NULL, on_access, fake, MHD_OPTION_EXTERNAL_LOGGER,
		        mhd_log, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)sa,
		        MHD_OPTION_URI_LOG_CALLBACK, on_uri, fake, MHD_OPTION_NOTIFY_COMPLETED,
		        on_completed, fake, MHD_OPTION_CONNECTION_LIMIT,
		        (unsigned)HTTPFAKE_MAX_CONNECTIONS, MHD_OPTION_END);
	return MHD_start_daemon(flags | MHD_USE_TLS, port, NULL, NULL, on_access, fake,
	                        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_SOCK_ADDR,
	                        (struct sockaddr *)sa, MHD_OPTION_URI_LOG_CALLBACK, on_uri, fake,
	                        MHD_OPTION_NOTIFY_COMPLETED, on_completed, fake,
	                        MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTPFAKE_MAX_CONNECTIONS,
	                        MHD_OPTION_HTTPS_MEM_CERT, cert_pem, MHD_OPTION_HTTPS_MEM_KEY,
	                        key_pem, MHD_OPTION_END);
}

struct httpfake *httpfake_new_tls(uint16_t port, const char *cert_pem, const char *key_pem,
                                  char *err, size_t errlen)
{
	struct httpfake *fake = xcalloc(1, sizeof(*fake));
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fake->changed, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&fake->lock, NULL);
	pthread_mutex_init(&fake->handler_lock, NULL);
	pthread_mutex_init(&fake->observer_lock, NULL);
	fake->body_limit = HTTPFAKE_BODY_LIMIT_BYTES;

	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	errno = 0;
	fake->daemon = start_daemon(fake, port, &sa, cert_pem, key_pem);
	if (!fake->daemon) {
		int e = errno;
		if (err && errlen)
			snprintf(err, errlen, "httpfake cannot listen on 127.0.0.1:%u: %s",
			         (unsigned)port,
			         e ? strerror(e) : "libmicrohttpd refused to start");
		httpfake_free(fake);
		return NULL;
	}
	const union MHD_DaemonInfo *info =
	        MHD_get_daemon_info(fake->daemon, MHD_DAEMON_INFO_BIND_PORT);
	fake->port = info ? info->port : port;
	snprintf(fake->base_url, sizeof(fake->base_url), "%s://127.0.0.1:%u",
	         cert_pem ? "https" : "http", (unsigned)fake->port);
	return fake;
}

struct httpfake *httpfake_new(uint16_t port, char *err, size_t errlen)
{
	return httpfake_new_tls(port, NULL, NULL, err, errlen);
}

void httpfake_free(struct httpfake *fake)
{
	if (!fake)
		return;
	pthread_mutex_lock(&fake->lock);
	fake->stopping = true;
	pthread_cond_broadcast(&fake->changed);
	pthread_mutex_unlock(&fake->lock);
	if (fake->daemon)
		MHD_stop_daemon(fake->daemon);
	httpfake_reset_routes(fake);
	httpfake_clear_requests(fake);
	pthread_cond_destroy(&fake->changed);
	pthread_mutex_destroy(&fake->lock);
	pthread_mutex_destroy(&fake->handler_lock);
	pthread_mutex_destroy(&fake->observer_lock);
	free(fake);
}

uint16_t httpfake_port(const struct httpfake *fake)
{
	need(fake, "fake", __func__);
	return fake->port;
}

const char *httpfake_base_url(const struct httpfake *fake)
{
	need(fake, "fake", __func__);
	return fake->base_url;
}

void httpfake_set_body_limit(struct httpfake *fake, size_t bytes)
{
	need(fake, "fake", __func__);
	pthread_mutex_lock(&fake->lock);
	fake->body_limit = bytes;
	pthread_mutex_unlock(&fake->lock);
}

void httpfake_set_observer(struct httpfake *fake, httpfake_observer_fn fn, void *userdata)
{
	need(fake, "fake", __func__);
	pthread_mutex_lock(&fake->lock);
	fake->observer = fn;
	fake->observer_ud = userdata;
	pthread_mutex_unlock(&fake->lock);
}
