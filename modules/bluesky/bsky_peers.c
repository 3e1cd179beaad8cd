/* Peers (§7.4): identity posts, follow and announce once. */
#include "modules/bluesky/bsky_int.h"

/* The identity post (🔗—) in an author feed: its GitHub name, or -1. */
static int find_identity(const cJSON *feed, char gh[BSKY_GITHUB_NAME_MAX])
{
	const cJSON *x;
	cJSON_ArrayForEach(x, feed)
	{
		if (cJSON_GetObjectItemCaseSensitive(x, "reason"))
			continue;
		const cJSON *rec = cJSON_GetObjectItemCaseSensitive(
		        cJSON_GetObjectItemCaseSensitive(x, "post"), "record");
		const char *text = json_string_or(rec, "text", "");
		if (!cJSON_GetObjectItemCaseSensitive(rec, "reply") && bsky_is_identity_post(text))
			return bsky_identity_github(text, gh);
	}
	return -1;
}

/* Records what an identity scan found about handle/did. */
static void peer_scanned(struct bsky *b, const char *handle, const char *did, const char *via,
                         const struct atp_result *res)
{
	if (res->kind != ATP_OK || !res->json)
		return;
	char gh[BSKY_GITHUB_NAME_MAX];
	bool found = find_identity(cJSON_GetObjectItemCaseSensitive(res->json, "feed"), gh) == 0;
	struct bsky_peer *p = bsky_state_peer(b->st, handle, did);
	if (!p && !found)
		return; /* a person: nothing to remember */
	if (!p)
		p = bsky_state_peer_add(b->st, handle, did, via, bk_now_ms());
	if (!p)
		return;
	/* the feed's author names the DID of a handle-only entry */
	const cJSON *first =
	        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(res->json, "feed"), 0);
	const char *fdid =
	        json_string_or(cJSON_GetObjectItemCaseSensitive(
	                               cJSON_GetObjectItemCaseSensitive(first, "post"), "author"),
	                       "did", "");
	if (!p->did[0] && *fdid)
		snprintf(p->did, sizeof p->did, "%s", fdid);
	p->verified_ms = bk_now_ms();
	if (found) {
		if (strcmp(p->github, gh) != 0)
			log_kv(LOG_LEVEL_INFO, LOG_COMP, "peer linked", "handle", p->handle,
			       "github", gh);
		snprintf(p->github, sizeof p->github, "%s", gh);
	} else {
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "Peer identity post not found — will retry",
		       "handle", p->handle);
	}
}

void bk_on_author_feed(void *ud, const struct atp_result *res)
{
	struct bnote *n = ud;
	if (res->kind == ATP_ERR_CANCELLED)
		return;
	peer_scanned(n->b, n->author_handle, n->author_did, "thread", res);
	n->agent = n->agent || bsky_state_is_peer(n->b->st, n->author_did);
	bk_fetch_thread(n);
}

/* ---- peers: follow, announce once (§7.4) ----------------------------------------------- */

struct peer_call {
	struct bsky *b;
	char did[BSKY_DID_MAX];
	char handle[BSKY_HANDLE_MAX];
	bool already_done; /* the follow's key was DONE in the journal when submitted */
};

/* The follow's final decision from outbound. Sent, or dropped by the
 * journal as already done (a follow made before a crash and reconciled):
 * followed. Anything else (a send permission, pacing, the port) is a
 * decision on the peers' story with outbound's rule and reason; the follow
 * is asked again on a later run. */
static void on_followed(void *ud, const struct decision *final, const char *artifact)
{
	struct peer_call *pc = ud;
	struct bsky *b = pc->b;
	b->peer_busy = false;
	struct bsky_peer *p = bsky_state_peer(b->st, NULL, pc->did);
	bool done = final->verdict == VERDICT_SENT ||
	            (final->verdict == VERDICT_DROP && final->rule &&
	             strcmp(final->rule, "journal") == 0 && pc->already_done);
	if (done && p) {
		p->followed = true;
		bk_note_decision(b, "bluesky:peers", pc->did, STAGE_OUTBOUND, VERDICT_SENT,
		                 "follow", "followed the peer @%s (%s)", pc->handle,
		                 artifact ? artifact : "already followed");
		bk_save_state(b);
	} else if (!done) {
		bk_note_decision(b, "bluesky:peers", pc->did, STAGE_OUTBOUND, final->verdict,
		                 final->rule ? final->rule : "follow",
		                 "the follow of the peer @%s was not made: %s", pc->handle,
		                 final->reason);
	}
	free(pc);
}

/* Follows p through outbound: target bluesky:follow:<did>, text the DID,
 * key follow:<did> (so a crash between the follow and "done" is reconciled
 * from our follow records, never followed twice). */
static void submit_follow(struct bsky *b, struct peer_call *pc)
{
	char target[BSKY_DID_MAX + 24], key[BSKY_KEY_MAX];
	snprintf(target, sizeof target, "bluesky:follow:%s", pc->did);
	if (strlen(pc->did) + 8 <= JOURNAL_KEY_MAX)
		snprintf(key, sizeof key, "follow:%s", pc->did);
	else
		outbound_idem_key(CONV_PLATFORM_BLUESKY, target, pc->did, strlen(pc->did), key);
	pc->already_done = b->c.journal && journal_state_of(b->c.journal, key) == JOURNAL_DONE;
	struct outbound_msg m = {.platform = CONV_PLATFORM_BLUESKY,
	                         .target = target,
	                         .source = "bluesky",
	                         .conversation = "bluesky:peers",
	                         .message_id = pc->did,
	                         .text = pc->did,
	                         .text_len = strlen(pc->did),
	                         .chain = -1,
	                         .idem_key = key};
	b->peer_busy = true;
	outbound_submit(b->c.outbound, &m, on_followed, pc);
}

static void on_announced(void *ud, const struct decision *final, const char *artifact)
{
	struct peer_call *pc = ud;
	struct bsky *b = pc->b;
	b->peer_busy = false;
	struct bsky_peer *p = bsky_state_peer(b->st, NULL, pc->did);
	/* a dropped duplicate (the journal knows it was sent) counts as done */
	if (p &&
	    (final->verdict == VERDICT_SENT || (final->verdict == VERDICT_DROP && final->rule &&
	                                        strcmp(final->rule, "journal") == 0))) {
		p->announced = true;
		bk_save_state(b);
	}
	(void)artifact;
	free(pc);
}

static void on_peer_rescan(void *ud, const struct atp_result *res)
{
	struct peer_call *pc = ud;
	struct bsky *b = pc->b;
	b->peer_busy = false;
	if (res->kind != ATP_ERR_CANCELLED) {
		struct bsky_peer *p =
		        bsky_state_peer(b->st, pc->handle, pc->did[0] ? pc->did : NULL);
		if (p)
			p->verified_ms = bk_now_ms(); /* asked, found or not */
		peer_scanned(b, pc->handle, pc->did[0] ? pc->did : NULL, "thread", res);
		bk_save_state(b);
	}
	free(pc);
}

/* §7.4's announcement in the agent's voice: voice-phrases.json's
 * bluesky.peer_announcement with {{handle}} and {{url}} (no operational
 * text is hard-coded); the built-in phrase without a file or when
 * the file's is blank. Caller frees; NULL when the peer has nothing
 * sayable (no handle, no valid GitHub name). */
static char *announcement(struct bsky *b, const struct bsky_peer *p)
{
	char handle[BSKY_HANDLE_MAX], url[BSKY_GITHUB_NAME_MAX + 32];
	if (bsky_announce_vars(p->handle, p->github, handle, sizeof handle, url, sizeof url) < 0)
		return NULL;
	const char *names[] = {"handle", "url"};
	const char *values[] = {handle, url};
	char *text =
	        b->voice ? voice_render(b->voice, VOICE_PEER_ANNOUNCEMENT, names, values, 2) : NULL;
	if (!text || !text[strspn(text, " \t\r\n")]) {
		free(text);
		text = voice_interpolate(voice_default(VOICE_PEER_ANNOUNCEMENT), names, values, 2);
	}
	return text;
}

void bk_peers_run(void *ud, struct sched_job *job)
{
	struct bsky *b = ud;
	sched_job_done(job); /* each step below is one call, guarded by peer_busy */
	if (!b->logged_in || b->quiescing || b->peer_busy)
		return;
	int64_t now = bk_now_ms();
	struct ga_err err = {{0}};
	for (size_t i = 0; i < b->st->npeers; i++) {
		struct bsky_peer *p = &b->st->peers[i];
		struct peer_call *pc = xcalloc(1, sizeof *pc);
		pc->b = b;
		snprintf(pc->did, sizeof pc->did, "%s", p->did);
		snprintf(pc->handle, sizeof pc->handle, "%s", p->handle);
		if (!p->github[0] && p->handle[0] && now - p->verified_ms > BSKY_PEER_RESCAN_MS) {
			b->peer_busy = true;
			if (atp_get_author_feed(b->c.atp, p->handle, "posts_no_replies", NULL,
			                        BSKY_FEED_LIMIT, on_peer_rescan, pc, &err) == 0) {
				b->peer_busy = false;
				free(pc);
			}
			return;
		}
		if (p->github[0] && p->did[0] && !p->followed) {
			if (bsky_pacing_wait(&b->pacing, BSKY_ACT_FOLLOW, now) > 0) {
				free(pc);
				continue;
			}
			bsky_pacing_note(&b->pacing, BSKY_ACT_FOLLOW, now);
			submit_follow(b, pc);
			return;
		}
		if (p->github[0] && p->followed && !p->announced && p->handle[0]) {
			char id[BSKY_DID_MAX + 16];
			char *text = announcement(b, p);
			if (!text) {
				p->announced = true; /* nothing sayable: never again */
				free(pc);
				continue;
			}
			snprintf(id, sizeof id, "announce:%s", p->did);
			b->peer_busy = true;
			pipeline_say(b->c.pipeline, CONV_PLATFORM_BLUESKY, "bluesky:post",
			             "bluesky", text, strlen(text), -1, id, on_announced, pc);
			free(text);
			return;
		}
		free(pc);
	}
}
