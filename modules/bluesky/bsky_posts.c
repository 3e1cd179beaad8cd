/* Proactive posts: expression (§7.1, with its invitation check) and ritual
 * openings (§7.3). */
#include "modules/bluesky/bsky_int.h"

/* ---- proactive posts: expression (§7.1) and ritual openings (§7.3) ------------------------- */

static int post_sink(void *ud, const char *action, const cJSON *params, char *result, size_t cap,
                     struct ga_err *err)
{
	struct bsky *b = ud;
	if (strcmp(action, "post_bluesky") != 0) {
		err_set(err, "only bluesky_post is available for this post");
		return -1;
	}
	if (b->post_text) {
		err_set(err, "one post per turn: it is already written");
		return -1;
	}
	b->post_text = xstrdup(json_string_or(params, "text", ""));
	snprintf(result, cap, "Queued: the post goes out after its checks.");
	return 0;
}

static void post_end(struct bsky *b)
{
	b->posting = false;
	free(b->post_text);
	b->post_text = NULL;
	free(b->post_user);
	b->post_user = NULL;
	b->post_revised = false;
	b->post_run = NULL;
}

static void post_compose_msgs(struct bsky *b, const char *skill_name, int warn_slot,
                              const struct llm_message *msgs, size_t n);

/* §7.1: the draft's invitation is weak or missing — the model is asked once
 * for a revision with a stronger one, with a choice, a bounded and a direct
 * example picked at random. */
static void expression_revise(struct bsky *b, const struct decision *inv)
{
	static const char *const choice[] = {"Prefer practical or inspirational?",
	                                     "Speed or accuracy here?", "More of this or less?",
	                                     "Verbose or concise?"};
	static const char *const bounded[] = {"What's one thing you'd add?",
	                                      "What's your version of this?",
	                                      "What's one example from your work?"};
	static const char *const direct[] = {"What's yours?", "Does this resonate?",
	                                     "Anyone else notice this?", "How about you?"};
	bk_note_decision(b, "bluesky:post", "expression", STAGE_VALIDATOR, VERDICT_INFO,
	                 "invitation_revise", "Revising post — adding stronger invitation (%s)",
	                 inv->reason);
	char *draft = b->post_text;
	b->post_text = NULL;
	b->post_revised = true;
	struct strbuf sb;
	sb_init(&sb, 16 * 1024);
	sb_printf(&sb,
	          "Your draft does not invite an answer (%s). Revise it once with a stronger "
	          "invitation, so anyone can answer in one sentence: end with a choice question "
	          "(like \"%s\"), or a bounded question with a direct invitation (like \"%s "
	          "%s\"), or give a tiny template with its link. Keep the thought; publish the "
	          "revision with bluesky_post.\n\nYour draft:\n%s\n",
	          inv->reason, choice[random_below(4)], bounded[random_below(3)],
	          direct[random_below(4)], draft);
	char *revise = sb_detach(&sb);
	struct llm_message msgs[] = {{.role = LLM_ROLE_USER, .content = b->post_user},
	                             {.role = LLM_ROLE_ASSISTANT, .content = draft},
	                             {.role = LLM_ROLE_USER, .content = revise}};
	post_compose_msgs(b, BSKY_EXPRESSION_SKILL, 0, msgs, 3);
	free(revise);
	free(draft);
}

static void on_post_sent(void *ud, const struct decision *final, const char *artifact)
{
	struct bsky *b = ud;
	int64_t now = bk_now_ms();
	bool sent = final->verdict == VERDICT_SENT;
	if (strcmp(b->post_kind, "expression") == 0) {
		if (sent) {
			b->st->expr_today++;
			b->st->last_post_ms = now;
			if (b->nrecent < BSKY_RECENT_POSTS && b->post_text)
				b->recent[b->nrecent++] = xstrdup(b->post_text);
		}
		/* sent: 3–4 h from now; refused: try again in an hour */
		b->st->next_expression_ms =
		        sent ? bsky_expression_next(now, now, (double)random_below(1000000) / 1e6)
		             : now + 60LL * 60 * 1000;
	} else if (sent && artifact) {
		struct bsky_ritual_state *r = bsky_state_ritual(b->st, b->post_ritual);
		if (r)
			bsky_state_ritual_run(r, b->post_date, artifact, true);
		b->st->last_post_ms = now;
	}
	bk_save_state(b);
	post_end(b);
}

static void on_post_composed(void *ud, const struct compose_result *res)
{
	struct bsky *b = ud;
	b->post_run = NULL;
	if (b->quiescing) {
		post_end(b);
		return;
	}
	if (!b->post_text || !*b->post_text) {
		bk_note_decision(b, "bluesky:post", b->post_kind, STAGE_COMPOSE, VERDICT_INFO,
		                 "no_post", "the model wrote no %s post (%s): %.200s", b->post_kind,
		                 res->stop_name, res->content ? res->content : res->reason);
		if (strcmp(b->post_kind, "expression") == 0) {
			b->st->next_expression_ms = bk_now_ms() + 60LL * 60 * 1000;
			bk_save_state(b);
		}
		post_end(b);
		return;
	}
	if (strcmp(b->post_kind, "expression") == 0) {
		/* §7.1, Scenario 1.8: every expression ends with an open door */
		struct decision inv;
		enum bsky_invitation cls = bsky_invitation_classify(b->post_text, &inv);
		if (cls != BSKY_INVITE_STRONG && !b->post_revised) {
			expression_revise(b, &inv);
			return;
		}
		if (cls != BSKY_INVITE_STRONG) {
			bk_note_decision(
			        b, "bluesky:post", "expression", STAGE_VALIDATOR, VERDICT_REJECT,
			        "invitation",
			        "the revised expression still has a %s invitation (%s): not "
			        "posted: %.200s",
			        bsky_invitation_name(cls), inv.reason, b->post_text);
			b->st->next_expression_ms = bk_now_ms() + 60LL * 60 * 1000;
			bk_save_state(b);
			post_end(b);
			return;
		}
		bk_note_decision(b, "bluesky:post", "expression", STAGE_VALIDATOR, VERDICT_PASS,
		                 inv.rule, "%s%s", inv.reason,
		                 b->post_revised ? " (after one revision)" : "");
	}
	/* the validator compares with our own recent posts: no echo of
	 * ourselves (§7.1) */
	struct pipeline_msg w[BSKY_RECENT_POSTS];
	size_t nw = 0;
	for (size_t i = 0; i < b->nrecent && nw < BSKY_RECENT_POSTS; i++)
		w[nw++] = (struct pipeline_msg){b->handle, b->recent[i], true};
	struct validator_context vc = {.platform = VALIDATOR_PLATFORM_BLUESKY,
	                               .mode = VALIDATOR_MODE_DISCUSSION,
	                               .role = VALIDATOR_ROLE_ACTOR,
	                               .is_action_owner = true,
	                               .connected_agents = 1};
	char id[200];
	if (strcmp(b->post_kind, "ritual") == 0)
		/* the journal key holds one opening per ritual and day, across
		 * restarts even if the state file were lost */
		snprintf(id, sizeof id, "ritual:%.100s:%s", b->post_ritual, b->post_date);
	else
		snprintf(id, sizeof id, "expression:%" PRId64, bk_now_ms());
	for (char *c = id; *c; c++)
		if (*c <= ' ' || *c > '~')
			*c = '_';
	struct pipeline_say_req r = {.platform = CONV_PLATFORM_BLUESKY,
	                             .target = "bluesky:post",
	                             .source = "bluesky",
	                             .text = b->post_text,
	                             .len = strlen(b->post_text),
	                             .chain = -1,
	                             .id = id,
	                             .vctx = &vc,
	                             .window = w,
	                             .nwindow = nw,
	                             .done = on_post_sent,
	                             .ud = b};
	pipeline_say_with(b->c.pipeline, &r);
}

/* Starts the model on a proactive post with skill and the messages. */
static void post_compose_msgs(struct bsky *b, const char *skill_name, int warn_slot,
                              const struct llm_message *msgs, size_t nmsgs)
{
	struct ga_err err = {{0}};
	if (!b->c.llm || !b->c.skills || !skills_find(b->c.skills, skill_name)) {
		if (!b->warned_skill[warn_slot])
			bk_note_decision(
			        b, "bluesky:post", b->post_kind, STAGE_COMPOSE, VERDICT_INFO,
			        "no_skill", "no %s post: %s", b->post_kind,
			        !b->c.llm ? "no model is configured"
			                  : "the skill is not installed (skills/<name>/SKILL.md)");
		b->warned_skill[warn_slot] = true;
		post_end(b);
		return;
	}
	struct skill_var vars[] = {{"blueskyUsername", b->handle},
	                           {"ownerHandle", b->owner_handle ? b->owner_handle : "(none)"},
	                           {"agentName", b->agent_name}};
	char *skill = skills_render(b->c.skills, skill_name, NULL, vars, 3, &err);
	if (!skill) {
		bk_note_decision(b, "bluesky:post", b->post_kind, STAGE_COMPOSE, VERDICT_FAIL,
		                 "prompt", "%s", err.msg);
		post_end(b);
		return;
	}
	char *self = bk_read_self(b);
	char *system = skills_system_prompt(b->soul, self, skill);
	free(self);
	free(skill);
	size_t n = 0;
	const struct tools_def *cat = tools_catalogue(&n);
	b->post_sink = (struct tools_sink){.enqueue = post_sink, .ud = b};
	struct compose_tool all[TOOLS_MAX];
	size_t k =
	        tools_select(TOOLS_MODE_BLUESKY, TOOLS_CAP_SOCIAL, &b->post_sink, all, TOOLS_MAX);
	(void)cat;
	bool have = false;
	for (size_t i = 0; i < k; i++)
		if (strcmp(all[i].name, "bluesky_post") == 0) {
			b->post_tool = all[i];
			have = true;
		}
	if (!have) {
		free(system);
		post_end(b);
		return;
	}
	struct compose_opts o = {.loop = b->c.loop,
	                         .llm = b->c.llm,
	                         .budget = b->c.budget,
	                         .system_prompt = system,
	                         .messages = msgs,
	                         .n_messages = nmsgs,
	                         .tools = &b->post_tool,
	                         .n_tools = 1,
	                         .tool_choice = LLM_TOOL_CHOICE_NAMED,
	                         .tool_choice_name = "bluesky_post",
	                         .max_rounds = BSKY_COMPOSE_ROUNDS,
	                         .done = on_post_composed,
	                         .ud = b};
	b->post_run = compose_start(&o, &err);
	free(system);
	if (!b->post_run) {
		bk_note_decision(b, "bluesky:post", b->post_kind, STAGE_COMPOSE, VERDICT_FAIL,
		                 "prompt", "%s", err.msg);
		post_end(b);
	}
}

/* Starts the model on a proactive post with skill and one user message
 * (kept for a revision). */
static void post_compose(struct bsky *b, const char *skill_name, int warn_slot, const char *user)
{
	free(b->post_user);
	b->post_user = xstrdup(user);
	b->post_revised = false;
	struct llm_message msg = {.role = LLM_ROLE_USER, .content = b->post_user};
	post_compose_msgs(b, skill_name, warn_slot, &msg, 1);
}

/* A seed from SELF.md for the expression: one item of one section. */
static void expression_seed(const struct bsky *b, struct strbuf *sb)
{
	const struct self_doc *d = b->c.self;
	if (!d)
		return;
	const struct {
		const char *name;
		const struct self_list *l;
	} lists[] = {{"values", &d->values},
	             {"questions", &d->questions},
	             {"patterns", &d->patterns},
	             {"learnings", &d->learnings},
	             {"explorations", &d->explorations},
	             {"current focus", &d->current_focus}};
	size_t total = 0;
	for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
		total += lists[i].l->count;
	if (total == 0) {
		if (d->purpose)
			sb_printf(sb, "From SELF.md (purpose): %s\n", d->purpose);
		return;
	}
	uint64_t pick = random_below(total);
	for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
		if (pick < lists[i].l->count) {
			sb_printf(sb, "From SELF.md (%s): %s\n", lists[i].name,
			          lists[i].l->items[pick]);
			return;
		}
		pick -= lists[i].l->count;
	}
}

void bk_expression_run(void *ud, struct sched_job *job)
{
	struct bsky *b = ud;
	sched_job_done(job);
	if (!b->logged_in || b->quiescing || b->posting || !b->warmed)
		return;
	int64_t now = bk_now_ms();
	int hour;
	char date[11];
	bk_local_now(now, NULL, &hour, date);
	if (strcmp(date, b->st->expr_date) != 0) {
		snprintf(b->st->expr_date, sizeof b->st->expr_date, "%s", date);
		b->st->expr_today = 0;
	}
	if (!b->st->next_expression_ms)
		b->st->next_expression_ms = bsky_expression_next(
		        now, b->st->last_post_ms, (double)random_below(1000000) / 1e6);
	struct decision d;
	if (!bsky_expression_allowed(now, b->st->next_expression_ms, hour, b->st->expr_today, &d))
		return;
	b->posting = true;
	snprintf(b->post_kind, sizeof b->post_kind, "expression");
	struct strbuf sb;
	sb_init(&sb, 64 * 1024);
	sb_printf(&sb, "Today is %s. Expressions today: %d of %d.\n", date, b->st->expr_today,
	          BSKY_EXPR_DAILY_CAP);
	expression_seed(b, &sb);
	if (b->nrecent) {
		sb_puts(&sb, "Your recent posts (say something new):\n");
		for (size_t i = 0; i < b->nrecent; i++)
			sb_printf(&sb, "- %s\n", b->recent[i]);
	}
	char *user = sb_detach(&sb);
	post_compose(b, BSKY_EXPRESSION_SKILL, 0, user);
	free(user);
}

void bk_ritual_run(void *ud, struct sched_job *job)
{
	struct bsky *b = ud;
	sched_job_done(job);
	if (!b->logged_in || b->quiescing || b->posting || !b->c.self)
		return;
	int64_t now = bk_now_ms();
	int wday, hour;
	char date[11];
	bk_local_now(now, &wday, &hour, date);
	static const char *days[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
	                             "Thursday", "Friday", "Saturday"};
	for (size_t i = 0; i < b->c.self->ritual_count; i++) {
		const struct self_ritual *r = &b->c.self->rituals[i];
		struct bsky_ritual_state *rs = bsky_state_ritual(b->st, r->name);
		struct decision d;
		if (!rs || !bsky_ritual_due(r, wday, hour, date, rs->last_initiated,
		                            BSKY_RITUAL_EARLIEST_H, &d))
			continue;
		pipeline_note(b->c.pipeline, CONV_PLATFORM_BLUESKY, "bluesky:post", r->name,
		              STAGE_EVENT, &d);
		b->posting = true;
		snprintf(b->post_kind, sizeof b->post_kind, "ritual");
		snprintf(b->post_ritual, sizeof b->post_ritual, "%s", r->name);
		snprintf(b->post_date, sizeof b->post_date, "%s", date);
		struct strbuf sb;
		sb_init(&sb, 64 * 1024);
		sb_printf(&sb, "Ritual: %s\nDate: %s (%s)\nWorkspace: %s\nParticipants:", r->name,
		          date, days[wday % 7], r->workspace ? r->workspace : "");
		for (size_t k = 0; k < r->participant_count; k++)
			sb_printf(&sb, " %s", r->participants[k]);
		sb_printf(&sb, "\nDescription: %s\nHistory:\n",
		          r->description ? r->description : "");
		if (!rs->nruns)
			sb_puts(&sb, "No previous history — first time\n");
		for (size_t k = rs->nruns > 5 ? rs->nruns - 5 : 0; k < rs->nruns; k++)
			sb_printf(&sb, "- %s: %s\n", rs->runs[k].date, rs->runs[k].thread_uri);
		char *user = sb_detach(&sb);
		post_compose(b, BSKY_RITUAL_SKILL, 1, user);
		free(user);
		return;
	}
}
