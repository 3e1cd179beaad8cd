/* The agent's life on Bluesky, wired on the loop: the port wrapper, the
 * jobs, start, quiesce, free and status. See bsky.h (the contract) and
 * bsky_int.h (the files of the engine). */
#include "modules/bluesky/bsky_int.h"

/* ---- the port: the post pacing ------------------------------------------------------- */

struct port_call {
	struct bsky *b;
	outbound_port_done_fn done;
	void *done_ud;
	char key[BSKY_KEY_MAX];
};

static void port_done(void *ud, int ok, const char *artifact, const char *error)
{
	struct port_call *pc = ud;
	pc->done(pc->done_ud, ok, artifact, error);
	free(pc);
}

static int port_send(void *ud, const struct outbound_send *s, outbound_port_done_fn done,
                     void *done_ud)
{
	struct bsky *b = ud;
	struct port_call *pc = xcalloc(1, sizeof *pc);
	pc->b = b;
	pc->done = done;
	pc->done_ud = done_ud;
	snprintf(pc->key, sizeof pc->key, "%s", s->idem_key ? s->idem_key : "");
	if (s->text && (strncmp(s->target, "bluesky:post", 12) == 0))
		bsky_pacing_note(&b->pacing, BSKY_ACT_POST, bk_now_ms());
	int r = b->inner.send(b->inner.ud, s, port_done, pc);
	if (r != 0)
		free(pc);
	return r;
}

static void port_reconcile(void *ud, const char *idem_key, const char *target,
                           void (*done)(void *done_ud, int exists, const char *artifact),
                           void *done_ud)
{
	struct bsky *b = ud;
	if (b->inner.reconcile)
		b->inner.reconcile(b->inner.ud, idem_key, target, done, done_ud);
	else
		done(done_ud, -1, NULL);
}

void bsky_port_init(struct bsky *b, struct outbound_port *out, const struct outbound_port *inner)
{
	b->inner = *inner;
	*out = *inner;
	out->send = port_send;
	out->reconcile = port_reconcile;
	out->ud = b;
}

/* ---- start ----------------------------------------------------------------------------------- */

static void add_jobs(struct bsky *b)
{
	if (!b->c.sched)
		return;
	struct sched_job_opts o = {.name = "bluesky-awareness",
	                           .interval_ms = b->c.awareness_ms ? b->c.awareness_ms
	                                                            : BSKY_AWARENESS_MS,
	                           .jitter_pct = 0.12,
	                           .run = bk_awareness_run,
	                           .ud = b};
	b->j_aware = sched_add(b->c.sched, &o);
	o = (struct sched_job_opts){.name = "bluesky-feed",
	                            .interval_ms = b->c.feed_ms ? b->c.feed_ms : BSKY_FEED_MS,
	                            .jitter_pct = 0.12,
	                            .run = bk_feed_run,
	                            .ud = b};
	b->j_feed = sched_add(b->c.sched, &o);
	o = (struct sched_job_opts){.name = "bluesky-peers",
	                            .interval_ms = b->c.peers_ms ? b->c.peers_ms : BSKY_PEERS_MS,
	                            .jitter_pct = 0.12,
	                            .first_delay_ms = 1000,
	                            .run = bk_peers_run,
	                            .ud = b};
	b->j_peers = sched_add(b->c.sched, &o);
	o = (struct sched_job_opts){.name = "bluesky-expression",
	                            .interval_ms = b->c.expression_ms ? b->c.expression_ms
	                                                              : BSKY_EXPRESSION_MS,
	                            .jitter_pct = 0.12,
	                            .first_delay_ms = 5000,
	                            .run = bk_expression_run,
	                            .ud = b};
	b->j_expr = sched_add(b->c.sched, &o);
	o = (struct sched_job_opts){.name = "bluesky-rituals",
	                            .interval_ms = b->c.ritual_ms ? b->c.ritual_ms : BSKY_RITUAL_MS,
	                            .jitter_pct = 0.12,
	                            .first_delay_ms =
	                                    b->c.ritual_ms ? b->c.ritual_ms : BSKY_RITUAL_FIRST_MS,
	                            .run = bk_ritual_run,
	                            .ud = b};
	b->j_ritual = sched_add(b->c.sched, &o);
}

static void on_login(void *ud, const struct atp_result *res)
{
	struct bsky *b = ud;
	if (res->kind != ATP_OK || !res->json) {
		if (res->kind == ATP_ERR_CANCELLED)
			return;
		log_kv(LOG_LEVEL_ERROR, LOG_COMP, "Bluesky login failed: nothing is read or posted",
		       "error", res->msg);
		return;
	}
	snprintf(b->did, sizeof b->did, "%s", json_string_or(res->json, "did", ""));
	snprintf(b->handle, sizeof b->handle, "%s", json_string_or(res->json, "handle", ""));
	b->logged_in = true;
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "signed in", "did", b->did, "handle", b->handle);
	add_jobs(b);
}

struct bsky *bsky_new(const struct bsky_config *c, struct ga_err *err)
{
	if (!c || !c->loop || !c->atp || !c->pipeline || !c->outbound) {
		err_set(err,
		        "Bluesky needs the loop, the AT Protocol client, the pipeline and outbound "
		        "(one of them is missing)");
		return NULL;
	}
	struct bsky *b = xcalloc(1, sizeof *b);
	b->c = *c;
	b->agent_name = xstrdup(c->agent_name ? c->agent_name : "agent");
	b->owner_did = c->owner_did && *c->owner_did ? xstrdup(c->owner_did) : NULL;
	b->owner_handle = c->owner_handle ? xstrdup(c->owner_handle) : NULL;
	b->github = c->github_username && *c->github_username ? xstrdup(c->github_username) : NULL;
	b->soul = c->soul_text ? xstrdup(c->soul_text) : NULL;
	b->self_path = c->self_path ? xstrdup(c->self_path) : NULL;
	b->c.agent_name = b->agent_name;
	b->c.voice_path = NULL; /* the caller's string is not kept */
	if (c->voice_path) {
		b->voice = voice_open(c->voice_path);
	} else if (c->self_path) {
		char *path = voice_path_beside(c->self_path);
		b->voice = voice_open(path);
		free(path);
	}
	b->note_finished = bk_note_finished;
	b->st = bsky_state_new();
	b->batch = xcalloc(BSKY_BATCH_MAX, sizeof *b->batch);
	bsky_pacing_init(&b->pacing);
	if (c->pace_ms > 0) {
		for (int i = 0; i < BSKY_ACT_COUNT; i++)
			b->pacing.gap_ms[i] = c->pace_ms;
		b->pacing.any_gap_ms = c->pace_ms;
	}
	uv_timer_init(c->loop, &b->like_timer);
	b->like_timer.data = b;
	for (size_t i = 0; i < BSKY_MAX_INFLIGHT; i++) {
		b->notes[i].b = b;
		uv_timer_init(c->loop, &b->notes[i].timer);
		b->notes[i].timer.data = &b->notes[i];
	}
	return b;
}

int bsky_start(struct bsky *b, struct ga_err *err)
{
	if (b->c.st) {
		bsky_state_load(b->st, b->c.st, NULL, NULL);
		bsky_state_prune_rels(b->st, bk_now_ms());
	}
	struct pipeline_source src = {.platform = CONV_PLATFORM_BLUESKY,
	                              .gate = bk_on_gate,
	                              .compose = bk_on_compose,
	                              .reply_target = bk_reply_target,
	                              .react = bk_on_react,
	                              .done = bk_on_walk_done,
	                              .reply_extra = bk_on_reply_extra,
	                              .sent_id = bk_on_sent_id,
	                              .ud = b};
	if (pipeline_add_source(b->c.pipeline, &src) < 0) {
		err_set(err, "the pipeline already has a Bluesky source");
		return -1;
	}
	if (atp_login(b->c.atp, on_login, b, err) == 0)
		return -1;
	b->started = true;
	return 0;
}

void bsky_quiesce(struct bsky *b)
{
	if (!b)
		return;
	b->quiescing = true;
	uv_timer_stop(&b->like_timer);
	if (b->post_run)
		compose_cancel(b->post_run);
	for (size_t i = 0; i < BSKY_MAX_INFLIGHT; i++) {
		struct bnote *n = &b->notes[i];
		if (n->run) {
			compose_cancel(n->run);
		}
	}
}

static void on_closed(uv_handle_t *h)
{
	struct bsky *b = h->data;
	if (--b->closing_handles == 0) {
		free(b->batch);
		free(b);
	}
}

void bsky_free(struct bsky *b)
{
	if (!b)
		return;
	b->quiescing = true;
	bk_says_free(b);
	bk_batch_clear(b);
	bk_save_state(b);
	bsky_state_free(b->st);
	free(b->agent_name);
	free(b->owner_did);
	free(b->owner_handle);
	free(b->github);
	free(b->soul);
	free(b->self_path);
	voice_free(b->voice);
	free(b->post_text);
	free(b->post_user);
	for (size_t i = 0; i < b->nrecent; i++)
		free(b->recent[i]);
	b->closing_handles = 1 + BSKY_MAX_INFLIGHT;
	for (size_t i = 0; i < BSKY_MAX_INFLIGHT; i++) {
		struct bnote *n = &b->notes[i];
		free(n->text);
		free(n->reply);
		for (size_t k = 0; k < n->nthread; k++)
			free(n->thread[k].text);
		n->timer.data = b;
		uv_close((uv_handle_t *)&n->timer, on_closed);
	}
	b->like_timer.data = b;
	uv_close((uv_handle_t *)&b->like_timer, on_closed);
}

cJSON *bsky_status(struct bsky *b)
{
	cJSON *o = cJSON_CreateObject();
	struct atp_session_info si;
	atp_session_get(b->c.atp, &si);
	cJSON_AddStringToObject(o, "session", si.active ? "active" : "none");
	cJSON_AddStringToObject(o, "did", b->did);
	cJSON_AddStringToObject(o, "handle", b->handle);
	if (b->last_check_ms) {
		char iso[TIME_ISO_LEN + 1];
		cJSON_AddStringToObject(o, "lastCheck", time_format_iso(b->last_check_ms, iso));
	} else {
		cJSON_AddNullToObject(o, "lastCheck");
	}
	cJSON_AddNumberToObject(o, "checks", (double)b->checks);
	cJSON_AddNumberToObject(o, "handled", (double)b->st->handled_total);
	cJSON_AddNumberToObject(o, "inFlight", (double)bk_notes_in_flight(b));
	cJSON_AddNumberToObject(o, "cursorMs", (double)b->st->seen_until_ms);
	cJSON_AddNumberToObject(o, "conversations", (double)b->st->nconvs);
	cJSON_AddNumberToObject(o, "peers", (double)b->st->npeers);
	cJSON_AddNumberToObject(o, "pruned", (double)b->pruned);
	cJSON *rate = cJSON_AddObjectToObject(o, "rate");
	static const char *names[] = {"read", "write", "session"};
	for (int k = 0; k < ATP_RL_COUNT; k++) {
		struct atp_budget bud;
		if (atp_rate_snapshot(b->c.atp, (enum atp_rate_class)k, &bud) < 0 || !bud.known)
			continue;
		cJSON *x = cJSON_AddObjectToObject(rate, names[k]);
		cJSON_AddNumberToObject(x, "limit", (double)bud.limit);
		cJSON_AddNumberToObject(x, "remaining", (double)bud.remaining);
		cJSON_AddNumberToObject(x, "resetMs", (double)bud.reset_ms);
	}
	return o;
}
