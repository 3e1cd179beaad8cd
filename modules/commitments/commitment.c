/*
 * commitment — the commitment schema and the extraction parse. See
 * commitment.h.
 */
#include "modules/commitments/commitment.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "common/utf8.h"
#include "common/xalloc.h"

static const char *const type_names[CMT_TYPE_COUNT] = {
        "create_issue", "create_plan", "comment_issue", "post_bluesky", "create_workspace"};

#define TYPE_LIST "create_issue, create_plan, comment_issue, post_bluesky, create_workspace"
#define ORG_MAX   39 /* GitHub's longest user or organisation name */

const char *cmt_type_name(enum cmt_type t)
{
	return (unsigned)t < CMT_TYPE_COUNT ? type_names[t] : "?";
}

int cmt_type_parse(const char *s)
{
	for (int i = 0; s && i < CMT_TYPE_COUNT; i++)
		if (strcmp(s, type_names[i]) == 0)
			return i;
	return -1;
}

/* §8.3 step 1: the alias map, exact and case-sensitive. */
static const struct {
	const char *alias, *canonical;
} aliases[] = {
        {"action", "type"},        {"commitmentType", "type"}, {"kind", "type"},
        {"repository", "repo"},    {"name", "title"},          {"subject", "title"},
        {"body", "description"},   {"details", "description"}, {"text", "content"},
        {"message", "content"},    {"post", "content"},        {"issueNumber", "issue_number"},
        {"issue", "issue_number"}, {"number", "issue_number"}, {"owner", "org"},
        {"organization", "org"},   {"organisation", "org"},
};

static const char *canonical_key(const char *k)
{
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
		if (strcmp(k, aliases[i].alias) == 0)
			return aliases[i].canonical;
	return k;
}

cJSON *cmt_normalize(const cJSON *item)
{
	if (!cJSON_IsObject(item))
		return NULL;
	cJSON *out = cJSON_CreateObject();
	for (const cJSON *kv = item->child; kv; kv = kv->next) {
		if (!kv->string)
			continue;
		const char *c = canonical_key(kv->string);
		cJSON *cur = cJSON_GetObjectItemCaseSensitive(out, c);
		/* Merge rule (§8.3 step 2): write only over absent, null or "". */
		bool writable = !cur || cJSON_IsNull(cur) ||
		                (cJSON_IsString(cur) && cur->valuestring[0] == '\0');
		if (!writable)
			continue;
		cJSON *v = cJSON_Duplicate(kv, true);
		if (cur)
			cJSON_ReplaceItemInObjectCaseSensitive(out, c, v);
		else
			cJSON_AddItemToObject(out, c, v);
	}
	return out;
}

/* --- field checks ------------------------------------------------------ */

static bool blank(const char *s)
{
	for (; s && *s; s++)
		if (!isspace((unsigned char)*s))
			return false;
	return true;
}

int cmt_take_string(const cJSON *o, const char *field, size_t max, char **out, char *why,
                    size_t whylen)
{
	*out = NULL;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v)) {
		snprintf(why, whylen, "%s must be a string", field);
		return -1;
	}
	size_t n = strlen(v->valuestring);
	if (n > max) {
		snprintf(why, whylen, "%s is %zu bytes, more than %zu", field, n, max);
		return -1;
	}
	if (!utf8_valid(v->valuestring, n)) {
		snprintf(why, whylen, "%s is not valid UTF-8", field);
		return -1;
	}
	*out = xstrdup(v->valuestring);
	return 0;
}

static bool repo_part_ok(const char *s, size_t n)
{
	if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!(isalnum(c) || c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

/* "owner/name", "github.com/owner/name", "https://github.com/owner/name(.git)(/)"
 * → "owner/name" in a new string; NULL when it is none of those (§16.9). */
static char *clean_repo(const char *in)
{
	const char *s = in;
	while (isspace((unsigned char)*s))
		s++;
	if (strncmp(s, "https://", 8) == 0)
		s += 8;
	else if (strncmp(s, "http://", 7) == 0)
		s += 7;
	if (strncmp(s, "www.", 4) == 0)
		s += 4;
	if (strncmp(s, "github.com/", 11) == 0)
		s += 11;
	size_t n = strlen(s);
	while (n > 0 && (isspace((unsigned char)s[n - 1]) || s[n - 1] == '/'))
		n--;
	if (n > 4 && strncmp(s + n - 4, ".git", 4) == 0)
		n -= 4;
	const char *slash = memchr(s, '/', n);
	if (!slash)
		return NULL;
	size_t a = (size_t)(slash - s), b = n - a - 1;
	if (!repo_part_ok(s, a) || !repo_part_ok(slash + 1, b) || a > 100 || b > 100)
		return NULL;
	return xstrndup(s, n);
}

/* create_workspace's organisation: org (a GitHub owner name: letters,
 * digits, single '-' inside, at most ORG_MAX), else the owner of repo,
 * else none. 0, or -1 with why. */
static int check_org(const cJSON *o, struct cmt_item *c, char *why, size_t whylen)
{
	char *org = NULL;
	if (cmt_take_string(o, "org", 256, &org, why, whylen) < 0)
		return -1;
	if (blank(org)) {
		free(org);
		org = NULL;
		if (c->repo)
			org = xstrndup(c->repo, strcspn(c->repo, "/"));
	}
	if (!org)
		return 0;
	size_t n = strlen(org);
	bool ok = n > 0 && n <= ORG_MAX && org[0] != '-' && org[n - 1] != '-' && !strstr(org, "--");
	for (size_t i = 0; ok && i < n; i++)
		ok = isalnum((unsigned char)org[i]) || org[i] == '-';
	if (!ok) {
		snprintf(why, whylen, "org: \"%.60s\" is not a GitHub organisation name", org);
		free(org);
		return -1;
	}
	c->org = org;
	return 0;
}

void cmt_item_clear(struct cmt_item *c)
{
	free(c->repo);
	free(c->title);
	free(c->description);
	free(c->content);
	free(c->org);
	memset(c, 0, sizeof *c);
}

/* Checks one normalised object; 0 and *c filled, or -1 with why. */
static int check_item(const cJSON *o, bool social_only, struct cmt_item *c, char *why,
                      size_t whylen)
{
	memset(c, 0, sizeof *c);
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
	if (!t || cJSON_IsNull(t)) {
		snprintf(why, whylen, "type: required (one of " TYPE_LIST ")");
		return -1;
	}
	int ty = cJSON_IsString(t) ? cmt_type_parse(t->valuestring) : -1;
	if (ty < 0) {
		char *p = cJSON_PrintUnformatted(t);
		snprintf(why, whylen, "type: %.64s is not one of " TYPE_LIST, p ? p : "?");
		free(p);
		return -1;
	}
	c->type = (enum cmt_type)ty;
	char *repo = NULL;
	if (cmt_take_string(o, "repo", 512, &repo, why, whylen) < 0 ||
	    cmt_take_string(o, "title", CMT_TITLE_MAX_BYTES, &c->title, why, whylen) < 0 ||
	    cmt_take_string(o, "description", CMT_FIELD_MAX_BYTES, &c->description, why, whylen) <
	            0 ||
	    cmt_take_string(o, "content", CMT_FIELD_MAX_BYTES, &c->content, why, whylen) < 0) {
		free(repo);
		cmt_item_clear(c);
		return -1;
	}
	if (repo && !blank(repo)) {
		c->repo = clean_repo(repo);
		if (!c->repo) {
			snprintf(why, whylen, "repo: \"%.100s\" is not owner/name", repo);
			free(repo);
			cmt_item_clear(c);
			return -1;
		}
	}
	free(repo);

	const cJSON *num = cJSON_GetObjectItemCaseSensitive(o, "issue_number");
	if (num && !cJSON_IsNull(num)) {
		double v = -1;
		if (cJSON_IsNumber(num)) {
			v = num->valuedouble;
		} else if (cJSON_IsString(num)) {
			/* "42" and "#42": the model often quotes numbers (§8.3). */
			const char *s = num->valuestring;
			if (*s == '#')
				s++;
			char *end = NULL;
			if (*s >= '0' && *s <= '9' && strlen(s) <= 12) {
				v = strtod(s, &end);
				if (*end)
					v = -1;
			}
		}
		if (!(v >= 1 && v <= 1e12 && floor(v) == v)) {
			char *p = cJSON_PrintUnformatted(num);
			snprintf(why, whylen, "issue_number: %.32s is not a positive whole number",
			         p ? p : "?");
			free(p);
			cmt_item_clear(c);
			return -1;
		}
		c->issue_number = (int64_t)v;
	}
	if (c->type == CMT_CREATE_WORKSPACE && check_org(o, c, why, whylen) < 0) {
		cmt_item_clear(c);
		return -1;
	}
	if (c->type != CMT_CREATE_WORKSPACE && blank(c->title) && blank(c->description) &&
	    blank(c->content)) {
		snprintf(why, whylen,
		         ": At least one content field (title, description, or "
		         "content) required");
		cmt_item_clear(c);
		return -1;
	}
	if (social_only && c->type != CMT_POST_BLUESKY) {
		snprintf(why, whylen, "Social-only agent cannot make a %s commitment (GitHub work)",
		         type_names[c->type]);
		cmt_item_clear(c);
		return -1;
	}
	return 0;
}

static void add_drop(struct cmt_list *out, const cJSON *raw, const char *why)
{
	out->ndropped_total++;
	if (out->ndropped >= CMT_MAX)
		return;
	struct cmt_dropped *d = &out->dropped[out->ndropped++];
	char *p = raw ? cJSON_PrintUnformatted(raw) : NULL;
	snprintf(d->raw, sizeof d->raw, "%s", p ? p : "null");
	free(p);
	snprintf(d->reason, sizeof d->reason, "%s", why);
}

static void add_checked(struct cmt_list *out, const cJSON *raw, const cJSON *norm, bool social_only)
{
	char why[CMT_DROP_REASON_MAX];
	struct cmt_item c;
	if (check_item(norm, social_only, &c, why, sizeof why) < 0) {
		add_drop(out, raw, why);
		return;
	}
	if (out->n >= CMT_MAX) {
		cmt_item_clear(&c);
		snprintf(why, sizeof why, "more than %d commitments in one decision", CMT_MAX);
		add_drop(out, raw, why);
		return;
	}
	out->item[out->n++] = c;
}

void cmt_validate(const cJSON *array, bool social_only, struct cmt_list *out)
{
	if (!cJSON_IsArray(array))
		return;
	for (const cJSON *it = array->child; it; it = it->next) {
		if (!cJSON_IsObject(it)) {
			add_drop(out, it, "a commitment must be an object");
			continue;
		}
		cJSON *norm = cmt_normalize(it);
		add_checked(out, it, norm, social_only);
		cJSON_Delete(norm);
	}
}

void cmt_list_clear(struct cmt_list *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n && i < CMT_MAX; i++)
		cmt_item_clear(&c->item[i]);
	memset(c, 0, sizeof *c);
}

/* --- §8.4 extraction --------------------------------------------------- */

int cmt_extract_parse(const char *reply, size_t len, bool social_only, struct cmt_list *out,
                      struct ga_err *err)
{
	cmt_list_clear(out);
	if (!reply)
		return err_set(err, "no extraction reply");
	const char *s = reply, *e = reply + len;
	while (s < e && isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	if (e - s >= 3 && memcmp(s, "```", 3) == 0) {
		s += 3;
		if (e - s >= 4 && strncasecmp(s, "json", 4) == 0)
			s += 4;
		if (e - s >= 3 && memcmp(e - 3, "```", 3) == 0)
			e -= 3;
	}
	struct ga_err jerr = {{0}};
	cJSON *j = json_parse(s, (size_t)(e - s), &jerr);
	if (!j)
		return err_set(err, "the extraction reply is not JSON: %s", jerr.msg);
	if (!cJSON_IsArray(j)) {
		cJSON_Delete(j);
		return err_set(err, "the extraction reply must be a JSON array of commitments");
	}
	for (const cJSON *it = j->child; it; it = it->next) {
		const char *conf = json_string_or(it, "confidence", NULL);
		if (!cJSON_IsObject(it)) {
			add_drop(out, it, "an extracted commitment must be an object");
			continue;
		}
		if (!conf ||
		    (strcmp(conf, "high") && strcmp(conf, "medium") && strcmp(conf, "low"))) {
			add_drop(out, it, "confidence: must be high, medium or low");
			continue;
		}
		if (strcmp(conf, "low") == 0)
			continue; /* low confidence is not a promise (§8.4); not an error */
		const cJSON *desc = cJSON_GetObjectItemCaseSensitive(it, "description");
		if (!cJSON_IsString(desc) || blank(desc->valuestring)) {
			add_drop(out, it, "description: required non-empty string");
			continue;
		}
		const cJSON *params = cJSON_GetObjectItemCaseSensitive(it, "params");
		if (params && !cJSON_IsNull(params) && !cJSON_IsObject(params)) {
			add_drop(out, it, "params: must be an object");
			continue;
		}
		/* Rebuild as a space_decision commitment and check it like one. */
		cJSON *o = cJSON_CreateObject();
		const cJSON *ty = cJSON_GetObjectItemCaseSensitive(it, "type");
		if (ty)
			cJSON_AddItemToObject(o, "type", cJSON_Duplicate(ty, true));
		cJSON_AddStringToObject(o, "description", desc->valuestring);
		const cJSON *ti = cJSON_GetObjectItemCaseSensitive(params, "title");
		const cJSON *rp = cJSON_GetObjectItemCaseSensitive(params, "repo");
		bool ws = cJSON_IsString(ty) && strcmp(ty->valuestring, "create_workspace") == 0;
		if (ws && !ti)
			ti = cJSON_GetObjectItemCaseSensitive(params, "name");
		if (ti)
			cJSON_AddItemToObject(o, "title", cJSON_Duplicate(ti, true));
		if (rp)
			cJSON_AddItemToObject(o, "repo", cJSON_Duplicate(rp, true));
		const cJSON *org = cJSON_GetObjectItemCaseSensitive(params, "org");
		if (ws && !org)
			org = cJSON_GetObjectItemCaseSensitive(params, "owner");
		if (ws && org)
			cJSON_AddItemToObject(o, "org", cJSON_Duplicate(org, true));
		if (cJSON_IsString(ty) && strcmp(ty->valuestring, "post_bluesky") == 0)
			cJSON_AddStringToObject(o, "content", desc->valuestring);
		add_checked(out, it, o, social_only);
		cJSON_Delete(o);
	}
	cJSON_Delete(j);
	return 0;
}
