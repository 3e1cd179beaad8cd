/*
 * The dashboard's pages in real headless Chromium (Debian `chromium`,
 * installed by scripts/bootstrap.sh), driven over the DevTools protocol on
 * a pipe (cdp.h). Against dash_host, a stand-in for the agent: the real
 * dashboard, decision log and pipeline, but no room, no model and no
 * composer — its messages are injected on its stdin and nothing is ever
 * answered or sent. (test_dashboard_agent.c watches the real general-agent
 * in a real room: its answers, and no answer while paused from the page.)
 *   - a decision on an injected message appears on the page within a
 *     second;
 *   - a click on it shows the message's whole story (why);
 *   - the Pause button pauses the pipeline (persisted), and the next
 *     message is stopped at the gate, rule "paused", on the page too;
 *     Resume undoes it;
 *   - every tab renders what the API holds (the plans tab: each pull
 *     request with its review state, who acts next and since when);
 *   - with a token: #token=… in the address opens it and leaves the
 *     address bar; without, the page asks for it.
 * Screenshots are saved as artefacts in <build>/artifacts/dashboard/.
 * Without chromium (GA_CHROMIUM, else `chromium` on PATH) the test is
 * skipped (exit 77); one that is there but does not answer fails it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first */
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cdp.h"
#include "dash_harness.h"
#include "testutil.h"

/* Issue 14: a decision appears on the page within a second. A sanitizer build
 * (ASan+UBSan, several times slower on a loaded CI machine) gets 3 s; the
 * measured time is printed either way. */
#ifdef GA_TEST_SANITIZED
#define APPEAR_WITHIN_MS 3000
#else
#define APPEAR_WITHIN_MS 1000
#endif
#define TOKEN "browser-test-token-0123456789"

static struct cdp B;
static struct dash_host H;
static char artifacts[512];

static void cmd_ok(struct dash_host *h, const char *cmd)
{
	char *a = dash_cmd(h, cmd);
	if (!a || strcmp(a, "ok") != 0)
		fail_msg("host command '%s': %s", cmd, a ? a : "(no answer)");
	free(a);
}

static bool host_paused(void)
{
	char *s = dash_cmd(&H, "state");
	bool p = s && strncmp(s, "paused=1", 8) == 0;
	free(s);
	return p;
}

static int setup(void **state)
{
	(void)state;
	cdp_artifacts_dir("dashboard", artifacts, sizeof artifacts);
	char *e = NULL;
	if (dash_start(&H, NULL, &e) != 0) {
		fprintf(stderr, "dash_host did not start: %s\n", e ? e : "?");
		return -1;
	}
	return cdp_start(&B);
}

static int teardown(void **state)
{
	(void)state;
	cdp_stop(&B);
	int rc = dash_quit(&H);
	if (rc != 0)
		fprintf(stderr, "dash_host exited with %d\n", rc);
	dash_stop(&H);
	return rc == 0 ? 0 : -1;
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

static void test_decision_appears_live(void **state)
{
	(void)state;
	char url[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/", H.port);
	cdp_open_page(&B, url);
	cdp_wait_true(&B, "document.getElementById('live-state').textContent === 'live'",
	              CDP_WAIT_MS);
	cdp_wait_true(&B, "document.getElementById('agent-name').textContent === 'dashbot'",
	              CDP_WAIT_MS);
	long t0 = cdp_mono_ms();
	cmd_ok(&H, "event browser1 alice hello dashbot, what is new?");
	long waited = cdp_wait_true(&B,
	                            "!!document.querySelector('#decisions tbody "
	                            "tr[data-message-id=\"space:browser1\"]')",
	                            10000);
	long took = cdp_mono_ms() - t0;
	printf("decision on the page %ld ms after the message (polled %ld ms)\n", took, waited);
	if (took > APPEAR_WITHIN_MS)
		fail_msg("the decision took %ld ms to appear (issue 14: within %d ms)", took,
		         APPEAR_WITHIN_MS);
	/* the row says what the log says */
	assert_true(cdp_eval_true(&B,
	                          "[...document.querySelectorAll('#decisions tbody "
	                          "tr[data-message-id=\"space:browser1\"]')].some(r => "
	                          "r.cells[4].textContent === 'gate' && r.cells[1].textContent === "
	                          "'space')"));
	cdp_screenshot(&B, artifacts, "dashboard-decisions.png");

	/* a filter hides what does not match */
	cJSON_Delete(cdp_eval(&B,
	                      "(() => { const s = document.getElementById('f-stage'); s.value = "
	                      "'gate'; s.dispatchEvent(new Event('change')); return true; })()"));
	assert_true(cdp_eval_true(
	        &B, "[...document.querySelectorAll('#decisions tbody "
	            "tr:not(.hidden)')].every(r => r.cells[4].textContent === 'gate')"));
	cJSON_Delete(cdp_eval(&B,
	                      "(() => { const s = document.getElementById('f-stage'); s.value = "
	                      "''; s.dispatchEvent(new Event('change')); return true; })()"));

	/* the whole story of the message, on click */
	cdp_click(&B, "#decisions tbody tr[data-message-id=\"space:browser1\"]");
	cdp_wait_true(&B,
	              "!document.getElementById('why').classList.contains('hidden') && "
	              "document.querySelectorAll('#why-steps li').length >= 2 && "
	              "document.getElementById('why-steps').textContent.includes('gate') && "
	              "document.getElementById('why-message').textContent.includes('what is new?')",
	              10000);
	cdp_screenshot(&B, artifacts, "dashboard-why.png");
	cdp_click(&B, "#why-close");
	cdp_wait_true(&B, "document.getElementById('why').classList.contains('hidden')", 10000);
}

static void test_pause_from_page(void **state)
{
	(void)state;
	assert_false(host_paused());
	cdp_wait_true(&B,
	              "document.getElementById('pause-btn').textContent === 'Pause' && "
	              "!document.getElementById('pause-btn').disabled",
	              10000);
	cdp_click(&B, "#pause-btn");
	for (long end = cdp_mono_ms() + DASH_WAIT_MS; !host_paused();) {
		if (cdp_mono_ms() > end)
			fail_msg("the Pause button did not pause the pipeline");
		usleep(20000);
	}
	char *ctl = tu_read(H.memory, "control.json");
	assert_non_null(ctl);
	assert_non_null(strstr(ctl, "\"by\":\"dashboard\""));
	free(ctl);
	cdp_wait_true(&B,
	              "document.getElementById('run-state').textContent === 'PAUSED' && "
	              "document.getElementById('pause-btn').textContent === 'Resume'",
	              10000);
	/* paused: the next message is stopped at the gate, and the page says so */
	cmd_ok(&H, "event browser2 alice are you still answering?");
	cdp_wait_true(
	        &B,
	        "[...document.querySelectorAll('#decisions tbody "
	        "tr[data-message-id=\"space:browser2\"]')].some(r => r.cells[6].textContent === "
	        "'paused' && r.cells[5].textContent === 'block')",
	        10000);
	cdp_screenshot(&B, artifacts, "dashboard-paused.png");
	cdp_click(&B, "#pause-btn");
	for (long end = cdp_mono_ms() + DASH_WAIT_MS; host_paused();) {
		if (cdp_mono_ms() > end)
			fail_msg("the Resume button did not resume the pipeline");
		usleep(20000);
	}
	cdp_wait_true(&B, "document.getElementById('run-state').textContent === 'running'", 10000);
}

static void test_tabs_render(void **state)
{
	(void)state;
	cdp_click(&B, "nav button[data-tab=\"status\"]");
	cdp_wait_true(&B,
	              "document.querySelectorAll('#platforms tbody tr').length >= 2 && "
	              "document.getElementById('status-cards').textContent.includes('uptime') && "
	              "!document.getElementById('status-cards').textContent.includes('null') && "
	              "document.getElementById('status-cards').textContent.includes('1,200 · 3 "
	              "call(s)')",
	              10000);
	/* the services' rate budgets, whatever their shape */
	cdp_wait_true(&B,
	              "document.getElementById('status-cards').textContent.includes('4,321 / 5,000 "
	              "· resets in 9m') && "
	              "document.getElementById('status-cards').textContent.includes('github rate "
	              "budget') && "
	              "[...document.querySelectorAll('#status-cards .card.low')].some(c => "
	              "c.textContent.includes('250 / 3,000 · resets in 4m') && "
	              "c.textContent.includes('bluesky rate budget')) && "
	              "document.getElementById('status-cards').textContent.includes('40 / 100 · "
	              "resets in 3h 0m') && "
	              "document.getElementById('status-cards').textContent.includes('bluesky "
	              "limits createRecord rate budget')",
	              10000);
	assert_true(cdp_eval_true(
	        &B, "(() => { const r = (n) => document.querySelector('#services "
	            "tr[data-service=\"' + n + '\"]').textContent;"
	            " return r('github').includes('polls 12') && r('github').includes('login: "
	            "dashbot-gh') && r('bluesky').includes('requests 7 · rateLimited 1') && "
	            "r('bluesky').includes('lastError: 429 from bsky.social') && "
	            "r('reflection').includes('no status') && "
	            "!document.getElementById('status-raw').textContent.includes('rateBudget'); "
	            "})()"));
	cdp_screenshot(&B, artifacts, "dashboard-status.png");
	cdp_click(&B, "nav button[data-tab=\"conversations\"]");
	cdp_wait_true(&B, "document.querySelectorAll('#conversation-list li').length >= 1", 10000);
	cdp_click(&B, "#conversation-list li");
	cdp_wait_true(&B,
	              "[...document.querySelectorAll('#conversation-view .msg')].some(m => "
	              "m.textContent.includes('what is new?') && m.textContent.includes('alice'))",
	              10000);
	cdp_screenshot(&B, artifacts, "dashboard-conversations.png");
	cdp_click(&B, "nav button[data-tab=\"commitments\"]");
	cdp_wait_true(
	        &B,
	        "document.querySelector('#commitments tbody').textContent.includes('create_issue') "
	        "&& !!document.querySelector('#commitments a[href=\"https://github.com/acme/site/"
	        "issues/7\"]')",
	        10000);
	cdp_screenshot(&B, artifacts, "dashboard-commitments.png");
	/* the plans tab: each pull request with its state, who acts next and
	 * since when; a title is text, a link only to GitHub */
	cdp_click(&B, "nav button[data-tab=\"plans\"]");
	cdp_wait_true(&B, "document.querySelectorAll('#pulls tbody tr[data-pull]').length === 3",
	              10000);
	assert_true(cdp_eval_true(
	        &B,
	        "(() => { const r = (n) => [...document.querySelector('#pulls "
	        "tr[data-pull=\"acme/www-x#' + n + '\"]').cells].map(c => c.textContent);"
	        " const a = r(12), b = r(9), c = r(8);"
	        " return a[0] === 'acme/www-x#12 Add the page' && a[1] === 'awaiting review' && "
	        "a[2] === '@bob' && /\\(38 min\\)$/.test(a[3]) && a[4] === 'plan #7 · task 3' && "
	        "a[6] === '@dashbot-gh → @bob' && b[1] === 'left to the owner' && "
	        "b[2] === '@olive' && b[5] === '2' && /\\(5 min\\)$/.test(b[3]) && "
	        "c[1] === 'merged' && c[2] === ''; })()"));
	assert_true(cdp_eval_true(
	        &B, "document.querySelector('#pulls tr[data-pull=\"acme/www-x#12\"] a').href === "
	            "'https://github.com/acme/www-x/pull/12' && !document.querySelector('#pulls "
	            "tr[data-pull=\"acme/www-x#9\"] a[href]') && !document.querySelector('#pulls "
	            "img') && document.querySelector('#pulls tbody').textContent.includes('1 more "
	            "not listed')"));
	cdp_screenshot(&B, artifacts, "dashboard-plans.png");
	cdp_click(&B, "nav button[data-tab=\"permissions\"]");
	cdp_wait_true(&B,
	              "document.getElementById('perm-mode').textContent === 'allowlistmode' && "
	              "document.getElementById('perm-allow').textContent.includes('space:room') && "
	              "document.querySelector('#audit tbody').textContent.includes('deny')",
	              10000);
	cdp_screenshot(&B, artifacts, "dashboard-permissions.png");
}

static void test_token_page(void **state)
{
	(void)state;
	struct dash_host t;
	const char *const args[] = {"--token", TOKEN, NULL};
	char *e = NULL;
	if (dash_start(&t, args, &e) != 0)
		fail_msg("token host: %s", e);
	char url[256];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/", t.port);
	cdp_open_page(&B, url);
	cdp_wait_true(&B, "!document.getElementById('token-form').classList.contains('hidden')",
	              10000);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/#token=%s", t.port, TOKEN);
	cdp_open_page(&B, url);
	cdp_wait_true(&B,
	              "document.getElementById('live-state').textContent === 'live' && "
	              "document.getElementById('agent-name').textContent === 'dashbot' && "
	              "document.getElementById('token-form').classList.contains('hidden')",
	              CDP_WAIT_MS);
	/* the token left the address bar and is nowhere in the page */
	assert_true(cdp_eval_true(&B, "location.hash === '' && !location.href.includes('token')"));
	assert_true(cdp_eval_true(&B, "!document.documentElement.outerHTML.includes('" TOKEN "')"));
	assert_int_equal(dash_quit(&t), 0);
	dash_stop(&t);
}

int main(void)
{
	if (!cdp_chromium_present())
		return 77;
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_browser_present),
	        cmocka_unit_test(test_decision_appears_live),
	        cmocka_unit_test(test_pause_from_page),
	        cmocka_unit_test(test_tabs_render),
	        cmocka_unit_test(test_token_page),
	};
	return cmocka_run_group_tests_name("dashboard in chromium", tests, setup, teardown);
}
