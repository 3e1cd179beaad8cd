/*
 * bskyfake — see bskyfake.h. One httpfake handler answers every path; the
 * XRPC method is the path after /xrpc/.
 */
#include "tests/fakes/bsky/bskyfake.h"

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/hash.h"
#include "common/timeutil.h"
#include "common/utf8.h"

#define B32       "abcdefghijklmnopqrstuvwxyz234567"
#define TID_CHARS "234567abcdefghijklmnopqrstuvwxyz"

struct account {
	char did[BSKYFAKE_DID_MAX];
	char handle[254];
	char password[128];
	int64_t seen_at_ms;
	bool hidden_in_threads; /* bskyfake_hide_in_threads */
};

struct rec {
	char uri[BSKYFAKE_URI_MAX];
	char cid[BSKYFAKE_CID_MAX];
	size_t author; /* account index */
	char collection[64];
	char rkey[32];
	cJSON *value;
	int64_t indexed_ms;
	bool deleted;
};

struct notif {
	uint64_t seq;
	size_t to;  /* account index */
	size_t rec; /* record index */
	char reason[16];
	char reason_subject[BSKYFAKE_URI_MAX];
	int64_t indexed_ms;
};

struct token {
	char *jwt;
	size_t account;
	bool refresh;
	int64_t exp_ms;
	bool revoked;
};

struct budget {
	int64_t limit, window_ms, remaining, reset_ms;
};

struct logline {
	char nsid[64];
	int status;
};

struct bskyfake {
	struct httpfake *http;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int64_t (*now)(void *);
	void *now_ud;
	int64_t access_ttl_ms, refresh_ttl_ms;
	struct account accounts[BSKYFAKE_ACCOUNTS_MAX];
	size_t n_accounts;
	struct rec *recs;
	size_t n_recs;
	struct notif *notifs;
	size_t n_notifs;
	uint64_t notif_seq;
	struct token tokens[BSKYFAKE_TOKENS_MAX];
	size_t n_tokens;
	uint64_t tid_counter;
	int64_t last_tid_us;
	struct budget budgets[3];
	unsigned force429_n;
	int64_t force429_reset_ms;
	unsigned fail_n;
	int fail_status;
	bool fail_html;
	unsigned lose_n; /* createRecord answers to lose after the write */
	struct logline log[BSKYFAKE_LOG_MAX];
	uint64_t n_log;
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("bskyfake: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

static void *grow(void *p, size_t n, size_t size)
{
	void *q = realloc(p, (n ? n : 1) * size);
	if (!q)
		die("out of memory");
	return q;
}

static int64_t real_now(void *ud)
{
	(void)ud;
	return time_now_ms();
}

static int64_t now(struct bskyfake *f)
{
	return f->now(f->now_ud);
}

/* --- identifiers -------------------------------------------------------------------- */

static void b32(const unsigned char *in, size_t n_in, char *out, size_t n_out)
{
	uint32_t acc = 0;
	int bits = 0;
	size_t o = 0, i = 0;
	while (o < n_out) {
		if (bits < 5) {
			acc = (acc << 8) | (i < n_in ? in[i] : 0);
			i++;
			bits += 8;
		}
		bits -= 5;
		out[o++] = B32[(acc >> bits) & 31];
	}
	out[o] = '\0';
}

static void make_did(const char *handle, char out[BSKYFAKE_DID_MAX])
{
	unsigned char h[32];
	sha256_raw(handle, strlen(handle), h);
	char s[25];
	b32(h, sizeof h, s, 24);
	snprintf(out, BSKYFAKE_DID_MAX, "did:plc:%s", s);
}

/* A CIDv1 (dag-cbor, sha-256) in base32 looks like "bafyrei" + 52 chars. */
static void make_cid(const char *seed, char out[BSKYFAKE_CID_MAX])
{
	unsigned char h[32];
	sha256_raw(seed, strlen(seed), h);
	char s[53];
	b32(h, sizeof h, s, 52);
	snprintf(out, BSKYFAKE_CID_MAX, "bafyrei%s", s);
}

/* A TID: 13 characters of base32-sortable microseconds + clock id,
 * strictly increasing. */
static void make_tid(struct bskyfake *f, char out[14])
{
	int64_t us = now(f) * 1000;
	if (us <= f->last_tid_us)
		us = f->last_tid_us + 1;
	f->last_tid_us = us;
	uint64_t v = ((uint64_t)us << 10) | (f->tid_counter++ & 1023);
	for (int i = 12; i >= 0; i--) {
		out[i] = TID_CHARS[v & 31];
		v >>= 5;
	}
	out[13] = '\0';
}

static void b64url(const unsigned char *in, size_t n, char *out, size_t cap)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t o = 0;
	for (size_t i = 0; i < n && o + 4 < cap; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		out[o++] = t[(v >> 18) & 63];
		out[o++] = t[(v >> 12) & 63];
		if (i + 1 < n)
			out[o++] = t[(v >> 6) & 63];
		if (i + 2 < n)
			out[o++] = t[v & 63];
	}
	out[o] = '\0';
}

static const char *issue_token(struct bskyfake *f, size_t account, bool refresh)
{
	if (f->n_tokens == BSKYFAKE_TOKENS_MAX) {
		/* drop the oldest (it was rotated or expired long ago) */
		free(f->tokens[0].jwt);
		memmove(&f->tokens[0], &f->tokens[1],
		        (BSKYFAKE_TOKENS_MAX - 1) * sizeof f->tokens[0]);
		f->n_tokens--;
	}
	int64_t t = now(f);
	int64_t exp = t + (refresh ? f->refresh_ttl_ms : f->access_ttl_ms);
	unsigned char jti[12];
	random_bytes(jti, sizeof jti);
	char jtis[32], hdr[128], pay[512], sig[64], payload[400];
	b64url(jti, sizeof jti, jtis, sizeof jtis);
	const char *h = refresh ? "{\"typ\":\"refresh+jwt\",\"alg\":\"HS256\"}"
	                        : "{\"typ\":\"at+jwt\",\"alg\":\"HS256\"}";
	b64url((const unsigned char *)h, strlen(h), hdr, sizeof hdr);
	snprintf(payload, sizeof payload,
	         "{\"scope\":\"%s\",\"sub\":\"%s\",\"aud\":\"did:web:bskyfake\",\"iat\":%lld,"
	         "\"exp\":%lld,\"jti\":\"%s\"}",
	         refresh ? "com.atproto.refresh" : "com.atproto.access", f->accounts[account].did,
	         (long long)(t / 1000), (long long)(exp / 1000), jtis);
	b64url((const unsigned char *)payload, strlen(payload), pay, sizeof pay);
	unsigned char s[32];
	sha256_raw(payload, strlen(payload), s);
	b64url(s, sizeof s, sig, sizeof sig);
	size_t n = strlen(hdr) + strlen(pay) + strlen(sig) + 3;
	char *jwt = malloc(n);
	if (!jwt)
		die("out of memory");
	snprintf(jwt, n, "%s.%s.%s", hdr, pay, sig);
	struct token *tk = &f->tokens[f->n_tokens++];
	tk->jwt = jwt;
	tk->account = account;
	tk->refresh = refresh;
	tk->exp_ms = exp;
	tk->revoked = false;
	return jwt;
}

/* --- lookups (locked) ----------------------------------------------------------------- */

static long find_account(struct bskyfake *f, const char *id)
{
	if (!id)
		return -1;
	for (size_t i = 0; i < f->n_accounts; i++)
		if (strcmp(f->accounts[i].did, id) == 0 ||
		    strcasecmp(f->accounts[i].handle, id) == 0)
			return (long)i;
	return -1;
}

static long find_rec(struct bskyfake *f, const char *uri)
{
	if (!uri)
		return -1;
	for (size_t i = 0; i < f->n_recs; i++)
		if (!f->recs[i].deleted && strcmp(f->recs[i].uri, uri) == 0)
			return (long)i;
	return -1;
}

static void iso(int64_t ms, char out[TIME_ISO_LEN + 1])
{
	time_format_iso(ms, out);
}

/* --- answers ---------------------------------------------------------------------------- */

static void answer(struct httpfake_response *resp, int status, cJSON *body)
{
	char *s = cJSON_PrintUnformatted(body);
	cJSON_Delete(body);
	httpfake_response_json(resp, status, s);
	free(s);
}

static void xerror(struct httpfake_response *resp, int status, const char *error, const char *fmt,
                   ...) __attribute__((format(printf, 4, 5)));
static void xerror(struct httpfake_response *resp, int status, const char *error, const char *fmt,
                   ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "error", error);
	cJSON_AddStringToObject(o, "message", msg);
	answer(resp, status, o);
}

static void rate_headers(struct bskyfake *f, struct httpfake_response *resp, struct budget *b)
{
	char v[64];
	snprintf(v, sizeof v, "%lld", (long long)b->limit);
	httpfake_response_header(resp, "ratelimit-limit", v);
	snprintf(v, sizeof v, "%lld", (long long)(b->remaining > 0 ? b->remaining : 0));
	httpfake_response_header(resp, "ratelimit-remaining", v);
	snprintf(v, sizeof v, "%lld", (long long)(b->reset_ms / 1000));
	httpfake_response_header(resp, "ratelimit-reset", v);
	snprintf(v, sizeof v, "%lld;w=%lld", (long long)b->limit, (long long)(b->window_ms / 1000));
	httpfake_response_header(resp, "ratelimit-policy", v);
	(void)f;
}

/* --- rendering ----------------------------------------------------------------------------- */

static cJSON *author_json(const struct account *a)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "did", a->did);
	cJSON_AddStringToObject(o, "handle", a->handle);
	cJSON_AddStringToObject(o, "displayName", a->handle);
	return o;
}

static size_t count_refs(struct bskyfake *f, const char *collection, const char *uri)
{
	size_t n = 0;
	for (size_t i = 0; i < f->n_recs; i++) {
		const struct rec *r = &f->recs[i];
		if (r->deleted || strcmp(r->collection, collection) != 0)
			continue;
		const cJSON *target;
		if (strcmp(collection, "app.bsky.feed.post") == 0)
			target = cJSON_GetObjectItem(cJSON_GetObjectItem(r->value, "reply"),
			                             "parent");
		else
			target = cJSON_GetObjectItem(r->value, "subject");
		const cJSON *u = cJSON_GetObjectItem(target, "uri");
		if (cJSON_IsString(u) && strcmp(u->valuestring, uri) == 0)
			n++;
	}
	return n;
}

static cJSON *post_view(struct bskyfake *f, const struct rec *r, long viewer)
{
	char t[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "uri", r->uri);
	cJSON_AddStringToObject(o, "cid", r->cid);
	cJSON_AddItemToObject(o, "author", author_json(&f->accounts[r->author]));
	cJSON_AddItemToObject(o, "record", cJSON_Duplicate(r->value, 1));
	cJSON_AddNumberToObject(o, "replyCount",
	                        (double)count_refs(f, "app.bsky.feed.post", r->uri));
	cJSON_AddNumberToObject(o, "repostCount", 0);
	cJSON_AddNumberToObject(o, "likeCount",
	                        (double)count_refs(f, "app.bsky.feed.like", r->uri));
	iso(r->indexed_ms, t);
	cJSON_AddStringToObject(o, "indexedAt", t);
	cJSON *v = cJSON_AddObjectToObject(o, "viewer");
	for (size_t i = 0; viewer >= 0 && i < f->n_recs; i++) {
		const struct rec *l = &f->recs[i];
		if (l->deleted || l->author != (size_t)viewer ||
		    strcmp(l->collection, "app.bsky.feed.like") != 0)
			continue;
		const cJSON *u =
		        cJSON_GetObjectItem(cJSON_GetObjectItem(l->value, "subject"), "uri");
		if (cJSON_IsString(u) && strcmp(u->valuestring, r->uri) == 0)
			cJSON_AddStringToObject(v, "like", l->uri);
	}
	return o;
}

static const char *parent_uri(const struct rec *r)
{
	const cJSON *u = cJSON_GetObjectItem(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(r->value, "reply"), "parent"), "uri");
	return cJSON_IsString(u) ? u->valuestring : NULL;
}

static cJSON *thread_view(struct bskyfake *f, long idx, int depth, int parent_height, long viewer,
                          bool with_parent)
{
	const struct rec *r = &f->recs[idx];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "$type", "app.bsky.feed.defs#threadViewPost");
	cJSON_AddItemToObject(o, "post", post_view(f, r, viewer));
	if (with_parent && parent_height > 0) {
		const char *pu = parent_uri(r);
		if (pu) {
			long p = find_rec(f, pu);
			if (p >= 0) {
				cJSON_AddItemToObject(
				        o, "parent",
				        thread_view(f, p, 0, parent_height - 1, viewer, true));
			} else {
				cJSON *nf = cJSON_CreateObject();
				cJSON_AddStringToObject(nf, "$type",
				                        "app.bsky.feed.defs#notFoundPost");
				cJSON_AddStringToObject(nf, "uri", pu);
				cJSON_AddBoolToObject(nf, "notFound", true);
				cJSON_AddItemToObject(o, "parent", nf);
			}
		}
	}
	if (depth > 0) {
		cJSON *replies = cJSON_AddArrayToObject(o, "replies");
		for (size_t i = 0; i < f->n_recs; i++) {
			const struct rec *c = &f->recs[i];
			if (c->deleted || strcmp(c->collection, "app.bsky.feed.post") != 0)
				continue;
			const char *pu = parent_uri(c);
			if (f->accounts[c->author].hidden_in_threads)
				continue; /* not indexed yet */
			if (pu && strcmp(pu, r->uri) == 0)
				cJSON_AddItemToArray(replies, thread_view(f, (long)i, depth - 1, 0,
				                                          viewer, false));
		}
	}
	return o;
}

/* --- records and notifications ------------------------------------------------------------ */

static void notify(struct bskyfake *f, size_t to, size_t rec, const char *reason,
                   const char *subject)
{
	if (to == f->recs[rec].author)
		return;                          /* nobody is notified of their own doing */
	for (size_t i = 0; i < f->n_notifs; i++) /* one notification per record and person */
		if (f->notifs[i].to == to && f->notifs[i].rec == rec)
			return;
	if (f->n_notifs == BSKYFAKE_NOTIFS_MAX)
		return;
	f->notifs = grow(f->notifs, f->n_notifs + 1, sizeof *f->notifs);
	struct notif *n = &f->notifs[f->n_notifs++];
	memset(n, 0, sizeof *n);
	n->seq = ++f->notif_seq;
	n->to = to;
	n->rec = rec;
	snprintf(n->reason, sizeof n->reason, "%s", reason);
	snprintf(n->reason_subject, sizeof n->reason_subject, "%s", subject ? subject : "");
	n->indexed_ms = f->recs[rec].indexed_ms;
}

static void notify_for(struct bskyfake *f, size_t idx)
{
	const struct rec *r = &f->recs[idx];
	if (strcmp(r->collection, "app.bsky.feed.post") == 0) {
		const cJSON *fc;
		cJSON_ArrayForEach(fc, cJSON_GetObjectItem(r->value, "facets"))
		{
			const cJSON *ft;
			cJSON_ArrayForEach(ft, cJSON_GetObjectItem(fc, "features"))
			{
				const cJSON *did = cJSON_GetObjectItem(ft, "did");
				long a = cJSON_IsString(did) ? find_account(f, did->valuestring)
				                             : -1;
				if (a >= 0)
					notify(f, (size_t)a, idx, "mention", NULL);
			}
		}
		const char *pu = parent_uri(r);
		long p = pu ? find_rec(f, pu) : -1;
		if (p >= 0)
			notify(f, f->recs[p].author, idx, "reply", pu);
	} else if (strcmp(r->collection, "app.bsky.feed.like") == 0) {
		const cJSON *u =
		        cJSON_GetObjectItem(cJSON_GetObjectItem(r->value, "subject"), "uri");
		long s = cJSON_IsString(u) ? find_rec(f, u->valuestring) : -1;
		if (s >= 0)
			notify(f, f->recs[s].author, idx, "like", u->valuestring);
	} else if (strcmp(r->collection, "app.bsky.graph.follow") == 0) {
		const cJSON *d = cJSON_GetObjectItem(r->value, "subject");
		long a = cJSON_IsString(d) ? find_account(f, d->valuestring) : -1;
		if (a >= 0)
			notify(f, (size_t)a, idx, "follow", NULL);
	}
}

/* Stores a record (value consumed). -1 when the store is full. */
static long store(struct bskyfake *f, size_t author, const char *collection, const char *rkey,
                  cJSON *value)
{
	if (f->n_recs == BSKYFAKE_RECORDS_MAX) {
		cJSON_Delete(value);
		return -1;
	}
	f->recs = grow(f->recs, f->n_recs + 1, sizeof *f->recs);
	struct rec *r = &f->recs[f->n_recs];
	memset(r, 0, sizeof *r);
	char tid[14];
	if (!rkey) {
		make_tid(f, tid);
		rkey = tid;
	}
	snprintf(r->uri, sizeof r->uri, "at://%s/%s/%s", f->accounts[author].did, collection, rkey);
	char *text = cJSON_PrintUnformatted(value);
	char *seed = malloc(strlen(text) + strlen(r->uri) + 2);
	if (!seed)
		die("out of memory");
	sprintf(seed, "%s|%s", r->uri, text);
	make_cid(seed, r->cid);
	free(seed);
	free(text);
	r->author = author;
	snprintf(r->collection, sizeof r->collection, "%s", collection);
	snprintf(r->rkey, sizeof r->rkey, "%s", rkey);
	r->value = value;
	r->indexed_ms = now(f);
	long idx = (long)f->n_recs++;
	notify_for(f, (size_t)idx);
	return idx;
}

/* The PDS's own checks on a post record (lexicon app.bsky.feed.post):
 * NULL when valid, else the message it would give. */
static const char *check_post(const cJSON *v, char *buf, size_t cap)
{
	const cJSON *text = cJSON_GetObjectItem(v, "text");
	const cJSON *created = cJSON_GetObjectItem(v, "createdAt");
	if (!cJSON_IsString(text))
		return "Invalid app.bsky.feed.post record: Record must have the property \"text\"";
	if (!cJSON_IsString(created))
		return "Invalid app.bsky.feed.post record: Record must have the property "
		       "\"createdAt\"";
	int64_t ms;
	if (time_parse_iso(created->valuestring, &ms) != 0)
		return "Invalid app.bsky.feed.post record: Record/createdAt must be an valid "
		       "atproto datetime (both RFC-3339 and ISO-8601)";
	size_t len = strlen(text->valuestring);
	if (len > 3000) {
		snprintf(buf, cap,
		         "Invalid app.bsky.feed.post record: string too long (maximum 3000, got "
		         "%zu) "
		         "at $.record.text",
		         len);
		return buf;
	}
	size_t g = utf8_graphemes(text->valuestring, len);
	if (g > 300) {
		snprintf(buf, cap,
		         "Invalid app.bsky.feed.post record: grapheme too big (maximum 300, got "
		         "%zu) "
		         "at $.record.text",
		         g);
		return buf;
	}
	const cJSON *langs = cJSON_GetObjectItem(v, "langs");
	if (langs && (!cJSON_IsArray(langs) || cJSON_GetArraySize(langs) > 3))
		return "Invalid app.bsky.feed.post record: Record/langs must not have more than 3 "
		       "elements";
	const cJSON *reply = cJSON_GetObjectItem(v, "reply");
	if (reply) {
		const char *which[] = {"root", "parent"};
		for (int i = 0; i < 2; i++) {
			const cJSON *ref = cJSON_GetObjectItem(reply, which[i]);
			const cJSON *u = cJSON_GetObjectItem(ref, "uri");
			const cJSON *c = cJSON_GetObjectItem(ref, "cid");
			if (!cJSON_IsString(u) || strncmp(u->valuestring, "at://", 5) != 0) {
				snprintf(buf, cap,
				         "Invalid app.bsky.feed.post record: Invalid AT URI at "
				         "$.record.reply.%s.uri",
				         which[i]);
				return buf;
			}
			if (!cJSON_IsString(c) || strncmp(c->valuestring, "baf", 3) != 0 ||
			    strlen(c->valuestring) < 20) {
				snprintf(buf, cap,
				         "Invalid app.bsky.feed.post record: Invalid CID string "
				         "(got "
				         "\"%.80s\") at $.record.reply.%s.cid",
				         cJSON_IsString(c) ? c->valuestring : "", which[i]);
				return buf;
			}
		}
	}
	const cJSON *facets = cJSON_GetObjectItem(v, "facets");
	const cJSON *fc;
	int i = 0;
	cJSON_ArrayForEach(fc, facets)
	{
		const cJSON *idx = cJSON_GetObjectItem(fc, "index");
		const cJSON *s = cJSON_GetObjectItem(idx, "byteStart");
		const cJSON *e = cJSON_GetObjectItem(idx, "byteEnd");
		if (!cJSON_IsNumber(s) || !cJSON_IsNumber(e) || s->valuedouble < 0 ||
		    e->valuedouble < s->valuedouble || e->valuedouble > (double)len) {
			snprintf(buf, cap,
			         "Invalid app.bsky.feed.post record: Record/facets/%d/index is out "
			         "of "
			         "the text's range",
			         i);
			return buf;
		}
		const cJSON *ft;
		cJSON_ArrayForEach(ft, cJSON_GetObjectItem(fc, "features"))
		{
			const cJSON *type = cJSON_GetObjectItem(ft, "$type");
			if (!cJSON_IsString(type))
				return "Invalid app.bsky.feed.post record: a facet feature has no "
				       "$type";
			if (strcmp(type->valuestring, "app.bsky.richtext.facet#mention") == 0) {
				const cJSON *d = cJSON_GetObjectItem(ft, "did");
				if (!cJSON_IsString(d) || strncmp(d->valuestring, "did:", 4) != 0) {
					snprintf(
					        buf, cap,
					        "Invalid app.bsky.feed.post record: Invalid DID "
					        "(got "
					        "\"%.80s\") at $.record.facets[%d].features[0].did",
					        cJSON_IsString(d) ? d->valuestring : "", i);
					return buf;
				}
			}
		}
		i++;
	}
	return NULL;
}

/* --- authentication -------------------------------------------------------------------------- */

/* The account of a valid token of the wanted kind, or -1 after answering. */
static long authenticate(struct bskyfake *f, const struct httpfake_request *req,
                         struct httpfake_response *resp, bool want_refresh, struct token **out)
{
	const char *h = httpfake_request_header(req, "Authorization");
	if (!h || strncasecmp(h, "Bearer ", 7) != 0) {
		xerror(resp, 401, "AuthenticationRequired", "Authentication Required");
		return -1;
	}
	const char *jwt = h + 7;
	for (size_t i = 0; i < f->n_tokens; i++) {
		struct token *t = &f->tokens[i];
		if (strcmp(t->jwt, jwt) != 0)
			continue;
		if (t->refresh != want_refresh) {
			xerror(resp, 400, "InvalidToken", "Token could not be verified");
			return -1;
		}
		if (t->revoked) {
			xerror(resp, 400, "ExpiredToken", "Token has been revoked");
			return -1;
		}
		if (now(f) >= t->exp_ms) {
			xerror(resp, 400, "ExpiredToken", "Token has expired");
			return -1;
		}
		if (out)
			*out = t;
		return (long)t->account;
	}
	xerror(resp, 400, "InvalidToken", "Token could not be verified");
	return -1;
}

static cJSON *session_json(struct bskyfake *f, size_t a)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "did", f->accounts[a].did);
	cJSON_AddStringToObject(o, "handle", f->accounts[a].handle);
	cJSON_AddStringToObject(o, "accessJwt", issue_token(f, a, false));
	cJSON_AddStringToObject(o, "refreshJwt", issue_token(f, a, true));
	cJSON_AddBoolToObject(o, "active", true);
	return o;
}

/* --- XRPC methods ----------------------------------------------------------------------------- */

static cJSON *body_object(const struct httpfake_request *req, struct httpfake_response *resp)
{
	cJSON *b = cJSON_ParseWithLength(req->body, req->body_len);
	if (!cJSON_IsObject(b)) {
		cJSON_Delete(b);
		xerror(resp, 400, "InvalidRequest", "Request body must be a JSON object");
		return NULL;
	}
	return b;
}

static void x_create_session(struct bskyfake *f, const struct httpfake_request *req,
                             struct httpfake_response *resp)
{
	cJSON *b = body_object(req, resp);
	if (!b)
		return;
	const cJSON *id = cJSON_GetObjectItem(b, "identifier");
	const cJSON *pw = cJSON_GetObjectItem(b, "password");
	if (!cJSON_IsString(id) || !cJSON_IsString(pw)) {
		cJSON_Delete(b);
		xerror(resp, 400, "InvalidRequest", "Input must have the property \"identifier\"");
		return;
	}
	long a = find_account(f, id->valuestring);
	if (a < 0 || strcmp(f->accounts[a].password, pw->valuestring) != 0) {
		cJSON_Delete(b);
		xerror(resp, 401, "AuthenticationRequired", "Invalid identifier or password");
		return;
	}
	cJSON_Delete(b);
	answer(resp, 200, session_json(f, (size_t)a));
}

static void x_refresh_session(struct bskyfake *f, const struct httpfake_request *req,
                              struct httpfake_response *resp)
{
	struct token *t = NULL;
	long a = authenticate(f, req, resp, true, &t);
	if (a < 0)
		return;
	t->revoked = true; /* rotation: the old refresh token is spent */
	answer(resp, 200, session_json(f, (size_t)a));
}

static void x_get_session(struct bskyfake *f, const struct httpfake_request *req,
                          struct httpfake_response *resp)
{
	long a = authenticate(f, req, resp, false, NULL);
	if (a < 0)
		return;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "did", f->accounts[a].did);
	cJSON_AddStringToObject(o, "handle", f->accounts[a].handle);
	cJSON_AddBoolToObject(o, "active", true);
	answer(resp, 200, o);
}

static void x_resolve_handle(struct bskyfake *f, const struct httpfake_request *req,
                             struct httpfake_response *resp)
{
	const char *h = httpfake_request_param(req, "handle");
	if (!h) {
		xerror(resp, 400, "InvalidRequest", "Params must have the property \"handle\"");
		return;
	}
	long a = find_account(f, h);
	if (a < 0 || strncmp(h, "did:", 4) == 0) {
		xerror(resp, 400, "HandleNotFound", "Unable to resolve handle");
		return;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "did", f->accounts[a].did);
	answer(resp, 200, o);
}

static void x_get_profile(struct bskyfake *f, long viewer, const struct httpfake_request *req,
                          struct httpfake_response *resp)
{
	(void)viewer;
	long a = find_account(f, httpfake_request_param(req, "actor"));
	if (a < 0) {
		xerror(resp, 400, "InvalidRequest", "Profile not found");
		return;
	}
	cJSON *o = author_json(&f->accounts[a]);
	size_t posts = 0, follows = 0, followers = 0;
	for (size_t i = 0; i < f->n_recs; i++) {
		const struct rec *r = &f->recs[i];
		if (r->deleted)
			continue;
		if (r->author == (size_t)a && !strcmp(r->collection, "app.bsky.feed.post"))
			posts++;
		if (!strcmp(r->collection, "app.bsky.graph.follow")) {
			if (r->author == (size_t)a)
				follows++;
			const cJSON *s = cJSON_GetObjectItem(r->value, "subject");
			if (cJSON_IsString(s) && !strcmp(s->valuestring, f->accounts[a].did))
				followers++;
		}
	}
	cJSON_AddStringToObject(o, "description", "");
	cJSON_AddNumberToObject(o, "followersCount", (double)followers);
	cJSON_AddNumberToObject(o, "followsCount", (double)follows);
	cJSON_AddNumberToObject(o, "postsCount", (double)posts);
	answer(resp, 200, o);
}

static const char *const known_collections[] = {"app.bsky.feed.post", "app.bsky.feed.like",
                                                "app.bsky.graph.follow", "app.bsky.feed.repost"};

static bool known_collection(const char *c)
{
	for (size_t i = 0; i < sizeof known_collections / sizeof known_collections[0]; i++)
		if (strcmp(c, known_collections[i]) == 0)
			return true;
	return false;
}

static void x_create_record(struct bskyfake *f, long a, const struct httpfake_request *req,
                            struct httpfake_response *resp)
{
	cJSON *b = body_object(req, resp);
	if (!b)
		return;
	const cJSON *repo = cJSON_GetObjectItem(b, "repo");
	const cJSON *coll = cJSON_GetObjectItem(b, "collection");
	cJSON *rec = cJSON_GetObjectItem(b, "record");
	const cJSON *rkey = cJSON_GetObjectItem(b, "rkey");
	char buf[512];
	const char *bad = NULL;
	if (!cJSON_IsString(repo) || !cJSON_IsString(coll) || !cJSON_IsObject(rec)) {
		cJSON_Delete(b);
		xerror(resp, 400, "InvalidRequest",
		       "Input must have the properties \"repo\", \"collection\" and \"record\"");
		return;
	}
	if (find_account(f, repo->valuestring) != a) {
		cJSON_Delete(b);
		xerror(resp, 403, "InvalidRequest", "Token does not have access to that repo");
		return;
	}
	if (!known_collection(coll->valuestring)) {
		cJSON_Delete(b);
		xerror(resp, 400, "InvalidRequest", "Lexicon not found: lex:%s", coll->valuestring);
		return;
	}
	const cJSON *type = cJSON_GetObjectItem(rec, "$type");
	if (!cJSON_IsString(type) || strcmp(type->valuestring, coll->valuestring) != 0) {
		cJSON_Delete(b);
		xerror(resp, 400, "InvalidRequest", "Invalid $type: must be %s", coll->valuestring);
		return;
	}
	if (!strcmp(coll->valuestring, "app.bsky.feed.post") &&
	    (bad = check_post(rec, buf, sizeof buf))) {
		cJSON_Delete(b);
		xerror(resp, 400, "InvalidRequest", "%s", bad);
		return;
	}
	if (!cJSON_IsString(cJSON_GetObjectItem(rec, "createdAt"))) {
		cJSON_Delete(b);
		xerror(resp, 400, "InvalidRequest",
		       "Invalid %s record: Record must have the property \"createdAt\"",
		       coll->valuestring);
		return;
	}
	if (cJSON_IsString(rkey)) {
		char u[BSKYFAKE_URI_MAX];
		snprintf(u, sizeof u, "at://%s/%s/%s", f->accounts[a].did, coll->valuestring,
		         rkey->valuestring);
		if (find_rec(f, u) >= 0) {
			cJSON_Delete(b);
			xerror(resp, 400, "InvalidRequest", "Record already exists: %s", u);
			return;
		}
	}
	char collection[64];
	snprintf(collection, sizeof collection, "%s", coll->valuestring);
	cJSON_DetachItemViaPointer(b, rec);
	long idx = store(f, (size_t)a, collection, cJSON_IsString(rkey) ? rkey->valuestring : NULL,
	                 rec);
	cJSON_Delete(b);
	if (idx < 0) {
		xerror(resp, 400, "InvalidRequest", "the fake holds at most %d records",
		       BSKYFAKE_RECORDS_MAX);
		return;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "uri", f->recs[idx].uri);
	cJSON_AddStringToObject(o, "cid", f->recs[idx].cid);
	cJSON *commit = cJSON_AddObjectToObject(o, "commit");
	char ccid[BSKYFAKE_CID_MAX], tid[14];
	make_cid(f->recs[idx].cid, ccid);
	make_tid(f, tid);
	cJSON_AddStringToObject(commit, "cid", ccid);
	cJSON_AddStringToObject(commit, "rev", tid);
	cJSON_AddStringToObject(o, "validationStatus", "valid");
	answer(resp, 200, o);
}

static void x_delete_record(struct bskyfake *f, long a, const struct httpfake_request *req,
                            struct httpfake_response *resp)
{
	cJSON *b = body_object(req, resp);
	if (!b)
		return;
	const cJSON *repo = cJSON_GetObjectItem(b, "repo");
	const cJSON *coll = cJSON_GetObjectItem(b, "collection");
	const cJSON *rkey = cJSON_GetObjectItem(b, "rkey");
	if (!cJSON_IsString(repo) || !cJSON_IsString(coll) || !cJSON_IsString(rkey)) {
		cJSON_Delete(b);
		xerror(resp, 400, "InvalidRequest",
		       "Input must have the properties \"repo\", \"collection\" and \"rkey\"");
		return;
	}
	if (find_account(f, repo->valuestring) != a) {
		cJSON_Delete(b);
		xerror(resp, 403, "InvalidRequest", "Token does not have access to that repo");
		return;
	}
	char u[BSKYFAKE_URI_MAX];
	snprintf(u, sizeof u, "at://%s/%s/%s", f->accounts[a].did, coll->valuestring,
	         rkey->valuestring);
	cJSON_Delete(b);
	long idx = find_rec(f, u);
	if (idx >= 0)
		f->recs[idx].deleted = true; /* deleting what is gone succeeds, as on the PDS */
	cJSON *o = cJSON_CreateObject();
	cJSON *commit = cJSON_AddObjectToObject(o, "commit");
	char ccid[BSKYFAKE_CID_MAX], tid[14];
	make_cid(u, ccid);
	make_tid(f, tid);
	cJSON_AddStringToObject(commit, "cid", ccid);
	cJSON_AddStringToObject(commit, "rev", tid);
	answer(resp, 200, o);
}

static void x_get_record(struct bskyfake *f, const struct httpfake_request *req,
                         struct httpfake_response *resp)
{
	const char *repo = httpfake_request_param(req, "repo");
	const char *coll = httpfake_request_param(req, "collection");
	const char *rkey = httpfake_request_param(req, "rkey");
	long a = find_account(f, repo);
	if (!repo || !coll || !rkey) {
		xerror(resp, 400, "InvalidRequest",
		       "Params must have the properties \"repo\", \"collection\" and \"rkey\"");
		return;
	}
	char u[BSKYFAKE_URI_MAX];
	snprintf(u, sizeof u, "at://%s/%s/%s", a >= 0 ? f->accounts[a].did : repo, coll, rkey);
	long idx = a >= 0 ? find_rec(f, u) : -1;
	if (idx < 0) {
		xerror(resp, 400, "RecordNotFound", "Could not locate record: %s", u);
		return;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "uri", f->recs[idx].uri);
	cJSON_AddStringToObject(o, "cid", f->recs[idx].cid);
	cJSON_AddItemToObject(o, "value", cJSON_Duplicate(f->recs[idx].value, 1));
	answer(resp, 200, o);
}

static long parse_limit(const struct httpfake_request *req, long def)
{
	const char *l = httpfake_request_param(req, "limit");
	long n = l ? strtol(l, NULL, 10) : def;
	if (n < 1)
		n = 1;
	if (n > 100)
		n = 100;
	return n;
}

static void x_list_records(struct bskyfake *f, const struct httpfake_request *req,
                           struct httpfake_response *resp)
{
	long a = find_account(f, httpfake_request_param(req, "repo"));
	const char *coll = httpfake_request_param(req, "collection");
	if (a < 0 || !coll) {
		xerror(resp, 400, "InvalidRequest", "Could not find repo: %s",
		       httpfake_request_param(req, "repo") ? httpfake_request_param(req, "repo")
		                                           : "");
		return;
	}
	long limit = parse_limit(req, 50);
	const char *cursor = httpfake_request_param(req, "cursor");
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "records");
	long n = 0;
	const char *last = NULL;
	for (size_t i = f->n_recs; i-- > 0 && n < limit;) {
		const struct rec *r = &f->recs[i];
		if (r->deleted || r->author != (size_t)a || strcmp(r->collection, coll) != 0)
			continue;
		if (cursor && strcmp(r->rkey, cursor) >= 0)
			continue; /* rkeys (TIDs) sort by time */
		cJSON *it = cJSON_CreateObject();
		cJSON_AddStringToObject(it, "uri", r->uri);
		cJSON_AddStringToObject(it, "cid", r->cid);
		cJSON_AddItemToObject(it, "value", cJSON_Duplicate(r->value, 1));
		cJSON_AddItemToArray(arr, it);
		last = r->rkey;
		n++;
	}
	if (last) /* the PDS gives a cursor whenever it returned records */
		cJSON_AddStringToObject(o, "cursor", last);
	answer(resp, 200, o);
}

static void x_list_notifications(struct bskyfake *f, long a, const struct httpfake_request *req,
                                 struct httpfake_response *resp)
{
	long limit = parse_limit(req, 50);
	const char *cursor = httpfake_request_param(req, "cursor");
	uint64_t before = UINT64_MAX;
	if (cursor) {
		char *end;
		unsigned long long v = strtoull(cursor, &end, 10);
		if (*end || !*cursor) {
			xerror(resp, 400, "InvalidRequest", "Malformed cursor");
			return;
		}
		before = v;
	}
	char t[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "notifications");
	long n = 0;
	uint64_t last = 0;
	for (size_t i = f->n_notifs; i-- > 0 && n < limit;) {
		const struct notif *x = &f->notifs[i];
		if (x->to != (size_t)a || x->seq >= before)
			continue;
		const struct rec *r = &f->recs[x->rec];
		if (r->deleted)
			continue;
		cJSON *it = cJSON_CreateObject();
		cJSON_AddStringToObject(it, "uri", r->uri);
		cJSON_AddStringToObject(it, "cid", r->cid);
		cJSON_AddItemToObject(it, "author", author_json(&f->accounts[r->author]));
		cJSON_AddStringToObject(it, "reason", x->reason);
		if (x->reason_subject[0])
			cJSON_AddStringToObject(it, "reasonSubject", x->reason_subject);
		cJSON_AddItemToObject(it, "record", cJSON_Duplicate(r->value, 1));
		cJSON_AddBoolToObject(it, "isRead", x->indexed_ms <= f->accounts[a].seen_at_ms);
		iso(x->indexed_ms, t);
		cJSON_AddStringToObject(it, "indexedAt", t);
		cJSON_AddItemToObject(it, "labels", cJSON_CreateArray());
		cJSON_AddItemToArray(arr, it);
		last = x->seq;
		n++;
	}
	if (n == limit && last) {
		char c[32];
		snprintf(c, sizeof c, "%llu", (unsigned long long)last);
		cJSON_AddStringToObject(o, "cursor", c);
	}
	if (f->accounts[a].seen_at_ms) {
		iso(f->accounts[a].seen_at_ms, t);
		cJSON_AddStringToObject(o, "seenAt", t);
	}
	cJSON_AddBoolToObject(o, "priority", false);
	answer(resp, 200, o);
}

static void x_update_seen(struct bskyfake *f, long a, const struct httpfake_request *req,
                          struct httpfake_response *resp)
{
	cJSON *b = body_object(req, resp);
	if (!b)
		return;
	const cJSON *s = cJSON_GetObjectItem(b, "seenAt");
	int64_t ms;
	if (!cJSON_IsString(s) || time_parse_iso(s->valuestring, &ms) != 0) {
		cJSON_Delete(b);
		xerror(resp, 400, "InvalidRequest",
		       "Input/seenAt must be an valid atproto datetime (both RFC-3339 and "
		       "ISO-8601)");
		return;
	}
	cJSON_Delete(b);
	if (ms > f->accounts[a].seen_at_ms)
		f->accounts[a].seen_at_ms = ms;
	resp->status = 200; /* an empty body, as the AppView answers */
}

static void x_get_post_thread(struct bskyfake *f, long viewer, const struct httpfake_request *req,
                              struct httpfake_response *resp)
{
	const char *uri = httpfake_request_param(req, "uri");
	if (!uri) {
		xerror(resp, 400, "InvalidRequest", "Params must have the property \"uri\"");
		return;
	}
	const char *d = httpfake_request_param(req, "depth");
	const char *p = httpfake_request_param(req, "parentHeight");
	int depth = d ? atoi(d) : 6, ph = p ? atoi(p) : 80;
	long idx = find_rec(f, uri);
	if (idx < 0 || strcmp(f->recs[idx].collection, "app.bsky.feed.post") != 0) {
		xerror(resp, 400, "NotFound", "Post not found: %s", uri);
		return;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "thread", thread_view(f, idx, depth, ph, viewer, true));
	answer(resp, 200, o);
}

/* getPosts: every "uris" argument (1..25, as the lexicon), the views of
 * the posts that exist, in the order asked; unknown or deleted ones are
 * left out, as the AppView does. */
static void x_get_posts(struct bskyfake *f, long viewer, const struct httpfake_request *req,
                        struct httpfake_response *resp)
{
	size_t n = 0;
	for (size_t i = 0; i < req->n_params; i++)
		n += strcmp(req->params[i].name, "uris") == 0;
	if (n == 0) {
		xerror(resp, 400, "InvalidRequest", "Params must have the property \"uris\"");
		return;
	}
	if (n > 25) {
		xerror(resp, 400, "InvalidRequest", "uris must not have more than 25 elements");
		return;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON *posts = cJSON_AddArrayToObject(o, "posts");
	for (size_t i = 0; i < req->n_params; i++) {
		if (strcmp(req->params[i].name, "uris") != 0)
			continue;
		long idx = find_rec(f, req->params[i].value);
		if (idx >= 0 && strcmp(f->recs[idx].collection, "app.bsky.feed.post") == 0)
			cJSON_AddItemToArray(posts, post_view(f, &f->recs[idx], viewer));
	}
	answer(resp, 200, o);
}

static void x_get_author_feed(struct bskyfake *f, long viewer, const struct httpfake_request *req,
                              struct httpfake_response *resp)
{
	long a = find_account(f, httpfake_request_param(req, "actor"));
	if (a < 0) {
		xerror(resp, 400, "InvalidRequest", "Profile not found");
		return;
	}
	const char *filter = httpfake_request_param(req, "filter");
	bool no_replies = filter && strcmp(filter, "posts_no_replies") == 0;
	long limit = parse_limit(req, 50);
	const char *cursor = httpfake_request_param(req, "cursor");
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "feed");
	long n = 0;
	const char *last = NULL;
	for (size_t i = f->n_recs; i-- > 0 && n < limit;) {
		const struct rec *r = &f->recs[i];
		if (r->deleted || r->author != (size_t)a ||
		    strcmp(r->collection, "app.bsky.feed.post"))
			continue;
		if (cursor && strcmp(r->rkey, cursor) >= 0)
			continue;
		const char *pu = parent_uri(r);
		if (no_replies && pu)
			continue;
		cJSON *it = cJSON_CreateObject();
		cJSON_AddItemToObject(it, "post", post_view(f, r, viewer));
		if (pu) {
			cJSON *reply = cJSON_AddObjectToObject(it, "reply");
			const cJSON *root = cJSON_GetObjectItem(
			        cJSON_GetObjectItem(cJSON_GetObjectItem(r->value, "reply"), "root"),
			        "uri");
			long ri = cJSON_IsString(root) ? find_rec(f, root->valuestring) : -1;
			long pi = find_rec(f, pu);
			if (ri >= 0)
				cJSON_AddItemToObject(reply, "root",
				                      post_view(f, &f->recs[ri], viewer));
			if (pi >= 0)
				cJSON_AddItemToObject(reply, "parent",
				                      post_view(f, &f->recs[pi], viewer));
		}
		cJSON_AddItemToArray(arr, it);
		last = r->rkey;
		n++;
	}
	if (n == limit && last)
		cJSON_AddStringToObject(o, "cursor", last);
	answer(resp, 200, o);
}

/* --- control --------------------------------------------------------------------------------- */

static int post_locked(struct bskyfake *f, size_t a, const char *text, const char *reply_to,
                       char *uri_out, char *cid_out)
{
	cJSON *v = cJSON_CreateObject();
	char t[TIME_ISO_LEN + 1];
	cJSON_AddStringToObject(v, "$type", "app.bsky.feed.post");
	cJSON_AddStringToObject(v, "text", text);
	iso(now(f), t);
	cJSON_AddStringToObject(v, "createdAt", t);
	cJSON_AddItemToObject(v, "langs", cJSON_CreateStringArray((const char *[]){"en"}, 1));
	if (reply_to) {
		long p = find_rec(f, reply_to);
		if (p < 0) {
			cJSON_Delete(v);
			return -1;
		}
		const cJSON *proot =
		        cJSON_GetObjectItem(cJSON_GetObjectItem(f->recs[p].value, "reply"), "root");
		cJSON *reply = cJSON_AddObjectToObject(v, "reply");
		cJSON *par = cJSON_AddObjectToObject(reply, "parent");
		cJSON_AddStringToObject(par, "uri", f->recs[p].uri);
		cJSON_AddStringToObject(par, "cid", f->recs[p].cid);
		if (proot) {
			cJSON_AddItemToObject(reply, "root", cJSON_Duplicate(proot, 1));
		} else {
			cJSON *root = cJSON_AddObjectToObject(reply, "root");
			cJSON_AddStringToObject(root, "uri", f->recs[p].uri);
			cJSON_AddStringToObject(root, "cid", f->recs[p].cid);
		}
	}
	/* mention facets for "@<known handle>", byte offsets */
	cJSON *facets = NULL;
	for (const char *p = strchr(text, '@'); p; p = strchr(p + 1, '@')) {
		if (p != text && !isspace((unsigned char)p[-1]) && p[-1] != '(')
			continue;
		size_t n = 0;
		while (p[1 + n] &&
		       (isalnum((unsigned char)p[1 + n]) || p[1 + n] == '.' || p[1 + n] == '-'))
			n++;
		while (n && p[n] == '.')
			n--;
		char h[254];
		if (n == 0 || n >= sizeof h)
			continue;
		memcpy(h, p + 1, n);
		h[n] = '\0';
		long m = find_account(f, h);
		if (m < 0)
			continue;
		if (!facets)
			facets = cJSON_AddArrayToObject(v, "facets");
		cJSON *fc = cJSON_CreateObject();
		cJSON *idx = cJSON_AddObjectToObject(fc, "index");
		cJSON_AddNumberToObject(idx, "byteStart", (double)(p - text));
		cJSON_AddNumberToObject(idx, "byteEnd", (double)(p - text + 1 + (long)n));
		cJSON *feats = cJSON_AddArrayToObject(fc, "features");
		cJSON *ft = cJSON_CreateObject();
		cJSON_AddStringToObject(ft, "$type", "app.bsky.richtext.facet#mention");
		cJSON_AddStringToObject(ft, "did", f->accounts[m].did);
		cJSON_AddItemToArray(feats, ft);
		cJSON_AddItemToArray(facets, fc);
	}
	long idx = store(f, a, "app.bsky.feed.post", NULL, v);
	if (idx < 0)
		return -1;
	if (uri_out)
		snprintf(uri_out, BSKYFAKE_URI_MAX, "%s", f->recs[idx].uri);
	if (cid_out)
		snprintf(cid_out, BSKYFAKE_CID_MAX, "%s", f->recs[idx].cid);
	return 0;
}

static void expire_locked(struct bskyfake *f, size_t a, bool refresh_too)
{
	int64_t t = now(f);
	for (size_t i = 0; i < f->n_tokens; i++) {
		struct token *k = &f->tokens[i];
		if (k->account != a)
			continue;
		if (!k->refresh && k->exp_ms > t - 1)
			k->exp_ms = t - 1;
		if (k->refresh && refresh_too)
			k->revoked = true;
	}
}

static cJSON *records_locked(struct bskyfake *f, long a, const char *coll)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = f->n_recs; i-- > 0;) {
		const struct rec *r = &f->recs[i];
		if (r->deleted || r->author != (size_t)a || (coll && strcmp(r->collection, coll)))
			continue;
		cJSON *it = cJSON_CreateObject();
		cJSON_AddStringToObject(it, "uri", r->uri);
		cJSON_AddStringToObject(it, "cid", r->cid);
		cJSON_AddItemToObject(it, "value", cJSON_Duplicate(r->value, 1));
		cJSON_AddItemToArray(arr, it);
	}
	return arr;
}

static void add_account_locked(struct bskyfake *f, const char *handle, const char *password,
                               char *did_out)
{
	if (f->n_accounts == BSKYFAKE_ACCOUNTS_MAX)
		die("more than %d accounts", BSKYFAKE_ACCOUNTS_MAX);
	if (!handle || !password || strlen(handle) >= 254 || strlen(password) >= 128)
		die("an account needs a handle (< 254 bytes) and a password (< 128)");
	if (find_account(f, handle) >= 0)
		die("the account %s exists already", handle);
	struct account *a = &f->accounts[f->n_accounts++];
	memset(a, 0, sizeof *a);
	snprintf(a->handle, sizeof a->handle, "%s", handle);
	snprintf(a->password, sizeof a->password, "%s", password);
	make_did(handle, a->did);
	if (did_out)
		snprintf(did_out, BSKYFAKE_DID_MAX, "%s", a->did);
}

static void control(struct bskyfake *f, const struct httpfake_request *req,
                    struct httpfake_response *resp)
{
	const char *what = req->path + strlen("/_bskyfake/");
	if (strcmp(req->method, "GET") == 0 && strcmp(what, "records") == 0) {
		long a = find_account(f, httpfake_request_param(req, "handle"));
		if (a < 0) {
			xerror(resp, 400, "InvalidRequest", "unknown handle");
			return;
		}
		cJSON *o = cJSON_CreateObject();
		cJSON_AddItemToObject(
		        o, "records",
		        records_locked(f, a, httpfake_request_param(req, "collection")));
		answer(resp, 200, o);
		return;
	}
	if (strcmp(req->method, "GET") == 0 && strcmp(what, "state") == 0) {
		cJSON *o = cJSON_CreateObject();
		cJSON *c = cJSON_AddObjectToObject(o, "requests");
		uint64_t start = f->n_log > BSKYFAKE_LOG_MAX ? f->n_log - BSKYFAKE_LOG_MAX : 0;
		for (uint64_t i = start; i < f->n_log; i++) {
			const struct logline *l = &f->log[i % BSKYFAKE_LOG_MAX];
			char key[96];
			snprintf(key, sizeof key, "%s %d", l->nsid, l->status);
			cJSON *n = cJSON_GetObjectItem(c, key);
			if (n)
				cJSON_SetNumberValue(n, n->valuedouble + 1);
			else
				cJSON_AddNumberToObject(c, key, 1);
		}
		cJSON_AddNumberToObject(o, "records", (double)f->n_recs);
		cJSON_AddNumberToObject(o, "notifications", (double)f->n_notifs);
		answer(resp, 200, o);
		return;
	}
	if (strcmp(req->method, "POST") != 0) {
		xerror(resp, 404, "MethodNotImplemented", "no control endpoint %s", req->path);
		return;
	}
	cJSON *b = body_object(req, resp);
	if (!b)
		return;
	const char *handle = cJSON_GetStringValue(cJSON_GetObjectItem(b, "handle"));
	long a = find_account(f, handle);
	if (strcmp(what, "account") == 0) {
		const char *pw = cJSON_GetStringValue(cJSON_GetObjectItem(b, "password"));
		if (!handle || !pw || a >= 0 || f->n_accounts == BSKYFAKE_ACCOUNTS_MAX ||
		    strlen(handle) >= 254 || strlen(pw) >= 128) {
			xerror(resp, 400, "InvalidRequest",
			       "an account needs a new handle and a password (at most %d accounts)",
			       BSKYFAKE_ACCOUNTS_MAX);
		} else {
			char did[BSKYFAKE_DID_MAX];
			add_account_locked(f, handle, pw, did);
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "did", did);
			answer(resp, 200, o);
		}
	} else if (strcmp(what, "post") == 0) {
		const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(b, "text"));
		const char *reply_to = cJSON_GetStringValue(cJSON_GetObjectItem(b, "replyTo"));
		char uri[BSKYFAKE_URI_MAX], cid[BSKYFAKE_CID_MAX];
		if (a < 0 || !text || post_locked(f, (size_t)a, text, reply_to, uri, cid) != 0) {
			xerror(resp, 400, "InvalidRequest",
			       "a post needs a known handle, a text and (replyTo) a known post");
		} else {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "uri", uri);
			cJSON_AddStringToObject(o, "cid", cid);
			answer(resp, 200, o);
		}
	} else if (strcmp(what, "expire") == 0 || strcmp(what, "revoke") == 0) {
		if (a < 0) {
			xerror(resp, 400, "InvalidRequest", "unknown handle");
		} else {
			expire_locked(f, (size_t)a, strcmp(what, "revoke") == 0);
			answer(resp, 200, cJSON_CreateObject());
		}
	} else if (strcmp(what, "429") == 0) {
		f->force429_n = (unsigned)cJSON_GetNumberValue(cJSON_GetObjectItem(b, "n"));
		f->force429_reset_ms =
		        now(f) + (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(b, "resetInMs"));
		answer(resp, 200, cJSON_CreateObject());
	} else if (strcmp(what, "fail") == 0) {
		f->fail_n = (unsigned)cJSON_GetNumberValue(cJSON_GetObjectItem(b, "n"));
		f->fail_status = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(b, "status"));
		f->fail_html = cJSON_IsTrue(cJSON_GetObjectItem(b, "html"));
		answer(resp, 200, cJSON_CreateObject());
	} else {
		xerror(resp, 404, "MethodNotImplemented", "no control endpoint %s", req->path);
	}
	cJSON_Delete(b);
}

/* --- dispatch ------------------------------------------------------------------------------- */

static enum bskyfake_class class_of(const char *nsid, bool post)
{
	if (!strcmp(nsid, "com.atproto.server.createSession") ||
	    !strcmp(nsid, "com.atproto.server.refreshSession"))
		return BSKYFAKE_SESSION;
	return post ? BSKYFAKE_WRITE : BSKYFAKE_READ;
}

static void log_req(struct bskyfake *f, const char *nsid, int status)
{
	struct logline *l = &f->log[f->n_log % BSKYFAKE_LOG_MAX];
	snprintf(l->nsid, sizeof l->nsid, "%s", nsid);
	l->status = status;
	f->n_log++;
	pthread_cond_broadcast(&f->cond);
}

static void xrpc(struct bskyfake *f, const char *nsid, const struct httpfake_request *req,
                 struct httpfake_response *resp)
{
	bool post = strcmp(req->method, "POST") == 0;
	struct budget *b = &f->budgets[class_of(nsid, post)];
	int64_t t = now(f);
	if (t >= b->reset_ms) {
		b->remaining = b->limit;
		b->reset_ms = t + b->window_ms;
	}
	if (f->fail_n > 0) {
		f->fail_n--;
		if (f->fail_html) {
			const char *page =
			        "<html><head><title>502 Bad Gateway</title></head><body>"
			        "<center><h1>502 Bad Gateway</h1></center></body></html>";
			resp->status = f->fail_status;
			httpfake_response_header(resp, "Content-Type", "text/html");
			httpfake_response_body(resp, page, strlen(page));
		} else {
			xerror(resp, f->fail_status, "InternalServerError",
			       "Internal Server Error");
		}
		return;
	}
	if (f->force429_n > 0) {
		f->force429_n--;
		struct budget held = *b;
		held.remaining = 0;
		held.reset_ms = f->force429_reset_ms;
		rate_headers(f, resp, &held);
		xerror(resp, 429, "RateLimitExceeded", "Rate Limit Exceeded");
		return;
	}
	if (b->remaining <= 0) {
		rate_headers(f, resp, b);
		xerror(resp, 429, "RateLimitExceeded", "Rate Limit Exceeded");
		return;
	}
	b->remaining--;
	rate_headers(f, resp, b);
	bool known_get = !post && (!strcmp(nsid, "com.atproto.server.getSession") ||
	                           !strcmp(nsid, "com.atproto.identity.resolveHandle") ||
	                           !strcmp(nsid, "app.bsky.actor.getProfile") ||
	                           !strcmp(nsid, "com.atproto.repo.getRecord") ||
	                           !strcmp(nsid, "com.atproto.repo.listRecords") ||
	                           !strcmp(nsid, "app.bsky.notification.listNotifications") ||
	                           !strcmp(nsid, "app.bsky.feed.getPostThread") ||
	                           !strcmp(nsid, "app.bsky.feed.getPosts") ||
	                           !strcmp(nsid, "app.bsky.feed.getAuthorFeed"));
	if (post && !strcmp(nsid, "com.atproto.server.createSession")) {
		x_create_session(f, req, resp);
		return;
	}
	if (post && !strcmp(nsid, "com.atproto.server.refreshSession")) {
		x_refresh_session(f, req, resp);
		return;
	}
	if (!post && !strcmp(nsid, "com.atproto.identity.resolveHandle")) {
		x_resolve_handle(f, req, resp);
		return;
	}
	if (!post && !known_get) {
		xerror(resp, 501, "MethodNotImplemented", "Method Not Implemented");
		return;
	}
	if (!strcmp(nsid, "com.atproto.server.getSession")) {
		x_get_session(f, req, resp);
		return;
	}
	bool known_post = post && (!strcmp(nsid, "com.atproto.repo.createRecord") ||
	                           !strcmp(nsid, "com.atproto.repo.deleteRecord") ||
	                           !strcmp(nsid, "app.bsky.notification.updateSeen"));
	if (post && !known_post) {
		xerror(resp, 501, "MethodNotImplemented", "Method Not Implemented");
		return;
	}
	long a = authenticate(f, req, resp, false, NULL);
	if (a < 0)
		return;
	if (!strcmp(nsid, "com.atproto.repo.createRecord")) {
		x_create_record(f, a, req, resp);
		if (f->lose_n > 0 && resp->status == 200) {
			/* written, but the answer is lost on its way back */
			f->lose_n--;
			const char *page =
			        "<html><head><title>502 Bad Gateway</title></head><body>"
			        "<center><h1>502 Bad Gateway</h1></center></body></html>";
			resp->status = 502;
			httpfake_response_header(resp, "Content-Type", "text/html");
			httpfake_response_body(resp, page, strlen(page));
		}
	} else if (!strcmp(nsid, "com.atproto.repo.deleteRecord"))
		x_delete_record(f, a, req, resp);
	else if (!strcmp(nsid, "app.bsky.notification.updateSeen"))
		x_update_seen(f, a, req, resp);
	else if (!strcmp(nsid, "app.bsky.actor.getProfile"))
		x_get_profile(f, a, req, resp);
	else if (!strcmp(nsid, "com.atproto.repo.getRecord"))
		x_get_record(f, req, resp);
	else if (!strcmp(nsid, "com.atproto.repo.listRecords"))
		x_list_records(f, req, resp);
	else if (!strcmp(nsid, "app.bsky.notification.listNotifications"))
		x_list_notifications(f, a, req, resp);
	else if (!strcmp(nsid, "app.bsky.feed.getPostThread"))
		x_get_post_thread(f, a, req, resp);
	else if (!strcmp(nsid, "app.bsky.feed.getPosts"))
		x_get_posts(f, a, req, resp);
	else
		x_get_author_feed(f, a, req, resp);
}

static void handle(const struct httpfake_request *req, struct httpfake_response *resp, void *ud)
{
	struct bskyfake *f = ud;
	pthread_mutex_lock(&f->mu);
	if (strncmp(req->path, "/_bskyfake/", 11) == 0) {
		control(f, req, resp);
		pthread_mutex_unlock(&f->mu);
		return;
	}
	const char *nsid = strncmp(req->path, "/xrpc/", 6) == 0 ? req->path + 6 : NULL;
	if (!nsid || !*nsid) {
		xerror(resp, 404, "NotFound", "Not Found");
		log_req(f, req->path, 404);
	} else {
		xrpc(f, nsid, req, resp);
		log_req(f, nsid, resp->status);
	}
	pthread_mutex_unlock(&f->mu);
}

/* --- public -------------------------------------------------------------------------------------
 */

static void budget_init(struct budget *b, int64_t limit, int64_t window_ms, int64_t t)
{
	b->limit = limit;
	b->window_ms = window_ms;
	b->remaining = limit;
	b->reset_ms = t + window_ms;
}

struct bskyfake *bskyfake_new(char *err, size_t errlen)
{
	struct bskyfake *f = calloc(1, sizeof *f);
	if (!f)
		die("out of memory");
	f->http = httpfake_new(0, err, errlen);
	if (!f->http) {
		free(f);
		return NULL;
	}
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cond, NULL);
	f->now = real_now;
	f->access_ttl_ms = (int64_t)2 * 3600 * 1000;
	f->refresh_ttl_ms = (int64_t)60 * 24 * 3600 * 1000;
	for (int c = 0; c < 3; c++)
		bskyfake_rate_limit(f, (enum bskyfake_class)c, 0, 0);
	httpfake_handle(f->http, "*", "/*", handle, f);
	return f;
}

void bskyfake_free(struct bskyfake *f)
{
	if (!f)
		return;
	httpfake_free(f->http);
	for (size_t i = 0; i < f->n_recs; i++)
		cJSON_Delete(f->recs[i].value);
	free(f->recs);
	free(f->notifs);
	for (size_t i = 0; i < f->n_tokens; i++)
		free(f->tokens[i].jwt);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cond);
	free(f);
}

const char *bskyfake_base_url(const struct bskyfake *f)
{
	return httpfake_base_url(f->http);
}

struct httpfake *bskyfake_http(struct bskyfake *f)
{
	return f->http;
}

void bskyfake_set_clock(struct bskyfake *f, int64_t (*now_ms)(void *ud), void *ud)
{
	pthread_mutex_lock(&f->mu);
	f->now = now_ms ? now_ms : real_now;
	f->now_ud = ud;
	int64_t t = now(f);
	for (int c = 0; c < 3; c++)
		f->budgets[c].reset_ms = t + f->budgets[c].window_ms;
	pthread_mutex_unlock(&f->mu);
}

void bskyfake_set_token_ttl(struct bskyfake *f, int64_t access_ms, int64_t refresh_ms)
{
	pthread_mutex_lock(&f->mu);
	f->access_ttl_ms = access_ms;
	f->refresh_ttl_ms = refresh_ms;
	pthread_mutex_unlock(&f->mu);
}

void bskyfake_add_account(struct bskyfake *f, const char *handle, const char *password,
                          char *did_out)
{
	pthread_mutex_lock(&f->mu);
	add_account_locked(f, handle, password, did_out);
	pthread_mutex_unlock(&f->mu);
}

int bskyfake_post(struct bskyfake *f, const char *handle, const char *text, const char *reply_to,
                  char *uri, char *cid)
{
	pthread_mutex_lock(&f->mu);
	long a = find_account(f, handle);
	int rc = a < 0 || !text ? -1 : post_locked(f, (size_t)a, text, reply_to, uri, cid);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

int bskyfake_like(struct bskyfake *f, const char *handle, const char *uri)
{
	pthread_mutex_lock(&f->mu);
	long a = find_account(f, handle);
	long s = find_rec(f, uri);
	int rc = -1;
	if (a >= 0 && s >= 0) {
		char t[TIME_ISO_LEN + 1];
		cJSON *v = cJSON_CreateObject();
		cJSON_AddStringToObject(v, "$type", "app.bsky.feed.like");
		cJSON *subj = cJSON_AddObjectToObject(v, "subject");
		cJSON_AddStringToObject(subj, "uri", f->recs[s].uri);
		cJSON_AddStringToObject(subj, "cid", f->recs[s].cid);
		iso(now(f), t);
		cJSON_AddStringToObject(v, "createdAt", t);
		rc = store(f, (size_t)a, "app.bsky.feed.like", NULL, v) >= 0 ? 0 : -1;
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}

void bskyfake_expire_tokens(struct bskyfake *f, const char *handle)
{
	pthread_mutex_lock(&f->mu);
	long a = find_account(f, handle);
	if (a < 0)
		die("expire_tokens: unknown handle %s", handle ? handle : "(null)");
	expire_locked(f, (size_t)a, false);
	pthread_mutex_unlock(&f->mu);
}

void bskyfake_revoke_sessions(struct bskyfake *f, const char *handle)
{
	pthread_mutex_lock(&f->mu);
	long a = find_account(f, handle);
	if (a < 0)
		die("revoke_sessions: unknown handle %s", handle ? handle : "(null)");
	expire_locked(f, (size_t)a, true);
	pthread_mutex_unlock(&f->mu);
}

void bskyfake_rate_limit(struct bskyfake *f, enum bskyfake_class cls, int64_t limit,
                         int64_t window_ms)
{
	static const int64_t def_limit[] = {3000, 5000, 30};
	static const int64_t def_window[] = {300 * 1000, 3600 * 1000, 300 * 1000};
	if ((int)cls < 0 || cls > BSKYFAKE_SESSION)
		die("unknown rate class %d", (int)cls);
	pthread_mutex_lock(&f->mu);
	if (limit <= 0)
		budget_init(&f->budgets[cls], def_limit[cls], def_window[cls], now(f));
	else
		budget_init(&f->budgets[cls], limit, window_ms > 0 ? window_ms : 300 * 1000,
		            now(f));
	pthread_mutex_unlock(&f->mu);
}

void bskyfake_force_429(struct bskyfake *f, unsigned n, int64_t reset_in_ms)
{
	pthread_mutex_lock(&f->mu);
	f->force429_n = n;
	f->force429_reset_ms = now(f) + reset_in_ms;
	pthread_mutex_unlock(&f->mu);
}

void bskyfake_fail_next(struct bskyfake *f, unsigned n, int status, bool html)
{
	pthread_mutex_lock(&f->mu);
	f->fail_n = n;
	f->fail_status = status;
	f->fail_html = html;
	pthread_mutex_unlock(&f->mu);
}

void bskyfake_lose_answers(struct bskyfake *f, unsigned n)
{
	pthread_mutex_lock(&f->mu);
	f->lose_n = n;
	pthread_mutex_unlock(&f->mu);
}

void bskyfake_hide_in_threads(struct bskyfake *f, const char *handle, bool hidden)
{
	pthread_mutex_lock(&f->mu);
	long a = find_account(f, handle);
	if (a < 0)
		die("hide_in_threads: unknown account %s", handle);
	f->accounts[a].hidden_in_threads = hidden;
	pthread_mutex_unlock(&f->mu);
}

size_t bskyfake_count(struct bskyfake *f, const char *nsid, int status)
{
	pthread_mutex_lock(&f->mu);
	size_t n = 0;
	uint64_t start = f->n_log > BSKYFAKE_LOG_MAX ? f->n_log - BSKYFAKE_LOG_MAX : 0;
	for (uint64_t i = start; i < f->n_log; i++) {
		const struct logline *l = &f->log[i % BSKYFAKE_LOG_MAX];
		if ((!nsid || strcmp(l->nsid, nsid) == 0) && (!status || l->status == status))
			n++;
	}
	pthread_mutex_unlock(&f->mu);
	return n;
}

size_t bskyfake_record_count(struct bskyfake *f, const char *handle, const char *collection)
{
	pthread_mutex_lock(&f->mu);
	long a = find_account(f, handle);
	size_t n = 0;
	for (size_t i = 0; a >= 0 && i < f->n_recs; i++)
		n += !f->recs[i].deleted && f->recs[i].author == (size_t)a &&
		     (!collection || !strcmp(f->recs[i].collection, collection));
	pthread_mutex_unlock(&f->mu);
	return n;
}

cJSON *bskyfake_records(struct bskyfake *f, const char *handle, const char *collection)
{
	pthread_mutex_lock(&f->mu);
	long a = find_account(f, handle);
	cJSON *arr = a >= 0 ? records_locked(f, a, collection) : NULL;
	pthread_mutex_unlock(&f->mu);
	return arr;
}

cJSON *bskyfake_record(struct bskyfake *f, const char *uri)
{
	pthread_mutex_lock(&f->mu);
	long i = find_rec(f, uri);
	cJSON *v = i >= 0 ? cJSON_Duplicate(f->recs[i].value, 1) : NULL;
	pthread_mutex_unlock(&f->mu);
	return v;
}

int64_t bskyfake_seen_at(struct bskyfake *f, const char *handle)
{
	pthread_mutex_lock(&f->mu);
	long a = find_account(f, handle);
	int64_t v = a >= 0 ? f->accounts[a].seen_at_ms : 0;
	pthread_mutex_unlock(&f->mu);
	return v;
}

uint64_t bskyfake_requests(struct bskyfake *f)
{
	pthread_mutex_lock(&f->mu);
	uint64_t n = f->n_log;
	pthread_mutex_unlock(&f->mu);
	return n;
}

int bskyfake_wait_requests(struct bskyfake *f, uint64_t n, unsigned timeout_ms)
{
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&f->mu);
	int rc = 0;
	while (f->n_log < n && rc == 0)
		rc = pthread_cond_timedwait(&f->cond, &f->mu, &dl);
	bool ok = f->n_log >= n;
	pthread_mutex_unlock(&f->mu);
	return ok ? 0 : -1;
}
