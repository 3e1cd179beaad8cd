/*
 * The fulfilment cycle (modules/fulfil/fulfil.h) on a real uv loop with the
 * real ledger, journal, outbound and scheduler, and a test port for GitHub:
 *   - a create_issue is sent once with its key, completed, the owner told;
 *   - post_bluesky waits, pending, while outbound has no Bluesky port;
 *   - a social-only agent never fulfils a GitHub commitment;
 *   - a refusing port: 3 attempts, then abandoned, the owner told it could
 *     not (nothing in any room); config.abandoned hears of it once, after
 *     the third attempt, with the ledger's entry (a stale one too; a
 *     completed one never);
 *   - an "unknown" answer: the attempt fails, the next one reconciles first
 *     (absent → sent again, once);
 *   - a commitment whose key the journal already holds as done is
 *     completed without a send (a crash between journal and ledger).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/commitments/ledger.h"
#include "modules/fulfil/fulfil.h"
#include "modules/journal/journal.h"
#include "modules/outbound/outbound.h"
#include "modules/scheduler/sched.h"
#include "tests/unit/llm/testloop.h"
#include "testutil.h"

struct later {
	uv_timer_t t;
	outbound_port_done_fn done;
	void (*rdone)(void *ud, int exists, const char *artifact);
	void *ud;
	int ok;
	char url[128];
};

static void later_closed_ws(uv_handle_t *h)
{
	free(h->data);
}

struct fx {
	uv_loop_t loop;
	char *dir;
	struct ledger ledger;
	struct journal *j;
	struct outbound *ob;
	struct sched *s;
	struct fulfil *f;
	/* the port */
	int sends, reconciles;
	int answers[8]; /* per send: 1 ok, 0 refused, -1 unknown */
	int reconcile_answer;
	unsigned send_delay_ms; /* 0: 2 ms */
	int64_t timeout_ms;     /* the in-progress timeout, 0: default */
	char last_target[128], last_key[128], last_text[512];
	/* the owner */
	int told;
	char owner_text[512];
	bool flag;
	/* config.abandoned */
	int abandoned;
	char ab_id[LEDGER_ID_MAX], ab_source[32], ab_error[256];
	int ab_attempts;
	enum ledger_status ab_status;
	/* config.peer_done: a member reported this target done */
	const char *peer_target;
	int peer_asked;
	/* config.create_workspace: the workspace module's answer */
	bool ws_on;
	int ws_calls;
	const char *ws_answer; /* the JSON text, or the error sentence */
	bool ws_ok;
	char ws_org[64], ws_name[64];
};

struct ws_later {
	uv_timer_t t;
	fulfil_ws_answer_fn done;
	void *ud;
	bool ok;
	const char *text;
};

static void ws_fire(uv_timer_t *t)
{
	struct ws_later *l = t->data;
	l->done(l->ud, l->ok, l->text);
	uv_close((uv_handle_t *)t, later_closed_ws);
}

static bool ws_on(void *ud)
{
	return ((struct fx *)ud)->ws_on;
}

static int ws_create(void *ud, const char *org, const char *name, const char *description,
                     const char *thread, fulfil_ws_answer_fn done, void *done_ud,
                     struct ga_err *err)
{
	(void)description;
	(void)thread;
	(void)err;
	struct fx *f = ud;
	f->ws_calls++;
	snprintf(f->ws_org, sizeof f->ws_org, "%s", org);
	snprintf(f->ws_name, sizeof f->ws_name, "%s", name);
	struct ws_later *l = calloc(1, sizeof *l);
	l->done = done;
	l->ud = done_ud;
	l->ok = f->ws_ok;
	l->text = f->ws_answer;
	uv_timer_init(&f->loop, &l->t);
	l->t.data = l;
	uv_timer_start(&l->t, ws_fire, 2, 0);
	return 0;
}

static void later_closed(uv_handle_t *h)
{
	free(h->data);
}

static void fire(uv_timer_t *t)
{
	struct later *l = t->data;
	if (l->done)
		l->done(l->ud, l->ok, l->ok == 1 ? l->url : NULL, l->ok ? "timed out" : "HTTP 422");
	else
		l->rdone(l->ud, l->ok, NULL);
	uv_close((uv_handle_t *)t, later_closed);
}

static int port_send(void *ud, const struct outbound_send *s, outbound_port_done_fn done,
                     void *done_ud)
{
	struct fx *f = ud;
	struct later *l = xcalloc(1, sizeof *l);
	l->done = done;
	l->ud = done_ud;
	l->ok = f->answers[f->sends < 8 ? f->sends : 7];
	snprintf(l->url, sizeof l->url, "https://github.com/acme/widgets/issues/%d", f->sends + 1);
	f->sends++;
	snprintf(f->last_target, sizeof f->last_target, "%s", s->target);
	snprintf(f->last_key, sizeof f->last_key, "%s", s->idem_key);
	snprintf(f->last_text, sizeof f->last_text, "%.*s", (int)s->text_len, s->text);
	uv_timer_init(&f->loop, &l->t);
	l->t.data = l;
	uv_timer_start(&l->t, fire, f->send_delay_ms ? f->send_delay_ms : 2, 0);
	return 0;
}

static void port_reconcile(void *ud, const char *key, const char *target,
                           void (*done)(void *done_ud, int exists, const char *artifact),
                           void *done_ud)
{
	(void)key;
	(void)target;
	struct fx *f = ud;
	f->reconciles++;
	struct later *l = xcalloc(1, sizeof *l);
	l->rdone = done;
	l->ud = done_ud;
	l->ok = f->reconcile_answer;
	uv_timer_init(&f->loop, &l->t);
	l->t.data = l;
	uv_timer_start(&l->t, fire, 2, 0);
}

static void notify(void *ud, const char *text)
{
	struct fx *f = ud;
	f->told++;
	snprintf(f->owner_text, sizeof f->owner_text, "%s", text);
}

static void on_abandoned(void *ud, const struct ledger_entry *e)
{
	struct fx *f = ud;
	f->abandoned++;
	snprintf(f->ab_id, sizeof f->ab_id, "%s", e->id);
	snprintf(f->ab_source, sizeof f->ab_source, "%s", e->source);
	snprintf(f->ab_error, sizeof f->ab_error, "%s", e->error ? e->error : "");
	f->ab_attempts = e->attempts;
	f->ab_status = e->status;
}

static bool peer_done(void *ud, const char *action, const char *target, char *who, size_t who_cap,
                      char *link, size_t link_cap)
{
	struct fx *f = ud;
	f->peer_asked++;
	if (!f->peer_target || strcmp(action, "create_issue") != 0 ||
	    strcmp(target, f->peer_target) != 0)
		return false;
	snprintf(who, who_cap, "Ts-agent");
	snprintf(link, link_cap, "https://github.com/acme/widgets/issues/7");
	return true;
}

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	uv_loop_init(&f->loop);
	f->dir = tu_tempdir();
	struct ga_err e = {{0}};
	assert_int_equal(ledger_open(&f->ledger, f->dir, &e), 0);
	f->j = journal_open(f->dir, &e);
	assert_non_null(f->j);
	struct outbound_config oc = {.memory_dir = f->dir, .agent_name = "ada", .journal = f->j};
	f->ob = outbound_new(&f->loop, &oc, &e);
	assert_non_null(f->ob);
	struct outbound_port p = {.platform = CONV_PLATFORM_GITHUB,
	                          .send = port_send,
	                          .reconcile = port_reconcile,
	                          .marker_in_text = true,
	                          .ud = f};
	assert_int_equal(outbound_add_port(f->ob, &p, &e), 0);
	f->s = sched_new(&f->loop, "ada");
	for (int i = 0; i < 8; i++)
		f->answers[i] = 1;
	*state = f;
	return 0;
}

static void start(struct fx *f, bool social_only)
{
	struct ga_err e = {{0}};
	struct fulfil_config c = {.loop = &f->loop,
	                          .sched = f->s,
	                          .ledger = &f->ledger,
	                          .journal = f->j,
	                          .outbound = f->ob,
	                          .agent_name = "ada",
	                          .social_only = social_only,
	                          .interval_ms = 20,
	                          .in_progress_timeout_ms = f->timeout_ms,
	                          .notify_owner = notify,
	                          .abandoned = on_abandoned,
	                          .peer_done = peer_done,
	                          .workspaces_on = ws_on,
	                          .create_workspace = ws_create,
	                          .ud = f};
	f->f = fulfil_new(&c, &e);
	assert_non_null(f->f);
}

static void set_flag(void *ud)
{
	*(bool *)ud = true;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	bool stopped = false, closed = false;
	fulfil_quiesce(f->f);
	sched_stop(f->s, set_flag, &stopped);
	testloop_run_until(&f->loop, &stopped);
	outbound_close(f->ob, set_flag, &closed);
	testloop_run_until(&f->loop, &closed);
	fulfil_free(f->f);
	sched_close(f->s);
	testloop_drain(&f->loop);
	sched_free(f->s);
	uv_loop_close(&f->loop);
	journal_close(f->j);
	ledger_close(&f->ledger);
	tu_rmrf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static void add(struct fx *f, const char *action, const char *json, char id[LEDGER_ID_MAX])
{
	cJSON *p = cJSON_Parse(json);
	struct ga_err e = {{0}};
	assert_int_equal(ledger_add(&f->ledger, action, "owner", p, time_now_ms(), id, &e),
	                 LEDGER_ADDED);
	cJSON_Delete(p);
}

static enum ledger_status status_of(struct fx *f, const char *id)
{
	struct ledger_entry e;
	assert_int_equal(ledger_get(&f->ledger, id, &e), 0);
	return e.status;
}

/* Runs the loop until id has status st (10 s guard). */
static void until(struct fx *f, const char *id, enum ledger_status st)
{
	uint64_t end = time_mono_ms() + TESTLOOP_GUARD_MS;
	while (status_of(f, id) != st && time_mono_ms() < end)
		uv_run(&f->loop, UV_RUN_ONCE);
	if (status_of(f, id) != st)
		fail_msg("%s is %s, not %s", id, ledger_status_name(status_of(f, id)),
		         ledger_status_name(st));
}

/* Runs the loop for about ms (nothing must happen meanwhile). */
static void run_for(struct fx *f, uint64_t ms)
{
	uint64_t end = time_mono_ms() + ms;
	while (time_mono_ms() < end)
		uv_run(&f->loop, UV_RUN_ONCE);
}

#define ISSUE "{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"Flaky test\"}"

static void test_sent_once_and_told(void **state)
{
	struct fx *f = *state;
	char id[LEDGER_ID_MAX];
	add(f, "create_issue", ISSUE, id);
	start(f, false);
	until(f, id, LEDGER_COMPLETED);
	assert_int_equal(f->sends, 1);
	assert_string_equal(f->last_target, "github:acme:widgets:new-issue");
	char key[LEDGER_IDEM_KEY_MAX];
	ledger_idem_key(id, key);
	assert_string_equal(f->last_key, key);
	assert_non_null(strstr(f->last_text, "<!-- ga:key="));
	assert_int_equal(journal_state_of(f->j, key), JOURNAL_DONE);
	assert_string_equal(f->owner_text,
	                    "Done — Flaky test: https://github.com/acme/widgets/issues/1");
	run_for(f, 100);
	assert_int_equal(f->sends, 1);
	assert_int_equal(f->abandoned, 0);
	struct fulfil_stats st;
	fulfil_stats(f->f, &st);
	assert_true(st.cycles >= 3);
	assert_int_equal(st.completed, 1);
	cJSON *s = fulfil_status(f->f);
	assert_int_equal(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(s, "commitments"), "completed")->valueint,
	        1);
	cJSON_Delete(s);
}

#define WS_URL "https://github.com/acme/www-lil-intdev-site"
#define WS_CREATED                                                                                 \
	"{\"found\":true,\"name\":\"www-lil-intdev-site\",\"fullName\":"                           \
	"\"acme/www-lil-intdev-site\",\"url\":\"" WS_URL "\",\"created\":true}"
#define WS_FOUND                                                                                   \
	"{\"found\":true,\"name\":\"www-lil-intdev-site\",\"fullName\":"                           \
	"\"acme/www-lil-intdev-site\",\"url\":\"" WS_URL "\",\"created\":false}"

/* create_workspace goes to the workspace module's create (never a send of
 * its own): waits while workspaces are off; created → completed with the
 * link, announced, journalled; once done, never asked again. */
static void test_workspace_created(void **state)
{
	struct fx *f = *state;
	char id[LEDGER_ID_MAX];
	add(f, "create_workspace", "{\"owner\":\"acme\",\"title\":\"Acme Site\"}", id);
	f->ws_answer = WS_CREATED;
	f->ws_ok = true;
	start(f, false);
	run_for(f, 100);
	assert_int_equal(f->ws_calls, 0); /* off: pending, untouched */
	assert_int_equal(status_of(f, id), LEDGER_PENDING);
	f->ws_on = true;
	until(f, id, LEDGER_COMPLETED);
	assert_int_equal(f->ws_calls, 1);
	assert_int_equal(f->sends, 0);
	assert_string_equal(f->ws_org, "acme");
	assert_string_equal(f->ws_name, "acme-site");
	assert_string_equal(f->owner_text, "Done — Acme Site: " WS_URL);
	struct ledger_entry e;
	assert_int_equal(ledger_get(&f->ledger, id, &e), 0);
	assert_string_equal(e.link, WS_URL);
	char key[LEDGER_IDEM_KEY_MAX];
	ledger_idem_key(id, key);
	assert_int_equal(journal_state_of(f->j, key), JOURNAL_DONE);
	assert_string_equal(journal_artifact(f->j, key), WS_URL);
	run_for(f, 100);
	assert_int_equal(f->ws_calls, 1);
}

/* The organisation had its workspace: completed with its link, and what is
 * said is that it exists (not "Done"). A refusal is a failed attempt; the
 * third abandons it. */
static void test_workspace_exists_and_refused(void **state)
{
	struct fx *f = *state;
	char id[LEDGER_ID_MAX], id2[LEDGER_ID_MAX];
	add(f, "create_workspace", "{}", id);
	f->ws_on = true;
	f->ws_ok = true;
	f->ws_answer = WS_FOUND;
	start(f, false);
	until(f, id, LEDGER_COMPLETED);
	assert_int_equal(f->ws_calls, 1);
	assert_string_equal(f->ws_org, "");
	assert_string_equal(f->ws_name, "workspace");
	assert_string_equal(f->owner_text,
	                    "The workspace acme/www-lil-intdev-site already exists: " WS_URL);
	f->ws_ok = false;
	f->ws_answer = "the repositories of beta were not read: HTTP 500";
	add(f, "create_workspace", "{\"owner\":\"beta\"}", id2);
	until(f, id2, LEDGER_ABANDONED);
	assert_int_equal(f->ws_calls, 4);
	struct ledger_entry e;
	assert_int_equal(ledger_get(&f->ledger, id2, &e), 0);
	assert_string_equal(e.error, "the repositories of beta were not read: HTTP 500");
	assert_non_null(strstr(f->owner_text, "Could not create_workspace"));
}

/* A member of the room reported the work done under either of its names
 * (here the TypeScript agent's bare title): completed with their link, no
 * send, nothing said — the ledger knows the link; the promise form is asked
 * too. */
static void test_done_by_peer_quietly(void **state)
{
	struct fx *f = *state;
	f->peer_target = "Flaky test";
	char id[LEDGER_ID_MAX];
	add(f, "create_issue", ISSUE, id);
	start(f, false);
	until(f, id, LEDGER_COMPLETED);
	run_for(f, 100);
	assert_int_equal(f->sends, 0);
	assert_int_equal(f->told, 0);
	assert_true(f->peer_asked >= 2);
	struct ledger_entry e;
	assert_int_equal(ledger_get(&f->ledger, id, &e), 0);
	assert_string_equal(e.link, "https://github.com/acme/widgets/issues/7");
	/* the promise form is a name of the work too */
	f->peer_target = "acme/widgets#Other thing";
	add(f, "create_issue",
	    "{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"Other thing\"}", id);
	until(f, id, LEDGER_COMPLETED);
	assert_int_equal(f->sends, 0);
}

static void test_waits_without_port_or_in_social_only(void **state)
{
	struct fx *f = *state;
	char post[LEDGER_ID_MAX], issue[LEDGER_ID_MAX];
	add(f, "post_bluesky", "{\"text\":\"hello\"}", post);
	add(f, "create_issue", ISSUE, issue);
	start(f, true);
	run_for(f, 200);
	struct fulfil_stats st;
	fulfil_stats(f->f, &st);
	assert_true(st.cycles >= 3);
	assert_int_equal(status_of(f, post), LEDGER_PENDING);
	assert_int_equal(status_of(f, issue), LEDGER_PENDING);
	assert_int_equal(f->sends, 0);
	assert_int_equal(f->told, 0);
}

static void test_refused_three_times_abandoned(void **state)
{
	struct fx *f = *state;
	for (int i = 0; i < 8; i++)
		f->answers[i] = 0;
	char id[LEDGER_ID_MAX];
	add(f, "create_issue", ISSUE, id);
	start(f, false);
	until(f, id, LEDGER_ABANDONED);
	assert_int_equal(f->sends, 3);
	struct ledger_entry e;
	ledger_get(&f->ledger, id, &e);
	assert_int_equal(e.attempts, 3);
	assert_non_null(strstr(e.error, "HTTP 422"));
	assert_int_equal(f->told, 1);
	assert_non_null(
	        strstr(f->owner_text, "Could not create_issue (Flaky test) after 3 attempts"));
	/* told once, with the entry as the ledger has it now */
	assert_int_equal(f->abandoned, 1);
	assert_string_equal(f->ab_id, id);
	assert_string_equal(f->ab_source, "owner");
	assert_int_equal(f->ab_status, LEDGER_ABANDONED);
	assert_int_equal(f->ab_attempts, 3);
	assert_non_null(strstr(f->ab_error, "HTTP 422"));
	run_for(f, 100);
	assert_int_equal(f->sends, 3);
	assert_int_equal(f->abandoned, 1);
}

/* Stale (24 h without being done): abandoned by the sweep, no attempt
 * made, and config.abandoned hears of it. */
static void test_stale_abandoned_told(void **state)
{
	struct fx *f = *state;
	cJSON *p = cJSON_Parse(ISSUE);
	char id[LEDGER_ID_MAX];
	struct ga_err e = {{0}};
	assert_int_equal(ledger_add(&f->ledger, "create_issue", "space", p,
	                            time_now_ms() - 25LL * 3600 * 1000, id, &e),
	                 LEDGER_ADDED);
	cJSON_Delete(p);
	start(f, false);
	until(f, id, LEDGER_ABANDONED);
	assert_int_equal(f->sends, 0);
	assert_int_equal(f->abandoned, 1);
	assert_string_equal(f->ab_id, id);
	assert_string_equal(f->ab_source, "space");
	assert_non_null(strstr(f->ab_error, "Stale"));
	run_for(f, 100);
	assert_int_equal(f->abandoned, 1);
}

static void test_unknown_reconciled_then_sent(void **state)
{
	struct fx *f = *state;
	f->answers[0] = -1;      /* the first send may have been made */
	f->reconcile_answer = 0; /* GitHub has nothing with the key */
	char id[LEDGER_ID_MAX];
	add(f, "create_issue", ISSUE, id);
	start(f, false);
	until(f, id, LEDGER_COMPLETED);
	assert_int_equal(f->sends, 2);
	assert_int_equal(f->reconciles, 1);
	struct ledger_entry e;
	ledger_get(&f->ledger, id, &e);
	assert_int_equal(e.attempts, 2);
}

static void test_unknown_found_not_resent(void **state)
{
	struct fx *f = *state;
	f->answers[0] = -1;
	f->reconcile_answer = 1; /* it was made */
	char id[LEDGER_ID_MAX];
	add(f, "create_issue", ISSUE, id);
	start(f, false);
	until(f, id, LEDGER_COMPLETED);
	assert_int_equal(f->sends, 1);
	assert_int_equal(f->reconciles, 1);
}

static void test_journal_done_completes_without_send(void **state)
{
	struct fx *f = *state;
	char id[LEDGER_ID_MAX], key[LEDGER_IDEM_KEY_MAX];
	add(f, "create_issue", ISSUE, id);
	ledger_idem_key(id, key);
	struct ga_err e = {{0}};
	assert_int_equal(
	        journal_intent(f->j, key, "github", "github:acme:widgets:new-issue", NULL, 1, &e),
	        0);
	assert_int_equal(journal_done(f->j, key, "https://github.com/acme/widgets/issues/7", 2, &e),
	                 0);
	start(f, false);
	until(f, id, LEDGER_COMPLETED);
	assert_int_equal(f->sends, 0);
	assert_string_equal(f->owner_text,
	                    "Done — Flaky test: https://github.com/acme/widgets/issues/7");
}

static void test_repo_cooldown_defers(void **state)
{
	struct fx *f = *state;
	struct ga_err e = {{0}};
	for (int i = 0; i < FULFIL_COOLDOWN_FAILURES; i++) {
		char id[LEDGER_ID_MAX], json[160];
		snprintf(json, sizeof json,
		         "{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"Old %d\"}", i);
		add(f, "create_issue", json, id);
		assert_int_equal(ledger_set_status(&f->ledger, id, LEDGER_ABANDONED, time_now_ms(),
		                                   "HTTP 422", &e),
		                 0);
	}
	char id[LEDGER_ID_MAX], other[LEDGER_ID_MAX];
	add(f, "create_issue", ISSUE, id);
	add(f, "create_issue", "{\"owner\":\"acme\",\"repo\":\"gadgets\",\"title\":\"T\"}", other);
	start(f, false);
	until(f, other, LEDGER_COMPLETED);
	run_for(f, 100);
	/* deferred, not failed: no attempt used */
	struct ledger_entry le;
	ledger_get(&f->ledger, id, &le);
	assert_int_equal(le.status, LEDGER_PENDING);
	assert_int_equal(le.attempts, 0);
	assert_int_equal(f->sends, 1);
	assert_string_equal(f->last_target, "github:acme:gadgets:new-issue");
	cJSON *s = fulfil_status(f->f);
	cJSON *cd = cJSON_GetArrayItem(cJSON_GetObjectItem(s, "repoCooldowns"), 0);
	assert_non_null(cd);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cd, "repo")), "acme/widgets");
	cJSON_Delete(s);
}

static void test_watchdog_then_journal_wins(void **state)
{
	struct fx *f = *state;
	f->timeout_ms = 30;     /* the attempt times out … */
	f->send_delay_ms = 300; /* … long before the platform answers "made" */
	char id[LEDGER_ID_MAX];
	add(f, "create_issue", ISSUE, id);
	start(f, false);
	until(f, id, LEDGER_FAILED);
	struct ledger_entry le;
	ledger_get(&f->ledger, id, &le);
	assert_non_null(strstr(le.error, "Timed out"));
	/* the late answer is the journal's done; the next cycle completes it
	 * from there: one send in all */
	until(f, id, LEDGER_COMPLETED);
	assert_int_equal(f->sends, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_workspace_created, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_workspace_exists_and_refused, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_sent_once_and_told, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_done_by_peer_quietly, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_waits_without_port_or_in_social_only, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_refused_three_times_abandoned, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_stale_abandoned_told, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_unknown_reconciled_then_sent, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_unknown_found_not_resent, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_journal_done_completes_without_send, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_repo_cooldown_defers, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_watchdog_then_journal_wins, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
