/*
 * judge — the §10.6 LLM-as-judge for the validator's borderline echo band.
 * See judge.h.
 */
#include "modules/participation/judge.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adapters/llm/llm.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/compose/compose.h"

#define LOG_COMP "participation"

/* ---- the cache ------------------------------------------------------------------------ */

void part_judge_cache_clear(struct part_judge_cache *c)
{
	c->n = c->next = 0;
}

static long cache_find(const struct part_judge_cache *c, const unsigned char key[32])
{
	for (size_t i = 0; i < c->n; i++)
		if (memcmp(c->e[i].key, key, 32) == 0)
			return (long)i;
	return -1;
}

int part_judge_cache_get(const struct part_judge_cache *c, const unsigned char key[32])
{
	long i = cache_find(c, key);
	return i < 0 ? -1 : c->e[i].verdict;
}

void part_judge_cache_put(struct part_judge_cache *c, const unsigned char key[32], int verdict)
{
	long i = cache_find(c, key);
	struct part_judge_cache_entry *slot;
	if (i >= 0) {
		slot = &c->e[i];
	} else if (c->n < PART_JUDGE_CACHE_MAX) {
		slot = &c->e[c->n++];
	} else {
		slot = &c->e[c->next]; /* the oldest */
		c->next = (c->next + 1) % PART_JUDGE_CACHE_MAX;
	}
	memcpy(slot->key, key, 32);
	slot->verdict = verdict ? 1 : 0;
}

/* ---- the pure parts -------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void part_judge_key(const char *candidate, const char *const *window, size_t n,
                    unsigned char out[32])
{
	const char **sorted = xcalloc(n ? n : 1, sizeof *sorted);
	for (size_t i = 0; i < n; i++)
		sorted[i] = window[i] ? window[i] : "";
	qsort(sorted, n, sizeof *sorted, cmp_str);
	struct strbuf sb = {0};
	sb_puts(&sb, candidate ? candidate : "");
	for (size_t i = 0; i < n; i++) {
		sb_putc(&sb, '\0');
		sb_puts(&sb, sorted[i]);
	}
	sha256_raw(sb.buf ? sb.buf : "", sb.len, out);
	sb_free(&sb);
	free(sorted);
}

static void quoted(struct strbuf *sb, const char *s)
{
	size_t n = utf8_cut(s, strlen(s), PART_JUDGE_TEXT_MAX_BYTES);
	sb_putc(sb, '"');
	sb_append(sb, s, n);
	sb_putc(sb, '"');
}

char *part_judge_prompt(const char *candidate, const char *const *window, size_t n)
{
	struct strbuf sb = {0};
	sb_puts(&sb, "Candidate: ");
	quoted(&sb, candidate ? candidate : "");
	sb_puts(&sb, "\n\nExisting messages:\n");
	for (size_t i = 0; i < n && i < PART_JUDGE_PEERS_MAX; i++) {
		sb_printf(&sb, "%zu. ", i + 1);
		quoted(&sb, window[i] ? window[i] : "");
		sb_putc(&sb, '\n');
	}
	sb_puts(&sb, "\nDoes the candidate express the same point as any of the existing "
	             "messages? Answer YES or NO.");
	return sb_detach(&sb);
}

const char *part_judge_system(void)
{
	return "You detect semantic echoes in a group chat. Answer with exactly one word: YES or "
	       "NO.\n"
	       "YES: the candidate states the same conclusion or point as one of the existing "
	       "messages, even in entirely different words.\n"
	       "NO: the candidate adds a distinct perspective or new information.";
}

int part_judge_read(const char *reply)
{
	if (!reply)
		return 0;
	while (*reply && isspace((unsigned char)*reply))
		reply++;
	return strncasecmp(reply, "YES", 3) == 0 ? 1 : 0;
}

/* ---- the judge ----------------------------------------------------------------------------- */

struct ask {
	struct part_judge *j; /* NULL once the judge is gone */
	unsigned char key[32];
	void (*done)(void *, int, const char *);
	void *done_ud;
};

struct part_judge {
	uv_loop_t *loop;
	struct llm_client *llm;
	struct budget *budget;
	struct validator_judge hook;
	struct part_judge_cache cache;
	struct ask *inflight;
	struct compose_run *run;
	uint64_t calls;
};

static void on_answer(void *ud, const struct compose_result *res)
{
	struct ask *a = ud;
	struct part_judge *j = a->j;
	if (!j) {
		free(a);
		return;
	}
	j->inflight = NULL;
	j->run = NULL;
	char why[GA_ERR_MSG_MAX + 64];
	int verdict;
	if (res->stop == COMPOSE_STOP_FINAL && res->content) {
		verdict = part_judge_read(res->content);
		part_judge_cache_put(&j->cache, a->key, verdict);
		snprintf(why, sizeof why, "the model judged it %s (\"%.20s\")",
		         verdict ? "an echo" : "new", res->content);
	} else {
		/* §10.6: fail open, not cached — the next ask tries again. */
		verdict = -1;
		snprintf(why, sizeof why, "the judge could not answer (%s: %s): not an echo",
		         res->stop_name ? res->stop_name : "?", res->reason);
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "echo judge failed open", "stop",
		       res->stop_name ? res->stop_name : "?", "reason", res->reason);
	}
	void (*done)(void *, int, const char *) = a->done;
	void *done_ud = a->done_ud;
	free(a);
	done(done_ud, verdict, why);
}

static void judge_ask(void *ud, const char *candidate, const char *const *window, size_t n,
                      void (*done)(void *done_ud, int verdict, const char *reason), void *done_ud)
{
	struct part_judge *j = ud;
	unsigned char key[32];
	part_judge_key(candidate, window, n, key);
	int cached = part_judge_cache_get(&j->cache, key);
	if (cached >= 0) {
		done(done_ud, cached,
		     cached ? "the judge's cached verdict: an echo"
		            : "the judge's cached verdict: new");
		return;
	}
	if (n == 0) {
		done(done_ud, 0, "nothing to compare with: not an echo");
		return;
	}
	if (j->inflight) {
		done(done_ud, -1, "the judge is busy with another candidate: not an echo");
		return;
	}
	char *user = part_judge_prompt(candidate, window, n);
	struct llm_message msg = {.role = LLM_ROLE_USER, .content = user};
	struct ask *a = xcalloc(1, sizeof *a);
	a->j = j;
	memcpy(a->key, key, 32);
	a->done = done;
	a->done_ud = done_ud;
	struct compose_opts o = {
	        .loop = j->loop,
	        .llm = j->llm,
	        .budget = j->budget,
	        .system_prompt = part_judge_system(),
	        .messages = &msg,
	        .n_messages = 1,
	        .max_rounds = 1,
	        .max_tokens = PART_JUDGE_MAX_TOKENS,
	        .temperature = 0,
	        .has_temperature = true,
	        .done = on_answer,
	        .ud = a,
	};
	struct ga_err err = {{0}};
	j->run = compose_start(&o, &err);
	free(user);
	if (!j->run) {
		free(a);
		char why[GA_ERR_MSG_MAX + 64];
		snprintf(why, sizeof why, "the judge could not ask the model (%s): not an echo",
		         err.msg);
		done(done_ud, -1, why);
		return;
	}
	j->inflight = a;
	j->calls++;
}

struct part_judge *part_judge_new(uv_loop_t *loop, struct llm_client *llm, struct budget *budget)
{
	if (!loop || !llm)
		return NULL;
	struct part_judge *j = xcalloc(1, sizeof *j);
	j->loop = loop;
	j->llm = llm;
	j->budget = budget;
	j->hook = (struct validator_judge){.ask = judge_ask, .ud = j};
	return j;
}

void part_judge_free(struct part_judge *j)
{
	if (!j)
		return;
	if (j->inflight) {
		j->inflight->j = NULL; /* on_answer frees it, calling nobody */
		compose_cancel(j->run);
	}
	free(j);
}

const struct validator_judge *part_judge_validator(struct part_judge *j)
{
	return j ? &j->hook : NULL;
}

void part_judge_clear(struct part_judge *j)
{
	if (j)
		part_judge_cache_clear(&j->cache);
}

size_t part_judge_cached(const struct part_judge *j)
{
	return j ? j->cache.n : 0;
}

uint64_t part_judge_calls(const struct part_judge *j)
{
	return j ? j->calls : 0;
}
