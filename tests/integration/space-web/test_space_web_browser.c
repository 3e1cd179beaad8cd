/*
 * agent-space's read-only page in real headless Chromium (cdp.h, from
 * tests/integration/dashboard) against the built agent-space, with real
 * WebSocket members (the conformance harness):
 *   - a chat sent by a member appears on the page within a second, with its
 *     chain; a member joining shows up, one leaving goes;
 *   - presence: state and typing; claims and their release;
 *   - members' identities (from the snapshot and live), last reflection and
 *     workspace state on their cards with the plan's pull requests (state,
 *     who acts next, since; a link only to GitHub), a hostile identity as
 *     text;
 *   - a hostile chat is text, never markup;
 *   - the page cannot speak: no form, no input, a POST from it gets 405,
 *     and the room's log holds only what the members said;
 *   - the shutdown shows as a banner.
 * Screenshots go to <build>/artifacts/space/ (space-room.png is the one in
 * docs/space.png).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first */
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cdp.h"
#include "common/timeutil.h"
#include "tests/integration/space/harness.h"
#include "testutil.h"

/* Issue 14: a chat appears on the page within a second. A sanitizer build
 * (ASan+UBSan, several times slower on a loaded CI machine) gets 3 s; the
 * measured time is printed either way. */
#ifdef GA_TEST_SANITIZED
#define APPEAR_WITHIN_MS 3000
#else
#define APPEAR_WITHIN_MS 1000
#endif

static struct cdp B;
static char artifacts[512];

static int setup(void **state)
{
	(void)state;
	cdp_artifacts_dir("space", artifacts, sizeof artifacts);
	return cdp_start(&B);
}

static int teardown(void **state)
{
	(void)state;
	cdp_stop(&B);
	return 0;
}

static void test_browser_present(void **state)
{
	(void)state;
	cJSON *v = cdp_call(&B, false, "Browser.getVersion", NULL);
	const cJSON *p = cJSON_GetObjectItem(v, "product");
	assert_true(cJSON_IsString(p));
	printf("browser: %s\n", p->valuestring);
	cJSON_Delete(v);
}

static void open_room(struct space *s)
{
	char url[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/", s->port);
	cdp_open_page(&B, url);
	cdp_wait_true(&B, "document.getElementById('live-state').textContent === 'live'",
	              CDP_WAIT_MS);
}

#define MEMBER(name) "document.querySelector('#members li[data-name=\"" name "\"]')"

static void test_room_live(void **state)
{
	const char *const env[] = {"SPACE_CHAT_INTERVAL_MS=0", NULL};
	struct space *s = space_start(env);
	struct ws_client *ada = h_join(s, "Ada", "ada-1");
	h_send(ada, "{\"type\":\"chat\",\"content\":\"good morning, room\"}");
	h_expect(s, ada, "chat");
	h_send(ada, "{\"type\":\"identity\",\"summary\":{\"coreValues\":[\"curiosity\",\"care\"],"
	            "\"currentInterests\":[\"type systems\"],\"voice\":\"Plain and warm\","
	            "\"expertise\":[\"C\",\"libuv\"],\"recentWork\":\"Shipped the room page\","
	            "\"soulEssence\":\"Builds small tools that last.\"}}");
	h_expect(s, ada, "identity");
	h_send(ada,
	       "{\"type\":\"workspace_state\",\"workspace\":\"acme/widgets\",\"planNumber\":4,"
	       "\"totalTasks\":9,\"completedTasks\":3,\"blockedTasks\":1,\"inProgressTasks\":2,"
	       "\"pulls\":[{\"repo\":\"acme/widgets\",\"number\":12,\"title\":\"Add the page\","
	       "\"url\":\"https://github.com/acme/widgets/pull/12\",\"task\":3,\"author\":"
	       "\"ada\",\"reviewer\":\"bob\",\"state\":\"awaiting_review\",\"next\":\"bob\","
	       "\"since\":\"2026-11-28T14:02:00.000Z\"},{\"repo\":\"acme/widgets\",\"number\":"
	       "11,\"state\":\"changes_requested\",\"next\":\"ada\",\"revisions\":1,"
	       "\"url\":\"javascript:alert(1)\"}]}");
	h_expect(s, ada, "workspace_state");
	open_room(s);
	/* Ada's identity and workspace, from the snapshot */
	cdp_wait_true(
	        &B,
	        "!!" MEMBER("Ada") " && " MEMBER(
	                "Ada") ".querySelector('[data-role=identity] .essence').textContent "
	                       "=== 'Builds small tools that last.' && " MEMBER(
	                               "Ada") ".querySelector('[data-role=identity]').textContent."
	                                      "includes("
	                                      "'values: curiosity, care') && " MEMBER(
	                                              "Ada") ".querySelector('[data-role=workspace]"
	                                                     "').textContent.includes("
	                                                     "'acme/widgets · plan 4 · 3/9 done')",
	        10000);
	assert_true(cdp_eval_true(&B, MEMBER("Ada") ".title.includes('expertise: C, libuv')"));
	/* her plan's pull requests: state, who acts next, since; a link only
	 * to GitHub */
	cdp_wait_true(&B, MEMBER("Ada") ".querySelectorAll('[data-role=pulls] li').length === 2",
	              10000);
	assert_true(cdp_eval_true(
	        &B, MEMBER("Ada") ".querySelector('[data-pull=\"12\"]').textContent.startsWith("
	                          "'acme/widgets#12 awaiting review — bob to act, since ')"));
	assert_true(cdp_eval_true(&B,
	                          MEMBER("Ada") ".querySelector('[data-pull=\"12\"] a').href "
	                                        "=== 'https://github.com/acme/widgets/pull/12'"));
	assert_true(cdp_eval_true(
	        &B, MEMBER("Ada") ".querySelector('[data-pull=\"11\"]').textContent === "
	                          "'acme/widgets#11 changes requested — ada to act, 1 revision'"));
	assert_true(cdp_eval_true(&B, MEMBER("Ada") ".querySelector('[data-pull=\"11\"] a') === "
	                                            "null"));
	/* and the page's list of each plan's pull requests */
	cdp_wait_true(
	        &B,
	        "document.querySelectorAll('#plans [data-plan=\"acme/widgets#4\"] li').length "
	        "=== 2 && document.querySelector('#plans .plan-head').textContent.startsWith("
	        "'acme/widgets · plan 4 reported by Ada') && "
	        "document.getElementById('plans-empty').classList.contains('hidden')",
	        10000);
	/* the snapshot: the member and what was said before the page opened */
	cdp_wait_true(&B,
	              "!!" MEMBER("Ada") " && document.getElementById('room-name').textContent === "
	                                 "'space-test' && [...document.querySelectorAll('#chat "
	                                 "li.chat')].some(l => l.textContent.includes('good "
	                                 "morning, room'))",
	              10000);

	/* a member joining shows up */
	long t0 = cdp_mono_ms();
	struct ws_client *bob = h_join(s, "Bob", "bob-1");
	long waited = cdp_wait_true(&B, "!!" MEMBER("Bob"), 10000);
	printf("Bob on the page %ld ms after his join (polled %ld ms)\n", cdp_mono_ms() - t0,
	       waited);
	assert_true(cdp_eval_true(&B, "document.getElementById('member-count').textContent === "
	                              "'2 members'"));

	/* Bob's identity live, within a second */
	t0 = cdp_mono_ms();
	h_send(bob, "{\"type\":\"identity\",\"summary\":{\"soulEssence\":\"Reviews with care.\","
	            "\"voice\":\"Terse and kind\",\"expertise\":[\"review\"]}}");
	cdp_wait_true(&B,
	              MEMBER("Bob") " && " MEMBER("Bob") ".querySelector('[data-role=identity] "
	                                                 ".essence')?.textContent === 'Reviews "
	                                                 "with care.'",
	              10000);
	long ident_ms = cdp_mono_ms() - t0;
	printf("identity on the page %ld ms after it was sent\n", ident_ms);
	if (ident_ms > APPEAR_WITHIN_MS)
		fail_msg("the identity took %ld ms to appear (within %d ms)", ident_ms,
		         APPEAR_WITHIN_MS);
	assert_true(cdp_eval_true(&B, MEMBER("Bob") ".textContent.includes('voice: Terse and "
	                                            "kind')"));
	h_send(bob, "{\"type\":\"reflection\",\"summary\":\"Short reviews land better than long "
	            "ones.\"}");
	cdp_wait_true(&B,
	              MEMBER("Bob") ".querySelector('[data-role=reflection]')?.textContent."
	                            "includes('Short reviews land better')",
	              10000);

	/* a chat appears within a second, with its chain */
	t0 = cdp_mono_ms();
	h_send(ada, "{\"type\":\"chat\",\"content\":\"Bob, can you review PR 12?\",\"chain\":2}");
	cdp_wait_true(&B,
	              "[...document.querySelectorAll('#chat li.chat[data-name=\"Ada\"]')].some(l "
	              "=> l.textContent.includes('Bob, can you review PR 12?'))",
	              10000);
	long took = cdp_mono_ms() - t0;
	printf("chat on the page %ld ms after it was sent\n", took);
	if (took > APPEAR_WITHIN_MS)
		fail_msg("the chat took %ld ms to appear (issue 14: within %d ms)", took,
		         APPEAR_WITHIN_MS);
	assert_true(cdp_eval_true(
	        &B, "[...document.querySelectorAll('#chat li.chat[data-name=\"Ada\"]')].pop()"
	            ".querySelector('.badge.chain').textContent === 'chain 2'"));

	/* presence: state with its detail, typing */
	h_send(bob, "{\"type\":\"state\",\"state\":\"thinking\",\"detail\":\"reading PR 12\"}");
	cdp_wait_true(
	        &B,
	        MEMBER("Bob") ".querySelector('.state').textContent === 'thinking' && " MEMBER(
	                "Bob") ".textContent.includes('reading PR 12')",
	        10000);
	h_send(bob, "{\"type\":\"typing\"}");
	cdp_wait_true(&B, "!!" MEMBER("Bob") ".querySelector('.typing')", 10000);

	/* a claim, then its release */
	h_send(bob, "{\"type\":\"claim\",\"action\":\"review\",\"target\":\"PR 12\"}");
	cdp_wait_true(&B,
	              "!!document.querySelector('#claims tbody tr[data-owner=\"Bob\"]') && "
	              "document.querySelector('#claims tbody').textContent.includes('PR 12') && "
	              "[...document.querySelectorAll('#chat li.event.claim')].some(l => "
	              "l.textContent.includes('Bob claimed review PR 12'))",
	              10000);
	/* the host, addressing Ada */
	space_host(s, "@Ada thanks, go ahead");
	cdp_wait_true(&B,
	              "[...document.querySelectorAll('#chat li.chat.host')].some(l => "
	              "l.textContent.includes('thanks, go ahead') && "
	              "l.querySelector('.badge.addressed').textContent === '→ Ada')",
	              10000);
	usleep(1600 * 1000); /* the highlight of new lines fades (for the picture) */
	cdp_screenshot(&B, artifacts, "space-room.png");
	/* a hostile chat is text */
	h_send(ada, "{\"type\":\"chat\",\"content\":\"<img src=x onerror=\\\"window.pwned=1\\\">"
	            "<b>bold?</b>\"}");
	cdp_wait_true(&B,
	              "[...document.querySelectorAll('#chat li.chat')].some(l => "
	              "l.textContent.includes('<img src=x onerror'))",
	              10000);
	assert_true(cdp_eval_true(&B,
	                          "window.pwned === undefined && !document.querySelector('#chat "
	                          "img') && !document.querySelector('#chat b')"));
	/* a hostile identity is text too: a peer's strings, never markup */
	h_send(bob,
	       "{\"type\":\"identity\",\"summary\":{\"soulEssence\":\"<script>window.pwned=3"
	       "</script>\",\"voice\":\"<img src=x onerror=\\\"window.pwned=2\\\"><i>terse</i>\","
	       "\"<b>key</b>\":[\"<a href=javascript:alert(1)>x</a>\"]}}");
	cdp_wait_true(&B,
	              MEMBER("Bob") ".textContent.includes('voice: <img src=x onerror') && " MEMBER(
	                      "Bob") ".textContent.includes('<b>key</b>: <a href=javascript')",
	              10000);
	assert_true(cdp_eval_true(
	        &B, "window.pwned === undefined && !document.querySelector('#members img, #members "
	            "i, #members b, #members a:not([href^=\"https://github.com/\"]), #members "
	            "script') && " MEMBER("Bob") ".querySelector('.essence').textContent === "
	                                         "'<script>window.pwned=3</script>'"));
	cdp_screenshot(&B, artifacts, "space-hostile-chat.png");

	h_send(bob, "{\"type\":\"action_result\",\"action\":\"review\",\"target\":\"PR 12\","
	            "\"success\":true,\"link\":\"https://example.org/pr/12#review\"}");
	cdp_wait_true(&B,
	              "!document.querySelector('#claims tbody tr') && "
	              "[...document.querySelectorAll('#chat li.event.action_result')].some(l => "
	              "l.textContent.includes('succeeded'))",
	              10000);

	/* read-only: nothing to type in, and the server refuses a POST */
	assert_true(cdp_eval_true(
	        &B,
	        "document.querySelectorAll('form, input, textarea, button, select').length === 0"));
	cJSON *st = cdp_eval(&B, "fetch('api/room', {method: 'POST', body: '{\"type\":\"chat\"}'})"
	                         ".then(r => r.status)");
	assert_int_equal(st->valueint, 405);
	cJSON_Delete(st);
	/* 2 joins, 2 chats of Ada before it, the state is logged, 1 claim, the
	 * host, the hostile chat, the result: only what members and the host said */
	assert_int_equal(h_count_log_entries(s, "chat", NULL, NULL), 4);
	assert_int_equal(h_count_log_entries(s, "chat", "host", NULL), 1);

	/* a member leaving goes */
	h_close(s, bob);
	cdp_wait_true(&B,
	              "!" MEMBER("Bob") " && [...document.querySelectorAll('#chat "
	                                "li.event.leave')].some(l => l.textContent.includes('Bob "
	                                "left'))",
	              10000);
	/* the shutdown */
	kill(s->pid, SIGTERM);
	cdp_wait_true(&B,
	              "!document.getElementById('banner').classList.contains('hidden') && "
	              "document.getElementById('banner').textContent.includes('shutting down')",
	              10000);
	assert_int_equal(space_wait_exit(s, H_TIMEOUT_MS), 0);
	assert_int_equal(s->exit_status, 0);
	cdp_wait_true(&B, "document.getElementById('live-state').textContent === 'offline'", 10000);
	space_pass(s);
}

#define CLAIM_ROW(owner) "document.querySelector('#claims tbody tr[data-owner=\"" owner "\"]')"
/* The page's time of day for an ISO time, as app.js writes it. */
#define PAGE_TIME(iso_js) "new Date(Date.parse(" iso_js ")).toLocaleTimeString()"

/* A claim shows its own time: after its owner drops out (the room forgets
 * its claims) and rejoins, the claim made again with "since" is listed
 * since then, not since the rejoin, and its feed line says it is held since
 * then. Every join line of the feed shows a time like the other lines. */
static void test_claim_own_time(void **state)
{
	const char *const env[] = {"SPACE_CHAT_INTERVAL_MS=0", NULL};
	struct space *s = space_start(env);
	struct ws_client *ada = h_join(s, "Ada", "ada-1");
	struct ws_client *bob = h_join(s, "Bob", "bob-1");
	open_room(s);
	cdp_wait_true(&B, "!!" MEMBER("Ada") " && !!" MEMBER("Bob"), 10000);
	/* the join lines (from the snapshot, and one live) carry their time */
	struct ws_client *cy = h_join(s, "Cy", "cy-1");
	cdp_wait_true(&B, "!!" MEMBER("Cy"), 10000);
	cdp_wait_true(
	        &B,
	        "(() => { const j = [...document.querySelectorAll('#chat li.event.join')]; "
	        "return j.length === 3 && j.every(l => l.title && l.textContent === " PAGE_TIME(
	                "l.title") " + ' · ' + l.dataset.name + ' joined (1.0.0)'); })()",
	        10000);
	h_close(s, cy);

	/* a fresh claim: held since its own time, the time it was made */
	h_send(ada, "{\"type\":\"claim\",\"action\":\"review\",\"target\":\"PR 12\"}");
	cJSON *m = h_expect_where(s, bob, "claim", h_pred_name, "Ada");
	char made[TIME_ISO_LEN + 8];
	snprintf(made, sizeof made, "'%s'", h_str(m, "timestamp"));
	cdp_wait_true(&B, "!!" CLAIM_ROW("Ada"), 10000);
	char js[1024];
	snprintf(js, sizeof js,
	         CLAIM_ROW("Ada") ".querySelector('[data-role=since]').textContent === 'since ' + "
	                          "new Date(Date.parse(%s)).toLocaleTimeString()",
	         made);
	assert_true(cdp_eval_true(&B, js));

	/* Ada drops out: the room forgets her claim */
	h_close(s, ada);
	cdp_wait_true(&B, "!" MEMBER("Ada") " && !" CLAIM_ROW("Ada"), 10000);
	/* she rejoins and claims it again, held since ten minutes ago */
	ada = h_join(s, "Ada", "ada-1");
	char since[TIME_ISO_LEN + 1];
	time_format_iso(time_now_ms() - 10 * 60000, since);
	h_send(ada,
	       "{\"type\":\"claim\",\"action\":\"review\",\"target\":\"PR 12\",\"since\":\"%s\"}",
	       since);
	snprintf(js, sizeof js,
	         "!!" CLAIM_ROW("Ada") " && " CLAIM_ROW(
	                 "Ada") ".querySelector('[data-role=since]').textContent === 'since ' + "
	                        "new Date(Date.parse('%s')).toLocaleTimeString() && "
	                        "[...document.querySelectorAll('#chat li.event.claim')].some(l => "
	                        "l.textContent.endsWith('Ada claimed review PR 12 — held since ' + "
	                        "new Date(Date.parse('%s')).toLocaleTimeString() + ', re-claimed "
	                        "after a rejoin'))",
	         since, since);
	cdp_wait_true(&B, js, 10000);
	/* the first claim's line says nothing of the kind */
	assert_true(cdp_eval_true(
	        &B, "[...document.querySelectorAll('#chat li.event.claim')].filter(l => "
	            "l.textContent.includes('held since')).length === 1"));
	cdp_wait_true(&B, "!!" MEMBER("Ada"), 10000); /* the member list, for the picture */
	cdp_screenshot(&B, artifacts, "space-claim-since.png");
	space_pass(s);
}

int main(void)
{
	space_test_filter_from_env();
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_browser_present),
	        cmocka_unit_test_teardown(test_room_live, space_teardown),
	        cmocka_unit_test_teardown(test_claim_own_time, space_teardown),
	};
	return cmocka_run_group_tests_name("agent-space page in chromium", tests, setup, teardown);
}
