/*
 * What agents say about themselves besides chat, in
 * process, against a real `agent-space`: the link (modules/space/link) or
 * the runtime (modules/space/runtime) under test and an observer member (a
 * bare adapters/space client) share one libuv loop.
 *
 *   - space_link_send_reflection / space_link_send_workspace_state reach
 *     the other member in the wire shape of space-protocol.md §2.3; blank,
 *     too long, negative and not-joined are refused with a reason;
 *   - a peer's reflection and workspace states are kept by the link (the
 *     latest per peer / per workspace, our own not at all), bounded (the
 *     oldest workspace dropped), and forgotten when the peer leaves; a
 *     peer's claim frame is reported (on_peer_claim), ours is not;
 *   - space_runtime_send_reflection and space_runtime_refresh_identity
 *     (SELF.md read again) against the room; -1 before the join.
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

#include "common/config.h"
#include "common/fsx.h"
#include "common/json.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "modules/outbound/outbound.h"
#include "modules/outbound/perms.h"
#include "modules/space/link.h"
#include "modules/space/runtime.h"
#include "tests/integration/space-client/harness.h"

#define MAX_OBS 512

struct fx {
	uv_loop_t loop;
	struct th_room room;
	bool room_up;
	char dir[256];
	struct state_store st;
	struct space_link *link;
	struct space_runtime *rt;
	struct outbound *ob; /* the runtime's broadcasts walk it */
	bool ob_closed;
	struct spc_client *obs;
	bool link_stopped, rt_stopped, obs_stopped;
	int joins;
	char claims[4][160]; /* "name action target" of on_peer_claim */
	int nclaims;
	cJSON *seen[MAX_OBS]; /* what the observer received, in order */
	size_t nseen;
};

static void on_connection(void *ud, bool joined, const char *why)
{
	(void)why;
	if (joined)
		((struct fx *)ud)->joins++;
}

static void on_peer_claim(void *ud, const char *name, const char *action, const char *target)
{
	struct fx *f = ud;
	if (f->nclaims < 4)
		snprintf(f->claims[f->nclaims++], sizeof f->claims[0], "%s %s %s", name, action,
		         target);
}

static void on_obs_message(void *ud, const struct spc_msg *m, unsigned changed)
{
	(void)changed;
	struct fx *f = ud;
	if (f->nseen < MAX_OBS)
		f->seen[f->nseen++] = cJSON_Duplicate(m->root, 1);
}

static void on_wake(uv_timer_t *t)
{
	(void)t;
}

static bool run_until(struct fx *f, bool (*cond)(struct fx *, const void *), const void *arg,
                      int timeout_ms)
{
	uv_timer_t wake;
	uv_timer_init(&f->loop, &wake);
	uv_timer_start(&wake, on_wake, 10, 10);
	int64_t end = th_now_ms() + timeout_ms;
	bool ok = false;
	for (;;) {
		if (cond && cond(f, arg)) {
			ok = true;
			break;
		}
		if (th_now_ms() > end)
			break;
		uv_run(&f->loop, UV_RUN_ONCE);
	}
	uv_close((uv_handle_t *)&wake, NULL);
	uv_run(&f->loop, UV_RUN_NOWAIT);
	return ok;
}

/* The observer saw a message of type from name whose string field key
 * equals val (key NULL: any). */
struct want {
	const char *type, *name, *key, *val;
};

static long find_seen(struct fx *f, const struct want *w)
{
	for (size_t i = 0; i < f->nseen; i++) {
		const cJSON *m = f->seen[i];
		if (strcmp(json_string_or(m, "type", ""), w->type) != 0)
			continue;
		if (w->name && strcmp(json_string_or(m, "name", ""), w->name) != 0)
			continue;
		if (w->key) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, w->key);
			if (!cJSON_IsString(v) || !strstr(v->valuestring, w->val))
				continue;
		}
		return (long)i;
	}
	return -1;
}

static bool c_seen(struct fx *f, const void *w)
{
	return find_seen(f, w) >= 0;
}

static const cJSON *must_see(struct fx *f, struct want w)
{
	if (!run_until(f, c_seen, &w, TH_WAIT_MS)) {
		th_fail_dump(NULL, &f->room);
		fail_msg("the observer never saw %s from %s", w.type, w.name ? w.name : "anyone");
	}
	return f->seen[find_seen(f, &w)];
}

static void room_url(struct fx *f, char *url, size_t cap)
{
	snprintf(url, cap, "ws://127.0.0.1:%d", f->room.port);
}

static void start_observer(struct fx *f)
{
	char url[64];
	room_url(f, url, sizeof url);
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

static bool c_obs_joined(struct fx *f, const void *arg)
{
	(void)arg;
	return f->obs && spc_client_state(f->obs) == SPC_JOINED;
}

static bool c_link_joined(struct fx *f, const void *arg)
{
	(void)arg;
	return f->joins > 0 && c_obs_joined(f, NULL);
}

static void start_link(struct fx *f, const char *name)
{
	static char url[64];
	room_url(f, url, sizeof url);
	struct space_link_config c;
	space_link_config_init(&c, NULL);
	c.agent_name = name;
	c.version = "0.1.0";
	c.space_url = url;
	c.st = &f->st;
	uint64_t fast[] = {100, 200};
	memcpy(c.t.backoff_ms, fast, sizeof fast);
	c.t.nbackoff = 2;
	struct space_link_handlers h = {.on_connection = on_connection,
	                                .on_peer_claim = on_peer_claim};
	struct ga_err err = {{0}};
	f->link = space_link_new(&f->loop, &c, &h, f, &err);
	if (!f->link)
		fail_msg("space_link_new: %s", err.msg);
	space_link_start(f->link);
}

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	log_init(getenv("SPC_DEBUG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_ERROR, 0, NULL);
	uv_loop_init(&f->loop);
	const char *base = getenv("TMPDIR");
	snprintf(f->dir, sizeof f->dir, "%s/part-notes-XXXXXX", base && *base ? base : "/tmp");
	assert_non_null(mkdtemp(f->dir));
	th_track_dir(f->dir);
	struct ga_err err = {{0}};
	assert_int_equal(state_store_init(&f->st, f->dir, "0.1.0", &err), 0);
	th_room_start(&f->room, 0, NULL, false);
	f->room_up = true;
	start_observer(f);
	*state = f;
	return 0;
}

static void link_stopped(void *ud)
{
	((struct fx *)ud)->link_stopped = true;
}

static void rt_stopped(void *ud)
{
	((struct fx *)ud)->rt_stopped = true;
}

static void obs_stopped(void *ud)
{
	((struct fx *)ud)->obs_stopped = true;
}

static bool c_all_stopped(struct fx *f, const void *arg)
{
	(void)arg;
	return (!f->link || f->link_stopped) && (!f->rt || f->rt_stopped) &&
	       (!f->obs || f->obs_stopped);
}

static void ob_closed(void *ud)
{
	((struct fx *)ud)->ob_closed = true;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (f->link)
		space_link_stop(f->link, link_stopped, f);
	if (f->rt)
		space_runtime_stop(f->rt, rt_stopped, f);
	if (f->obs)
		spc_client_stop(f->obs, obs_stopped, f);
	run_until(f, c_all_stopped, NULL, TH_WAIT_MS);
	space_link_free(f->link);
	space_runtime_free(f->rt);
	if (f->ob)
		outbound_close(f->ob, ob_closed, f);
	spc_client_free(f->obs);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	int rc = uv_loop_close(&f->loop);
	if (f->room_up)
		th_room_stop(&f->room, SIGTERM);
	state_store_free(&f->st);
	for (size_t i = 0; i < f->nseen; i++)
		cJSON_Delete(f->seen[i]);
	th_cleanup_all();
	free(f);
	assert_int_equal(rc, 0); /* every handle closed */
	return 0;
}

/* --- sending ------------------------------------------------------------------------ */

static void test_link_sends_reflection_and_workspace_state(void **state)
{
	struct fx *f = *state;
	start_link(f, "Ada");
	struct ga_err err = {{0}};
	/* not joined yet: refused, naming why */
	assert_int_equal(space_link_send_reflection(f->link, "early", &err), -1);
	assert_non_null(strstr(err.msg, "not joined"));
	assert_true(run_until(f, c_link_joined, NULL, TH_WAIT_MS));

	assert_int_equal(space_link_send_reflection(f->link, "Short replies land better.", &err),
	                 0);
	const cJSON *r = must_see(f, (struct want){.type = "reflection", .name = "Ada"});
	assert_string_equal(json_string_or(r, "summary", ""), "Short replies land better.");
	assert_string_equal(json_string_or(r, "id", ""), space_link_agent_id(f->link));

	assert_int_equal(
	        space_link_send_workspace_state(f->link, "acme/widgets", 4, 9, 3, 1, 2, &err), 0);
	const cJSON *w = must_see(f, (struct want){.type = "workspace_state", .name = "Ada"});
	assert_string_equal(json_string_or(w, "workspace", ""), "acme/widgets");
	assert_int_equal(json_int_or(w, "planNumber", -1), 4);
	assert_int_equal(json_int_or(w, "totalTasks", -1), 9);
	assert_int_equal(json_int_or(w, "completedTasks", -1), 3);
	assert_int_equal(json_int_or(w, "blockedTasks", -1), 1);
	assert_int_equal(json_int_or(w, "inProgressTasks", -1), 2);

	/* refusals, each with its reason; nothing of them reaches the room */
	assert_int_equal(space_link_send_reflection(f->link, " \t\n", &err), -1);
	assert_non_null(strstr(err.msg, "blank"));
	assert_int_equal(space_link_send_reflection(f->link, NULL, &err), -1);
	char *big = xmalloc(SPACE_LINK_REFLECTION_MAX_UNITS + 2);
	memset(big, 'r', SPACE_LINK_REFLECTION_MAX_UNITS + 1);
	big[SPACE_LINK_REFLECTION_MAX_UNITS + 1] = '\0';
	assert_int_equal(space_link_send_reflection(f->link, big, &err), -1);
	assert_non_null(strstr(err.msg, "5001 UTF-16 units"));
	big[SPACE_LINK_REFLECTION_MAX_UNITS] = '\0'; /* exactly the limit passes */
	assert_int_equal(space_link_send_reflection(f->link, big, &err), 0);
	free(big);
	assert_int_equal(space_link_send_workspace_state(f->link, "", 1, 1, 0, 0, 0, &err), -1);
	assert_non_null(strstr(err.msg, "blank"));
	assert_int_equal(space_link_send_workspace_state(f->link, "x", 1, 5, -1, 0, 0, &err), -1);
	assert_non_null(strstr(err.msg, "completedTasks is -1"));
	/* the room answered none of them with an error */
	assert_true(run_until(
	        f, c_seen,
	        &(struct want){
	                .type = "reflection", .name = "Ada", .key = "summary", .val = "rrrr"},
	        TH_WAIT_MS));
	assert_int_equal(find_seen(f, &(struct want){.type = "error"}), -1);
}

/* --- keeping the peers' notes -------------------------------------------------------- */

static bool c_reflections(struct fx *f, const void *n)
{
	return space_link_reflection_count(f->link) == *(const size_t *)n;
}

static bool c_workspaces(struct fx *f, const void *n)
{
	return space_link_workspace_count(f->link) == *(const size_t *)n;
}

/* n workspaces kept and the newest is name: the last frame arrived (a
 * count alone is reached one frame before the eviction it must show). */
static bool c_workspace_last(struct fx *f, const void *name)
{
	struct space_workspace_view v;
	size_t n = space_link_workspace_count(f->link);
	return n == SPACE_LINK_MAX_WORKSPACES && space_link_workspace_at(f->link, n - 1, &v) &&
	       strcmp(v.workspace, name) == 0;
}

static bool c_refl_says(struct fx *f, const void *text)
{
	struct space_reflection_view v;
	return space_link_reflection_at(f->link, 0, &v) && strcmp(v.summary, text) == 0;
}

static bool c_claims(struct fx *f, const void *n)
{
	return f->nclaims >= *(const int *)n;
}

static void test_link_keeps_peers_notes(void **state)
{
	struct fx *f = *state;
	start_link(f, "Ada");
	assert_true(run_until(f, c_link_joined, NULL, TH_WAIT_MS));
	struct spc_who obs = {.name = "Obs", .id = "obs-1"};
	struct ga_err err = {{0}};

	/* our own are not kept */
	assert_int_equal(space_link_send_reflection(f->link, "mine", &err), 0);
	assert_int_equal(space_link_send_workspace_state(f->link, "own/ws", 1, 2, 1, 0, 0, &err),
	                 0);
	must_see(f, (struct want){.type = "workspace_state", .name = "Ada"});

	assert_int_equal(spc_client_send(f->obs, spc_build_reflection(&obs, "first", 0)), 0);
	assert_int_equal(spc_client_send(f->obs, spc_build_reflection(&obs, "second\ttake", 0)), 0);
	assert_true(run_until(f, c_refl_says, "second take", TH_WAIT_MS)); /* controls → spaces */
	assert_int_equal(space_link_reflection_count(f->link), 1);         /* the latest per peer */
	struct space_reflection_view rv;
	assert_true(space_link_reflection_at(f->link, 0, &rv));
	assert_string_equal(rv.name, "Obs");
	assert_true(rv.time_ms > 0);
	assert_false(space_link_reflection_at(f->link, 1, &rv));

	/* workspaces: the latest per workspace; past the bound the oldest goes */
	for (int i = 0; i <= SPACE_LINK_MAX_WORKSPACES; i++) {
		char m[200];
		snprintf(m, sizeof m,
		         "{\"type\":\"workspace_state\",\"workspace\":\"ws-%d\",\"planNumber\":%d,"
		         "\"totalTasks\":10.7,\"completedTasks\":%d,\"inProgressTasks\":\"x\"}",
		         i, i, i % 10);
		assert_int_equal(spc_client_send(f->obs, xstrdup(m)), 0);
	}
	char last[32];
	snprintf(last, sizeof last, "ws-%d", SPACE_LINK_MAX_WORKSPACES);
	assert_true(run_until(f, c_workspace_last, last, TH_WAIT_MS));
	struct space_workspace_view wv;
	assert_true(space_link_workspace_at(f->link, 0, &wv));
	assert_string_equal(wv.workspace, "ws-1"); /* ws-0 dropped; "own/ws" never kept */
	assert_true(space_link_workspace_at(f->link, SPACE_LINK_MAX_WORKSPACES - 1, &wv));
	assert_string_equal(wv.workspace, "ws-16");
	assert_string_equal(wv.reporter, "Obs");
	assert_int_equal(wv.plan, 16);
	assert_int_equal(wv.total, 10); /* a fraction truncated */
	assert_int_equal(wv.completed, 6);
	assert_int_equal(wv.in_progress, 0); /* not a number: the room sends 0 */
	assert_false(space_link_workspace_at(f->link, SPACE_LINK_MAX_WORKSPACES, &wv));

	/* a peer's claim frame is reported; our own is not */
	assert_int_equal(space_link_claim(f->link, "create_issue", "acme/widgets#Mine", 0, &err),
	                 0);
	assert_int_equal(
	        spc_client_send(f->obs, spc_build_claim(&obs, "create_issue",
	                                                "acme/widgets#Login times out", 0, 0)),
	        0);
	int one = 1;
	assert_true(run_until(f, c_claims, &one, TH_WAIT_MS));
	run_until(f, NULL, NULL, 200);
	assert_int_equal(f->nclaims, 1);
	assert_string_equal(f->claims[0], "Obs create_issue acme/widgets#Login times out");

	/* the peer leaves: its reflection and its workspaces are forgotten */
	spc_client_stop(f->obs, obs_stopped, f);
	size_t zero = 0;
	assert_true(run_until(f, c_reflections, &zero, TH_WAIT_MS));
	assert_true(run_until(f, c_workspaces, &zero, TH_WAIT_MS));
}

/* --- the runtime ----------------------------------------------------------------------- */

static bool c_rt_joined(struct fx *f, const void *arg)
{
	(void)arg;
	return space_link_joined(space_runtime_link(f->rt)) && c_obs_joined(f, NULL);
}

/* memory's send audit (the fixture's dir is the memory dir); caller frees */
static char *audit_text(struct fx *f)
{
	char path[320];
	snprintf(path, sizeof path, "%s/send_audit.jsonl", f->dir);
	struct ga_err err = {{0}};
	char *s = fsx_read_file(path, 1 << 20, NULL, &err);
	assert_non_null(s);
	return s;
}

static void test_runtime_reflection_and_identity(void **state)
{
	struct fx *f = *state;
	char url[64];
	room_url(f, url, sizeof url);
	char self_path[320];
	snprintf(self_path, sizeof self_path, "%s/SELF.md", f->dir);
	FILE *fp = fopen(self_path, "w");
	assert_non_null(fp);
	fputs("# Ada\n\n## Current Interests\n- type systems\n", fp);
	fclose(fp);

	struct ga_config gc;
	memset(&gc, 0, sizeof gc);
	gc.home = f->dir;
	gc.memory_dir = f->dir;
	gc.agent_name = "Ada";
	gc.space_url = url;
	struct config_space_tunables *t = &gc.space;
	int64_t *unset[] = {&t->mdns_timeout_ms,    &t->mdns,
	                    &t->discovery_retry_ms, &t->jitter_pct,
	                    &t->connect_timeout_ms, &t->ping_ms,
	                    &t->close_wait_ms,      &t->replaced_limit,
	                    &t->replaced_window_ms, &t->typing_base_ms,
	                    &t->typing_per_char_ms, &t->typing_max_ms,
	                    &t->chat_interval_ms,   &t->claim_renew_ms};
	for (size_t i = 0; i < sizeof unset / sizeof unset[0]; i++)
		*unset[i] = -1;
	t->backoff_ms[0] = 100;
	t->nbackoff = 1;
	struct ga_err err = {{0}};
	struct outbound_config oc = {.memory_dir = f->dir, .agent_name = "Ada"};
	f->ob = outbound_new(&f->loop, &oc, &err);
	assert_non_null(f->ob);
	struct space_runtime_config rc = {.cfg = &gc,
	                                  .st = &f->st,
	                                  .soul_text = "I care about small tools.",
	                                  .version = "0.1.0",
	                                  .outbound = f->ob};
	f->rt = space_runtime_start(&f->loop, &rc, &err);
	assert_non_null(f->rt);
	/* before the join: -1 for both; the refreshed summary is kept */
	assert_int_equal(space_runtime_send_reflection(f->rt, "too early"), -1);
	assert_int_equal(space_runtime_refresh_identity(f->rt), -1);
	assert_true(run_until(f, c_rt_joined, NULL, TH_WAIT_MS));
	const cJSON *id0 = must_see(f, (struct want){.type = "identity", .name = "Ada"});
	const cJSON *ints0 = cJSON_GetObjectItemCaseSensitive(
	        cJSON_GetObjectItemCaseSensitive(id0, "summary"), "currentInterests");
	assert_string_equal(cJSON_GetArrayItem(ints0, 0)->valuestring, "type systems");

	assert_int_equal(space_runtime_send_reflection(f->rt, "Listening first works."), 0);
	must_see(f, (struct want){.type = "reflection",
	                          .name = "Ada",
	                          .key = "summary",
	                          .val = "Listening first works."});
	assert_int_equal(space_runtime_send_reflection(f->rt, ""), -1);
	/* the broadcast walked outbound: the audit holds it, allowed */
	char *audit = audit_text(f);
	assert_non_null(strstr(audit, "\"source\":\"reflection\""));
	assert_non_null(strstr(audit, "\"verdict\":\"allow\""));
	assert_null(strstr(audit, "\"verdict\":\"deny\""));
	free(audit);
	/* a denylist that names the room refuses the next one: audited, never
	 * heard in the room */
	struct perms *pm = perms_new();
	perms_set_mode(pm, PERMS_DENYLIST);
	assert_int_equal(perms_add(pm, PERMS_LIST_DENY, "space:*", &err), 1);
	char ppath[320];
	snprintf(ppath, sizeof ppath, "%s/send_permissions.json", f->dir);
	assert_int_equal(perms_save(pm, ppath, &err), 0);
	perms_free(pm);
	assert_int_equal(space_runtime_send_reflection(f->rt, "Denied words stay home."), 0);
	run_until(f, NULL, NULL, 500);
	for (size_t i = 0; i < f->nseen; i++)
		assert_null(strstr(
		        json_string_or(cJSON_GetObjectItemCaseSensitive(f->seen[i], "summary"), "",
		                       ""),
		        "Denied words"));
	audit = audit_text(f);
	assert_non_null(strstr(audit, "\"verdict\":\"deny\""));
	assert_non_null(strstr(audit, "\"pattern\":\"space:*\""));
	free(audit);
	unlink(ppath);

	/* SELF.md changed by a reflection cycle: the room hears the new interests */
	fp = fopen(self_path, "w");
	assert_non_null(fp);
	fputs("# Ada\n\n## Current Interests\n- loop prevention\n", fp);
	fclose(fp);
	assert_int_equal(space_runtime_refresh_identity(f->rt), 0);
	bool found = false;
	int64_t end = th_now_ms() + TH_WAIT_MS;
	while (!found && th_now_ms() < end) {
		run_until(f, NULL, NULL, 50);
		for (size_t i = 0; i < f->nseen && !found; i++) {
			if (strcmp(json_string_or(f->seen[i], "type", ""), "identity") != 0)
				continue;
			const cJSON *s = cJSON_GetObjectItemCaseSensitive(f->seen[i], "summary");
			const cJSON *ints = cJSON_GetObjectItemCaseSensitive(s, "currentInterests");
			const cJSON *first = cJSON_GetArrayItem(ints, 0);
			found = cJSON_IsString(first) &&
			        strcmp(first->valuestring, "loop prevention") == 0;
		}
	}
	assert_true(found);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_link_sends_reflection_and_workspace_state,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_link_keeps_peers_notes, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_runtime_reflection_and_identity, setup,
	                                        teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	th_cleanup_all();
	return rc;
}
