/*
 * modules/space/runtime — the daemon's agent-space: join, keep presence,
 * hand chats to the pipeline, be its outbound port. See runtime.h.
 */
#include "modules/space/runtime.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/space/wire.h"
#include "common/fsx.h"
#include "common/hash.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/outbound/outbound.h"
#include "modules/participation/engine.h"
#include "modules/pipeline/pipeline.h"
#include "modules/reflection/peers.h"
#include "modules/reflection/voice.h"
#include "modules/scheduler/sched.h"
#include "modules/space/identity.h"

#define LOG_COMP "space"
/* The member list in a presence log line is cut here. */
#define RUNTIME_NAMES_LOG_MAX 1024
/* An unchanged workspace_state is journalled once per this window. */
#define SPACE_RUNTIME_STATE_REPEAT_MS ((int64_t)30 * 60 * 1000)

struct space_runtime {
	struct space_link *link;
	struct part_engine *engine; /* NULL: no model */
	struct voice *voice;        /* the §11 words; NULL: built in */
	struct pipeline *pipeline;
	struct outbound *outbound; /* NULL: nothing is broadcast */
	void (*done)(void *);
	void *done_ud;
	size_t last_members;
	/* for status: why the connection last ended, and when */
	char last_why[200];
	int64_t last_change_ms;
	/* for space_runtime_refresh_identity */
	char *soul_text;              /* NULL when none */
	char *self_path;              /* <home>/SELF.md, NULL when no home */
	char *self_start;             /* the identity summary built at start */
	char *github_login;           /* said in the summary; NULL: none */
	const struct state_store *st; /* relationship memory; may be NULL */
};

static enum conv_author_kind kind_of(enum space_author_kind k)
{
	switch (k) {
	case SPACE_AUTHOR_SELF:
		return CONV_AUTHOR_SELF;
	case SPACE_AUTHOR_HOST:
		return CONV_AUTHOR_HOST;
	default:
		return CONV_AUTHOR_PEER;
	}
}

/* The space client hands each parsed chat up once; here it becomes the
 * pipeline's event. */
static void to_pipeline(struct space_runtime *rt, const struct space_event *ev)
{
	struct conv_event_src src = {
	        .platform = CONV_PLATFORM_SPACE,
	        .conversation = ev->conversation,
	        .message_id = ev->message_id,
	        .parent_id = ev->parent_id,
	        .thread_id = ev->thread_id,
	        .author_id = ev->author_id,
	        .author_name = ev->author_name,
	        .author_kind = kind_of(ev->author_kind),
	        .is_bot = ev->author_kind != SPACE_AUTHOR_HOST,
	        .chain = ev->chain,
	        .chain_explicit = ev->chain_explicit,
	        .text = ev->text,
	        .text_len = ev->text_len,
	        .addressed = ev->addressed,
	        .naddressed = ev->naddressed,
	        .addressed_me = ev->addressed_me,
	        .time_ms = ev->time_ms,
	        .from_history = ev->from_history,
	};
	struct conv_event ce;
	conv_event_init(&ce, &src);
	pipeline_event(rt->pipeline, &ce);
	conv_event_free(&ce);
}

static void on_chat(void *ud, const struct space_event *ev)
{
	struct space_runtime *rt = ud;
	if (rt->engine && !ev->from_history) {
		/* the room's whole conversation is the engine's context */
		struct conv_event ce;
		conv_event_init(&ce,
		                &(struct conv_event_src){.platform = CONV_PLATFORM_SPACE,
		                                         .conversation = ev->conversation,
		                                         .message_id = ev->message_id,
		                                         .author_id = ev->author_id,
		                                         .author_name = ev->author_name,
		                                         .author_kind = kind_of(ev->author_kind),
		                                         .text = ev->text,
		                                         .text_len = ev->text_len,
		                                         .addressed = ev->addressed,
		                                         .naddressed = ev->naddressed,
		                                         .addressed_me = ev->addressed_me,
		                                         .time_ms = ev->time_ms});
		part_engine_observe(rt->engine, &ce);
		conv_event_free(&ce);
	}
	if (rt->pipeline)
		to_pipeline(rt, ev);
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
	struct space_runtime *rt = ud;
	rt->last_change_ms = time_now_ms();
	if (!joined) {
		snprintf(rt->last_why, sizeof rt->last_why, "%s", why && *why ? why : "closed");
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "connection ended", "why", why ? why : "");
	}
}

static void on_claim_lost(void *ud, const char *action, const char *target, const char *holder)
{
	(void)ud;
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "claim conflict", "action", action, "target", target,
	       "holder", holder ? holder : "");
}

static void on_peer_claim(void *ud, const char *name, const char *action, const char *target)
{
	struct space_runtime *rt = ud;
	part_engine_claim(rt->engine, name, action, target);
}

/* ---- the pipeline's source and outbound port --------------------------------- */

int space_runtime_target(struct space_runtime *rt, char *buf, size_t cap)
{
	if (!rt || !space_link_joined(rt->link))
		return -1;
	const char *url = spc_client_url(space_link_client(rt->link));
	struct spc_url u;
	struct ga_err err;
	err_clear(&err);
	if (!url || spc_url_parse(url, &u, &err) != 0)
		return -1;
	/* perms keys are ':'-separated: the port joins the host with '-'. An
	 * IPv6 literal's ':' become '.' so the key stays one segment. */
	char host[sizeof u.host];
	snprintf(host, sizeof host, "%s", u.host);
	for (char *c = host; *c; c++)
		if (*c == ':')
			*c = '.';
	int n = snprintf(buf, cap, "space:%s-%u", host, (unsigned)u.port);
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

static int reply_target(void *ud, const struct conv_event *ev, char *buf, size_t cap)
{
	(void)ev;
	return space_runtime_target(ud, buf, cap);
}

/* What the agent says in the room on its own (an announcement, the owner's
 * space_say) is the room's conversation, as the chats it hears are: the
 * target key names the server, the conversation the room. */
static int say_conversation(void *ud, const char *target, char *buf, size_t cap)
{
	(void)ud;
	(void)target;
	int n = snprintf(buf, cap, "space:room");
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* Why a chat was withdrawn by its last look, at most (the port's error). */
#define RUNTIME_WHY_MAX 400

struct port_send {
	outbound_port_done_fn done;
	void *done_ud;
	bool (*look)(void *ud, const char *text, char *why, size_t cap);
	void *look_ud;
	char why[RUNTIME_WHY_MAX];
};

static void port_said(void *ud, enum space_say_result r)
{
	struct port_send *ps = ud;
	if (r == SPACE_SAY_SENT)
		ps->done(ps->done_ud, 1, NULL, NULL);
	else if (r == SPACE_SAY_WITHDRAWN)
		ps->done(ps->done_ud, 0, NULL, ps->why[0] ? ps->why : "withdrawn");
	else
		ps->done(ps->done_ud, 0, NULL, space_say_result_name(r));
	free(ps);
}

/* The link's last look before the chat leaves is the submitter's
 * (outbound_send.look). */
static bool port_check(void *ud, const char *text)
{
	struct port_send *ps = ud;
	ps->why[0] = '\0';
	return ps->look(ps->look_ud, text, ps->why, sizeof ps->why);
}

/* The chat's platform fields: "claims" [{action, target}] made with it,
 * "replyDelayMs" {min, max} bounding its typing pause (§12.1 step 2). */
static size_t extra_claims(const cJSON *extra, struct space_say_claim *out, size_t cap)
{
	size_t n = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(extra, "claims"))
	{
		const char *a = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "action"));
		const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "target"));
		if (a && t && n < cap)
			out[n++] = (struct space_say_claim){a, t};
	}
	return n;
}

/* A broadcast that is not a chat ("kind" in the platform fields): the
 * room's `reflection` (§7.3) or `workspace_state`. */
static int port_broadcast(struct space_runtime *rt, const char *kind, const struct outbound_send *s,
                          outbound_port_done_fn done, void *done_ud)
{
	struct ga_err err;
	err_clear(&err);
	int rc = -1;
	if (strcmp(kind, "reflection") == 0) {
		rc = space_link_send_reflection(rt->link, s->text, &err);
	} else if (strcmp(kind, "workspace_state") == 0) {
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(s->extra, "state");
		rc = space_link_send_workspace_tasks(
		        rt->link, json_string_or(w, "workspace", ""), json_int_or(w, "plan", 0),
		        json_int_or(w, "total", 0), json_int_or(w, "completed", 0),
		        json_int_or(w, "blocked", 0), json_int_or(w, "inProgress", 0),
		        cJSON_GetObjectItemCaseSensitive(w, "tasks"),
		        cJSON_GetObjectItemCaseSensitive(w, "pulls"), &err);
	} else {
		err_set(&err, "the room has no broadcast of kind '%s'", kind);
	}
	if (rc != 0) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "broadcast not sent", "kind", kind, "error",
		       err.msg);
		done(done_ud, 0, NULL, err.msg);
	} else {
		done(done_ud, 1, NULL, NULL);
	}
	return 0;
}

static int port_send(void *ud, const struct outbound_send *s, outbound_port_done_fn done,
                     void *done_ud)
{
	struct space_runtime *rt = ud;
	const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s->extra, "kind"));
	if (kind)
		return port_broadcast(rt, kind, s, done, done_ud);
	struct port_send *ps = xcalloc(1, sizeof *ps);
	ps->done = done;
	ps->done_ud = done_ud;
	ps->look = s->look;
	ps->look_ud = s->look_ud;
	struct ga_err err;
	err_clear(&err);
	const cJSON *delay = cJSON_GetObjectItemCaseSensitive(s->extra, "replyDelayMs");
	if (delay) {
		double dmin = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(delay, "min"));
		double dmax = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(delay, "max"));
		if (dmin == dmin && dmax == dmax && dmin >= 0 && dmax >= 0)
			space_link_set_reply_delay(rt->link, (uint64_t)dmin, (uint64_t)dmax);
	}
	struct space_say_claim claims[SPACE_LINK_SAY_CLAIMS_MAX];
	struct space_say_req r = {.text = s->text,
	                          .chain = s->chain,
	                          .check = s->look ? port_check : NULL,
	                          .check_ud = ps,
	                          .claims = claims,
	                          .nclaims =
	                                  extra_claims(s->extra, claims, SPACE_LINK_SAY_CLAIMS_MAX),
	                          .done = port_said,
	                          .ud = ps};
	if (space_link_say_with(rt->link, &r, &err) != 0) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "chat not sent", "error", err.msg);
		free(ps);
		return -1;
	}
	return 0;
}

/* ---- the participation engine ------------------------------------------------------ */

static void compose(void *ud, struct pipeline_job *job, const struct conv_event *ev,
                    const struct gate_result *g)
{
	struct space_runtime *rt = ud;
	part_engine_offer(rt->engine, job, ev, g);
}

static bool room_joined(void *ud)
{
	struct space_runtime *rt = ud;
	return space_link_joined(rt->link);
}

static size_t room_members(void *ud, struct part_member *out, size_t cap)
{
	struct space_runtime *rt = ud;
	size_t n = space_link_member_count(rt->link), k = 0;
	for (size_t i = 0; i < n && k < cap; i++) {
		struct space_member_view m;
		if (!space_link_member_at(rt->link, i, &m))
			break;
		out[k++] = (struct part_member){.name = m.name,
		                                .caps = m.caps,
		                                .ncaps = m.ncaps,
		                                .has_caps = m.has_caps,
		                                .typing = m.typing};
	}
	return k;
}

static int room_target(void *ud, char *buf, size_t cap)
{
	return space_runtime_target(ud, buf, cap);
}

/* Present peers with their identity and latest reflection (§14.10). */
static size_t room_peers(void *ud, struct part_peer_note *out, size_t cap)
{
	struct space_runtime *rt = ud;
	size_t n = space_link_member_count(rt->link), k = 0;
	size_t nr = space_link_reflection_count(rt->link);
	for (size_t i = 0; i < n && k < cap; i++) {
		struct space_member_view m;
		if (!space_link_member_at(rt->link, i, &m))
			break;
		if (m.self)
			continue;
		const char *refl = NULL;
		for (size_t r = 0; r < nr; r++) {
			struct space_reflection_view rv;
			if (space_link_reflection_at(rt->link, r, &rv) &&
			    strcmp(rv.name, m.name) == 0)
				refl = rv.summary;
		}
		out[k++] = (struct part_peer_note){
		        .name = m.name, .identity_json = m.identity_json, .reflection = refl};
	}
	return k;
}

/* What this agent remembers of them (relationship memory, §7.4). */
static char *room_relationships(void *ud, const char *const *names, size_t n)
{
	struct space_runtime *rt = ud;
	return rt->st ? peers_render_from_store(rt->st, names, n) : NULL;
}

static size_t room_workspaces(void *ud, struct part_workspace_note *out, size_t cap)
{
	struct space_runtime *rt = ud;
	size_t n = space_link_workspace_count(rt->link), k = 0;
	for (size_t i = 0; i < n && k < cap; i++) {
		struct space_workspace_view w;
		if (!space_link_workspace_at(rt->link, i, &w))
			break;
		out[k++] = (struct part_workspace_note){.workspace = w.workspace,
		                                        .reporter = w.reporter,
		                                        .plan = w.plan,
		                                        .total = w.total,
		                                        .completed = w.completed,
		                                        .blocked = w.blocked,
		                                        .in_progress = w.in_progress};
	}
	return k;
}

/* Members' reports of work done (modules/space/link keeps them). */
static size_t room_results(void *ud, struct part_result_note *out, size_t cap)
{
	struct space_runtime *rt = ud;
	size_t n = space_link_result_count(rt->link), k = 0;
	/* the newest cap of them */
	for (size_t i = n > cap ? n - cap : 0; i < n && k < cap; i++) {
		struct space_result_view v;
		if (!space_link_result_at(rt->link, i, &v))
			break;
		out[k++] = (struct part_result_note){.who = v.name,
		                                     .action = v.action,
		                                     .target = v.target,
		                                     .link = v.link,
		                                     .time_ms = v.time_ms};
	}
	return k;
}

static void tick_done(void *job)
{
	sched_job_done(job);
}

static void tick_run(void *ud, struct sched_job *job)
{
	struct space_runtime *rt = ud;
	if (!rt->engine || !space_link_joined(rt->link)) {
		sched_job_done(job);
		return;
	}
	part_engine_tick(rt->engine, tick_done, job);
}

static void tick_stop(void *ud, struct sched_job *job)
{
	(void)job;
	struct space_runtime *rt = ud;
	part_engine_cancel(rt->engine);
}

static void room_unclaim(void *ud, const char *action, const char *target, bool failed,
                         const char *why)
{
	struct space_runtime *rt = ud;
	if (failed)
		space_link_release(rt->link, action, target, false, NULL, why);
	else
		space_link_forget(rt->link, action, target);
}

/* Another member has the work: a live claim on it, or its report that it
 * did it (a recent successful action_result). */
static const char *room_claim_holder(void *ud, const char *action, const char *target)
{
	struct space_runtime *rt = ud;
	const char *h = space_link_claim_holder(rt->link, action, target);
	return h ? h : space_link_result_of(rt->link, action, target, NULL);
}

/* §11's words in the agent's voice (no operational text
 * hard-coded): 0 = space.on_it, 1 = space.creating. */
static char *room_phrase(void *ud, int which)
{
	struct space_runtime *rt = ud;
	if (!rt->voice)
		return NULL;
	return xstrdup(voice_get(rt->voice, which == 0 ? VOICE_SPACE_ON_IT : VOICE_SPACE_CREATING));
}

static void start_engine(struct space_runtime *rt, uv_loop_t *loop,
                         const struct space_runtime_config *rc)
{
	if (!rc->pipeline || !rc->llm || !rc->skills || !rc->sched)
		return;
	rt->voice = rc->voice_path ? voice_open(rc->voice_path) : NULL;
	char *self = self_excerpt(rc->self, true, PART_ENGINE_SELF_MAX_BYTES);
	struct part_engine_config ec = {
	        .loop = loop,
	        .self_name = rc->cfg->agent_name,
	        .social_only = rc->social_only,
	        .llm = rc->llm,
	        .budget = rc->budget,
	        .skills = rc->skills,
	        .ledger = rc->ledger,
	        .pipeline = rc->pipeline,
	        .soul_text = rc->soul_text,
	        .self_text = self,
	        .memory_dir = rc->cfg->memory_dir,
	        .version = rc->version,
	        .joined = room_joined,
	        .members = room_members,
	        .target = room_target,
	        .peers = room_peers,
	        .workspaces = room_workspaces,
	        .results = room_results,
	        .relationships = room_relationships,
	        .unclaim = room_unclaim,
	        .claim_holder = room_claim_holder,
	        .phrase = room_phrase,
	        .ud = rt,
	};
	struct ga_err err;
	err_clear(&err);
	rt->engine = part_engine_new(&ec, &err);
	free(self);
	if (!rt->engine) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "not speaking in the room", "error", err.msg);
		return;
	}
	int64_t every =
	        part_jittered_interval_ms(rc->cfg->agent_name, "space-participation", 5000, 40);
	struct sched_job_opts o = {.name = "space-participation",
	                           .interval_ms = (uint64_t)every,
	                           .jitter_pct = 0,
	                           .first_delay_ms = (uint64_t)every,
	                           .run = tick_run,
	                           .on_stop = tick_stop,
	                           .ud = rt};
	if (!sched_add(rc->sched, &o)) {
		part_engine_free(rt->engine);
		rt->engine = NULL;
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "not speaking in the room", "error",
		       "the participation tick could not be scheduled");
		return;
	}
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "participation on", "tick_ms", LOG_INT(every));
}

struct part_engine *space_runtime_engine(struct space_runtime *rt)
{
	return rt ? rt->engine : NULL;
}

bool space_runtime_commitment_abandoned(struct space_runtime *rt, const char *id,
                                        const char *source)
{
	/* only the room's own promises belong to its requests (§6.3) */
	if (!rt || !rt->engine || !source || strcmp(source, "space") != 0)
		return false;
	return part_engine_commitment_failed(rt->engine, id);
}

static void on_broadcast(void *ud, const struct decision *final, const char *artifact)
{
	(void)ud;
	(void)artifact;
	if (final->verdict != VERDICT_SENT)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "broadcast not sent", "rule",
		       final->rule ? final->rule : "", "reason", final->reason);
}

/* A broadcast through outbound (permission space:<room>, audit, journal
 * under a key derived from its text: the same words are never broadcast
 * twice). */
static int broadcast(struct space_runtime *rt, const char *kind, const char *text,
                     const cJSON *state, const char *key)
{
	char target[PIPELINE_TARGET_MAX];
	const char *why = !rt->outbound ? "no outbound in this process"
	                  : space_runtime_target(rt, target, sizeof target) != 0 ? "not joined"
	                  : !text || !*text                                      ? "nothing to say"
	                                                                         : NULL;
	if (why) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "broadcast not sent", "kind", kind, "why", why);
		return -1;
	}
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "kind", kind);
	if (state)
		cJSON_AddItemToObject(extra, "state", cJSON_Duplicate(state, 1));
	char id[64];
	snprintf(id, sizeof id, "%s:%" PRId64, kind, time_now_ms());
	struct outbound_msg m = {.platform = CONV_PLATFORM_SPACE,
	                         .target = target,
	                         .source = kind,
	                         .conversation = "space:room",
	                         .message_id = id,
	                         .text = text,
	                         .text_len = strlen(text),
	                         .chain = -1,
	                         .idem_key = key,
	                         .extra = extra};
	outbound_submit(rt->outbound, &m, on_broadcast, rt);
	cJSON_Delete(extra);
	return 0;
}

bool space_runtime_peer_done(struct space_runtime *rt, const char *action, const char *target,
                             char *who, size_t who_cap, char *link, size_t link_cap)
{
	const char *l = NULL;
	const char *w = rt ? space_link_result_of(rt->link, action, target, &l) : NULL;
	if (!w)
		return false;
	snprintf(who, who_cap, "%s", w);
	snprintf(link, link_cap, "%s", l ? l : "");
	return true;
}

size_t space_runtime_peer_logins(struct space_runtime *rt, const char **out, size_t cap)
{
	return rt ? space_link_peer_logins(rt->link, out, cap) : 0;
}

int space_runtime_send_reflection(struct space_runtime *rt, const char *summary)
{
	if (!rt)
		return -1;
	return broadcast(rt, "reflection", summary, NULL, NULL);
}

int space_runtime_send_workspace_state(struct space_runtime *rt, const cJSON *state)
{
	const char *ws = json_string_or(state, "workspace", NULL);
	if (!rt || !ws || !*ws)
		return -1;
	/* The words outbound audits, dedups and journals: the counts, so the
	 * same state is not sent twice within the dedup window. */
	char text[SPACE_LINK_WORKSPACE_MAX_UNITS * 3 + 160];
	snprintf(text, sizeof text,
	         "workspace_state %s plan #%lld: %lld of %lld completed, %lld in progress, %lld "
	         "blocked",
	         ws, (long long)json_int_or(state, "plan", 0),
	         (long long)json_int_or(state, "completed", 0),
	         (long long)json_int_or(state, "total", 0),
	         (long long)json_int_or(state, "inProgress", 0),
	         (long long)json_int_or(state, "blocked", 0));
	/* The journal's key: a state is said again after a while (a room
	 * that restarted has forgotten it), not every cycle. */
	char hex[SHA256_HEX_LEN + 1], key[64];
	sha256_hex(text, strlen(text), hex);
	snprintf(key, sizeof key, "ws-state:%.24s:%lld", hex,
	         (long long)(time_now_ms() / SPACE_RUNTIME_STATE_REPEAT_MS));
	return broadcast(rt, "workspace_state", text, state, key);
}

/* The identity summary's JSON (space/identity.h), with our GitHub login
 * when there is one. Caller frees. */
static char *summary_json(const char *soul_text, const struct self_doc *self,
                          const char *github_login)
{
	struct spc_identity idn;
	space_identity_build(soul_text, self, NULL, &idn);
	if (github_login && *github_login)
		idn.github_login = xstrdup(github_login);
	char *j = spc_identity_json(&idn);
	spc_identity_free(&idn);
	return j;
}

int space_runtime_refresh_identity(struct space_runtime *rt)
{
	if (!rt)
		return -1;
	char *summary = NULL;
	struct self_doc self;
	struct ga_err err;
	err_clear(&err);
	if (rt->self_path && self_load(rt->self_path, &self, &err) == 0) {
		summary = summary_json(rt->soul_text, &self, rt->github_login);
		self_doc_free(&self);
	} else {
		log_kv(LOG_LEVEL_WARN, LOG_COMP,
		       "identity refreshed from the SELF.md read at start", "error",
		       rt->self_path ? err.msg : "no agent home");
	}
	const char *use = summary ? summary : rt->self_start;
	bool joined = space_link_joined(rt->link);
	space_link_set_identity(rt->link, use);
	log_kv(LOG_LEVEL_INFO, LOG_COMP,
	       joined ? "identity sent" : "identity kept for the next join", "summary",
	       use ? use : "");
	free(summary);
	return joined ? 0 : -1;
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
	char *summary = summary_json(rc->soul_text, rc->self, rc->github_login);
	lc.identity_json = summary;

	struct space_runtime *rt = xcalloc(1, sizeof *rt);
	rt->pipeline = rc->pipeline;
	rt->outbound = rc->outbound;
	rt->soul_text = rc->soul_text ? xstrdup(rc->soul_text) : NULL;
	rt->st = rc->st;
	rt->self_path = rc->cfg->home ? fsx_join(rc->cfg->home, "SELF.md") : NULL;
	rt->self_start = summary ? xstrdup(summary) : NULL;
	rt->github_login = rc->github_login && *rc->github_login ? xstrdup(rc->github_login) : NULL;
	struct space_link_handlers h = {.on_chat = on_chat,
	                                .on_presence = on_presence,
	                                .on_connection = on_connection,
	                                .on_claim_lost = on_claim_lost,
	                                .on_peer_claim = on_peer_claim};
	rt->link = space_link_new(loop, &lc, &h, rt, err);
	free(summary);
	if (!rt->link) {
		free(rt->soul_text);
		free(rt->self_path);
		free(rt->self_start);
		free(rt->github_login);
		free(rt);
		return NULL;
	}
	start_engine(rt, loop, rc);
	if (rt->pipeline) {
		struct pipeline_source src = {.platform = CONV_PLATFORM_SPACE,
		                              .compose = rt->engine ? compose : NULL,
		                              .reply_target = reply_target,
		                              .say_conversation = say_conversation,
		                              .ud = rt};
		pipeline_add_source(rt->pipeline, &src);
	}
	if (rc->outbound) {
		/* The link spaces chats itself (chat_interval_ms). */
		struct outbound_port port = {
		        .platform = CONV_PLATFORM_SPACE, .send = port_send, .ud = rt};
		struct ga_err e;
		err_clear(&e);
		if (outbound_add_port(rc->outbound, &port, &e) != 0)
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "the room is not an outbound port",
			       "error", e.msg);
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
	part_engine_free(rt->engine);
	rt->engine = NULL;
	space_link_free(rt->link);
	voice_free(rt->voice);
	free(rt->soul_text);
	free(rt->self_path);
	free(rt->self_start);
	free(rt->github_login);
	free(rt);
}

struct space_link *space_runtime_link(struct space_runtime *rt)
{
	return rt ? rt->link : NULL;
}

void space_runtime_describe(struct space_runtime *rt, char *buf, size_t cap)
{
	if (!rt) {
		snprintf(buf, cap, "off");
		return;
	}
	char since[TIME_ISO_LEN + 1] = "?";
	if (rt->last_change_ms)
		time_format_iso(rt->last_change_ms, since);
	const struct spc_client *c = space_link_client(rt->link);
	const char *url = c ? spc_client_url(c) : NULL;
	struct spc_client_stats stats = {0};
	if (c)
		spc_client_stats(c, &stats);
	switch (c ? spc_client_state(c) : SPC_IDLE) {
	case SPC_JOINED:
		snprintf(buf, cap, "joined %s (%zu members) since %s", url && *url ? url : "?",
		         space_link_member_count(rt->link), since);
		break;
	case SPC_GAVE_UP:
		snprintf(buf, cap,
		         "gave up rejoining %s: replaced %u times by another agent with this name "
		         "(close 4002); give one of them a different AGENT_NAME and restart it",
		         url && *url ? url : "the room", stats.replaced);
		break;
	case SPC_WAITING:
		snprintf(buf, cap, "not joined: %s; backing off before attempt %u",
		         c && *spc_client_last_error(c) ? spc_client_last_error(c)
		         : rt->last_why[0]              ? rt->last_why
		                                        : "the last attempt failed",
		         stats.attempts + 1);
		break;
	case SPC_DISCOVERING:
		snprintf(buf, cap, "looking for the room (SPACE_URL, then mDNS, then localhost)");
		break;
	case SPC_CONNECTING:
		snprintf(buf, cap, "connecting to %s (attempt %u)", url && *url ? url : "?",
		         stats.attempts);
		break;
	default:
		snprintf(buf, cap, "not started");
		break;
	}
}
