/*
 * engine_recover — §11 (salvage, the action owner's retry, forced action)
 * when the decision did not speak or its words were refused, and the
 * extraction of commitments from words that promise without them (§8.4,
 * §12.3). See engine.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/participation/engine_int.h"

#define LOG_COMP "participation"

static void owner_retry(struct part_engine *e);

static bool blank_text(const char *s)
{
	for (; s && *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
			return false;
	return true;
}

/* The decision did not speak (validator_ran false) or the validator
 * rejected it: salvage once, then what part_recover_next says. */
void part_recover(struct part_engine *e, bool validator_ran, bool validator_salvage)
{
	struct decision why;
	size_t had = e->dec.commitments.n;
	if (!e->salvaged && had) {
		bool ok = part_salvage(&e->dec, &e->out, validator_ran, validator_salvage, &why);
		part_record(e, &why);
		if (ok) {
			e->salvaged = true;
			e->phase = PH_SALVAGE;
			part_speak(e);
			return;
		}
	}
	enum part_recovery r = part_recover_next(&e->st, &e->out, e->retried, &why);
	if (r != PART_RECOVER_NONE || (e->out.own.is_owner && e->out.request_open))
		part_record(e, &why);
	if (r == PART_RECOVER_NONE && validator_ran && !e->disc_retried) {
		/* a host question nobody answered: one agent asks once more */
		struct part_member *m = xcalloc(PART_MEMBERS_MAX, sizeof *m);
		size_t nm = e->members(e->ud, m, PART_MEMBERS_MAX);
		uint64_t seq = part_discussion_retry_due(&e->st, &e->out, e->self, e->social_only,
		                                         m, nm, e->disc_done_seq, &why);
		free(m);
		if (seq) {
			part_record(e, &why);
			e->disc_retried = true;
			e->disc_done_seq = seq;
			e->phase = PH_DECISION; /* the refused words were never sent */
			part_call_model(e);
			return;
		}
	}
	if (r == PART_RECOVER_RETRY) {
		e->retried = true;
		owner_retry(e);
		return;
	}
	if (r == PART_RECOVER_FORCE && e->phase != PH_FORCED) {
		part_forced_action(e, true);
		return;
	}
	if (!validator_ran && e->phase == PH_DECISION) {
		part_note_declined(&e->st, time_now_ms());
		decision_set(&why, VERDICT_INFO, "declined", "the model stays silent: %s",
		             e->dec.reason && e->dec.reason[0] ? e->dec.reason : "(no reason)");
		part_record(e, &why);
	}
	part_tick_end(e);
}

static const char retry_system[] =
        "You are an autonomous agent in a chatroom with a human host and other agents. You own "
        "the host's request: call the space_decision tool with a commitment that fulfils it. No "
        "discussion.";

static void on_retry(void *ud, const struct compose_result *res)
{
	struct part_engine *e = part_anchor_drop(ud);
	if (!e)
		return;
	e->run = NULL;
	struct decision why;
	if (res->stop == COMPOSE_STOP_CANCELLED) {
		decision_set(&why, VERDICT_INFO, "cancelled", "the owner retry was cancelled");
		part_record(e, &why);
		part_tick_end(e);
		return;
	}
	if (!e->have_dec && res->content) {
		struct ga_err err = {{0}};
		if (part_decision_from_text(res->content, strlen(res->content), e->social_only,
		                            &e->dec, &err) == 0)
			e->have_dec = true;
	}
	if (e->have_dec && part_owner_retry_accept(&e->dec, &e->out, &why) == 0) {
		part_record(e, &why);
		e->phase = PH_RETRY;
		part_speak(e);
		return;
	}
	if (!e->have_dec)
		decision_set(&why, VERDICT_FAIL, "owner_retry",
		             "the owner retry gave no usable space_decision (%s: %s)",
		             res->stop_name ? res->stop_name : "?", res->reason);
	part_record(e, &why);
	part_recover(e, false, false);
}

/* §11.2: one call, space_decision forced, the commitment-only prompt. */
static void owner_retry(struct part_engine *e)
{
	const char *repo = e->out.repo ? e->out.repo : "";
	struct strbuf sb;
	sb_init(&sb, PART_PROMPT_MAX_BYTES);
	sb_printf(&sb, "HOST REQUEST: \"%s\"\nREPO: %s\n",
	          e->st.req_content ? e->st.req_content : "", repo[0] ? repo : "not detected");
	sb_puts(&sb, "You are the action owner. Return only the decision with a commitment that "
	             "fulfils the request, no discussion. Template:\n");
	cJSON *t = cJSON_CreateObject();
	cJSON_AddBoolToObject(t, "shouldSpeak", true);
	cJSON_AddStringToObject(t, "reason", "I own the request");
	cJSON_AddStringToObject(t, "message", PART_FORCED_MESSAGE);
	cJSON *arr = cJSON_AddArrayToObject(t, "commitments");
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "type", "create_issue");
	cJSON_AddStringToObject(c, "repo", repo);
	cJSON_AddStringToObject(c, "title", "brief title");
	cJSON_AddStringToObject(c, "description", "full issue body in markdown");
	cJSON_AddItemToArray(arr, c);
	char *tj = cJSON_PrintUnformatted(t);
	cJSON_Delete(t);
	sb_puts(&sb, tj ? tj : "");
	free(tj);
	struct ga_err err = {{0}};
	int rc = part_ask_decision(e, retry_system, sb.buf, on_retry, &err);
	sb_free(&sb);
	if (rc != 0) {
		struct decision d;
		decision_set(&d, VERDICT_FAIL, "owner_retry", "the owner retry could not start: %s",
		             err.msg);
		part_record(e, &d);
		part_recover(e, false, false);
	}
}

static const char enrich_system[] =
        "You are a technical writer. Produce a well-structured GitHub issue body in markdown: a "
        "description, an acceptance-criteria checklist and the relevant context. Be concise. "
        "Markdown only.";

static void forced_with_body(struct part_engine *e, const char *body)
{
	struct decision why;
	if (part_forced_decision(&e->st, &e->out, e->forced_now, body, &e->dec, &why) != 0) {
		part_record(e, &why);
		part_tick_end(e);
		return;
	}
	part_record(e, &why);
	e->phase = PH_FORCED;
	part_speak(e);
}

static void on_enriched(void *ud, const struct compose_result *res)
{
	struct part_engine *e = part_anchor_drop(ud);
	if (!e)
		return;
	e->run = NULL;
	if (res->stop == COMPOSE_STOP_CANCELLED) {
		part_tick_end(e);
		return;
	}
	char *body = NULL;
	if (res->stop == COMPOSE_STOP_FINAL && res->content) {
		body = xstrdup(res->content);
		size_t n = strlen(body);
		while (n && (body[n - 1] == ' ' || body[n - 1] == '\n' || body[n - 1] == '\t' ||
		             body[n - 1] == '\r'))
			body[--n] = '\0';
		if (n <= PART_ENGINE_ENRICH_MIN_BYTES || blank_text(body)) {
			free(body);
			body = NULL;
		}
	}
	if (!body)
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "forced action: the default issue body", "stop",
		       res->stop_name ? res->stop_name : "?", "reason", res->reason);
	forced_with_body(e, body);
	free(body);
}

/* §11.3: check it can be done (repo, due, not social-only) with the default
 * body, then ask the model for a better body, then decide. */
void part_forced_action(struct part_engine *e, bool due_now)
{
	e->forced_now = due_now;
	struct part_decision probe;
	memset(&probe, 0, sizeof probe);
	struct decision why;
	int ok = part_forced_decision(&e->st, &e->out, due_now, NULL, &probe, &why);
	part_decision_clear(&probe);
	if (ok != 0) {
		/* Due on every message-less tick until a repository is named: said
		 * once per request, not every 5 s. */
		bool norepo = strcmp(why.rule, "forced_no_repo") == 0;
		if (!norepo || e->norepo_seq != e->st.req_seq)
			part_record(e, &why);
		if (norepo)
			e->norepo_seq = e->st.req_seq;
		part_tick_end(e);
		return;
	}
	char *hist = part_history_text(&e->st, false);
	struct strbuf sb;
	sb_init(&sb, PART_PROMPT_MAX_BYTES);
	sb_printf(&sb,
	          "The request: %s\n\nThe conversation:\n%s\nThe repository: %s\n\nWrite the "
	          "issue body:",
	          e->st.req_content ? e->st.req_content : "", hist, e->out.repo ? e->out.repo : "");
	free(hist);
	struct ga_err err = {{0}};
	int rc = part_ask_plain(e, enrich_system, sb.buf, PART_ENGINE_ENRICH_MAX_TOKENS, -1,
	                        on_enriched, &err);
	sb_free(&sb);
	if (rc != 0)
		forced_with_body(e, NULL);
}

/* ---- §8.4: extraction of commitments from words that promise without them -------------- */

static void on_extracted(void *ud, const struct compose_result *res)
{
	struct part_engine *e = part_anchor_drop(ud);
	if (!e)
		return;
	e->run = NULL;
	struct decision d;
	if (res->stop == COMPOSE_STOP_CANCELLED) {
		part_tick_end(e);
		return;
	}
	struct cmt_list got;
	memset(&got, 0, sizeof got);
	struct ga_err err = {{0}};
	if (res->stop != COMPOSE_STOP_FINAL || !res->content) {
		decision_set(&d, VERDICT_INFO, "extraction", "no extraction (%s: %s)",
		             res->stop_name ? res->stop_name : "?", res->reason);
		part_record(e, &d);
	} else if (cmt_extract_parse(res->content, strlen(res->content), e->social_only, &got,
	                             &err) != 0) {
		decision_set(&d, VERDICT_INFO, "extraction",
		             "the extraction reply was unusable: %s", err.msg);
		part_record(e, &d);
	} else {
		decision_set(&d, VERDICT_INFO, "extraction",
		             "%zu commitment(s) extracted from the words (%zu dropped)", got.n,
		             got.ndropped_total);
		part_record(e, &d);
		if (part_drop_foreign_commitments(&got, &e->out, &d))
			part_record_at(e, STAGE_VALIDATOR, &d);
		if (got.n) {
			cmt_list_clear(&e->dec.commitments);
			e->dec.commitments = got;
			memset(&got, 0, sizeof got);
			e->extracted = true;
			part_drop_taken(e);
		}
	}
	cmt_list_clear(&got);
	part_send(e);
}

void part_extract(struct part_engine *e)
{
	char why[160];
	const char *words = e->dec.message ? e->dec.message : "";
	if (!cmt_extract_wanted(words, strlen(words), why, sizeof why)) {
		part_send(e);
		return;
	}
	char *user = cmt_extract_prompt(words, e->out.repo, e->host_lines);
	struct ga_err err = {{0}};
	int rc = part_ask_plain(e, cmt_extract_system(), user, CMT_EXTRACT_MAX_TOKENS, 0,
	                        on_extracted, &err);
	free(user);
	struct decision d;
	if (rc != 0) {
		decision_set(&d, VERDICT_INFO, "extraction", "no extraction call: %s", err.msg);
		part_record(e, &d);
		part_send(e);
		return;
	}
	decision_set(&d, VERDICT_INFO, "extraction", "%s: asking the model for commitments", why);
	part_record(e, &d);
}
