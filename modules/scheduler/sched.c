/*
 * sched — periodic jobs with a reentrancy guard. See sched.h.
 */
#include "modules/scheduler/sched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/utf8.h"
#include "common/xalloc.h"

struct sched_job {
	struct sched *sched;
	char *name;
	uv_timer_t timer;
	uint64_t interval_ms;
	sched_run_fn run;
	sched_stop_fn on_stop;
	void *ud;
	bool running;
	bool once;
	uint64_t runs, completed, skipped;
	uint64_t last_start_ms, last_duration_ms;
};

struct sched {
	uv_loop_t *loop;
	char *agent_name;
	struct sched_job *jobs[SCHED_MAX_JOBS];
	size_t njobs;
	bool stopping;
	bool stopped_notified;
	void (*stopped)(void *ud);
	void *stopped_ud;
	size_t closing;
};

uint64_t sched_jitter_interval(const char *agent_name, const char *job_name, uint64_t base_ms,
                               double pct)
{
	/* djb2 over the UTF-16 code units of "<agent>:<job>", truncated to a
	 * signed 32-bit value at each step like JavaScript's `| 0`. */
	char key[256];
	snprintf(key, sizeof key, "%s:%s", agent_name, job_name);
	int32_t h = 5381;
	size_t len = strlen(key);
	for (size_t i = 0; i < len;) {
		unsigned int cp;
		int n = utf8_decode(key + i, len - i, &cp);
		if (n <= 0) {
			cp = 0xFFFD;
			n = 1;
		}
		i += (size_t)n;
		uint32_t units[2];
		int nu = 1;
		if (cp >= 0x10000) {
			cp -= 0x10000;
			units[0] = 0xD800 + (cp >> 10);
			units[1] = 0xDC00 + (cp & 0x3FF);
			nu = 2;
		} else {
			units[0] = cp;
		}
		for (int u = 0; u < nu; u++)
			h = (int32_t)((uint32_t)h * 33u + units[u]);
	}
	int64_t a = h < 0 ? -(int64_t)h : (int64_t)h;
	double n = (double)(a % 2001 - 1000) / 1000.0;
	/* Math.round semantics (halves toward +inf), not C round(). */
	double v = (double)base_ms + floor((double)base_ms * pct * n + 0.5);
	return v < 1 ? 1 : (uint64_t)v;
}

struct sched *sched_new(uv_loop_t *loop, const char *agent_name)
{
	struct sched *s = xcalloc(1, sizeof *s);
	s->loop = loop;
	s->agent_name = xstrdup(agent_name ? agent_name : "");
	return s;
}

static void maybe_stopped(struct sched *s)
{
	if (!s->stopping || s->stopped_notified)
		return;
	for (size_t i = 0; i < s->njobs; i++)
		if (s->jobs[i]->running)
			return;
	s->stopped_notified = true;
	if (s->stopped)
		s->stopped(s->stopped_ud);
}

static void start_run(struct sched_job *j)
{
	j->running = true;
	j->runs++;
	j->last_start_ms = uv_now(j->sched->loop);
	log_kv(LOG_LEVEL_DEBUG, "sched", "job started", "job", j->name, "run", LOG_INT(j->runs));
	j->run(j->ud, j);
}

static void on_tick(uv_timer_t *t)
{
	struct sched_job *j = t->data;
	if (j->sched->stopping)
		return;
	if (j->running) {
		j->skipped++;
		log_kv(LOG_LEVEL_DEBUG, "sched", "tick skipped: job still running", "job", j->name,
		       "skipped", LOG_INT(j->skipped));
		return;
	}
	start_run(j);
}

struct sched_job *sched_add(struct sched *s, const struct sched_job_opts *o)
{
	if (s->njobs >= SCHED_MAX_JOBS) {
		log_kv(LOG_LEVEL_ERROR, "sched", "too many jobs", "job", o->name, "max",
		       LOG_INT(SCHED_MAX_JOBS));
		return NULL;
	}
	for (size_t i = 0; i < s->njobs; i++)
		if (strcmp(s->jobs[i]->name, o->name) == 0) {
			log_kv(LOG_LEVEL_ERROR, "sched", "duplicate job name", "job", o->name);
			return NULL;
		}
	struct sched_job *j = xcalloc(1, sizeof *j);
	j->sched = s;
	j->name = xstrdup(o->name);
	j->run = o->run;
	j->on_stop = o->on_stop;
	j->ud = o->ud;
	j->once = o->interval_ms == 0;
	j->interval_ms = j->once ? 0
	                         : sched_jitter_interval(s->agent_name, o->name, o->interval_ms,
	                                                 o->jitter_pct);
	uv_timer_init(s->loop, &j->timer);
	j->timer.data = j;
	uv_timer_start(&j->timer, on_tick, o->first_delay_ms, j->interval_ms);
	s->jobs[s->njobs++] = j;
	log_kv(LOG_LEVEL_DEBUG, "sched", "job scheduled", "job", j->name, "interval_ms",
	       LOG_INT(j->interval_ms), "first_ms", LOG_INT(o->first_delay_ms));
	return j;
}

void sched_job_done(struct sched_job *j)
{
	if (!j->running) {
		log_kv(LOG_LEVEL_WARN, "sched", "job completed twice (ignored)", "job", j->name);
		return;
	}
	j->running = false;
	j->completed++;
	j->last_duration_ms = uv_now(j->sched->loop) - j->last_start_ms;
	log_kv(LOG_LEVEL_DEBUG, "sched", "job done", "job", j->name, "ms",
	       LOG_INT(j->last_duration_ms));
	maybe_stopped(j->sched);
}

bool sched_job_trigger(struct sched_job *j)
{
	if (j->sched->stopping)
		return false;
	if (j->running) {
		j->skipped++;
		return false;
	}
	start_run(j);
	return true;
}

const char *sched_job_name(const struct sched_job *j)
{
	return j->name;
}

struct sched *sched_job_sched(const struct sched_job *j)
{
	return j->sched;
}

void sched_stop(struct sched *s, void (*stopped)(void *ud), void *ud)
{
	if (s->stopping)
		return;
	s->stopping = true;
	s->stopped = stopped;
	s->stopped_ud = ud;
	for (size_t i = 0; i < s->njobs; i++) {
		struct sched_job *j = s->jobs[i];
		uv_timer_stop(&j->timer);
		if (j->running && j->on_stop)
			j->on_stop(j->ud, j);
	}
	maybe_stopped(s);
}

bool sched_stopping(const struct sched *s)
{
	return s->stopping;
}

size_t sched_stats(const struct sched *s, struct sched_job_stats *out, size_t cap)
{
	for (size_t i = 0; i < s->njobs && i < cap; i++) {
		const struct sched_job *j = s->jobs[i];
		out[i] = (struct sched_job_stats){
		        .name = j->name,
		        .interval_ms = j->interval_ms,
		        .runs = j->runs,
		        .completed = j->completed,
		        .skipped = j->skipped,
		        .running = j->running,
		        .last_start_ms = j->last_start_ms,
		        .last_duration_ms = j->last_duration_ms,
		};
	}
	return s->njobs;
}

static void on_closed(uv_handle_t *h)
{
	struct sched_job *j = h->data;
	j->sched->closing--;
}

void sched_close(struct sched *s)
{
	for (size_t i = 0; i < s->njobs; i++) {
		uv_timer_stop(&s->jobs[i]->timer);
		if (!uv_is_closing((uv_handle_t *)&s->jobs[i]->timer)) {
			s->closing++;
			uv_close((uv_handle_t *)&s->jobs[i]->timer, on_closed);
		}
	}
}

void sched_free(struct sched *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->njobs; i++) {
		free(s->jobs[i]->name);
		free(s->jobs[i]);
	}
	free(s->agent_name);
	free(s);
}
