/*
 * llmfake — see llmfake.h and README.md.
 */
#include "tests/fakes/llm/llmfake.h"

#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct entry {
	cJSON *spec; /* validated entry object */
	long times;  /* uses left; -1 = unlimited */
};

struct record {
	cJSON *body;    /* NULL when not JSON */
	cJSON *headers; /* {"name": "value"} as received */
};

struct llmfake {
	struct httpfake *http;
	char base_url[64];
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct entry entries[LLMFAKE_ENTRIES_MAX];
	size_t n_entries;
	struct record records[LLMFAKE_RECORD_MAX];
	size_t n_calls; /* may exceed the record */
};

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "llmfake: %s%s\n", what, detail ? detail : "");
	abort();
}

static char *dupstr(const char *s)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		die("out of memory", NULL);
	return d;
}

/* --- script validation ------------------------------------------------------- */

static int fail(char *err, size_t errlen, size_t i, const char *what)
{
	snprintf(err, errlen, "entry %zu: %s", i, what);
	return -1;
}

static int validate_entry(const cJSON *e, size_t i, char *err, size_t errlen)
{
	if (!cJSON_IsObject(e))
		return fail(err, errlen, i, "must be an object");
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "match");
	if (m && !cJSON_IsObject(m))
		return fail(err, errlen, i, "'match' must be an object");
	if (m) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "call");
		if (v && !cJSON_IsNumber(v))
			return fail(err, errlen, i, "'match.call' must be a number");
		v = cJSON_GetObjectItemCaseSensitive(m, "last_user_contains");
		if (v && !cJSON_IsString(v))
			return fail(err, errlen, i, "'match.last_user_contains' must be a string");
		v = cJSON_GetObjectItemCaseSensitive(m, "tools");
		if (v) {
			if (!cJSON_IsArray(v))
				return fail(err, errlen, i,
				            "'match.tools' must be an array of names");
			const cJSON *t;
			cJSON_ArrayForEach(t, v) if (!cJSON_IsString(t)) return fail(
			        err, errlen, i, "'match.tools' must be an array of names");
		}
		v = cJSON_GetObjectItemCaseSensitive(m, "tool_choice");
		if (v && !cJSON_IsString(v))
			return fail(err, errlen, i, "'match.tool_choice' must be a string");
		v = cJSON_GetObjectItemCaseSensitive(m, "any_contains");
		if (v && !cJSON_IsString(v))
			return fail(err, errlen, i, "'match.any_contains' must be a string");
		v = cJSON_GetObjectItemCaseSensitive(m, "after_tool");
		if (v && !cJSON_IsBool(v))
			return fail(err, errlen, i, "'match.after_tool' must be true or false");
	}
	const cJSON *caps = cJSON_GetObjectItemCaseSensitive(e, "captures");
	if (caps && !cJSON_IsObject(caps))
		return fail(err, errlen, i, "'captures' must be an object of name: regex");
	const cJSON *cap;
	cJSON_ArrayForEach(cap, caps)
	{
		regex_t re;
		if (!cJSON_IsString(cap) || regcomp(&re, cap->valuestring, REG_EXTENDED) != 0)
			return fail(err, errlen, i,
			            "each of 'captures' must be a valid extended regex");
		regfree(&re);
	}
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "tool_calls");
	if (v) {
		if (!cJSON_IsArray(v))
			return fail(err, errlen, i, "'tool_calls' must be an array");
		const cJSON *tc;
		cJSON_ArrayForEach(tc, v)
		{
			if (!cJSON_IsObject(tc) ||
			    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(tc, "name")))
				return fail(err, errlen, i,
				            "each of 'tool_calls' needs a string 'name'");
		}
	}
	v = cJSON_GetObjectItemCaseSensitive(e, "error");
	if (v &&
	    (!cJSON_IsObject(v) || !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(v, "status"))))
		return fail(err, errlen, i, "'error' must be an object with a numeric 'status'");
	v = cJSON_GetObjectItemCaseSensitive(e, "html");
	if (v && !cJSON_IsNumber(v))
		return fail(err, errlen, i, "'html' must be a status number");
	v = cJSON_GetObjectItemCaseSensitive(e, "action");
	if (v && (!cJSON_IsString(v) ||
	          (strcmp(v->valuestring, "drop") != 0 && strcmp(v->valuestring, "hang") != 0 &&
	           strcmp(v->valuestring, "respond") != 0)))
		return fail(err, errlen, i, "'action' must be \"respond\", \"drop\" or \"hang\"");
	v = cJSON_GetObjectItemCaseSensitive(e, "times");
	if (v && (!cJSON_IsNumber(v) || v->valuedouble < 1))
		return fail(err, errlen, i, "'times' must be a number >= 1");
	v = cJSON_GetObjectItemCaseSensitive(e, "body");
	if (v && !cJSON_IsString(v))
		return fail(err, errlen, i, "'body' must be a string (sent as is)");
	return 0;
}

int llmfake_load_script(struct llmfake *f, const char *json, char *err, size_t errlen)
{
	cJSON *root = cJSON_Parse(json);
	if (!root) {
		snprintf(err, errlen, "the script is not valid JSON");
		return -1;
	}
	const cJSON *list = root;
	if (cJSON_IsObject(root)) {
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(root, "responses");
		list = r ? r : NULL;
	}
	cJSON *single = NULL;
	if (!list) {
		/* one entry object */
		single = cJSON_CreateArray();
		cJSON_AddItemReferenceToArray(single, root);
		list = single;
	}
	if (!cJSON_IsArray(list)) {
		snprintf(err, errlen, "'responses' must be an array");
		cJSON_Delete(root);
		return -1;
	}
	size_t n = (size_t)cJSON_GetArraySize(list), i = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, list)
	{
		if (validate_entry(e, i++, err, errlen) != 0) {
			cJSON_Delete(single);
			cJSON_Delete(root);
			return -1;
		}
	}
	pthread_mutex_lock(&f->mu);
	if (f->n_entries + n > LLMFAKE_ENTRIES_MAX) {
		pthread_mutex_unlock(&f->mu);
		snprintf(err, errlen, "too many entries (limit %d)", LLMFAKE_ENTRIES_MAX);
		cJSON_Delete(single);
		cJSON_Delete(root);
		return -1;
	}
	cJSON_ArrayForEach(e, list)
	{
		struct entry *en = &f->entries[f->n_entries++];
		en->spec = cJSON_Duplicate(e, 1);
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "times");
		en->times = t ? (long)t->valuedouble : -1;
	}
	pthread_mutex_unlock(&f->mu);
	cJSON_Delete(single);
	cJSON_Delete(root);
	return 0;
}

int llmfake_load_script_file(struct llmfake *f, const char *path, char *err, size_t errlen)
{
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	char *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = (cap ? cap * 2 : 8192);
			if (cap > 16u * 1024 * 1024) {
				free(buf);
				fclose(fp);
				snprintf(err, errlen, "%s is larger than 16 MiB", path);
				return -1;
			}
			buf = realloc(buf, cap);
			if (!buf)
				die("out of memory", NULL);
		}
		size_t got = fread(buf + len, 1, 4096, fp);
		len += got;
		if (got < 4096)
			break;
	}
	fclose(fp);
	buf[len] = '\0';
	int rc = llmfake_load_script(f, buf, err, errlen);
	free(buf);
	return rc;
}

void llmfake_script(struct llmfake *f, const char *json)
{
	char err[256];
	if (llmfake_load_script(f, json, err, sizeof err) != 0)
		die("bad script in test: ", err);
}

void llmfake_reset(struct llmfake *f)
{
	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; i < f->n_entries; i++)
		cJSON_Delete(f->entries[i].spec);
	f->n_entries = 0;
	pthread_mutex_unlock(&f->mu);
}

/* --- matching ----------------------------------------------------------------------- */

static const char *last_user_text(const cJSON *body)
{
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(body, "messages");
	const char *last = "";
	const cJSON *m;
	cJSON_ArrayForEach(m, msgs)
	{
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
		if (cJSON_IsString(role) && strcmp(role->valuestring, "user") == 0 &&
		    cJSON_IsString(content))
			last = content->valuestring;
	}
	return last;
}

static bool offers_tool(const cJSON *body, const char *name)
{
	const cJSON *tools = cJSON_GetObjectItemCaseSensitive(body, "tools");
	const cJSON *t;
	cJSON_ArrayForEach(t, tools)
	{
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(fn, "name");
		if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
			return true;
	}
	return false;
}

static const char *tool_choice_of(const cJSON *body)
{
	const cJSON *tc = cJSON_GetObjectItemCaseSensitive(body, "tool_choice");
	if (cJSON_IsString(tc))
		return tc->valuestring;
	if (cJSON_IsObject(tc)) {
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(fn, "name");
		if (cJSON_IsString(n))
			return n->valuestring;
	}
	return "";
}

/* Is s a substring of some message's text (system, user, assistant, tool)? */
static bool any_contains(const cJSON *body, const char *s)
{
	const cJSON *m;
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(body, "messages"))
	{
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
		if (cJSON_IsString(c) && strstr(c->valuestring, s))
			return true;
	}
	return false;
}

static bool last_is_tool(const cJSON *body)
{
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(body, "messages");
	int n = cJSON_GetArraySize(msgs);
	const cJSON *role =
	        n > 0 ? cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, n - 1), "role")
	              : NULL;
	return cJSON_IsString(role) && strcmp(role->valuestring, "tool") == 0;
}

#define CAPTURE_MAX 128

/* The first match of the extended regex re in the messages (in order):
 * its first non-empty group (the whole match when it has none) into out.
 * false when no message matches. */
static bool capture(const cJSON *body, const char *re, char out[CAPTURE_MAX])
{
	regex_t rx;
	if (regcomp(&rx, re, REG_EXTENDED) != 0)
		return false;
	bool found = false;
	const cJSON *m;
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(body, "messages"))
	{
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
		regmatch_t g[10];
		if (!cJSON_IsString(c) || regexec(&rx, c->valuestring, 10, g, 0) != 0)
			continue;
		size_t k = 0;
		for (size_t j = 1; j < 10 && !k; j++)
			if (g[j].rm_so >= 0 && g[j].rm_eo > g[j].rm_so)
				k = j;
		size_t len = (size_t)(g[k].rm_eo - g[k].rm_so);
		if (len >= CAPTURE_MAX)
			len = CAPTURE_MAX - 1;
		memcpy(out, c->valuestring + g[k].rm_so, len);
		out[len] = '\0';
		found = true;
		break;
	}
	regfree(&rx);
	return found;
}

/* Replaces every string "{{name}}" under node by the capture name of
 * body (a number when it is all digits); "{{name}}" inside a longer
 * string is replaced as text. */
static void substitute(cJSON *node, const cJSON *caps, const cJSON *body)
{
	cJSON *c;
	cJSON_ArrayForEach(c, node)
	{
		if (!cJSON_IsString(c)) {
			substitute(c, caps, body);
			continue;
		}
		const cJSON *cap;
		cJSON_ArrayForEach(cap, caps)
		{
			char ph[CAPTURE_MAX + 8], val[CAPTURE_MAX];
			snprintf(ph, sizeof ph, "{{%s}}", cap->string);
			const char *at = strstr(c->valuestring, ph);
			if (!at || !capture(body, cap->valuestring, val))
				continue;
			bool digits = val[0] && strspn(val, "0123456789") == strlen(val);
			if (strcmp(c->valuestring, ph) == 0 && digits) {
				cJSON *num = cJSON_CreateNumber(atof(val));
				if (cJSON_IsObject(node)) /* the new item gets the key */
					cJSON_ReplaceItemInObjectCaseSensitive(node, c->string,
					                                       num);
				else
					cJSON_ReplaceItemViaPointer(node, c, num);
				substitute(node, caps, body); /* c is gone: walk again */
				return;
			}
			size_t n = strlen(c->valuestring) - strlen(ph) + strlen(val) + 1;
			char *t = malloc(n);
			if (!t)
				die("out of memory", NULL);
			snprintf(t, n, "%.*s%s%s", (int)(at - c->valuestring), c->valuestring, val,
			         at + strlen(ph));
			cJSON_SetValuestring(c, t);
			free(t);
		}
	}
}

static bool matches(const cJSON *spec, const cJSON *body, size_t call)
{
	const cJSON *cap;
	cJSON_ArrayForEach(cap, cJSON_GetObjectItemCaseSensitive(spec, "captures"))
	{
		char val[CAPTURE_MAX];
		if (!body || !capture(body, cap->valuestring, val))
			return false;
	}
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(spec, "match");
	if (!m)
		return true;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "call");
	if (v && (size_t)v->valuedouble != call)
		return false;
	v = cJSON_GetObjectItemCaseSensitive(m, "last_user_contains");
	if (v && (!body || !strstr(last_user_text(body), v->valuestring)))
		return false;
	v = cJSON_GetObjectItemCaseSensitive(m, "tools");
	const cJSON *t;
	cJSON_ArrayForEach(t, v) if (!body || !offers_tool(body, t->valuestring)) return false;
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "no_tools")) && body &&
	    cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(body, "tools")) > 0)
		return false;
	v = cJSON_GetObjectItemCaseSensitive(m, "tool_choice");
	if (v && (!body || strcmp(tool_choice_of(body), v->valuestring) != 0))
		return false;
	v = cJSON_GetObjectItemCaseSensitive(m, "any_contains");
	if (v && (!body || !any_contains(body, v->valuestring)))
		return false;
	v = cJSON_GetObjectItemCaseSensitive(m, "after_tool");
	if (v && (!body || last_is_tool(body) != cJSON_IsTrue(v)))
		return false;
	return true;
}

/* --- answering --------------------------------------------------------------------------- */

static void set_json(struct httpfake_response *resp, int status, cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);
	httpfake_response_json(resp, status, s);
	free(s);
}

static void answer_completion(const cJSON *spec, size_t call, struct httpfake_response *resp)
{
	cJSON *o = cJSON_CreateObject();
	char id[48];
	snprintf(id, sizeof id, "chatcmpl-fake-%zu", call);
	cJSON_AddStringToObject(o, "id", id);
	cJSON_AddStringToObject(o, "object", "chat.completion");
	cJSON_AddNumberToObject(o, "created", 1700000000);
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(spec, "model");
	cJSON_AddStringToObject(o, "model",
	                        cJSON_IsString(model) ? model->valuestring : "fake-model");
	cJSON *choices = cJSON_AddArrayToObject(o, "choices");
	cJSON *choice = cJSON_CreateObject();
	cJSON_AddItemToArray(choices, choice);
	cJSON_AddNumberToObject(choice, "index", 0);
	cJSON *msg = cJSON_AddObjectToObject(choice, "message");
	cJSON_AddStringToObject(msg, "role", "assistant");
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(spec, "content");
	if (cJSON_IsString(content))
		cJSON_AddStringToObject(msg, "content", content->valuestring);
	else
		cJSON_AddNullToObject(msg, "content");
	const cJSON *tcs = cJSON_GetObjectItemCaseSensitive(spec, "tool_calls");
	if (cJSON_GetArraySize(tcs) > 0) {
		cJSON *arr = cJSON_AddArrayToObject(msg, "tool_calls");
		size_t i = 0;
		const cJSON *tc;
		cJSON_ArrayForEach(tc, tcs)
		{
			cJSON *c = cJSON_CreateObject();
			const cJSON *tid = cJSON_GetObjectItemCaseSensitive(tc, "id");
			char buf[48];
			snprintf(buf, sizeof buf, "call_%zu_%zu", call, i++);
			if (!cJSON_IsFalse(tid)) /* "id": false leaves it out */
				cJSON_AddStringToObject(
				        c, "id", cJSON_IsString(tid) ? tid->valuestring : buf);
			cJSON_AddStringToObject(c, "type", "function");
			cJSON *fn = cJSON_AddObjectToObject(c, "function");
			cJSON_AddStringToObject(
			        fn, "name",
			        cJSON_GetObjectItemCaseSensitive(tc, "name")->valuestring);
			const cJSON *args = cJSON_GetObjectItemCaseSensitive(tc, "arguments");
			if (cJSON_IsString(args)) {
				cJSON_AddStringToObject(fn, "arguments", args->valuestring);
			} else if (args) {
				char *s = cJSON_PrintUnformatted(args);
				cJSON_AddStringToObject(fn, "arguments", s);
				free(s);
			} else {
				cJSON_AddStringToObject(fn, "arguments", "{}");
			}
			cJSON_AddItemToArray(arr, c);
		}
	}
	const cJSON *fr = cJSON_GetObjectItemCaseSensitive(spec, "finish_reason");
	cJSON_AddStringToObject(choice, "finish_reason",
	                        cJSON_IsString(fr)            ? fr->valuestring
	                        : cJSON_GetArraySize(tcs) > 0 ? "tool_calls"
	                                                      : "stop");
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(spec, "usage");
	if (cJSON_IsFalse(usage)) {
		/* "usage": false leaves it out, as some local servers do */
	} else {
		cJSON *u = cJSON_AddObjectToObject(o, "usage");
		double p = 10, c = 5;
		if (cJSON_IsObject(usage)) {
			const cJSON *pv = cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens");
			const cJSON *cv =
			        cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens");
			if (cJSON_IsNumber(pv))
				p = pv->valuedouble;
			if (cJSON_IsNumber(cv))
				c = cv->valuedouble;
		}
		cJSON_AddNumberToObject(u, "prompt_tokens", p);
		cJSON_AddNumberToObject(u, "completion_tokens", c);
		cJSON_AddNumberToObject(u, "total_tokens", p + c);
	}
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(spec, "status");
	set_json(resp, cJSON_IsNumber(st) ? (int)st->valuedouble : 200, o);
	cJSON_Delete(o);
}

static void answer(const cJSON *spec, size_t call, struct httpfake_response *resp)
{
	const cJSON *v;
	if ((v = cJSON_GetObjectItemCaseSensitive(spec, "error"))) {
		int status = (int)cJSON_GetObjectItemCaseSensitive(v, "status")->valuedouble;
		cJSON *o = cJSON_CreateObject();
		cJSON *e = cJSON_AddObjectToObject(o, "error");
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(v, "message");
		cJSON_AddStringToObject(e, "message",
		                        cJSON_IsString(m) ? m->valuestring : "scripted error");
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(v, "type");
		cJSON_AddStringToObject(e, "type",
		                        cJSON_IsString(type) ? type->valuestring : "fake_error");
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(v, "code");
		if (code)
			cJSON_AddItemToObject(e, "code", cJSON_Duplicate(code, 1));
		const cJSON *body_status = cJSON_GetObjectItemCaseSensitive(v, "body_status");
		set_json(resp, cJSON_IsNumber(body_status) ? (int)body_status->valuedouble : status,
		         o);
		cJSON_Delete(o);
		const cJSON *ra = cJSON_GetObjectItemCaseSensitive(v, "retry_after");
		if (cJSON_IsNumber(ra)) {
			char buf[32];
			snprintf(buf, sizeof buf, "%d", (int)ra->valuedouble);
			httpfake_response_header(resp, "Retry-After", buf);
		} else if (cJSON_IsString(ra)) {
			httpfake_response_header(resp, "Retry-After", ra->valuestring);
		}
	} else if ((v = cJSON_GetObjectItemCaseSensitive(spec, "html"))) {
		int status = (int)v->valuedouble;
		char page[512];
		int n = snprintf(page, sizeof page,
		                 "<!DOCTYPE html>\n<html><head><title>%d Bad Gateway</title></head>"
		                 "<body><center><h1>%d Bad Gateway</h1></center><hr>"
		                 "<center>nginx</center></body></html>\n",
		                 status, status);
		resp->status = status;
		httpfake_response_header(resp, "Content-Type", "text/html; charset=utf-8");
		httpfake_response_body(resp, page, (size_t)n);
	} else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(spec, "malformed"))) {
		static const char cut[] = "{\"id\":\"chatcmpl-x\",\"choices\":[{\"index\":0,\"mess";
		resp->status = 200;
		httpfake_response_header(resp, "Content-Type", "application/json");
		httpfake_response_body(resp, cut, sizeof cut - 1);
	} else if ((v = cJSON_GetObjectItemCaseSensitive(spec, "body"))) {
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(spec, "status");
		const cJSON *ct = cJSON_GetObjectItemCaseSensitive(spec, "content_type");
		resp->status = cJSON_IsNumber(st) ? (int)st->valuedouble : 200;
		httpfake_response_header(resp, "Content-Type",
		                         cJSON_IsString(ct) ? ct->valuestring : "application/json");
		httpfake_response_body(resp, v->valuestring, strlen(v->valuestring));
	} else {
		answer_completion(spec, call, resp);
	}
	const cJSON *hdrs = cJSON_GetObjectItemCaseSensitive(spec, "headers");
	const cJSON *h;
	cJSON_ArrayForEach(h, hdrs)
	{
		if (cJSON_IsString(h))
			httpfake_response_header(resp, h->string, h->valuestring);
		else if (cJSON_IsNumber(h)) {
			char buf[32];
			snprintf(buf, sizeof buf, "%g", h->valuedouble);
			httpfake_response_header(resp, h->string, buf);
		}
	}
	v = cJSON_GetObjectItemCaseSensitive(spec, "delay_ms");
	if (cJSON_IsNumber(v))
		httpfake_response_delay(resp, (unsigned)v->valuedouble);
	v = cJSON_GetObjectItemCaseSensitive(spec, "action");
	if (cJSON_IsString(v) && strcmp(v->valuestring, "drop") == 0)
		httpfake_response_action(resp, HTTPFAKE_DROP);
	else if (cJSON_IsString(v) && strcmp(v->valuestring, "hang") == 0)
		httpfake_response_action(resp, HTTPFAKE_HANG);
}

static void on_chat(const struct httpfake_request *req, struct httpfake_response *resp, void *ud)
{
	struct llmfake *f = ud;
	cJSON *body = cJSON_ParseWithLength(req->body, req->body_len);
	pthread_mutex_lock(&f->mu);
	size_t call = f->n_calls;
	if (call < LLMFAKE_RECORD_MAX) {
		struct record *r = &f->records[call];
		r->body = body ? cJSON_Duplicate(body, 1) : NULL;
		r->headers = cJSON_CreateObject();
		for (size_t i = 0; i < req->n_headers; i++)
			cJSON_AddStringToObject(r->headers, req->headers[i].name,
			                        req->headers[i].value);
	}
	const cJSON *spec = NULL;
	for (size_t i = 0; i < f->n_entries; i++) {
		struct entry *e = &f->entries[i];
		if (e->times == 0 || !matches(e->spec, body, call))
			continue;
		if (e->times > 0)
			e->times--;
		spec = e->spec;
		break;
	}
	if (spec) {
		const cJSON *caps = cJSON_GetObjectItemCaseSensitive(spec, "captures");
		cJSON *filled = caps ? cJSON_Duplicate(spec, 1) : NULL;
		if (filled)
			substitute(cJSON_GetObjectItemCaseSensitive(filled, "tool_calls"), caps,
			           body);
		answer(filled ? filled : spec, call, resp);
		cJSON_Delete(filled);
	} else {
		char msg[300];
		snprintf(msg, sizeof msg,
		         "llmfake: no scripted response matches call %zu (last user message: "
		         "'%.80s')",
		         call, body ? last_user_text(body) : "(request body is not JSON)");
		cJSON *o = cJSON_CreateObject();
		cJSON *e = cJSON_AddObjectToObject(o, "error");
		cJSON_AddStringToObject(e, "message", msg);
		cJSON_AddStringToObject(e, "type", "llmfake_unscripted");
		set_json(resp, 400, o);
		cJSON_Delete(o);
	}
	f->n_calls++;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
	cJSON_Delete(body);
}

static void on_models(const struct httpfake_request *req, struct httpfake_response *resp, void *ud)
{
	httpfake_response_json(resp, 200,
	                       "{\"object\":\"list\",\"data\":[{\"id\":\"fake-model\",\"object\":"
	                       "\"model\",\"owned_by\":\"llmfake\"}]}");
}

/* --- lifetime and records ---------------------------------------------------------------- */

struct llmfake *llmfake_new(char *err, size_t errlen)
{
	struct llmfake *f = calloc(1, sizeof *f);
	if (!f)
		die("out of memory", NULL);
	f->http = httpfake_new(0, err, errlen);
	if (!f->http) {
		free(f);
		return NULL;
	}
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cond, NULL);
	snprintf(f->base_url, sizeof f->base_url, "%s/v1", httpfake_base_url(f->http));
	httpfake_handle(f->http, "POST", "/v1/chat/completions", on_chat, f);
	httpfake_handle(f->http, "GET", "/v1/models", on_models, f);
	return f;
}

void llmfake_free(struct llmfake *f)
{
	if (!f)
		return;
	httpfake_free(f->http); /* stops the server threads first */
	llmfake_reset(f);
	size_t n = f->n_calls < LLMFAKE_RECORD_MAX ? f->n_calls : LLMFAKE_RECORD_MAX;
	for (size_t i = 0; i < n; i++) {
		cJSON_Delete(f->records[i].body);
		cJSON_Delete(f->records[i].headers);
	}
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

const char *llmfake_base_url(const struct llmfake *f)
{
	return f->base_url;
}

struct httpfake *llmfake_http(struct llmfake *f)
{
	return f->http;
}

size_t llmfake_calls(struct llmfake *f)
{
	pthread_mutex_lock(&f->mu);
	size_t n = f->n_calls;
	pthread_mutex_unlock(&f->mu);
	return n;
}

int llmfake_wait_calls(struct llmfake *f, size_t n, unsigned timeout_ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&f->mu);
	int rc = 0;
	while (f->n_calls < n && rc == 0)
		rc = pthread_cond_timedwait(&f->cond, &f->mu, &ts);
	int ok = f->n_calls >= n;
	pthread_mutex_unlock(&f->mu);
	return ok ? 0 : -1;
}

cJSON *llmfake_request(struct llmfake *f, size_t i)
{
	pthread_mutex_lock(&f->mu);
	cJSON *out = NULL;
	if (i < f->n_calls && i < LLMFAKE_RECORD_MAX && f->records[i].body)
		out = cJSON_Duplicate(f->records[i].body, 1);
	pthread_mutex_unlock(&f->mu);
	return out;
}

char *llmfake_request_header(struct llmfake *f, size_t i, const char *name)
{
	pthread_mutex_lock(&f->mu);
	char *out = NULL;
	if (i < f->n_calls && i < LLMFAKE_RECORD_MAX) {
		const cJSON *h;
		cJSON_ArrayForEach(h, f->records[i].headers)
		{
			if (strcasecmp(h->string, name) == 0 && cJSON_IsString(h)) {
				out = dupstr(h->valuestring);
				break;
			}
		}
	}
	pthread_mutex_unlock(&f->mu);
	return out;
}
