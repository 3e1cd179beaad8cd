/* The owner's terminal on the message pipeline. See console.h. */
#include "modules/owner/console.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

#define CONSOLE_CONVERSATION "owner:terminal"

struct console {
	struct console_opts o;
	uint64_t seq;
	unsigned waiting;
};

char *console_notice(const char *agent_name, const char *text)
{
	char *safe = log_redact(text ? text : "");
	struct strbuf sb;
	sb_init(&sb, STRBUF_DEFAULT_MAX);
	sb_printf(&sb, "%s: %s", agent_name, safe);
	free(safe);
	char *line = xstrdup(sb_cstr(&sb));
	sb_free(&sb);
	return line;
}

static void say(struct console *c, const char *text)
{
	char *line = console_notice(c->o.agent_name, text);
	c->o.print(c->o.ud, line);
	free(line);
}

static void set_busy(struct console *c)
{
	if (c->o.busy)
		c->o.busy(c->o.ud, c->waiting > 0);
}

/* ---- the pipeline source ------------------------------------------------------ */

struct turn {
	struct console *c;
	struct pipeline_job *job;
};

static void on_answer(void *ud, const char *text, const char *why)
{
	struct turn *t = ud;
	struct console *c = t->c;
	if (text)
		pipeline_composed(t->job, text, strlen(text), NULL);
	else
		pipeline_composed(t->job, NULL, 0, why ? why : "no answer");
	free(t);
	if (c->waiting)
		c->waiting--;
	set_busy(c);
}

static const char HELP[] =
        "commands: /status (what I am doing), /pause (stop answering anyone but /resume "
        "and /status), /resume, /help, exit. Anything else is a message to me.";

/* A command's answer, without the model. */
static bool command(struct console *c, const char *text, struct strbuf *out)
{
	struct ga_err err;
	err_clear(&err);
	if (strcasecmp(text, "/status") == 0) {
		if (c->o.status)
			c->o.status(c->o.ud, out);
		else
			sb_puts(out, pipeline_paused(c->o.pipeline) ? "paused" : "running");
		return true;
	}
	if (strcasecmp(text, "/pause") == 0 || strcasecmp(text, "/resume") == 0) {
		bool pause = strcasecmp(text, "/pause") == 0;
		if (c->o.set_paused && c->o.set_paused(c->o.ud, pause, &err) != 0)
			sb_printf(out, "could not %s: %s", pause ? "pause" : "resume", err.msg);
		else if (pause)
			sb_puts(out,
			        "paused: I answer nobody now, and only /resume and /status from "
			        "you. The pause survives a restart.");
		else
			sb_puts(out, "resumed: I answer again.");
		return true;
	}
	if (strcasecmp(text, "/help") == 0) {
		sb_puts(out, HELP);
		return true;
	}
	if (text[0] == '/' && !strchr(text, ' ')) {
		sb_printf(out, "unknown command %.40s; %s", text, HELP);
		return true;
	}
	return false;
}

static void compose(void *ud, struct pipeline_job *job, const struct conv_event *ev,
                    const struct gate_result *g)
{
	(void)g;
	struct console *c = ud;
	struct strbuf out;
	sb_init(&out, STRBUF_DEFAULT_MAX);
	if (command(c, ev->text, &out)) {
		pipeline_composed(job, sb_cstr(&out), out.len, NULL);
		sb_free(&out);
		return;
	}
	sb_free(&out);
	if (!c->o.owner) {
		const char *msg =
		        "I can't answer: owner conversation needs a model. Set "
		        "AI_GATEWAY_API_KEY, or LLM_BASE_URL and LLM_MODEL (general-agent "
		        "doctor checks them). Commands: /status, /pause, /resume, exit.";
		pipeline_composed(job, msg, strlen(msg), NULL);
		return;
	}
	struct turn *t = xcalloc(1, sizeof *t);
	t->c = c;
	t->job = job;
	c->waiting++;
	set_busy(c);
	struct ga_err err;
	err_clear(&err);
	if (owner_submit_to(c->o.owner, ev->text, on_answer, t, &err) != 0) {
		free(t);
		c->waiting--;
		set_busy(c);
		pipeline_composed(job, err.msg, strlen(err.msg), NULL);
	}
}

static void deliver(void *ud, const struct conv_event *ev, const char *text, size_t len)
{
	(void)ev;
	struct console *c = ud;
	char *copy = xstrndup(text, len);
	say(c, copy);
	free(copy);
}

/* ---- lines ----------------------------------------------------------------------- */

void console_line(struct console *c, const char *line)
{
	while (*line == ' ' || *line == '\t')
		line++;
	size_t len = strlen(line);
	while (len && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r'))
		len--;
	if (!len)
		return;
	char *text = xstrndup(line, len);
	if (strcmp(text, "exit") == 0 || strcmp(text, "quit") == 0) {
		free(text);
		c->o.shutdown(c->o.ud, "owner asked");
		return;
	}
	char id[64];
	int64_t now = time_now_ms();
	snprintf(id, sizeof id, "owner:%" PRId64 "-%" PRIu64, now, ++c->seq);
	struct conv_event_src src = {
	        .platform = CONV_PLATFORM_OWNER,
	        .conversation = CONSOLE_CONVERSATION,
	        .message_id = id,
	        .author_id = "owner",
	        .author_name = "owner",
	        .author_kind = CONV_AUTHOR_OWNER,
	        .chain = 0,
	        .chain_explicit = true,
	        .text = text,
	        .text_len = len,
	        .addressed_me = true,
	        .time_ms = now,
	};
	struct conv_event ev;
	conv_event_init(&ev, &src);
	bool blocked = pipeline_paused(c->o.pipeline) && !gate_is_owner_control(text, len);
	pipeline_event(c->o.pipeline, &ev);
	conv_event_free(&ev);
	if (blocked)
		say(c, "(paused: I answer only /resume and /status)");
	free(text);
}

struct console *console_new(const struct console_opts *o, struct ga_err *err)
{
	struct console *c = xcalloc(1, sizeof *c);
	c->o = *o;
	struct pipeline_source src = {
	        .platform = CONV_PLATFORM_OWNER,
	        .compose = compose,
	        .deliver = deliver,
	        .ud = c,
	};
	if (pipeline_add_source(o->pipeline, &src) != 0) {
		free(c);
		err_set(err, "the owner platform already has a source");
		return NULL;
	}
	return c;
}

void console_free(struct console *c)
{
	free(c);
}

void console_set_owner(struct console *c, struct owner *o)
{
	c->o.owner = o;
}

unsigned console_waiting(const struct console *c)
{
	return c->waiting;
}
