/* reflection — the cycle that integrates experiences into SELF.md
 * (reflection.h). */
#include "modules/reflection/reflection.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/fsx.h"
#include "common/hash.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/conversation/event.h"
#include "modules/identity/self.h"
#include "modules/identity/soul.h"
#include "modules/reflection/history.h"
#include "modules/reflection/internal.h"

#define LOG_COMP "reflection"

/* ---- policy -------------------------------------------------------------------- */

bool reflect_due(const struct reflect_due_in *in, struct decision *d)
{
	struct decision tmp;
	if (!d)
		d = &tmp;
	if (in->pending == 0) {
		decision_set(d, VERDICT_BLOCK, "idle",
		             "no new experience since the last reflection: no model call");
		return false;
	}
	int64_t since = in->now_ms - in->last_attempt_ms;
	if (in->last_attempt_ms == 0 || since >= REFLECT_INTERVAL_MS) {
		decision_set(d, VERDICT_PASS, "reflection_due", "%zu new experience%s, %s",
		             in->pending, in->pending == 1 ? "" : "s",
		             in->last_attempt_ms ? "6 h since the last reflection"
		                                 : "first reflection");
		return true;
	}
	if (in->pending >= REFLECT_EARLY_PENDING && since >= REFLECT_EARLY_MIN_GAP_MS) {
		decision_set(d, VERDICT_PASS, "reflection_due",
		             "%zu new experiences (>= %d): reflecting early", in->pending,
		             REFLECT_EARLY_PENDING);
		return true;
	}
	decision_set(d, VERDICT_BLOCK, "interval",
	             "%zu new experience%s; next reflection in %" PRId64 " min", in->pending,
	             in->pending == 1 ? "" : "s",
	             (int64_t)((REFLECT_INTERVAL_MS - since + 59999) / 60000));
	return false;
}

const char *reflect_outcome_name(enum reflect_outcome o)
{
	switch (o) {
	case REFLECT_CHANGED:
		return "changed";
	case REFLECT_UNCHANGED:
		return "unchanged";
	case REFLECT_REFUSED:
		return "refused";
	case REFLECT_GARBAGE:
		return "garbage";
	}
	return "unknown";
}

void reflect_result_free(struct reflect_result *r)
{
	free(r->self_md);
	free(r->summary);
	cJSON_Delete(r->peers);
	r->self_md = r->summary = NULL;
	r->peers = NULL;
}

static const char tool_params[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"self_md\":{\"type\":\"string\",\"description\":\"The whole new SELF.md\"},"
        "\"summary\":{\"type\":\"string\",\"description\":\"1-2 sentences for your peers: what "
        "changed in you\"},"
        "\"consistent_with_soul\":{\"type\":\"boolean\",\"description\":\"false if any of this "
        "contradicts SOUL.md\"},"
        "\"peers\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
        "\"name\":{\"type\":\"string\"},\"memorable\":{\"type\":\"string\"},"
        "\"strength\":{\"type\":\"string\"},\"disagreement\":{\"type\":\"boolean\"},"
        "\"agreement\":{\"type\":\"boolean\"}},\"required\":[\"name\"]}}},"
        "\"required\":[\"self_md\",\"summary\",\"consistent_with_soul\"],"
        "\"additionalProperties\":false}";

static const struct llm_tool_def the_tool = {
        .name = REFLECT_TOOL,
        .description = "Replace SELF.md with the whole new text after integrating the experiences.",
        .parameters_json = tool_params,
};

const struct llm_tool_def *reflect_tool(void)
{
	return &the_tool;
}

static size_t count_sections(const char *s)
{
	size_t n = 0;
	for (const char *p = s; p && *p; p++)
		if ((p == s || p[-1] == '\n') && p[0] == '#' && p[1] == '#' && p[2] != '#')
			n++;
	return n;
}

/* A heading that is SOUL itself ("# SOUL", "## SOUL.md", any case): SELF.md
 * holding a SOUL is an attempt to write one. ("## Soul searching" is not.) */
static bool has_soul_heading(const char *s)
{
	for (const char *p = s; p && *p; p++) {
		if (p != s && p[-1] != '\n')
			continue;
		const char *q = p;
		while (*q == '#')
			q++;
		if (q == p)
			continue;
		while (*q == ' ' || *q == '\t')
			q++;
		if (strncasecmp(q, "soul", 4) != 0)
			continue;
		q += 4;
		if (strncasecmp(q, ".md", 3) == 0)
			q += 3;
		while (*q == ' ' || *q == '\t' || *q == '\r')
			q++;
		if (*q == '\n' || *q == '\0')
			return true;
	}
	return false;
}

char *reflect_summary_cut(const char *s)
{
	struct strbuf sb;
	sb_init(&sb, REFLECT_SUMMARY_MAX * 2);
	int sentences = 0;
	bool space = false;
	for (const char *p = s ? s : ""; *p && sentences < 2; p++) {
		if (isspace((unsigned char)*p)) {
			space = sb.len > 0;
			continue;
		}
		if (space)
			sb_putc(&sb, ' ');
		space = false;
		sb_putc(&sb, *p);
		if ((*p == '.' || *p == '!' || *p == '?') &&
		    (p[1] == '\0' || isspace((unsigned char)p[1])))
			sentences++;
	}
	size_t keep = utf8_cut(sb_cstr(&sb), sb.len, REFLECT_SUMMARY_MAX);
	char *out = xstrndup(sb_cstr(&sb), keep);
	sb_free(&sb);
	return out;
}

void reflect_check_output(const struct llm_response *resp, const char *old_self,
                          struct reflect_result *out)
{
	memset(out, 0, sizeof *out);
	out->outcome = REFLECT_GARBAGE;
	const struct llm_tool_call *call = NULL;
	for (size_t i = 0; resp && i < resp->n_tool_calls; i++)
		if (resp->tool_calls[i].name && strcmp(resp->tool_calls[i].name, REFLECT_TOOL) == 0)
			call = &resp->tool_calls[i];
	if (!call) {
		decision_set(&out->why, VERDICT_REJECT, "garbage",
		             "the model did not call %s%s%.80s", REFLECT_TOOL,
		             resp && resp->content ? ": it said " : "",
		             resp && resp->content ? resp->content : "");
		return;
	}
	struct ga_err err = {{0}};
	const char *args = call->arguments ? call->arguments : "";
	cJSON *a = json_parse(args, strlen(args), &err);
	if (!cJSON_IsObject(a)) {
		decision_set(&out->why, VERDICT_REJECT, "garbage",
		             "the %s arguments are not a JSON object: %s", REFLECT_TOOL,
		             a ? "another JSON value" : err.msg);
		cJSON_Delete(a);
		return;
	}
	const cJSON *f;
	cJSON_ArrayForEach(f, a)
	{
		if (strcmp(f->string, "self_md") && strcmp(f->string, "summary") &&
		    strcmp(f->string, "consistent_with_soul") && strcmp(f->string, "peers")) {
			out->outcome = REFLECT_REFUSED;
			decision_set(
			        &out->why, VERDICT_REJECT, "soul",
			        "the reflection tries to write '%.60s' as well as SELF.md: only "
			        "SELF.md is the agent's to change (SOUL.md never)",
			        f->string);
			cJSON_Delete(a);
			return;
		}
	}
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(a, "self_md");
	if (!cJSON_IsString(md) || refl_blank(md->valuestring) ||
	    !utf8_valid(md->valuestring, strlen(md->valuestring)) ||
	    strlen(md->valuestring) > SELF_MAX_BYTES) {
		decision_set(&out->why, VERDICT_REJECT, "garbage", "self_md is %s",
		             !cJSON_IsString(md)           ? "missing or not a string"
		             : refl_blank(md->valuestring) ? "blank"
		                                           : "not UTF-8 or too large");
		cJSON_Delete(a);
		return;
	}
	const char *text = md->valuestring;
	const cJSON *consistent = cJSON_GetObjectItemCaseSensitive(a, "consistent_with_soul");
	out->outcome = REFLECT_REFUSED;
	if (cJSON_IsFalse(consistent)) {
		decision_set(&out->why, VERDICT_REJECT, "soul",
		             "the model says this reflection contradicts SOUL.md: refused");
	} else if (has_soul_heading(text)) {
		decision_set(&out->why, VERDICT_REJECT, "soul",
		             "the new SELF.md holds a SOUL heading: SOUL.md is not the agent's to "
		             "rewrite, refused");
	} else if (old_self && count_sections(old_self) > 0 && count_sections(text) == 0) {
		decision_set(&out->why, VERDICT_REJECT, "shrink",
		             "the new SELF.md drops every ## section (%zu before): refused",
		             count_sections(old_self));
	} else if (old_self &&
	           strlen(text) * 100 < strlen(old_self) * (100 - REFLECT_MAX_SHRINK_PCT)) {
		decision_set(
		        &out->why, VERDICT_REJECT, "shrink",
		        "the new SELF.md is %zu bytes, the old one %zu: more than %d %% smaller, "
		        "refused",
		        strlen(text), strlen(old_self), REFLECT_MAX_SHRINK_PCT);
	} else {
		out->outcome = old_self && strcmp(old_self, text) == 0 ? REFLECT_UNCHANGED
		                                                       : REFLECT_CHANGED;
		out->self_md = xstrdup(text);
		out->summary = reflect_summary_cut(json_string_or(a, "summary", ""));
		const cJSON *peers = cJSON_GetObjectItemCaseSensitive(a, "peers");
		if (cJSON_IsArray(peers))
			out->peers = cJSON_Duplicate(peers, 1);
		decision_set(
		        &out->why, out->outcome == REFLECT_CHANGED ? VERDICT_APPROVE : VERDICT_INFO,
		        "self_update", "%s (%zu bytes, %zu sections)%s%.200s",
		        out->outcome == REFLECT_CHANGED ? "SELF.md rewritten" : "SELF.md unchanged",
		        strlen(text), count_sections(text), *out->summary ? ": " : "",
		        out->summary);
	}
	cJSON_Delete(a);
}

char *reflect_user_message(const struct exp_store *exps, const char *peers_text, int64_t running_ms,
                           const char **ids, size_t *n_ids)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	*n_ids = 0;
	sb_puts(&sb, "# Experiences since your last reflection\n");
	for (int t = 0; t < EXP_TYPE_COUNT; t++) {
		bool header = false;
		for (size_t i = 0; i < exp_store_count(exps) && *n_ids < REFLECT_PROMPT_MAX; i++) {
			const struct experience *e = exp_store_at(exps, i);
			if (e->integrated || (int)e->type != t)
				continue;
			if (!header)
				sb_printf(&sb, "\n## %s\n", exp_type_label((enum exp_type)t));
			header = true;
			char ts[TIME_ISO_LEN + 1];
			sb_printf(&sb, "- %s — %s", time_format_iso(e->time_ms, ts), e->what);
			if (e->who && *e->who)
				sb_printf(&sb, " (with %s)", e->who);
			if (e->where && *e->where)
				sb_printf(&sb, " [%s]", e->where);
			if (e->why && *e->why)
				sb_printf(&sb, " — why it mattered: %s", e->why);
			sb_putc(&sb, '\n');
			ids[(*n_ids)++] = e->id;
		}
	}
	if (*n_ids == 0)
		sb_puts(&sb, "\nNo new experiences.\n");
	if (peers_text && *peers_text)
		sb_printf(&sb, "\n# Peers you work with\n%s\n", peers_text);
	int64_t days = running_ms / (24LL * 60 * 60 * 1000);
	if (days > 0)
		sb_printf(&sb,
		          "\nYou have been running %" PRId64 " day%s with %zu experiences held.\n",
		          days, days == 1 ? "" : "s", exp_store_count(exps));
	return sb_detach(&sb);
}

/* ---- the running module ---------------------------------------------------------- */

struct reflection {
	struct reflection_opts o;
	char *memory_dir, *self_path, *soul_path;
	struct exp_store *exps;
	struct peer_memory peers;
	struct voice *voice;
	char *voice_path;
	/* persisted */
	int64_t last_attempt_ms, last_change_ms, started_ms;
	int64_t reflections, changes, tokens_spent;
	char last_outcome[32];
	char *last_summary;
	/* the cycle in flight */
	uint64_t call_id;
	bool running;
	char **cycle_ids;
	size_t n_cycle_ids;
	char *cycle_old_self;
	enum reflect_outcome cycle_outcome;
	reflection_done_fn done;
	void *done_ud;
};

static int64_t now_of(const struct reflection *r)
{
	return r->o.clock ? r->o.clock(r->o.ud) : time_now_ms();
}

static void record(struct reflection *r, const struct decision *d)
{
	log_kv(d->verdict == VERDICT_REJECT || d->verdict == VERDICT_BLOCK ||
	                       d->verdict == VERDICT_FAIL
	               ? LOG_LEVEL_WARN
	               : LOG_LEVEL_INFO,
	       LOG_COMP, "reflection", "verdict", decision_verdict_name(d->verdict), "rule",
	       d->rule ? d->rule : "", "reason", d->reason);
	char id[48];
	snprintf(id, sizeof id, "reflection:%" PRId64, r->reflections);
	decision_log_add(r->o.dlog, now_of(r), "self", "self:reflection", id, STAGE_RECORD, d);
}

static void save_state(struct reflection *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "lastAttemptMs", (double)r->last_attempt_ms);
	cJSON_AddNumberToObject(o, "lastChangeMs", (double)r->last_change_ms);
	cJSON_AddNumberToObject(o, "reflections", (double)r->reflections);
	cJSON_AddNumberToObject(o, "changes", (double)r->changes);
	cJSON_AddNumberToObject(o, "tokensSpent", (double)r->tokens_spent);
	cJSON_AddStringToObject(o, "lastOutcome", r->last_outcome);
	cJSON_AddStringToObject(o, "lastSummary", r->last_summary ? r->last_summary : "");
	struct ga_err err = {{0}};
	if (state_save(r->o.st, REFLECT_STATE_NAME, o, now_of(r), &err) != 0)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "reflection state not saved", "error", err.msg);
	cJSON_Delete(o);
}

/* The schedule and the counters mean the same in every version: an
 * upgrade keeps them (a reset would reflect again at the first check). */
static int keep_state(void *ud, cJSON *data, const char *from_version)
{
	(void)from_version;
	(void)ud;
	return cJSON_IsObject(data) ? 0 : -1;
}

static void load_state(struct reflection *r)
{
	struct state_load_info info;
	cJSON *o = state_load(r->o.st, REFLECT_STATE_NAME, keep_state, NULL, &info);
	if (!o)
		return;
	r->last_attempt_ms = json_int_or(o, "lastAttemptMs", 0);
	r->last_change_ms = json_int_or(o, "lastChangeMs", 0);
	r->reflections = json_int_or(o, "reflections", 0);
	r->changes = json_int_or(o, "changes", 0);
	r->tokens_spent = json_int_or(o, "tokensSpent", 0);
	snprintf(r->last_outcome, sizeof r->last_outcome, "%s",
	         json_string_or(o, "lastOutcome", ""));
	free(r->last_summary);
	r->last_summary = xstrdup(json_string_or(o, "lastSummary", ""));
	cJSON_Delete(o);
}

struct reflection *reflection_new(const struct reflection_opts *opts, struct ga_err *err)
{
	if (!opts->llm || !opts->st || !opts->memory_dir || !opts->self_path || !opts->soul_path) {
		err_set(err,
		        "reflection needs a model, a state store, the memory directory and the "
		        "SELF.md and SOUL.md paths");
		return NULL;
	}
	if (opts->skills && !skills_find(opts->skills, REFLECT_SKILL)) {
		err_set(err, "the '%s' skill (skills/%s/SKILL.md) is not installed", REFLECT_SKILL,
		        REFLECT_SKILL);
		return NULL;
	}
	struct exp_store *exps = exp_store_open(opts->memory_dir, err);
	if (!exps)
		return NULL;
	struct reflection *r = xcalloc(1, sizeof *r);
	r->o = *opts;
	r->memory_dir = xstrdup(opts->memory_dir);
	r->self_path = xstrdup(opts->self_path);
	r->soul_path = xstrdup(opts->soul_path);
	r->o.memory_dir = r->memory_dir;
	r->o.self_path = r->self_path;
	r->o.soul_path = r->soul_path;
	if (opts->voice_path) {
		r->voice_path = xstrdup(opts->voice_path);
	} else {
		const char *slash = strrchr(opts->self_path, '/');
		r->voice_path = slash ? xasprintf("%.*s/%s", (int)(slash - opts->self_path),
		                                  opts->self_path, VOICE_FILE)
		                      : xstrdup(VOICE_FILE);
	}
	r->o.voice_path = r->voice_path;
	r->exps = exps;
	peers_init(&r->peers);
	peers_load(&r->peers, opts->st);
	r->voice = voice_open(r->voice_path);
	load_state(r);
	r->started_ms = now_of(r);
	return r;
}

static void cycle_clear(struct reflection *r)
{
	for (size_t i = 0; i < r->n_cycle_ids; i++)
		free(r->cycle_ids[i]);
	free(r->cycle_ids);
	r->cycle_ids = NULL;
	r->n_cycle_ids = 0;
	free(r->cycle_old_self);
	r->cycle_old_self = NULL;
}

void reflection_free(struct reflection *r)
{
	if (!r)
		return;
	if (r->running && r->call_id)
		llm_cancel(r->o.llm, r->call_id);
	reflection_flush(r);
	cycle_clear(r);
	exp_store_free(r->exps);
	peers_free(&r->peers);
	voice_free(r->voice);
	free(r->last_summary);
	free(r->memory_dir);
	free(r->self_path);
	free(r->soul_path);
	free(r->voice_path);
	free(r);
}

void reflection_flush(struct reflection *r)
{
	struct ga_err err = {{0}};
	if (r->peers.dirty && peers_save(&r->peers, r->o.st, now_of(r), &err) != 0)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "peer relationships not saved", "error", err.msg);
}

struct peer_memory *reflection_peers(struct reflection *r)
{
	return &r->peers;
}

struct voice *reflection_voice(struct reflection *r)
{
	return r->voice;
}

struct exp_store *reflection_experiences(struct reflection *r)
{
	return r->exps;
}

bool reflection_running(const struct reflection *r)
{
	return r->running;
}

static void finish(struct reflection *r, enum reflect_outcome outcome, bool ran);

void reflection_cancel(struct reflection *r)
{
	if (!r->running)
		return;
	if (r->call_id)
		llm_cancel(r->o.llm, r->call_id);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "reflection cancelled: the agent is stopping", "pending",
	       LOG_INT(exp_store_pending(r->exps)));
	finish(r, REFLECT_GARBAGE, true);
}

int reflection_add_experience(struct reflection *r, const struct exp_in *in, struct ga_err *err)
{
	int rc = exp_store_add(r->exps, in, now_of(r), err);
	if (rc == 1)
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "experience", "type", exp_type_name(in->type),
		       "what", in->what);
	else if (rc < 0)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "experience not recorded", "error", err->msg);
	return rc;
}

void reflection_observe(struct reflection *r, const struct exp_source *src)
{
	const struct decision_record *rec = src->rec;
	int64_t now = now_of(r);
	/* peers: a live message from a peer opens or continues a conversation;
	 * a commitment made in answer to a peer is an issue co-created */
	if (src->author_kind == CONV_AUTHOR_PEER && src->author && *src->author &&
	    !src->from_history) {
		if (rec->stage == STAGE_EVENT && rec->decision.rule &&
		    strcmp(rec->decision.rule, "event") == 0)
			peers_note_message(&r->peers, src->author, now);
		if (rec->stage == STAGE_RECORD && rec->decision.rule &&
		    strcmp(rec->decision.rule, "commitment") == 0 &&
		    rec->decision.verdict == VERDICT_INFO &&
		    strncmp(rec->decision.reason, "create_issue", 12) == 0)
			peers_count(&r->peers, src->author, PEER_ISSUE_CO_CREATED, now);
	}
	char buf[EXP_TEXT_MAX];
	struct exp_in in;
	if (!exp_from_decision(src, &in, buf, sizeof buf))
		return;
	struct ga_err err = {{0}};
	reflection_add_experience(r, &in, &err);
}

/* ---- the cycle ------------------------------------------------------------------- */

static void finish(struct reflection *r, enum reflect_outcome outcome, bool ran)
{
	r->running = false;
	r->call_id = 0;
	cycle_clear(r);
	reflection_flush(r);
	reflection_done_fn done = r->done;
	void *ud = r->done_ud;
	r->done = NULL;
	if (done)
		done(ud, outcome, ran);
}

static void note_usage(struct reflection *r, const struct llm_response *resp)
{
	if (!resp || !resp->has_usage)
		return;
	int64_t total = resp->usage.total_tokens
	                        ? resp->usage.total_tokens
	                        : resp->usage.prompt_tokens + resp->usage.completion_tokens;
	r->tokens_spent += total;
	struct ga_err err = {{0}};
	if (r->o.budget && budget_record(r->o.budget, now_of(r), resp->usage.prompt_tokens,
	                                 resp->usage.completion_tokens, total, &err) != 0)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "token usage not saved", "error", err.msg);
}

static bool budget_allows(struct reflection *r, const char *what)
{
	struct decision d;
	if (!r->o.budget || budget_check(r->o.budget, now_of(r), false, &d))
		return true;
	budget_note_denied(r->o.budget, now_of(r));
	struct decision n;
	decision_set(&n, VERDICT_BLOCK, BUDGET_RULE, "no %s: %s", what, d.reason);
	record(r, &n);
	return false;
}

/* The `## Voice` section of text, or NULL. Caller frees. */
static char *voice_section(const char *text)
{
	struct self_doc doc;
	struct ga_err err = {{0}};
	self_parse(text, strlen(text), &doc, &err);
	char *v = doc.voice && !refl_blank(doc.voice) ? xstrdup(doc.voice) : NULL;
	self_doc_free(&doc);
	return v;
}

static void voice_done(void *ud, const struct llm_response *resp, const struct llm_error *lerr)
{
	struct reflection *r = ud;
	r->call_id = 0;
	if (lerr && lerr->kind == LLM_ERR_CANCELLED)
		return;
	note_usage(r, resp);
	struct ga_err err = {{0}};
	struct voice_phrases p;
	if (lerr && lerr->kind != LLM_OK) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP,
		       "voice phrases not regenerated: the previous file stays", "error",
		       lerr->msg);
	} else if (!resp->content ||
	           voice_parse(resp->content, strlen(resp->content), true, &p, &err) != 0) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "voice phrases refused: the previous file stays",
		       "error", resp->content ? err.msg : "the model sent no text");
	} else {
		char *text = voice_to_text(&p, now_of(r));
		if (fsx_write_atomic(r->voice_path, text, strlen(text), &err) == 0)
			log_kv(LOG_LEVEL_INFO, LOG_COMP, "voice phrases regenerated", "path",
			       r->voice_path);
		else
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "voice phrases not written", "error",
			       err.msg);
		free(text);
		voice_phrases_free(&p);
	}
	finish(r, r->cycle_outcome, true);
}

/* Regenerates voice-phrases.json from the new SELF.md's Voice; finishes
 * the cycle (now, or when the call returns). */
static void regenerate_voice(struct reflection *r, const char *self_text)
{
	char *voice = voice_section(self_text);
	if (!voice) {
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "SELF.md has no ## Voice: voice phrases kept",
		       "path", r->voice_path);
		finish(r, r->cycle_outcome, true);
		return;
	}
	if (!budget_allows(r, "voice phrase regeneration")) {
		free(voice);
		finish(r, r->cycle_outcome, true);
		return;
	}
	struct ga_err err = {{0}};
	char *current = voice_to_text(&(struct voice_phrases){0}, now_of(r));
	/* the phrases' own placeholders are named in the prompt as themselves */
	const struct skill_var vars[] = {
	        {"voice", voice},           {"current", current},     {"url", "{{url}}"},
	        {"number", "{{number}}"},   {"title", "{{title}}"},   {"details", "{{details}}"},
	        {"summary", "{{summary}}"}, {"handle", "{{handle}}"}, {"type", "{{type}}"}};
	char *prompt = skills_render(r->o.skills, REFLECT_SKILL, REFLECT_VOICE_SECTION, vars,
	                             sizeof vars / sizeof vars[0], &err);
	free(voice);
	free(current);
	if (!prompt) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "voice phrases not regenerated", "error", err.msg);
		finish(r, r->cycle_outcome, true);
		return;
	}
	struct llm_message msg = {.role = LLM_ROLE_USER, .content = prompt};
	struct llm_request req = {.messages = &msg,
	                          .n_messages = 1,
	                          .max_tokens = REFLECT_VOICE_MAX_TOKENS,
	                          .temperature = 0.7,
	                          .has_temperature = true};
	r->call_id = llm_chat(r->o.llm, &req, voice_done, r, &err);
	free(prompt);
	if (!r->call_id) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "voice phrases not regenerated", "error", err.msg);
		finish(r, r->cycle_outcome, true);
	}
}

static void soul_still_pinned(struct reflection *r, const char *when)
{
	struct soul_check sc;
	if (soul_check(r->soul_path, r->o.st, now_of(r), SOUL_CHECK_READONLY, NULL, &sc) != 0)
		log_kv(LOG_LEVEL_ERROR, LOG_COMP, "SOUL.md does not match its pin", "when", when,
		       "message", sc.message);
}

/* The experiences of the prompt are integrated, and what the model noted of
 * peers is remembered — only once its answer was accepted (and, for a
 * change, written). */
static void integrate(struct reflection *r, const struct reflect_result *res)
{
	struct ga_err err = {{0}};
	if (exp_store_mark_integrated(r->exps, (const char *const *)r->cycle_ids, r->n_cycle_ids,
	                              now_of(r), &err) != 0)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "integration not recorded", "error", err.msg);
	if (res->peers)
		peers_apply_notes(&r->peers, res->peers, now_of(r));
}

static void apply_change(struct reflection *r, struct reflect_result *res)
{
	struct ga_err err = {{0}};
	int64_t now = now_of(r);
	if (selfhist_replace(r->memory_dir, r->self_path, res->self_md, strlen(res->self_md),
	                     "reflection", now, &err) != 0) {
		struct decision d;
		decision_set(&d, VERDICT_FAIL, "write", "SELF.md not written: %s", err.msg);
		record(r, &d);
		r->cycle_outcome = REFLECT_GARBAGE;
		snprintf(r->last_outcome, sizeof r->last_outcome, "write_failed");
		save_state(r);
		finish(r, r->cycle_outcome, true);
		return;
	}
	integrate(r, res);
	soul_still_pinned(r, "after SELF.md was written");
	struct self_doc doc;
	self_parse(res->self_md, strlen(res->self_md), &doc, &err);
	for (int i = 0; i < doc.warning_count; i++)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "SELF.md after reflection", "warning",
		       doc.warnings[i]);
	self_doc_free(&doc);
	r->changes++;
	r->last_change_ms = now;
	free(r->last_summary);
	r->last_summary = xstrdup(res->summary);
	save_state(r);
	if (r->o.self_changed)
		r->o.self_changed(r->o.ud);
	if (r->o.broadcast && res->summary[0] && r->o.broadcast(r->o.ud, res->summary) != 0)
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "reflection not shared: not in a room", "summary",
		       res->summary);
	if (r->o.identity && r->o.identity(r->o.ud) != 0)
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "identity not re-sent: not in a room", "after",
		       "reflection");
	regenerate_voice(r, res->self_md);
}

static void reflect_done(void *ud, const struct llm_response *resp, const struct llm_error *lerr)
{
	struct reflection *r = ud;
	r->call_id = 0;
	if (lerr && lerr->kind == LLM_ERR_CANCELLED)
		return;
	note_usage(r, resp);
	struct decision d;
	if (lerr && lerr->kind != LLM_OK) {
		decision_set(&d, VERDICT_FAIL, "model", "the reflection call failed (%s): %s",
		             llm_error_kind_name(lerr->kind), lerr->msg);
		record(r, &d);
		snprintf(r->last_outcome, sizeof r->last_outcome, "model_error");
		save_state(r);
		finish(r, REFLECT_GARBAGE, true);
		return;
	}
	struct reflect_result res;
	reflect_check_output(resp, r->cycle_old_self, &res);
	record(r, &res.why);
	r->cycle_outcome = res.outcome;
	snprintf(r->last_outcome, sizeof r->last_outcome, "%s", reflect_outcome_name(res.outcome));
	if (res.outcome == REFLECT_UNCHANGED)
		integrate(r, &res);
	if (res.outcome == REFLECT_CHANGED) {
		apply_change(r, &res);
	} else {
		save_state(r);
		finish(r, res.outcome, true);
	}
	reflect_result_free(&res);
}

static bool start_cycle(struct reflection *r)
{
	struct ga_err err = {{0}};
	struct decision d;
	struct soul_check sc;
	struct soul soul = {0};
	if (soul_check(r->soul_path, r->o.st, now_of(r), SOUL_CHECK_READONLY, &soul, &sc) != 0) {
		decision_set(&d, VERDICT_BLOCK, "soul", "no reflection: %s", sc.message);
		record(r, &d);
		if (r->o.notify_owner)
			r->o.notify_owner(r->o.ud, sc.message);
		return false;
	}
	size_t len = 0;
	errno = 0;
	char *self = fsx_read_file(r->self_path, SELF_MAX_BYTES, &len, &err);
	if (!self && errno != ENOENT) {
		decision_set(&d, VERDICT_FAIL, "self", "no reflection: %s", err.msg);
		record(r, &d);
		soul_free(&soul);
		return false;
	}
	if (!self)
		self = xstrdup("");
	char *skill = skills_render(r->o.skills, REFLECT_SKILL, NULL, NULL, 0, &err);
	if (!skill) {
		decision_set(&d, VERDICT_FAIL, "skill", "no reflection: %s", err.msg);
		record(r, &d);
		free(self);
		soul_free(&soul);
		return false;
	}
	char *system = skills_system_prompt(soul.text, self, skill);
	free(skill);
	soul_free(&soul);
	char *peers = peers_render(&r->peers, NULL, 0);
	const char *ids[REFLECT_PROMPT_MAX];
	size_t n_ids = 0;
	char *user = reflect_user_message(r->exps, peers, now_of(r) - r->started_ms, ids, &n_ids);
	free(peers);
	struct llm_message msgs[2] = {{.role = LLM_ROLE_SYSTEM, .content = system},
	                              {.role = LLM_ROLE_USER, .content = user}};
	struct llm_request req = {.messages = msgs,
	                          .n_messages = 2,
	                          .tools = &the_tool,
	                          .n_tools = 1,
	                          .tool_choice = LLM_TOOL_CHOICE_NAMED,
	                          .tool_choice_name = REFLECT_TOOL,
	                          .temperature = 0.7,
	                          .has_temperature = true};
	r->call_id = llm_chat(r->o.llm, &req, reflect_done, r, &err);
	free(system);
	free(user);
	if (!r->call_id) {
		decision_set(&d, VERDICT_FAIL, "model", "the reflection call could not start: %s",
		             err.msg);
		record(r, &d);
		free(self);
		return false;
	}
	r->cycle_ids = xcalloc(n_ids ? n_ids : 1, sizeof *r->cycle_ids);
	for (size_t i = 0; i < n_ids; i++)
		r->cycle_ids[i] = xstrdup(ids[i]);
	r->n_cycle_ids = n_ids;
	r->cycle_old_self = self;
	r->running = true;
	r->reflections++;
	r->last_attempt_ms = now_of(r);
	save_state(r);
	decision_set(&d, VERDICT_PASS, "reflection", "reflecting on %zu experience%s", n_ids,
	             n_ids == 1 ? "" : "s");
	record(r, &d);
	return true;
}

bool reflection_tick(struct reflection *r, reflection_done_fn done, void *ud)
{
	if (r->running) {
		if (done)
			done(ud, REFLECT_UNCHANGED, false);
		return false;
	}
	struct reflect_due_in in = {.now_ms = now_of(r),
	                            .last_attempt_ms = r->last_attempt_ms,
	                            .pending = exp_store_pending(r->exps)};
	struct decision d;
	bool due = reflect_due(&in, &d);
	if (due)
		due = budget_allows(r, "reflection");
	else
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "no reflection", "rule", d.rule, "reason",
		       d.reason);
	if (due) {
		r->done = done;
		r->done_ud = ud;
		if (start_cycle(r))
			return true;
		r->done = NULL;
		r->last_attempt_ms = now_of(r); /* a refused start waits the interval too */
		save_state(r);
	}
	reflection_flush(r);
	if (done)
		done(ud, REFLECT_UNCHANGED, false);
	return false;
}

cJSON *reflection_status(struct reflection *r)
{
	cJSON *o = cJSON_CreateObject();
	char ts[TIME_ISO_LEN + 1];
	if (r->last_attempt_ms)
		cJSON_AddStringToObject(o, "lastReflection",
		                        time_format_iso(r->last_attempt_ms, ts));
	else
		cJSON_AddNullToObject(o, "lastReflection");
	if (r->last_change_ms)
		cJSON_AddStringToObject(o, "lastChange", time_format_iso(r->last_change_ms, ts));
	else
		cJSON_AddNullToObject(o, "lastChange");
	cJSON_AddStringToObject(o, "lastOutcome", r->last_outcome);
	cJSON_AddStringToObject(o, "lastSummary", r->last_summary ? r->last_summary : "");
	cJSON_AddNumberToObject(o, "reflections", (double)r->reflections);
	cJSON_AddNumberToObject(o, "changes", (double)r->changes);
	cJSON_AddNumberToObject(o, "experiencesPending", (double)exp_store_pending(r->exps));
	cJSON_AddNumberToObject(o, "tokensSpent", (double)r->tokens_spent);
	cJSON_AddBoolToObject(o, "running", r->running);
	cJSON_AddNumberToObject(o, "peers", (double)r->peers.n);
	cJSON_AddBoolToObject(o, "voiceFromFile", voice_from_file(r->voice));
	return o;
}
