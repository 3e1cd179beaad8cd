/*
 * modules/coord/coord_redis.c — claims and counters in Redis (REDIS_URL),
 * hiredis async on the one loop through its libuv adapter. See coord.h for
 * the commands, the key prefix, timeouts and the reconnect policy.
 *
 * Life of the connection: connect → AUTH/SELECT queued first (hiredis
 * writes them once the socket is up; user commands queue behind them) →
 * ready. Any failure (refused connect, connect or command timeout, AUTH or
 * SELECT refused, the server closing the socket) frees the context: hiredis
 * then calls every pending callback with a NULL reply, which we answer
 * COORD_UNAVAILABLE with the reason, and a reconnect is scheduled with a
 * doubling backoff. Between connections requests answer UNAVAILABLE at once.
 *
 * hiredis 0.14 rules this file relies on: after a failed connect or a lost
 * connection the library frees the context itself once our connect /
 * disconnect callback returns; redisAsyncFree() called from inside a reply
 * callback is deferred until that callback returns; every command callback
 * is called exactly once (a NULL reply when the context goes away).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "common/log.h"
#include "common/xalloc.h"
#include "modules/coord/coord_impl.h"

#define URL_MAX     2048
#define CLAIM_TRIES 3
#define FORMS       "redis://[:password@]host[:port][/db] or redis://user:password@host[:port][/db]"

/* Only the owner extends: compare first, atomically. Returns 1 when
 * renewed, else the holder (nil when free). */
static const char RENEW_LUA[] =
        "local v=redis.call('get',KEYS[1]) "
        "if v==ARGV[1] then redis.call('pexpire',KEYS[1],ARGV[2]) return 1 end return v";
/* Only the owner deletes. */
static const char RELEASE_LUA[] =
        "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) "
        "else return 0 end";
/* INCR, and PEXPIRE on the first event of a window — in one script so that
 * no crash between the two can leave a counter without a TTL (the pttl
 * check also repairs one written by anything else). */
static const char COUNT_LUA[] =
        "local n=redis.call('incr',KEYS[1]) "
        "if n==1 or redis.call('pttl',KEYS[1])<0 then redis.call('pexpire',KEYS[1],ARGV[1]) end "
        "return n";

enum rq_kind { RQ_AUTH, RQ_SELECT, RQ_CLAIM_SET, RQ_CLAIM_GET, RQ_RENEW, RQ_RELEASE, RQ_COUNT };

struct coord_redis;

struct rreq {
	struct rreq *prev, *next;
	struct coord_redis *r;
	enum rq_kind kind;
	coord_claim_fn cb;
	coord_count_fn ccb;
	void *ud;
	char *key; /* prefixed */
	int64_t ttl_ms;
	int64_t deadline;
	int tries;
};

struct coord_redis {
	struct coord base;
	char host[256];
	int port, db;
	char *user, *password;
	redisAsyncContext *ac; /* NULL between connections */
	bool connected, ready;
	int handshake_left;
	char last_error[GA_ERR_MSG_MAX];
	int64_t timeout_ms;
	int64_t backoff_ms;
	int64_t retry_at;         /* monotonic ms of the next connect attempt */
	uv_timer_t conn_timer;    /* connect timeout, or the backoff before a retry */
	uv_timer_t cmd_timer;     /* the oldest command's deadline */
	struct rreq *head, *tail; /* in issue order = deadline order */
};

/* --- URL ------------------------------------------------------------------------------------- */

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* %-decodes s[0..n) into a new string; NULL on a bad escape or a NUL. */
static char *pct_decode(const char *s, size_t n)
{
	char *out = xmalloc(n + 1);
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%') {
			out[o++] = s[i];
			continue;
		}
		int hi = i + 2 < n ? hexval((unsigned char)s[i + 1]) : -1;
		int lo = i + 2 < n ? hexval((unsigned char)s[i + 2]) : -1;
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			free(out);
			return NULL;
		}
		out[o++] = (char)(hi * 16 + lo);
		i += 2;
	}
	out[o] = '\0';
	return out;
}

static bool parse_uint(const char *s, size_t n, long max, long *out)
{
	if (!n || n > 10)
		return false;
	long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		v = v * 10 + (s[i] - '0');
	}
	if (v > max)
		return false;
	*out = v;
	return true;
}

static bool host_ok(const char *h, bool ipv6)
{
	if (!*h)
		return false;
	for (const char *p = h; *p; p++) {
		unsigned char ch = (unsigned char)*p;
		if (isalnum(ch) || ch == '.' || ch == '-' || ch == '_' || (ipv6 && ch == ':'))
			continue;
		return false;
	}
	return true;
}

/* Fills r's host, port, db, user, password. Errors name REDIS_URL and never
 * repeat the user info. */
static int parse_url(struct coord_redis *r, const char *url, struct ga_err *err)
{
	if (!url || !*url)
		return err_set(err, "REDIS_URL is empty: expected %s", FORMS);
	size_t len = strlen(url);
	if (len > URL_MAX)
		return err_set(err, "REDIS_URL is longer than %d bytes", URL_MAX);
	const char *sep = strstr(url, "://");
	if (!sep)
		return err_set(err, "REDIS_URL is not a URL: expected %s", FORMS);
	size_t sl = (size_t)(sep - url);
	if (sl == 6 && strncasecmp(url, "rediss", 6) == 0)
		return err_set(err,
		               "REDIS_URL uses rediss:// (TLS), which is not supported: use %s",
		               FORMS);
	if (sl != 5 || strncasecmp(url, "redis", 5) != 0) {
		char scheme[32];
		err_fmt(scheme, sizeof scheme, "%.*s", (int)(sl < 24 ? sl : 24), url);
		return err_set(err, "REDIS_URL must start with redis:// (got \"%s://\"): use %s",
		               scheme, FORMS);
	}
	const char *rest = sep + 3;
	if (strpbrk(rest, "?#"))
		return err_set(err,
		               "REDIS_URL has a query or fragment (?…/#…), which is not "
		               "supported: use %s",
		               FORMS);
	const char *slash = strchr(rest, '/');
	const char *aend = slash ? slash : rest + strlen(rest);
	/* user info: up to the last '@' of the authority */
	const char *at = NULL;
	for (const char *p = rest; p < aend; p++)
		if (*p == '@')
			at = p;
	const char *hp = rest;
	if (at) {
		const char *colon = memchr(rest, ':', (size_t)(at - rest));
		if (!colon)
			return err_set(err, "REDIS_URL: the part before '@' must be :password or "
			                    "user:password");
		if (colon > rest) {
			r->user = pct_decode(rest, (size_t)(colon - rest));
			if (!r->user)
				return err_set(err, "REDIS_URL: the user name has a bad %%-escape");
		}
		r->password = pct_decode(colon + 1, (size_t)(at - colon - 1));
		if (!r->password)
			return err_set(err, "REDIS_URL: the password has a bad %%-escape");
		if (!*r->password)
			return err_set(err, "REDIS_URL: the password after ':' is empty");
		/* Before any line could mention it. */
		log_add_secret(r->password);
		hp = at + 1;
	}
	const char *host = hp, *hend, *port = NULL;
	bool v6 = false;
	if (*hp == '[') {
		const char *close = memchr(hp, ']', (size_t)(aend - hp));
		if (!close)
			return err_set(err, "REDIS_URL: an IPv6 host must be closed with ']'");
		host = hp + 1;
		hend = close;
		v6 = true;
		if (close + 1 < aend) {
			if (close[1] != ':')
				return err_set(err,
				               "REDIS_URL: expected ':port' after the IPv6 host");
			port = close + 2;
		}
	} else {
		const char *colon = memchr(hp, ':', (size_t)(aend - hp));
		hend = colon ? colon : aend;
		if (colon)
			port = colon + 1;
	}
	size_t hl = (size_t)(hend - host);
	if (!hl)
		return err_set(err, "REDIS_URL has no host: use %s", FORMS);
	if (hl >= sizeof r->host)
		return err_set(err, "REDIS_URL: the host is longer than %zu bytes",
		               sizeof r->host - 1);
	memcpy(r->host, host, hl);
	r->host[hl] = '\0';
	if (!host_ok(r->host, v6))
		return err_set(err, "REDIS_URL: \"%s\" is not a host name or address", r->host);
	long v = 6379;
	if (port && !parse_uint(port, (size_t)(aend - port), 65535, &v))
		return err_set(err, "REDIS_URL: the port \"%.*s\" is not a number from 1 to 65535",
		               (int)((aend - port) < 16 ? (aend - port) : 16), port);
	if (v == 0)
		return err_set(err, "REDIS_URL: the port must be from 1 to 65535 (got 0)");
	r->port = (int)v;
	long db = 0;
	if (slash && slash[1] && !parse_uint(slash + 1, strlen(slash + 1), 1000000, &db))
		return err_set(err,
		               "REDIS_URL: the database \"/%.16s\" is not a number "
		               "(redis://host:port/DB)",
		               slash + 1);
	r->db = (int)db;
	return 0;
}

/* --- requests -------------------------------------------------------------------------------- */

static void schedule_reconnect(struct coord_redis *r);
static void on_cmd_timeout(uv_timer_t *t);
static void drop_connection(struct coord_redis *r, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static void arm_cmd_timer(struct coord_redis *r)
{
	if (r->base.closing)
		return;
	if (!r->head) {
		uv_timer_stop(&r->cmd_timer);
		return;
	}
	int64_t wait = r->head->deadline - coord_now_ms();
	uv_timer_start(&r->cmd_timer, on_cmd_timeout, wait > 0 ? (uint64_t)wait : 0, 0);
}

static void rq_unlink(struct coord_redis *r, struct rreq *q)
{
	if (q->prev)
		q->prev->next = q->next;
	else
		r->head = q->next;
	if (q->next)
		q->next->prev = q->prev;
	else
		r->tail = q->prev;
	q->prev = q->next = NULL;
}

static void rq_free(struct rreq *q)
{
	free(q->key);
	free(q);
}

static bool rq_is_user(const struct rreq *q)
{
	return q->kind != RQ_AUTH && q->kind != RQ_SELECT;
}

/* The final answer of a user request; unlinks and frees it. */
static void rq_finish(struct rreq *q, enum coord_result res, const char *holder, const char *why,
                      int64_t count)
{
	struct coord_redis *r = q->r;
	rq_unlink(r, q);
	arm_cmd_timer(r);
	if (q->kind == RQ_COUNT)
		coord_answer_count(&r->base, q->ccb, q->ud, count);
	else if (q->kind == RQ_RELEASE)
		r->base.npending--;
	else if (rq_is_user(q))
		coord_answer_claim(&r->base, q->cb, q->ud, res, holder, why);
	rq_free(q);
}

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata);

/* Hands q's next command to hiredis. -1 when the context refuses it. */
static int rq_send(struct coord_redis *r, struct rreq *q)
{
	char ttl[24];
	snprintf(ttl, sizeof ttl, "%lld", (long long)q->ttl_ms);
	const char *id = r->base.agent_id;
	int rc = REDIS_ERR;
	switch (q->kind) {
	case RQ_AUTH:
		if (r->user)
			rc = redisAsyncCommand(r->ac, on_reply, q, "AUTH %s %s", r->user,
			                       r->password);
		else
			rc = redisAsyncCommand(r->ac, on_reply, q, "AUTH %s", r->password);
		break;
	case RQ_SELECT:
		rc = redisAsyncCommand(r->ac, on_reply, q, "SELECT %d", r->db);
		break;
	case RQ_CLAIM_SET:
		rc = redisAsyncCommand(r->ac, on_reply, q, "SET %s %s NX PX %s", q->key, id, ttl);
		break;
	case RQ_CLAIM_GET:
		rc = redisAsyncCommand(r->ac, on_reply, q, "GET %s", q->key);
		break;
	case RQ_RENEW:
		rc = redisAsyncCommand(r->ac, on_reply, q, "EVAL %s 1 %s %s %s", RENEW_LUA, q->key,
		                       id, ttl);
		break;
	case RQ_RELEASE:
		rc = redisAsyncCommand(r->ac, on_reply, q, "EVAL %s 1 %s %s", RELEASE_LUA, q->key,
		                       id);
		break;
	case RQ_COUNT:
		rc = redisAsyncCommand(r->ac, on_reply, q, "EVAL %s 1 %s %s", COUNT_LUA, q->key,
		                       ttl);
		break;
	}
	return rc == REDIS_OK ? 0 : -1;
}

static struct rreq *rq_new(struct coord_redis *r, enum rq_kind kind, const char *key,
                           int64_t ttl_ms)
{
	struct rreq *q = xcalloc(1, sizeof *q);
	q->r = r;
	q->kind = kind;
	q->key = key ? xasprintf("%s%s", COORD_REDIS_PREFIX, key) : NULL;
	q->ttl_ms = ttl_ms;
	q->deadline = coord_now_ms() + r->timeout_ms;
	q->prev = r->tail;
	if (r->tail)
		r->tail->next = q;
	else
		r->head = q;
	r->tail = q;
	if (!uv_is_active((uv_handle_t *)&r->cmd_timer))
		arm_cmd_timer(r);
	return q;
}

static const char *reply_str(const redisReply *rep)
{
	return rep->str ? rep->str : "";
}

/* Why a NULL reply: our own drop (last_error says why), or hiredis tearing
 * the connection down (its errstr). */
static void null_reason(struct coord_redis *r, const redisAsyncContext *ac, char *buf, size_t cap)
{
	if (r->base.closing)
		err_fmt(buf, cap, "shutting down");
	else if (r->ac == ac && ac->err)
		err_fmt(buf, cap, "redis: connection to %s:%d lost (%s)", r->host, r->port,
		        ac->errstr);
	else if (r->ac == ac)
		err_fmt(buf, cap, "redis: connection to %s:%d lost", r->host, r->port);
	else
		err_fmt(buf, cap, "%s", r->last_error[0] ? r->last_error : "redis: not connected");
}

static void handshake_reply(struct coord_redis *r, redisAsyncContext *ac, struct rreq *q,
                            const redisReply *rep)
{
	enum rq_kind kind = q->kind;
	rq_unlink(r, q);
	rq_free(q);
	arm_cmd_timer(r);
	if (!rep || r->ac != ac)
		return;
	if (rep->type == REDIS_REPLY_ERROR) {
		if (kind == RQ_AUTH)
			drop_connection(r, "redis: AUTH refused by %s:%d: %s", r->host, r->port,
			                reply_str(rep));
		else
			drop_connection(r, "redis: SELECT %d refused by %s:%d: %s", r->db, r->host,
			                r->port, reply_str(rep));
		return;
	}
	if (--r->handshake_left == 0 && r->connected && !r->ready) {
		r->ready = true;
		r->backoff_ms = COORD_REDIS_BACKOFF_MIN_MS;
		r->last_error[0] = '\0';
		log_kv(LOG_LEVEL_INFO, COORD_LOG, "redis ready", "host", r->host, "port",
		       LOG_INT(r->port), "db", LOG_INT(r->db));
	}
}

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
	struct rreq *q = privdata;
	struct coord_redis *r = q->r;
	const redisReply *rep = reply;
	char why[GA_ERR_MSG_MAX + 64];
	if (q->kind == RQ_AUTH || q->kind == RQ_SELECT) {
		handshake_reply(r, ac, q, rep);
		return;
	}
	if (!rep) {
		null_reason(r, ac, why, sizeof why);
		rq_finish(q, COORD_UNAVAILABLE, NULL, why, -1);
		return;
	}
	if (rep->type == REDIS_REPLY_ERROR) {
		err_fmt(why, sizeof why, "redis: the server refused the command: %s",
		        reply_str(rep));
		log_kv(LOG_LEVEL_WARN, COORD_LOG, "redis command refused", "key", q->key, "error",
		       reply_str(rep));
		rq_finish(q, COORD_UNAVAILABLE, NULL, why, -1);
		return;
	}
	const char *key = q->key + strlen(COORD_REDIS_PREFIX);
	switch (q->kind) {
	case RQ_CLAIM_SET:
		if (rep->type == REDIS_REPLY_STATUS && strcmp(reply_str(rep), "OK") == 0) {
			rq_finish(q, COORD_WON, NULL, "redis: SET NX won the key", 0);
			return;
		}
		q->kind = RQ_CLAIM_GET;
		if (r->ac != ac || rq_send(r, q) < 0) {
			null_reason(r, ac, why, sizeof why);
			rq_finish(q, COORD_UNAVAILABLE, NULL, why, -1);
		}
		return;
	case RQ_CLAIM_GET:
		if (rep->type == REDIS_REPLY_STRING) {
			if (strcmp(reply_str(rep), r->base.agent_id) == 0)
				err_fmt(why, sizeof why, "redis: already claimed by us");
			else
				err_fmt(why, sizeof why, "redis: %s holds %s", reply_str(rep), key);
			rq_finish(q, COORD_HELD, reply_str(rep), why, 0);
			return;
		}
		/* Expired between SET and GET: try again, a few times. */
		if (++q->tries < CLAIM_TRIES) {
			q->kind = RQ_CLAIM_SET;
			if (r->ac == ac && rq_send(r, q) == 0)
				return;
			null_reason(r, ac, why, sizeof why);
			rq_finish(q, COORD_UNAVAILABLE, NULL, why, -1);
			return;
		}
		rq_finish(q, COORD_UNAVAILABLE, NULL, "redis: the key kept changing hands", -1);
		return;
	case RQ_RENEW:
		if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 1)
			rq_finish(q, COORD_WON, NULL, "redis: renewed", 0);
		else if (rep->type == REDIS_REPLY_STRING) {
			err_fmt(why, sizeof why, "redis: %s holds %s; only the owner renews",
			        reply_str(rep), key);
			rq_finish(q, COORD_HELD, reply_str(rep), why, 0);
		} else
			rq_finish(q, COORD_HELD, NULL,
			          "redis: no live claim to renew (expired or released)", 0);
		return;
	case RQ_RELEASE:
		log_kv(LOG_LEVEL_DEBUG, COORD_LOG, "redis release", "key", key, "deleted",
		       rep->type == REDIS_REPLY_INTEGER && rep->integer == 1 ? "yes" : "no");
		rq_finish(q, COORD_WON, NULL, NULL, 0);
		return;
	case RQ_COUNT:
		rq_finish(q, COORD_WON, NULL, NULL,
		          rep->type == REDIS_REPLY_INTEGER ? (int64_t)rep->integer : -1);
		return;
	default:
		return;
	}
}

static void on_cmd_timeout(uv_timer_t *t)
{
	struct coord_redis *r = (struct coord_redis *)t->data;
	if (!r->head)
		return;
	if (r->head->deadline > coord_now_ms()) {
		arm_cmd_timer(r);
		return;
	}
	/* Overdue: a server that does not answer is treated as down. (Without
	 * a context the answers are already on their way.) */
	if (r->ac)
		drop_connection(r, "redis: timeout: %s:%d did not answer within %lld ms", r->host,
		                r->port, (long long)r->timeout_ms);
}

/* --- the connection --------------------------------------------------------------------------- */

/* Frees the context (its pending requests answer UNAVAILABLE with the
 * reason) and schedules a reconnect. */
static void drop_connection(struct coord_redis *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->last_error, sizeof r->last_error, fmt, ap);
	va_end(ap);
	log_kv(LOG_LEVEL_WARN, COORD_LOG, "redis connection dropped", "why", r->last_error);
	redisAsyncContext *ac = r->ac;
	r->ac = NULL;
	r->connected = r->ready = false;
	uv_timer_stop(&r->conn_timer);
	schedule_reconnect(r);
	if (ac)
		redisAsyncFree(ac);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
	struct coord_redis *r = ac->data;
	if (r->ac != ac)
		return;
	if (status != REDIS_OK) {
		/* hiredis frees the context when we return. */
		err_fmt(r->last_error, sizeof r->last_error, "redis: cannot connect to %s:%d: %s",
		        r->host, r->port, ac->errstr);
		log_kv(LOG_LEVEL_WARN, COORD_LOG, "redis connect failed", "why", r->last_error);
		r->ac = NULL;
		uv_timer_stop(&r->conn_timer);
		schedule_reconnect(r);
		return;
	}
	uv_timer_stop(&r->conn_timer);
	r->connected = true;
	log_kv(LOG_LEVEL_INFO, COORD_LOG, "redis connected", "host", r->host, "port",
	       LOG_INT(r->port));
	if (r->handshake_left == 0) {
		r->ready = true;
		r->backoff_ms = COORD_REDIS_BACKOFF_MIN_MS;
		r->last_error[0] = '\0';
	}
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
	struct coord_redis *r = ac->data;
	if (r->ac != ac)
		return; /* we dropped it ourselves */
	err_fmt(r->last_error, sizeof r->last_error, "redis: connection to %s:%d lost%s%s", r->host,
	        r->port, ac->err ? ": " : "", ac->err ? ac->errstr : "");
	log_kv(LOG_LEVEL_WARN, COORD_LOG, "redis disconnected", "why", r->last_error);
	r->ac = NULL;
	r->connected = r->ready = false;
	schedule_reconnect(r);
}

static void on_connect_timeout(uv_timer_t *t)
{
	struct coord_redis *r = (struct coord_redis *)t->data;
	drop_connection(r, "redis: cannot connect to %s:%d: no answer within %lld ms", r->host,
	                r->port, (long long)r->timeout_ms);
}

static void start_connect(struct coord_redis *r)
{
	redisAsyncContext *ac = redisAsyncConnect(r->host, r->port);
	if (!ac || ac->err) {
		err_fmt(r->last_error, sizeof r->last_error, "redis: cannot connect to %s:%d: %s",
		        r->host, r->port, ac ? ac->errstr : "out of memory");
		log_kv(LOG_LEVEL_WARN, COORD_LOG, "redis connect failed", "why", r->last_error);
		if (ac)
			redisAsyncFree(ac);
		schedule_reconnect(r);
		return;
	}
	ac->data = r;
	if (redisLibuvAttach(ac, r->base.loop) != REDIS_OK) {
		err_fmt(r->last_error, sizeof r->last_error,
		        "redis: cannot watch the connection to %s:%d on the loop", r->host,
		        r->port);
		redisAsyncFree(ac);
		schedule_reconnect(r);
		return;
	}
	redisAsyncSetConnectCallback(ac, on_connect);
	redisAsyncSetDisconnectCallback(ac, on_disconnect);
	r->ac = ac;
	r->connected = r->ready = false;
	r->handshake_left = 0;
	if (r->password) {
		struct rreq *q = rq_new(r, RQ_AUTH, NULL, 0);
		if (rq_send(r, q) == 0)
			r->handshake_left++;
		else {
			rq_unlink(r, q);
			rq_free(q);
		}
	}
	if (r->db) {
		struct rreq *q = rq_new(r, RQ_SELECT, NULL, 0);
		if (rq_send(r, q) == 0)
			r->handshake_left++;
		else {
			rq_unlink(r, q);
			rq_free(q);
		}
	}
	uv_timer_start(&r->conn_timer, on_connect_timeout, (uint64_t)r->timeout_ms, 0);
}

static void on_retry(uv_timer_t *t)
{
	start_connect((struct coord_redis *)t->data);
}

static void schedule_reconnect(struct coord_redis *r)
{
	if (r->base.closing)
		return;
	int64_t wait = r->backoff_ms;
	r->retry_at = coord_now_ms() + wait;
	r->backoff_ms =
	        wait * 2 > COORD_REDIS_BACKOFF_MAX_MS ? COORD_REDIS_BACKOFF_MAX_MS : wait * 2;
	uv_timer_start(&r->conn_timer, on_retry, (uint64_t)wait, 0);
}

/* --- the backend ------------------------------------------------------------------------------ */

/* Starts a user request; answers UNAVAILABLE (deferred) when there is no
 * connection. The pending slot is already taken. */
static void submit(struct coord_redis *r, enum rq_kind kind, const char *key, int64_t ttl_ms,
                   coord_claim_fn cb, coord_count_fn ccb, void *ud)
{
	struct coord *c = &r->base;
	if (r->ac) {
		struct rreq *q = rq_new(r, kind, key, ttl_ms);
		q->cb = cb;
		q->ccb = ccb;
		q->ud = ud;
		if (rq_send(r, q) == 0)
			return;
		rq_unlink(r, q);
		rq_free(q);
		arm_cmd_timer(r);
	}
	char why[GA_ERR_MSG_MAX + 64];
	int64_t left = r->retry_at - coord_now_ms();
	if (r->ac)
		err_fmt(why, sizeof why, "redis: the connection to %s:%d is closing", r->host,
		        r->port);
	else
		err_fmt(why, sizeof why, "%s (not connected; next attempt in %lld ms)",
		        r->last_error[0] ? r->last_error : "redis: not connected",
		        (long long)(left > 0 ? left : 0));
	if (kind == RQ_COUNT)
		coord_defer_count(c, ccb, ud, -1);
	else if (kind == RQ_RELEASE) {
		c->npending--;
		log_kv(LOG_LEVEL_WARN, COORD_LOG,
		       "redis release not sent; the key expires by its TTL", "key", key, "why",
		       why);
	} else
		coord_defer_claim(c, cb, ud, COORD_UNAVAILABLE, NULL, why);
}

static int redis_claim(struct coord *c, const char *key, int64_t ttl_ms, coord_claim_fn cb,
                       void *ud)
{
	if (!coord_pending_take(c))
		return -1;
	submit((struct coord_redis *)c, RQ_CLAIM_SET, key, ttl_ms, cb, NULL, ud);
	return 0;
}

static int redis_renew(struct coord *c, const char *key, int64_t ttl_ms, coord_claim_fn cb,
                       void *ud)
{
	if (!coord_pending_take(c))
		return -1;
	submit((struct coord_redis *)c, RQ_RENEW, key, ttl_ms, cb, NULL, ud);
	return 0;
}

static int redis_release(struct coord *c, const char *key, bool success, const char *link,
                         const char *error)
{
	(void)success, (void)link, (void)error; /* Redis keeps no outcome */
	if (!coord_pending_take(c))
		return -1;
	submit((struct coord_redis *)c, RQ_RELEASE, key, 0, NULL, NULL, NULL);
	return 0;
}

static int redis_count(struct coord *c, const char *key, int64_t window_ms, coord_count_fn cb,
                       void *ud)
{
	if (!coord_pending_take(c))
		return -1;
	submit((struct coord_redis *)c, RQ_COUNT, key, window_ms, NULL, cb, ud);
	return 0;
}

void coord_redis_set_timeout_ms(struct coord *c, int64_t ms)
{
	if (c && strcmp(c->ops->name, "redis") == 0 && ms > 0)
		((struct coord_redis *)c)->timeout_ms = ms;
}

static void redis_describe(const struct coord *c, char *buf, size_t cap)
{
	const struct coord_redis *r = (const struct coord_redis *)c;
	bool v6 = strchr(r->host, ':') != NULL;
	char where[300];
	err_fmt(where, sizeof where, "%s%s%s:%d/%d", v6 ? "[" : "", r->host, v6 ? "]" : "", r->port,
	        r->db);
	if (r->ready)
		err_fmt(buf, cap, "redis %s (connected)", where);
	else if (r->ac)
		err_fmt(buf, cap, "redis %s (connecting)", where);
	else
		err_fmt(buf, cap, "redis %s (disconnected: %s)", where,
		        r->last_error[0] ? r->last_error : "not connected yet");
}

static void redis_shutdown(struct coord *c)
{
	struct coord_redis *r = (struct coord_redis *)c;
	uv_timer_stop(&r->conn_timer);
	uv_timer_stop(&r->cmd_timer);
	coord_handle_close(c, (uv_handle_t *)&r->conn_timer);
	coord_handle_close(c, (uv_handle_t *)&r->cmd_timer);
	err_fmt(r->last_error, sizeof r->last_error, "shutting down");
	redisAsyncContext *ac = r->ac;
	r->ac = NULL;
	r->connected = r->ready = false;
	/* Last: hiredis closes its poll handle in here (or right after the
	 * reply callback we may be inside returns); every pending command is
	 * answered "shutting down". */
	if (ac)
		redisAsyncFree(ac);
}

static void redis_destroy(struct coord *c)
{
	struct coord_redis *r = (struct coord_redis *)c;
	while (r->head) {
		struct rreq *q = r->head;
		rq_unlink(r, q);
		rq_free(q);
	}
	free(r->user);
	free(r->password);
}

static const struct coord_ops redis_ops = {
        .name = "redis",
        .claim = redis_claim,
        .renew = redis_renew,
        .release = redis_release,
        .count = redis_count,
        .describe = redis_describe,
        .shutdown = redis_shutdown,
        .destroy = redis_destroy,
};

struct coord *coord_new_redis(uv_loop_t *loop, const char *url, const char *agent_id,
                              struct ga_err *err)
{
	if (!loop || !agent_id || !*agent_id) {
		err_set(err, "coord_new_redis needs a loop and an agent id");
		return NULL;
	}
	struct coord_redis *r = xcalloc(1, sizeof *r);
	if (parse_url(r, url, err) < 0) {
		free(r->user);
		free(r->password);
		free(r);
		return NULL;
	}
	coord_base_init(&r->base, &redis_ops, loop, agent_id);
	r->timeout_ms = COORD_REDIS_TIMEOUT_MS;
	r->backoff_ms = COORD_REDIS_BACKOFF_MIN_MS;
	uv_timer_init(loop, &r->conn_timer);
	coord_handle_open(&r->base, (uv_handle_t *)&r->conn_timer);
	uv_timer_init(loop, &r->cmd_timer);
	coord_handle_open(&r->base, (uv_handle_t *)&r->cmd_timer);
	start_connect(r);
	return &r->base;
}
