/*
 * space/room — room state and the rules of space-protocol.md §3.
 * See room.h for the contract.
 */
#include "space/room.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/jsonnul.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "space/proto.h"

#define LOG_COMP      "space"
#define CLAIM_BUCKETS 1024

/* Exact texts of §3.20: peers and tests match on them. */
#define ERR_INVALID_JSON "Invalid JSON"
#define ERR_BAD_JOIN                                                                               \
	"Invalid join: name (1-100 chars), id (1-100 chars), and version (1-50 chars) are "        \
	"required"
#define ERR_MUST_JOIN    "Must join before sending chat"
#define ERR_CHAT_EMPTY   "Invalid chat: content must be a non-empty string"
#define ERR_CHAT_LONG    "Invalid chat: content exceeds 100KB limit"
#define ERR_RATE         "Rate limited \u2014 wait before sending another message"
#define ERR_IDENTITY     "Invalid identity: summary must be an object"
#define ERR_IDENTITY_BIG "Invalid identity: summary exceeds 16KB limit"
#define ERR_ACTION_RESULT                                                                          \
	"Invalid action_result: action, target (non-empty strings) and success (boolean) are "     \
	"required"
#define ERR_REFLECTION "Invalid reflection: summary must be a non-empty string"
#define ERR_WORKSPACE                                                                              \
	"Invalid workspace_state: workspace (non-empty string), totalTasks and completedTasks "    \
	"(numbers) are required"
#define SHUTDOWN_REASON "Server shutting down"

struct claim {
	char *key;     /* "<action>:<target>", the protocol's claim key (§9 item 9) */
	char *owner;   /* member name */
	int64_t at;    /* claim or last renewal: expiry counts from it */
	int64_t since; /* when its owner first took it (claim_since) */
	struct claim *next;
};

struct ws_entry {
	char *key;      /* raw workspace string */
	char *reporter; /* name of the member who reported it last */
	int64_t at;
	struct space_buf *msg; /* exactly as broadcast (§3.3 step 10) */
	struct ws_entry *prev, *next;
};

/* Every connection the room knows, member or not, so space_room_free can
 * release them. */
struct conn_node {
	struct space_conn conn;
	struct conn_node *prev, *next;
};

struct space_room {
	struct space_room_config cfg;
	struct space_store *store;
	const struct space_room_ops *ops;
	void *ud;
	char host_id[32];

	struct space_conn *first, *last; /* members in order */
	size_t nmembers;

	struct conn_node *conns;

	struct claim *claims[CLAIM_BUCKETS];
	size_t nclaims;

	struct ws_entry *ws_first, *ws_last;
	size_t nws;

	space_room_observer_fn observer; /* NULL: none (room.h) */
	void *observer_ud;
	int64_t now; /* the time of the call being handled, for the observer */

	bool presence_sent;  /* a presence was broadcast in this turn */
	bool presence_owed;  /* a newer snapshot is due (room.h: presence pacing) */
	int64_t presence_at; /* not before this time (epoch ms) */
	/* The newcomers' snapshot of this turn while pacing holds presence
	 * back: one placeholder queued for each of them, resolved by
	 * newcomers_resolve (see room.h). NULL: none pending. */
	struct space_buf *newcomers;
};

/* --- small helpers -------------------------------------------------------- */

static void iso(int64_t ms, char out[TIME_ISO_LEN + 1])
{
	time_format_iso(ms, out);
}

static void show(struct space_room *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void show(struct space_room *r, const char *fmt, ...)
{
	if (!r->ops->show)
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	r->ops->show(r->ud, line);
}

static void send_buf(struct space_room *r, struct space_conn *c, struct space_buf *b)
{
	r->ops->send(r->ud, c, b);
}

static void observe(struct space_room *r, const struct space_room_event *ev)
{
	if (r->observer)
		r->observer(r->observer_ud, ev);
}

/* Sends b to every member in order, after telling the observer once (who:
 * see SPACE_ROOM_EV_BROADCAST); consumes the caller's reference. */
static void broadcast(struct space_room *r, const struct space_conn *who, struct space_buf *b)
{
	struct space_room_event ev = {
	        .kind = SPACE_ROOM_EV_BROADCAST, .msg = b, .who = who, .now = r->now};
	observe(r, &ev);
	for (struct space_conn *m = r->first; m; m = m->next)
		if (!m->closing)
			send_buf(r, m, b);
	space_buf_unref(b);
}

static void send_error(struct space_room *r, struct space_conn *c, const char *msg)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, "{\"type\":\"error\",\"message\":");
	space_put_str(&sb, msg);
	sb_putc(&sb, '}');
	struct space_buf *b = space_buf_from_sb(&sb, 0);
	sb_free(&sb);
	send_buf(r, c, b);
	space_buf_unref(b);
}

/* Opens a server message: {"type":T,"name":N,"id":I */
static void open_msg(struct strbuf *sb, const char *type, const struct space_conn *c)
{
	sb_puts(sb, "{\"type\":");
	space_put_str(sb, type);
	sb_puts(sb, ",\"name\":");
	space_put_str(sb, c->name);
	sb_puts(sb, ",\"id\":");
	space_put_str(sb, c->id);
}

static void put_ts_close(struct strbuf *sb, const char *ts)
{
	sb_puts(sb, ",\"timestamp\":\"");
	sb_puts(sb, ts);
	sb_puts(sb, "\"}");
}

static void presence_stale(struct space_conn *c)
{
	free(c->presence_json);
	c->presence_json = NULL;
}

static void touch(struct space_conn *c, int64_t now)
{
	if (c->last_seen != now)
		presence_stale(c);
	c->last_seen = now;
	c->alive = true;
}

static void log_event(struct space_room *r, const char *ts, const struct space_conn *c,
                      const char *type, const char *content, size_t len)
{
	space_store_append(r->store, ts, c->name, c->id, type, content, len);
}

/* --- presence --------------------------------------------------------------- */

/* AgentPresence (§2.3) of one member, cached until its lastSeen or
 * identity changes: a presence of 1000 members is then a concatenation,
 * not 2000 timestamp renderings. */
static void presence_entry(struct space_conn *m)
{
	if (m->presence_json)
		return;
	char ts[TIME_ISO_LEN + 1];
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, "{\"name\":");
	space_put_str(&sb, m->name);
	sb_puts(&sb, ",\"id\":");
	space_put_str(&sb, m->id);
	sb_puts(&sb, ",\"version\":");
	space_put_str(&sb, m->version);
	sb_puts(&sb, ",\"joinedAt\":\"");
	sb_puts(&sb, (iso(m->joined_at, ts), ts));
	sb_puts(&sb, "\",\"lastSeen\":\"");
	sb_puts(&sb, (iso(m->last_seen, ts), ts));
	sb_putc(&sb, '"');
	if (m->identity_json) {
		sb_puts(&sb, ",\"identity\":");
		sb_puts(&sb, m->identity_json);
	}
	if (m->caps_json) {
		sb_puts(&sb, ",\"capabilities\":");
		sb_puts(&sb, m->caps_json);
	}
	sb_putc(&sb, '}');
	m->presence_len = sb.len;
	m->presence_json = sb_detach(&sb);
}

/* The snapshot, written once into a buffer of its exact size: in a join
 * storm every newcomer gets one of up to N entries. */
static struct space_buf *build_presence(struct space_room *r)
{
	static const char head[] = "{\"type\":\"presence\",\"agents\":[";
	static const char tail[] = "]}";
	size_t len = sizeof head - 1 + sizeof tail - 1;
	for (struct space_conn *m = r->first; m; m = m->next) {
		presence_entry(m);
		len += m->presence_len + (m != r->first);
	}
	struct space_buf *b = space_buf_alloc(len, SPACE_BUF_PRESENCE);
	char *p = space_buf_data(b);
	memcpy(p, head, sizeof head - 1);
	p += sizeof head - 1;
	for (struct space_conn *m = r->first; m; m = m->next) {
		if (m != r->first)
			*p++ = ',';
		memcpy(p, m->presence_json, m->presence_len);
		p += m->presence_len;
	}
	memcpy(p, tail, sizeof tail - 1);
	return b;
}

/* Broadcasts the snapshot b (consumed) and sets when the next may follow:
 * a snapshot costs its length times its recipients, and the room spends at
 * most cfg.presence_bytes_per_ms on presence, never waiting more than
 * cfg.presence_delay_max_ms. A small room's cost rounds to no wait at all. */
static void presence_send(struct space_room *r, struct space_buf *b)
{
	uint64_t cost = (uint64_t)b->len * r->nmembers;
	int64_t wait = r->cfg.presence_bytes_per_ms > 0
	                       ? (int64_t)(cost / (uint64_t)r->cfg.presence_bytes_per_ms)
	                       : 0;
	if (wait > r->cfg.presence_delay_max_ms)
		wait = r->cfg.presence_delay_max_ms;
	r->presence_sent = true;
	r->presence_at = r->now + wait;
	broadcast(r, NULL, b);
}

/* True when a presence may go out now: the turn has sent none yet and the
 * pacing wait is over (a wait longer than the maximum means the clock went
 * back: it is over too). */
static bool presence_may_send(const struct space_room *r)
{
	return !r->presence_sent && !r->presence_owed &&
	       (r->now >= r->presence_at || r->presence_at - r->now > r->cfg.presence_delay_max_ms);
}

/* Broadcasts b (a presence snapshot, consumed) now when allowed, else owes
 * a fresh one to space_room_flush (see room.h). */
static void broadcast_presence_buf(struct space_room *r, struct space_buf *b)
{
	if (!presence_may_send(r)) {
		r->presence_owed = true;
		space_buf_unref(b);
		return;
	}
	presence_send(r, b);
}

static void broadcast_presence(struct space_room *r)
{
	if (!presence_may_send(r)) {
		r->presence_owed = true;
		return;
	}
	presence_send(r, build_presence(r));
}

/* Gives the pending newcomers' placeholder its snapshot (snap, or one
 * built now when NULL). Called at the end of the turn and before anything
 * that would make the room as it is now wrong for a newcomer that joined
 * earlier in the turn: a member leaving (its later chat would come from
 * someone the newcomer was never told about). Later joins, identities and
 * lastSeen only add to what the newcomer learns. */
static void newcomers_resolve(struct space_room *r, struct space_buf *snap)
{
	if (!r->newcomers)
		return;
	struct space_buf *b = snap ? space_buf_ref(snap) : build_presence(r);
	space_buf_resolve(r->newcomers, b);
	space_buf_unref(b);
	space_buf_unref(r->newcomers);
	r->newcomers = NULL;
}

void space_room_flush(struct space_room *r, int64_t now)
{
	r->now = now;
	r->presence_sent = false;
	struct space_buf *snap = NULL;
	if (r->presence_owed) {
		r->presence_owed = false;
		if (presence_may_send(r))
			snap = build_presence(r);
		else
			r->presence_owed = true;
	}
	newcomers_resolve(r, snap);
	if (snap)
		presence_send(r, snap);
	r->presence_sent = false;
}

int64_t space_room_presence_due(const struct space_room *r)
{
	return r->presence_owed ? r->presence_at : -1;
}

/* --- claims ----------------------------------------------------------------- */

static size_t claim_hash(const char *k)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *k; k++)
		h = (h ^ (unsigned char)*k) * 1099511628211ull;
	return (size_t)(h % CLAIM_BUCKETS);
}

static struct claim **claim_slot(struct space_room *r, const char *key)
{
	struct claim **pp = &r->claims[claim_hash(key)];
	while (*pp && strcmp((*pp)->key, key) != 0)
		pp = &(*pp)->next;
	return pp;
}

static void claim_unlink(struct space_room *r, struct claim **pp)
{
	struct claim *cl = *pp;
	*pp = cl->next;
	free(cl->key);
	free(cl->owner);
	free(cl);
	r->nclaims--;
}

/* Removes claims matching (owner name) or (age >= ttl). */
static void claims_filter(struct space_room *r, const char *owner, int64_t now, int64_t ttl)
{
	for (size_t i = 0; i < CLAIM_BUCKETS; i++) {
		struct claim **pp = &r->claims[i];
		while (*pp) {
			bool drop =
			        owner ? strcmp((*pp)->owner, owner) == 0 : now - (*pp)->at >= ttl;
			if (drop)
				claim_unlink(r, pp);
			else
				pp = &(*pp)->next;
		}
	}
}

/* --- workspace cache ---------------------------------------------------------- */

static void ws_unlink(struct space_room *r, struct ws_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		r->ws_first = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		r->ws_last = e->prev;
	free(e->key);
	free(e->reporter);
	space_buf_unref(e->msg);
	free(e);
	r->nws--;
}

static void ws_put(struct space_room *r, const char *key, const char *reporter, int64_t at,
                   struct space_buf *msg)
{
	for (struct ws_entry *e = r->ws_first; e; e = e->next) {
		if (strcmp(e->key, key) == 0) {
			/* Updating keeps the position (a Map.set on an existing key). */
			free(e->reporter);
			e->reporter = xstrdup(reporter);
			e->at = at;
			space_buf_unref(e->msg);
			e->msg = space_buf_ref(msg);
			return;
		}
	}
	if (r->nws >= SPACE_WORKSPACES_MAX) {
		log_warn(LOG_COMP, "workspace cache full (%d): evicting the oldest entry",
		         SPACE_WORKSPACES_MAX);
		ws_unlink(r, r->ws_first);
	}
	struct ws_entry *e = xcalloc(1, sizeof *e);
	e->key = xstrdup(key);
	e->reporter = xstrdup(reporter);
	e->at = at;
	e->msg = space_buf_ref(msg);
	e->prev = r->ws_last;
	if (r->ws_last)
		r->ws_last->next = e;
	else
		r->ws_first = e;
	r->ws_last = e;
	r->nws++;
}

/* --- membership ------------------------------------------------------------------ */

static void member_unlink(struct space_room *r, struct space_conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		r->first = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		r->last = c->prev;
	c->prev = c->next = NULL;
	c->member = false;
	r->nmembers--;
}

/* §3.13, for a member, exactly once. */
static void disconnect_member(struct space_room *r, struct space_conn *c, int64_t now)
{
	char ts[TIME_ISO_LEN + 1];
	iso(now, ts);
	log_event(r, ts, c, "leave", "", 0);
	newcomers_resolve(r, NULL);
	member_unlink(r, c);

	struct strbuf sb;
	sb_init(&sb, 0);
	open_msg(&sb, "leave", c);
	put_ts_close(&sb, ts);
	broadcast(r, c, space_buf_from_sb(&sb, 0));
	sb_free(&sb);

	log_kv(LOG_LEVEL_INFO, LOG_COMP, "member left", "name", c->name, "id", c->id, "members",
	       LOG_INT(r->nmembers));
	show(r, "<< %s left", c->name);

	for (struct ws_entry *e = r->ws_first, *n; e; e = n) {
		n = e->next;
		if (strcmp(e->reporter, c->name) == 0)
			ws_unlink(r, e);
	}
	claims_filter(r, c->name, now, 0);
	broadcast_presence(r);
}

static void conn_clear_member(struct space_conn *c)
{
	free(c->name);
	free(c->id);
	free(c->version);
	free(c->caps_json);
	free(c->identity_json);
	free(c->presence_json);
	c->name = c->id = c->version = c->caps_json = c->identity_json = NULL;
	c->presence_json = NULL;
}

/* --- handlers ------------------------------------------------------------------- */

static bool units_between(const cJSON *v, size_t lo, size_t hi)
{
	size_t u = space_js_units(v->valuestring, strlen(v->valuestring));
	return u >= lo && u <= hi;
}

/* Capabilities as the protocol keeps them: strings only, everything else
 * dropped; within our caps (proto.h) so presence stays bounded. */
static char *normalise_caps(const cJSON *caps)
{
	if (!cJSON_IsArray(caps))
		return NULL;
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_putc(&sb, '[');
	size_t n = 0;
	for (const cJSON *e = caps->child; e && n < SPACE_CAPS_MAX_COUNT; e = e->next) {
		if (!cJSON_IsString(e))
			continue;
		if (space_js_units(e->valuestring, strlen(e->valuestring)) > SPACE_CAP_MAX_UNITS)
			continue;
		if (n++)
			sb_putc(&sb, ',');
		space_put_str(&sb, e->valuestring);
	}
	sb_putc(&sb, ']');
	return sb_detach(&sb);
}

static void handle_join(struct space_room *r, struct space_conn *c, const cJSON *root, int64_t now)
{
	c->join_seen = true;
	const cJSON *name = space_js_get(root, "name");
	const cJSON *id = space_js_get(root, "id");
	const cJSON *version = space_js_get(root, "version");
	bool ok = space_js_nonblank_string(name) && units_between(name, 1, SPACE_NAME_MAX_UNITS) &&
	          space_js_nonblank_string(id) && units_between(id, 1, SPACE_ID_MAX_UNITS) &&
	          cJSON_IsString(version) && units_between(version, 1, SPACE_VERSION_MAX_UNITS);
	if (!ok) {
		/* Validation runs before the "already a member" check, so a
		 * member sending a malformed join is disconnected (§3.3 step 2). */
		send_error(r, c, ERR_BAD_JOIN);
		c->closing = true;
		r->ops->close(r->ud, c, SPACE_CLOSE_BAD_JOIN, "Invalid join message");
		return;
	}
	if (c->member)
		return; /* a second valid join is ignored completely */

	for (struct space_conn *m = r->first; m; m = m->next) {
		if (strcmp(m->name, name->valuestring) != 0)
			continue;
		/* §3.3 step 4: the old connection leaves first (the newcomer is not
		 * a member yet, so it sees none of this), then is closed 4002. */
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "member replaced by a new connection", "name",
		       m->name, "old_id", m->id, "new_id", id->valuestring);
		disconnect_member(r, m, now);
		m->closing = true;
		r->ops->close(r->ud, m, SPACE_CLOSE_REPLACED, "Replaced by new connection");
		break;
	}

	c->member = true;
	c->name = xstrdup(name->valuestring);
	c->id = xstrdup(id->valuestring);
	c->version = xstrdup(version->valuestring);
	c->caps_json = normalise_caps(space_js_get(root, "capabilities"));
	c->joined_at = c->last_seen = now;
	c->last_chat = INT64_MIN;
	c->alive = true;
	c->prev = r->last;
	c->next = NULL;
	if (r->last)
		r->last->next = c;
	else
		r->first = c;
	r->last = c;
	r->nmembers++;

	char ts[TIME_ISO_LEN + 1];
	iso(now, ts);
	log_event(r, ts, c, "join", "", 0);

	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, "{\"type\":\"join\",\"name\":");
	space_put_str(&sb, c->name);
	sb_puts(&sb, ",\"id\":");
	space_put_str(&sb, c->id);
	sb_puts(&sb, ",\"version\":");
	space_put_str(&sb, c->version);
	if (c->caps_json) {
		sb_puts(&sb, ",\"capabilities\":");
		sb_puts(&sb, c->caps_json);
	}
	sb_putc(&sb, '}');
	broadcast(r, c, space_buf_from_sb(&sb, 0));
	sb_free(&sb);

	/* Newcomer: join → presence → history → workspace_state×N → presence.
	 * Nothing changes between the two presences, so one buffer serves.
	 * While pacing holds the broadcast back (a storm), the newcomers of
	 * the turn share one snapshot instead: a placeholder now, its bytes
	 * written at the end of the turn (newcomers_resolve). */
	struct space_buf *presence;
	if (presence_may_send(r)) {
		newcomers_resolve(r, NULL);
		presence = build_presence(r);
	} else {
		if (!r->newcomers)
			r->newcomers = space_buf_deferred(SPACE_BUF_PRESENCE);
		presence = space_buf_ref(r->newcomers);
	}
	send_buf(r, c, presence);
	struct space_buf *hist = space_store_history(r->store, space_history_limit(r->nmembers));
	send_buf(r, c, hist);
	space_buf_unref(hist);
	for (struct ws_entry *e = r->ws_first; e; e = e->next)
		send_buf(r, c, e->msg);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "member joined", "name", c->name, "id", c->id, "version",
	       c->version, "members", LOG_INT(r->nmembers));
	show(r, ">> %s joined (%s)", c->name, c->version);
	broadcast_presence_buf(r, presence);
}

static void handle_chat(struct space_room *r, struct space_conn *c, const cJSON *root, int64_t now)
{
	if (!c->member) {
		send_error(r, c, ERR_MUST_JOIN);
		return;
	}
	const cJSON *content = space_js_get(root, "content");
	if (!space_js_nonblank_string(content)) {
		send_error(r, c, ERR_CHAT_EMPTY);
		return;
	}
	size_t clen = strlen(content->valuestring);
	if (space_js_units(content->valuestring, clen) > SPACE_CHAT_MAX_UNITS) {
		send_error(r, c, ERR_CHAT_LONG);
		return;
	}
	/* §3.4 step 4: rejected chats neither restart the window nor count
	 * as a sign of life. */
	if (c->last_chat != INT64_MIN && now - c->last_chat < r->cfg.chat_interval_ms) {
		send_error(r, c, ERR_RATE);
		return;
	}
	c->last_chat = now;
	touch(c, now);

	char ts[TIME_ISO_LEN + 1];
	iso(now, ts);
	log_event(r, ts, c, "chat", content->valuestring, clen);

	struct strbuf sb;
	sb_init(&sb, 0);
	open_msg(&sb, "chat", c);
	sb_puts(&sb, ",\"content\":");
	space_put_strn(&sb, content->valuestring, clen);
	sb_puts(&sb, ",\"timestamp\":\"");
	sb_puts(&sb, ts);
	sb_putc(&sb, '"');
	const cJSON *thread = space_js_get(root, "threadId");
	if (space_js_truthy(thread)) {
		sb_puts(&sb, ",\"threadId\":");
		space_js_stringify(&sb, thread);
	}
	/* An extension: the agent chain length (the gate's chain rule) travels
	 * as an optional integer; peers that do not know it ignore it. */
	const cJSON *chain = space_js_get(root, "chain");
	if (cJSON_IsNumber(chain) && chain->valuedouble >= 0 &&
	    chain->valuedouble <= SPACE_CHAIN_MAX &&
	    chain->valuedouble == (double)(int64_t)chain->valuedouble) {
		sb_printf(&sb, ",\"chain\":%" PRId64, (int64_t)chain->valuedouble);
	}
	sb_putc(&sb, '}');
	broadcast(r, c, space_buf_from_sb(&sb, 0));
	sb_free(&sb);
	log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "chat", "name", c->name, "bytes", LOG_INT(clen));
	show(r, "%s: %.400s", c->name, content->valuestring);
}

static void handle_typing(struct space_room *r, struct space_conn *c, int64_t now)
{
	char ts[TIME_ISO_LEN + 1];
	struct strbuf sb;
	sb_init(&sb, 0);
	open_msg(&sb, "typing", c);
	put_ts_close(&sb, (iso(now, ts), ts));
	broadcast(r, c, space_buf_from_sb(&sb, 0));
	sb_free(&sb);
}

static void handle_identity(struct space_room *r, struct space_conn *c, const cJSON *root,
                            int64_t now)
{
	const cJSON *summary = space_js_get(root, "summary");
	/* typeof summary === 'object' && summary !== null: arrays pass (§3.6). */
	if (!cJSON_IsObject(summary) && !cJSON_IsArray(summary)) {
		send_error(r, c, ERR_IDENTITY);
		return;
	}
	struct strbuf sb;
	sb_init(&sb, SPACE_IDENTITY_MAX_BYTES);
	if (space_js_stringify(&sb, summary) < 0) {
		sb_free(&sb);
		send_error(r, c, ERR_IDENTITY_BIG);
		return;
	}
	touch(c, now);
	presence_stale(c);
	free(c->identity_json);
	c->identity_json = sb_detach(&sb);

	char ts[TIME_ISO_LEN + 1];
	iso(now, ts);
	log_event(r, ts, c, "identity", c->identity_json, strlen(c->identity_json));

	sb_init(&sb, 0);
	open_msg(&sb, "identity", c);
	sb_puts(&sb, ",\"summary\":");
	sb_puts(&sb, c->identity_json);
	put_ts_close(&sb, ts);
	broadcast(r, c, space_buf_from_sb(&sb, 0));
	sb_free(&sb);
	broadcast_presence(r);
}

/* The time a new claim was first taken: the claimant's "since" when it is
 * an ISO-8601 string at most SPACE_CLAIM_SINCE_MAX_AGE_MS old, else now (a
 * since ahead of our clock included: a claim is never shown as taken in
 * the future). A since that is too old, of the wrong type or unparsable is
 * ignored, not an error: the field is optional and only shown (TypeScript
 * rooms drop it). */
static int64_t claim_since(const cJSON *since, int64_t now)
{
	int64_t t;
	if (!cJSON_IsString(since) || time_parse_iso(since->valuestring, &t) < 0)
		return now;
	return t < now && t >= now - SPACE_CLAIM_SINCE_MAX_AGE_MS ? t : now;
}

static void handle_claim(struct space_room *r, struct space_conn *c, const cJSON *root, int64_t now)
{
	const cJSON *action = space_js_get(root, "action");
	const cJSON *target = space_js_get(root, "target");
	if (!space_js_nonblank_string(action) || !space_js_nonblank_string(target)) {
		struct strbuf sb;
		sb_init(&sb, 0);
		sb_puts(&sb,
		        "Invalid claim: action and target must be non-empty strings (got action=");
		space_js_stringify(&sb, action);
		sb_puts(&sb, ", target=");
		space_js_stringify(&sb, target);
		sb_putc(&sb, ')');
		send_error(r, c, sb_cstr(&sb));
		sb_free(&sb);
		return;
	}
	touch(c, now); /* renewals and conflicts count as signs of life too */

	char *key = xasprintf("%s:%s", action->valuestring, target->valuestring);
	struct claim **pp = claim_slot(r, key);
	/* §9 items 8 and 10: an expired entry is absent, whoever owns it, and
	 * expiry is age >= TTL everywhere; so a re-claim after the TTL is a
	 * fresh, broadcast claim and the outcome never depends on the sweep. */
	if (*pp && now - (*pp)->at >= r->cfg.claim_ttl_ms)
		claim_unlink(r, pp);
	if (*pp && strcmp((*pp)->owner, c->name) == 0) {
		(*pp)->at = now; /* silent renewal */
		free(key);
		struct space_room_event ev = {.kind = SPACE_ROOM_EV_CLAIM_RENEWED,
		                              .who = c,
		                              .action = action->valuestring,
		                              .target = target->valuestring,
		                              .now = now};
		observe(r, &ev);
		return;
	}
	if (*pp) {
		struct strbuf sb;
		sb_init(&sb, 0);
		sb_printf(&sb, "Claim conflict \u2014 %s and %s both claimed %s. %s claimed first.",
		          (*pp)->owner, c->name, target->valuestring, (*pp)->owner);
		send_error(r, c, sb_cstr(&sb));
		sb_free(&sb);
		free(key);
		return;
	}
	if (r->nclaims >= SPACE_CLAIMS_MAX) {
		send_error(r, c, "Invalid claim: too many active claims in this room");
		free(key);
		return;
	}
	struct claim *cl = xcalloc(1, sizeof *cl);
	cl->key = key;
	cl->owner = xstrdup(c->name);
	cl->at = now;
	cl->since = claim_since(space_js_get(root, "since"), now);
	*pp = cl;
	r->nclaims++;

	char ts[TIME_ISO_LEN + 1];
	iso(now, ts);
	log_event(r, ts, c, "claim", key, strlen(key));

	struct strbuf sb;
	sb_init(&sb, 0);
	open_msg(&sb, "claim", c);
	sb_puts(&sb, ",\"action\":");
	space_put_str(&sb, action->valuestring);
	sb_puts(&sb, ",\"target\":");
	space_put_str(&sb, target->valuestring);
	/* "since" only for a claim older than now: a fresh claim keeps the
	 * shape of §2.3. */
	if (cl->since != now) {
		char since[TIME_ISO_LEN + 1];
		sb_printf(&sb, ",\"since\":\"%s\"", time_format_iso(cl->since, since));
	}
	put_ts_close(&sb, ts);
	broadcast(r, c, space_buf_from_sb(&sb, 0));
	sb_free(&sb);
}

static void handle_state(struct space_room *r, struct space_conn *c, const cJSON *root, int64_t now)
{
	static const char *const states[] = {"idle", "thinking", "acting", "blocked"};
	const cJSON *state = space_js_get(root, "state");
	bool ok = false;
	if (cJSON_IsString(state))
		for (size_t i = 0; i < 4; i++)
			if (strcmp(state->valuestring, states[i]) == 0)
				ok = true;
	if (!ok) {
		struct strbuf sb;
		sb_init(&sb, 0);
		sb_puts(&sb, "Invalid state: must be one of idle, thinking, acting, blocked (got ");
		space_js_stringify(&sb, state);
		sb_putc(&sb, ')');
		send_error(r, c, sb_cstr(&sb));
		sb_free(&sb);
		return;
	}
	touch(c, now);
	const cJSON *detail = space_js_get(root, "detail");

	char ts[TIME_ISO_LEN + 1];
	iso(now, ts);
	/* Log: "<state>: <String(raw detail)>" when the raw detail is truthy
	 * (untruncated, §3.8 / §9 item 6). */
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, state->valuestring);
	if (space_js_truthy(detail)) {
		sb_puts(&sb, ": ");
		space_js_string_of(&sb, detail);
	}
	log_event(r, ts, c, "state", sb_cstr(&sb), sb.len);
	sb_reset(&sb);

	open_msg(&sb, "state", c);
	sb_puts(&sb, ",\"state\":");
	space_put_str(&sb, state->valuestring);
	if (detail) {
		sb_puts(&sb, ",\"detail\":");
		if (cJSON_IsString(detail)) {
			size_t dl = strlen(detail->valuestring);
			space_put_strn(
			        &sb, detail->valuestring,
			        space_js_cut(detail->valuestring, dl, SPACE_DETAIL_CUT_UNITS));
		} else {
			space_js_stringify(&sb, detail); /* relayed as is (§2.2) */
		}
	}
	put_ts_close(&sb, ts);
	broadcast(r, c, space_buf_from_sb(&sb, 0));
	sb_free(&sb);
}

static void handle_action_result(struct space_room *r, struct space_conn *c, const cJSON *root,
                                 int64_t now)
{
	const cJSON *action = space_js_get(root, "action");
	const cJSON *target = space_js_get(root, "target");
	const cJSON *success = space_js_get(root, "success");
	if (!space_js_nonblank_string(action) || !space_js_nonblank_string(target) ||
	    !cJSON_IsBool(success)) {
		send_error(r, c, ERR_ACTION_RESULT);
		return;
	}
	touch(c, now);
	/* Release by result, from any member (§3.7, §9 item 9). */
	char *key = xasprintf("%s:%s", action->valuestring, target->valuestring);
	struct claim **pp = claim_slot(r, key);
	if (*pp)
		claim_unlink(r, pp);
	free(key);

	const cJSON *link = space_js_get(root, "link");
	const cJSON *error = space_js_get(root, "error");
	char ts[TIME_ISO_LEN + 1];
	iso(now, ts);

	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, "{\"action\":");
	space_put_str(&sb, action->valuestring);
	sb_puts(&sb, ",\"target\":");
	space_put_str(&sb, target->valuestring);
	sb_puts(&sb, cJSON_IsTrue(success) ? ",\"success\":true" : ",\"success\":false");
	if (link) {
		sb_puts(&sb, ",\"link\":");
		space_js_stringify(&sb, link);
	}
	if (error) {
		sb_puts(&sb, ",\"error\":");
		space_js_stringify(&sb, error);
	}
	sb_putc(&sb, '}');
	log_event(r, ts, c, "action_result", sb_cstr(&sb), sb.len);
	sb_reset(&sb);

	open_msg(&sb, "action_result", c);
	sb_puts(&sb, ",\"action\":");
	space_put_str(&sb, action->valuestring);
	sb_puts(&sb, ",\"target\":");
	space_put_str(&sb, target->valuestring);
	sb_puts(&sb, cJSON_IsTrue(success) ? ",\"success\":true" : ",\"success\":false");
	if (cJSON_IsString(link)) {
		sb_puts(&sb, ",\"link\":");
		space_put_str(&sb, link->valuestring);
	}
	if (cJSON_IsString(error)) {
		sb_puts(&sb, ",\"error\":");
		space_put_str(&sb, error->valuestring);
	}
	put_ts_close(&sb, ts);
	broadcast(r, c, space_buf_from_sb(&sb, 0));
	sb_free(&sb);
}

static void handle_reflection(struct space_room *r, struct space_conn *c, const cJSON *root,
                              int64_t now)
{
	const cJSON *summary = space_js_get(root, "summary");
	if (!space_js_nonblank_string(summary)) {
		send_error(r, c, ERR_REFLECTION);
		return;
	}
	touch(c, now);
	size_t len = strlen(summary->valuestring);
	char ts[TIME_ISO_LEN + 1];
	iso(now, ts);
	log_event(r, ts, c, "reflection", summary->valuestring, len);

	struct strbuf sb;
	sb_init(&sb, 0);
	open_msg(&sb, "reflection", c);
	sb_puts(&sb, ",\"summary\":");
	space_put_strn(&sb, summary->valuestring,
	               space_js_cut(summary->valuestring, len, SPACE_REFLECTION_CUT_UNITS));
	put_ts_close(&sb, ts);
	broadcast(r, c, space_buf_from_sb(&sb, 0));
	sb_free(&sb);
}

static void put_num_or_zero(struct strbuf *sb, const char *key, const cJSON *v)
{
	char num[40];
	sb_puts(sb, key);
	sb_puts(sb, json_number_js(cJSON_IsNumber(v) ? v->valuedouble : 0, num));
}

static void put_raw_field(struct strbuf *sb, const char *key, const cJSON *v)
{
	if (!v)
		return;
	sb_puts(sb, key);
	space_js_stringify(sb, v);
}

static void handle_workspace(struct space_room *r, struct space_conn *c, const cJSON *root,
                             int64_t now)
{
	const cJSON *ws = space_js_get(root, "workspace");
	const cJSON *total = space_js_get(root, "totalTasks");
	const cJSON *completed = space_js_get(root, "completedTasks");
	if (!space_js_nonblank_string(ws) || !cJSON_IsNumber(total) || !cJSON_IsNumber(completed)) {
		send_error(r, c, ERR_WORKSPACE);
		return;
	}
	touch(c, now);
	const cJSON *plan = space_js_get(root, "planNumber");
	const cJSON *blocked = space_js_get(root, "blockedTasks");
	const cJSON *inprog = space_js_get(root, "inProgressTasks");
	char ts[TIME_ISO_LEN + 1];
	iso(now, ts);

	/* Log content keeps the raw received values (§3.12). */
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, "{\"workspace\":");
	space_put_str(&sb, ws->valuestring);
	put_raw_field(&sb, ",\"plan\":", plan);
	put_raw_field(&sb, ",\"total\":", total);
	put_raw_field(&sb, ",\"completed\":", completed);
	put_raw_field(&sb, ",\"blocked\":", blocked);
	put_raw_field(&sb, ",\"inProgress\":", inprog);
	sb_putc(&sb, '}');
	log_event(r, ts, c, "workspace_state", sb_cstr(&sb), sb.len);
	sb_reset(&sb);

	open_msg(&sb, "workspace_state", c);
	sb_puts(&sb, ",\"workspace\":");
	space_put_str(&sb, ws->valuestring);
	put_num_or_zero(&sb, ",\"planNumber\":", plan);
	put_num_or_zero(&sb, ",\"totalTasks\":", total);
	put_num_or_zero(&sb, ",\"completedTasks\":", completed);
	put_num_or_zero(&sb, ",\"blockedTasks\":", blocked);
	put_num_or_zero(&sb, ",\"inProgressTasks\":", inprog);
	/* an extension: the plan's tasks, for the room's page */
	space_put_tasks(&sb, space_js_get(root, "tasks"), SPACE_WORKSPACE_TASKS_MAX,
	                SPACE_WORKSPACE_TASKS_MAX_BYTES);
	/* and its pull requests; the rest of the message stands when some
	 * entries are not pulls */
	size_t rejected = 0;
	space_put_pulls(&sb, space_js_get(root, "pulls"), SPACE_WORKSPACE_PULLS_MAX,
	                SPACE_WORKSPACE_PULLS_MAX_BYTES, &rejected);
	if (rejected)
		log_kv(LOG_LEVEL_WARN, LOG_COMP,
		       "workspace_state: pulls entries left out (each needs a positive integer "
		       "number and a state word)",
		       "name", c->name, "workspace", ws->valuestring, "rejected",
		       LOG_INT((int64_t)rejected));
	put_ts_close(&sb, ts);
	struct space_buf *b = space_buf_from_sb(&sb, 0);
	sb_free(&sb);
	ws_put(r, ws->valuestring, c->name, now, b);
	broadcast(r, c, b);
}

/* --- public entry points -------------------------------------------------------- */

void space_room_input(struct space_room *r, struct space_conn *c, const char *buf, size_t len,
                      int64_t now)
{
	if (c->closing)
		return;
	r->now = now;
	cJSON *root = NULL;
	enum space_msg_type t = space_msg_parse(buf, len, &root);
	switch (t) {
	case SPACE_MSG_INVALID_JSON:
		send_error(r, c, ERR_INVALID_JSON);
		break;
	case SPACE_MSG_IGNORED:
		break;
	case SPACE_MSG_JOIN:
		handle_join(r, c, root, now);
		break;
	case SPACE_MSG_CHAT:
		handle_chat(r, c, root, now);
		break;
	default:
		/* Pending connections: everything but join/chat is ignored
		 * silently, without validation (§3.19). */
		if (!c->member)
			break;
		switch (t) {
		case SPACE_MSG_TYPING:
			handle_typing(r, c, now);
			break;
		case SPACE_MSG_IDENTITY:
			handle_identity(r, c, root, now);
			break;
		case SPACE_MSG_CLAIM:
			handle_claim(r, c, root, now);
			break;
		case SPACE_MSG_STATE:
			handle_state(r, c, root, now);
			break;
		case SPACE_MSG_ACTION_RESULT:
			handle_action_result(r, c, root, now);
			break;
		case SPACE_MSG_REFLECTION:
			handle_reflection(r, c, root, now);
			break;
		case SPACE_MSG_WORKSPACE_STATE:
			handle_workspace(r, c, root, now);
			break;
		default:
			break;
		}
	}
	cJSON_Delete(root);
}

void space_room_pong(struct space_room *r, struct space_conn *c, int64_t now)
{
	if (c->member)
		touch(c, now);
}

void space_room_join_timeout(struct space_room *r, struct space_conn *c, int64_t now)
{
	if (c->member || c->join_seen || c->closing)
		return;
	char msg[96];
	int64_t secs = r->cfg.join_timeout_ms / 1000;
	/* The reference hard-codes "5 seconds" (§9 item 21); a tuned timeout
	 * for tests names its own value. */
	if (r->cfg.join_timeout_ms % 1000 == 0)
		snprintf(msg, sizeof msg,
		         "Join timeout: must send join message within %" PRId64 " seconds", secs);
	else
		snprintf(msg, sizeof msg,
		         "Join timeout: must send join message within %" PRId64 " ms",
		         r->cfg.join_timeout_ms);
	send_error(r, c, msg);
	c->closing = true;
	r->ops->close(r->ud, c, SPACE_CLOSE_JOIN_TIMEOUT, "Join timeout");
}

void space_room_heartbeat(struct space_room *r, int64_t now)
{
	r->now = now;
	size_t ndead = 0;
	for (struct space_conn *m = r->first; m; m = m->next)
		if (!m->alive && !m->closing)
			ndead++;
	struct space_conn **dead = ndead ? xcalloc(ndead, sizeof *dead) : NULL;
	size_t i = 0;
	for (struct space_conn *m = r->first; m; m = m->next) {
		if (m->closing)
			continue;
		if (!m->alive) {
			dead[i++] = m;
		} else {
			m->alive = false;
			r->ops->ping(r->ud, m);
		}
	}
	for (i = 0; i < ndead; i++) {
		struct space_conn *m = dead[i];
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "member missed a heartbeat round: dropping",
		       "name", m->name, "id", m->id);
		m->closing = true;
		r->ops->drop(r->ud, m);
		disconnect_member(r, m, now);
	}
	free(dead);
}

void space_room_sweep(struct space_room *r, int64_t now)
{
	claims_filter(r, NULL, now, r->cfg.claim_ttl_ms);
	for (struct ws_entry *e = r->ws_first, *n; e; e = n) {
		n = e->next;
		if (now - e->at > r->cfg.workspace_ttl_ms)
			ws_unlink(r, e);
	}
}

static bool word_char(unsigned char ch)
{
	return isascii(ch) && (isalnum(ch) || ch == '_');
}

/* JavaScript /\bNAME\b/i on ASCII word boundaries (§3.16 rule 2). */
static bool bare_name_match(const char *text, size_t tlen, const char *name)
{
	size_t nlen = strlen(name);
	if (!nlen || nlen > tlen)
		return false;
	for (size_t i = 0; i + nlen <= tlen; i++) {
		if (strncasecmp(text + i, name, nlen) != 0)
			continue;
		bool before = i > 0 && word_char((unsigned char)text[i - 1]);
		bool first = word_char((unsigned char)text[i]);
		bool last = word_char((unsigned char)text[i + nlen - 1]);
		bool after = i + nlen < tlen && word_char((unsigned char)text[i + nlen]);
		if (before != first && last != after)
			return true;
	}
	return false;
}

/* Builds the JSON array of addressed names, or NULL when empty. */
static char *host_addressed(struct space_room *r, const char *text, size_t len)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	size_t n = 0;
	/* Names already added, to apply rule 2 only to the others. */
	const struct space_conn **added = NULL;
	size_t nadded = 0, cap = 0;

	for (size_t i = 0; i < len; i++) {
		if (text[i] != '@')
			continue;
		size_t j = i + 1;
		while (j < len && word_char((unsigned char)text[j]))
			j++;
		size_t wl = j - i - 1;
		if (!wl)
			continue;
		for (struct space_conn *m = r->first; m; m = m->next) {
			if (strlen(m->name) == wl && strncasecmp(m->name, text + i + 1, wl) == 0) {
				sb_putc(&sb, n++ ? ',' : '[');
				space_put_str(&sb, m->name);
				if (nadded == cap) {
					cap = cap ? cap * 2 : 8;
					added = xreallocarray(added, cap, sizeof *added);
				}
				added[nadded++] = m;
				break;
			}
		}
		i = j - 1;
	}
	for (struct space_conn *m = r->first; m; m = m->next) {
		bool seen = false;
		for (size_t k = 0; k < nadded && !seen; k++)
			seen = strcmp(added[k]->name, m->name) == 0;
		if (seen || !bare_name_match(text, len, m->name))
			continue;
		sb_putc(&sb, n++ ? ',' : '[');
		space_put_str(&sb, m->name);
	}
	free(added);
	if (!n) {
		sb_free(&sb);
		return NULL;
	}
	sb_putc(&sb, ']');
	return sb_detach(&sb);
}

void space_room_host_chat(struct space_room *r, const char *text, size_t len, int64_t now)
{
	r->now = now;
	/* A NUL byte of the host's line is U+0000, which the protocol sends
	 * as "\u0000" like every member's: it becomes the marker that stands
	 * for U+0000 everywhere in the room (space/proto.h). The text is valid
	 * UTF-8 (server.c checks), so no 0xFF was there before. */
	char *content = xmalloc(len + 1);
	size_t clen = 0;
	for (size_t i = 0; i < len; i++)
		content[clen++] = text[i] ? text[i] : JSON_NUL_MARK;
	content[clen] = '\0';
	size_t cut = space_js_cut(content, clen, SPACE_CHAT_MAX_UNITS);
	if (cut < clen)
		log_warn(LOG_COMP, "host message cut to %d UTF-16 units", SPACE_CHAT_MAX_UNITS);
	content[cut] = '\0';
	char *addressed = host_addressed(r, content, cut);
	char ts[TIME_ISO_LEN + 1];
	iso(now, ts);
	space_store_append(r->store, ts, "host", r->host_id, "chat", content, cut);

	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, "{\"type\":\"chat\",\"name\":\"host\",\"id\":");
	space_put_str(&sb, r->host_id);
	sb_puts(&sb, ",\"content\":");
	space_put_strn(&sb, content, cut);
	sb_puts(&sb, ",\"timestamp\":\"");
	sb_puts(&sb, ts);
	sb_putc(&sb, '"');
	if (addressed) {
		sb_puts(&sb, ",\"addressed\":");
		sb_puts(&sb, addressed);
	}
	sb_putc(&sb, '}');
	broadcast(r, NULL, space_buf_from_sb(&sb, 0));
	sb_free(&sb);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "host message", "addressed", addressed ? addressed : "[]",
	       "members", LOG_INT(r->nmembers));
	free(addressed);
	free(content);
}

void space_room_shutdown_notice(struct space_room *r, int64_t now)
{
	r->now = now;
	char ts[TIME_ISO_LEN + 1];
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, "{\"type\":\"shutdown\",\"reason\":\"" SHUTDOWN_REASON "\"");
	put_ts_close(&sb, (iso(now, ts), ts));
	broadcast(r, NULL, space_buf_from_sb(&sb, 0));
	sb_free(&sb);
}

void space_room_shutdown_close(struct space_room *r)
{
	newcomers_resolve(r, NULL);
	/* §3.17: no leave entries, no leave/presence broadcasts. */
	while (r->first) {
		struct space_conn *m = r->first;
		member_unlink(r, m);
		if (!m->closing) {
			m->closing = true;
			r->ops->close(r->ud, m, SPACE_CLOSE_GOING_AWAY, SHUTDOWN_REASON);
		}
	}
}

/* --- lifetime ------------------------------------------------------------------- */

static void base36(uint64_t v, char *out)
{
	char tmp[24];
	size_t n = 0;
	do {
		tmp[n++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
		v /= 36;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	out[n] = '\0';
}

void space_room_config_init(struct space_room_config *cfg)
{
	cfg->claim_ttl_ms = SPACE_CLAIM_TTL_MS_DEFAULT;
	cfg->chat_interval_ms = SPACE_CHAT_INTERVAL_MS_DEFAULT;
	cfg->workspace_ttl_ms = SPACE_WORKSPACE_TTL_MS_DEFAULT;
	cfg->join_timeout_ms = 5000;
	cfg->presence_bytes_per_ms = SPACE_PRESENCE_BYTES_PER_MS_DEFAULT;
	cfg->presence_delay_max_ms = SPACE_PRESENCE_DELAY_MAX_MS_DEFAULT;
}

struct space_room *space_room_new(const struct space_room_config *cfg, struct space_store *store,
                                  const struct space_room_ops *ops, void *ud, int64_t started_ms)
{
	struct space_room *r = xcalloc(1, sizeof *r);
	if (cfg)
		r->cfg = *cfg;
	else
		space_room_config_init(&r->cfg);
	r->store = store;
	r->ops = ops;
	r->ud = ud;
	memcpy(r->host_id, "host-", 5);
	base36(started_ms > 0 ? (uint64_t)started_ms : 0, r->host_id + 5);
	return r;
}

struct space_conn *space_room_conn_new(struct space_room *r, void *io)
{
	struct conn_node *n = xcalloc(1, sizeof *n);
	n->conn.io = io;
	n->next = r->conns;
	if (r->conns)
		r->conns->prev = n;
	r->conns = n;
	return &n->conn;
}

static void conn_free(struct space_room *r, struct conn_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		r->conns = n->next;
	if (n->next)
		n->next->prev = n->prev;
	conn_clear_member(&n->conn);
	free(n);
}

void space_room_conn_closed(struct space_room *r, struct space_conn *c, int64_t now)
{
	r->now = now;
	if (c->member)
		disconnect_member(r, c, now);
	conn_free(r, (struct conn_node *)c);
}

void space_room_free(struct space_room *r)
{
	if (!r)
		return;
	while (r->conns)
		conn_free(r, r->conns);
	for (size_t i = 0; i < CLAIM_BUCKETS; i++)
		while (r->claims[i])
			claim_unlink(r, &r->claims[i]);
	while (r->ws_first)
		ws_unlink(r, r->ws_first);
	space_buf_unref(r->newcomers);
	free(r);
}

void space_room_set_observer(struct space_room *r, space_room_observer_fn fn, void *ud)
{
	r->observer = fn;
	r->observer_ud = ud;
}

size_t space_room_member_count(const struct space_room *r)
{
	return r->nmembers;
}

const struct space_conn *space_room_first_member(const struct space_room *r)
{
	return r->first;
}

size_t space_room_claim_count(const struct space_room *r)
{
	return r->nclaims;
}
