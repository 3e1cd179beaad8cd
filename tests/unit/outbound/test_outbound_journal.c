/*
 * The outbound stage with the intent → done journal (modules/journal), on a
 * real libuv loop: a send is journaled as intent before the port is called
 * and as done (with the artifact) after; a failed send as failed. After a
 * crash between intent and done, outbound_reconcile_pending asks the port's
 * reconcile, and a resubmit with the same idempotency key is dropped (rule
 * "journal") unless the port says the artifact does not exist.
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

#include "common/xalloc.h"
#include "modules/journal/journal.h"
#include "modules/outbound/outbound.h"
#include "testutil.h"

#define KEY    "commitment:commitment-1-0123456789abcdef"
#define TARGET "bluesky:post"

struct later {
	uv_timer_t timer;
	outbound_port_done_fn done;
	void (*rec_done)(void *done_ud, int exists, const char *artifact);
	void *done_ud;
	int ok;
};

struct fx {
	uv_loop_t loop;
	char *dir;
	struct journal *j;
	struct outbound *ob;
	bool closed;
	/* the port */
	int nsends;
	char sent_key[128];
	enum journal_state state_at_send; /* the key's journal state during send() */
	int fail_send;
	int nrecon;
	char recon_key[128];
	char recon_target[64];
	int recon_answer; /* 1 exists, 0 not, -1 unknown */
	/* the stage */
	int nfinal;
	struct decision final;
	char artifact[64];
};

static void on_later_closed(uv_handle_t *h)
{
	free(h->data);
}

static void fire(uv_timer_t *t)
{
	struct later *l = t->data;
	if (l->done)
		l->done(l->done_ud, l->ok, l->ok ? "at://did:plc:me/post/1" : NULL,
		        l->ok ? NULL : "HTTP 500 from the test");
	else
		l->rec_done(l->done_ud, l->ok, l->ok == 1 ? "at://did:plc:me/post/0" : NULL);
	uv_close((uv_handle_t *)t, on_later_closed);
}

static void later(struct fx *f, struct later *l)
{
	uv_timer_init(&f->loop, &l->timer);
	l->timer.data = l;
	uv_timer_start(&l->timer, fire, 5, 0);
}

static int port_send(void *ud, const struct outbound_send *s, outbound_port_done_fn done,
                     void *done_ud)
{
	struct fx *f = ud;
	f->nsends++;
	snprintf(f->sent_key, sizeof f->sent_key, "%s", s->idem_key);
	f->state_at_send = journal_state_of(f->j, s->idem_key);
	struct later *l = xcalloc(1, sizeof *l);
	l->done = done;
	l->done_ud = done_ud;
	l->ok = !f->fail_send;
	later(f, l);
	return 0;
}

static void port_reconcile(void *ud, const char *idem_key, const char *target,
                           void (*done)(void *done_ud, int exists, const char *artifact),
                           void *done_ud)
{
	struct fx *f = ud;
	f->nrecon++;
	snprintf(f->recon_key, sizeof f->recon_key, "%s", idem_key);
	snprintf(f->recon_target, sizeof f->recon_target, "%s", target);
	struct later *l = xcalloc(1, sizeof *l);
	l->rec_done = done;
	l->done_ud = done_ud;
	l->ok = f->recon_answer;
	later(f, l);
}

static void on_final(void *ud, const struct decision *d, const char *artifact)
{
	struct fx *f = ud;
	f->nfinal++;
	f->final = *d;
	snprintf(f->artifact, sizeof f->artifact, "%s", artifact ? artifact : "");
}

static void start(struct fx *f, bool with_reconcile)
{
	struct ga_err e = {{0}};
	f->j = journal_open(f->dir, &e);
	assert_non_null(f->j);
	struct outbound_config cfg = {.memory_dir = f->dir, .agent_name = "ada", .journal = f->j};
	f->ob = outbound_new(&f->loop, &cfg, &e);
	assert_non_null(f->ob);
	struct outbound_port port = {.platform = CONV_PLATFORM_BLUESKY,
	                             .send = port_send,
	                             .reconcile = with_reconcile ? port_reconcile : NULL,
	                             .ud = f};
	assert_int_equal(outbound_add_port(f->ob, &port, &e), 0);
	f->closed = false;
}

static void on_closed(void *ud)
{
	((struct fx *)ud)->closed = true;
}

/* outbound first (it borrows the journal), then the journal. */
static void stop(struct fx *f)
{
	outbound_close(f->ob, on_closed, f);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_true(f->closed);
	f->ob = NULL;
	journal_close(f->j);
	f->j = NULL;
}

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	assert_int_equal(uv_loop_init(&f->loop), 0);
	f->dir = tu_tempdir();
	assert_non_null(f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (f->ob)
		stop(f);
	assert_int_equal(uv_loop_close(&f->loop), 0);
	tu_rmrf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static void submit(struct fx *f, const char *key, const char *text)
{
	struct outbound_msg m = {.platform = CONV_PLATFORM_BLUESKY,
	                         .target = TARGET,
	                         .source = "commitment",
	                         .text = text,
	                         .text_len = strlen(text),
	                         .chain = -1,
	                         .idem_key = key};
	outbound_submit(f->ob, &m, on_final, f);
	uv_run(&f->loop, UV_RUN_DEFAULT);
}

/* A crash after the intent was written, before done: the journal holds an
 * intent, nothing else. */
static void crash_after_intent(struct fx *f)
{
	struct ga_err e = {{0}};
	struct journal *j = journal_open(f->dir, &e);
	assert_non_null(j);
	assert_int_equal(journal_intent(j, KEY, conv_platform_name(CONV_PLATFORM_BLUESKY), TARGET,
	                                NULL, 1000, &e),
	                 0);
	journal_close(j); /* no done, no failed */
}

static void test_send_writes_intent_then_done(void **state)
{
	struct fx *f = *state;
	start(f, true);
	submit(f, KEY, "promised post");
	assert_int_equal(f->nsends, 1);
	assert_string_equal(f->sent_key, KEY);
	/* the intent was durable before the port was called */
	assert_int_equal(f->state_at_send, JOURNAL_INTENT);
	assert_int_equal(f->final.verdict, VERDICT_SENT);
	assert_int_equal(journal_state_of(f->j, KEY), JOURNAL_DONE);
	assert_string_equal(journal_artifact(f->j, KEY), "at://did:plc:me/post/1");
	char *text = tu_read(f->dir, JOURNAL_FILE);
	char *in = strstr(text, "\"op\":\"intent\",\"key\":\"" KEY "\"");
	char *done = strstr(text, "\"op\":\"done\",\"key\":\"" KEY "\"");
	assert_non_null(in);
	assert_non_null(done);
	assert_true(in < done);
	assert_non_null(strstr(in, "\"target\":\"" TARGET "\""));
	assert_non_null(strstr(in, "\"payload\":{\"source\":\"commitment\"}"));
	free(text);

	/* a derived key works the same; a failed send is journaled as failed */
	f->fail_send = 1;
	submit(f, NULL, "this one fails");
	assert_int_equal(f->nsends, 2);
	assert_int_equal(f->final.verdict, VERDICT_FAIL);
	char derived[65];
	outbound_idem_key(CONV_PLATFORM_BLUESKY, TARGET, "this one fails", 14, derived);
	assert_string_equal(f->sent_key, derived);
	assert_int_equal(journal_state_of(f->j, derived), JOURNAL_FAILED);
	assert_string_equal(journal_error(f->j, derived), "HTTP 500 from the test");

	/* the same key again after done: dropped by the journal, never sent */
	f->fail_send = 0;
	submit(f, KEY, "promised post, said differently");
	assert_int_equal(f->nsends, 2);
	assert_int_equal(f->final.verdict, VERDICT_DROP);
	assert_string_equal(f->final.rule, "journal");
	assert_non_null(strstr(f->final.reason, "already sent"));
	stop(f);
	/* and after a restart */
	start(f, true);
	assert_int_equal(outbound_reconcile_pending(f->ob), 0);
	submit(f, KEY, "promised post");
	assert_int_equal(f->nsends, 2);
	assert_string_equal(f->final.rule, "journal");
}

static void test_crash_unknown_keeps_dropping(void **state)
{
	struct fx *f = *state;
	crash_after_intent(f);
	start(f, true);
	f->recon_answer = -1;
	assert_int_equal(outbound_reconcile_pending(f->ob), 1);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(f->nrecon, 1);
	assert_string_equal(f->recon_key, KEY);
	assert_string_equal(f->recon_target, TARGET);
	assert_int_equal(journal_state_of(f->j, KEY), JOURNAL_INTENT);
	/* at most once beats twice: the resubmit is dropped */
	submit(f, KEY, "promised post");
	assert_int_equal(f->nsends, 0);
	assert_int_equal(f->nfinal, 1);
	assert_int_equal(f->final.verdict, VERDICT_DROP);
	assert_string_equal(f->final.rule, "journal");
	assert_non_null(strstr(f->final.reason, "unresolved"));
}

static void test_crash_artifact_exists(void **state)
{
	struct fx *f = *state;
	crash_after_intent(f);
	start(f, true);
	f->recon_answer = 1;
	assert_int_equal(outbound_reconcile_pending(f->ob), 1);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(journal_state_of(f->j, KEY), JOURNAL_DONE);
	assert_string_equal(journal_artifact(f->j, KEY), "at://did:plc:me/post/0");
	submit(f, KEY, "promised post");
	assert_int_equal(f->nsends, 0);
	assert_string_equal(f->final.rule, "journal");
	assert_non_null(strstr(f->final.reason, "already sent"));
	stop(f);
	/* settled for good: a restart has nothing to reconcile */
	start(f, true);
	assert_int_equal(outbound_reconcile_pending(f->ob), 0);
	assert_int_equal(journal_state_of(f->j, KEY), JOURNAL_DONE);
}

static void test_crash_not_sent_allows_retry(void **state)
{
	struct fx *f = *state;
	crash_after_intent(f);
	start(f, true);
	f->recon_answer = 0;
	assert_int_equal(outbound_reconcile_pending(f->ob), 1);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	/* reconciling never resends by itself */
	assert_int_equal(f->nsends, 0);
	assert_int_equal(journal_state_of(f->j, KEY), JOURNAL_FAILED);
	assert_non_null(strstr(journal_error(f->j, KEY), "does not exist"));
	/* its owner retries with the same key: sent, once */
	submit(f, KEY, "promised post");
	assert_int_equal(f->nsends, 1);
	assert_int_equal(f->final.verdict, VERDICT_SENT);
	assert_int_equal(journal_state_of(f->j, KEY), JOURNAL_DONE);
	submit(f, KEY, "promised post");
	assert_int_equal(f->nsends, 1);
	assert_string_equal(f->final.rule, "journal");
}

static void test_crash_without_reconcile(void **state)
{
	struct fx *f = *state;
	crash_after_intent(f);
	start(f, false);
	/* no reconcile on the port: not asked, left pending, resubmits dropped */
	assert_int_equal(outbound_reconcile_pending(f->ob), 0);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(f->nrecon, 0);
	assert_int_equal(journal_state_of(f->j, KEY), JOURNAL_INTENT);
	submit(f, KEY, "promised post");
	assert_int_equal(f->nsends, 0);
	assert_string_equal(f->final.rule, "journal");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_send_writes_intent_then_done, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_crash_unknown_keeps_dropping, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_crash_artifact_exists, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_crash_not_sent_allows_retry, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_crash_without_reconcile, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
