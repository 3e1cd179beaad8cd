/* dashboard — libmicrohttpd on the libuv loop: routing, protection, static
 * pages and the event streams (see dashboard.h). */
#include "modules/dashboard/dashboard.h"

#include "modules/dashboard/mhd_shim.h"
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsx.h"
#include "common/json.h"
#include "common/log.h"
#include "common/mime.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/dashboard/internal.h"
#include "modules/decisions/log.h"
#include "modules/pipeline/control.h"
#include "modules/pipeline/pipeline.h"

/* MHD_get_timeout may say "no timeout"; the loop still looks at MHD this
 * often (cheap, and a safety net for a missed wake-up). */
#define DASH_IDLE_RUN_MS 1000

struct sse_client {
	struct dashboard *d;
	struct MHD_Connection *conn;
	char *buf; /* queued bytes [off, len) */
	size_t len, off, cap;
	bool suspended;
	bool dropped;
	struct sse_client *next;
};

/* A why read on a worker thread (uv_queue_work) while its connection is
 * suspended. When the dashboard closes first, the job is orphaned: its
 * after-callback only frees it. */
struct why_job {
	uv_work_t work;
	struct dashboard *d;
	struct request *r;
	struct MHD_Connection *conn;
	char *id;
	char *memory_dir;
	cJSON *result; /* NULL with err on a read error */
	struct ga_err err;
	bool orphaned;
	struct why_job *next;
};

enum why_state { WHY_NONE, WHY_RUNNING, WHY_DONE };

/* Per request: the body, bounded; a why in progress. */
struct request {
	char *body;
	size_t len;
	bool too_large;
	enum why_state why;
	cJSON *why_result;
	struct ga_err why_err;
};

struct dashboard {
	struct dashboard_config c; /* strings below are our copies */
	char *token;
	char *memory_dir;
	char *agent_name;
	struct dashboard_addr addr;
	struct MHD_Daemon *mhd;
	uv_poll_t poll;
	bool poll_inited;
	int listen_fd;         /* ours until MHD starts, then MHD's */
	uv_poll_t listen_poll; /* watches listen_fd until the first connection */
	bool listen_watched;
	uv_timer_t timer;
	uv_timer_t keepalive;
	int open_handles;
	int sub_id;
	bool in_run;
	bool closing;
	char url[96];
	struct mime_file files[DASHBOARD_STATIC_MAX_FILES];
	size_t nfiles;
	struct sse_client *clients;
	struct why_job *jobs;
	size_t nactive;
	uint64_t dropped;
	uint64_t refused;
};

/* --- the loop glue ---------------------------------------------------------------- */

static void on_timer(uv_timer_t *t);

static void rearm(struct dashboard *d)
{
	if (d->closing || !d->mhd)
		return;
	MHD_UNSIGNED_LONG_LONG ms = DASH_IDLE_RUN_MS;
	if (MHD_get_timeout(d->mhd, &ms) != MHD_YES || ms > DASH_IDLE_RUN_MS)
		ms = DASH_IDLE_RUN_MS;
	uv_timer_start(&d->timer, on_timer, (uint64_t)ms, 0);
}

/* MHD_run is never entered from inside itself (an access handler that
 * pauses the pipeline produces a decision, which pushes to the streams):
 * whatever wants MHD to run asks for it on the next loop turn. */
static void kick(struct dashboard *d)
{
	if (!d->closing)
		uv_timer_start(&d->timer, on_timer, 0, 0);
}

static void run(struct dashboard *d)
{
	if (!d->mhd)
		return;
	if (d->in_run || d->closing) {
		kick(d);
		return;
	}
	d->in_run = true;
	MHD_run(d->mhd);
	d->in_run = false;
	rearm(d);
}

static void on_timer(uv_timer_t *t)
{
	run(t->data);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	(void)status;
	(void)events;
	run(p->data);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	char buf[512];
	vsnprintf(buf, sizeof buf, fmt, ap);
	size_t n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	log_kv(LOG_LEVEL_DEBUG, "dashboard", "libmicrohttpd", "detail", buf);
}

/* --- responses -------------------------------------------------------------------- */

static void security_headers(struct MHD_Response *r)
{
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "Content-Security-Policy",
	                        "default-src 'self'; img-src 'self' data:; style-src 'self'; "
	                        "script-src 'self'; connect-src 'self'; frame-ancestors 'none'; "
	                        "base-uri 'none'; form-action 'none'");
}

/* Sends body (malloc'ed, taken). */
static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
                             char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	security_headers(r);
	if (status == 401)
		MHD_add_response_header(r, "WWW-Authenticate", "Bearer realm=\"dashboard\"");
	if (status == 405)
		MHD_add_response_header(r, "Allow", "GET, HEAD, POST");
	enum MHD_Result ok = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ok;
}

/* Registered secrets become "[redacted]" in every string of o, before it
 * is printed: a secret holding a quote or a backslash would not be found
 * in the escaped JSON text. */
static void redact_tree(cJSON *o)
{
	cJSON *it;
	if (cJSON_IsString(o) && o->valuestring) {
		char *r = log_redact(o->valuestring);
		if (strcmp(r, o->valuestring) != 0)
			cJSON_SetValuestring(o, r);
		free(r);
		return;
	}
	cJSON_ArrayForEach(it, o) redact_tree(it);
}

/* Every JSON body leaves through here: registered secrets become
 * "[redacted]" whatever module put them in. */
static enum MHD_Result reply_json(struct MHD_Connection *conn, unsigned status, cJSON *o)
{
	redact_tree(o);
	char *s = o ? cJSON_PrintUnformatted(o) : NULL;
	cJSON_Delete(o);
	if (!s)
		s = xstrdup("{\"error\":\"the answer could not be encoded\"}");
	char *safe = log_redact(s);
	cJSON_free(s);
	return reply(conn, status, "application/json; charset=utf-8", safe, strlen(safe));
}

static enum MHD_Result reply_error(struct MHD_Connection *conn, unsigned status, const char *fmt,
                                   ...) __attribute__((format(printf, 3, 4)));
static enum MHD_Result reply_error(struct MHD_Connection *conn, unsigned status, const char *fmt,
                                   ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	cJSON *o = cJSON_CreateObject();
	cJSON *m = cJSON_CreateString(msg);
	cJSON_AddItemToObject(o, "error", m ? m : cJSON_CreateString("bad request"));
	return reply_json(conn, status, o);
}

/* --- the event streams -------------------------------------------------------------- */

static void sse_drop(struct sse_client *cl, const char *why)
{
	struct dashboard *d = cl->d;
	if (cl->dropped)
		return;
	cl->dropped = true;
	d->nactive--;
	d->dropped++;
	free(cl->buf);
	cl->buf = NULL;
	cl->len = cl->off = cl->cap = 0;
	log_kv(LOG_LEVEL_WARN, "dashboard", "event stream dropped", "reason", why);
	/* The socket is shut now, so MHD sees the error at its next look
	 * and closes the connection: a client that stopped reading does not
	 * keep its slot until a timeout. */
	const union MHD_ConnectionInfo *ci =
	        MHD_get_connection_info(cl->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci)
		shutdown(ci->connect_fd, SHUT_RDWR);
	if (cl->suspended) {
		cl->suspended = false;
		MHD_resume_connection(cl->conn);
	}
	kick(d);
}

static void sse_push(struct sse_client *cl, const char *data, size_t n)
{
	if (cl->dropped)
		return;
	if (cl->len - cl->off + n > DASHBOARD_SSE_QUEUE_MAX_BYTES) {
		sse_drop(cl, "the client fell more than DASHBOARD_SSE_QUEUE_MAX_BYTES behind");
		return;
	}
	if (cl->off && cl->len + n > cl->cap) {
		memmove(cl->buf, cl->buf + cl->off, cl->len - cl->off);
		cl->len -= cl->off;
		cl->off = 0;
	}
	if (cl->len + n > cl->cap) {
		size_t cap = cl->cap ? cl->cap : 4096;
		while (cap < cl->len + n)
			cap *= 2;
		cl->buf = xrealloc(cl->buf, cap);
		cl->cap = cap;
	}
	memcpy(cl->buf + cl->len, data, n);
	cl->len += n;
	if (cl->suspended) {
		cl->suspended = false;
		MHD_resume_connection(cl->conn);
		kick(cl->d);
	}
}

static void broadcast(struct dashboard *d, const char *data, size_t n)
{
	for (struct sse_client *cl = d->clients; cl; cl = cl->next)
		sse_push(cl, data, n);
}

/* "event: <name>\ndata: <json>\n\n" with secrets redacted (the JSON is one
 * line: cJSON escapes every newline). Caller frees. */
static char *sse_event(const char *name, cJSON *o, size_t *len)
{
	redact_tree(o);
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	char *safe = log_redact(s ? s : "{}");
	cJSON_free(s);
	size_t n = strlen(name) + strlen(safe) + 32;
	char *ev = xmalloc(n);
	*len = (size_t)snprintf(ev, n, "event: %s\ndata: %s\n\n", name, safe);
	free(safe);
	return ev;
}

static void on_decision(void *ud, const struct decision_record *rec)
{
	struct dashboard *d = ud;
	if (!d->clients)
		return;
	size_t n;
	char *ev = sse_event("decision", decision_record_to_json(rec), &n);
	broadcast(d, ev, n);
	free(ev);
}

static void on_keepalive(uv_timer_t *t)
{
	static const char ka[] = ": keepalive\n\n";
	broadcast(t->data, ka, sizeof ka - 1);
}

void dashboard_paused_changed(struct dashboard *d, bool paused)
{
	if (!d)
		return;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "paused", paused);
	size_t n;
	char *ev = sse_event("paused", o, &n);
	broadcast(d, ev, n);
	free(ev);
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct sse_client *cl = cls;
	if (cl->dropped || cl->d->closing)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	if (cl->off == cl->len) {
		/* A suspended connection is not watched: a client that went
		 * away is noticed here, before parking it. */
		const union MHD_ConnectionInfo *ci =
		        MHD_get_connection_info(cl->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		char c;
		if (ci) {
			ssize_t r = recv(ci->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
			if (r == 0 ||
			    (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
				return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		/* Nothing to send: park the connection until sse_push (MHD's
		 * rule: a reader that returns 0 must suspend, or MHD spins). */
		cl->off = cl->len = 0;
		cl->suspended = true;
		MHD_suspend_connection(cl->conn);
		return 0;
	}
	size_t n = cl->len - cl->off;
	if (n > max)
		n = max;
	memcpy(buf, cl->buf + cl->off, n);
	cl->off += n;
	return (ssize_t)n;
}

static void sse_free(void *cls)
{
	struct sse_client *cl = cls;
	struct dashboard *d = cl->d;
	for (struct sse_client **pp = &d->clients; *pp; pp = &(*pp)->next)
		if (*pp == cl) {
			*pp = cl->next;
			break;
		}
	if (!cl->dropped)
		d->nactive--;
	free(cl->buf);
	free(cl);
}

/* The backlog: the newest DASHBOARD_SSE_BACKLOG decisions that fit in
 * half of a stream's queue (a record may be a few KiB), sent oldest first. */
struct backlog {
	char *ev[DASHBOARD_SSE_BACKLOG];
	size_t len[DASHBOARD_SSE_BACKLOG];
	size_t n;
};

static void backlog_cb(void *ud, const struct decision_record *rec)
{
	struct backlog *b = ud;
	if (b->n < DASHBOARD_SSE_BACKLOG) {
		b->ev[b->n] = sse_event("decision", decision_record_to_json(rec), &b->len[b->n]);
		b->n++;
	}
}

static void send_backlog(struct dashboard *d, struct sse_client *cl)
{
	struct backlog *b = xcalloc(1, sizeof *b);
	decision_log_recent(d->c.dlog, DASHBOARD_SSE_BACKLOG, backlog_cb, b);
	size_t first = b->n, total = 0;
	while (first > 0 && total + b->len[first - 1] <= DASHBOARD_SSE_QUEUE_MAX_BYTES / 2)
		total += b->len[--first];
	for (size_t i = 0; i < b->n; i++) {
		if (i >= first)
			sse_push(cl, b->ev[i], b->len[i]);
		free(b->ev[i]);
	}
	free(b);
}

static enum MHD_Result serve_events(struct dashboard *d, struct MHD_Connection *conn)
{
	if (d->nactive >= DASHBOARD_MAX_SSE_CLIENTS) {
		d->refused++;
		return reply_error(conn, 503,
		                   "too many live event streams (at most %d): close another "
		                   "dashboard tab",
		                   DASHBOARD_MAX_SSE_CLIENTS);
	}
	struct sse_client *cl = xcalloc(1, sizeof *cl);
	cl->d = d;
	cl->conn = conn;
	static const char hello[] = "retry: 2000\n\n";
	sse_push(cl, hello, sizeof hello - 1);
	if (d->c.pipeline) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddBoolToObject(o, "paused", pipeline_paused(d->c.pipeline));
		size_t n;
		char *ev = sse_event("paused", o, &n);
		sse_push(cl, ev, n);
		free(ev);
	}
	send_backlog(d, cl);
	struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024,
	                                                           sse_read, cl, sse_free);
	if (!r) {
		free(cl->buf);
		free(cl);
		return MHD_NO;
	}
	cl->next = d->clients;
	d->clients = cl;
	d->nactive++;
	MHD_add_response_header(r, "Content-Type", "text/event-stream; charset=utf-8");
	MHD_add_response_header(r, "X-Accel-Buffering", "no");
	security_headers(r);
	enum MHD_Result ok = MHD_queue_response(conn, 200, r);
	MHD_destroy_response(r); /* sse_free runs when the connection ends */
	return ok;
}

/* --- static pages ------------------------------------------------------------------- */

/* The pages are read once, at start: a request can only ever name one of
 * these in-memory files, so no path a client sends reaches the file
 * system. */
static int load_static(struct dashboard *d, const char *dir, struct ga_err *err)
{
	DIR *dp = opendir(dir);
	if (!dp)
		return err_set(err, "the dashboard pages in %s cannot be read: %s", dir,
		               strerror(errno));
	struct dirent *e;
	int rc = 0;
	while (rc == 0 && (e = readdir(dp))) {
		if (!dashboard_static_name_ok(e->d_name))
			continue;
		char *path = fsx_join(dir, e->d_name);
		struct stat sb;
		if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
			free(path);
			continue;
		}
		if (d->nfiles == DASHBOARD_STATIC_MAX_FILES) {
			rc = err_set(err,
			             "%s holds more than %d pages (DASHBOARD_STATIC_MAX_FILES)",
			             dir, DASHBOARD_STATIC_MAX_FILES);
			free(path);
			break;
		}
		struct mime_file *f = &d->files[d->nfiles];
		struct ga_err rerr = {{0}};
		f->data = fsx_read_file(path, DASHBOARD_STATIC_MAX_BYTES, &f->len, &rerr);
		if (!f->data) {
			rc = err_set(err, "dashboard page %s: %s", path, rerr.msg);
			free(path);
			break;
		}
		f->name = xstrdup(e->d_name); /* at most 64 bytes: the name is ok */
		f->type = mime_type(f->name);
		if (!f->type)
			f->type = "application/octet-stream";
		d->nfiles++;
		free(path);
	}
	closedir(dp);
	if (rc == 0 && !mime_file_find(d->files, d->nfiles, "index.html", 10))
		rc = err_set(err, "%s has no index.html: is the data directory complete?", dir);
	return rc;
}

static enum MHD_Result serve_static(struct dashboard *d, struct MHD_Connection *conn,
                                    const char *url)
{
	const char *name = strcmp(url, "/") == 0 ? "index.html" : url + 1;
	const struct mime_file *f =
	        dashboard_static_name_ok(name)
	                ? mime_file_find(d->files, d->nfiles, name, strlen(name))
	                : NULL;
	if (!f)
		return reply_error(conn, 404, "no such page: %.200s", url);
	struct MHD_Response *r =
	        MHD_create_response_from_buffer(f->len, f->data, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", f->type);
	security_headers(r);
	enum MHD_Result ok = MHD_queue_response(conn, 200, r);
	MHD_destroy_response(r);
	return ok;
}

/* --- the API ------------------------------------------------------------------------ */

static const char *header(struct MHD_Connection *conn, const char *name)
{
	return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

static const char *arg(struct MHD_Connection *conn, const char *name)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, name);
	return v && *v ? v : NULL;
}

static void why_work(uv_work_t *w)
{
	struct why_job *j = w->data;
	j->result = dash_api_why_read(j->memory_dir, j->id, &j->err);
}

static void why_done(uv_work_t *w, int status)
{
	(void)status;
	struct why_job *j = w->data;
	if (!j->orphaned) {
		struct dashboard *d = j->d;
		for (struct why_job **pp = &d->jobs; *pp; pp = &(*pp)->next)
			if (*pp == j) {
				*pp = j->next;
				break;
			}
		j->r->why = WHY_DONE;
		j->r->why_result = j->result;
		j->r->why_err = j->err;
		j->result = NULL;
		MHD_resume_connection(j->conn); /* the handler is called again */
		kick(d);
	}
	cJSON_Delete(j->result);
	free(j->id);
	free(j->memory_dir);
	free(j);
}

/* /api/why/<id>: the first call starts the read and parks the connection;
 * the call after the resume answers. */
static enum MHD_Result serve_why(struct dashboard *d, struct MHD_Connection *conn,
                                 struct request *r, const char *id)
{
	if (r->why == WHY_DONE) {
		cJSON *o = r->why_result;
		r->why_result = NULL;
		if (!o)
			return reply_error(conn, 500, "the decision log could not be read: %s",
			                   r->why_err.msg);
		dash_api_why_finish(&d->c, o);
		return reply_json(conn, 200, o);
	}
	if (r->why == WHY_RUNNING)
		return MHD_YES;
	if (d->closing)
		return reply_error(conn, 503, "the agent is stopping");
	struct why_job *j = xcalloc(1, sizeof *j);
	j->work.data = j;
	j->d = d;
	j->r = r;
	j->conn = conn;
	j->id = xstrdup(id);
	j->memory_dir = d->memory_dir ? xstrdup(d->memory_dir) : NULL;
	if (uv_queue_work(d->c.loop, &j->work, why_work, why_done) != 0) {
		free(j->id);
		free(j->memory_dir);
		free(j);
		return reply_error(conn, 503, "no worker to read the decision log now");
	}
	j->next = d->jobs;
	d->jobs = j;
	r->why = WHY_RUNNING;
	MHD_suspend_connection(conn);
	return MHD_YES;
}

static bool token_ok(const struct dashboard *d, struct MHD_Connection *conn)
{
	if (!d->token)
		return true;
	const char *a = header(conn, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!a || strncmp(a, "Bearer ", 7) != 0)
		return false;
	return dashboard_token_equal(a + 7, d->token);
}

/* pause / resume: POST only, the custom header, the Origin (CSRF), a body
 * that is empty or a JSON object. */
static enum MHD_Result serve_pause(struct dashboard *d, struct MHD_Connection *conn,
                                   const char *method, struct request *r, bool paused)
{
	if (strcmp(method, "POST") != 0)
		return reply_error(conn, 405, "/api/%s changes state: use POST",
		                   paused ? "pause" : "resume");
	const char *x = header(conn, "X-Dashboard");
	if (!x || strcmp(x, "1") != 0)
		return reply_error(conn, 403,
		                   "a state change needs the header 'X-Dashboard: 1' (the page "
		                   "sends it; other sites cannot)");
	const char *origin = header(conn, "Origin");
	const char *host = header(conn, MHD_HTTP_HEADER_HOST);
	if (origin) {
		char want[320];
		snprintf(want, sizeof want, "http://%s", host ? host : "");
		if (strcmp(origin, want) != 0)
			return reply_error(conn, 403,
			                   "cross-origin request refused: Origin '%.100s' is not "
			                   "'%.100s'",
			                   origin, want);
	}
	if (r->len) {
		const char *ct = header(conn, MHD_HTTP_HEADER_CONTENT_TYPE);
		if (!ct || strncmp(ct, "application/json", 16) != 0)
			return reply_error(conn, 415,
			                   "the body must be application/json, got '%.80s'",
			                   ct ? ct : "(no Content-Type)");
		struct ga_err err = {{0}};
		cJSON *body = json_parse(r->body, r->len, &err);
		if (!body)
			return reply_error(conn, 400, "the body is not valid JSON: %s", err.msg);
		bool obj = cJSON_IsObject(body);
		cJSON_Delete(body);
		if (!obj)
			return reply_error(conn, 400, "the body must be a JSON object ({})");
	}
	if (!d->c.pipeline)
		return reply_error(conn, 503, "this agent has no message pipeline to pause");
	if (d->c.st) {
		struct ga_err err = {{0}};
		if (control_save(d->c.st, paused, "dashboard", time_now_ms(), &err) != 0)
			return reply_error(conn, 500, "the kill switch could not be saved: %s",
			                   err.msg);
	}
	pipeline_set_paused(d->c.pipeline, paused);
	log_kv(LOG_LEVEL_INFO, "dashboard",
	       paused ? "paused from the dashboard" : "resumed from the dashboard", NULL);
	if (d->c.on_paused)
		d->c.on_paused(d->c.ud, paused);
	dashboard_paused_changed(d, paused);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "paused", pipeline_paused(d->c.pipeline));
	return reply_json(conn, 200, o);
}

static enum MHD_Result serve_api(struct dashboard *d, struct MHD_Connection *conn, const char *path,
                                 const char *method, struct request *r)
{
	if (!token_ok(d, conn))
		return reply_error(conn, 401,
		                   "this dashboard needs its token (DASHBOARD_TOKEN): open it as "
		                   "%s#token=<the token>",
		                   d->url);
	if (strcmp(path, "pause") == 0 || strcmp(path, "resume") == 0)
		return serve_pause(d, conn, method, r, strcmp(path, "pause") == 0);
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return reply_error(conn, 405, "/api/%.100s is read-only: use GET", path);
	if (r->len)
		return reply_error(conn, 400, "a GET request carries no body");
	if (strcmp(path, "status") == 0) {
		struct dash_stats s = {.sse_clients = d->nactive,
		                       .sse_dropped = d->dropped,
		                       .sse_refused = d->refused,
		                       .url = d->url};
		return reply_json(conn, 200, dash_api_status(&d->c, &s));
	}
	if (strcmp(path, "events") == 0) {
		if (strcmp(method, "GET") != 0)
			return reply_error(conn, 405, "/api/events is a stream: use GET");
		return serve_events(d, conn);
	}
	if (strcmp(path, "decisions") == 0) {
		struct dash_filter f = {.limit = DASHBOARD_SSE_BACKLOG,
		                        .platform = arg(conn, "platform"),
		                        .verdict = arg(conn, "verdict"),
		                        .rule = arg(conn, "rule"),
		                        .stage = arg(conn, "stage")};
		const char *l = arg(conn, "limit");
		if (l) {
			char *end = NULL;
			long v = strtol(l, &end, 10);
			if (!end || *end || v < 1 || v > DECISION_LOG_RECENT)
				return reply_error(conn, 400,
				                   "limit must be a number from 1 to %d, got "
				                   "'%.20s'",
				                   DECISION_LOG_RECENT, l);
			f.limit = (size_t)v;
		}
		if (f.verdict && decision_verdict_parse(f.verdict) < 0)
			return reply_error(conn, 400, "unknown verdict '%.40s'", f.verdict);
		if (f.stage && decision_stage_parse(f.stage) < 0)
			return reply_error(conn, 400, "unknown stage '%.40s'", f.stage);
		return reply_json(conn, 200, dash_api_decisions(&d->c, &f));
	}
	if (strncmp(path, "why/", 4) == 0) {
		const char *id = path + 4;
		if (!*id || strlen(id) > DECISION_LOG_FIELD_MAX_BYTES)
			return reply_error(conn, 400, "why needs a message id: /api/why/<id>");
		return serve_why(d, conn, r, id);
	}
	if (strcmp(path, "conversations") == 0)
		return reply_json(conn, 200, dash_api_conversations(&d->c));
	if (strncmp(path, "conversations/", 14) == 0) {
		cJSON *o = dash_api_conversation(&d->c, path + 14);
		if (!o)
			return reply_error(conn, 404, "no conversation '%.200s'", path + 14);
		return reply_json(conn, 200, o);
	}
	if (strcmp(path, "commitments") == 0)
		return reply_json(conn, 200, dash_api_commitments(&d->c));
	if (strcmp(path, "permissions") == 0)
		return reply_json(conn, 200, dash_api_permissions(&d->c));
	return reply_error(conn, 404, "no such API: /api/%.200s", path);
}

static bool path_ok(const char *url)
{
	if (url[0] != '/')
		return false;
	if (strstr(url, "..") || strchr(url, '\\'))
		return false;
	for (const unsigned char *p = (const unsigned char *)url; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

static enum MHD_Result dispatch(struct dashboard *d, struct MHD_Connection *conn, const char *url,
                                const char *method, struct request *r)
{
	if (r->too_large)
		return reply_error(conn, 413, "the request body is over %d bytes",
		                   DASHBOARD_MAX_BODY_BYTES);
	if (!d->token) {
		/* Without a token the only protection is the loopback; a
		 * page on another site that rebinds its name to 127.0.0.1
		 * arrives with its own name in Host. */
		const char *host = header(conn, MHD_HTTP_HEADER_HOST);
		if (host && !dashboard_host_is_loopback(host))
			return reply_error(conn, 403,
			                   "Host '%.100s' is not a loopback name: open %s (or set "
			                   "DASHBOARD_TOKEN to serve other names)",
			                   host, d->url);
	}
	if (!path_ok(url))
		return reply_error(conn, 400,
		                   "bad path: '..', '\\' and control characters are "
		                   "refused");
	if (strncmp(url, "/api/", 5) == 0)
		return serve_api(d, conn, url + 5, method, r);
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return reply_error(conn, 405, "%.100s is a page: use GET", url);
	return serve_static(d, conn, url);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
	(void)version;
	struct dashboard *d = cls;
	struct request *r = *con_cls;
	if (!r) {
		r = xcalloc(1, sizeof *r);
		*con_cls = r;
		const char *cl = header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > DASHBOARD_MAX_BODY_BYTES) {
			/* Refused before a byte of it is read. */
			r->too_large = true;
			return dispatch(d, conn, url, method, r);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		if (!r->too_large && r->len + *upload_size <= DASHBOARD_MAX_BODY_BYTES) {
			r->body = xrealloc(r->body, r->len + *upload_size + 1);
			memcpy(r->body + r->len, upload, *upload_size);
			r->len += *upload_size;
			r->body[r->len] = '\0';
		} else {
			r->too_large = true; /* the rest is read and thrown away */
			free(r->body);
			r->body = NULL;
			r->len = 0;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	return dispatch(d, conn, url, method, r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)conn;
	(void)toe;
	struct request *r = *con_cls;
	if (r) {
		free(r->body);
		cJSON_Delete(r->why_result);
		free(r);
		*con_cls = NULL;
	}
}

/* --- lifetime ----------------------------------------------------------------------- */

static void free_dashboard(struct dashboard *d)
{
	for (size_t i = 0; i < d->nfiles; i++)
		mime_file_clear(&d->files[i]);
	free(d->token);
	free(d->memory_dir);
	free(d->agent_name);
	free(d);
}

static void on_handle_closed(uv_handle_t *h)
{
	struct dashboard *d = h->data;
	if (--d->open_handles == 0)
		free_dashboard(d);
}

/* The library cannot be loaded or started: the socket is closed, so the
 * connection waiting in the backlog (and every later one) is refused at
 * once instead of hanging. */
static void give_up_listening(struct dashboard *d)
{
	if (d->listen_watched) {
		d->listen_watched = false;
		uv_close((uv_handle_t *)&d->listen_poll, on_handle_closed);
	}
	if (d->listen_fd >= 0) {
		close(d->listen_fd);
		d->listen_fd = -1;
	}
}

/* libmicrohttpd (and GnuTLS with it) is loaded when the first connection
 * arrives: an agent nobody looks at never pays for it. The connection waits
 * in the listen backlog meanwhile; MHD takes over the listening socket. */
static void on_first_connection(uv_poll_t *p, int status, int events)
{
	(void)status;
	(void)events;
	struct dashboard *d = p->data;
	uv_poll_stop(&d->listen_poll);
	struct ga_err err = {{0}};
	if (mhd_shim_load(&err) != 0) {
		log_kv(LOG_LEVEL_ERROR, "dashboard",
		       "the dashboard cannot start: it stops listening", "error", err.msg);
		give_up_listening(d);
		return;
	}
	unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	if (d->addr.ipv6)
		flags |= MHD_USE_IPv6;
	d->mhd = MHD_start_daemon(
	        flags, 0, NULL, NULL, on_request, d, MHD_OPTION_LISTEN_SOCKET, d->listen_fd,
	        MHD_OPTION_NOTIFY_COMPLETED, on_completed, d, MHD_OPTION_CONNECTION_LIMIT,
	        (unsigned)DASHBOARD_MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT,
	        (unsigned)DASHBOARD_CONNECTION_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
	        (size_t)DASHBOARD_CONNECTION_MEMORY, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, d,
	        MHD_OPTION_END);
	if (!d->mhd) {
		log_kv(LOG_LEVEL_ERROR, "dashboard",
		       "libmicrohttpd did not start: the dashboard stops listening", NULL);
		give_up_listening(d);
		return;
	}
	d->listen_watched = false;
	uv_close((uv_handle_t *)&d->listen_poll, on_handle_closed);
	const union MHD_DaemonInfo *ep = MHD_get_daemon_info(d->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!ep || uv_poll_init(d->c.loop, &d->poll, ep->epoll_fd) != 0) {
		log_kv(LOG_LEVEL_ERROR, "dashboard",
		       "the dashboard cannot watch libmicrohttpd's epoll descriptor", NULL);
		return;
	}
	d->poll.data = d;
	d->poll_inited = true;
	d->open_handles++;
	uv_poll_start(&d->poll, UV_READABLE, on_poll);
	run(d);
}

struct dashboard *dashboard_new(const struct dashboard_config *c, struct ga_err *err)
{
	struct dashboard_addr addr;
	if (dashboard_parse_addr(c->addr, &addr, err) != 0)
		return NULL;
	const char *token = c->token && *c->token ? c->token : NULL;
	if (token && strlen(token) < DASHBOARD_TOKEN_MIN) {
		err_set(err,
		        "DASHBOARD_TOKEN is too short (%zu characters): use at least %d "
		        "random characters",
		        strlen(token), DASHBOARD_TOKEN_MIN);
		return NULL;
	}
	if (!addr.loopback && !token) {
		err_set(err,
		        "DASHBOARD_ADDR %s is not a loopback address: set DASHBOARD_TOKEN (at "
		        "least "
		        "%d random characters) to serve the dashboard there, or use 127.0.0.1",
		        c->addr, DASHBOARD_TOKEN_MIN);
		return NULL;
	}
	if (!c->loop || !c->web_dir) {
		err_set(err, "the dashboard needs a loop and a web directory");
		return NULL;
	}
	struct dashboard *d = xcalloc(1, sizeof *d);
	d->c = *c;
	d->addr = addr;
	d->token = token ? xstrdup(token) : NULL;
	d->memory_dir = c->memory_dir ? xstrdup(c->memory_dir) : NULL;
	d->agent_name = xstrdup(c->agent_name ? c->agent_name : "agent");
	d->c.token = d->token;
	d->c.memory_dir = d->memory_dir;
	d->c.agent_name = d->agent_name;
	d->sub_id = -1;
	if (load_static(d, c->web_dir, err) != 0) {
		free_dashboard(d);
		return NULL;
	}
	int fam = addr.ipv6 ? AF_INET6 : AF_INET;
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof ss);
	socklen_t sl;
	if (addr.ipv6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)addr.port);
		inet_pton(AF_INET6, addr.host, &s6->sin6_addr);
		sl = sizeof *s6;
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)addr.port);
		inet_pton(AF_INET, addr.host, &s4->sin_addr);
		sl = sizeof *s4;
	}
	int one = 1;
	d->listen_fd = socket(fam, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (d->listen_fd < 0 ||
	    setsockopt(d->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    (addr.ipv6 &&
	     setsockopt(d->listen_fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0) ||
	    bind(d->listen_fd, (struct sockaddr *)&ss, sl) != 0 || listen(d->listen_fd, 32) != 0) {
		err_set(err,
		        "the dashboard cannot listen on %s (in use, or not an address of this "
		        "machine?)",
		        c->addr);
		if (d->listen_fd >= 0)
			close(d->listen_fd);
		free_dashboard(d);
		return NULL;
	}
	sl = sizeof ss;
	int port = addr.port;
	if (getsockname(d->listen_fd, (struct sockaddr *)&ss, &sl) == 0)
		port = ntohs(addr.ipv6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
		                       : ((struct sockaddr_in *)&ss)->sin_port);
	d->addr.port = port;
	snprintf(d->url, sizeof d->url, addr.ipv6 ? "http://[%s]:%d/" : "http://%s:%d/", addr.host,
	         port);
	if (uv_poll_init(c->loop, &d->listen_poll, d->listen_fd) != 0) {
		err_set(err, "the dashboard cannot watch its listening socket");
		close(d->listen_fd);
		free_dashboard(d);
		return NULL;
	}
	d->listen_poll.data = d;
	d->listen_watched = true;
	uv_timer_init(c->loop, &d->timer);
	d->timer.data = d;
	uv_timer_init(c->loop, &d->keepalive);
	d->keepalive.data = d;
	d->open_handles = 3;
	uv_poll_start(&d->listen_poll, UV_READABLE, on_first_connection);
	uv_timer_start(&d->keepalive, on_keepalive, DASHBOARD_SSE_KEEPALIVE_MS,
	               DASHBOARD_SSE_KEEPALIVE_MS);
	if (c->dlog) {
		d->sub_id = decision_log_subscribe(c->dlog, on_decision, d);
		if (d->sub_id < 0)
			log_kv(LOG_LEVEL_WARN, "dashboard",
			       "the decision log has no subscriber slot left: no live decisions",
			       NULL);
	}
	rearm(d);
	log_kv(LOG_LEVEL_INFO, "dashboard", "dashboard listening", "url", d->url, "token",
	       LOG_BOOL(d->token != NULL));
	return d;
}

int dashboard_port(const struct dashboard *d)
{
	return d->addr.port;
}

const char *dashboard_url(const struct dashboard *d)
{
	return d->url;
}

void dashboard_close(struct dashboard *d)
{
	if (!d || d->closing)
		return;
	if (d->sub_id > 0)
		decision_log_unsubscribe(d->c.dlog, d->sub_id);
	/* Every stream is woken to end (sse_read answers "error" once
	 * closing is set): MHD must not be stopped with a suspended
	 * connection. */
	for (struct sse_client *cl = d->clients; cl; cl = cl->next)
		if (cl->suspended) {
			cl->suspended = false;
			MHD_resume_connection(cl->conn);
		}
	/* A why still reading: its connection is resumed to end with the
	 * daemon; the worker's answer will only be freed. */
	for (struct why_job *j = d->jobs; j; j = j->next) {
		j->orphaned = true;
		j->r->why = WHY_DONE;
		j->r->why_result = NULL;
		err_set(&j->r->why_err, "the agent is stopping");
		MHD_resume_connection(j->conn);
	}
	d->jobs = NULL;
	d->closing = true;
	/* The poll handle goes before MHD closes the descriptor it watches. */
	if (d->poll_inited)
		uv_poll_stop(&d->poll);
	if (d->mhd) {
		if (!d->in_run)
			MHD_run(d->mhd);
		MHD_stop_daemon(d->mhd); /* sse_free runs for each stream here */
		d->mhd = NULL;
	} else {
		give_up_listening(d);
	}
	if (d->listen_watched) {
		d->listen_watched = false;
		uv_close((uv_handle_t *)&d->listen_poll, on_handle_closed);
	}
	uv_timer_stop(&d->timer);
	uv_timer_stop(&d->keepalive);
	if (d->poll_inited)
		uv_close((uv_handle_t *)&d->poll, on_handle_closed);
	uv_close((uv_handle_t *)&d->timer, on_handle_closed);
	uv_close((uv_handle_t *)&d->keepalive, on_handle_closed);
}
