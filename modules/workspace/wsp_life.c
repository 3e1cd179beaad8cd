/* The workspace's lifecycle (spec §3.14.2–5): the finished sentinel
 * found by its label, reactivated by new work, made once when all planned
 * work is done (after the model's health check); plan synthesis from open
 * issues, closing only those the new plan names; handled and stale issues
 * closed; the issues people opened handed to the GitHub conversations
 * (config consider). See wsp_int.h (wsp_life_step). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adapters/github/gh_work.h"
#include "adapters/llm/llm.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "local-tools/tools.h"
#include "modules/commitments/ledger.h"
#include "modules/compose/compose.h"
#include "modules/coord/coord.h"
#include "modules/journal/journal.h"
#include "modules/workspace/wsp_int.h"

#define LIFE_MAX_ISSUES     100 /* open issues read per workspace, least recently updated first */
#define LIFE_HANDLED_READS  3   /* issues whose comments are read per cycle (handled rule) */
#define LIFE_LOCK_TTL_MUL   5   /* lifecycle locks last five claim TTLs: lapse, never released */
#define LIFE_FINISHED_TITLE "LIL INTDEV FINISHED: "
#define LIFE_STATE_NAME     "workspace_life"
#define LIFE_STATE_FORMAT   1
#define LIFE_PENDING_MS     (2 * WSP_SYNTH_COOLDOWN_MS) /* a promised plan not seen by then */
#define LIFE_MODEL_ROUNDS   4
#define LIFE_README_MAX     5000 /* bytes of the README the health check reads */
#define LIFE_PLANS_READ     5    /* closed plans the health check reads */
#define LIFE_PLAN_BODY_MAX  1000 /* bytes of each */
#define LIFE_SUMMARY_MAX    200  /* characters of the model's words in a sentinel */

/* One lifecycle action on one issue, fire and forget (its own anchor). */
enum life_kind {
	LIFE_CLOSE_DUP,
	LIFE_REACTIVATE,
	LIFE_FINISH,
	LIFE_HANDLED,
	LIFE_STALE,
	LIFE_SYNTH,
	LIFE_ROLLED,
};

struct life_op {
	struct wsp_anchor *a;
	enum life_kind kind;
	char owner[GH_OWNER_MAX + 1], repo[GH_REPO_MAX + 1];
	int number; /* the issue acted on (LIFE_FINISH: the latest closed plan) */
	int other;  /* the sentinel kept, the issue that reactivates; LIFE_FINISH: the
	             * latest closed sentinel (0 none) */
	struct wsp_issue_brief b;
	cJSON *ctx; /* LIFE_SYNTH: the open issues; LIFE_FINISH: the closed plans */
	/* a model run (synthesis, health check) */
	struct tools_sink sink;
	struct compose_tool tools[TOOLS_MAX];
	size_t ntools;
	const char *action; /* the one commitment the run may make */
	int nums[WSP_SYNTH_MAX_ISSUES];
	size_t nnums;
	char promised[LEDGER_ID_MAX];
};

/* A decision about the workspace of op. */
#define life_note(w, op, v, rule, ...)                                                             \
	wsp_notef((w), (op)->owner, (op)->repo, 0, 0, STAGE_OUTBOUND, (v), (rule), __VA_ARGS__)

static const char *kind_rule(enum life_kind k)
{
	switch (k) {
	case LIFE_CLOSE_DUP:
		return "sentinel_duplicate";
	case LIFE_REACTIVATE:
		return "workspace_reactivated";
	case LIFE_FINISH:
		return "workspace_finished";
	case LIFE_HANDLED:
		return "issue_handled";
	case LIFE_STALE:
		return "issue_stale";
	case LIFE_SYNTH:
		return "plan_synthesis";
	case LIFE_ROLLED:
		return "issue_rolled";
	}
	return "?";
}

static void op_free(struct life_op *op)
{
	wsp_drop(op->a);
	cJSON_Delete(op->ctx);
	free(op);
}

/* --- the state file: when synthesis and the health check last ran, the
 * issues a promised plan is to cover ---------------------------------------------------------- */

static int keep_format(void *ud, cJSON *data, const char *from_version)
{
	(void)from_version;
	(void)ud;
	return json_int_or(data, "format", 0) == LIFE_STATE_FORMAT ? 0 : -1;
}

/* {"format":1,"workspaces":{"<owner>/<repo>":{"synthMs","healthMs",
 * "pending":{"ms","commitment","issues":[n…]}}}}, one entry per watched
 * workspace (others are dropped at the next save). */
static cJSON *life_state(struct wsp *w)
{
	if (!w->life) {
		w->life = state_load(w->c.st, LIFE_STATE_NAME, keep_format, NULL, NULL);
		if (!cJSON_IsObject(w->life)) {
			cJSON_Delete(w->life);
			w->life = cJSON_CreateObject();
			cJSON_AddNumberToObject(w->life, "format", LIFE_STATE_FORMAT);
		}
		if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(w->life, "workspaces"))) {
			cJSON_DeleteItemFromObjectCaseSensitive(w->life, "workspaces");
			cJSON_AddObjectToObject(w->life, "workspaces");
		}
	}
	return cJSON_GetObjectItemCaseSensitive(w->life, "workspaces");
}

static cJSON *ws_state(struct wsp *w, const char *owner, const char *repo)
{
	char key[WSP_REPO_FULL_MAX];
	snprintf(key, sizeof key, "%s/%s", owner, repo);
	cJSON *all = life_state(w);
	cJSON *o = cJSON_GetObjectItem(all, key); /* any case, as GitHub names repositories */
	return o ? o : cJSON_AddObjectToObject(all, key);
}

static void life_save(struct wsp *w)
{
	cJSON *all = life_state(w);
	cJSON *e = all->child;
	while (e) {
		cJSON *next = e->next;
		char owner[GH_OWNER_MAX + 1] = "", repo[GH_REPO_MAX + 1] = "";
		const char *slash = e->string ? strchr(e->string, '/') : NULL;
		if (slash) {
			snprintf(owner, sizeof owner, "%.*s", (int)(slash - e->string), e->string);
			snprintf(repo, sizeof repo, "%s", slash + 1);
		}
		if (!wsp_watch_find(&w->watch, owner, repo))
			cJSON_Delete(cJSON_DetachItemViaPointer(all, e));
		e = next;
	}
	struct ga_err err = {{0}};
	if (state_save(w->c.st, LIFE_STATE_NAME, w->life, time_now_ms(), &err) != 0)
		wsp_error(w, "the lifecycle state was not saved: %s", err.msg);
}

static void stamp(struct wsp *w, const char *owner, const char *repo, const char *field)
{
	cJSON *o = ws_state(w, owner, repo);
	cJSON_DeleteItemFromObjectCaseSensitive(o, field);
	cJSON_AddNumberToObject(o, field, (double)time_now_ms());
	life_save(w);
}

static bool due(struct wsp *w, const char *owner, const char *repo, const char *field,
                int64_t cooldown_ms)
{
	int64_t last = json_int_or(ws_state(w, owner, repo), field, 0);
	return last <= 0 || time_now_ms() - last >= cooldown_ms;
}

static void op_done(void *ud, bool ok, const char *artifact, const char *why)
{
	struct life_op *op = ud;
	struct wsp *w = op->a->w;
	if (w) {
		if (ok && op->kind == LIFE_FINISH)
			life_note(w, op, VERDICT_SENT, kind_rule(op->kind),
			          "every plan (the latest #%d) is closed and nothing is open: the "
			          "finished sentinel is %s",
			          op->number, artifact ? artifact : "?");
		else if (ok)
			life_note(w, op, VERDICT_SENT, kind_rule(op->kind), "closed #%d",
			          op->number);
		else
			life_note(w, op, VERDICT_FAIL, kind_rule(op->kind), "#%d: %s", op->number,
			          why ? why : "?");
	}
	op_free(op);
}

/* Closes op->number (state_reason as given) through outbound. */
static void close_issue(struct wsp *w, struct life_op *op, const char *reason)
{
	wsp_life_close(w, op->owner, op->repo, op->number, NULL, reason, kind_rule(op->kind),
	               op_done, op);
}

/* A comment on op->number saying why, then the close. */
static void comment_then_close(struct wsp *w, struct life_op *op, const char *text)
{
	wsp_life_close(w, op->owner, op->repo, op->number, text,
	               op->kind == LIFE_CLOSE_DUP ? "not_planned" : "completed",
	               kind_rule(op->kind), op_done, op);
}

/* --- the model: synthesis and the health check ------------------------------------------- */

/* The one commitment a run may make, for its own workspace: to the ledger
 * (the commitment pipeline makes it, through outbound). */
static int model_sink(void *ud, const char *action, const cJSON *params, char *result, size_t cap,
                      struct ga_err *err)
{
	struct life_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w)
		return err_set(err, "the workspace engine is stopping");
	if (strcmp(action, op->action) != 0)
		return err_set(err, "only %s is available here", op->action);
	if (strcasecmp(json_string_or(params, "owner", ""), op->owner) != 0 ||
	    strcasecmp(json_string_or(params, "repo", ""), op->repo) != 0)
		return err_set(err, "this is about %s/%s only", op->owner, op->repo);
	if (op->promised[0])
		return err_set(err, "one is enough: %s is already promised", op->promised);
	if (ledger_add(w->c.ledger, action, "workspace", params, time_now_ms(), op->promised, err) <
	    0) {
		op->promised[0] = '\0';
		return -1;
	}
	snprintf(result, cap, "Promised as %s; the commitment pipeline creates it.", op->promised);
	return 0;
}

static void make_sentinel(struct wsp *w, struct life_op *op, const char *summary);

static void on_model_done(void *ud, const struct compose_result *res)
{
	struct life_op *op = ud;
	struct wsp *w = op->a->w;
	if (w)
		w->life_run = NULL;
	if (!w) {
		op_free(op);
		return;
	}
	char said[LIFE_SUMMARY_MAX * 4 + 1] = ""; /* UTF-8: at most 4 bytes a code point */
	if (res->content)
		snprintf(said, sizeof said, "%.*s",
		         (int)utf8_truncate_graphemes(res->content, strlen(res->content),
		                                      LIFE_SUMMARY_MAX),
		         res->content);
	if (op->kind == LIFE_SYNTH) {
		if (op->promised[0]) {
			cJSON *o = ws_state(w, op->owner, op->repo);
			cJSON_DeleteItemFromObjectCaseSensitive(o, "pending");
			cJSON *p = cJSON_AddObjectToObject(o, "pending");
			cJSON_AddNumberToObject(p, "ms", (double)time_now_ms());
			cJSON_AddStringToObject(p, "commitment", op->promised);
			cJSON_AddItemToObject(p, "issues",
			                      cJSON_CreateIntArray(op->nums, (int)op->nnums));
			life_save(w);
			life_note(w, op, VERDICT_SENT, "plan_synthesis",
			          "%zu open issues and no plan: the model promised one (%s); an "
			          "issue "
			          "is closed once the plan names it",
			          op->nnums, op->promised);
		} else {
			if (res->stop == COMPOSE_STOP_ERROR ||
			    res->stop == COMPOSE_STOP_CANCELLED) {
				/* no answer: synthesis is due again */
				cJSON_DeleteItemFromObjectCaseSensitive(
				        ws_state(w, op->owner, op->repo), "synthMs");
				life_save(w);
			}
			life_note(w, op, VERDICT_DROP, "plan_synthesis",
			          "the model made no plan (%s): %s", res->stop_name,
			          said[0] ? said : res->reason);
		}
		op_free(op);
		return;
	}
	/* the health check */
	if (op->promised[0]) {
		life_note(w, op, VERDICT_PASS, "health_check",
		          "the model found unfinished work: an issue is promised (%s)",
		          op->promised);
		op_free(op);
		return;
	}
	if (res->stop != COMPOSE_STOP_FINAL) {
		/* no answer is no verdict: the check is due again */
		cJSON_DeleteItemFromObjectCaseSensitive(ws_state(w, op->owner, op->repo),
		                                        "healthMs");
		life_save(w);
		life_note(w, op, VERDICT_FAIL, "health_check", "the model did not answer (%s): %s",
		          res->stop_name, res->reason);
		op_free(op);
		return;
	}
	make_sentinel(w, op, said[0] ? said : NULL);
}

/* Starts the model with one tool (by name) whose action goes to the
 * ledger; op is the run's until on_model_done. */
static void run_model(struct wsp *w, struct life_op *op, const char *tool, const char *action,
                      const char *system, const char *user)
{
	op->action = action;
	op->sink.enqueue = model_sink;
	op->sink.ud = op;
	struct compose_tool all[TOOLS_MAX];
	size_t n =
	        tools_select(TOOLS_MODE_GITHUB, tools_agent_caps(false), &op->sink, all, TOOLS_MAX);
	for (size_t i = 0; i < n; i++)
		if (strcmp(all[i].name, tool) == 0)
			op->tools[op->ntools++] = all[i];
	struct llm_message msg = {.role = LLM_ROLE_USER, .content = (char *)user};
	struct compose_opts o = {.loop = w->c.loop,
	                         .llm = w->c.llm,
	                         .budget = w->c.budget,
	                         .system_prompt = system,
	                         .messages = &msg,
	                         .n_messages = 1,
	                         .tools = op->tools,
	                         .n_tools = op->ntools,
	                         .tool_choice = LLM_TOOL_CHOICE_AUTO,
	                         .max_rounds = LIFE_MODEL_ROUNDS,
	                         .done = on_model_done,
	                         .ud = op};
	struct ga_err err = {{0}};
	w->life_run = compose_start(&o, &err);
	if (!w->life_run)
		op_done(op, false, NULL, err.msg);
}

void wsp_life_quiesce(struct wsp *w)
{
	if (w->life_run)
		compose_cancel(w->life_run);
}

static const char model_system[] =
        "You are one of the agents that keep a collaborative GitHub workspace moving. Answer "
        "with the one tool you are given, or with one short sentence when it is not needed.";

static void synthesize(struct wsp *w, struct life_op *op)
{
	char *user = wsp_synthesis_prompt(op->owner, op->repo, op->ctx, op->nums,
	                                  WSP_SYNTH_MAX_ISSUES, &op->nnums);
	if (!user || w->life_run) {
		free(user);
		op_free(op);
		return;
	}
	stamp(w, op->owner, op->repo, "synthMs");
	run_model(w, op, "plan_create", "create_plan", model_system, user);
	free(user);
}

static void on_readme(void *ud, const struct gh_result *res)
{
	struct life_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w) {
		op_free(op);
		return;
	}
	struct gh_content c = {0};
	struct ga_err err = {{0}};
	bool have = res->kind == GH_OK && gh_content_parse(res->json, &c, &err) == 0 && c.data;
	if (!have && res->kind != GH_OK && res->status != 404) {
		gh_content_clear(&c);
		op_done(op, false, NULL, res->msg);
		return;
	}
	if (!have) {
		gh_content_clear(&c);
		make_sentinel(w, op,
		              "No documentation and no open issues: the project appears "
		              "complete.");
		return;
	}
	struct strbuf sb = {0};
	sb_printf(
	        &sb,
	        "The workspace %s/%s has no open plan, issue or pull request. Read its README and "
	        "its latest closed plans. If clearly unfinished functional work remains, create "
	        "exactly ONE issue describing it with github_create_issue (owner \"%s\", repo "
	        "\"%s\"). Otherwise create nothing and say in one sentence why the project is "
	        "complete.\n\n## README.md\n%.*s\n",
	        op->owner, op->repo, op->owner, op->repo,
	        (int)(c.len < LIFE_README_MAX ? c.len : LIFE_README_MAX), (const char *)c.data);
	gh_content_clear(&c);
	const cJSON *it;
	cJSON_ArrayForEach(it, op->ctx)
	{
		const char *body = json_string_or(it, "body", "");
		sb_printf(&sb, "\n## Closed plan #%d: %s\n%.*s\n",
		          (int)json_int_or(it, "number", 0), json_string_or(it, "title", ""),
		          (int)(strlen(body) < LIFE_PLAN_BODY_MAX ? strlen(body)
		                                                  : LIFE_PLAN_BODY_MAX),
		          body);
	}
	char *user = sb_detach(&sb);
	run_model(w, op, "github_create_issue", "create_issue", model_system, user);
	free(user);
}

/* The health check when due (the model asked whether work remains), else
 * the sentinel; without a model the sentinel at once. */
static void health_or_sentinel(struct wsp *w, struct life_op *op)
{
	if (!w->c.llm || !w->c.ledger) {
		make_sentinel(w, op, NULL);
		return;
	}
	if (w->life_run || !due(w, op->owner, op->repo, "healthMs", WSP_HEALTH_COOLDOWN_MS)) {
		op_free(op); /* the last check found work (an issue is on its way) */
		return;
	}
	stamp(w, op->owner, op->repo, "healthMs");
	struct ga_err err = {{0}};
	if (gh_contents_get(w->c.gh, op->owner, op->repo, "README.md", NULL, on_readme, op, &err) ==
	    0)
		op_done(op, false, NULL, err.msg);
}

/* --- the finished sentinel made ------------------------------------------------------------ */

static void make_sentinel(struct wsp *w, struct life_op *op, const char *summary)
{
	static const char all_done[] =
	        "All planned work is complete: every plan is closed and no issue or pull request "
	        "is open. No agent starts new plans or tasks here while this issue is open.";
	const char *names[] = {"summary"};
	const char *values[] = {summary ? summary : all_done};
	char *body =
	        w->c.voice ? voice_render(w->c.voice, VOICE_GH_WORKSPACE_FINISHED, names, values, 1)
	                   : voice_interpolate(voice_default(VOICE_GH_WORKSPACE_FINISHED), names,
	                                       values, 1);
	char target[WSP_REPO_FULL_MAX + 40];
	snprintf(target, sizeof target, "github:%s:%s:new-issue", op->owner, op->repo);
	/* one sentinel per finished stretch: the latest closed plan and the
	 * sentinel closed before it (op->other, 0 none) name it */
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "finished", op->owner, op->repo, op->number, op->other, 0);
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "title",
	                        LIFE_FINISHED_TITLE "all planned work complete, no open issues");
	cJSON *l = cJSON_AddArrayToObject(extra, "labels");
	cJSON_AddItemToArray(l, cJSON_CreateString(WSP_LABEL_FINISHED));
	struct wsp_send s = {.target = target, .text = body, .key = key, .extra = extra};
	wsp_send(w, &s, op_done, op);
	cJSON_Delete(extra);
	free(body);
}

/* The latest closed sentinel judged (wsp_sentinel.c): go → a new one
 * (keyed by it), else it was reopened or stays as it is. */
static void after_closed_sentinel(void *ud, bool go, int closed)
{
	struct life_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w || !go) {
		op_free(op);
		return;
	}
	op->other = closed;
	health_or_sentinel(w, op);
}

/* Under the lock: still no open sentinel (another agent's made since our
 * list was read)? */
static void on_sentinels(void *ud, const struct gh_result *res)
{
	struct life_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w || res->kind != GH_OK) {
		op_done(op, false, NULL, w ? res->msg : "stopping");
		return;
	}
	const cJSON *it;
	cJSON_ArrayForEach(it, res->json)
	{
		if (cJSON_GetObjectItemCaseSensitive(it, "pull_request"))
			continue;
		life_note(w, op, VERDICT_DROP, "workspace_finished",
		          "#%d (another agent's) already says the workspace is finished",
		          (int)json_int_or(it, "number", 0));
		op_free(op);
		return;
	}
	wsp_sentinel_closed_check(w, op->owner, op->repo, after_closed_sentinel, op);
}

static void on_closed_plans(void *ud, const struct gh_result *res)
{
	struct life_op *op = ud;
	struct wsp *w = op->a->w;
	int latest = 0;
	const cJSON *it;
	if (w && res->kind == GH_OK) {
		op->ctx = cJSON_CreateArray();
		cJSON_ArrayForEach(it, res->json)
		{
			int n = (int)json_int_or(it, "number", 0);
			if (cJSON_GetObjectItemCaseSensitive(it, "pull_request"))
				continue;
			if (n > latest)
				latest = n;
			cJSON_AddItemToArray(op->ctx, cJSON_Duplicate(it, 1));
		}
	}
	if (!w || latest == 0) {
		/* nothing was ever planned and done here: a new workspace waits
		 * for its first plan, it is not finished */
		op_free(op);
		return;
	}
	op->number = latest;
	struct gh_issue_query q = {.state = "open", .labels = WSP_LABEL_FINISHED, .max_items = 10};
	struct ga_err err = {{0}};
	if (gh_issues_list(w->c.gh, op->owner, op->repo, &q, on_sentinels, op, &err) == 0)
		op_done(op, false, NULL, err.msg);
}

/* --- handled issues: whose comment is the latest? ------------------------------------------- */

static void on_issue_comments(void *ud, const struct gh_result *res)
{
	struct life_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w || res->kind != GH_OK) {
		op_free(op);
		return;
	}
	int n = cJSON_GetArraySize(res->json);
	const cJSON *last = n > 0 ? cJSON_GetArrayItem(res->json, n - 1) : NULL;
	snprintf(op->b.last_commenter, sizeof op->b.last_commenter, "%s",
	         json_string_or(cJSON_GetObjectItemCaseSensitive(last, "user"), "login", ""));
	struct decision d;
	if (wsp_issue_hygiene(&op->b, w->login, time_now_ms(), w->c.handled_ms, w->c.stale_ms,
	                      &d) != WSP_HYG_HANDLED) {
		op_free(op);
		return;
	}
	wsp_note(w, op->owner, op->repo, 0, 0, STAGE_GATE, &d);
	close_issue(w, op, "completed");
}

/* --- the locks: one agent acts on an issue ---------------------------------------------------- */

static void on_life_lock(void *ud, enum coord_result res, const char *holder, const char *why)
{
	(void)why;
	struct life_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w || res == COORD_HELD) {
		/* our own lock from an earlier cycle: that act was judged then */
		if (w && !(holder && strcmp(holder, w->agent_name) == 0))
			life_note(w, op, VERDICT_DROP, kind_rule(op->kind), "#%d: %s does it",
			          op->number, holder ? holder : "another agent");
		op_free(op);
		return;
	}
	/* unavailable: go on; each act is keyed, and a second agent's close
	 * of a closed issue changes nothing */
	char text[400];
	struct ga_err err = {{0}};
	switch (op->kind) {
	case LIFE_CLOSE_DUP:
		snprintf(text, sizeof text,
		         "#%d already says this workspace is finished: closing this duplicate so "
		         "there is one.",
		         op->other);
		comment_then_close(w, op, text);
		break;
	case LIFE_REACTIVATE:
		snprintf(text, sizeof text,
		         "New activity on #%d reactivates this workspace: closing this so the "
		         "agents "
		         "plan and work again.",
		         op->other);
		comment_then_close(w, op, text);
		break;
	case LIFE_FINISH: {
		struct gh_issue_query q = {.state = "closed",
		                           .labels = PLAN_LABEL,
		                           .sort = "created",
		                           .direction = "desc",
		                           .max_items = 1};
		if (gh_issues_list(w->c.gh, op->owner, op->repo, &q, on_closed_plans, op, &err) ==
		    0)
			op_done(op, false, NULL, err.msg);
		break;
	}
	case LIFE_HANDLED:
		if (gh_comments_list(w->c.gh, op->owner, op->repo, op->number, WSP_MAX_COMMENTS,
		                     on_issue_comments, op, &err) == 0)
			op_done(op, false, NULL, err.msg);
		break;
	case LIFE_STALE:
		close_issue(w, op, "not_planned");
		break;
	case LIFE_SYNTH:
		synthesize(w, op);
		break;
	case LIFE_ROLLED:
		snprintf(text, sizeof text, "Rolled into plan #%d — closing.", op->other);
		comment_then_close(w, op, text);
		break;
	}
}

static void life_start(struct wsp *w, const struct wsp_ref *ws, enum life_kind k, int number,
                       int other, const struct wsp_issue_brief *b, const cJSON *ctx)
{
	struct life_op *op = xcalloc(1, sizeof *op);
	op->a = wsp_hold(w);
	op->kind = k;
	snprintf(op->owner, sizeof op->owner, "%s", ws->owner);
	snprintf(op->repo, sizeof op->repo, "%s", ws->repo);
	op->number = number;
	op->other = other;
	if (b)
		op->b = *b;
	if (ctx)
		op->ctx = cJSON_Duplicate(ctx, 1);
	struct coord *c = wsp_coord(w);
	char lock[COORD_MAX_KEY];
	if (k == LIFE_SYNTH)
		snprintf(lock, sizeof lock, "life:%s/%s#synth", ws->owner, ws->repo);
	else
		snprintf(lock, sizeof lock, "life:%s/%s#%d", ws->owner, ws->repo,
		         k == LIFE_FINISH ? 0 : number);
	if (!c)
		on_life_lock(op, COORD_UNAVAILABLE, NULL, "no backend");
	else if (coord_claim(c, lock, w->c.claim_ttl_ms * LIFE_LOCK_TTL_MUL, on_life_lock, op) != 0)
		on_life_lock(op, COORD_UNAVAILABLE, NULL, "not asked");
}

/* --- the step ----------------------------------------------------------------------------------
 */

struct life {
	struct wsp_anchor *a;
	wsp_step_fn next;
	void *ud;
	struct wsp_ref ws[WSP_MAX_WATCHED];
	size_t nws, wi;
};

static void life_ws(struct life *l);

static bool has_open_plan(const struct wsp *w, const struct wsp_ref *ws)
{
	for (size_t i = 0; i < w->nplans; i++)
		if (strcasecmp(w->plans[i]->owner, ws->owner) == 0 &&
		    strcasecmp(w->plans[i]->repo, ws->repo) == 0)
			return true;
	return false;
}

/* A promised synthesis whose plan is open now (an open plan newer than
 * every issue it rolls up): each listed issue still open that the plan
 * names is closed with "Rolled into plan #N"; one it does not name stays
 * open (item 42: never closed on faith). Then the promise is done with. */
static void rolled(struct wsp *w, const struct wsp_ref *ws, const struct wsp_issue_brief *b,
                   size_t n)
{
	cJSON *st = ws_state(w, ws->owner, ws->repo);
	cJSON *pending = cJSON_GetObjectItemCaseSensitive(st, "pending");
	if (!pending)
		return;
	const cJSON *issues = cJSON_GetObjectItemCaseSensitive(pending, "issues");
	int newest_issue = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, issues) if (it->valueint > newest_issue) newest_issue = it->valueint;
	const struct wsp_plan *plan = NULL;
	for (size_t i = 0; i < w->nplans; i++) {
		const struct wsp_plan *p = w->plans[i];
		if (strcasecmp(p->owner, ws->owner) == 0 && strcasecmp(p->repo, ws->repo) == 0 &&
		    p->number > newest_issue && (!plan || p->number > plan->number))
			plan = p;
	}
	struct life_op note = {0};
	snprintf(note.owner, sizeof note.owner, "%s", ws->owner);
	snprintf(note.repo, sizeof note.repo, "%s", ws->repo);
	if (!plan) {
		if (time_now_ms() - json_int_or(pending, "ms", 0) > LIFE_PENDING_MS) {
			life_note(w, &note, VERDICT_FAIL, "plan_synthesis",
			          "the promised plan (%s) did not appear: synthesis may run again",
			          json_string_or(pending, "commitment", "?"));
			cJSON_DeleteItemFromObjectCaseSensitive(st, "pending");
			life_save(w);
		}
		return;
	}
	cJSON_ArrayForEach(it, issues)
	{
		bool open = false;
		for (size_t i = 0; i < n && !open; i++)
			open = b[i].number == it->valueint;
		if (!open)
			continue;
		if (wsp_plan_covers(plan->body, it->valueint))
			life_start(w, ws, LIFE_ROLLED, it->valueint, plan->number, NULL, NULL);
		else
			life_note(w, &note, VERDICT_DROP, "issue_rolled",
			          "#%d stays open: plan #%d does not name it", it->valueint,
			          plan->number);
	}
	cJSON_DeleteItemFromObjectCaseSensitive(st, "pending");
	life_save(w);
}

/* §3.14.5 open-issue engagement (a workspace that is not finished): the
 * issues people opened go to the GitHub conversations, a few a cycle. */
static void engage(struct wsp *w, const struct wsp_ref *ws, const struct wsp_issue_brief *b,
                   size_t n)
{
	if (!w->c.consider)
		return;
	struct wsp_agents ag;
	wsp_workspace_agents(w, ws->owner, ws->repo, &ag);
	size_t q = wsp_engage(b, n, ws->owner, ws->repo, w->login, &ag, WSP_ENGAGE_PER_CYCLE,
	                      w->c.consider, w->c.ud);
	if (q)
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "open issues handed to the GitHub conversations",
		       "repo", ws->repo, "count", LOG_INT((int64_t)q));
}

/* What the open issues of one workspace call for (issues: GitHub's list,
 * b: the same read). */
static void life_decide(struct wsp *w, const struct wsp_ref *ws, const cJSON *issues,
                        const struct wsp_issue_brief *b, size_t n)
{
	int s = wsp_sentinel_pick(b, n);
	if (s >= 0) {
		for (size_t i = 0; i < n; i++)
			if (b[i].finished && !b[i].pull && (int)i != s)
				life_start(w, ws, LIFE_CLOSE_DUP, b[i].number, b[s].number, NULL,
				           NULL);
		struct wsp_agents ag;
		wsp_workspace_agents(w, ws->owner, ws->repo, &ag);
		int by = 0;
		if (wsp_sentinel_reactivated(b, n, s, &ag, &by))
			life_start(w, ws, LIFE_REACTIVATE, b[s].number, by, NULL, NULL);
		else
			wsp_sentinel_verify(w, ws->owner, ws->repo, b, n, s);
	} else {
		bool open_plan = has_open_plan(w, ws), open_issue = false, open_work = open_plan;
		for (size_t i = 0; i < n; i++) {
			open_plan = open_plan || b[i].plan;
			open_issue = open_issue || (!b[i].plan && !b[i].finished && !b[i].pull &&
			                            !b[i].discussion);
			open_work = open_work || (!b[i].plan && !b[i].finished);
		}
		if (!open_work)
			life_start(w, ws, LIFE_FINISH, 0, 0, NULL, NULL);
		else if (!open_plan && open_issue && w->c.llm && w->c.ledger && !w->life_run &&
		         !cJSON_GetObjectItemCaseSensitive(ws_state(w, ws->owner, ws->repo),
		                                           "pending") &&
		         due(w, ws->owner, ws->repo, "synthMs", WSP_SYNTH_COOLDOWN_MS))
			life_start(w, ws, LIFE_SYNTH, 0, 0, NULL, issues);
		engage(w, ws, b, n);
	}
	rolled(w, ws, b, n);
	/* §3.14.5: handled and stale issues */
	int64_t now = time_now_ms();
	int reads = 0;
	for (size_t i = 0; i < n; i++) {
		struct decision d;
		enum wsp_hygiene h =
		        wsp_issue_hygiene(&b[i], w->login, now, w->c.handled_ms, w->c.stale_ms, &d);
		char key[WSP_KEY_MAX + 1];
		wsp_key(key, sizeof key, "life-close", ws->owner, ws->repo, b[i].number, 0, 0);
		if (journal_state_of(w->c.journal, key) == JOURNAL_DONE)
			continue; /* closed by us; the list is older than that */
		if (h == WSP_HYG_STALE) {
			wsp_note(w, ws->owner, ws->repo, 0, 0, STAGE_GATE, &d);
			life_start(w, ws, LIFE_STALE, b[i].number, 0, &b[i], NULL);
		} else if (!b[i].pull && !b[i].plan && !b[i].finished && !b[i].discussion &&
		           b[i].updated_ms > 0 && now - b[i].updated_ms >= w->c.handled_ms &&
		           reads < LIFE_HANDLED_READS) {
			reads++;
			life_start(w, ws, LIFE_HANDLED, b[i].number, 0, &b[i], NULL);
		}
	}
}

static void on_open_issues(void *ud, const struct gh_result *res)
{
	struct life *l = ud;
	struct wsp *w = l->a->w;
	if (!w) {
		life_ws(l);
		return;
	}
	const struct wsp_ref *ws = &l->ws[l->wi];
	if (res->kind != GH_OK) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "open issues not read: no lifecycle step", "repo",
		       ws->repo, "error", res->msg);
	} else if (wsp_watch_find(&w->watch, ws->owner, ws->repo)) {
		struct wsp_issue_brief *b = xcalloc(LIFE_MAX_ISSUES, sizeof *b);
		size_t n = 0;
		const cJSON *it;
		cJSON_ArrayForEach(it, res->json)
		{
			if (n < LIFE_MAX_ISSUES && wsp_issue_brief(it, &b[n]) == 0)
				n++;
		}
		life_decide(w, ws, res->json, b, n);
		free(b);
	}
	l->wi++;
	life_ws(l);
}

static void life_ws(struct life *l)
{
	struct wsp *w = l->a->w;
	for (; w && !w->quiescing && l->wi < l->nws; l->wi++) {
		const struct wsp_ref *ws = &l->ws[l->wi];
		struct wsp_watch *ww = wsp_watch_find(&w->watch, ws->owner, ws->repo);
		if (!ww || ww->polled_ms <= 0)
			continue; /* its plans were not read: nothing to judge by */
		struct gh_issue_query q = {.state = "open",
		                           .sort = "updated",
		                           .direction = "asc",
		                           .max_items = LIFE_MAX_ISSUES};
		struct ga_err err = {{0}};
		if (gh_issues_list(w->c.gh, ws->owner, ws->repo, &q, on_open_issues, l, &err) != 0)
			return;
		wsp_error(w, "the open issues of %s/%s were not asked for: %s", ws->owner, ws->repo,
		          err.msg);
	}
	wsp_drop(l->a);
	wsp_step_fn next = l->next;
	void *ud = l->ud;
	free(l);
	next(ud, false);
}

void wsp_life_step(struct wsp *w, wsp_step_fn next, void *ud)
{
	if (w->c.paused && w->c.paused(w->c.ud)) {
		next(ud, false); /* the kill switch: no side effect at all */
		return;
	}
	struct life *l = xcalloc(1, sizeof *l);
	l->a = wsp_hold(w);
	l->next = next;
	l->ud = ud;
	for (size_t i = 0; i < w->watch.n && l->nws < WSP_MAX_WATCHED; i++) {
		snprintf(l->ws[l->nws].owner, sizeof l->ws[l->nws].owner, "%s",
		         w->watch.w[i].owner);
		snprintf(l->ws[l->nws].repo, sizeof l->ws[l->nws].repo, "%s", w->watch.w[i].repo);
		l->nws++;
	}
	life_ws(l);
}
