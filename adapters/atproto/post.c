/*
 * atproto post — record and facet construction; see post.h.
 *
 * Facet offsets are byte offsets because the text is scanned as bytes: every
 * position below is an index into the UTF-8 text as it will be sent. The
 * reference detected on UTF-16 indices and converted; working on bytes from
 * the start makes the conversion (and its off-by-surrogate bugs) vanish.
 * Every delimiter the rules name is ASCII, and no byte of a multi-byte UTF-8
 * sequence is ASCII, so a scan over bytes never splits a character.
 */
#include "adapters/atproto/post.h"

#include "adapters/atproto/internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"

#define IDEM_KEY_MAX 128

/* --- identifiers ------------------------------------------------------------------ */

static bool is_alnum_c(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

static bool is_alpha_c(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

/* A handle of len bytes at s: labels of [A-Za-z0-9-] (1..63 bytes, not
 * starting or ending with '-'), at least two labels, the last starting with
 * a letter, at most ATP_HANDLE_MAX bytes. */
static bool handle_ok(const char *s, size_t len)
{
	if (len == 0 || len > ATP_HANDLE_MAX)
		return false;
	size_t labels = 0, start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '.') {
			if (!is_alnum_c(s[i]) && s[i] != '-')
				return false;
			continue;
		}
		size_t n = i - start;
		if (n == 0 || n > 63 || s[start] == '-' || s[i - 1] == '-')
			return false;
		labels++;
		if (i == len && !is_alpha_c(s[start]))
			return false; /* the TLD starts with a letter */
		start = i + 1;
	}
	return labels >= 2;
}

bool atp_valid_handle(const char *s)
{
	return s && handle_ok(s, strlen(s));
}

bool atp_valid_did(const char *s)
{
	if (!s || strncmp(s, "did:", 4) != 0)
		return false;
	size_t len = strlen(s);
	if (len >= ATP_DID_MAX)
		return false;
	const char *p = s + 4;
	const char *m = p;
	while (*p >= 'a' && *p <= 'z')
		p++;
	if (p == m || *p != ':')
		return false;
	p++;
	if (!*p)
		return false;
	for (; *p; p++)
		if (!is_alnum_c(*p) && !strchr("._:%-", *p))
			return false;
	return s[len - 1] != ':' && s[len - 1] != '%';
}

bool atp_valid_rkey(const char *s)
{
	if (!s || !*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	size_t n = 0;
	for (; s[n]; n++)
		if (!is_alnum_c(s[n]) && !strchr("._:~-", s[n]))
			return false;
	return n < ATP_RKEY_MAX;
}

static bool valid_nsid(const char *s, size_t n)
{
	if (n == 0 || n > 317)
		return false;
	size_t dots = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '.')
			dots++;
		else if (!is_alnum_c(s[i]) && s[i] != '-')
			return false;
	}
	return dots >= 2 && s[0] != '.' && s[n - 1] != '.';
}

bool atp_valid_nsid(const char *s)
{
	return s && valid_nsid(s, strlen(s));
}

static int copy_part(char *dst, size_t cap, const char *src, size_t n)
{
	if (!dst)
		return 0;
	if (n >= cap)
		return -1;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return 0;
}

int atp_uri_parse(const char *uri, char *did, size_t did_cap, char *collection, size_t coll_cap,
                  char *rkey, size_t rkey_cap, struct ga_err *err)
{
	if (!uri || strncmp(uri, "at://", 5) != 0)
		return err_set(err, "'%.80s' is not an at:// URI", uri ? uri : "(null)");
	if (strlen(uri) >= ATP_URI_MAX)
		return err_set(err, "the at:// URI is longer than %d bytes", ATP_URI_MAX - 1);
	const char *a = uri + 5;
	const char *s1 = strchr(a, '/');
	const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	if (!s1 || !s2 || strchr(s2 + 1, '/') || strchr(uri, '?') || strchr(uri, '#'))
		return err_set(err, "'%.120s' is not a record URI (at://<did>/<collection>/<rkey>)",
		               uri);
	char auth[ATP_DID_MAX], rk[ATP_RKEY_MAX];
	size_t an = (size_t)(s1 - a), cn = (size_t)(s2 - s1 - 1), rn = strlen(s2 + 1);
	if (an >= sizeof auth || rn >= sizeof rk)
		return err_set(err, "a part of '%.120s' is too long", uri);
	memcpy(auth, a, an);
	auth[an] = '\0';
	memcpy(rk, s2 + 1, rn);
	rk[rn] = '\0';
	if (!atp_valid_did(auth) && !atp_valid_handle(auth))
		return err_set(err, "the authority '%s' of '%.120s' is neither a DID nor a handle",
		               auth, uri);
	if (!valid_nsid(s1 + 1, cn))
		return err_set(err, "the collection of '%.120s' is not an NSID", uri);
	if (!atp_valid_rkey(rk))
		return err_set(err, "the record key '%s' of '%.120s' is not valid", rk, uri);
	if (copy_part(did, did_cap, auth, an) || copy_part(collection, coll_cap, s1 + 1, cn) ||
	    copy_part(rkey, rkey_cap, rk, rn))
		return err_set(err, "a part of '%.120s' does not fit the caller's buffer", uri);
	return 0;
}

char *atp_post_web_url(const char *uri)
{
	char did[ATP_DID_MAX], coll[128], rkey[ATP_RKEY_MAX];
	if (atp_uri_parse(uri, did, sizeof did, coll, sizeof coll, rkey, sizeof rkey, NULL) != 0 ||
	    strcmp(coll, ATP_COLL_POST) != 0)
		return NULL;
	return xasprintf("https://bsky.app/profile/%s/post/%s", did, rkey);
}

/* --- facets ----------------------------------------------------------------------- */

static bool is_ws(unsigned char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}

/* The anchoring of bare links, mentions and tags: the start of the text, or
 * after whitespace or '('. */
static bool anchored(const char *t, size_t i)
{
	return i == 0 || is_ws((unsigned char)t[i - 1]) || t[i - 1] == '(';
}

static bool in_range(const struct atp_facets *f, size_t pos)
{
	for (size_t i = 0; i < f->n; i++)
		if (pos >= f->items[i].byte_start && pos < f->items[i].byte_end)
			return true;
	return false;
}

static void add_facet(struct atp_facets *f, enum atp_facet_kind kind, size_t start, size_t end,
                      char *value)
{
	if (f->n >= ATP_FACETS_MAX) {
		free(value);
		return;
	}
	struct atp_facet *x = &f->items[f->n++];
	x->kind = kind;
	x->byte_start = start;
	x->byte_end = end;
	x->value = value;
	x->did = NULL;
}

static size_t trim_trailing(const char *t, size_t start, size_t end, const char *set)
{
	while (end > start && strchr(set, t[end - 1]))
		end--;
	return end;
}

static bool url_stop(unsigned char ch, bool bare)
{
	return is_ws(ch) || ch == '<' || ch == '>' || ch == '"' || ch == ']' || (bare && ch == ')');
}

static void detect_links(const char *t, size_t len, struct atp_facets *f)
{
	for (size_t i = 0; i < len;) {
		size_t skip = 0;
		if (len - i >= 8 && strncmp(t + i, "https://", 8) == 0)
			skip = 8;
		else if (len - i >= 7 && strncmp(t + i, "http://", 7) == 0)
			skip = 7;
		if (!skip) {
			i++;
			continue;
		}
		size_t e = i + skip;
		while (e < len && !url_stop((unsigned char)t[e], false) && t[e] != '\0')
			e++;
		size_t end = trim_trailing(t, i + skip, e, ".,;:!?)");
		if (end > i + skip && utf8_valid(t + i, end - i))
			add_facet(f, ATP_FACET_LINK, i, end, xstrndup(t + i, end - i));
		i = e > i ? e : i + 1;
	}
}

static const char *const bare_hosts[] = {"github.com/", "gitlab.com/", "bitbucket.org/",
                                         "npmjs.com/",  "crates.io/",  "pypi.org/"};

static void detect_bare_links(const char *t, size_t len, struct atp_facets *f)
{
	size_t n_pass1 = f->n;
	for (size_t i = 0; i < len; i++) {
		if (!anchored(t, i))
			continue;
		for (size_t h = 0; h < sizeof bare_hosts / sizeof bare_hosts[0]; h++) {
			size_t hl = strlen(bare_hosts[h]);
			if (len - i < hl || strncasecmp(t + i, bare_hosts[h], hl) != 0)
				continue;
			bool inside = false;
			for (size_t k = 0; k < n_pass1; k++)
				if (i >= f->items[k].byte_start && i < f->items[k].byte_end)
					inside = true;
			if (inside)
				break;
			size_t e = i + hl;
			while (e < len && !url_stop((unsigned char)t[e], true) && t[e] != '\0')
				e++;
			size_t end = trim_trailing(t, i + hl, e, ".,;:!?)");
			if (end > i + hl && utf8_valid(t + i, end - i)) {
				char *uri = xasprintf("https://%.*s", (int)(end - i), t + i);
				add_facet(f, ATP_FACET_LINK, i, end, uri);
			}
			i = e - 1;
			break;
		}
	}
}

static void detect_mentions(const char *t, size_t len, struct atp_facets *f)
{
	for (size_t i = 0; i < len; i++) {
		if (t[i] != '@' || !anchored(t, i) || in_range(f, i))
			continue;
		size_t e = i + 1;
		while (e < len && (is_alnum_c(t[e]) || t[e] == '.' || t[e] == '-'))
			e++;
		size_t end = trim_trailing(t, i + 1, e, ".");
		if (handle_ok(t + i + 1, end - i - 1)) {
			char *h = xstrndup(t + i + 1, end - i - 1);
			for (char *p = h; *p; p++)
				*p = (char)tolower((unsigned char)*p);
			add_facet(f, ATP_FACET_MENTION, i, end, h);
		}
		i = e - 1;
	}
}

static bool tag_follow_ok(const char *t, size_t len, size_t e)
{
	return e == len || is_ws((unsigned char)t[e]) || strchr(").,!?;:-", t[e]);
}

static void detect_tags(const char *t, size_t len, struct atp_facets *f)
{
	for (size_t i = 0; i < len; i++) {
		if ((t[i] != '#' && t[i] != '$') || !anchored(t, i) || in_range(f, i))
			continue;
		size_t e = i + 1;
		if (t[i] == '$') {
			while (e < len && e - i <= 6 && t[e] >= 'A' && t[e] <= 'Z')
				e++;
			if (e == i + 1 || (e < len && t[e] >= 'A' && t[e] <= 'Z'))
				continue;
		} else {
			if (e >= len || !is_alpha_c(t[e]))
				continue;
			while (e < len && (is_alnum_c(t[e]) || t[e] == '_' || t[e] == '-'))
				e++;
		}
		if (!tag_follow_ok(t, len, e))
			continue;
		size_t n = e - i - 1;
		if (n > ATP_TAG_MAX_BYTES || n > ATP_TAG_MAX_GRAPHEMES)
			continue; /* ASCII: bytes = graphemes */
		add_facet(f, ATP_FACET_TAG, i, e, xstrndup(t + i + 1, n));
		i = e - 1;
	}
}

void atp_facets_detect(const char *text, size_t len, struct atp_facets *out)
{
	memset(out, 0, sizeof *out);
	if (!text)
		return;
	detect_links(text, len, out);
	detect_bare_links(text, len, out);
	detect_mentions(text, len, out);
	detect_tags(text, len, out);
}

size_t atp_facets_set_did(struct atp_facets *f, const char *handle, const char *did)
{
	size_t n = 0;
	if (!handle || !did || !atp_valid_did(did))
		return 0;
	if (handle[0] == '@')
		handle++;
	for (size_t i = 0; i < f->n; i++) {
		struct atp_facet *x = &f->items[i];
		if (x->kind != ATP_FACET_MENTION || strcasecmp(x->value, handle) != 0)
			continue;
		free(x->did);
		x->did = xstrdup(did);
		n++;
	}
	return n;
}

void atp_facets_free(struct atp_facets *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++) {
		free(f->items[i].value);
		free(f->items[i].did);
	}
	f->n = 0;
}

static int cmp_start(const void *a, const void *b)
{
	const struct atp_facet *x = *(const struct atp_facet *const *)a;
	const struct atp_facet *y = *(const struct atp_facet *const *)b;
	return x->byte_start < y->byte_start ? -1 : x->byte_start > y->byte_start;
}

cJSON *atp_facets_json(const struct atp_facets *f)
{
	if (!f || f->n == 0)
		return NULL;
	const struct atp_facet *order[ATP_FACETS_MAX];
	size_t n = 0;
	for (size_t i = 0; i < f->n; i++) {
		if (f->items[i].kind == ATP_FACET_MENTION && !f->items[i].did)
			continue;
		order[n++] = &f->items[i];
	}
	if (n == 0)
		return NULL;
	qsort(order, n, sizeof order[0], cmp_start);
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		const struct atp_facet *x = order[i];
		cJSON *fc = cJSON_CreateObject();
		cJSON *idx = cJSON_AddObjectToObject(fc, "index");
		cJSON_AddNumberToObject(idx, "byteStart", (double)x->byte_start);
		cJSON_AddNumberToObject(idx, "byteEnd", (double)x->byte_end);
		cJSON *feats = cJSON_AddArrayToObject(fc, "features");
		cJSON *ft = cJSON_CreateObject();
		switch (x->kind) {
		case ATP_FACET_LINK:
			cJSON_AddStringToObject(ft, "$type", "app.bsky.richtext.facet#link");
			cJSON_AddStringToObject(ft, "uri", x->value);
			break;
		case ATP_FACET_MENTION:
			cJSON_AddStringToObject(ft, "$type", "app.bsky.richtext.facet#mention");
			cJSON_AddStringToObject(ft, "did", x->did);
			break;
		case ATP_FACET_TAG:
			cJSON_AddStringToObject(ft, "$type", "app.bsky.richtext.facet#tag");
			cJSON_AddStringToObject(ft, "tag", x->value);
			break;
		}
		cJSON_AddItemToArray(feats, ft);
		cJSON_AddItemToArray(arr, fc);
	}
	return arr;
}

/* --- records ------------------------------------------------------------------------ */

int atp_post_check_text(const char *text, size_t len, struct ga_err *err)
{
	if (!text || len == 0)
		return err_set(err, "the post is empty; Bluesky posts without an embed need text");
	if (!utf8_valid(text, len) || memchr(text, '\0', len))
		return err_set(err, "the post is not valid UTF-8 text");
	size_t g = utf8_graphemes(text, len);
	if (g > ATP_POST_MAX_GRAPHEMES)
		return err_set(err,
		               "the post is %zu graphemes; Bluesky allows %d (shorten it, nothing "
		               "was cut)",
		               g, ATP_POST_MAX_GRAPHEMES);
	if (len > ATP_POST_MAX_BYTES)
		return err_set(err, "the post is %zu bytes of UTF-8; Bluesky allows %d", len,
		               ATP_POST_MAX_BYTES);
	return 0;
}

static bool cid_ok(const char *cid)
{
	size_t n = strlen(cid);
	if (n < 8 || n >= ATP_CID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum_c(cid[i]))
			return false;
	return true;
}

static int check_ref(const struct atp_strong_ref *r, const char *which, struct ga_err *err)
{
	struct ga_err e = {{0}};
	if (atp_uri_parse(r->uri, NULL, 0, NULL, 0, NULL, 0, &e) != 0)
		return err_set(err, "the reply's %s: %s", which, e.msg);
	if (!cid_ok(r->cid))
		return err_set(err, "the reply's %s has no valid CID ('%.60s')", which, r->cid);
	return 0;
}

/* A loose BCP-47 check: a 2-3 letter language, then subtags of 1-8
 * letters/digits. */
static bool lang_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 2 || n >= ATP_LANG_MAX)
		return false;
	size_t i = 0;
	while (i < n && is_alpha_c(s[i]))
		i++;
	if (i < 2 || i > 3)
		return false;
	while (i < n) {
		if (s[i] != '-')
			return false;
		size_t st = ++i;
		while (i < n && is_alnum_c(s[i]))
			i++;
		if (i == st || i - st > 8)
			return false;
	}
	return true;
}

static cJSON *ref_json(const struct atp_strong_ref *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "uri", r->uri);
	cJSON_AddStringToObject(o, "cid", r->cid);
	return o;
}

static int key_ok(const char *k, struct ga_err *err)
{
	size_t n = strlen(k);
	if (n == 0 || n > IDEM_KEY_MAX)
		return err_set(err, "the idempotency key must be 1..%d bytes", IDEM_KEY_MAX);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)k[i] < 0x21 || (unsigned char)k[i] > 0x7e)
			return err_set(err, "the idempotency key must be printable ASCII");
	return 0;
}

cJSON *atp_post_record(const struct atp_post_in *in, struct ga_err *err)
{
	if (atp_post_check_text(in->text, in->text_len, err) != 0)
		return NULL;
	if (in->reply && (check_ref(&in->reply->root, "root", err) != 0 ||
	                  check_ref(&in->reply->parent, "parent", err) != 0))
		return NULL;
	if (in->n_langs > ATP_POST_MAX_LANGS) {
		err_set(err, "a post names at most %d languages, not %zu", ATP_POST_MAX_LANGS,
		        in->n_langs);
		return NULL;
	}
	for (size_t i = 0; i < in->n_langs; i++) {
		if (!in->langs[i] || !lang_ok(in->langs[i])) {
			err_set(err, "'%.20s' is not a language tag (BCP-47, e.g. \"en\")",
			        in->langs[i] ? in->langs[i] : "(null)");
			return NULL;
		}
	}
	if (in->idem_key && key_ok(in->idem_key, err) != 0)
		return NULL;
	char ts[TIME_ISO_LEN + 1];
	cJSON *rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "$type", ATP_COLL_POST);
	char *text = xstrndup(in->text, in->text_len);
	cJSON_AddStringToObject(rec, "text", text);
	free(text);
	cJSON_AddStringToObject(rec, "createdAt", time_format_iso(in->created_at_ms, ts));
	if (in->reply) {
		cJSON *r = cJSON_AddObjectToObject(rec, "reply");
		cJSON_AddItemToObject(r, "root", ref_json(&in->reply->root));
		cJSON_AddItemToObject(r, "parent", ref_json(&in->reply->parent));
	}
	cJSON *facets = atp_facets_json(in->facets);
	if (facets)
		cJSON_AddItemToObject(rec, "facets", facets);
	if (in->n_langs) {
		cJSON *l = cJSON_AddArrayToObject(rec, "langs");
		for (size_t i = 0; i < in->n_langs; i++)
			cJSON_AddItemToArray(l, cJSON_CreateString(in->langs[i]));
	}
	if (in->chain >= 0)
		cJSON_AddNumberToObject(rec, ATP_FIELD_CHAIN, (double)in->chain);
	if (in->idem_key)
		cJSON_AddStringToObject(rec, ATP_FIELD_KEY, in->idem_key);
	return rec;
}

cJSON *atp_like_record(const struct atp_strong_ref *subject, int64_t created_at_ms,
                       const char *idem_key, struct ga_err *err)
{
	struct ga_err e = {{0}};
	if (atp_uri_parse(subject->uri, NULL, 0, NULL, 0, NULL, 0, &e) != 0) {
		err_set(err, "the liked post: %s", e.msg);
		return NULL;
	}
	if (!cid_ok(subject->cid)) {
		err_set(err, "the liked post has no valid CID ('%.60s')", subject->cid);
		return NULL;
	}
	if (idem_key && key_ok(idem_key, err) != 0)
		return NULL;
	char ts[TIME_ISO_LEN + 1];
	cJSON *rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "$type", ATP_COLL_LIKE);
	cJSON_AddItemToObject(rec, "subject", ref_json(subject));
	cJSON_AddStringToObject(rec, "createdAt", time_format_iso(created_at_ms, ts));
	if (idem_key)
		cJSON_AddStringToObject(rec, ATP_FIELD_KEY, idem_key);
	return rec;
}

cJSON *atp_follow_record(const char *did, int64_t created_at_ms, struct ga_err *err)
{
	if (!atp_valid_did(did)) {
		err_set(err, "'%.80s' is not a DID; a follow names the account by its DID",
		        did ? did : "(null)");
		return NULL;
	}
	char ts[TIME_ISO_LEN + 1];
	cJSON *rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "$type", ATP_COLL_FOLLOW);
	cJSON_AddStringToObject(rec, "subject", did);
	cJSON_AddStringToObject(rec, "createdAt", time_format_iso(created_at_ms, ts));
	return rec;
}

static int ref_from_json(const cJSON *o, const char *which, struct atp_strong_ref *out,
                         struct ga_err *err)
{
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "uri");
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "cid");
	if (!cJSON_IsObject(o) || !cJSON_IsString(u) || !cJSON_IsString(c))
		return err_set(err, "reply.%s must be an object with string \"uri\" and \"cid\"",
		               which);
	if (strlen(u->valuestring) >= sizeof out->uri || strlen(c->valuestring) >= sizeof out->cid)
		return err_set(err, "reply.%s has a URI or CID that is too long", which);
	snprintf(out->uri, sizeof out->uri, "%s", u->valuestring);
	snprintf(out->cid, sizeof out->cid, "%s", c->valuestring);
	return check_ref(out, which, err);
}

int atp_reply_ref_from_json(const cJSON *reply, struct atp_reply_ref *out, struct ga_err *err)
{
	if (!cJSON_IsObject(reply))
		return err_set(err, "the reply refs must be an object {root, parent}");
	const cJSON *inner = cJSON_GetObjectItemCaseSensitive(reply, "reply");
	if (cJSON_IsObject(inner))
		reply = inner;
	memset(out, 0, sizeof *out);
	if (ref_from_json(cJSON_GetObjectItemCaseSensitive(reply, "parent"), "parent", &out->parent,
	                  err) != 0)
		return -1;
	return ref_from_json(cJSON_GetObjectItemCaseSensitive(reply, "root"), "root", &out->root,
	                     err);
}

int atp_reply_ref_for(const struct atp_strong_ref *parent, const cJSON *parent_record,
                      struct atp_reply_ref *out, struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	if (check_ref(parent, "parent", err) != 0)
		return -1;
	out->parent = *parent;
	const cJSON *reply = cJSON_GetObjectItemCaseSensitive(parent_record, "reply");
	const cJSON *root = cJSON_GetObjectItemCaseSensitive(reply, "root");
	if (root) {
		struct ga_err e = {{0}};
		if (ref_from_json(root, "root", &out->root, &e) != 0)
			return err_set(err, "the parent post's own reply root is unusable: %s",
			               e.msg);
		return 0;
	}
	out->root = *parent;
	return 0;
}

int64_t atp_record_chain(const cJSON *record)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(record, ATP_FIELD_CHAIN);
	if (!cJSON_IsNumber(c) || c->valuedouble < 0 || c->valuedouble > 1e9 ||
	    c->valuedouble != (double)(int64_t)c->valuedouble)
		return -1;
	return (int64_t)c->valuedouble;
}

const char *atp_record_key(const cJSON *record)
{
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(record, ATP_FIELD_KEY);
	return cJSON_IsString(k) ? k->valuestring : NULL;
}
