/*
 * adapters/space/client — the agent-space connection. See client.h.
 *
 * Handles and their lifetimes: five uv timers live as long as the client
 * and are closed by the stop sequence; the libwebsockets context is made
 * on the first connection attempt and handed to a reaper (its own timer)
 * by the stop sequence, which destroys it in lws 4.1's two steps; a
 * pending uv_getaddrinfo request is heap-allocated and orphaned (its
 * callback frees it) when the client no longer wants the answer.
 *
 * A connection attempt ends in exactly one call of wsi_gone() (connection
 * error, close, or destruction — whichever libwebsockets reports first),
 * or attempt_failed() when it failed before a wsi existed. Both lead to
 * next_attempt(), which applies the backoff and the duplicate-name rule.
 */
#include "adapters/space/client.h"

#include <arpa/inet.h>
#include <libwebsockets.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

#define LOG_COMP "space"
/* After lws_context_destroy, how long to wait for libwebsockets to close
 * its handles before moving on. */
#define SPC_CTX_DESTROY_WAIT_MS 2000
#define SPC_CTX_POLL_MS         5
#define SPC_TIMERS              5
/* The receive buffer is given back after a message larger than this. */
#define SPC_RX_KEEP_BYTES (64 * 1024)

struct gai_req {
	uv_getaddrinfo_t req;
	struct spc_client *c; /* NULL once nobody waits for the answer */
};

/* The context lives in a small box of its own: libwebsockets writes NULL
 * into info.pcontext when it finally frees the context, which can happen
 * after the client itself is gone (spc_client_free), so that slot must not
 * be inside the client. */
struct ctx_box {
	struct lws_context *ctx;
	struct spc_client *owner; /* the context's user; NULL once torn down */
};

/* Tears a context down on its own timer (see reap_poll), then frees the
 * box and itself and calls done (if still wanted). */
struct reaper {
	uv_loop_t *loop;
	struct ctx_box *box;
	uv_timer_t timer;
	uint64_t deadline;
	void (*done)(void *);
	void *ud;
};

struct qmsg {
	size_t len;
	unsigned char buf[]; /* LWS_PRE bytes of headroom, then the text */
};

struct spc_client {
	uv_loop_t *loop;
	char *name, *id, *version, *space_url, *identity_json;
	char *caps[SPC_MAX_CAPS];
	size_t ncaps;
	bool has_caps;
	struct spc_tunables t;
	struct spc_client_events ev;
	void *ud;

	enum spc_state state;
	char url[SPC_URL_MAX];
	enum spc_disc_source url_src;
	struct spc_url u;
	struct spc_disc *disc;
	struct gai_req *gai;

	struct ctx_box *box; /* the libwebsockets context, made on first use */
	struct lws *wsi;
	bool established; /* the WebSocket upgrade completed */
	bool in_connect;  /* inside lws_client_connect_via_info */
	bool failed_in_connect;
	char fail_why[256];
	char kill_why[128]; /* why we dropped the connection ourselves */
	bool closing_by_us;
	bool close_sent;
	bool ping_due;
	uint64_t last_rx_ms; /* uv_now of the last frame received */
	int close_code;      /* from the server's close frame, 0 if none */
	char close_reason[124];
	bool server_shutdown; /* a `shutdown` message arrived */

	union {
		uv_timer_t all[SPC_TIMERS];
		struct {
			uv_timer_t connect; /* connect + upgrade + join deadline */
			uv_timer_t retry;   /* backoff before the next attempt */
			uv_timer_t rediscover;
			uv_timer_t ping;
			uv_timer_t stop; /* close wait, context destroy polling */
		} t;
	} timers;
	int open_timers;
	struct reaper *reaper; /* the context's owner while it is torn down */

	unsigned attempt; /* failed attempts since the last join */
	uint64_t replaced_at[SPC_REPLACED_MEMORY];
	size_t nreplaced;
	char dup_id[128]; /* the other same-name connection's id, when seen */

	struct qmsg *q[SPC_SENDQ_MAX_MSGS];
	size_t qhead, qn, qbytes;
	struct strbuf rx;
	bool rx_active; /* inside a message */
	bool rx_discard;

	struct spc_roster roster;
	struct spc_client_stats stats;

	void (*done)(void *);
	void *done_ud;
	bool free_when_stopped;
	bool timers_closing;
	int in_cb; /* > 0 inside a libwebsockets callback */
};

static int lws_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                  size_t len);

static const struct lws_protocols PROTOCOLS[] = {
        {"ga-space-client", lws_cb, 0, 0, 0, NULL, 0},
        {NULL, NULL, 0, 0, 0, NULL, 0},
};

const char *spc_state_name(enum spc_state s)
{
	static const char *const names[] = {"idle",    "discovering", "connecting", "joined",
	                                    "waiting", "gave-up",     "stopping",   "stopped"};
	return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

/* --- send queue -------------------------------------------------------------------- */

static void q_clear(struct spc_client *c)
{
	for (size_t i = 0; i < c->qn; i++)
		free(c->q[(c->qhead + i) % SPC_SENDQ_MAX_MSGS]);
	c->qhead = c->qn = c->qbytes = 0;
}

/* Takes ownership of json. */
static int q_push(struct spc_client *c, char *json)
{
	if (!json)
		return -1;
	size_t len = strlen(json);
	if (c->qn == SPC_SENDQ_MAX_MSGS || c->qbytes + len > SPC_SENDQ_MAX_BYTES) {
		c->stats.dropped_sends++;
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "send queue full; message dropped", "queued",
		       LOG_INT(c->qn), "bytes", LOG_INT(c->qbytes));
		free(json);
		return -1;
	}
	struct qmsg *m = xmalloc(sizeof *m + LWS_PRE + len);
	m->len = len;
	memcpy(m->buf + LWS_PRE, json, len);
	free(json);
	c->q[(c->qhead + c->qn) % SPC_SENDQ_MAX_MSGS] = m;
	c->qn++;
	c->qbytes += len;
	if (c->wsi)
		lws_callback_on_writable(c->wsi);
	return 0;
}

static struct qmsg *q_pop(struct spc_client *c)
{
	if (!c->qn)
		return NULL;
	struct qmsg *m = c->q[c->qhead];
	c->qhead = (c->qhead + 1) % SPC_SENDQ_MAX_MSGS;
	c->qn--;
	c->qbytes -= m->len;
	return m;
}

/* --- attempts ---------------------------------------------------------------------- */

static void begin_discovery(struct spc_client *c);
static void begin_connect(struct spc_client *c);
static void stop_step(struct spc_client *c);
static void free_now(struct spc_client *c);

static struct spc_who who(const struct spc_client *c)
{
	return (struct spc_who){.name = c->name, .id = c->id};
}

static uint64_t jitter_rnd(void)
{
	uint64_t r;
	random_bytes(&r, sizeof r);
	return r;
}

static void on_rediscover(uv_timer_t *h)
{
	struct spc_client *c = h->data;
	if (c->state != SPC_WAITING)
		return; /* an attempt is under way; it will re-arm the timer */
	uv_timer_stop(&c->timers.t.retry);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "still not in the room; discovering again", "every_ms",
	       LOG_INT(c->t.discovery_retry_ms));
	begin_discovery(c);
}

static void arm_rediscovery(struct spc_client *c)
{
	if (!uv_is_active((uv_handle_t *)&c->timers.t.rediscover))
		uv_timer_start(&c->timers.t.rediscover, on_rediscover, c->t.discovery_retry_ms,
		               c->t.discovery_retry_ms);
}

static void on_retry(uv_timer_t *h)
{
	struct spc_client *c = h->data;
	if (c->state == SPC_WAITING)
		begin_connect(c);
}

static void wait_then_retry(struct spc_client *c, uint64_t delay)
{
	c->state = SPC_WAITING;
	uv_timer_start(&c->timers.t.retry, on_retry, delay, 0);
	arm_rediscovery(c);
}

/* 4002: somebody joined with our name. See client.h for the rule. */
static bool replaced_too_often(struct spc_client *c)
{
	uint64_t now = uv_now(c->loop);
	c->stats.replaced++;
	size_t keep = 0;
	for (size_t i = 0; i < c->nreplaced; i++)
		if (now - c->replaced_at[i] < c->t.replaced_window_ms)
			c->replaced_at[keep++] = c->replaced_at[i];
	c->nreplaced = keep;
	if (c->nreplaced == SPC_REPLACED_MEMORY) {
		memmove(c->replaced_at, c->replaced_at + 1,
		        (SPC_REPLACED_MEMORY - 1) * sizeof c->replaced_at[0]);
		c->nreplaced--;
	}
	c->replaced_at[c->nreplaced++] = now;
	return c->nreplaced >= c->t.replaced_limit;
}

/* What to do once an attempt or a connection is over. */
static void next_attempt(struct spc_client *c, bool was_joined, const char *why)
{
	if (c->state == SPC_STOPPING) {
		stop_step(c);
		return;
	}
	if (c->close_code == 4002) {
		bool give_up = replaced_too_often(c);
		if (give_up) {
			c->state = SPC_GAVE_UP;
			uv_timer_stop(&c->timers.t.rediscover);
			log_kv(LOG_LEVEL_ERROR, LOG_COMP,
			       "another agent keeps joining the room with this agent's name and "
			       "replacing it; stopped rejoining so the two stop knocking each "
			       "other out. Give one of them a different AGENT_NAME and restart it",
			       "name", c->name, "other_id", c->dup_id[0] ? c->dup_id : "(unknown)",
			       "our_id", c->id, "replaced", LOG_INT(c->nreplaced), "window_ms",
			       LOG_INT(c->t.replaced_window_ms));
			return;
		}
		/* The longest step: give the other agent time to settle. */
		unsigned last = c->t.nbackoff ? (unsigned)c->t.nbackoff - 1 : 0;
		uint64_t delay = spc_backoff_delay(&c->t, last, jitter_rnd());
		log_kv(LOG_LEVEL_WARN, LOG_COMP,
		       "replaced by another connection using this agent's name (close 4002); "
		       "waiting before rejoining",
		       "name", c->name, "other_id", c->dup_id[0] ? c->dup_id : "(unknown)",
		       "retry_in_ms", LOG_INT(delay), "replaced", LOG_INT(c->nreplaced), "limit",
		       LOG_INT(c->t.replaced_limit));
		wait_then_retry(c, delay);
		return;
	}
	if (c->server_shutdown || was_joined)
		c->attempt = 0; /* a fresh start: the room itself went away */
	uint64_t delay = spc_backoff_delay(&c->t, c->attempt, jitter_rnd());
	if (c->attempt < 1000)
		c->attempt++;
	log_kv(was_joined ? LOG_LEVEL_WARN : LOG_LEVEL_INFO, LOG_COMP,
	       was_joined ? "left the room; reconnecting after a pause"
	                  : "could not join the room; retrying after a pause",
	       "url", c->url, "why", why, "retry_in_ms", LOG_INT(delay));
	wait_then_retry(c, delay);
}

static void attempt_failed(struct spc_client *c, const char *why)
{
	uv_timer_stop(&c->timers.t.connect);
	c->established = false;
	next_attempt(c, false, why);
}

/* The one exit of a connection that had a wsi. */
static void wsi_gone(struct spc_client *c, struct lws *wsi, const char *what)
{
	if (!wsi || wsi != c->wsi)
		return;
	c->wsi = NULL;
	bool was_joined = c->state == SPC_JOINED;
	uv_timer_stop(&c->timers.t.connect);
	q_clear(c);
	sb_reset(&c->rx);
	c->rx_discard = false;
	c->rx_active = false;
	c->established = false;
	spc_roster_reset(&c->roster);

	char why[300];
	if (c->kill_why[0])
		snprintf(why, sizeof why, "%s", c->kill_why);
	else if (c->close_code)
		snprintf(why, sizeof why, "closed by the server (%d%s%s)", c->close_code,
		         c->close_reason[0] ? " " : "", c->close_reason);
	else
		snprintf(why, sizeof why, "%s", what);
	if (was_joined && c->ev.on_left && c->state != SPC_STOPPING)
		c->ev.on_left(c->ud, why);
	if (c->state == SPC_JOINED || c->state == SPC_CONNECTING)
		c->state = SPC_WAITING;
	next_attempt(c, was_joined, why);
}

/* Drops the connection now. Only from a uv callback, never from inside a
 * libwebsockets callback: then no wsi is being serviced and the
 * synchronous kill is allowed (LWS_TO_KILL_ASYNC would wait for lws's next
 * timeout sweep, seconds away on a foreign loop). wsi_gone() runs inside
 * it, or right after when lws did not report the close itself. */
static void kill_wsi(struct spc_client *c, const char *why)
{
	snprintf(c->kill_why, sizeof c->kill_why, "%s", why);
	struct lws *w = c->wsi;
	lws_set_timeout(w, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC);
	if (c->wsi == w)
		wsi_gone(c, w, why);
}

static void on_connect_timeout(uv_timer_t *h)
{
	struct spc_client *c = h->data;
	if (c->state != SPC_CONNECTING)
		return;
	if (c->gai) {
		/* Still resolving: abandon the lookup. */
		c->gai->c = NULL;
		uv_cancel((uv_req_t *)&c->gai->req);
		c->gai = NULL;
		char why[128];
		snprintf(why, sizeof why, "the host name did not resolve within %llu ms",
		         (unsigned long long)c->t.connect_timeout_ms);
		attempt_failed(c, why);
		return;
	}
	if (c->wsi) {
		char why[128];
		snprintf(why, sizeof why, "no answer within %llu ms",
		         (unsigned long long)c->t.connect_timeout_ms);
		kill_wsi(c, why);
		return;
	}
	attempt_failed(c, "no answer");
}

static void lws_log_emit(int level, const char *line)
{
	char buf[512];
	snprintf(buf, sizeof buf, "%s", line);
	size_t n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	/* Our own lines say what happened; libwebsockets' are detail. */
	log_write(LOG_LEVEL_DEBUG, "lws", buf, NULL);
}

static int make_context(struct spc_client *c)
{
	struct lws_context_creation_info info;
	void *loops[1] = {c->loop};
	memset(&info, 0, sizeof info);
	info.options = LWS_SERVER_OPTION_LIBUV;
	/* TLS costs memory (OpenSSL's init); only a wss:// SPACE_URL needs it. */
	if (c->space_url && strncasecmp(c->space_url, "wss://", 6) == 0)
		info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = PROTOCOLS;
	info.foreign_loops = loops;
	c->box = xcalloc(1, sizeof *c->box);
	c->box->owner = c;
	info.user = c->box;
	info.pcontext = &c->box->ctx;
	info.count_threads = 1;
	/* One connection at a time; lws sizes tables by this. */
	info.fd_limit_per_thread = 16;
	info.gid = -1;
	info.uid = -1;
	lws_set_log_level(LLL_ERR | LLL_WARN, lws_log_emit);
	c->box->ctx = lws_create_context(&info);
	if (!c->box->ctx) {
		free(c->box);
		c->box = NULL;
		return -1;
	}
	return 0;
}

static void connect_to(struct spc_client *c, const char *ip)
{
	if (!c->box && make_context(c) != 0) {
		attempt_failed(c, "libwebsockets could not create a client context");
		return;
	}
	char host_hdr[300];
	bool v6 = strchr(c->u.host, ':') != NULL;
	bool default_port = c->u.port == (c->u.tls ? 443 : 80);
	if (default_port)
		snprintf(host_hdr, sizeof host_hdr, v6 ? "[%s]" : "%s", c->u.host);
	else
		snprintf(host_hdr, sizeof host_hdr, v6 ? "[%s]:%d" : "%s:%d", c->u.host, c->u.port);
	struct lws_client_connect_info ci;
	memset(&ci, 0, sizeof ci);
	ci.context = c->box->ctx;
	ci.address = ip;
	ci.port = c->u.port;
	ci.path = c->u.path;
	ci.host = host_hdr;
	ci.ssl_connection = c->u.tls ? LCCSCF_USE_SSL : 0;
	/* No Sec-WebSocket-Protocol: the reference client offers none (§1). */
	ci.protocol = NULL;
	ci.local_protocol_name = PROTOCOLS[0].name;
	ci.userdata = c;
	c->in_connect = true;
	c->failed_in_connect = false;
	struct lws *w = lws_client_connect_via_info(&ci);
	c->in_connect = false;
	if (!w || c->failed_in_connect) {
		attempt_failed(c, c->failed_in_connect ? c->fail_why
		                                       : "the connection could not be started");
		return;
	}
	c->wsi = w;
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	struct gai_req *g = req->data;
	struct spc_client *c = g->c;
	if (!c) {
		uv_freeaddrinfo(res);
		free(g);
		return;
	}
	c->gai = NULL;
	free(g);
	if (status != 0 || !res) {
		char why[300];
		snprintf(why, sizeof why, "cannot resolve host '%s': %s", c->u.host,
		         uv_strerror(status));
		uv_freeaddrinfo(res);
		attempt_failed(c, why);
		return;
	}
	/* Prefer IPv4 (the server listens on 0.0.0.0 at minimum, §1). */
	const struct addrinfo *pick = res;
	for (const struct addrinfo *a = res; a; a = a->ai_next)
		if (a->ai_family == AF_INET) {
			pick = a;
			break;
		}
	char ip[INET6_ADDRSTRLEN] = "";
	if (pick->ai_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)pick->ai_addr)->sin_addr, ip, sizeof ip);
	else if (pick->ai_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)pick->ai_addr)->sin6_addr, ip,
		          sizeof ip);
	uv_freeaddrinfo(res);
	if (!ip[0]) {
		attempt_failed(c, "the host name resolved to no usable address");
		return;
	}
	connect_to(c, ip);
}

static bool is_ip_literal(const char *h)
{
	unsigned char buf[sizeof(struct in6_addr)];
	return inet_pton(AF_INET, h, buf) == 1 || inet_pton(AF_INET6, h, buf) == 1;
}

static void begin_connect(struct spc_client *c)
{
	c->state = SPC_CONNECTING;
	c->stats.attempts++;
	c->kill_why[0] = '\0';
	c->close_code = 0;
	c->close_reason[0] = '\0';
	c->server_shutdown = false;
	c->closing_by_us = false;
	c->close_sent = false;
	struct ga_err err = {{0}};
	if (spc_url_parse(c->url, &c->u, &err) != 0) {
		log_kv(LOG_LEVEL_ERROR, LOG_COMP, "the room's URL is unusable", "url", c->url,
		       "problem", err.msg);
		attempt_failed(c, err.msg);
		return;
	}
	log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "connecting", "url", c->url, "attempt",
	       LOG_INT(c->attempt + 1));
	uv_timer_start(&c->timers.t.connect, on_connect_timeout, c->t.connect_timeout_ms, 0);
	if (is_ip_literal(c->u.host)) {
		connect_to(c, c->u.host);
		return;
	}
	struct gai_req *g = xcalloc(1, sizeof *g);
	g->c = c;
	g->req.data = g;
	struct addrinfo hints;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	int rc = uv_getaddrinfo(c->loop, &g->req, on_resolved, c->u.host, NULL, &hints);
	if (rc != 0) {
		free(g);
		char why[300];
		snprintf(why, sizeof why, "cannot resolve host '%s': %s", c->u.host,
		         uv_strerror(rc));
		attempt_failed(c, why);
		return;
	}
	c->gai = g;
}

static void on_discovered(void *ud, const char *url, enum spc_disc_source src)
{
	struct spc_client *c = ud;
	spc_disc_cancel(c->disc);
	c->disc = NULL;
	if (c->state != SPC_DISCOVERING)
		return;
	snprintf(c->url, sizeof c->url, "%s", url);
	c->url_src = src;
	begin_connect(c);
}

static void begin_discovery(struct spc_client *c)
{
	c->state = SPC_DISCOVERING;
	c->stats.discoveries++;
	c->disc = spc_disc_start(c->loop, c->space_url, &c->t, on_discovered, c);
}

/* --- the connection ------------------------------------------------------------------- */

static void joined(struct spc_client *c)
{
	c->state = SPC_JOINED;
	c->attempt = 0;
	c->stats.joins++;
	uv_timer_stop(&c->timers.t.connect);
	uv_timer_stop(&c->timers.t.rediscover);
	c->last_rx_ms = uv_now(c->loop);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "joined the room", "url", c->url, "via",
	       spc_disc_source_name(c->url_src), "name", c->name, "id", c->id, "members",
	       LOG_INT(c->roster.nmembers));
	if (c->ev.on_joined)
		c->ev.on_joined(c->ud);
}

/* A history_response names, just before our own join, the connection we
 * replaced (a `leave` with our name, §3.3 step 9): remember its id so the
 * duplicate-name error can name it. */
static void note_duplicate(struct spc_client *c, const cJSON *entries)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, entries)
	{
		const char *type = json_string_or(e, "type", "");
		const char *name = json_string_or(e, "agentName", "");
		const char *id = json_string_or(e, "agentId", "");
		if (strcmp(type, "leave") == 0 && strcmp(name, c->name) == 0 &&
		    strcmp(id, c->id) != 0 && *id)
			snprintf(c->dup_id, sizeof c->dup_id, "%s", id);
	}
}

static void handle_text(struct spc_client *c, const char *buf, size_t len)
{
	struct spc_msg m;
	struct ga_err err = {{0}};
	if (spc_msg_parse(buf, len, &m, &err) != 0) {
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "ignoring a message from the room", "why",
		       err.msg);
		return;
	}
	unsigned changed = spc_roster_apply(&c->roster, &m, time_now_ms());
	switch (m.type) {
	case SPC_T_JOIN:
		if (c->state == SPC_CONNECTING && strcmp(m.id, c->id) == 0 &&
		    strcmp(m.name, c->name) == 0)
			joined(c);
		break;
	case SPC_T_HISTORY:
		note_duplicate(c, m.entries);
		break;
	case SPC_T_ERROR:
		if (strncmp(m.message, "Invalid join", 12) == 0)
			log_kv(LOG_LEVEL_ERROR, LOG_COMP, "the room refused our join", "message",
			       m.message, "name", c->name, "id", c->id, "version", c->version);
		else
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "the room reported an error", "message",
			       m.message);
		break;
	case SPC_T_SHUTDOWN:
		c->server_shutdown = true;
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "the room is shutting down; will reconnect",
		       "reason", m.reason ? m.reason : "");
		break;
	default:
		break;
	}
	if (c->ev.on_message && c->state != SPC_STOPPING)
		c->ev.on_message(c->ud, &m, changed);
	spc_msg_free(&m);
}

static void on_ping_timer(uv_timer_t *h)
{
	struct spc_client *c = h->data;
	if (c->state != SPC_JOINED || !c->wsi)
		return;
	uint64_t idle = uv_now(c->loop) - c->last_rx_ms;
	if (idle >= 2 * c->t.ping_ms) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "the room went silent; dropping the connection",
		       "silent_ms", LOG_INT(idle), "url", c->url);
		char why[128];
		snprintf(why, sizeof why, "no frame from the room for %llu ms",
		         (unsigned long long)idle);
		kill_wsi(c, why);
		return;
	}
	c->ping_due = true;
	lws_callback_on_writable(c->wsi);
}

static void rx_fragment(struct spc_client *c, struct lws *wsi, const void *in, size_t len)
{
	/* lws may hand one frame over in several pieces, each flagged as
	 * part of the first fragment: track the message ourselves. */
	if (!c->rx_active) {
		sb_reset(&c->rx);
		c->rx_discard = false;
		c->rx_active = true;
	}
	if (!c->rx_discard && sb_append(&c->rx, in, len) != 0) {
		c->rx_discard = true;
		c->stats.dropped_inbound++;
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "a message from the room is too large; ignored",
		       "limit_bytes", LOG_INT(SPC_MAX_INBOUND_BYTES));
		sb_free(&c->rx);
		sb_init(&c->rx, SPC_MAX_INBOUND_BYTES);
	}
	if (lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi)) {
		if (!c->rx_discard)
			handle_text(c, c->rx.buf ? c->rx.buf : "", c->rx.len);
		/* A big history must not stay resident after it was read. */
		if (c->rx.cap > SPC_RX_KEEP_BYTES) {
			sb_free(&c->rx);
			sb_init(&c->rx, SPC_MAX_INBOUND_BYTES);
		}
		sb_reset(&c->rx);
		c->rx_discard = false;
		c->rx_active = false;
	}
}

static int on_writeable(struct spc_client *c, struct lws *wsi)
{
	if (c->ping_due && !c->closing_by_us) {
		unsigned char ping[LWS_PRE + 1];
		c->ping_due = false;
		if (lws_write(wsi, ping + LWS_PRE, 0, LWS_WRITE_PING) < 0)
			return -1;
		if (c->qn)
			lws_callback_on_writable(wsi);
		return 0;
	}
	struct qmsg *m = q_pop(c);
	if (m) {
		int n = lws_write(wsi, m->buf + LWS_PRE, m->len, LWS_WRITE_TEXT);
		free(m);
		if (n < 0)
			return -1;
		if (c->qn || c->closing_by_us)
			lws_callback_on_writable(wsi);
		return 0;
	}
	if (c->closing_by_us && !c->close_sent) {
		/* What was queued has gone (a last state or action_result);
		 * now the close frame with our reason, then wait for the
		 * room's answer (the reference closes with 1000 "Client
		 * disconnecting", §7.3). Not by returning -1 here: the Debian
		 * build of lws 4.1 (_DEBUG) closes a wsi twice on that path
		 * with libuv ("uv repeat test"), and the second call kills the
		 * socket before the queued close frame is written — the room
		 * saw 1006. Closing from the wsi's timer callback takes the
		 * single-close path. */
		static const char reason[] = "Client disconnecting";
		c->close_sent = true;
		lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, (unsigned char *)reason,
		                 sizeof reason - 1);
		lws_set_timer_usecs(wsi, 1);
	}
	return 0;
}

static int lws_cb_client(struct spc_client *c, struct lws *wsi, enum lws_callback_reasons reason,
                         void *in, size_t len)
{
	switch (reason) {
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR: {
		/* lws passes a NUL-terminated string (or NULL); len may be 0. */
		char why[256];
		snprintf(why, sizeof why, "connection failed: %s",
		         in ? (const char *)in : "(no detail)");
		if (c->in_connect) {
			c->failed_in_connect = true;
			snprintf(c->fail_why, sizeof c->fail_why, "%s", why);
			return 0;
		}
		wsi_gone(c, wsi, why);
		return 0;
	}
	case LWS_CALLBACK_CLIENT_ESTABLISHED: {
		if (wsi != c->wsi)
			return -1;
		c->established = true;
		c->last_rx_ms = uv_now(c->loop);
		struct spc_who w = who(c);
		/* join, then identity at once without waiting (§7.3). */
		q_push(c,
		       spc_build_join(&w, c->version,
		                      c->has_caps ? (const char *const *)c->caps : NULL, c->ncaps));
		if (c->identity_json)
			q_push(c, spc_build_identity(&w, c->identity_json, time_now_ms()));
		return 0;
	}
	case LWS_CALLBACK_CLIENT_RECEIVE:
		if (wsi != c->wsi)
			return 0;
		c->last_rx_ms = uv_now(c->loop);
		rx_fragment(c, wsi, in, len);
		return 0;
	case LWS_CALLBACK_CLIENT_RECEIVE_PONG:
		if (wsi == c->wsi)
			c->last_rx_ms = uv_now(c->loop);
		return 0;
	case LWS_CALLBACK_CLIENT_WRITEABLE:
		if (wsi != c->wsi)
			return -1;
		return on_writeable(c, wsi);
	case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
		if (wsi == c->wsi && in && len >= 2) {
			const unsigned char *p = in;
			c->close_code = (p[0] << 8) | p[1];
			size_t rl = len - 2 < sizeof c->close_reason - 1
			                    ? len - 2
			                    : sizeof c->close_reason - 1;
			memcpy(c->close_reason, p + 2, rl);
			c->close_reason[rl] = '\0';
		}
		return 0;
	case LWS_CALLBACK_TIMER:
		/* see on_writeable: the polite close */
		return wsi == c->wsi && c->close_sent ? -1 : 0;
	case LWS_CALLBACK_CLIENT_CLOSED:
		wsi_gone(c, wsi, "the connection closed");
		return 0;
	case LWS_CALLBACK_WSI_DESTROY:
		wsi_gone(c, wsi, "the connection ended");
		return 0;
	default:
		return 0;
	}
}

/* Counts the nesting so that spc_client_free() knows it must not destroy
 * the context from inside one of its callbacks. The client's memory is
 * never released synchronously, so c stays valid across the call. */
static int lws_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                  size_t len)
{
	struct lws_context *ctx = lws_get_context(wsi);
	struct ctx_box *box = ctx ? lws_context_user(ctx) : NULL;
	struct spc_client *c = box ? box->owner : NULL;
	if (!c)
		return 0;
	c->in_cb++;
	int r = lws_cb_client(c, wsi, reason, in, len);
	c->in_cb--;
	return r;
}

/* --- stopping --------------------------------------------------------------------------- */

static void on_timer_closed(uv_handle_t *h)
{
	struct spc_client *c = h->data;
	if (--c->open_timers > 0)
		return;
	c->state = SPC_STOPPED;
	void (*done)(void *) = c->done;
	void *done_ud = c->done_ud;
	bool free_it = c->free_when_stopped;
	c->done = NULL;
	if (done)
		done(done_ud);
	if (free_it)
		free_now(c);
}

static void close_timers(struct spc_client *c)
{
	if (c->timers_closing)
		return;
	c->timers_closing = true;
	for (int i = 0; i < SPC_TIMERS; i++) {
		uv_timer_stop(&c->timers.all[i]);
		uv_close((uv_handle_t *)&c->timers.all[i], on_timer_closed);
	}
}

static void count_closing(uv_handle_t *h, void *arg)
{
	if (uv_is_closing(h))
		(*(int *)arg)++;
}

static void reaper_closed(uv_handle_t *h)
{
	struct reaper *r = h->data;
	void (*done)(void *) = r->done;
	void *ud = r->ud;
	free(r->box);
	free(r);
	if (done)
		done(ud);
}

/* libwebsockets 4.1 on a foreign loop tears a context down in two calls:
 * the first closes its handles, the second — once their close callbacks
 * have run — frees the context, unloads the event-lib plugin and clears
 * box->ctx (info.pcontext). Calling the second one early unloads the
 * plugin under a pending close callback, so wait until no handle on the
 * loop is still closing. */
static void reap_poll(uv_timer_t *h)
{
	struct reaper *r = h->data;
	if (r->box->ctx) {
		int closing = 0;
		uv_walk(r->loop, count_closing, &closing);
		if (closing == 0) {
			lws_context_destroy(r->box->ctx);
		} else if (uv_now(r->loop) < r->deadline) {
			return;
		} else {
			log_kv(LOG_LEVEL_WARN, LOG_COMP,
			       "libwebsockets did not finish closing in time; moving on", "wait_ms",
			       LOG_INT(SPC_CTX_DESTROY_WAIT_MS));
			r->box = NULL; /* lws may still write into it: leave it be */
		}
	}
	uv_timer_stop(&r->timer);
	uv_close((uv_handle_t *)&r->timer, reaper_closed);
}

/* Starts tearing the client's context down; done(ud) once it is gone.
 * The client may be freed meanwhile (the reaper owns the context). */
static void reap_context(struct spc_client *c, void (*done)(void *), void *ud)
{
	struct reaper *r = xcalloc(1, sizeof *r);
	r->loop = c->loop;
	r->box = c->box;
	r->done = done;
	r->ud = ud;
	c->box = NULL;
	c->wsi = NULL;
	c->reaper = r;
	uv_timer_init(r->loop, &r->timer);
	r->timer.data = r;
	r->deadline = uv_now(r->loop) + SPC_CTX_DESTROY_WAIT_MS;
	/* The first call: closes the connection (callbacks run inside it)
	 * and starts closing libwebsockets' handles. */
	lws_context_destroy(r->box->ctx);
	/* Whatever libwebsockets reports from now on is not the client's. */
	r->box->owner = NULL;
	/* Not 0: a 0 ms timer may run in this same timer phase, before the
	 * closing phase. */
	uv_timer_start(&r->timer, reap_poll, SPC_CTX_POLL_MS, SPC_CTX_POLL_MS);
}

static void on_reaped(void *ud)
{
	struct spc_client *c = ud;
	c->reaper = NULL;
	close_timers(c);
}

/* Called once the connection is gone (or the close wait ran out). */
static void on_destroy_ctx(uv_timer_t *h)
{
	struct spc_client *c = h->data;
	if (c->reaper)
		return; /* already under way */
	if (!c->box) {
		close_timers(c);
		return;
	}
	reap_context(c, on_reaped, c);
}

static void stop_step(struct spc_client *c)
{
	if (!c->reaper)
		uv_timer_start(&c->timers.t.stop, on_destroy_ctx, 0, 0);
}

void spc_client_stop(struct spc_client *c, void (*done)(void *ud), void *ud)
{
	if (!c || c->state == SPC_STOPPING || c->state == SPC_STOPPED)
		return;
	c->state = SPC_STOPPING;
	c->done = done;
	c->done_ud = ud;
	spc_disc_cancel(c->disc);
	c->disc = NULL;
	if (c->gai) {
		c->gai->c = NULL;
		uv_cancel((uv_req_t *)&c->gai->req);
		c->gai = NULL;
	}
	uv_timer_stop(&c->timers.t.connect);
	uv_timer_stop(&c->timers.t.retry);
	uv_timer_stop(&c->timers.t.rediscover);
	uv_timer_stop(&c->timers.t.ping);
	if (c->wsi && c->established) {
		c->closing_by_us = true;
		lws_callback_on_writable(c->wsi);
		/* wsi_gone → stop_step when the close completes; this timer
		 * bounds the wait. */
		uv_timer_start(&c->timers.t.stop, on_destroy_ctx, c->t.close_wait_ms, 0);
		return;
	}
	stop_step(c);
}

/* --- public ------------------------------------------------------------------------------ */

static int check_units(const char *what, const char *v, size_t max, struct ga_err *err)
{
	if (!v || !*v)
		return err_set(err, "the agent-space %s must not be empty", what);
	size_t u = spc_js_length(v, strlen(v));
	if (u > max)
		return err_set(err,
		               "the agent-space %s '%s' is %zu UTF-16 units long; the room "
		               "accepts at most %zu",
		               what, v, u, max);
	return 0;
}

struct spc_client *spc_client_new(uv_loop_t *loop, const struct spc_client_config *cfg,
                                  const struct spc_client_events *ev, void *ud, struct ga_err *err)
{
	if (check_units("name", cfg->name, SPC_NAME_MAX_UNITS, err) ||
	    check_units("id", cfg->id, SPC_ID_MAX_UNITS, err) ||
	    check_units("version", cfg->version, SPC_VERSION_MAX_UNITS, err))
		return NULL;
	if (cfg->caps && cfg->ncaps > SPC_MAX_CAPS) {
		err_set(err, "at most %d capabilities, got %zu", SPC_MAX_CAPS, cfg->ncaps);
		return NULL;
	}
	struct spc_client *c = xcalloc(1, sizeof *c);
	c->loop = loop;
	c->name = xstrdup(cfg->name);
	c->id = xstrdup(cfg->id);
	c->version = xstrdup(cfg->version);
	c->space_url = cfg->space_url && *cfg->space_url ? xstrdup(cfg->space_url) : NULL;
	c->identity_json = cfg->identity_json ? xstrdup(cfg->identity_json) : NULL;
	c->has_caps = cfg->caps != NULL;
	for (size_t i = 0; c->has_caps && i < cfg->ncaps; i++)
		c->caps[c->ncaps++] = xstrdup(cfg->caps[i]);
	c->t = cfg->t;
	if (ev)
		c->ev = *ev;
	c->ud = ud;
	for (int i = 0; i < SPC_TIMERS; i++) {
		uv_timer_init(loop, &c->timers.all[i]);
		c->timers.all[i].data = c;
	}
	c->open_timers = SPC_TIMERS;
	sb_init(&c->rx, SPC_MAX_INBOUND_BYTES);
	spc_roster_init(&c->roster);
	c->state = SPC_IDLE;
	return c;
}

void spc_client_start(struct spc_client *c)
{
	if (c->state != SPC_IDLE)
		return;
	uv_timer_start(&c->timers.t.ping, on_ping_timer, c->t.ping_ms, c->t.ping_ms);
	begin_discovery(c);
}

int spc_client_send(struct spc_client *c, char *json)
{
	if (c->state != SPC_JOINED || !c->wsi) {
		free(json);
		c->stats.dropped_sends++;
		return -1;
	}
	return q_push(c, json);
}

void spc_client_set_identity(struct spc_client *c, const char *identity_json)
{
	free(c->identity_json);
	c->identity_json = identity_json ? xstrdup(identity_json) : NULL;
	if (c->identity_json && c->state == SPC_JOINED) {
		struct spc_who w = who(c);
		spc_client_send(c, spc_build_identity(&w, c->identity_json, time_now_ms()));
	}
}

static void free_now(struct spc_client *c)
{
	q_clear(c);
	sb_free(&c->rx);
	spc_roster_free(&c->roster);
	free(c->name);
	free(c->id);
	free(c->version);
	free(c->space_url);
	free(c->identity_json);
	for (size_t i = 0; i < c->ncaps; i++)
		free(c->caps[i]);
	free(c);
}

void spc_client_free(struct spc_client *c)
{
	if (!c)
		return;
	if (c->state == SPC_STOPPED) {
		free_now(c);
		return;
	}
	/* Not stopped: tear down now, without the polite close. Every handle
	 * of the client is closing when this returns (so a caller that then
	 * closes whatever is left on the loop cannot close ours twice); the
	 * memory goes when the last close callback has run. The context is
	 * left to its reaper, which needs no client. */
	if (c->in_cb) {
		/* Called from a callback of ours inside libwebsockets: the
		 * context cannot be destroyed here. The ordinary stop (timers)
		 * does it from the loop, then frees. */
		spc_client_stop(c, NULL, NULL);
		c->done = NULL;
		c->free_when_stopped = true;
		return;
	}
	c->free_when_stopped = true;
	c->done = NULL;
	c->state = SPC_STOPPING;
	spc_disc_cancel(c->disc);
	c->disc = NULL;
	if (c->gai) {
		c->gai->c = NULL;
		uv_cancel((uv_req_t *)&c->gai->req);
		c->gai = NULL;
	}
	if (c->reaper) {
		c->reaper->done = NULL; /* the client will not wait for it */
		c->reaper = NULL;
	} else if (c->box) {
		reap_context(c, NULL, NULL);
		c->reaper = NULL;
	}
	c->wsi = NULL;
	close_timers(c);
}

enum spc_state spc_client_state(const struct spc_client *c)
{
	return c->state;
}

const char *spc_client_url(const struct spc_client *c)
{
	return c->url;
}

const struct spc_roster *spc_client_roster(const struct spc_client *c)
{
	return &c->roster;
}

const char *spc_client_name(const struct spc_client *c)
{
	return c->name;
}

const char *spc_client_id(const struct spc_client *c)
{
	return c->id;
}

void spc_client_stats(const struct spc_client *c, struct spc_client_stats *out)
{
	*out = c->stats;
}
