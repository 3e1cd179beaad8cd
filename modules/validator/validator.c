/*
 * validator — the post-generation checks. Contract in validator.h; the
 * checks and their order are spec space-validation.md §9.
 */
#include "modules/validator/validator.h"

#include "modules/decisions/decision.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "common/strbuf.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/validator/validator_text.h"

/* §5.3 role budgets in action mode; discussion doubles them. */
#define ROLE_BUDGET_ACTOR             3
#define ROLE_BUDGET_REVIEWER          2
#define ROLE_BUDGET_OBSERVER          1
#define ROLE_BUDGET_DISCUSSION_FACTOR 2
/* §7: T_sat = base + N (+ discussion bonus). */
#define SATURATION_BASE             4
#define SATURATION_DISCUSSION_BONUS 4
/* §5.4 observer thresholds. */
#define OBSERVER_THRESHOLD_ACTION     3
#define OBSERVER_THRESHOLD_DISCUSSION 5
/* After an echo opener, fewer content words than this is agreement alone. */
#define VALIDATOR_OPENER_MIN_TOKENS 3
/* After an echo opener, at most this share of new stems restates. */
#define VALIDATOR_OPENER_NOVELTY_MAX 0.45
/* GitHub comments are markdown documents; sentence count is no limit there. */
#define VALIDATOR_GITHUB_MAX_SENTENCES 100000

static const struct validator_limits limits_table[] = {
        [VALIDATOR_PLATFORM_SPACE] = {VALIDATOR_SPACE_MAX_UNITS, VALIDATOR_UNIT_UTF16,
                                      VALIDATOR_SPACE_MAX_SENTENCES, false},
        [VALIDATOR_PLATFORM_BLUESKY] = {VALIDATOR_BLUESKY_MAX_GRAPHEMES, VALIDATOR_UNIT_GRAPHEMES,
                                        VALIDATOR_SPACE_MAX_SENTENCES, false},
        [VALIDATOR_PLATFORM_GITHUB] = {VALIDATOR_GITHUB_MAX_CHARS, VALIDATOR_UNIT_CODEPOINTS,
                                       VALIDATOR_GITHUB_MAX_SENTENCES, true},
};

const struct validator_limits *validator_limits_for(enum validator_platform p)
{
	if ((unsigned)p > VALIDATOR_PLATFORM_GITHUB)
		p = VALIDATOR_PLATFORM_SPACE;
	return &limits_table[p];
}

const char *validator_verdict_name(enum validator_verdict v)
{
	switch (v) {
	case VALIDATOR_ACCEPT:
		return "accept";
	case VALIDATOR_REJECT:
		return "reject";
	case VALIDATOR_TRIM:
		return "trim";
	case VALIDATOR_REFER:
		return "refer";
	}
	return "?";
}

const char *validator_platform_name(enum validator_platform p)
{
	switch (p) {
	case VALIDATOR_PLATFORM_SPACE:
		return "space";
	case VALIDATOR_PLATFORM_BLUESKY:
		return "bluesky";
	case VALIDATOR_PLATFORM_GITHUB:
		return "github";
	}
	return "?";
}

const char *validator_mode_name(enum validator_mode m)
{
	return m == VALIDATOR_MODE_ACTION ? "action" : "discussion";
}

const char *validator_role_name(enum validator_role r)
{
	switch (r) {
	case VALIDATOR_ROLE_ACTOR:
		return "actor";
	case VALIDATOR_ROLE_REVIEWER:
		return "reviewer";
	case VALIDATOR_ROLE_OBSERVER:
		return "observer";
	}
	return "?";
}

/* --- measurements ------------------------------------------------------- */

/* Is there whitespace (or the end) at s[i]? */
static bool space_or_end(const char *s, size_t len, size_t i)
{
	if (i >= len)
		return true;
	utf8proc_int32_t cp;
	utf8proc_ssize_t n =
	        utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(len - i), &cp);
	return n > 0 && utf8_js_space((unsigned int)cp);
}

static bool url_start(const char *s, size_t len, size_t i)
{
	return (len - i >= 7 && memcmp(s + i, "http://", 7) == 0) ||
	       (len - i >= 8 && memcmp(s + i, "https://", 8) == 0);
}

static bool is_terminal(char c)
{
	return c == '.' || c == '!' || c == '?';
}

size_t validator_count_sentences(const char *s, size_t len)
{
	size_t count = 0, i = 0;
	while (i < len) {
		if (s[i] == 'h' && url_start(s, len, i)) {
			/* §9.1: a URL (with any trailing period) is one word. */
			while (i < len && !space_or_end(s, len, i))
				i++;
			continue;
		}
		if (is_terminal(s[i])) {
			size_t j = i;
			while (j < len && is_terminal(s[j]))
				j++;
			if (space_or_end(s, len, j))
				count++;
			i = j;
			continue;
		}
		if (s[i] == ';' && i + 1 < len && space_or_end(s, len, i + 1))
			count++;
		i++;
	}
	return count;
}

size_t validator_measure(const char *s, size_t len, enum validator_unit unit)
{
	size_t n = 0, i = 0;
	utf8proc_int32_t prev = -1;
	utf8proc_int32_t state = 0;
	while (i < len) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
		                                      (utf8proc_ssize_t)(len - i), &cp);
		if (k <= 0) { /* invalid byte: counts as one of anything */
			n++;
			i++;
			prev = -1;
			continue;
		}
		switch (unit) {
		case VALIDATOR_UNIT_UTF16:
			n += cp >= 0x10000 ? 2 : 1;
			break;
		case VALIDATOR_UNIT_CODEPOINTS:
			n++;
			break;
		case VALIDATOR_UNIT_GRAPHEMES:
			if (prev < 0 || utf8proc_grapheme_break_stateful(prev, cp, &state))
				n++;
			prev = cp;
			break;
		}
		i += (size_t)k;
	}
	return n;
}

/* --- check 1b: auto-trim ------------------------------------------------ */

static size_t skip_ws(const char *s, size_t len, size_t i)
{
	while (i < len && space_or_end(s, len, i)) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
		                                      (utf8proc_ssize_t)(len - i), &cp);
		i += k > 0 ? (size_t)k : 1;
	}
	return i;
}

/* §9.1 1b: sentence chunks (text up to a run of [.!?] followed by space or
 * end), joined greedily while they fit. A trailing fragment without final
 * punctuation is a chunk too (§16.10). Returns a heap
 * string or NULL when not even the first chunk fits. */
static char *auto_trim(const char *s, size_t len, const struct validator_limits *lim)
{
	struct strbuf out = {0};
	sb_init(&out, len + 1);
	size_t chunks = 0, i = skip_ws(s, len, 0);
	while (i < len) {
		size_t start = i, end = len;
		for (size_t j = i; j < len; j++) {
			if (!is_terminal(s[j]))
				continue;
			size_t k = j;
			while (k < len && is_terminal(s[k]))
				k++;
			if (space_or_end(s, len, k)) {
				end = k;
				break;
			}
			j = k - 1;
		}
		size_t e = end;
		while (e > start && space_or_end(s, len, e - 1) && (unsigned char)s[e - 1] < 0x80)
			e--;
		if (e > start) {
			size_t before = out.len;
			if (out.len)
				sb_putc(&out, ' ');
			sb_append(&out, s + start, e - start);
			if (chunks + 1 > lim->max_sentences ||
			    validator_measure(out.buf, out.len, lim->unit) > lim->max_len) {
				out.len = before;
				out.buf[before] = '\0';
				break;
			}
			chunks++;
		}
		i = skip_ws(s, len, end);
	}
	if (out.len == 0) {
		sb_free(&out);
		return NULL;
	}
	return sb_detach(&out);
}

/* --- check 2: lists ----------------------------------------------------- */

/* §9.1 check 2 on normalised text (en/em dash bullets read as '-'); an
 * indented bullet is a bullet too (§16.17). */
static bool has_list(const char *t, size_t n)
{
	size_t i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && (t[j] == ' ' || t[j] == '\t'))
			j++;
		if (j < n) {
			unsigned char c = (unsigned char)t[j];
			if ((c == '-' || c == '*') && j + 1 < n &&
			    (t[j + 1] == ' ' || t[j + 1] == '\t'))
				return true;
			/* • U+2022 */
			if (c == 0xE2 && j + 3 < n && (unsigned char)t[j + 1] == 0x80 &&
			    (unsigned char)t[j + 2] == 0xA2 &&
			    (t[j + 3] == ' ' || t[j + 3] == '\t'))
				return true;
			size_t k = j;
			while (k < n && t[k] >= '0' && t[k] <= '9')
				k++;
			if (k > j && k + 1 < n && (t[k] == '.' || t[k] == ')') &&
			    (t[k + 1] == ' ' || t[k + 1] == '\t' || t[k + 1] == '\n'))
				return true;
		}
		const char *nl = memchr(t + i, '\n', n - i);
		if (!nl)
			break;
		i = (size_t)(nl - t) + 1;
	}
	return false;
}

/* --- the checks --------------------------------------------------------- */

static enum validator_verdict reject(struct validator_decision *d, const char *rule, bool salvage,
                                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static enum validator_verdict reject(struct validator_decision *d, const char *rule, bool salvage,
                                     const char *fmt, ...)
{
	d->verdict = VALIDATOR_REJECT;
	d->rule = rule;
	d->salvage = salvage;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->reason, sizeof d->reason, fmt, ap);
	va_end(ap);
	free(d->text);
	d->text = NULL;
	return d->verdict;
}

static size_t role_budget(enum validator_role role, enum validator_mode mode)
{
	size_t b = role == VALIDATOR_ROLE_OBSERVER   ? ROLE_BUDGET_OBSERVER
	           : role == VALIDATOR_ROLE_REVIEWER ? ROLE_BUDGET_REVIEWER
	                                             : ROLE_BUDGET_ACTOR;
	return mode == VALIDATOR_MODE_DISCUSSION ? b * ROLE_BUDGET_DISCUSSION_FACTOR : b;
}

/* Checks `from`..14 on text (the candidate, or its trimmed form). */
static enum validator_verdict run_checks(int from, const char *text,
                                         const struct validator_context *ctx,
                                         struct validator_decision *d)
{
	const bool has_c = ctx->n_commitments > 0;
	const bool action = ctx->mode == VALIDATOR_MODE_ACTION;
	const struct validator_limits *lim =
	        ctx->limits ? ctx->limits : validator_limits_for(ctx->platform);
	size_t nlen;
	char *norm = validator_text_normalize(text, strlen(text), &nlen);
	const char *pat = NULL;
	enum validator_verdict v = VALIDATOR_ACCEPT;

	struct echo_own_hit own;
	if (from <= 2 && ctx->own && echo_own_match(ctx->own, norm, nlen, &own)) {
		if (own.quote_words)
			v = reject(d, "own_instructions", has_c,
			           "Own instructions: quotes %zu words of the agent's own prompt, "
			           "skills or tool descriptions",
			           own.quote_words);
		else
			v = reject(d, "own_instructions", has_c,
			           "Own instructions: %zu of %zu clauses restate the agent's own "
			           "prompt, skills or tool descriptions (\"%s\")",
			           own.matched, own.clauses, own.example);
		goto out;
	}
	if (from <= 2 && !lim->allow_lists && has_list(norm, nlen)) {
		v = reject(d, "list", has_c,
		           "Contains list: bullet or numbered lines read as a "
		           "report, not a chat message");
		goto out;
	}
	if (from <= 3 && !has_c &&
	    validator_phrase_find(VALIDATOR_LIST_EMPTY_PROMISE, norm, nlen, &pat, NULL)) {
		v = reject(d, "empty_promise", false,
		           "Empty promise: \"%s\" promises an action but no commitment backs it",
		           pat);
		goto out;
	}
	/* 4 — an echo opener is an echo when what follows it adds nothing:
	 * nothing at all ("Exactly."), or a restatement of the window. "Building
	 * on that, <something new>" is a contribution. Without a window there
	 * is nothing to compare with, and the opener alone decides. */
	bool opener_cleared = false;
	size_t oend = 0;
	if (from <= 4 &&
	    validator_phrase_match(VALIDATOR_LIST_ECHO_OPENER, norm, nlen, &pat, NULL, &oend)) {
		bool echo = true;
		if (ctx->window) {
			struct echo_params def = echo_params_default();
			echo_window_evaluate_members(ctx->window, norm + oend, nlen - oend,
			                             ctx->members, ctx->n_members,
			                             ctx->echo ? ctx->echo : &def, &d->echo);
			d->echo_ran = true;
			/* The opener announces agreement: what follows is an
			 * echo already when it is mostly old words and
			 * changes nothing. */
			const struct echo_result *e = &d->echo;
			echo = e->candidate_tokens < VALIDATOR_OPENER_MIN_TOKENS || e->echo ||
			       e->judge_band ||
			       (!e->new_number && !e->added_number && !e->new_owner &&
			        !e->transfer && !e->new_artifact && !e->polarity &&
			        e->novelty <= VALIDATOR_OPENER_NOVELTY_MAX);
			/* ... or a repetition of the host's words: agreement
			 * followed by the question asked is no answer. Only the
			 * ensemble's verdict counts here (an answer shares the
			 * question's words; a repetition is what it catches). */
			if (!echo) {
				struct echo_result hc;
				echo_window_evaluate_context(ctx->window, norm + oend, nlen - oend,
				                             ctx->members, ctx->n_members,
				                             ctx->echo ? ctx->echo : &def, &hc);
				if (hc.echo)
					d->echo = hc;
				echo = hc.echo;
			}
		}
		if (echo) {
			v = reject(d, "echo_opener", has_c, "Echo: opens with \"%s\" and %s", pat,
			           !ctx->window ? "restates agreement instead of adding"
			           : d->echo.candidate_tokens < VALIDATOR_OPENER_MIN_TOKENS
			                   ? "adds nothing after it"
			                   : "restates what was said after it");
			goto out;
		}
		opener_cleared = true;
	}
	if (from <= 5 && !has_c && ctx->window && !opener_cleared) {
		struct echo_params def = echo_params_default();
		echo_window_evaluate_members(ctx->window, norm, nlen, ctx->members, ctx->n_members,
		                             ctx->echo ? ctx->echo : &def, &d->echo);
		d->echo_ran = true;
		if (d->echo.echo) {
			v = reject(d, "semantic_echo", false,
			           "Semantic echo (ensemble): %s, score %.2f, novelty %.2f",
			           d->echo.strategy_text, d->echo.score, d->echo.novelty);
			goto out;
		}
		if (d->echo.judge_band && ctx->judge && ctx->judge->ask) {
			d->verdict = v = VALIDATOR_REFER;
			d->rule = "semantic_echo_judge";
			d->resume_at = 7;
			snprintf(d->reason, sizeof d->reason,
			         "Borderline echo (pair %.2f, novelty %.2f): the judge decides",
			         d->echo.pair, d->echo.novelty);
			goto out;
		}
		if (d->echo.judge_band) {
			/* No judge configured: the ensemble decides the band, and
			 * a message that is mostly old words with a close match is
			 * more likely an echo than not (tests/data/echo: 1 of 145
			 * non-echoes falls in the band, most band cases are
			 * paraphrases). Silence is the cheap mistake. */
			v = reject(
			        d, "semantic_echo", false,
			        "Semantic echo (ensemble, borderline band without a judge): pair "
			        "%.2f, novelty %.2f",
			        d->echo.pair, d->echo.novelty);
			goto out;
		}
	}
	if (from <= 7 && !has_c && ctx->connected_agents >= 2) {
		size_t budget = role_budget(ctx->role, ctx->mode);
		if (ctx->own_msgs >= budget) {
			v = reject(d, "role_budget", false,
			           "Role message budget exceeded: %zu messages sent, %s budget in "
			           "%s mode is %zu",
			           ctx->own_msgs, validator_role_name(ctx->role),
			           validator_mode_name(ctx->mode), budget);
			goto out;
		}
	}
	if (from <= 8 && action &&
	    validator_phrase_find(VALIDATOR_LIST_DEFERENCE, norm, nlen, &pat, NULL)) {
		v = reject(d, "deference", has_c,
		           "Deference: \"%s\" waits for someone else instead of acting", pat);
		goto out;
	}
	if (from <= 9 && action && ctx->detected_repo && ctx->detected_repo[0] &&
	    validator_phrase_find(VALIDATOR_LIST_REPO_AMNESIA, norm, nlen, &pat, NULL)) {
		v = reject(d, "repo_amnesia", has_c,
		           "Repo amnesia: \"%s\" asks for a repo, but the conversation already "
		           "names %.80s",
		           pat, ctx->detected_repo);
		goto out;
	}
	if (from <= 10 && action && !has_c &&
	    validator_phrase_find(VALIDATOR_LIST_META, norm, nlen, &pat, NULL)) {
		v = reject(d, "meta_discussion", false,
		           "Meta-discussion: \"%s\" talks about the artifact instead of making it",
		           pat);
		goto out;
	}
	if (from <= 11 && action && !has_c &&
	    validator_phrase_find(VALIDATOR_LIST_SCOPE, norm, nlen, &pat, NULL)) {
		v = reject(d, "scope_inflation", false,
		           "Scope inflation: \"%s\" adds scope to a request that has an owner",
		           pat);
		goto out;
	}
	if (from <= 12 && action && ctx->pending_request && !ctx->is_action_owner &&
	    validator_phrase_find(VALIDATOR_LIST_NON_OWNER, norm, nlen, &pat, NULL)) {
		/* Another agent owns the action: never salvage (§9.1 check 12). */
		v = reject(d, "non_owner_action", false,
		           "Non-owner action: \"%s\" announces the host's request, which another "
		           "agent owns",
		           pat);
		goto out;
	}
	if (from <= 13 && !has_c) {
		size_t n = ctx->connected_agents ? ctx->connected_agents : 1;
		size_t tsat = SATURATION_BASE + n + (action ? 0 : SATURATION_DISCUSSION_BONUS);
		if (ctx->agent_msgs_since_host >= tsat) {
			v = reject(
			        d, "saturated", false,
			        "Conversation saturated: %zu agent messages since the host spoke "
			        "(limit %zu)",
			        ctx->agent_msgs_since_host, tsat);
			goto out;
		}
	}
	if (from <= 14 && !has_c && ctx->role == VALIDATOR_ROLE_OBSERVER) {
		size_t tobs = action ? OBSERVER_THRESHOLD_ACTION : OBSERVER_THRESHOLD_DISCUSSION;
		if (ctx->agent_msgs_since_host >= tobs) {
			v = reject(d, "observer_silence", false,
			           "Observer silence enforced: %zu agent messages since the host, "
			           "observers stop at %zu",
			           ctx->agent_msgs_since_host, tobs);
			goto out;
		}
	}
	if (d->text) {
		d->verdict = v = VALIDATOR_TRIM;
		d->rule = "trimmed";
	} else {
		d->verdict = v = VALIDATOR_ACCEPT;
		d->rule = "ok";
		snprintf(d->reason, sizeof d->reason, "passed all checks");
	}
out:
	free(norm);
	return v;
}

static bool blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		if (!space_or_end(s, len, i))
			return false;
		utf8proc_int32_t cp;
		utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
		                                      (utf8proc_ssize_t)(len - i), &cp);
		i += k > 0 ? (size_t)k : 1;
	}
	return true;
}

enum validator_verdict validator_validate(const char *candidate,
                                          const struct validator_context *ctx,
                                          struct validator_decision *d)
{
	static const struct validator_context empty_ctx;
	memset(d, 0, sizeof *d);
	d->rule = "ok";
	d->echo.matched = -1;
	if (!ctx)
		ctx = &empty_ctx;
	const struct validator_limits *lim =
	        ctx->limits ? ctx->limits : validator_limits_for(ctx->platform);
	const bool has_c = ctx->n_commitments > 0;

	/* 0 — preconditions, like the schema gate (§8.2) before the checks. */
	size_t len = candidate ? strnlen(candidate, VALIDATOR_INPUT_MAX_BYTES + 1) : 0;
	if (len > VALIDATOR_INPUT_MAX_BYTES)
		return reject(d, "too_long", has_c, "Too long: more than %d bytes",
		              VALIDATOR_INPUT_MAX_BYTES);
	if (!candidate || blank(candidate, len))
		return reject(d, "empty", false, "Empty message: nothing to send");
	if (!utf8_valid(candidate, len))
		return reject(d, "invalid_utf8", false,
		              "Invalid UTF-8: the message cannot be sent as text");

	/* 1 — length, and 1b — discussion-mode recovery by trimming. */
	d->length = validator_measure(candidate, len, lim->unit);
	d->sentences = validator_count_sentences(candidate, len);
	if (d->length > lim->max_len || d->sentences > lim->max_sentences) {
		char *trimmed = NULL;
		if (ctx->mode == VALIDATOR_MODE_DISCUSSION && !has_c)
			trimmed = auto_trim(candidate, len, lim);
		if (!trimmed)
			return reject(d, "too_long", has_c,
			              "Too long: %zu %s and %zu sentences, limits %zu and %zu",
			              d->length,
			              lim->unit == VALIDATOR_UNIT_GRAPHEMES ? "graphemes"
			              : lim->unit == VALIDATOR_UNIT_UTF16   ? "UTF-16 units"
			                                                    : "characters",
			              d->sentences, lim->max_len, lim->max_sentences);
		d->text = trimmed;
		snprintf(d->reason, sizeof d->reason,
		         "[VALIDATION RECOVERED] trimmed from %zu to %zu %s to fit the limit",
		         d->length, validator_measure(trimmed, strlen(trimmed), lim->unit),
		         lim->unit == VALIDATOR_UNIT_GRAPHEMES ? "graphemes" : "units");
	}
	/* Later checks see the text that would be sent (§16.10). */
	return run_checks(2, d->text ? d->text : candidate, ctx, d);
}

int validator_refer(const struct validator_context *ctx, const char *candidate,
                    void (*done)(void *done_ud, int verdict, const char *reason), void *done_ud)
{
	if (!ctx || !ctx->judge || !ctx->judge->ask || !done)
		return -1;
	const char *texts[ECHO_PAIRWISE_MAX];
	size_t n = echo_window_recent_texts(ctx->window, texts, ECHO_PAIRWISE_MAX);
	ctx->judge->ask(ctx->judge->ud, candidate, texts, n, done, done_ud);
	return 0;
}

enum validator_verdict validator_resume(const char *candidate, const struct validator_context *ctx,
                                        int verdict, const char *judge_reason,
                                        struct validator_decision *d)
{
	if (d->verdict != VALIDATOR_REFER)
		return d->verdict;
	if (verdict == 1)
		return reject(d, "semantic_echo_judge", false, "Semantic echo (LLM judge): %.200s",
		              judge_reason && judge_reason[0] ? judge_reason
		                                              : "same point as a recent message");
	if (d->text) /* keep saying why the text was trimmed */
		snprintf(d->reason, sizeof d->reason,
		         "[VALIDATION RECOVERED] trimmed to fit the limit");
	return run_checks(d->resume_at, d->text ? d->text : candidate, ctx, d);
}

void validator_decision_clear(struct validator_decision *d)
{
	if (!d)
		return;
	free(d->text);
	d->text = NULL;
}

void validator_to_decision(const struct validator_decision *vd, struct decision *out)
{
	const char *rule = vd->rule ? vd->rule : validator_verdict_name(vd->verdict);
	switch (vd->verdict) {
	case VALIDATOR_ACCEPT:
		decision_set(out, VERDICT_APPROVE, rule, "%s",
		             vd->reason[0] ? vd->reason : "approved as written");
		break;
	case VALIDATOR_TRIM:
		decision_set(out, VERDICT_EDIT, rule, "%s", vd->reason);
		break;
	case VALIDATOR_REFER:
		decision_set(out, VERDICT_REJECT, rule, "borderline and no judge to ask: %s",
		             vd->reason);
		break;
	default:
		decision_set(out, VERDICT_REJECT, rule, "%s", vd->reason);
		break;
	}
}
