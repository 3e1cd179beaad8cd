/*
 * The engine's view of the agent-space (modules/space/link), in process,
 * against a real `agent-space`: the link under test and an observer member
 * (a bare adapters/space client) share one libuv loop.
 *
 *   - join, identity and presence as the other member sees them;
 *   - chat events: author kinds (self, host, peer), the carried chain (the
 *     derived one is the conversation store's, tests/unit/conversation),
 *     addressed names, thread and conversation keys; each chat once, also
 *     when a reconnect replays the history of chats seen live;
 *   - paced chat: typing first, chats spaced past the room's rate limit,
 *     result callbacks, refused input;
 *   - state; claims renewed past the room's TTL, released, lost on a
 *     conflict;
 *   - after the room is killed and restarted: pending chats dropped, state
 *     and claims announced again, the claims saying since when they are
 *     held (a fresh claim says nothing of it);
 *   - stopping and freeing in every phase, also mid-connect.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/space/link.h"
#include "support_loop.h"
#include "tests/integration/space-client/harness.h"

#define MAX_EVENTS 64
#define MAX_OBS    512

struct rec_event {
	char *author, *text, *thread, *conversation, *message_id;
	enum space_author_kind kind;
	int64_t chain;
	bool chain_explicit, addressed_me, from_history;
	size_t naddressed;
};

struct fx {
	uv_loop_t loop;
	struct th_room room;
	bool room_up;
	char state_dir[256];
	struct state_store st;
	struct space_link *link;
	struct spc_client *obs;
	bool link_stopped, obs_stopped;
	struct rec_event ev[MAX_EVENTS];
	size_t nev;
	int joins, lefts, presences;
	char lost[3][128];
	int nlost;
	cJSON *seen[MAX_OBS]; /* what the observer received, in order */
	size_t nseen;
	enum space_say_result says[16];
	int nsays;
};

/* --- plumbing -------------------------------------------------------------------- */

static void on_chat(void *ud, const struct space_event *e)
{
	struct fx *f = ud;
	if (f->nev == MAX_EVENTS)
		return;
	struct rec_event *r = &f->ev[f->nev++];
	r->author = xstrdup(e->author_name);
	r->text = xstrdup(e->text);
	r->thread = e->thread_id ? xstrdup(e->thread_id) : NULL;
	r->conversation = xstrdup(e->conversation);
	r->message_id = xstrdup(e->message_id);
	r->kind = e->author_kind;
	r->chain = e->chain;
	r->chain_explicit = e->chain_explicit;
	r->addressed_me = e->addressed_me;
	r->from_history = e->from_history;
	r->naddressed = e->naddressed;
	assert_string_equal(e->platform, "space");
	assert_null(e->parent_id);
}

static void on_presence(void *ud)
{
	((struct fx *)ud)->presences++;
}

static void on_connection(void *ud, bool joined, const char *why)
{
	struct fx *f = ud;
	if (joined)
		f->joins++;
	else
		f->lefts++;
}

static void on_claim_lost(void *ud, const char *action, const char *target, const char *holder)
{
	struct fx *f = ud;
	snprintf(f->lost[0], sizeof f->lost[0], "%s", action);
	snprintf(f->lost[1], sizeof f->lost[1], "%s", target);
	snprintf(f->lost[2], sizeof f->lost[2], "%s", holder);
	f->nlost++;
}

static void on_obs_message(void *ud, const struct spc_msg *m, unsigned changed)
{
	struct fx *f = ud;
	if (f->nseen < MAX_OBS)
		f->seen[f->nseen++] = cJSON_Duplicate(m->root, 1);
}

static void say_done(void *ud, enum space_say_result r)
{
	struct fx *f = ud;
	if (f->nsays < 16)
		f->says[f->nsays++] = r;
}

/* Runs the loop until cond(f, arg) holds or timeout_ms passes. */
static bool run_until(struct fx *f, support_cond_fn cond, const void *arg, int timeout_ms)
{
	return support_run_until(&f->loop, cond, f, arg, timeout_ms);
}

/* Lets the loop run for ms (for things that can only be seen over time,
 * such as a claim outliving the room's TTL). */
static void run_for(struct fx *f, int ms)
{
	run_until(f, NULL, NULL, ms);
}

static bool c_joined(void *ctx, const void *n)
{
	struct fx *f = ctx;
	return f->joins >= *(const int *)n && f->obs && spc_client_state(f->obs) == SPC_JOINED;
}

/* The observer saw a message of type (from name, when not NULL) whose
 * field `key` equals `val` (when not NULL); index after `from`. */
struct want {
	const char *type, *name, *key, *val;
	size_t from;
};

static long find_seen(struct fx *f, const struct want *w)
{
	for (size_t i = w->from; i < f->nseen; i++) {
		const cJSON *m = f->seen[i];
		const char *t = json_string_or(m, "type", "");
		if (strcmp(t, w->type) != 0)
			continue;
		if (w->name && strcmp(json_string_or(m, "name", ""), w->name) != 0)
			continue;
		if (w->key) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, w->key);
			if (!cJSON_IsString(v) || strcmp(v->valuestring, w->val) != 0)
				continue;
		}
		return (long)i;
	}
	return -1;
}

static bool c_seen(void *ctx, const void *w)
{
	struct fx *f = ctx;
	return find_seen(f, w) >= 0;
}

static bool c_events(void *ctx, const void *n)
{
	struct fx *f = ctx;
	return f->nev >= *(const size_t *)n;
}

static bool c_says(void *ctx, const void *n)
{
	struct fx *f = ctx;
	return f->nsays >= *(const int *)n;
}

static long must_see(struct fx *f, struct want w)
{
	if (!run_until(f, c_seen, &w, TH_WAIT_MS)) {
		th_fail_dump(NULL, &f->room);
		fail_msg("the observer never saw %s%s%s %s=%s", w.type, w.name ? " from " : "",
		         w.name ? w.name : "", w.key ? w.key : "", w.val ? w.val : "");
	}
	return find_seen(f, &w);
}

static struct space_link_config link_cfg(struct fx *f, const char *name)
{
	struct space_link_config c;
	space_link_config_init(&c, NULL);
	c.agent_name = name;
	c.version = "0.1.0";
	c.space_url = NULL; /* start_link points it at the room */
	c.st = &f->st;
	c.identity_json = "{\"coreValues\":[\"care\"],\"currentInterests\":[],\"voice\":\"plain\","
	                  "\"expertise\":[],\"recentWork\":\"No recent completed work\"}";
	spc_tunables_default(&c.t);
	uint64_t fast[] = {100, 200};
	memcpy(c.t.backoff_ms, fast, sizeof fast);
	c.t.nbackoff = 2;
	c.t.connect_timeout_ms = 3000;
	c.typing_base_ms = 50;
	c.typing_per_char_ms = 1;
	c.typing_max_ms = 300;
	return c;
}

static void start_link(struct fx *f, struct space_link_config *c)
{
	static char url[64];
	snprintf(url, sizeof url, "ws://127.0.0.1:%d", f->room.port);
	if (!c->space_url)
		c->space_url = url;
	struct space_link_handlers h = {.on_chat = on_chat,
	                                .on_presence = on_presence,
	                                .on_connection = on_connection,
	                                .on_claim_lost = on_claim_lost};
	struct ga_err err = {{0}};
	f->link = space_link_new(&f->loop, c, &h, f, &err);
	if (!f->link)
		fail_msg("space_link_new: %s", err.msg);
	space_link_start(f->link);
}

static void start_observer(struct fx *f)
{
	char url[64];
	snprintf(url, sizeof url, "ws://127.0.0.1:%d", f->room.port);
	struct spc_client_config oc = {
	        .name = "Obs", .id = "obs-1", .version = "1.0.0", .space_url = url};
	spc_tunables_default(&oc.t);
	uint64_t fast[] = {100};
	memcpy(oc.t.backoff_ms, fast, sizeof fast);
	oc.t.nbackoff = 1;
	struct spc_client_events oe = {.on_message = on_obs_message};
	struct ga_err err = {{0}};
	f->obs = spc_client_new(&f->loop, &oc, &oe, f, &err);
	assert_non_null(f->obs);
	spc_client_start(f->obs);
}

static void obs_send(struct fx *f, char *json)
{
	assert_int_equal(spc_client_send(f->obs, json), 0);
}

static void start_all(struct fx *f, const char *const *room_env, struct space_link_config *c)
{
	th_room_start(&f->room, 0, room_env, false);
	f->room_up = true;
	start_observer(f);
	start_link(f, c);
	int one = 1;
	if (!run_until(f, c_joined, &one, TH_WAIT_MS)) {
		th_fail_dump(NULL, &f->room);
		fail_msg("link or observer did not join");
	}
}

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	log_init(getenv("SPC_DEBUG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_ERROR, 0, NULL);
	uv_loop_init(&f->loop);
	const char *base = getenv("TMPDIR");
	snprintf(f->state_dir, sizeof f->state_dir, "%s/spc-link-XXXXXX",
	         base && *base ? base : "/tmp");
	assert_non_null(mkdtemp(f->state_dir));
	th_track_dir(f->state_dir);
	struct ga_err err = {{0}};
	assert_int_equal(state_store_init(&f->st, f->state_dir, "0.1.0", &err), 0);
	*state = f;
	return 0;
}

static void link_stopped(void *ud)
{
	((struct fx *)ud)->link_stopped = true;
}

static void obs_stopped(void *ud)
{
	((struct fx *)ud)->obs_stopped = true;
}

static bool c_link_stopped(void *ctx, const void *arg)
{
	struct fx *f = ctx;
	(void)arg;
	return f->link_stopped;
}

static bool c_all_stopped(void *ctx, const void *arg)
{
	struct fx *f = ctx;
	(void)arg;
	return (!f->link || f->link_stopped) && (!f->obs || f->obs_stopped);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (f->link)
		space_link_stop(f->link, link_stopped, f);
	if (f->obs)
		spc_client_stop(f->obs, obs_stopped, f);
	run_until(f, c_all_stopped, NULL, TH_WAIT_MS);
	space_link_free(f->link);
	spc_client_free(f->obs);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	int rc = uv_loop_close(&f->loop);
	if (f->room_up)
		th_room_stop(&f->room, SIGTERM);
	state_store_free(&f->st);
	for (size_t i = 0; i < f->nev; i++) {
		free(f->ev[i].author);
		free(f->ev[i].text);
		free(f->ev[i].thread);
		free(f->ev[i].conversation);
		free(f->ev[i].message_id);
	}
	for (size_t i = 0; i < f->nseen; i++)
		cJSON_Delete(f->seen[i]);
	th_cleanup_all();
	free(f);
	assert_int_equal(rc, 0); /* every handle closed */
	return 0;
}

static struct rec_event *event_with_text(struct fx *f, const char *text)
{
	for (size_t i = 0; i < f->nev; i++)
		if (strcmp(f->ev[i].text, text) == 0)
			return &f->ev[i];
	return NULL;
}

static bool c_event_text(void *ctx, const void *text)
{
	struct fx *f = ctx;
	return event_with_text(f, text) != NULL;
}

static struct rec_event *must_event(struct fx *f, const char *text)
{
	if (!run_until(f, c_event_text, text, TH_WAIT_MS)) {
		th_fail_dump(NULL, &f->room);
		fail_msg("no chat event '%s'", text);
	}
	return event_with_text(f, text);
}

/* --- tests ------------------------------------------------------------------------- */

static bool c_two_members(void *ctx, const void *arg)
{
	struct fx *f = ctx;
	(void)arg;
	return space_link_member_count(f->link) == 2;
}

/* The observer's roster holds Ada with an identity. */
static bool c_obs_has_identity(void *ctx, const void *arg)
{
	struct fx *f = ctx;
	(void)arg;
	const struct spc_member *m = spc_roster_find_name(spc_client_roster(f->obs), "Ada");
	return m && m->identity_json;
}

static void test_join_identity_presence(void **state)
{
	struct fx *f = *state;
	struct space_link_config c = link_cfg(f, "Ada");
	start_all(f, NULL, &c);
	assert_true(space_link_joined(f->link));
	const char *id = space_link_agent_id(f->link);
	assert_int_equal(strncmp(id, "Ada-", 4), 0);

	long j = must_see(f, (struct want){.type = "join", .name = "Ada"});
	/* space-protocol.md §7.2: a full agent sends all three */
	assert_int_equal(
	        cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f->seen[j], "capabilities")),
	        3);
	assert_string_equal(json_string_or(f->seen[j], "id", ""), id);
	long i = must_see(f, (struct want){.type = "identity", .name = "Ada"});
	assert_true(i > j); /* join first, then identity */
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(f->seen[i], "summary");
	assert_string_equal(json_string_or(s, "voice", ""), "plain");

	/* the engine's presence view: both members, ours marked (the other's
	 * join may reach the link a moment after its own) */
	assert_true(run_until(f, c_two_members, NULL, TH_WAIT_MS));
	size_t n = space_link_member_count(f->link);
	assert_int_equal(n, 2);
	int selves = 0;
	for (size_t k = 0; k < n; k++) {
		struct space_member_view v;
		assert_true(space_link_member_at(f->link, k, &v));
		if (v.self) {
			selves++;
			assert_string_equal(v.name, "Ada");
		} else {
			assert_string_equal(v.name, "Obs");
			assert_false(v.has_caps);
		}
	}
	assert_int_equal(selves, 1);
	struct space_member_view v;
	assert_false(space_link_member_at(f->link, 5, &v));
	assert_true(f->presences > 0);
	/* the observer's roster has our identity (it may come with a later
	 * presence: wait for the roster itself) */
	assert_true(run_until(f, c_obs_has_identity, NULL, TH_WAIT_MS));
	const struct spc_member *m = spc_roster_find_name(spc_client_roster(f->obs), "Ada");
	assert_non_null(m);
	assert_non_null(m->identity_json);
	assert_non_null(strstr(m->identity_json, "\"coreValues\":[\"care\"]"));
}

static void test_social_only(void **state)
{
	struct fx *f = *state;
	struct space_link_config c = link_cfg(f, "Sol");
	c.social_only = true;
	start_all(f, NULL, &c);
	long j = must_see(f, (struct want){.type = "join", .name = "Sol"});
	const cJSON *caps = cJSON_GetObjectItemCaseSensitive(f->seen[j], "capabilities");
	assert_int_equal(cJSON_GetArraySize(caps), 1);
	assert_true(space_link_member_has_cap(f->link, "Sol", "social"));
	assert_false(space_link_member_has_cap(f->link, "Sol", "github"));
	assert_false(space_link_member_has_cap(f->link, "Nobody", "social"));
}

/* How many GitHub logins the link knows of its peers; the first into arg
 * (a char[40]) when it is not NULL. */
static size_t peer_logins(struct fx *f, char *first)
{
	const char *v[8];
	size_t n = space_link_peer_logins(f->link, v, 8);
	if (first)
		snprintf(first, 40, "%s", n ? v[0] : "");
	return n;
}

static bool c_logins(void *ctx, const void *n)
{
	return peer_logins(ctx, NULL) == *(const size_t *)n;
}

static bool c_members(void *ctx, const void *n)
{
	struct fx *f = ctx;
	return space_link_member_count(f->link) == *(const size_t *)n;
}

/* The link's member `name` has an identity. */
static bool c_identity_of(void *ctx, const void *name)
{
	struct fx *f = ctx;
	for (size_t i = 0; i < space_link_member_count(f->link); i++) {
		struct space_member_view v;
		if (space_link_member_at(f->link, i, &v) && strcmp(v.name, name) == 0)
			return v.identity_json != NULL;
	}
	return false;
}

static void sol_stopped(void *ud)
{
	*(bool *)ud = true;
}

static bool c_flag(void *ctx, const void *flag)
{
	(void)ctx;
	return *(const bool *)flag;
}

/* A peer's githubLogin (an extra key of its identity summary) is learned
 * when its identity arrives and forgotten when it leaves; ours and a
 * social-only peer's are not among the peers' logins. */
static void test_peer_logins(void **state)
{
	struct fx *f = *state;
	struct space_link_config c = link_cfg(f, "Ada");
	c.identity_json = "{\"coreValues\":[],\"voice\":\"plain\",\"githubLogin\":\"ada-bot\"}";
	start_all(f, NULL, &c);
	size_t two = 2, zero = 0, one = 1, three = 3;
	assert_true(run_until(f, c_members, &two, TH_WAIT_MS));
	assert_int_equal(peer_logins(f, NULL), 0); /* ours is not a peer's */

	/* the observer says who it is on GitHub */
	spc_client_set_identity(f->obs, "{\"voice\":\"terse\",\"githubLogin\":\"Obs-Bot\"}");
	if (!run_until(f, c_logins, &one, TH_WAIT_MS))
		fail_msg("the observer's githubLogin was not learned");
	char first[40];
	peer_logins(f, first);
	assert_string_equal(first, "Obs-Bot");
	/* a later identity without it: no longer known */
	spc_client_set_identity(f->obs, "{\"voice\":\"terse\"}");
	assert_true(run_until(f, c_logins, &zero, TH_WAIT_MS));
	spc_client_set_identity(f->obs, "{\"voice\":\"terse\",\"githubLogin\":\"obs-bot\"}");
	assert_true(run_until(f, c_logins, &one, TH_WAIT_MS));

	/* a social-only agent (capabilities ["social"]) reviews no code */
	char url[64];
	snprintf(url, sizeof url, "ws://127.0.0.1:%d", f->room.port);
	const char *caps[] = {"social"};
	struct spc_client_config sc = {.name = "Sol",
	                               .id = "sol-1",
	                               .version = "1.0.0",
	                               .caps = caps,
	                               .ncaps = 1,
	                               .space_url = url,
	                               .identity_json = "{\"githubLogin\":\"sol-bot\"}"};
	spc_tunables_default(&sc.t);
	struct spc_client_events se = {0};
	struct ga_err err = {{0}};
	struct spc_client *sol = spc_client_new(&f->loop, &sc, &se, f, &err);
	assert_non_null(sol);
	spc_client_start(sol);
	assert_true(run_until(f, c_members, &three, TH_WAIT_MS));
	assert_true(run_until(f, c_identity_of, "Sol", TH_WAIT_MS));
	assert_int_equal(peer_logins(f, first), 1);
	assert_string_equal(first, "obs-bot");
	bool sol_done = false;
	spc_client_stop(sol, sol_stopped, &sol_done);
	assert_true(run_until(f, c_flag, &sol_done, TH_WAIT_MS));
	spc_client_free(sol);

	/* the observer leaves: forgotten with its identity */
	spc_client_stop(f->obs, obs_stopped, f);
	assert_true(run_until(f, c_members, &one, TH_WAIT_MS));
	assert_int_equal(peer_logins(f, NULL), 0);
	assert_true(run_until(f, c_flag, &f->obs_stopped, TH_WAIT_MS));
	spc_client_free(f->obs);
	f->obs = NULL;
	/* the bound: never more than asked for */
	const char *none[1];
	assert_int_equal(space_link_peer_logins(f->link, none, 0), 0);
}

static void test_chat_events(void **state)
{
	struct fx *f = *state;
	struct space_link_config c = link_cfg(f, "Ada");
	const char *env[] = {"SPACE_CHAT_INTERVAL_MS=0", NULL};
	start_all(f, env, &c);
	struct spc_who obs = {.name = "Obs", .id = "obs-1"};

	th_room_host(&f->room, "@Ada hello there");
	struct rec_event *e = must_event(f, "@Ada hello there");
	assert_int_equal(e->kind, SPACE_AUTHOR_HOST);
	assert_true(e->addressed_me);
	assert_int_equal(e->chain, 0);
	assert_string_equal(e->author, "host");
	assert_string_equal(e->conversation, "space:room");
	assert_int_equal(strlen(e->message_id), 6 + 32);
	assert_false(e->from_history);

	obs_send(f, spc_build_chat(&obs, "Ada, what do you think?", NULL, -1, 0));
	e = must_event(f, "Ada, what do you think?");
	assert_int_equal(e->kind, SPACE_AUTHOR_PEER);
	assert_true(e->addressed_me); /* the bare name, between word boundaries */
	/* none carried: 0 here; the store derives 1 (one agent message since
	 * the host's) and the gate takes the larger */
	assert_int_equal(e->chain, 0);
	assert_false(e->chain_explicit);

	obs_send(f, spc_build_chat(&obs, "a reply deep in a chain", "t-1", 5, 0));
	e = must_event(f, "a reply deep in a chain");
	assert_int_equal(e->chain, 5); /* as carried */
	assert_true(e->chain_explicit);
	assert_string_equal(e->thread, "t-1");
	assert_string_equal(e->conversation, "space:t-1");
	assert_false(e->addressed_me);

	obs_send(f, spc_build_chat(&obs, "hey @obs and @ADA: Adamant", NULL, 0, 0));
	e = must_event(f, "hey @obs and @ADA: Adamant");
	assert_int_equal(e->chain, 0); /* as carried: a rewrite to 0 is the store's to catch */
	assert_true(e->chain_explicit);
	assert_true(e->addressed_me);
	assert_int_equal(e->naddressed, 2);
	obs_send(f, spc_build_chat(&obs, "Adamant is not a name here", NULL, -1, 0));
	e = must_event(f, "Adamant is not a name here");
	assert_false(e->addressed_me);

	/* our own chat comes back as SELF */
	struct ga_err err = {{0}};
	assert_int_equal(space_link_say(f->link, "I can take it.", NULL, 1, say_done, f, &err), 0);
	e = must_event(f, "I can take it.");
	assert_int_equal(e->kind, SPACE_AUTHOR_SELF);

	/* a newcomer gets the history: events marked from_history, once */
	size_t before = f->nev;
	space_link_stop(f->link, link_stopped, f);
	assert_true(run_until(f, c_link_stopped, NULL, TH_WAIT_MS));
	space_link_free(f->link);
	f->link = NULL;
	struct space_link_config c2 = link_cfg(f, "Bea");
	start_link(f, &c2);
	size_t want = before + 6;
	if (!run_until(f, c_events, &want, TH_WAIT_MS))
		fail_msg("history was not replayed: %zu events", f->nev - before);
	for (size_t i = before; i < f->nev; i++)
		assert_true(f->ev[i].from_history);
	assert_int_equal(f->ev[before].kind, SPACE_AUTHOR_HOST);
	/* Ada's chat is a peer's for Bea */
	bool found = false;
	for (size_t i = before; i < f->nev; i++)
		if (strcmp(f->ev[i].text, "I can take it.") == 0) {
			assert_int_equal(f->ev[i].kind, SPACE_AUTHOR_PEER);
			found = true;
		}
	assert_true(found);
	run_for(f, 200);
	assert_int_equal(f->nev, want); /* nothing twice */
}

static size_t events_with_text(struct fx *f, const char *text)
{
	size_t n = 0;
	for (size_t i = 0; i < f->nev; i++)
		if (strcmp(f->ev[i].text, text) == 0)
			n++;
	return n;
}

/* The observer got, at index *from or later, a history_response holding
 * the chat "a peer before the restart". */
static bool c_replayed(void *ctx, const void *from)
{
	struct fx *f = ctx;
	for (size_t i = *(const size_t *)from; i < f->nseen; i++) {
		if (strcmp(json_string_or(f->seen[i], "type", ""), "history_response") != 0)
			continue;
		const cJSON *en;
		cJSON_ArrayForEach(en, cJSON_GetObjectItemCaseSensitive(f->seen[i], "entries"))
		{
			if (strcmp(json_string_or(en, "content", ""),
			           "a peer before the restart") == 0)
				return true;
		}
	}
	return false;
}

/* The same link across a room restart: the history the room replays after
 * the rejoin holds the chats seen live; none is handed up again. */
static void test_replay_after_reconnect_once(void **state)
{
	struct fx *f = *state;
	struct space_link_config c = link_cfg(f, "Ada");
	const char *env[] = {"SPACE_CHAT_INTERVAL_MS=0", NULL};
	start_all(f, env, &c);
	struct spc_who obs = {.name = "Obs", .id = "obs-1"};
	th_room_host(&f->room, "before the restart");
	must_event(f, "before the restart");
	obs_send(f, spc_build_chat(&obs, "a peer before the restart", NULL, 2, 0));
	struct rec_event *e = must_event(f, "a peer before the restart");
	char *mid = xstrdup(e->message_id);

	size_t from = f->nseen;
	th_room_stop(&f->room, SIGKILL);
	th_room_restart(&f->room);
	int two = 2;
	if (!run_until(f, c_joined, &two, TH_WAIT_MS)) {
		th_fail_dump(NULL, &f->room);
		fail_msg("the link did not rejoin");
	}
	th_room_host(&f->room, "after the restart");
	must_event(f, "after the restart");
	run_for(f, 300);
	assert_int_equal(events_with_text(f, "before the restart"), 1);
	assert_int_equal(events_with_text(f, "a peer before the restart"), 1);
	assert_int_equal(events_with_text(f, "after the restart"), 1);
	/* the room did replay them after the restart (its log survived): the
	 * observer's history_response, the same as the link's, holds them */
	assert_true(run_until(f, c_replayed, &from, TH_WAIT_MS));
	/* the one event is the live one, with the message id it had */
	e = event_with_text(f, "a peer before the restart");
	assert_string_equal(e->message_id, mid);
	assert_false(e->from_history);
	free(mid);
}

static void test_say_paced_with_typing(void **state)
{
	struct fx *f = *state;
	struct space_link_config c = link_cfg(f, "Ada");
	c.chat_interval_ms = 700;
	/* the room's rate limit is on (200 ms here, measured when the room
	 * processes a chat, so well under our 700 ms spacing on a loaded run):
	 * chats closer than that would be dropped with an error only we would
	 * see */
	const char *env[] = {"SPACE_CHAT_INTERVAL_MS=200", NULL};
	start_all(f, env, &c);
	struct ga_err err = {{0}};
	size_t from = f->nseen;
	assert_int_equal(space_link_say(f->link, "first", "t-9", 2, say_done, f, &err), 0);
	assert_int_equal(space_link_say(f->link, "second", NULL, -1, say_done, f, &err), 0);
	assert_int_equal(space_link_say(f->link, "third", NULL, -1, NULL, NULL, &err), 0);
	long t = must_see(f, (struct want){.type = "typing", .name = "Ada", .from = from});
	long c1 = must_see(f, (struct want){.type = "chat",
	                                    .name = "Ada",
	                                    .key = "content",
	                                    .val = "first",
	                                    .from = from});
	assert_true(t < c1); /* typing before the chat */
	assert_string_equal(json_string_or(f->seen[c1], "threadId", ""), "t-9");
	assert_int_equal(json_int_or(f->seen[c1], "chain", -1), 2); /* relayed by our room */
	long c2 = must_see(f, (struct want){.type = "chat",
	                                    .name = "Ada",
	                                    .key = "content",
	                                    .val = "second",
	                                    .from = (size_t)c1 + 1});
	must_see(f, (struct want){.type = "chat",
	                          .name = "Ada",
	                          .key = "content",
	                          .val = "third",
	                          .from = (size_t)c2 + 1});
	int two = 2;
	assert_true(run_until(f, c_says, &two, TH_WAIT_MS));
	assert_int_equal(f->says[0], SPACE_SAY_SENT);
	assert_int_equal(f->says[1], SPACE_SAY_SENT);
	/* a typing message before the second chat too */
	assert_true(find_seen(f, &(struct want){.type = "typing",
	                                        .name = "Ada",
	                                        .from = (size_t)c1 + 1}) < c2);

	/* refused input */
	assert_int_equal(space_link_say(f->link, " \n\t", NULL, -1, NULL, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "blank"));
	/* blank the way the room's JavaScript trim() sees it: NBSP, ideographic space */
	assert_int_equal(
	        space_link_say(f->link, "\xc2\xa0\xe3\x80\x80", NULL, -1, NULL, NULL, &err), -1);
	char *big = xmalloc(SPC_CHAT_MAX_UNITS + 2);
	memset(big, 'x', SPC_CHAT_MAX_UNITS + 1);
	big[SPC_CHAT_MAX_UNITS + 1] = '\0';
	assert_int_equal(space_link_say(f->link, big, NULL, -1, NULL, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "100000"));
	free(big);
	for (int i = 0; i < SPACE_LINK_MAX_PENDING; i++)
		assert_int_equal(space_link_say(f->link, "queued", NULL, -1, NULL, NULL, &err), 0);
	assert_int_equal(space_link_say(f->link, "one too many", NULL, -1, NULL, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "already waiting"));

	/* the pause grows with the text and is bounded */
	assert_int_equal(space_link_typing_delay(&c, "hello"), 55);
	assert_int_equal(space_link_typing_delay(&c, ""), 50);
	char longer[2000];
	memset(longer, 'y', sizeof longer - 1);
	longer[sizeof longer - 1] = '\0';
	assert_int_equal(space_link_typing_delay(&c, longer), 300);
	/* the room's reply delay (space-config.json) bounds it: a short text
	 * waits at least the minimum, a long one at most the maximum; with
	 * GA_SPACE_TYPING_* set in the environment the range is not applied */
	struct space_link_config r = c;
	r.typing_from_env = false;
	r.reply_delay_min_ms = 100;
	r.reply_delay_max_ms = 200;
	assert_int_equal(space_link_typing_delay(&r, "hello"), 100);
	assert_int_equal(space_link_typing_delay(&r, longer), 200);
	r.reply_delay_min_ms = 40;
	r.reply_delay_max_ms = 3000;
	assert_int_equal(space_link_typing_delay(&r, "hello"), 55);
	r.typing_from_env = true;
	r.reply_delay_min_ms = 100;
	r.reply_delay_max_ms = 200;
	assert_int_equal(space_link_typing_delay(&r, "hello"), 55);
}

static bool c_obs_holds(void *ctx, const void *arg)
{
	struct fx *f = ctx;
	(void)arg;
	const char *h = space_link_claim_holder(f->link, "create_issue", "o/r#1");
	return h && strcmp(h, "Obs") == 0;
}

static void test_state_and_claims(void **state)
{
	struct fx *f = *state;
	struct space_link_config c = link_cfg(f, "Ada");
	c.claim_renew_ms = 200;
	const char *env[] = {"SPACE_CLAIM_TTL_MS=1000", NULL};
	start_all(f, env, &c);
	struct spc_who obs = {.name = "Obs", .id = "obs-1"};
	struct ga_err err = {{0}};

	space_link_set_state(f->link, SPACE_STATE_ACTING, "fulfilling create_issue: o/r#1");
	must_see(f, (struct want){.type = "state", .name = "Ada", .key = "state", .val = "acting"});
	const struct spc_member *m = spc_roster_find_name(spc_client_roster(f->obs), "Ada");
	assert_string_equal(m->state_detail, "fulfilling create_issue: o/r#1");

	assert_int_equal(space_link_claim(f->link, "create_issue", "o/r#1", 0, &err), 0);
	must_see(f, (struct want){.type = "claim", .name = "Ada", .key = "target", .val = "o/r#1"});
	assert_true(space_link_holds(f->link, "create_issue", "o/r#1"));
	/* Renewed every 200 ms, the claim outlives the room's 1 s TTL: the
	 * observer's claim, 1.5 s later, is a conflict. */
	run_for(f, 1500);
	size_t from = f->nseen;
	obs_send(f, spc_build_claim(&obs, "create_issue", "o/r#1", 0, 0));
	long e = must_see(f, (struct want){.type = "error", .from = from});
	assert_non_null(strstr(json_string_or(f->seen[e], "message", ""), "Claim conflict"));
	assert_non_null(strstr(json_string_or(f->seen[e], "message", ""), "Ada claimed first"));

	/* released with an action_result; then the observer may claim */
	assert_int_equal(space_link_release(f->link, "create_issue", "o/r#1", true,
	                                    "https://example.invalid/1", NULL),
	                 0);
	assert_false(space_link_holds(f->link, "create_issue", "o/r#1"));
	long r = must_see(f, (struct want){.type = "action_result", .name = "Ada"});
	assert_string_equal(json_string_or(f->seen[r], "link", ""), "https://example.invalid/1");
	from = f->nseen;
	obs_send(f, spc_build_claim(&obs, "create_issue", "o/r#1", 0, 0));
	must_see(f, (struct want){.type = "claim", .name = "Obs", .from = from});

	/* now ours is the late claim: the room says conflict, the link drops
	 * it and tells the engine who holds it. (The link reads the claim's
	 * broadcast on its own socket: wait for it.) */
	assert_true(run_until(f, c_obs_holds, NULL, TH_WAIT_MS));
	assert_string_equal(space_link_claim_holder(f->link, "create_issue", "o/r#1"), "Obs");
	assert_int_equal(space_link_claim(f->link, "create_issue", "o/r#1", 0, &err), 0);
	int64_t end = th_now_ms() + TH_WAIT_MS;
	while (f->nlost == 0 && th_now_ms() < end)
		run_for(f, 20);
	assert_int_equal(f->nlost, 1);
	assert_string_equal(f->lost[0], "create_issue");
	assert_string_equal(f->lost[1], "o/r#1");
	assert_string_equal(f->lost[2], "Obs");
	assert_false(space_link_holds(f->link, "create_issue", "o/r#1"));

	/* refused claims */
	assert_int_equal(space_link_claim(f->link, " ", "x", 0, &err), -1);
	for (int i = 0; i < SPACE_LINK_MAX_CLAIMS; i++) {
		char t[32];
		snprintf(t, sizeof t, "t%d", i);
		assert_int_equal(space_link_claim(f->link, "a", t, 0, &err), 0);
	}
	assert_int_equal(space_link_claim(f->link, "a", "one more", 0, &err), -1);
	assert_int_equal(space_link_claim(f->link, "a", "t3", 0, &err), 0); /* a renewal */
}

static void test_reconnect_announces_again(void **state)
{
	struct fx *f = *state;
	struct space_link_config c = link_cfg(f, "Ada");
	c.typing_base_ms = 60000; /* a chat that is still "being typed" */
	c.typing_max_ms = 60000;
	start_all(f, NULL, &c);
	struct ga_err err = {{0}};
	space_link_set_state(f->link, SPACE_STATE_BLOCKED, "waiting for review");
	assert_int_equal(space_link_claim(f->link, "review", "o/r#7", 0, &err), 0);
	assert_int_equal(space_link_say(f->link, "almost done typing", NULL, -1, say_done, f, &err),
	                 0);
	long first = must_see(f, (struct want){.type = "claim", .name = "Ada"});
	/* a fresh claim says nothing of since when */
	assert_null(cJSON_GetObjectItem(f->seen[first], "since"));
	int64_t claimed_at = 0;
	assert_int_equal(
	        time_parse_iso(json_string_or(f->seen[first], "timestamp", ""), &claimed_at), 0);

	th_room_stop(&f->room, SIGKILL);
	int one = 1;
	assert_true(run_until(f, c_says, &one, TH_WAIT_MS));
	assert_int_equal(f->says[0], SPACE_SAY_DISCONNECTED);
	assert_false(space_link_joined(f->link));
	assert_true(f->lefts >= 1);
	assert_int_equal(space_link_member_count(f->link), 0);
	assert_int_equal(space_link_say(f->link, "while away", NULL, -1, NULL, NULL, &err), -1);

	th_room_restart(&f->room);
	int two = 2;
	if (!run_until(f, c_joined, &two, TH_WAIT_MS)) {
		th_fail_dump(NULL, &f->room);
		fail_msg("the link did not rejoin");
	}
	/* The room's log: after Ada's second join, her state and her claim
	 * again (the observer may rejoin after they were broadcast, so the
	 * log is the witness). */
	char path[400];
	snprintf(path, sizeof path, "%s/chat.jsonl", f->room.sr.data);
	bool ok = false;
	int64_t end = th_now_ms() + TH_WAIT_MS;
	while (!ok && th_now_ms() < end) {
		run_for(f, 20);
		FILE *lf = fopen(path, "r");
		if (!lf)
			continue;
		char line[2048];
		int joins = 0;
		bool st = false, cl = false;
		while (fgets(line, sizeof line, lf)) {
			if (!strstr(line, "\"agentName\":\"Ada\""))
				continue;
			if (strstr(line, "\"type\":\"join\""))
				joins++;
			else if (joins == 2 &&
			         strstr(line, "\"content\":\"blocked: waiting for review\""))
				st = true;
			else if (joins == 2 && strstr(line, "\"content\":\"review:o/r#7\""))
				cl = true;
		}
		fclose(lf);
		ok = st && cl;
	}
	if (!ok) {
		th_fail_dump(NULL, &f->room);
		fail_msg("state and claim were not announced again after the reconnect");
	}
	assert_true(space_link_holds(f->link, "review", "o/r#7"));
	/* The claim again is a new one to the restarted room; it said since
	 * when Ada holds it, and the room's page lists it since then (the
	 * page mirrors the broadcasts, so no observer can miss it). */
	cJSON *room = NULL;
	const cJSON *cl = NULL;
	end = th_now_ms() + TH_WAIT_MS;
	while (!cl && th_now_ms() < end) {
		cJSON_Delete(room);
		room = th_room_get_json(&f->room, "/api/room");
		const cJSON *claims = cJSON_GetObjectItem(room, "claims");
		for (int k = 0; !cl && k < cJSON_GetArraySize(claims); k++) {
			const cJSON *each = cJSON_GetArrayItem(claims, k);
			if (strcmp(json_string_or(each, "owner", ""), "Ada") == 0 &&
			    strcmp(json_string_or(each, "target", ""), "o/r#7") == 0)
				cl = each;
		}
		if (!cl)
			run_for(f, 20);
	}
	assert_non_null(cl);
	int64_t since = 0, at = 0;
	assert_int_equal(time_parse_iso(json_string_or(cl, "since", ""), &since), 0);
	assert_int_equal(time_parse_iso(json_string_or(cl, "at", ""), &at), 0);
	/* sent before the room stamped the first claim, and close to it */
	if (since > claimed_at || claimed_at - since > 5000)
		fail_msg("since %s, first claimed at %lld", json_string_or(cl, "since", ""),
		         (long long)claimed_at);
	assert_true(at > since);
	cJSON_Delete(room);
}

static void test_stop_and_free_in_every_phase(void **state)
{
	struct fx *f = *state;
	/* nothing listens there: stop while connecting / backing off */
	struct space_link_config c;
	space_link_config_init(&c, NULL);
	c.agent_name = "Nope";
	c.version = "0.1.0";
	c.space_url = "ws://127.0.0.1:1";
	struct space_link_handlers h = {0};
	struct ga_err err = {{0}};
	struct space_link *l = space_link_new(&f->loop, &c, &h, NULL, &err);
	assert_non_null(l);
	space_link_start(l);
	run_for(f, 50);
	space_link_stop(l, link_stopped, f);
	assert_true(run_until(f, c_link_stopped, NULL, TH_WAIT_MS));
	space_link_free(l);

	/* freed without a stop, mid-connect: torn down, no leak, no crash */
	l = space_link_new(&f->loop, &c, &h, NULL, &err);
	space_link_start(l);
	space_link_free(l);
	run_for(f, 50);

	/* freed while stopping */
	f->link_stopped = false;
	l = space_link_new(&f->loop, &c, &h, NULL, &err);
	space_link_start(l);
	run_for(f, 20);
	space_link_stop(l, link_stopped, f);
	space_link_free(l);
	run_for(f, 100);
	assert_false(f->link_stopped); /* free cancels the callback */

	/* never started */
	l = space_link_new(&f->loop, &c, &h, NULL, &err);
	space_link_free(l);
	run_for(f, 20);

	/* an unusable name is refused up front, naming it */
	char longname[200];
	memset(longname, 'n', 150);
	longname[150] = '\0';
	c.agent_name = longname;
	assert_null(space_link_new(&f->loop, &c, &h, NULL, &err));
	assert_non_null(strstr(err.msg, "UTF-16 units"));
	f->link_stopped = false;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_join_identity_presence, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_social_only, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_peer_logins, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_chat_events, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_replay_after_reconnect_once, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_say_paced_with_typing, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_state_and_claims, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_reconnect_announces_again, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_stop_and_free_in_every_phase, setup, teardown),
	};
	const char *filter = getenv("SPC_TEST_FILTER");
	if (filter)
		cmocka_set_test_filter(filter);
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	th_cleanup_all();
	return rc;
}
