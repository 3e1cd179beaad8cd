/*
 * modules/space/runtime — the daemon's agent-space: join, keep presence,
 * log. See runtime.h.
 */
#include "modules/space/runtime.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "modules/space/identity.h"

#define LOG_COMP "space"
/* The member list in a presence log line is cut here. */
#define RUNTIME_NAMES_LOG_MAX 1024

struct space_runtime {
	struct space_link *link;
	void (*done)(void *);
	void *done_ud;
	size_t last_members;
};

static void on_chat(void *ud, const struct space_event *ev)
{
	(void)ud;
	if (ev->from_history) {
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "history chat", "from", ev->author_name, "kind",
		       space_author_kind_name(ev->author_kind), "text", ev->text);
		return;
	}
	log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "chat", "from", ev->author_name, "id", ev->author_id,
	       "kind", space_author_kind_name(ev->author_kind), "chain", LOG_INT(ev->chain),
	       "addressed_me", ev->addressed_me ? "yes" : "no", "thread",
	       ev->thread_id ? ev->thread_id : "", "text", ev->text);
	if (ev->author_kind == SPACE_AUTHOR_HOST && ev->addressed_me)
		log_writef(LOG_LEVEL_INFO, LOG_COMP, "host addressed me: %s", ev->text);
}

static void on_presence(void *ud)
{
	struct space_runtime *rt = ud;
	size_t n = space_link_member_count(rt->link);
	struct strbuf names;
	sb_init(&names, RUNTIME_NAMES_LOG_MAX);
	for (size_t i = 0; i < n; i++) {
		struct space_member_view m;
		if (!space_link_member_at(rt->link, i, &m))
			break;
		if (names.len)
			sb_putc(&names, ',');
		sb_puts(&names, m.name);
	}
	log_kv(n != rt->last_members ? LOG_LEVEL_INFO : LOG_LEVEL_DEBUG, LOG_COMP, "presence",
	       "members", LOG_INT(n), "names", sb_cstr(&names));
	rt->last_members = n;
	sb_free(&names);
}

static void on_connection(void *ud, bool joined, const char *why)
{
	(void)ud;
	if (!joined)
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "connection ended", "why", why ? why : "");
}

struct space_runtime *space_runtime_start(uv_loop_t *loop, const struct space_runtime_config *rc,
                                          struct ga_err *err)
{
	struct space_link_config lc;
	space_link_config_init(&lc, rc->cfg);
	lc.agent_name = rc->cfg->agent_name;
	lc.version = rc->version;
	lc.social_only = rc->social_only;
	lc.space_url = rc->cfg->space_url;
	lc.st = rc->st;
	struct spc_identity idn;
	space_identity_build(rc->soul_text, rc->self, NULL, &idn);
	char *summary = spc_identity_json(&idn);
	spc_identity_free(&idn);
	lc.identity_json = summary;

	struct space_runtime *rt = xcalloc(1, sizeof *rt);
	struct space_link_handlers h = {
	        .on_chat = on_chat, .on_presence = on_presence, .on_connection = on_connection};
	rt->link = space_link_new(loop, &lc, &h, rt, err);
	free(summary);
	if (!rt->link) {
		free(rt);
		return NULL;
	}
	space_link_start(rt->link);
	return rt;
}

static void on_link_stopped(void *ud)
{
	struct space_runtime *rt = ud;
	if (rt->done)
		rt->done(rt->done_ud);
}

void space_runtime_stop(struct space_runtime *rt, void (*done)(void *ud), void *ud)
{
	if (!rt) {
		if (done)
			done(ud);
		return;
	}
	rt->done = done;
	rt->done_ud = ud;
	space_link_stop(rt->link, on_link_stopped, rt);
}

void space_runtime_free(struct space_runtime *rt)
{
	if (!rt)
		return;
	space_link_free(rt->link);
	free(rt);
}

struct space_link *space_runtime_link(struct space_runtime *rt)
{
	return rt ? rt->link : NULL;
}
