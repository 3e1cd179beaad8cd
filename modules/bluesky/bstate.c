/* What the agent remembers about Bluesky. See bstate.h. */
#include "modules/bluesky/bstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/xalloc.h"

#define BSTATE_FORMAT 2 /* 2: relationships */

struct bsky_state *bsky_state_new(void)
{
	struct bsky_state *s = xcalloc(1, sizeof *s);
	s->convs = xcalloc(BSKY_CONVS_MAX, sizeof *s->convs);
	s->rels = xcalloc(BSKY_REL_MAX, sizeof *s->rels);
	return s;
}

void bsky_state_free(struct bsky_state *s)
{
	if (!s)
		return;
	free(s->convs);
	free(s->rels);
	free(s);
}

static void copy(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src ? src : "");
}

/* ---- processed set ---------------------------------------------------------------- */

static void digest(const char *uri, unsigned char out[16])
{
	unsigned char full[32];
	sha256_raw(uri, strlen(uri), full);
	memcpy(out, full, 16);
}

bool bsky_state_processed(const struct bsky_state *s, const char *uri)
{
	unsigned char d[16];
	digest(uri ? uri : "", d);
	for (size_t i = 0; i < s->nprocessed; i++)
		if (memcmp(s->processed[i], d, 16) == 0)
			return true;
	return false;
}

static void add_digest(struct bsky_state *s, const unsigned char d[16])
{
	memcpy(s->processed[s->processed_next], d, 16);
	s->processed_next = (s->processed_next + 1) % BSKY_PROCESSED_MAX;
	if (s->nprocessed < BSKY_PROCESSED_MAX)
		s->nprocessed++;
}

void bsky_state_mark_processed(struct bsky_state *s, const char *uri)
{
	if (bsky_state_processed(s, uri))
		return;
	unsigned char d[16];
	digest(uri ? uri : "", d);
	add_digest(s, d);
	s->handled_total++;
}

/* ---- conversations ------------------------------------------------------------------ */

struct bsky_conv *bsky_state_conv(struct bsky_state *s, const char *root, bool add, int64_t now_ms)
{
	if (!root)
		return NULL;
	for (size_t i = 0; i < s->nconvs; i++)
		if (strcmp(s->convs[i].root, root) == 0)
			return &s->convs[i].c;
	if (!add || strlen(root) >= BSKY_URI_MAX)
		return NULL;
	size_t slot = s->nconvs;
	if (s->nconvs == BSKY_CONVS_MAX) {
		/* a finished one first, else the least recently active */
		slot = 0;
		for (size_t i = 0; i < s->nconvs; i++) {
			const struct bsky_conv *a = &s->convs[i].c, *b = &s->convs[slot].c;
			bool fa = a->state == BSKY_CONV_CONCLUDED || a->state == BSKY_CONV_STALE;
			bool fb = b->state == BSKY_CONV_CONCLUDED || b->state == BSKY_CONV_STALE;
			if ((fa && !fb) || (fa == fb && a->last_activity_ms < b->last_activity_ms))
				slot = i;
		}
	} else {
		s->nconvs++;
	}
	copy(s->convs[slot].root, sizeof s->convs[slot].root, root);
	bsky_conv_init(&s->convs[slot].c, now_ms);
	return &s->convs[slot].c;
}

/* ---- rituals ------------------------------------------------------------------------- */

struct bsky_ritual_state *bsky_state_ritual(struct bsky_state *s, const char *name)
{
	for (size_t i = 0; i < s->nrituals; i++)
		if (strcmp(s->rituals[i].name, name) == 0)
			return &s->rituals[i];
	if (s->nrituals == SELF_MAX_RITUALS)
		return NULL;
	struct bsky_ritual_state *r = &s->rituals[s->nrituals++];
	memset(r, 0, sizeof *r);
	copy(r->name, sizeof r->name, name);
	return r;
}

void bsky_state_ritual_run(struct bsky_ritual_state *r, const char *date, const char *thread,
                           bool initiated)
{
	if (initiated)
		copy(r->last_initiated, sizeof r->last_initiated, date);
	else
		copy(r->last_participated, sizeof r->last_participated, date);
	copy(r->today_thread, sizeof r->today_thread, thread);
	for (size_t i = 0; i < r->nruns; i++)
		if (strcmp(r->runs[i].thread_uri, thread ? thread : "") == 0)
			return;
	if (r->nruns == BSKY_RITUAL_HISTORY_MAX) {
		memmove(r->runs, r->runs + 1, (r->nruns - 1) * sizeof r->runs[0]);
		r->nruns--;
	}
	copy(r->runs[r->nruns].date, sizeof r->runs[0].date, date);
	copy(r->runs[r->nruns].thread_uri, sizeof r->runs[0].thread_uri, thread);
	r->nruns++;
}

const char *bsky_state_ritual_thread(const struct bsky_state *s, const char *root)
{
	if (!root || !*root)
		return NULL;
	for (size_t i = 0; i < s->nrituals; i++) {
		const struct bsky_ritual_state *r = &s->rituals[i];
		if (strcmp(r->today_thread, root) == 0)
			return r->name;
		for (size_t k = 0; k < r->nruns; k++)
			if (strcmp(r->runs[k].thread_uri, root) == 0)
				return r->name;
	}
	return NULL;
}

/* ---- peers --------------------------------------------------------------------------- */

static const char *bare(const char *handle)
{
	return handle && handle[0] == '@' ? handle + 1 : handle;
}

struct bsky_peer *bsky_state_peer(struct bsky_state *s, const char *handle, const char *did)
{
	handle = bare(handle);
	for (size_t i = 0; i < s->npeers; i++) {
		struct bsky_peer *p = &s->peers[i];
		if (did && *did && strcmp(p->did, did) == 0)
			return p;
		if (handle && *handle && strcasecmp(p->handle, handle) == 0)
			return p;
	}
	return NULL;
}

struct bsky_peer *bsky_state_peer_add(struct bsky_state *s, const char *handle, const char *did,
                                      const char *via, int64_t now_ms)
{
	struct bsky_peer *p = bsky_state_peer(s, handle, did);
	if (!p) {
		if (s->npeers == BSKY_PEERS_MAX)
			return NULL;
		p = &s->peers[s->npeers++];
		memset(p, 0, sizeof *p);
		p->discovered_ms = now_ms;
		copy(p->via, sizeof p->via, via);
	}
	if (handle && *handle)
		copy(p->handle, sizeof p->handle, bare(handle));
	if (did && *did)
		copy(p->did, sizeof p->did, did);
	return p;
}

bool bsky_state_is_peer(const struct bsky_state *s, const char *did)
{
	if (!did || !*did)
		return false;
	for (size_t i = 0; i < s->npeers; i++)
		if (strcmp(s->peers[i].did, did) == 0 && s->peers[i].github[0])
			return true;
	return false;
}

/* ---- relationships ------------------------------------------------------------------- */

static size_t rel_index(const struct bsky_state *s, const char *did)
{
	if (!did || !*did)
		return SIZE_MAX;
	for (size_t i = 0; i < s->nrels; i++)
		if (strcmp(s->rels[i].did, did) == 0)
			return i;
	return SIZE_MAX;
}

struct bsky_rel *bsky_state_rel(struct bsky_state *s, const char *did)
{
	size_t i = rel_index(s, did);
	return i == SIZE_MAX ? NULL : &s->rels[i];
}

static void rel_resentiment(struct bsky_rel *r)
{
	enum bsky_reason types[BSKY_REL_RECENT];
	for (size_t i = 0; i < r->nrecent; i++)
		types[i] = r->recent[i].type;
	r->sentiment = bsky_sentiment_of(types, r->nrecent, r->sentiment);
}

/* A fresh slot for did: appended, or at the limit the least recently
 * interacted one. */
static struct bsky_rel *rel_slot(struct bsky_state *s)
{
	if (s->nrels < BSKY_REL_MAX)
		return &s->rels[s->nrels++];
	size_t old = 0;
	for (size_t i = 1; i < s->nrels; i++)
		if (s->rels[i].last_ms < s->rels[old].last_ms)
			old = i;
	return &s->rels[old];
}

struct bsky_rel *bsky_state_rel_note(struct bsky_state *s, const char *did, const char *handle,
                                     enum bsky_reason type, const char *uri, int64_t at_ms)
{
	if (!did || !*did || strlen(did) >= BSKY_DID_MAX)
		return NULL;
	struct bsky_rel *r = bsky_state_rel(s, did);
	if (!r) {
		r = rel_slot(s);
		memset(r, 0, sizeof *r);
		copy(r->did, sizeof r->did, did);
		r->first_seen_ms = at_ms;
		r->last_ms = at_ms;
		r->sentiment = BSKY_SENTIMENT_UNKNOWN;
	}
	if (handle && *handle)
		copy(r->handle, sizeof r->handle, bare(handle));
	uri = uri ? uri : "";
	for (size_t i = 0; i < r->nrecent; i++)
		if (*uri && strcmp(r->recent[i].uri, uri) == 0)
			return r; /* seen again: counted once */
	if (r->nrecent == BSKY_REL_RECENT) {
		memmove(r->recent, r->recent + 1, (r->nrecent - 1) * sizeof r->recent[0]);
		r->nrecent--;
	}
	struct bsky_interaction *x = &r->recent[r->nrecent++];
	memset(x, 0, sizeof *x);
	x->type = type;
	copy(x->uri, sizeof x->uri, uri);
	x->at_ms = at_ms;
	r->total++;
	if (at_ms > r->last_ms)
		r->last_ms = at_ms;
	if (at_ms < r->first_seen_ms)
		r->first_seen_ms = at_ms;
	rel_resentiment(r);
	return r;
}

bool bsky_state_rel_responded(struct bsky_state *s, const char *did, const char *uri)
{
	struct bsky_rel *r = bsky_state_rel(s, did);
	if (!r)
		return false;
	r->responded = true;
	for (size_t i = 0; i < r->nrecent; i++)
		if (uri && *uri && strcmp(r->recent[i].uri, uri) == 0)
			r->recent[i].responded = true;
	return true;
}

size_t bsky_state_prune_rels(struct bsky_state *s, int64_t now_ms)
{
	size_t kept = 0, dropped = 0;
	for (size_t i = 0; i < s->nrels; i++) {
		const struct bsky_rel *r = &s->rels[i];
		if (bsky_rel_expired(r->last_ms, r->sentiment == BSKY_SENTIMENT_POSITIVE, r->total,
		                     now_ms)) {
			dropped++;
			continue;
		}
		if (kept != i)
			s->rels[kept] = s->rels[i];
		kept++;
	}
	s->nrels = kept;
	return dropped;
}

void bsky_state_rel_facts(const struct bsky_state *s, const char *did, struct bsky_prio_facts *f)
{
	size_t i = rel_index(s, did);
	f->known = i != SIZE_MAX;
	f->positive = f->known && s->rels[i].sentiment == BSKY_SENTIMENT_POSITIVE;
	f->interactions =
	        f->known ? (int)(s->rels[i].total > INT32_MAX ? INT32_MAX : s->rels[i].total) : 0;
	f->ever_responded = f->known && s->rels[i].responded;
}

static cJSON *rel_to_json(const struct bsky_rel *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "did", r->did);
	cJSON_AddStringToObject(o, "handle", r->handle);
	cJSON_AddNumberToObject(o, "firstSeenMs", (double)r->first_seen_ms);
	cJSON_AddNumberToObject(o, "lastInteractionMs", (double)r->last_ms);
	cJSON_AddStringToObject(o, "sentiment", bsky_sentiment_name(r->sentiment));
	cJSON_AddBoolToObject(o, "responded", r->responded);
	cJSON_AddNumberToObject(o, "total", r->total);
	cJSON *a = cJSON_AddArrayToObject(o, "interactions");
	for (size_t i = 0; i < r->nrecent; i++) {
		const struct bsky_interaction *x = &r->recent[i];
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "type", bsky_reason_name(x->type));
		cJSON_AddStringToObject(e, "uri", x->uri);
		cJSON_AddNumberToObject(e, "timestampMs", (double)x->at_ms);
		cJSON_AddBoolToObject(e, "responded", x->responded);
		cJSON_AddItemToArray(a, e);
	}
	return o;
}

static void rels_from_json(struct bsky_state *s, const cJSON *arr)
{
	s->nrels = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, arr)
	{
		const char *did = json_string_or(it, "did", "");
		if (!*did || strlen(did) >= BSKY_DID_MAX || s->nrels == BSKY_REL_MAX ||
		    rel_index(s, did) != SIZE_MAX)
			continue;
		struct bsky_rel *r = &s->rels[s->nrels++];
		memset(r, 0, sizeof *r);
		copy(r->did, sizeof r->did, did);
		copy(r->handle, sizeof r->handle, json_string_or(it, "handle", ""));
		r->first_seen_ms = json_int_or(it, "firstSeenMs", 0);
		r->last_ms = json_int_or(it, "lastInteractionMs", r->first_seen_ms);
		int sen = bsky_sentiment_parse(json_string_or(it, "sentiment", "unknown"));
		r->sentiment = sen < 0 ? BSKY_SENTIMENT_UNKNOWN : (enum bsky_sentiment)sen;
		r->responded = json_bool_or(it, "responded", false);
		const cJSON *e;
		cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(it, "interactions"))
		{
			const char *uri = json_string_or(e, "uri", "");
			if (strlen(uri) >= BSKY_URI_MAX)
				continue;
			if (r->nrecent == BSKY_REL_RECENT) { /* keep the newest */
				memmove(r->recent, r->recent + 1,
				        (r->nrecent - 1) * sizeof r->recent[0]);
				r->nrecent--;
			}
			struct bsky_interaction *x = &r->recent[r->nrecent++];
			x->type = bsky_reason_parse(json_string_or(e, "type", ""));
			copy(x->uri, sizeof x->uri, uri);
			x->at_ms = json_int_or(e, "timestampMs", 0);
			x->responded = json_bool_or(e, "responded", false);
		}
		int64_t total = json_int_or(it, "total", (int64_t)r->nrecent);
		r->total = total < (int64_t)r->nrecent ? (uint32_t)r->nrecent
		           : total > UINT32_MAX        ? UINT32_MAX
		                                       : (uint32_t)total;
	}
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void hex16(const unsigned char d[16], char out[33])
{
	static const char *x = "0123456789abcdef";
	for (int i = 0; i < 16; i++) {
		out[2 * i] = x[d[i] >> 4];
		out[2 * i + 1] = x[d[i] & 15];
	}
	out[32] = 0;
}

static int unhex16(const char *s, unsigned char out[16])
{
	if (!s || strlen(s) != 32)
		return -1;
	for (int i = 0; i < 16; i++) {
		unsigned v = 0;
		for (int k = 0; k < 2; k++) {
			char c = s[2 * i + k];
			v <<= 4;
			if (c >= '0' && c <= '9')
				v |= (unsigned)(c - '0');
			else if (c >= 'a' && c <= 'f')
				v |= (unsigned)(c - 'a' + 10);
			else
				return -1;
		}
		out[i] = (unsigned char)v;
	}
	return 0;
}

static cJSON *conv_to_json(const struct bsky_conv_entry *e)
{
	const struct bsky_conv *c = &e->c;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "root", e->root);
	cJSON_AddStringToObject(o, "state", bsky_conv_state_name(c->state));
	cJSON_AddBoolToObject(o, "project", c->project);
	cJSON_AddNumberToObject(o, "ourReplies", c->our_replies);
	cJSON_AddNumberToObject(o, "repliesBase", c->replies_base);
	cJSON_AddNumberToObject(o, "ourLastReplyMs", (double)c->our_last_reply_ms);
	cJSON_AddNumberToObject(o, "depth", c->depth);
	cJSON_AddNumberToObject(o, "quickAcks", c->quick_acks);
	cJSON_AddNumberToObject(o, "reengagements", c->reengagements);
	cJSON_AddNumberToObject(o, "firstSeenMs", (double)c->first_seen_ms);
	cJSON_AddNumberToObject(o, "lastActivityMs", (double)c->last_activity_ms);
	cJSON_AddNumberToObject(o, "concludedMs", (double)c->concluded_ms);
	cJSON_AddStringToObject(o, "conclusionReason", c->concluded_reason);
	cJSON_AddBoolToObject(o, "concludedByTimeout", c->concluded_by_timeout);
	cJSON *w = cJSON_AddArrayToObject(o, "participants");
	for (size_t i = 0; i < c->nwho; i++) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "did", c->who[i].did);
		cJSON_AddNumberToObject(p, "replies", c->who[i].replies);
		cJSON_AddNumberToObject(p, "lastMs", (double)c->who[i].last_ms);
		cJSON_AddBoolToObject(p, "concluded", c->who[i].concluded);
		cJSON_AddItemToArray(w, p);
	}
	return o;
}

static void conv_from_json(struct bsky_conv *c, const cJSON *o)
{
	bsky_conv_init(c, json_int_or(o, "firstSeenMs", 0));
	int st = bsky_conv_state_parse(json_string_or(o, "state", "new"));
	c->state = st < 0 ? BSKY_CONV_NEW : (enum bsky_conv_state)st;
	c->project = json_bool_or(o, "project", false);
	c->our_replies = (int)json_int_or(o, "ourReplies", 0);
	c->replies_base = (int)json_int_or(o, "repliesBase", 0);
	c->our_last_reply_ms = json_int_or(o, "ourLastReplyMs", 0);
	c->depth = (int)json_int_or(o, "depth", 0);
	c->quick_acks = (int)json_int_or(o, "quickAcks", 0);
	c->reengagements = (int)json_int_or(o, "reengagements", 0);
	c->last_activity_ms = json_int_or(o, "lastActivityMs", c->first_seen_ms);
	c->concluded_ms = json_int_or(o, "concludedMs", 0);
	copy(c->concluded_reason, sizeof c->concluded_reason,
	     json_string_or(o, "conclusionReason", ""));
	c->concluded_by_timeout = json_bool_or(o, "concludedByTimeout", false);
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "participants");
	const cJSON *p;
	cJSON_ArrayForEach(p, w)
	{
		if (c->nwho == BSKY_CONV_MAX_PARTICIPANTS)
			break;
		struct bsky_participant *x = &c->who[c->nwho++];
		copy(x->did, sizeof x->did, json_string_or(p, "did", ""));
		x->replies = (int)json_int_or(p, "replies", 0);
		x->last_ms = json_int_or(p, "lastMs", 0);
		x->concluded = json_bool_or(p, "concluded", false);
	}
}

cJSON *bsky_state_to_json(const struct bsky_state *s)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "format", BSTATE_FORMAT);
	cJSON_AddNumberToObject(o, "seenUntilMs", (double)s->seen_until_ms);
	cJSON_AddNumberToObject(o, "handledTotal", (double)s->handled_total);
	cJSON *pr = cJSON_AddArrayToObject(o, "processed");
	/* oldest first, so a reload keeps the same eviction order */
	for (size_t k = 0; k < s->nprocessed; k++) {
		size_t i = s->nprocessed < BSKY_PROCESSED_MAX
		                   ? k
		                   : (s->processed_next + k) % BSKY_PROCESSED_MAX;
		char hex[33];
		hex16(s->processed[i], hex);
		cJSON_AddItemToArray(pr, cJSON_CreateString(hex));
	}
	cJSON *cv = cJSON_AddArrayToObject(o, "conversations");
	for (size_t i = 0; i < s->nconvs; i++)
		cJSON_AddItemToArray(cv, conv_to_json(&s->convs[i]));
	cJSON_AddStringToObject(o, "identityUri", s->identity_uri);
	cJSON_AddNumberToObject(o, "lastPostMs", (double)s->last_post_ms);
	cJSON_AddNumberToObject(o, "nextExpressionMs", (double)s->next_expression_ms);
	cJSON_AddStringToObject(o, "expressionDate", s->expr_date);
	cJSON_AddNumberToObject(o, "expressionsToday", s->expr_today);
	cJSON *rs = cJSON_AddArrayToObject(o, "rituals");
	for (size_t i = 0; i < s->nrituals; i++) {
		const struct bsky_ritual_state *r = &s->rituals[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "name", r->name);
		cJSON_AddStringToObject(x, "lastInitiatedDate", r->last_initiated);
		cJSON_AddStringToObject(x, "lastParticipatedDate", r->last_participated);
		cJSON_AddStringToObject(x, "todayThreadUri", r->today_thread);
		cJSON *h = cJSON_AddArrayToObject(x, "runHistory");
		for (size_t k = 0; k < r->nruns; k++) {
			cJSON *e = cJSON_CreateObject();
			cJSON_AddStringToObject(e, "date", r->runs[k].date);
			cJSON_AddStringToObject(e, "threadUri", r->runs[k].thread_uri);
			cJSON_AddItemToArray(h, e);
		}
		cJSON_AddItemToArray(rs, x);
	}
	cJSON *rl = cJSON_AddArrayToObject(o, "relationships");
	for (size_t i = 0; i < s->nrels; i++)
		cJSON_AddItemToArray(rl, rel_to_json(&s->rels[i]));
	return o;
}

int bsky_state_from_json(struct bsky_state *s, const cJSON *data, struct ga_err *err)
{
	if (!cJSON_IsObject(data)) {
		err_set(err, "the Bluesky state is not a JSON object");
		return -1;
	}
	s->seen_until_ms = json_int_or(data, "seenUntilMs", 0);
	s->handled_total = (uint64_t)json_int_or(data, "handledTotal", 0);
	s->nprocessed = s->processed_next = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(data, "processed"))
	{
		unsigned char d[16];
		if (unhex16(cJSON_GetStringValue(it), d) == 0)
			add_digest(s, d);
	}
	s->nconvs = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(data, "conversations"))
	{
		const char *root = json_string_or(it, "root", "");
		if (!*root || s->nconvs == BSKY_CONVS_MAX || strlen(root) >= BSKY_URI_MAX)
			continue;
		struct bsky_conv_entry *e = &s->convs[s->nconvs++];
		copy(e->root, sizeof e->root, root);
		conv_from_json(&e->c, it);
	}
	copy(s->identity_uri, sizeof s->identity_uri, json_string_or(data, "identityUri", ""));
	s->last_post_ms = json_int_or(data, "lastPostMs", 0);
	s->next_expression_ms = json_int_or(data, "nextExpressionMs", 0);
	copy(s->expr_date, sizeof s->expr_date, json_string_or(data, "expressionDate", ""));
	s->expr_today = (int)json_int_or(data, "expressionsToday", 0);
	s->nrituals = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(data, "rituals"))
	{
		const char *name = json_string_or(it, "name", "");
		if (!*name)
			continue;
		struct bsky_ritual_state *r = bsky_state_ritual(s, name);
		if (!r)
			break;
		copy(r->last_initiated, sizeof r->last_initiated,
		     json_string_or(it, "lastInitiatedDate", ""));
		copy(r->last_participated, sizeof r->last_participated,
		     json_string_or(it, "lastParticipatedDate", ""));
		copy(r->today_thread, sizeof r->today_thread,
		     json_string_or(it, "todayThreadUri", ""));
		const cJSON *h;
		cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(it, "runHistory"))
		{
			if (r->nruns == BSKY_RITUAL_HISTORY_MAX)
				break;
			copy(r->runs[r->nruns].date, sizeof r->runs[0].date,
			     json_string_or(h, "date", ""));
			copy(r->runs[r->nruns].thread_uri, sizeof r->runs[0].thread_uri,
			     json_string_or(h, "threadUri", ""));
			r->nruns++;
		}
	}
	/* absent in files before format 2: none */
	rels_from_json(s, cJSON_GetObjectItemCaseSensitive(data, "relationships"));
	return 0;
}

cJSON *bsky_peers_to_json(const struct bsky_state *s)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *ps = cJSON_AddObjectToObject(o, "peers");
	for (size_t i = 0; i < s->npeers; i++) {
		const struct bsky_peer *p = &s->peers[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "githubUsername", p->github);
		cJSON_AddStringToObject(x, "blueskyHandle", p->handle);
		cJSON_AddStringToObject(x, "did", p->did);
		cJSON_AddStringToObject(x, "discoveredVia", p->via);
		cJSON_AddNumberToObject(x, "discoveredAtMs", (double)p->discovered_ms);
		cJSON_AddNumberToObject(x, "lastVerifiedAtMs", (double)p->verified_ms);
		cJSON_AddBoolToObject(x, "followedOnBluesky", p->followed);
		cJSON_AddBoolToObject(x, "announcedOnBluesky", p->announced);
		/* the file's key: the GitHub name, else the handle */
		const char *key = p->github[0] ? p->github : p->handle[0] ? p->handle : p->did;
		char k[BSKY_DID_MAX + 32];
		snprintf(k, sizeof k, "%.255s", key);
		if (cJSON_GetObjectItemCaseSensitive(ps, k))
			snprintf(k, sizeof k, "%.255s#%zu", key, i);
		cJSON_AddItemToObject(ps, k, x);
	}
	return o;
}

int bsky_peers_from_json(struct bsky_state *s, const cJSON *data, struct ga_err *err)
{
	const cJSON *ps = cJSON_GetObjectItemCaseSensitive(data, "peers");
	if (!cJSON_IsObject(ps)) {
		err_set(err, "discovered_peers: \"peers\" is not an object");
		return -1;
	}
	s->npeers = 0;
	const cJSON *x;
	cJSON_ArrayForEach(x, ps)
	{
		if (s->npeers == BSKY_PEERS_MAX)
			break;
		const char *handle = json_string_or(x, "blueskyHandle", "");
		const char *did = json_string_or(x, "did", "");
		const char *gh = json_string_or(x, "githubUsername", "");
		/* a handle-only peer may carry its handle (a name with a dot) as
		 * githubUsername, a placeholder: not a GitHub name */
		if (strchr(gh, '.'))
			gh = "";
		if (!*handle && !*did)
			continue;
		struct bsky_peer *p = bsky_state_peer(s, handle, did);
		if (!p) {
			p = &s->peers[s->npeers++];
			memset(p, 0, sizeof *p);
		}
		copy(p->handle, sizeof p->handle, bare(handle));
		if (*did)
			copy(p->did, sizeof p->did, did);
		if (*gh)
			copy(p->github, sizeof p->github, gh);
		copy(p->via, sizeof p->via, json_string_or(x, "discoveredVia", ""));
		p->discovered_ms = json_int_or(x, "discoveredAtMs", 0);
		p->verified_ms = json_int_or(x, "lastVerifiedAtMs", 0);
		/* merging duplicates ORs the flags (§7.4 registry hygiene) */
		p->followed |= json_bool_or(x, "followedOnBluesky", false);
		p->announced |= json_bool_or(x, "announcedOnBluesky", false);
	}
	return 0;
}

/* Every older version's data is kept: the cursor, the processed set and the
 * peers' flags are exactly what must survive an upgrade. */
static int keep_migrate(void *ud, cJSON *data, const char *from_version)
{
	(void)from_version;
	(void)ud;
	return cJSON_IsObject(data) ? 0 : -1;
}

int bsky_state_load(struct bsky_state *s, const struct state_store *st,
                    struct state_load_info *info_main, struct state_load_info *info_peers)
{
	if (!st)
		return -1;
	struct state_load_info a, b;
	struct ga_err err = {{0}};
	cJSON *d = state_load(st, BSKY_STATE_NAME, keep_migrate, NULL, &a);
	if (d)
		bsky_state_from_json(s, d, &err);
	cJSON_Delete(d);
	d = state_load(st, BSKY_PEERS_STATE_NAME, keep_migrate, NULL, &b);
	if (d)
		bsky_peers_from_json(s, d, &err);
	cJSON_Delete(d);
	if (info_main)
		*info_main = a;
	if (info_peers)
		*info_peers = b;
	return 0;
}

int bsky_state_save(const struct bsky_state *s, const struct state_store *st, int64_t now_ms,
                    struct ga_err *err)
{
	if (!st)
		return 0;
	cJSON *a = bsky_state_to_json(s);
	int r = state_save(st, BSKY_STATE_NAME, a, now_ms, err);
	cJSON_Delete(a);
	if (r < 0)
		return -1;
	cJSON *b = bsky_peers_to_json(s);
	r = state_save(st, BSKY_PEERS_STATE_NAME, b, now_ms, err);
	cJSON_Delete(b);
	return r;
}
