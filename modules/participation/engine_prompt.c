/*
 * engine_prompt — the decision call's user message (§14): the skill's "User
 * Message Template" filled from the tick, and the notes the tick names.
 * See engine.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/xalloc.h"
#include "modules/commitments/ledger.h"
#include "modules/participation/engine_int.h"
#include "modules/skills/skills.h"

char *part_history_text(const struct part_state *st, bool own_only)
{
	/* §14.8 keeps the latest lines: when the piece would pass its bound,
	 * the OLDEST lines are left out (and counted), never the newest — the
	 * host's last message is always there. */
	size_t first = st->hist_n, used = 0, left_out = 0;
	const size_t budget = PART_PIECE_MAX_BYTES - 64; /* the "left out" line */
	while (first > 0) {
		const struct part_entry *en = part_history_at(st, first - 1);
		if (own_only && !en->self) {
			first--;
			continue;
		}
		size_t line = strlen(en->author) + 9 + en->len + 1;
		if (used + line > budget)
			break;
		used += line;
		first--;
	}
	for (size_t i = 0; i < first; i++)
		left_out += !own_only || part_history_at(st, i)->self;
	struct strbuf sb;
	sb_init(&sb, PART_PIECE_MAX_BYTES);
	if (left_out)
		sb_printf(&sb, "(%zu earlier message%s left out)\n", left_out,
		          left_out == 1 ? "" : "s");
	for (size_t i = first; i < st->hist_n; i++) {
		const struct part_entry *en = part_history_at(st, i);
		if (own_only && !en->self)
			continue;
		sb_printf(&sb, "%s%s: %.*s\n", en->author, en->host ? " (host)" : "", (int)en->len,
		          en->text);
	}
	char *s = sb.len ? sb_detach(&sb) : xstrdup(own_only ? "(none yet)" : "(nothing yet)");
	sb_free(&sb);
	return s;
}

/* §14: who is typing right now (the members' live `typing` marks), or
 * "nobody", read afresh on every tick. */
static void typing_text(struct part_engine *e, char *buf, size_t cap)
{
	struct part_member *m = xcalloc(PART_MEMBERS_MAX, sizeof *m);
	size_t n = e->members ? e->members(e->ud, m, PART_MEMBERS_MAX) : 0;
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (!m[i].typing || !m[i].name || strcmp(m[i].name, e->self) == 0)
			continue;
		int w = snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", m[i].name);
		if (w < 0 || (size_t)w >= cap - len) {
			buf[len] = '\0'; /* whole names only */
			break;
		}
		len += (size_t)w;
	}
	free(m);
	if (!len)
		snprintf(buf, cap, "nobody");
}

static void ownership_text(const struct part_tick_out *t, struct strbuf *sb)
{
	if (!t->own.computed) {
		sb_puts(sb, t->request ? "you are the only agent here: the request is yours"
		                       : "no host request is open");
		return;
	}
	if (!t->own.owner[0])
		sb_puts(sb, "no agent here can take this kind of action");
	else if (t->own.is_owner)
		sb_printf(sb, "YOU own the host's request (%zu agents considered): commit to it",
		          t->own.n_agents);
	else
		sb_printf(sb,
		          "%s owns the host's request: do not take it over; stay quiet unless you "
		          "add something they lack",
		          t->own.owner);
}

static void notes_text(const struct part_tick_out *t, struct strbuf *sb)
{
	if (t->context & PART_CTX_MODE)
		sb_printf(sb, "\nConversation mode: %s.", part_mode_name(t->mode));
	if (t->context & PART_CTX_ROLE)
		sb_printf(sb,
		          "\nYour role this turn: %s (budget %u messages per host turn; you sent "
		          "%zu).",
		          part_role_name(t->own.role), t->budget, t->own_msgs_since_host);
	if ((t->context & PART_CTX_ESCALATION) && t->escalation != PART_ESC_NONE)
		sb_printf(sb,
		          "\nEscalation: %s — the host's request has waited %" PRId64
		          " s over %u cycles without a commitment.",
		          part_escalation_name(t->escalation), t->waiting_ms / 1000, t->cycles);
	if ((t->context & PART_CTX_SATURATION) && t->saturation != PART_SAT_NONE)
		sb_printf(
		        sb,
		        "\nSaturation: %s (%zu agent messages since the host spoke): add only what "
		        "is new.",
		        part_saturation_name(t->saturation), t->agent_msgs_since_host);
	if (t->context & PART_CTX_ADDRESSED) {
		if (t->addressed_me)
			sb_puts(sb, "\nThe host addressed you by name: answer.");
		else if (t->addressed_others)
			sb_puts(sb, "\nThe host addressed other agents, not you: stay quiet unless "
			            "asked.");
	}
	if ((t->context & PART_CTX_FOLLOW_UP) && t->follow_up)
		sb_puts(sb, "\nThe host is following up on the request: say what was done.");
}

/* The discussion retry's note (after the validator refused the answer). */
static const char disc_retry_note[] =
        "\nYour previous answer to the host was refused by the validator. Nobody has answered "
        "the host yet: answer the host's question now, briefly and in your own words — no "
        "agreement opener, no restating of anyone, no promise without a commitment.";

/* §14.10: the peers and workspaces the room knows, when the tick wants them. */
static char *peers_text(struct part_engine *e)
{
	const struct part_tick_out *t = &e->out;
	struct part_peer_note *pn = NULL;
	struct part_workspace_note *wn = NULL;
	size_t np = 0, nw = 0;
	if (e->peers && (t->context & PART_CTX_PEER_IDENTITIES)) {
		pn = xcalloc(PART_ENGINE_PEERS_MAX, sizeof *pn);
		np = e->peers(e->ud, pn, PART_ENGINE_PEERS_MAX);
	}
	if (e->workspaces && (t->context & PART_CTX_WORKSPACES)) {
		wn = xcalloc(PART_ENGINE_WORKSPACES_MAX, sizeof *wn);
		nw = e->workspaces(e->ud, wn, PART_ENGINE_WORKSPACES_MAX);
	}
	char *s = part_peers_context(e->self, pn, np, wn, nw);
	if (e->relationships && np) {
		/* what we remember of them (§7.4), after what they say of themselves */
		const char **names = xcalloc(np, sizeof *names);
		for (size_t i = 0; i < np; i++)
			names[i] = pn[i].name;
		char *rel = e->relationships(e->ud, names, np);
		free(names);
		if (rel && rel[0]) {
			struct strbuf sb;
			sb_init(&sb, 0);
			sb_puts(&sb, s);
			if (sb.len && sb.buf[sb.len - 1] != '\n')
				sb_putc(&sb, '\n');
			sb_puts(&sb, rel);
			free(s);
			s = sb_detach(&sb);
		}
		free(rel);
	}
	free(pn);
	free(wn);
	if (!s[0]) {
		free(s);
		s = xstrdup("nothing known yet");
	}
	return s;
}

/* What others reported done since the host's request opened (the room's
 * successful action_results): the request's work when a peer did it, so
 * a follow-up is answered with their link too. */
static void others_done(struct part_engine *e, struct strbuf *sb)
{
	if (!e->results || !e->st.req_at_ms)
		return;
	struct part_result_note r[PART_ENGINE_RESULTS_MAX];
	size_t n = e->results(e->ud, r, PART_ENGINE_RESULTS_MAX);
	bool any = false;
	for (size_t i = 0; i < n; i++) {
		if (r[i].time_ms < e->st.req_at_ms)
			continue;
		sb_printf(sb, "%s\n- %s \"%.200s\": done by %s%s%s",
		          any ? "" : "\nDone for it by others:", r[i].action, r[i].target, r[i].who,
		          r[i].link && r[i].link[0] ? " — " : "", r[i].link ? r[i].link : "");
		any = true;
	}
}

/* What this agent's commitments for the host's request became: the
 * action, what it names, its state and what was made (a follow-up such as
 * "where is the link?" is answered from it). */
static void work_done(struct part_engine *e, struct strbuf *sb)
{
	bool any = false;
	for (size_t i = 0; e->ledger && i < e->req_commits.n; i++) {
		struct ledger_entry le;
		if (ledger_get(e->ledger, e->req_commits.id[i], &le) != 0)
			continue;
		const char *what = cJSON_GetStringValue(cJSON_GetObjectItem(le.params, "title"));
		if (!what)
			what = cJSON_GetStringValue(cJSON_GetObjectItem(le.params, "text"));
		sb_printf(sb, "%s\n- %s \"%.200s\": %s%s%s",
		          any ? "" : "\nYour work for it:", le.action, what ? what : "",
		          ledger_status_name(le.status), le.link ? " — " : "",
		          le.link ? le.link : "");
		any = true;
	}
}

char *part_user_message(struct part_engine *e, struct ga_err *err)
{
	const struct part_tick_out *t = &e->out;
	struct strbuf own;
	sb_init(&own, PART_PIECE_MAX_BYTES);
	ownership_text(t, &own);
	struct strbuf req;
	sb_init(&req, PART_PIECE_MAX_BYTES);
	if (t->request) {
		sb_printf(&req, "%s: \"%.2000s\"", t->request_open ? "open" : "fulfilled",
		          t->request);
		work_done(e, &req);
		others_done(e, &req);
	} else {
		sb_puts(&req, "no request");
	}
	char *hist = part_history_text(&e->st, false);
	char *mine = part_history_text(&e->st, true);
	char typing[512];
	typing_text(e, typing, sizeof typing);
	char *peers = part_peer_commitments(&e->st);
	char *others = peers_text(e);
	struct strbuf cfgs;
	sb_init(&cfgs, 4096);
	if (e->cd_fixed) {
		struct space_cfg shown = e->cfg;
		shown.cooldown_min_ms = e->cd_min;
		shown.cooldown_max_ms = e->cd_max;
		space_cfg_render(&shown, &cfgs);
	} else {
		space_cfg_render(&e->cfg, &cfgs);
	}
	const char *cfg = sb_cstr(&cfgs);
	struct skill_var vars[] = {
	        {"detectedRepo", t->repo ? t->repo : "none named"},
	        {"actionOwnership", sb_cstr(&own)},
	        {"hostRequestStatus", sb_cstr(&req)},
	        {"conversationHistory", hist},
	        {"typingAgents", typing},
	        {"ownPreviousMessages", mine},
	        {"commitmentContext", peers[0] ? peers : "none"},
	        {"currentConfig", cfg},
	        {"selfExcerpt", e->self_text ? e->self_text : "(no SELF.md)"},
	        {"peerContext", others},
	};
	char *body = skills_render(e->skills, PART_ENGINE_SKILL, "User Message Template", vars,
	                           sizeof vars / sizeof vars[0], err);
	char *msg = NULL;
	if (body) {
		struct strbuf sb;
		sb_init(&sb, PART_PROMPT_MAX_BYTES);
		sb_puts(&sb, body);
		notes_text(t, &sb);
		if (e->disc_retried)
			sb_puts(&sb, disc_retry_note);
		msg = sb_detach(&sb);
		sb_free(&sb);
		free(body);
	}
	sb_free(&own);
	sb_free(&req);
	sb_free(&cfgs);
	free(hist);
	free(mine);
	free(peers);
	free(others);
	return msg;
}
