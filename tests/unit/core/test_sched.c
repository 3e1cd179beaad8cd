/* Scheduler: the reentrancy guard, stop semantics, deterministic jitter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <cmocka.h>

#include "common/log.h"
#include "modules/scheduler/sched.h"

struct fx {
	uv_loop_t loop;
	struct sched *s;
	struct sched_job *job;
	uv_timer_t watch;    /* polls conditions */
	uv_timer_t deadline; /* fails the test if the loop runs too long */
	int phase;
	int stops_seen;
	int stopped_calls;
	bool hold; /* keep the job running */
};

static void on_deadline(uv_timer_t *t)
{
	(void)t;
	fail_msg("test did not reach its condition within 10 s");
}

static void close_all(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void fx_init(struct fx *f)
{
	memset(f, 0, sizeof *f);
	log_set_level(LOG_LEVEL_OFF);
	uv_loop_init(&f->loop);
	f->s = sched_new(&f->loop, "Ada");
	uv_timer_init(&f->loop, &f->watch);
	uv_timer_init(&f->loop, &f->deadline);
	f->watch.data = f;
	f->deadline.data = f;
	uv_timer_start(&f->deadline, on_deadline, 10000, 0);
}

static void fx_finish(struct fx *f)
{
	sched_close(f->s);
	uv_walk(&f->loop, close_all, NULL);
	/* A uv_stop() from a callback outside uv_run makes the next uv_run
	 * return at once; the second run lets the close callbacks fire. */
	uv_run(&f->loop, UV_RUN_DEFAULT);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&f->loop), 0);
	sched_free(f->s);
}

static void run_slow(void *ud, struct sched_job *job)
{
	struct fx *f = ud;
	(void)job;
	f->hold = true; /* completes only when the watcher says so */
}

static void guard_watch(uv_timer_t *t)
{
	struct fx *f = t->data;
	struct sched_job_stats st;
	sched_stats(f->s, &st, 1);
	if (f->phase == 0 && st.skipped >= 3) {
		/* While it was running, ticks were skipped and nothing re-entered. */
		assert_int_equal(st.runs, 1);
		assert_true(st.running);
		f->phase = 1;
		f->hold = false;
		sched_job_done(f->job);
		sched_stats(f->s, &st, 1);
		assert_false(st.running);
		assert_int_equal(st.completed, 1);
	} else if (f->phase == 1 && st.runs >= 2) {
		/* After completion the next tick runs it again. */
		f->phase = 2;
		sched_job_done(f->job);
		uv_stop(&f->loop);
	}
}

static void test_reentrancy_guard(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	f.job = sched_add(f.s,
	                  &(struct sched_job_opts){
	                          .name = "slow", .interval_ms = 5, .run = run_slow, .ud = &f});
	assert_non_null(f.job);
	uv_timer_start(&f.watch, guard_watch, 1, 1);
	uv_run(&f.loop, UV_RUN_DEFAULT);
	assert_int_equal(f.phase, 2);
	/* A double completion is ignored, counters stay sane. */
	sched_job_done(f.job);
	struct sched_job_stats st;
	sched_stats(f.s, &st, 1);
	assert_int_equal(st.completed, 2);
	fx_finish(&f);
}

static void on_stop_job(void *ud, struct sched_job *job)
{
	struct fx *f = ud;
	(void)job;
	f->stops_seen++;
}

static void on_stopped(void *ud)
{
	struct fx *f = ud;
	f->stopped_calls++;
	uv_stop(&f->loop);
}

static void stop_watch(uv_timer_t *t)
{
	struct fx *f = t->data;
	struct sched_job_stats st;
	sched_stats(f->s, &st, 1);
	if (f->phase == 0 && st.running) {
		f->phase = 1;
		sched_stop(f->s, on_stopped, f);
		assert_true(sched_stopping(f->s));
		assert_int_equal(f->stops_seen, 1);      /* the running job was told */
		assert_int_equal(f->stopped_calls, 0);   /* but not yet finished */
		assert_false(sched_job_trigger(f->job)); /* nothing new starts */
	} else if (f->phase == 1) {
		f->phase = 2;
		sched_job_done(f->job); /* finishing it completes the stop */
	}
}

static void test_stop_waits_for_running_job(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	f.job = sched_add(f.s, &(struct sched_job_opts){.name = "slow",
	                                                .interval_ms = 1000,
	                                                .run = run_slow,
	                                                .on_stop = on_stop_job,
	                                                .ud = &f});
	uv_timer_start(&f.watch, stop_watch, 1, 1);
	uv_run(&f.loop, UV_RUN_DEFAULT);
	assert_int_equal(f.phase, 2);
	assert_int_equal(f.stopped_calls, 1);
	fx_finish(&f);
}

static void test_stop_when_idle_is_immediate(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	f.job = sched_add(f.s, &(struct sched_job_opts){.name = "later",
	                                                .interval_ms = 60000,
	                                                .first_delay_ms = 60000,
	                                                .run = run_slow,
	                                                .ud = &f});
	sched_stop(f.s, on_stopped, &f);
	assert_int_equal(f.stopped_calls, 1);
	sched_stop(f.s, on_stopped, &f); /* idempotent */
	assert_int_equal(f.stopped_calls, 1);
	fx_finish(&f);
}

static void test_names_and_bounds(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	struct sched_job_opts o = {.name = "a",
	                           .interval_ms = 1000,
	                           .first_delay_ms = 100000,
	                           .run = run_slow,
	                           .ud = &f};
	assert_non_null(sched_add(f.s, &o));
	assert_null(sched_add(f.s, &o)); /* duplicate */
	char name[16];
	for (int i = 1; i < SCHED_MAX_JOBS; i++) {
		snprintf(name, sizeof name, "j%d", i);
		o.name = name;
		assert_non_null(sched_add(f.s, &o));
	}
	o.name = "one-too-many";
	assert_null(sched_add(f.s, &o));
	fx_finish(&f);
}

static void test_jitter(void **state)
{
	(void)state;
	/* Values computed independently from the reference's formula
	 * (runtime-bluesky.md §4.2). */
	assert_int_equal(sched_jitter_interval("Ada", "heartbeat", 300000, 0.12), 267132);
	assert_int_equal(sched_jitter_interval("Bob", "heartbeat", 300000, 0.12), 280128);
	/* Astral characters count as two UTF-16 units, as in JavaScript. */
	assert_int_equal(sched_jitter_interval("Zoë🙂", "space", 5000, 0.40), 5286);
	for (int i = 0; i < 200; i++) {
		char agent[16];
		snprintf(agent, sizeof agent, "agent-%d", i);
		uint64_t v = sched_jitter_interval(agent, "awareness", 45000, 0.12);
		assert_true(v >= 45000 - 5400 && v <= 45000 + 5400);
		assert_int_equal(v, sched_jitter_interval(agent, "awareness", 45000, 0.12));
	}
	assert_int_equal(sched_jitter_interval("x", "y", 1000, 0), 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_reentrancy_guard),
	        cmocka_unit_test(test_stop_waits_for_running_job),
	        cmocka_unit_test(test_stop_when_idle_is_immediate),
	        cmocka_unit_test(test_names_and_bounds),
	        cmocka_unit_test(test_jitter),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
