/* The awareness check (job "bluesky-awareness"; bsky.h): the notifications
 * read page by page back to the cursor, what needs no walk handled at once,
 * the rest started in priority order (at most BSKY_MAX_INFLIGHT walking),
 * and each note's end: processed or asked again, the cursor advanced, the
 * state saved, the next one started. */
#include "modules/bluesky/bsky_int.h"

static void start_next(struct bsky *b);
static void check_end(struct bsky *b);
static void on_page(void *ud, const struct atp_result *res);

static int attempts_of(struct bsky *b, const char *uri, bool bump)
{
	for (size_t i = 0; i < sizeof b->attempts / sizeof b->attempts[0]; i++)
		if (strcmp(b->attempts[i].uri, uri) == 0)
			return bump ? ++b->attempts[i].n : b->attempts[i].n;
	if (!bump)
		return 0;
	struct attempt *a = &b->attempts[b->attempt_next];
	b->attempt_next = (b->attempt_next + 1) % (sizeof b->attempts / sizeof b->attempts[0]);
	snprintf(a->uri, sizeof a->uri, "%s", uri);
	a->n = 1;
	return 1;
}

/* The cursor: every batch notification indexed at or before it is handled. */
static void advance_cursor(struct bsky *b)
{
	int64_t best = b->st->seen_until_ms;
	/* the batch is sorted oldest first for this walk */
	for (size_t i = 0; i < b->nbatch; i++) {
		if (!b->batch[i].done)
			break;
		if (b->batch[i].indexed_ms > best)
			best = b->batch[i].indexed_ms;
	}
	b->st->seen_until_ms = best;
}

static void batch_done(struct bsky *b, const char *uri)
{
	for (size_t i = 0; i < b->nbatch; i++)
		if (strcmp(b->batch[i].uri, uri) == 0)
			b->batch[i].done = true;
}

/* A note's walk is over (b->note_finished, from the loop): what was sent is
 * remembered, the note is processed or asked again at the next check (a
 * send that failed, at most BSKY_MAX_ATTEMPTS times), the cursor moves,
 * the state is saved, the next note starts. */
void bk_note_finished(struct bnote *n)
{
	struct bsky *b = n->b;
	if (n->sent) {
		/* we answered this person (relationship record, §6.2) */
		bsky_state_rel_responded(b->st, n->author_did, n->uri);
		struct bsky_conv *c = bsky_state_conv(b->st, n->root_uri, true, bk_now_ms());
		if (c)
			bsky_conv_note_our_reply(c, n->depth + 1, bk_now_ms());
		if (n->ritual[0]) {
			struct bsky_ritual_state *r = bsky_state_ritual(b->st, n->ritual);
			char date[11];
			bk_local_now(bk_now_ms(), NULL, NULL, date);
			if (r)
				bsky_state_ritual_run(r, date, n->root_uri, false);
		}
	}
	bool retry = false;
	if (n->send_failed && !n->sent) {
		int a = attempts_of(b, n->uri, true);
		retry = a < BSKY_MAX_ATTEMPTS;
		bk_note_decision(
		        b, n->conversation, n->uri, STAGE_RECORD, VERDICT_INFO,
		        retry ? "retry" : "given_up",
		        retry ? "the reply could not be sent (attempt %d of %d): asked again at "
		                "the next check"
		              : "the reply could not be sent %d times (of %d): given up",
		        a, BSKY_MAX_ATTEMPTS);
	}
	if (!retry) {
		bsky_state_mark_processed(b->st, n->uri);
		batch_done(b, n->uri);
		advance_cursor(b);
	}
	bk_save_state(b);
	bk_note_clear(n);
	start_next(b);
	check_end(b);
}

/* @handles in a notification: candidates for peer SOULs (§7.4), scanned
 * by the peers job; only an identity post makes one a peer. */
static void register_mentions(struct bsky *b, const struct bnote *n)
{
	if (strcmp(n->author_did, b->did) == 0 || !n->text)
		return;
	for (const char *t = n->text; (t = strchr(t, '@')) != NULL; t++) {
		if (t != n->text && t[-1] != ' ' && t[-1] != '(' && t[-1] != '\n')
			continue;
		char h[BSKY_HANDLE_MAX];
		size_t k = 0;
		for (const char *q = t + 1; *q && k + 1 < sizeof h &&
		                            (isalnum((unsigned char)*q) || *q == '.' || *q == '-');
		     q++)
			h[k++] = (char)tolower((unsigned char)*q);
		while (k && h[k - 1] == '.')
			k--;
		h[k] = 0;
		if (!strchr(h, '.') || strcasecmp(h, b->handle) == 0 ||
		    (b->owner_handle && strcasecmp(h, b->owner_handle) == 0) ||
		    strcasecmp(h, n->author_handle) == 0)
			continue;
		if (!bsky_state_peer(b->st, h, NULL))
			bsky_state_peer_add(b->st, h, NULL, n->owner ? "owner_mention" : "thread",
			                    bk_now_ms());
	}
}

static void note_start(struct bsky *b, struct batch_item *it)
{
	struct bnote *n = NULL;
	for (size_t i = 0; i < BSKY_MAX_INFLIGHT && !n; i++)
		if (!b->notes[i].used)
			n = &b->notes[i];
	if (!n)
		return;
	const cJSON *x = it->n;
	const cJSON *rec = cJSON_GetObjectItemCaseSensitive(x, "record");
	n->used = true;
	snprintf(n->uri, sizeof n->uri, "%s", it->uri);
	snprintf(n->cid, sizeof n->cid, "%s", json_string_or(x, "cid", ""));
	snprintf(n->author_did, sizeof n->author_did, "%s", bk_str_at(x, "author", "did"));
	snprintf(n->author_handle, sizeof n->author_handle, "%s", bk_str_at(x, "author", "handle"));
	n->reason = bsky_reason_parse(json_string_or(x, "reason", ""));
	n->text = xstrdup(json_string_or(rec, "text", ""));
	n->indexed_ms = it->indexed_ms;
	n->carried = atp_record_chain(rec);
	n->owner = b->owner_did && strcmp(n->author_did, b->owner_did) == 0;
	n->agent = bk_is_agent_record(b, n->author_did, rec);
	n->to_us = n->reason == BSKY_REASON_MENTION || n->reason == BSKY_REASON_QUOTE;
	const cJSON *reply = cJSON_GetObjectItemCaseSensitive(rec, "reply");
	const char *root = reply ? bk_str_at(reply, "root", "uri") : "";
	snprintf(n->root_uri, sizeof n->root_uri, "%s", *root ? root : n->uri);
	if (reply) {
		snprintf(n->root_cid, sizeof n->root_cid, "%s", bk_str_at(reply, "root", "cid"));
		snprintf(n->parent_uri, sizeof n->parent_uri, "%s",
		         bk_str_at(reply, "parent", "uri"));
		if (strstr(n->parent_uri, b->did))
			n->to_us = true;
	}
	snprintf(n->conversation, sizeof n->conversation, "bluesky:%s", n->root_uri);
	it->started = true;
	register_mentions(b, n);
	cJSON_Delete(it->n);
	it->n = NULL;
	/* an author we do not know yet (or a handle-only one, rescanned at
	 * most every BSKY_PEER_RESCAN_MS): their identity post decides whether
	 * they are a peer SOUL (an agent) before the chain is derived */
	struct bsky_peer *p = bsky_state_peer(b->st, n->author_handle, n->author_did);
	if (!n->owner && strcmp(n->author_did, b->did) != 0 &&
	    (!p || (!p->github[0] && bk_now_ms() - p->verified_ms > BSKY_PEER_RESCAN_MS))) {
		struct ga_err err = {{0}};
		if (atp_get_author_feed(b->c.atp, n->author_did, "posts_no_replies", NULL,
		                        BSKY_FEED_LIMIT, bk_on_author_feed, n, &err) != 0)
			return;
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "identity scan not asked", "actor", n->author_did,
		       "error", err.msg);
	}
	bk_fetch_thread(n);
}

static int cmp_prio(const void *a_, const void *b_)
{
	const struct batch_item *a = a_, *b = b_;
	if (a->owner != b->owner)
		return a->owner ? -1 : 1;
	if (a->prio != b->prio)
		return a->prio > b->prio ? -1 : 1;
	return a->indexed_ms < b->indexed_ms ? -1 : (a->indexed_ms > b->indexed_ms);
}

static int cmp_time(const void *a_, const void *b_)
{
	const struct batch_item *a = a_, *b = b_;
	return a->indexed_ms < b->indexed_ms ? -1 : (a->indexed_ms > b->indexed_ms);
}

/* Starts the highest-priority waiting candidates while there is room. */
static void start_next(struct bsky *b)
{
	if (b->quiescing)
		return;
	while (bk_notes_in_flight(b) < BSKY_MAX_INFLIGHT) {
		struct batch_item *best = NULL;
		for (size_t i = 0; i < b->nbatch; i++) {
			struct batch_item *it = &b->batch[i];
			if (it->done || it->started || !it->n)
				continue;
			if (!best || cmp_prio(it, best) < 0)
				best = it;
		}
		if (!best)
			return;
		note_start(b, best);
	}
}

static void on_seen(void *ud, const struct atp_result *res)
{
	(void)ud;
	if (res->kind != ATP_OK && res->kind != ATP_ERR_CANCELLED)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "updateSeen failed", "error", res->msg);
}

void bk_batch_clear(struct bsky *b)
{
	for (size_t i = 0; i < b->nbatch; i++)
		cJSON_Delete(b->batch[i].n);
	b->nbatch = 0;
}

static void check_end(struct bsky *b)
{
	if (!b->aware_running || bk_notes_in_flight(b) > 0)
		return;
	for (size_t i = 0; i < b->nbatch; i++)
		if (!b->batch[i].done && b->batch[i].n && !b->quiescing)
			return; /* start_next will take them */
	struct ga_err err = {{0}};
	if (!b->quiescing && b->st->seen_until_ms > 0)
		atp_update_seen(b->c.atp, bk_now_ms(), on_seen, b, &err);
	bk_batch_clear(b);
	bk_save_state(b);
	struct sched_job *j = b->aware_running;
	b->aware_running = NULL;
	if (j)
		sched_job_done(j);
}

/* Handles what needs no walk, orders the rest, starts them. */
static void process_batch(struct bsky *b)
{
	qsort(b->batch, b->nbatch, sizeof b->batch[0], cmp_time);
	for (size_t i = 0; i < b->nbatch; i++) {
		struct batch_item *it = &b->batch[i];
		const cJSON *x = it->n;
		const char *did = bk_str_at(x, "author", "did");
		enum bsky_reason r = bsky_reason_parse(json_string_or(x, "reason", ""));
		bool talk = r == BSKY_REASON_REPLY || r == BSKY_REASON_MENTION ||
		            r == BSKY_REASON_QUOTE;
		bool self = strcmp(did, b->did) == 0;
		/* the relationship as it stood before this notification (an
		 * unknown person scores as unknown), then this one recorded —
		 * every kind, walked or not */
		struct bsky_prio_facts f = {.reason = r};
		bsky_state_rel_facts(b->st, did, &f);
		if (!self && r != BSKY_REASON_OTHER)
			bsky_state_rel_note(b->st, did, bk_str_at(x, "author", "handle"), r,
			                    it->uri,
			                    it->indexed_ms > 0 ? it->indexed_ms : bk_now_ms());
		if (!talk || self) {
			/* likes, follows, reposts, our own: nothing to walk */
			bsky_state_mark_processed(b->st, it->uri);
			it->done = true;
			cJSON_Delete(it->n);
			it->n = NULL;
			continue;
		}
		it->owner = b->owner_did && strcmp(did, b->owner_did) == 0;
		const cJSON *rec = cJSON_GetObjectItemCaseSensitive(x, "record");
		const cJSON *reply = cJSON_GetObjectItemCaseSensitive(rec, "reply");
		f.to_our_content = reply && strstr(bk_str_at(reply, "parent", "uri"), b->did);
		f.from_owner = it->owner;
		f.unread = !json_bool_or(x, "isRead", false);
		it->prio = bsky_priority(&f);
	}
	advance_cursor(b);
	start_next(b);
	check_end(b);
}

static void fetch_page(struct bsky *b, const char *cursor)
{
	struct ga_err err = {{0}};
	if (atp_list_notifications(b->c.atp, cursor, BSKY_PAGE_LIMIT, on_page, b, &err) == 0) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "notifications not asked", "error", err.msg);
		check_end(b);
	}
}

static void on_page(void *ud, const struct atp_result *res)
{
	struct bsky *b = ud;
	if (res->kind != ATP_OK || !res->json) {
		if (res->kind != ATP_ERR_CANCELLED)
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "notifications unreadable", "error",
			       res->msg);
		if (b->nbatch)
			process_batch(b);
		else
			check_end(b);
		return;
	}
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(res->json, "notifications");
	const cJSON *x;
	int64_t oldest = INT64_MAX;
	size_t got = 0;
	cJSON_ArrayForEach(x, arr)
	{
		got++;
		const char *uri = json_string_or(x, "uri", "");
		int64_t ms = 0;
		if (time_parse_iso(json_string_or(x, "indexedAt", ""), &ms) < 0)
			ms = 0;
		if (ms < oldest)
			oldest = ms;
		if (!*uri || strlen(uri) >= BSKY_URI_MAX || ms <= b->st->seen_until_ms ||
		    bsky_state_processed(b->st, uri) || b->nbatch == BSKY_BATCH_MAX)
			continue;
		bool dup = false;
		for (size_t i = 0; i < b->nbatch && !dup; i++)
			dup = strcmp(b->batch[i].uri, uri) == 0;
		if (dup)
			continue;
		struct batch_item *it = &b->batch[b->nbatch++];
		memset(it, 0, sizeof *it);
		snprintf(it->uri, sizeof it->uri, "%s", uri);
		it->indexed_ms = ms;
		it->n = cJSON_Duplicate(x, true);
	}
	const char *cursor = json_string_or(res->json, "cursor", NULL);
	b->pages++;
	if (cursor && got >= BSKY_PAGE_LIMIT && oldest > b->st->seen_until_ms &&
	    b->pages < BSKY_MAX_PAGES && b->nbatch < BSKY_BATCH_MAX) {
		fetch_page(b, cursor);
		return;
	}
	process_batch(b);
}

void bk_awareness_run(void *ud, struct sched_job *job)
{
	struct bsky *b = ud;
	if (!b->logged_in || b->quiescing) {
		sched_job_done(job);
		return;
	}
	b->aware_running = job;
	b->last_check_ms = bk_now_ms();
	b->checks++;
	b->pages = 0;
	bk_batch_clear(b);
	/* the conversation sweep: silence and no-response end threads
	 * quietly, evaluated here, never against a post that just came */
	for (size_t i = 0; i < b->st->nconvs; i++) {
		struct decision d;
		if (bsky_conv_sweep(&b->st->convs[i].c, bk_mechanics(b), b->last_check_ms, &d)) {
			char conv[BSKY_URI_MAX + 16];
			snprintf(conv, sizeof conv, "bluesky:%s", b->st->convs[i].root);
			pipeline_note(b->c.pipeline, CONV_PLATFORM_BLUESKY, conv, "", STAGE_RECORD,
			              &d);
		}
	}
	fetch_page(b, NULL);
}

bool bsky_check_now(struct bsky *b)
{
	return b->j_aware && sched_job_trigger(b->j_aware);
}
