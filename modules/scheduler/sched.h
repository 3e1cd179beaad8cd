/*
 * sched — named periodic jobs on the libuv loop, with a reentrancy guard.
 *
 * A job is *running* from the moment its run function is called until the
 * job calls sched_job_done() — which may be much later, from an HTTP or
 * WebSocket callback. A tick that arrives while the job is still running is
 * skipped and counted (sched_job_stats.skipped), never queued; the guard
 * cannot be raced because there is one thread.
 *
 * Intervals carry a deterministic per-agent jitter, the one ts-general-agent
 * computes (runtime-bluesky.md §4.2): key "<agent>:<job>", djb2 over UTF-16 code
 * units, n ∈ [-1, 1], interval = base + round(base · pct · n). Two agents
 * with different names therefore tick at different, stable intervals.
 *
 * Stopping: sched_stop() stops every timer, tells running jobs (their
 * on_stop callback) and calls the stopped callback once the last running
 * job has called sched_job_done() — or at once when none was running. The
 * caller bounds the wait with its own timer.
 *
 * Bounds: at most SCHED_MAX_JOBS jobs.
 */
#ifndef GA_MODULES_SCHEDULER_SCHED_H
#define GA_MODULES_SCHEDULER_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define SCHED_MAX_JOBS 32

struct sched;
struct sched_job;

typedef void (*sched_run_fn)(void *ud, struct sched_job *job);
typedef void (*sched_stop_fn)(void *ud, struct sched_job *job);

struct sched_job_opts {
	const char *name;        /* copied; unique within the scheduler */
	uint64_t interval_ms;    /* base interval; 0 = run once */
	double jitter_pct;       /* e.g. 0.12 for ±12 % */
	uint64_t first_delay_ms; /* delay before the first run (0 = on the next loop turn) */
	sched_run_fn run;
	sched_stop_fn on_stop; /* may be NULL: called if stopping while running */
	void *ud;
};

struct sched_job_stats {
	const char *name;
	uint64_t interval_ms; /* with jitter applied */
	uint64_t runs;        /* started */
	uint64_t completed;
	uint64_t skipped; /* ticks that found the job still running */
	bool running;
	uint64_t last_start_ms;    /* uv_now at the last start, 0 = never */
	uint64_t last_duration_ms; /* of the last completed run */
};

/* agent_name seeds the jitter. Caller frees with sched_free after the loop
 * has closed the handles (sched_stop then uv_run until it returns). */
struct sched *sched_new(uv_loop_t *loop, const char *agent_name);

/* Returns the job, or NULL (with a logged error) when the name is taken or
 * SCHED_MAX_JOBS is reached. */
struct sched_job *sched_add(struct sched *s, const struct sched_job_opts *opts);

/* Marks the current run finished. Calling it when the job is not running
 * is a logged no-op (so a double completion cannot corrupt the counters). */
void sched_job_done(struct sched_job *job);

/* Runs the job now if it is not running (counted as a skip otherwise).
 * Returns true if it started. */
bool sched_job_trigger(struct sched_job *job);

const char *sched_job_name(const struct sched_job *job);
struct sched *sched_job_sched(const struct sched_job *job);

void sched_stop(struct sched *s, void (*stopped)(void *ud), void *ud);
bool sched_stopping(const struct sched *s);

/* Fills up to cap entries; returns the number of jobs. */
size_t sched_stats(const struct sched *s, struct sched_job_stats *out, size_t cap);

/* Closes the timer handles; call once, then let the loop run so the close
 * callbacks fire, then sched_free. */
void sched_close(struct sched *s);
void sched_free(struct sched *s);

/* The jittered interval (exposed for tests and for `status`). */
uint64_t sched_jitter_interval(const char *agent_name, const char *job_name, uint64_t base_ms,
                               double pct);

#endif
