/*
 * owner — owner conversation turns. See owner.h.
 */
#include "modules/owner/owner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/compose/compose.h"

struct exchange {
	char *user;
	char *agent;
};

struct owner {
	struct owner_opts o;
	char *bluesky_username, *owner_handle;
	char *soul, *self;
	struct pending {
		char *line;
		owner_answer_fn answer; /* NULL: opts.say */
		void *ud;
	} queue[OWNER_QUEUE_MAX];
	int qhead, qlen;
	struct exchange transcript[OWNER_TRANSCRIPT_TURNS];
	int tlen;
	char *current;          /* the line being answered */
	owner_answer_fn answer; /* its submitter, NULL: opts.say */
	void *answer_ud;
	struct compose_run *run;
	bool closing;
	bool in_done; /* inside on_done's callbacks: owner_close must not free */
	bool refused; /* the model refused the key: no more turns */
	void (*closed)(void *ud);
	void *closed_ud;
};

static char *clip(const char *s)
{
	size_t n = strlen(s);
	if (n <= OWNER_TURN_MAX_BYTES)
		return xstrdup(s);
	/* Back off to a character boundary, then to a whole grapheme. */
	n = utf8_cut(s, n, OWNER_TURN_MAX_BYTES);
	n = utf8_truncate_graphemes(s, n, n);
	return xstrndup(s, n);
}

struct owner *owner_new(const struct owner_opts *opts)
{
	struct owner *o = xcalloc(1, sizeof *o);
	o->o = *opts;
	o->bluesky_username = xstrdup(opts->bluesky_username ? opts->bluesky_username : "");
	o->owner_handle = xstrdup(opts->owner_handle ? opts->owner_handle : "");
	o->soul = xstrdup("");
	o->self = xstrdup("");
	return o;
}

void owner_set_identity(struct owner *o, const char *soul, const char *self)
{
	free(o->soul);
	free(o->self);
	o->soul = xstrdup(soul ? soul : "");
	o->self = xstrdup(self ? self : "");
}

bool owner_busy(const struct owner *o)
{
	return o->run || o->qlen > 0;
}

/* Drops every waiting line; their submitters hear why. */
static void drop_queue(struct owner *o, const char *why)
{
	while (o->qlen > 0) {
		struct pending q = o->queue[o->qhead];
		o->qhead = (o->qhead + 1) % OWNER_QUEUE_MAX;
		o->qlen--;
		free(q.line);
		if (q.answer)
			q.answer(q.ud, NULL, why);
	}
}

/* The answer to the current line goes to its submitter, or to opts.say. */
static void answer(struct owner *o, const char *text, const char *why)
{
	owner_answer_fn fn = o->answer;
	void *ud = o->answer_ud;
	o->answer = NULL;
	if (fn)
		fn(ud, text, why);
	else if (text)
		o->o.say(o->o.ud, text);
	else if (why)
		o->o.say(o->o.ud, why);
}

static void owner_free(struct owner *o)
{
	drop_queue(o, "the agent is shutting down");
	for (int i = 0; i < o->tlen; i++) {
		free(o->transcript[i].user);
		free(o->transcript[i].agent);
	}
	free(o->current);
	free(o->bluesky_username);
	free(o->owner_handle);
	free(o->soul);
	free(o->self);
	void (*closed)(void *) = o->closed;
	void *ud = o->closed_ud;
	free(o);
	if (closed)
		closed(ud);
}

static void remember(struct owner *o, const char *user, const char *agent)
{
	if (o->tlen == OWNER_TRANSCRIPT_TURNS) {
		free(o->transcript[0].user);
		free(o->transcript[0].agent);
		memmove(o->transcript, o->transcript + 1,
		        (OWNER_TRANSCRIPT_TURNS - 1) * sizeof o->transcript[0]);
		o->tlen--;
	}
	o->transcript[o->tlen].user = clip(user);
	o->transcript[o->tlen].agent = clip(agent);
	o->tlen++;
}

static void next_turn(struct owner *o);

static void on_done(void *ud, const struct compose_result *r)
{
	struct owner *o = ud;
	o->run = NULL;
	log_kv(LOG_LEVEL_INFO, "owner", "owner turn finished", "stop", r->stop_name, "rounds",
	       LOG_INT(r->rounds), "tool_calls", LOG_INT(r->tool_calls), "tokens",
	       LOG_INT(r->usage.total_tokens), "reason", r->reason);
	/* say/fatal may close the owner (a refused key shuts the daemon
	 * down): owner_close then only marks it, and it is freed below. */
	o->in_done = true;
	if (o->closing) {
		/* cancelled by owner_close: the submitter hears it, the
		 * terminal does not */
		if (o->answer)
			answer(o, NULL, "cancelled: the agent is shutting down");
	} else if (r->stop == COMPOSE_STOP_ERROR && r->llm_error == LLM_ERR_FATAL) {
		/* The key is refused: no later line can succeed, and the host
		 * is shutting down. Drop what waits and take nothing new. */
		o->refused = true;
		if (o->answer)
			answer(o, NULL, r->reason);
		drop_queue(o, "the model refused the credentials");
		o->o.fatal(o->o.ud, r->reason);
	} else if (r->content && *r->content) {
		remember(o, o->current, r->content);
		answer(o, r->content, NULL);
	} else if (r->stop == COMPOSE_STOP_FINAL || r->stop == COMPOSE_STOP_TOOL) {
		remember(o, o->current, "(done)");
		answer(o, "(done — nothing more to say)", NULL);
	} else {
		char msg[GA_ERR_MSG_MAX + 64];
		snprintf(msg, sizeof msg, "I could not finish that: %s", r->reason);
		answer(o, msg, NULL);
	}
	o->in_done = false;
	free(o->current);
	o->current = NULL;
	if (o->closing) {
		owner_free(o);
		return;
	}
	next_turn(o);
}

/* The turn could not even start (a skill or an option is unusable): say
 * why, and go on with the next line. */
static void give_up_turn(struct owner *o, const char *why)
{
	char msg[GA_ERR_MSG_MAX + 64];
	snprintf(msg, sizeof msg, "I cannot answer: %s", why);
	answer(o, msg, NULL);
	free(o->current);
	o->current = NULL;
	next_turn(o);
}

static void next_turn(struct owner *o)
{
	if (o->run || o->qlen == 0 || o->closing || o->refused)
		return;
	o->current = o->queue[o->qhead].line;
	o->answer = o->queue[o->qhead].answer;
	o->answer_ud = o->queue[o->qhead].ud;
	o->qhead = (o->qhead + 1) % OWNER_QUEUE_MAX;
	o->qlen--;

	struct ga_err err = {{0}};
	const struct skill_var vars[] = {
	        {"blueskyUsername", o->bluesky_username[0] ? o->bluesky_username : "(not set)"},
	        {"ownerHandle", o->owner_handle[0] ? o->owner_handle : "(not set)"},
	};
	char *skill = skills_render(o->o.skills, OWNER_SKILL, NULL, vars, 2, &err);
	if (!skill) {
		give_up_turn(o, err.msg);
		return;
	}
	char *system = skills_system_prompt(o->soul, o->self, skill);
	free(skill);

	struct llm_message msgs[2 * OWNER_TRANSCRIPT_TURNS + 1];
	size_t n = 0;
	for (int i = 0; i < o->tlen; i++) {
		msgs[n++] = (struct llm_message){.role = LLM_ROLE_USER,
		                                 .content = o->transcript[i].user};
		msgs[n++] = (struct llm_message){.role = LLM_ROLE_ASSISTANT,
		                                 .content = o->transcript[i].agent};
	}
	msgs[n++] = (struct llm_message){.role = LLM_ROLE_USER, .content = o->current};
	struct compose_opts co = {
	        .loop = o->o.loop,
	        .llm = o->o.llm,
	        .budget = o->o.budget,
	        .owner = true,
	        .system_prompt = system,
	        .messages = msgs,
	        .n_messages = n,
	        .tools = o->o.tools,
	        .n_tools = o->o.n_tools,
	        .tool_choice = LLM_TOOL_CHOICE_AUTO,
	        .max_rounds = OWNER_MAX_ROUNDS,
	        .done = on_done,
	        .ud = o,
	};
	o->run = compose_start(&co, &err);
	free(system);
	if (!o->run)
		give_up_turn(o, err.msg);
}

int owner_submit_to(struct owner *o, const char *line, owner_answer_fn fn, void *ud,
                    struct ga_err *err)
{
	if (o->closing || o->refused)
		return err_set(err, "the agent is shutting down");
	if (o->qlen >= OWNER_QUEUE_MAX)
		return err_set(err, "%d messages are already waiting; wait for an answer first",
		               OWNER_QUEUE_MAX);
	struct pending *q = &o->queue[(o->qhead + o->qlen) % OWNER_QUEUE_MAX];
	q->line = clip(line);
	q->answer = fn;
	q->ud = ud;
	o->qlen++;
	next_turn(o); /* a turn that cannot start answers at once */
	return 0;
}

int owner_submit(struct owner *o, const char *line, struct ga_err *err)
{
	return owner_submit_to(o, line, NULL, NULL, err);
}

void owner_close(struct owner *o, void (*closed)(void *ud), void *ud)
{
	o->closing = true;
	o->closed = closed;
	o->closed_ud = ud;
	drop_queue(o, "cancelled: the agent is shutting down");
	if (o->run)
		compose_cancel(o->run); /* on_done frees */
	else if (!o->in_done)
		owner_free(o);
}
