/* A notification on its walk (§6): its thread read, its event, the pipeline
 * source's hooks (gate, compose, react, done, reply refs, sent id), the
 * model's reply, the self-check, pacing, promises (§6.12). Started and
 * ended by the awareness check (bsky_aware.c), which it tells through
 * b->note_finished. */
#include "modules/bluesky/bsky_int.h"
#include "modules/reflection/peers.h"

/* ---- notes ------------------------------------------------------------------------------ */

void bk_note_clear(struct bnote *n)
{
	free(n->text);
	free(n->reply);
	cJSON_Delete(n->promises);
	for (size_t i = 0; i < n->nthread; i++)
		free(n->thread[i].text);
	uv_timer_t t = n->timer;
	struct bsky *b = n->b;
	memset(n, 0, sizeof *n);
	n->timer = t;
	n->b = b;
}

size_t bk_notes_in_flight(const struct bsky *b)
{
	size_t k = 0;
	for (size_t i = 0; i < BSKY_MAX_INFLIGHT; i++)
		k += b->notes[i].used;
	return k;
}

/* The walk is over: the awareness check takes the note from here, on the
 * loop. */
static void on_note_timer(uv_timer_t *t)
{
	struct bnote *n = t->data;
	n->b->note_finished(n);
}

void bk_note_end(struct bnote *n)
{
	n->ended = true;
	uv_timer_start(&n->timer, on_note_timer, 0, 0);
}

/* The pipeline tells how each walk ended (its source done() hook: once per
 * accepted event, from the loop, after the record stage). */
void bk_on_walk_done(void *ud, const struct conv_event *ev, const struct decision *final,
                     const char *artifact)
{
	(void)artifact;
	struct bsky *b = ud;
	struct bnote *n = ev && ev->message_id ? bk_note_by_uri(b, ev->message_id) : NULL;
	if (!n || n->ended)
		return;
	n->sent = final && final->verdict == VERDICT_SENT;
	/* a failure we noted ourselves (no room for the refs) stays one; a
	 * reply outbound's journal held back (sent before, or unresolved) is
	 * looked at again: the next walk learns from the journal which */
	n->send_failed |= final && (final->verdict == VERDICT_FAIL ||
	                            (final->verdict == VERDICT_DROP && final->rule &&
	                             strcmp(final->rule, "journal") == 0));
	bk_note_end(n);
}

/* The reply refs of a reply the pipeline sends (its reply_extra hook):
 * root and parent for the port. */
static void add_reply_refs(const struct bnote *n, cJSON *extra)
{
	cJSON *reply = cJSON_AddObjectToObject(extra, "reply");
	cJSON *root = cJSON_AddObjectToObject(reply, "root");
	cJSON_AddStringToObject(root, "uri", n->root_uri);
	cJSON_AddStringToObject(root, "cid", n->root_cid);
	cJSON *parent = cJSON_AddObjectToObject(reply, "parent");
	cJSON_AddStringToObject(parent, "uri", n->uri);
	cJSON_AddStringToObject(parent, "cid", n->cid);
}

int bk_on_reply_extra(void *ud, const struct conv_event *ev, cJSON *extra)
{
	struct bsky *b = ud;
	struct bnote *n = ev && ev->message_id ? bk_note_by_uri(b, ev->message_id) : NULL;
	if (!n)
		return -1;
	add_reply_refs(n, extra);
	return 0;
}

/* ---- compose ------------------------------------------------------------------------------- */

static int sink_enqueue(void *ud, const char *action, const cJSON *params, char *result, size_t cap,
                        struct ga_err *err)
{
	struct bnote *n = ud;
	if (strcmp(action, "bluesky_reply") == 0) {
		const char *uri = json_string_or(params, "post_uri", "");
		/* One post per turn: the reply belongs to it whatever post_uri
		 * the model copied (a thread parent, a mistyped URI). Said in
		 * the story, so a wrong reference is visible. */
		if (strcmp(uri, n->uri) != 0)
			bk_note_decision(n->b, n->conversation, n->uri, STAGE_COMPOSE, VERDICT_INFO,
			                 "post_uri",
			                 "the model named %.200s; the reply goes to this "
			                 "turn's post",
			                 uri);
		if (n->reply) {
			err_set(err, "this post already has its reply: one reply per post");
			return -1;
		}
		n->reply = xstrdup(json_string_or(params, "text", ""));
		snprintf(result, cap,
		         "Queued: the reply goes out after its checks. Do not answer this "
		         "post again.");
		return 0;
	}
	if (strcmp(action, "graceful_exit") == 0) {
		const char *type = json_string_or(params, "closing_type", "like");
		snprintf(n->exit_reason, sizeof n->exit_reason, "%s",
		         json_string_or(params, "reason", "graceful exit"));
		if (strcmp(type, "message") == 0) {
			if (!n->reply)
				n->reply = xstrdup(json_string_or(params, "closing_message", ""));
			snprintf(result, cap,
			         "The closing message is queued; the conversation ends.");
		} else {
			n->exit_like = true;
			snprintf(n->exit_uri, sizeof n->exit_uri, "%s",
			         json_string_or(params, "target_uri", n->uri));
			snprintf(n->exit_cid, sizeof n->exit_cid, "%s",
			         json_string_or(params, "target_cid", n->cid));
			snprintf(result, cap, "Liked; the conversation ends.");
		}
		return 0;
	}
	err_set(err,
	        "%s is not available while answering on Bluesky; answer with bluesky_reply or "
	        "end with graceful_exit",
	        action);
	return -1;
}

/* §6.3 step 6's relationship history line: what this person and the agent
 * did before this post (the interaction being answered is left out): the
 * counts, the types, the sentiment and whether the agent has ever answered
 * them. */
static void relationship_line(struct strbuf *sb, const struct bnote *n)
{
	const struct bsky_rel *r = bsky_state_rel(n->b->st, n->author_did);
	uint32_t total = r ? r->total : 0;
	unsigned by_type[BSKY_REASON_OTHER + 1] = {0};
	int64_t since = 0;
	for (size_t i = 0; r && i < r->nrecent; i++) {
		const struct bsky_interaction *x = &r->recent[i];
		if (strcmp(x->uri, n->uri) == 0) {
			total = total ? total - 1 : 0;
			continue;
		}
		if ((unsigned)x->type <= BSKY_REASON_OTHER)
			by_type[x->type]++;
	}
	if (r)
		since = r->first_seen_ms;
	if (total == 0) {
		sb_printf(sb, "\nYou have not interacted with @%s before.\n", n->author_handle);
		return;
	}
	char date[11];
	sb_printf(sb, "\nYour history with @%s: %u interaction%s since %s", n->author_handle,
	          (unsigned)total, total == 1 ? "" : "s", time_format_date(since, date));
	const char *sep = " (recently: ";
	for (int t = 0; t <= BSKY_REASON_OTHER; t++) {
		if (!by_type[t])
			continue;
		const char *name = bsky_reason_name((enum bsky_reason)t);
		size_t len = strlen(name);
		bool y = len && name[len - 1] == 'y'; /* reply → replies */
		sb_printf(sb, "%s%u %.*s%s", sep, by_type[t], (int)(len - (by_type[t] > 1 && y)),
		          name,
		          by_type[t] == 1 ? ""
		          : y             ? "ies"
		                          : "s");
		sep = ", ";
	}
	sb_printf(sb, "%s; sentiment %s; %s.\n", sep[0] == ',' ? ")" : "",
	          bsky_sentiment_name(r->sentiment),
	          r->responded ? "you have answered them before" : "you have never answered them");
}

/* What the agent remembers of the peer agents in this thread (§7.4's
 * relationship memory, kept by name from the room): a peer matches by its
 * handle's first label (bo.example.com → Bo) or the GitHub name its
 * identity post gave. */
static void peer_memory(struct strbuf *sb, const struct bnote *n)
{
	if (!n->b->c.st)
		return;
	enum { NAMES = 2 * BSKY_THREAD_MAX + 2 };
	char labels[BSKY_THREAD_MAX + 1][BSKY_HANDLE_MAX];
	const char *names[NAMES];
	size_t nn = 0, nl = 0;
	for (size_t i = 0; i <= n->nthread; i++) {
		bool agent = i < n->nthread ? n->thread[i].agent : n->agent;
		const char *handle = i < n->nthread ? n->thread[i].handle : n->author_handle;
		const char *did = i < n->nthread ? n->thread[i].did : n->author_did;
		if (!agent || strcmp(did, n->b->did) == 0)
			continue;
		handle += handle[0] == '@';
		snprintf(labels[nl], sizeof labels[nl], "%.*s", (int)strcspn(handle, "."), handle);
		names[nn++] = labels[nl++];
		const struct bsky_peer *p = bsky_state_peer(n->b->st, handle, did);
		if (p && p->github[0])
			names[nn++] = p->github;
	}
	if (!nn)
		return;
	char *lines = peers_render_from_store(n->b->c.st, names, nn);
	if (lines && lines[0])
		sb_printf(sb, "\nWhat you remember of the agents in this thread:\n%s\n", lines);
	free(lines);
}

/* The user message: the thread as data, oldest first, and the post to
 * answer. */
static char *user_message(struct bnote *n, enum bsky_ritual_role role)
{
	struct strbuf sb;
	sb_init(&sb, 64 * 1024);
	sb_puts(&sb, "Thread (oldest first):\n");
	for (size_t i = 0; i < n->nthread; i++) {
		bool you = strcmp(n->thread[i].did, n->b->did) == 0;
		sb_printf(&sb, "%s: %s\n", you ? "**[YOU]**" : n->thread[i].handle,
		          n->thread[i].text ? n->thread[i].text : "");
	}
	sb_printf(&sb, "\nAnswer this post by @%s%s:\n%s\nuri: %s\ncid: %s\nthread root: %s\n",
	          n->author_handle, n->owner ? " (your owner)" : "", n->text ? n->text : "", n->uri,
	          n->cid, n->root_uri);
	relationship_line(&sb, n);
	peer_memory(&sb, n);
	if (n->ritual[0])
		sb_printf(&sb, "\nThis thread is the ritual \"%s\"; your role in it: %s.\n",
		          n->ritual, bsky_ritual_role_name(role));
	return sb_detach(&sb);
}

/* The walk's job leaves the note (it is the pipeline's again). */
static struct pipeline_job *take_job(struct bnote *n)
{
	struct pipeline_job *job = n->job;
	n->job = NULL;
	return job;
}

static void compose_end(struct bnote *n, const char *why)
{
	struct pipeline_job *job = take_job(n);
	if (job)
		pipeline_silent(job, "nothing_to_send", why);
}

/* A like of n->like_uri (the post, unless graceful_exit named another)
 * instead of a reply. */
static void compose_react(struct bnote *n, const char *rule, const char *why)
{
	struct pipeline_job *job = take_job(n);
	if (job)
		pipeline_react(job, rule, why);
}

/* The direct replies under the thread view node t (getPostThread with
 * depth >= 1), reduced to what §6.8 asks: a reply of ours (steps 2), the
 * newest reply of a known peer (step 6). Every reply is looked at; nothing
 * is kept but the two. */
static void reduce_replies(const struct bsky *b, const cJSON *t, struct bsky_seen_replies *out)
{
	memset(out, 0, sizeof *out);
	const cJSON *r;
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(t, "replies"))
	{
		const cJSON *post = cJSON_GetObjectItemCaseSensitive(r, "post");
		if (!post) /* #notFoundPost, #blockedPost */
			continue;
		const char *did = bk_str_at(post, "author", "did");
		if (strcmp(did, b->did) == 0) {
			if (!out->own[0])
				snprintf(out->own, sizeof out->own, "%s",
				         json_string_or(post, "uri", "?"));
			continue;
		}
		int64_t ms = 0;
		if (!bsky_state_is_peer(b->st, did) ||
		    time_parse_iso(json_string_or(post, "indexedAt", ""), &ms) < 0)
			continue;
		if (!out->peer[0] || ms > out->peer_ms) {
			snprintf(out->peer, sizeof out->peer, "%s",
			         bk_str_at(post, "author", "handle"));
			out->peer_ms = ms;
		}
	}
}

/* §6.8 steps 2 and 6 on what was seen under the post (policy.h
 * bsky_reply_check): GO, or why not — nothing (already replied) or a like (a
 * peer just answered). The decision is d. */
static enum bsky_reply_check replies_check(struct bnote *n, const struct bsky_seen_replies *seen,
                                           struct decision *d)
{
	const struct bsky_reply_facts f = {seen->own, seen->peer, seen->peer_ms};
	enum bsky_reply_check r = bsky_reply_check(&f, n->owner, bk_now_ms(), d);
	if (r == BSKY_REPLY_ALREADY)
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "BLOCKED: already replied", "id", n->uri, "ours",
		       seen->own);
	return r;
}

/* The same check again once the reply is composed (the model took its
 * time): true when the reply goes on; otherwise the walk ends here. */
static bool replies_allow(struct bnote *n, const struct bsky_seen_replies *seen)
{
	struct decision d;
	enum bsky_reply_check r = replies_check(n, seen, &d);
	if (r == BSKY_REPLY_GO) {
		if (seen->peer[0]) /* the owner's post a peer answered: say why we still do */
			pipeline_note(n->b->c.pipeline, CONV_PLATFORM_BLUESKY, n->conversation,
			              n->uri, STAGE_COMPOSE, &d);
		return true;
	}
	free(n->reply);
	n->reply = NULL;
	if (r == BSKY_REPLY_PEER_LIKE)
		compose_react(n, d.rule, d.reason);
	else
		compose_end(n, d.reason);
	return false;
}

/* ---- commitments from our replies (§6.12) ----------------------------------------------- */

static void send_reply(struct bnote *n);

/* The reply's outcome: its commitments join the ledger only when it went
 * out (source bluesky, the thread in the params), each in its own story
 * ("commitment:<id>"), summed up in the record. */
static void on_reply_ended(void *ud, struct pipeline_job *job, const struct pipeline_outcome *o)
{
	(void)job;
	struct bnote *n = ud;
	struct bsky *b = n->b;
	if (!o->sent || !n->promises)
		return;
	const cJSON *it;
	cJSON_ArrayForEach(it, n->promises)
	{
		const char *type = json_string_or(it, "type", "");
		char id[LEDGER_ID_MAX] = "";
		struct ga_err err = {{0}};
		int r = -1;
		if (b->c.ledger)
			r = ledger_add(b->c.ledger, type, "bluesky",
			               cJSON_GetObjectItem(it, "params"), bk_now_ms(), id, &err);
		else
			err_set(&err, "no commitment ledger in this process");
		struct decision d;
		if (r == LEDGER_ADDED || r == LEDGER_DUPLICATE)
			decision_set(&d, VERDICT_INFO, "commitment",
			             "%s %s (source bluesky, reply %s)%s", type, id,
			             o->artifact ? o->artifact : "",
			             r == LEDGER_DUPLICATE ? ": already open" : " enqueued");
		else
			decision_set(&d, VERDICT_FAIL, "commitment", "%s not enqueued: %s", type,
			             err.msg);
		if (id[0]) {
			char conv[LEDGER_ID_MAX + 16];
			snprintf(conv, sizeof conv, "commitment:%s", id);
			pipeline_note(b->c.pipeline, CONV_PLATFORM_BLUESKY, conv, id, STAGE_RECORD,
			              &d);
		}
		if (o->note)
			sb_printf(o->note, "%s%s", o->note->len ? "; " : "commitments: ", d.reason);
	}
}

/* The reply goes out on the event's walk: the validator (told how many
 * commitments back it: its empty_promise check refuses a promise without
 * any), outbound with the reply refs (reply_extra). */
static void send_reply(struct bnote *n)
{
	char *text = n->reply;
	n->reply = NULL;
	struct pipeline_job *job = take_job(n);
	if (!job) {
		free(text);
		return;
	}
	size_t np = (size_t)cJSON_GetArraySize(n->promises);
	struct validator_context vc = {.platform = VALIDATOR_PLATFORM_BLUESKY,
	                               .mode = VALIDATOR_MODE_DISCUSSION,
	                               .role = VALIDATOR_ROLE_ACTOR,
	                               .is_action_owner = true,
	                               .connected_agents = 1,
	                               .n_commitments = np};
	struct pipeline_reply r = {
	        .text = text, .len = strlen(text), .vctx = &vc, .ended = on_reply_ended, .ud = n};
	pipeline_reply(job, &r);
	free(text);
}

static void on_promises(void *ud, const struct compose_result *res)
{
	struct bnote *n = ud;
	struct bsky *b = n->b;
	n->run = NULL;
	if (b->quiescing)
		return; /* stopping: the pipeline frees the job */
	struct cmt_list got;
	memset(&got, 0, sizeof got);
	struct ga_err err = {{0}};
	if (res->stop != COMPOSE_STOP_FINAL || !res->content) {
		bk_note_decision(b, n->conversation, n->uri, STAGE_COMPOSE, VERDICT_INFO,
		                 "extraction", "no extraction (%s: %s)",
		                 res->stop_name ? res->stop_name : "?", res->reason);
	} else if (cmt_extract_parse(res->content, strlen(res->content), b->c.social_only, &got,
	                             &err) != 0) {
		bk_note_decision(b, n->conversation, n->uri, STAGE_COMPOSE, VERDICT_INFO,
		                 "extraction", "the extraction reply was unusable: %s", err.msg);
	} else {
		bk_note_decision(b, n->conversation, n->uri, STAGE_COMPOSE, VERDICT_INFO,
		                 "extraction",
		                 "%zu commitment(s) in the reply (%zu dropped: low confidence or "
		                 "schema)",
		                 got.n, got.ndropped_total);
	}
	const struct bsky_promise_source src = {n->uri, n->cid, n->root_uri, n->root_cid};
	cJSON_Delete(n->promises);
	n->promises = cJSON_CreateArray();
	for (size_t i = 0; i < got.n; i++) {
		const struct cmt_item *c = &got.item[i];
		const struct bsky_promise p = {cmt_type_name(c->type), c->repo,    c->title,
		                               c->description,         c->content, c->issue_number};
		struct decision d;
		cJSON *params = bsky_commitment_params(&p, &src, b->c.social_only, &d);
		pipeline_note(b->c.pipeline, CONV_PLATFORM_BLUESKY, n->conversation, n->uri,
		              STAGE_COMPOSE, &d);
		if (!params)
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "type", p.type);
		cJSON_AddItemToObject(o, "params", params);
		cJSON_AddItemToArray(n->promises, o);
	}
	cmt_list_clear(&got);
	send_reply(n); /* without commitments the validator judges the bare promise */
}

/* Our reply promises something (cmt_extract_wanted)? Then the extraction
 * prompt (no tools, CMT_EXTRACT_MAX_TOKENS, temperature 0) reads it before
 * it goes out. True when the call started (it sends the reply). */
static bool promise_check(struct bnote *n)
{
	struct bsky *b = n->b;
	char why[160];
	if (!b->c.llm || !n->reply ||
	    !cmt_extract_wanted(n->reply, strlen(n->reply), why, sizeof why))
		return false;
	struct strbuf ctx;
	sb_init(&ctx, 4096);
	sb_printf(&ctx, "%s: %.1000s", n->author_handle, n->text ? n->text : "");
	char *context = sb_detach(&ctx);
	char *user = cmt_extract_prompt(n->reply, NULL, context);
	free(context);
	struct llm_message msg = {.role = LLM_ROLE_USER, .content = user};
	struct compose_opts o = {.loop = b->c.loop,
	                         .llm = b->c.llm,
	                         .budget = b->c.budget,
	                         .system_prompt = cmt_extract_system(),
	                         .messages = &msg,
	                         .n_messages = 1,
	                         .max_rounds = 1,
	                         .max_tokens = CMT_EXTRACT_MAX_TOKENS,
	                         .temperature = 0,
	                         .has_temperature = true,
	                         .done = on_promises,
	                         .ud = n};
	struct ga_err err = {{0}};
	n->run = compose_start(&o, &err);
	free(user);
	if (!n->run) {
		bk_note_decision(b, n->conversation, n->uri, STAGE_COMPOSE, VERDICT_INFO,
		                 "extraction", "no extraction call: %s", err.msg);
		return false;
	}
	bk_note_decision(b, n->conversation, n->uri, STAGE_COMPOSE, VERDICT_INFO, "extraction",
	                 "%s: asking the model for the reply's commitments before it goes out",
	                 why);
	return true;
}

/* The refresh of §6.8 step 6 (and step 2 again: the model took its time):
 * the replies under the post now. An unreadable thread fails open: the
 * reply goes on. */
static void on_refresh(void *ud, const struct atp_result *res)
{
	struct bnote *n = ud;
	if (res->kind == ATP_ERR_CANCELLED || n->b->quiescing)
		return; /* stopping: the pipeline frees the job */
	struct bsky_seen_replies seen;
	if (res->kind == ATP_OK && res->json) {
		reduce_replies(n->b, cJSON_GetObjectItemCaseSensitive(res->json, "thread"), &seen);
		if (!replies_allow(n, &seen))
			return;
	} else {
		log_kv(LOG_LEVEL_WARN, LOG_COMP,
		       "replies unreadable before sending: the reply goes on", "id", n->uri,
		       "error", res->msg);
	}
	if (!promise_check(n))
		send_reply(n);
}

static void on_pace(uv_timer_t *t)
{
	struct bnote *n = t->data;
	struct bsky *b = n->b;
	int64_t w = bsky_pacing_wait(&b->pacing, BSKY_ACT_REPLY, bk_now_ms());
	if (w > 0) {
		uv_timer_start(&n->timer, on_pace, (uint64_t)w, 0);
		return;
	}
	bsky_pacing_note(&b->pacing, BSKY_ACT_REPLY, bk_now_ms());
	struct ga_err err = {{0}};
	if (atp_get_post_thread(b->c.atp, n->uri, 1, 0, on_refresh, n, &err) != 0)
		return;
	log_kv(LOG_LEVEL_WARN, LOG_COMP, "replies not asked before sending: the reply goes on",
	       "id", n->uri, "error", err.msg);
	if (!promise_check(n))
		send_reply(n);
}

static void on_composed(void *ud, const struct compose_result *res)
{
	struct bnote *n = ud;
	struct bsky *b = n->b;
	n->run = NULL;
	if (b->quiescing)
		return; /* stopping: the pipeline frees the job */
	struct bsky_conv *c = bsky_state_conv(b->st, n->root_uri, true, bk_now_ms());
	if (n->exit_like) {
		if (c)
			bsky_conv_conclude(c, NULL, n->exit_reason, bk_now_ms());
		free(n->reply);
		n->reply = NULL;
		snprintf(n->like_uri, sizeof n->like_uri, "%s", n->exit_uri);
		snprintf(n->like_cid, sizeof n->like_cid, "%s", n->exit_cid);
		char why[sizeof n->exit_reason + 64];
		snprintf(why, sizeof why, "the model ends the conversation with a like: %s",
		         n->exit_reason);
		compose_react(n, "graceful_exit", why);
		return;
	}
	if (!n->reply || !*n->reply) {
		char why[300];
		snprintf(why, sizeof why, "the model sent no reply (%s)%s%.200s", res->stop_name,
		         res->content ? ": " : "", res->content ? res->content : res->reason);
		if (res->stop == COMPOSE_STOP_ERROR && res->llm_error == LLM_ERR_TRANSIENT)
			n->send_failed = true; /* asked again at the next check */
		compose_end(n, why);
		return;
	}
	/* the output self-check (§6.8 step 4): prevention beats pruning */
	if (bsky_self_check_to_like(c, n->reply)) {
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "Self-check: converting low-value reply to like",
		       "id", n->uri, "text", n->reply);
		if (c)
			bsky_conv_conclude(c, n->author_did, "self-check", bk_now_ms());
		compose_react(n, "self_check",
		              "a low-value closing becomes a like (we already replied here)");
		return;
	}
	int64_t w = bsky_pacing_wait(&b->pacing, BSKY_ACT_REPLY, bk_now_ms());
	if (w > 0)
		bk_note_decision(b, n->conversation, n->uri, STAGE_COMPOSE, VERDICT_INFO, "pacing",
		                 "the reply waits %" PRId64 " ms (human pace)", w);
	uv_timer_start(&n->timer, on_pace, (uint64_t)(w > 0 ? w : 0), 0);
}

static void compose_reply(struct bnote *n)
{
	struct bsky *b = n->b;
	struct ga_err err = {{0}};
	if (!b->c.llm || !b->c.skills) {
		compose_end(n, "no model is configured: nothing is composed");
		return;
	}
	struct skill_var vars[] = {{"blueskyUsername", b->handle},
	                           {"ownerHandle", b->owner_handle ? b->owner_handle : "(none)"}};
	char *skill = skills_render(b->c.skills, BSKY_REPLY_SKILL, NULL, vars, 2, &err);
	if (!skill) {
		compose_end(n, err.msg[0] ? err.msg : "the bluesky-reply skill is missing");
		return;
	}
	char *self = bk_read_self(b);
	char *system = skills_system_prompt(b->soul, self, skill);
	free(self);
	free(skill);
	enum bsky_ritual_role role = bsky_ritual_role(b->agent_name, n->root_uri);
	char *user = user_message(n, role);
	n->sink = (struct tools_sink){.enqueue = sink_enqueue, .ud = n};
	n->ntools = tools_select(TOOLS_MODE_BLUESKY, tools_agent_caps(b->c.social_only), &n->sink,
	                         n->tools, TOOLS_MAX);
	struct llm_message msg = {.role = LLM_ROLE_USER, .content = user};
	struct compose_opts o = {.loop = b->c.loop,
	                         .llm = b->c.llm,
	                         .budget = b->c.budget,
	                         .owner = n->owner,
	                         .system_prompt = system,
	                         .messages = &msg,
	                         .n_messages = 1,
	                         .tools = n->tools,
	                         .n_tools = n->ntools,
	                         .max_rounds = BSKY_COMPOSE_ROUNDS,
	                         .done = on_composed,
	                         .ud = n};
	n->run = compose_start(&o, &err);
	free(system);
	free(user);
	if (!n->run)
		compose_end(n, err.msg);
}

static void ask_journal(struct bnote *n, struct decision *d);

/* The Bluesky gate (after the shared one, recorded at the gate stage):
 * never a second reply to one post (§6.8 step 2), should-respond (§6.5),
 * the conversation's Social Mechanics (§6.7, our replies counted from the
 * conversation store: each once, however it was learnt), circular
 * conversations (§11.27), rituals, and a like when a known peer answered
 * the post moments ago (§6.14). */
void bk_on_gate(void *ud, const struct conv_event *ev, const struct gate_result *g,
                struct decision *d)
{
	(void)g;
	struct bsky *b = ud;
	struct bnote *n = bk_note_by_uri(b, ev->message_id);
	if (!n) {
		decision_set(d, VERDICT_BLOCK, "not_handling",
		             "not a notification this agent is handling now");
		return;
	}
	snprintf(n->like_uri, sizeof n->like_uri, "%s", n->uri);
	snprintf(n->like_cid, sizeof n->like_cid, "%s", n->cid);
	int64_t now = bk_now_ms();
	if (n->seen.own[0] && replies_check(n, &n->seen, d) == BSKY_REPLY_ALREADY) {
		d->verdict = VERDICT_BLOCK;
		return;
	}
	if (n->reply_unresolved) {
		ask_journal(n, d);
		return;
	}
	enum bsky_response r = bsky_should_respond(n->reason, n->owner, n->text, d);
	struct bsky_conv *c = bsky_state_conv(b->st, n->root_uri, true, now);
	if (!c) {
		decision_set(d, VERDICT_BLOCK, "thread_root",
		             "the thread root is not a usable URI");
		return;
	}
	bsky_conv_sync_replies(
	        c, (int)conv_store_count_ours(pipeline_store(b->c.pipeline), n->conversation));
	bool low = r == BSKY_LIKE;
	bsky_conv_note_incoming(c, n->author_did, n->depth, low, now);
	if (r == BSKY_SKIP) {
		d->verdict = VERDICT_BLOCK;
		return;
	}
	if (r == BSKY_LIKE) {
		bsky_conv_conclude(c, n->author_did, d->reason, now);
		d->verdict = VERDICT_REACT;
		return;
	}
	pipeline_note(b->c.pipeline, CONV_PLATFORM_BLUESKY, n->conversation, n->uri, STAGE_GATE, d);
	if (!bsky_conv_should_respond(c, n->author_did, n->owner, true, bk_mechanics(b), now, d)) {
		if (d->verdict == VERDICT_REACT)
			bsky_conv_conclude(c, NULL, d->rule, now);
		return;
	}
	if (strcmp(d->rule, "reengage") == 0)
		bsky_conv_reengage(c, !n->owner);
	/* the conversation's verdict is the decision's reason; later checks
	 * reuse d */
	char conv_why[DECISION_REASON_MAX];
	snprintf(conv_why, sizeof conv_why, "%s", d->reason);
	/* circular conversations: a hard stop that concludes (§11.27) */
	struct bsky_thread_post posts[BSKY_THREAD_MAX];
	for (size_t i = 0; i < n->nthread; i++)
		posts[i] = (struct bsky_thread_post){n->thread[i].did, n->thread[i].text};
	enum bsky_circular circ = bsky_circular_level(posts, n->nthread);
	if (!n->owner && (circ == BSKY_CIRC_MEDIUM || circ == BSKY_CIRC_HIGH)) {
		bsky_conv_conclude(c, NULL, "circular", now);
		decision_set(d, VERDICT_REACT, "circular",
		             "circular conversation (%s): the last posts only thank and restate",
		             bsky_circular_name(circ));
		return;
	}
	/* ritual threads: recognised by root, or by the workspace named in a
	 * participant ritual (then registered as today's thread) */
	const char *rname = bsky_state_ritual_thread(b->st, n->root_uri);
	if (!rname && b->c.self)
		for (size_t i = 0; i < b->c.self->ritual_count; i++) {
			const struct self_ritual *sr = &b->c.self->rituals[i];
			if (!sr->initiator && sr->workspace && n->text &&
			    strstr(n->text, sr->workspace)) {
				struct bsky_ritual_state *rs = bsky_state_ritual(b->st, sr->name);
				char date[11];
				bk_local_now(now, NULL, NULL, date);
				if (rs)
					bsky_state_ritual_run(rs, date, n->root_uri, false);
				rname = sr->name;
				break;
			}
		}
	if (rname)
		snprintf(n->ritual, sizeof n->ritual, "%s", rname);
	/* §6.14: a known peer answered this post moments ago — a like, and
	 * the model is not asked (checked again before sending) */
	enum bsky_reply_check rc = replies_check(n, &n->seen, d);
	if (rc == BSKY_REPLY_PEER_LIKE) {
		d->verdict = VERDICT_REACT;
		return;
	}
	if (rc == BSKY_REPLY_ALREADY) {
		d->verdict = VERDICT_BLOCK;
		return;
	}
	decision_set(d, VERDICT_PASS, "conversation", "%s", conv_why);
}

/* The pipeline's compose stage: both gates passed. */
void bk_on_compose(void *ud, struct pipeline_job *job, const struct conv_event *ev,
                   const struct gate_result *g)
{
	(void)g;
	struct bsky *b = ud;
	struct bnote *n = bk_note_by_uri(b, ev->message_id);
	if (!n) {
		pipeline_silent(job, "not_handling",
		                "not a notification this agent is handling now");
		return;
	}
	n->job = job;
	n->composing = true;
	compose_reply(n);
}

/* A reaction decided by a gate or by compose: a like of n->like_uri. */
void bk_on_react(void *ud, struct pipeline_job *job, const struct conv_event *ev,
                 const struct decision *why)
{
	struct bsky *b = ud;
	struct bnote *n = bk_note_by_uri(b, ev->message_id);
	if (!n) {
		struct decision d;
		decision_set(&d, VERDICT_DROP, "not_handling",
		             "not a notification this agent is handling now: no like");
		pipeline_reacted(job, &d, NULL);
		return;
	}
	const char *uri = n->like_uri[0] ? n->like_uri : n->uri;
	const char *cid = n->like_uri[0] ? n->like_cid : n->cid;
	bk_note_decision(b, n->conversation, n->uri, STAGE_OUTBOUND, VERDICT_REACT, "react_only",
	                 "a like of %s instead of a reply (%s)", uri,
	                 why && why->rule ? why->rule : "react");
	bk_like(b, uri, cid, n->author_did, n->conversation, n->uri, why ? why->reason : "", job);
}

/* Our reply is stored under the URI of the post the port made. */
int bk_on_sent_id(void *ud, const struct conv_event *ev, const char *artifact, char *buf,
                  size_t cap)
{
	(void)ud;
	(void)ev;
	if (!artifact || strncmp(artifact, "at://", 5) != 0)
		return -1;
	int k = snprintf(buf, cap, "%s", artifact);
	return k < 0 || (size_t)k >= cap ? -1 : 0;
}

int bk_reply_target(void *ud, const struct conv_event *ev, char *buf, size_t cap)
{
	(void)ud;
	int k = snprintf(buf, cap, "bluesky:reply:%s", ev->author_id);
	return k < 0 || (size_t)k >= cap ? -1 : 0;
}

/* ---- the thread ---------------------------------------------------------------------------- */

/* The journal key of our reply to n (pipeline.h: "reply:<message id>"). */
static void reply_key(const struct bnote *n, char key[BSKY_KEY_MAX])
{
	snprintf(key, BSKY_KEY_MAX, "reply:%s", n->uri);
}

/* What outbound's journal knows of our reply to n: made (a reconcile
 * found it, or the crash came after the journal's done) → it is ours
 * under the post, whatever the thread shows yet; sent without an answer →
 * reply_unresolved. */
static void journal_reply(struct bnote *n)
{
	struct journal *j = n->b->c.journal;
	char key[BSKY_KEY_MAX];
	reply_key(n, key);
	if (!j)
		return;
	enum journal_state js = journal_state_of(j, key);
	const char *art = js == JOURNAL_DONE ? journal_artifact(j, key) : NULL;
	if (art && strncmp(art, "at://", 5) == 0 && strlen(art) < BSKY_URI_MAX && !n->seen.own[0])
		snprintf(n->seen.own, sizeof n->seen.own, "%s", art);
	n->reply_unresolved = js == JOURNAL_INTENT;
}

/* Our reply's fate is unknown: the platform is asked (outbound reconciles
 * the intent by its key), the post is looked at again at the next check. */
static void ask_journal(struct bnote *n, struct decision *d)
{
	char key[BSKY_KEY_MAX];
	reply_key(n, key);
	struct ga_err err = {{0}};
	const char *how = "the platform is being asked whether it exists";
	if (!outbound_key_busy(n->b->c.outbound, key))
		how = outbound_reconcile_key(n->b->c.outbound, key, NULL, NULL, &err) == 0
		              ? "the platform is asked whether it exists"
		              : err.msg;
	n->send_failed = true;
	decision_set(d, VERDICT_BLOCK, "reply_unresolved",
	             "our reply to this post was sent but never answered (%s): looked at again "
	             "at the next check",
	             how);
}

/* A post of the thread into the conversation store (by its URI: a post
 * already there is not added twice), so the derived chain, the echo
 * window and our reply count read the thread as it is. */
static void store_post(struct bnote *n, const char *uri, const char *parent, const char *did,
                       const char *handle, bool agent, const char *text, int depth)
{
	struct bsky *b = n->b;
	if (!uri || !uri[0])
		return;
	bool self = strcmp(did, b->did) == 0;
	struct conv_event_src es = {.platform = CONV_PLATFORM_BLUESKY,
	                            .conversation = n->conversation,
	                            .message_id = uri,
	                            .parent_id = parent && parent[0] ? parent : NULL,
	                            .thread_id = n->root_uri,
	                            .author_id = did,
	                            .author_name = handle,
	                            .author_kind = self    ? CONV_AUTHOR_SELF
	                                           : agent ? CONV_AUTHOR_PEER
	                                                   : CONV_AUTHOR_HUMAN,
	                            .is_bot = self || agent,
	                            .text = text ? text : "",
	                            .text_len = text ? strlen(text) : 0,
	                            .from_history = true,
	                            .thread_depth = depth};
	struct conv_event ev;
	conv_event_init(&ev, &es);
	conv_store_add(pipeline_store(b->c.pipeline), &ev);
	conv_event_free(&ev);
}

static void start_event(struct bnote *n)
{
	struct bsky *b = n->b;
	/* the posts above this one (its branch), and a reply of ours found
	 * under it or known to the journal */
	journal_reply(n);
	for (size_t i = 0; i + 1 < n->nthread; i++)
		store_post(n, n->thread[i].uri, i ? n->thread[i - 1].uri : NULL, n->thread[i].did,
		           n->thread[i].handle, n->thread[i].agent, n->thread[i].text, (int)i);
	if (n->seen.own[0])
		store_post(n, n->seen.own, n->uri, b->did, b->handle, true, "", n->depth + 1);
	const char *addressed[1] = {b->handle};
	struct conv_event_src es = {.platform = CONV_PLATFORM_BLUESKY,
	                            .conversation = n->conversation,
	                            .message_id = n->uri,
	                            .parent_id = n->parent_uri[0] ? n->parent_uri : NULL,
	                            .thread_id = n->root_uri,
	                            .author_id = n->author_did,
	                            .author_name = n->author_handle,
	                            .author_kind = n->owner   ? CONV_AUTHOR_OWNER
	                                           : n->agent ? CONV_AUTHOR_PEER
	                                                      : CONV_AUTHOR_HUMAN,
	                            .is_bot = n->agent && !n->owner,
	                            .text = n->text ? n->text : "",
	                            .text_len = n->text ? strlen(n->text) : 0,
	                            .addressed = n->to_us ? addressed : NULL,
	                            .naddressed = n->to_us ? 1 : 0,
	                            .addressed_me = n->to_us,
	                            .time_ms = n->indexed_ms,
	                            .thread_depth = n->depth};
	bool flags[BSKY_THREAD_MAX];
	for (size_t i = 0; i < n->nthread; i++)
		flags[i] = n->thread[i].agent;
	int64_t derived = n->nthread ? bsky_derived_chain(flags, n->nthread) : -1;
	es.chain = bsky_chain_in(n->agent && !n->owner, n->carried, derived);
	es.chain_explicit = n->carried >= 0;
	struct conv_event ev;
	conv_event_init(&ev, &es);
	int r = pipeline_event(b->c.pipeline, &ev);
	conv_event_free(&ev);
	if (r < 0 && !n->ended) {
		/* overload: not handled; the next check asks again */
		n->send_failed = true;
		bk_note_end(n);
	}
}

/* The parent chain of getPostThread, root first, the post itself last;
 * the direct replies under the post (reduce_replies). */
static void parse_thread(struct bnote *n, const cJSON *thread)
{
	reduce_replies(n->b, thread, &n->seen);
	const cJSON *chain[BSKY_THREAD_MAX];
	size_t k = 0;
	for (const cJSON *t = thread; t && k < BSKY_THREAD_MAX;
	     t = cJSON_GetObjectItemCaseSensitive(t, "parent")) {
		const cJSON *post = cJSON_GetObjectItemCaseSensitive(t, "post");
		if (!post)
			break;
		chain[k++] = post;
	}
	n->depth = k ? (int)k - 1 : 0;
	for (size_t i = 0; i < k; i++) {
		const cJSON *post = chain[k - 1 - i];
		const cJSON *rec = cJSON_GetObjectItemCaseSensitive(post, "record");
		const char *did = bk_str_at(post, "author", "did");
		snprintf(n->thread[i].uri, sizeof n->thread[i].uri, "%s",
		         json_string_or(post, "uri", ""));
		snprintf(n->thread[i].did, sizeof n->thread[i].did, "%s", did);
		snprintf(n->thread[i].handle, sizeof n->thread[i].handle, "@%s",
		         bk_str_at(post, "author", "handle"));
		n->thread[i].text = xstrdup(json_string_or(rec, "text", ""));
		n->thread[i].agent = bk_is_agent_record(n->b, did, rec);
		if (i == 0 && k > 0 && !n->root_cid[0] &&
		    strcmp(json_string_or(post, "uri", ""), n->root_uri) == 0)
			snprintf(n->root_cid, sizeof n->root_cid, "%s",
			         json_string_or(post, "cid", ""));
		/* the post we replied to is ours: it addresses us */
		if (i + 2 == k && strcmp(did, n->b->did) == 0)
			n->to_us = true;
	}
	n->nthread = k;
}

static void on_thread(void *ud, const struct atp_result *res)
{
	struct bnote *n = ud;
	struct bsky *b = n->b;
	if (res->kind == ATP_OK && res->json) {
		parse_thread(n, cJSON_GetObjectItemCaseSensitive(res->json, "thread"));
	} else if (res->kind == ATP_ERR_NOT_FOUND) {
		bk_note_decision(b, n->conversation, n->uri, STAGE_EVENT, VERDICT_INFO, "deleted",
		                 "the post is gone (%s): nothing to answer", res->msg);
		bk_note_end(n);
		return;
	} else if (res->kind == ATP_ERR_CANCELLED) {
		return;
	} else {
		/* no thread (no AppView, a transient failure): the post alone */
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "thread unreadable: answering the post alone",
		       "id", n->uri, "error", res->msg);
	}
	if (n->nthread == 0) {
		snprintf(n->thread[0].did, sizeof n->thread[0].did, "%s", n->author_did);
		snprintf(n->thread[0].handle, sizeof n->thread[0].handle, "@%s", n->author_handle);
		n->thread[0].text = xstrdup(n->text ? n->text : "");
		n->thread[0].agent = n->agent;
		n->nthread = 1;
	}
	if (!n->root_cid[0]) {
		/* the root is the post itself (a top-level mention) */
		if (strcmp(n->root_uri, n->uri) == 0)
			snprintf(n->root_cid, sizeof n->root_cid, "%s", n->cid);
	}
	start_event(n);
}

void bk_fetch_thread(struct bnote *n)
{
	struct bsky *b = n->b;
	struct ga_err err = {{0}};
	/* depth 1: the direct replies too (§6.8 step 2: did we answer already?) */
	if (atp_get_post_thread(b->c.atp, n->uri, 1, BSKY_THREAD_MAX - 1, on_thread, n, &err) ==
	    0) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "thread not asked", "id", n->uri, "error",
		       err.msg);
		n->send_failed = true;
		bk_note_end(n);
	}
}
