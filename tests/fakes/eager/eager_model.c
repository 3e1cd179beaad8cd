/*
 * eager_model — see eager_model.h.
 */
#include "tests/fakes/eager/eager_model.h"

#include <ctype.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "common/err.h"
#include "common/fsx.h"
#include "proc.h"
#include "tests/fakes/httpfake/httpfake.h"

struct eager_agent {
	struct eager_model *m;
	size_t index;
	char name[EAGER_NAME_MAX];
	char base_url[96];
	uint64_t calls;
};

struct eager_model {
	struct httpfake *http;
	struct eager_agent agent[EAGER_AGENTS_MAX];
	size_t n;
	unsigned seed;
	pthread_mutex_t mu;
	int64_t last_call_ms;
	uint64_t calls, decisions;
	struct said {
		char *text;
		bool commits;
	} said[EAGER_SAID_MAX]; /* ring */
	size_t said_next;
};

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- reading the prompt ------------------------------------------------------------ */

/* The content of the last "user" message (borrowed from body), or NULL. */
static const char *last_user(const cJSON *body)
{
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(body, "messages");
	const char *found = NULL;
	const cJSON *m;
	cJSON_ArrayForEach(m, msgs)
	{
		const char *role =
		        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "role"));
		const char *content =
		        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "content"));
		if (role && content && strcmp(role, "user") == 0)
			found = content;
	}
	return found;
}

static bool offers_tool(const cJSON *body, const char *name)
{
	const cJSON *t;
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(body, "tools"))
	{
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
		const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fn, "name"));
		if (n && strcmp(n, name) == 0)
			return true;
	}
	return false;
}

static bool is_agent_name(const struct eager_model *m, const char *s, size_t len)
{
	for (size_t i = 0; i < m->n; i++)
		if (strlen(m->agent[i].name) == len && strncmp(m->agent[i].name, s, len) == 0)
			return true;
	return false;
}

struct line {
	char author[EAGER_NAME_MAX];
	bool host;
	bool answered; /* a host line: self spoke after it */
	char text[EAGER_TEXT_MAX];
};

/* The conversation the engine shows ("Recent conversation (oldest first):"
 * up to the blank line): the last line not written by self, and the
 * latest host line. false when there is none. */
static bool read_history(const struct eager_model *m, const char *self, const char *prompt,
                         struct line *last, struct line *host)
{
	static const char head[] = "Recent conversation (oldest first):\n";
	const char *p = strstr(prompt, head);
	bool got = false;
	host->text[0] = '\0';
	if (!p)
		return false;
	p += sizeof head - 1;
	while (*p && *p != '\n') {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		const char *colon = memchr(p, ':', len);
		if (colon && colon + 1 < p + len && colon[1] == ' ') {
			size_t alen = (size_t)(colon - p);
			bool h = alen > 7 && memcmp(colon - 7, " (host)", 7) == 0;
			size_t nlen = h ? alen - 7 : alen;
			if (h || is_agent_name(m, p, nlen)) {
				struct line l = {.host = h};
				snprintf(l.author, sizeof l.author, "%.*s", (int)nlen, p);
				snprintf(l.text, sizeof l.text, "%.*s", (int)(len - alen - 2),
				         colon + 2);
				if (h)
					*host = l;
				else if (strcmp(l.author, self) == 0)
					host->answered = true;
				if (strcmp(l.author, self) != 0) {
					*last = l;
					got = true;
				}
			}
		}
		if (!eol)
			break;
		p = eol + 1;
	}
	return got;
}

/* The request the prompt names ("Host request status: open: \"…\""), else
 * the latest host line. */
static void read_request(const char *prompt, const struct line *host, char *out, size_t cap)
{
	const char *p = strstr(prompt, "Host request status: ");
	if (p) {
		p += strlen("Host request status: ");
		const char *q = strchr(p, '"');
		const char *eol = strchr(p, '\n');
		if (q && (!eol || q < eol)) {
			const char *end = eol ? eol : q + strlen(q);
			while (end > q + 1 && end[-1] != '"')
				end--;
			if (end > q + 1) {
				snprintf(out, cap, "%.*s", (int)(end - 1 - (q + 1)), q + 1);
				return;
			}
		}
	}
	snprintf(out, cap, "%s", host->text);
}

/* ---- writing the answer -------------------------------------------------------------- */

/* What the other agents' answers wrap around a point, peeled off so that
 * the paraphrase chain keeps restating the same point. */
static const char *const wrappers[] = {
        "Great point, ",  "in other words: ",           "I'll open an issue for this: ",
        "on it: filing ", "agreed, I'll take care of ", "also, ",
};

static void core_of(const struct eager_model *m, const char *text, char *out, size_t cap)
{
	const char *p = text;
	for (bool changed = true; changed;) {
		changed = false;
		while (*p == ' ' || *p == '@')
			p++;
		for (size_t i = 0; i < m->n; i++) {
			size_t l = strlen(m->agent[i].name);
			if (strncmp(p, m->agent[i].name, l) == 0 &&
			    (p[l] == ',' || (p[l] == ' ' && p[l + 1] == '\xe2'))) {
				p += l + 1;
				changed = true;
			}
		}
		if (strncmp(p, " \xe2\x80\x94 ", 5) == 0) { /* " — " after a name */
			p += 5;
			changed = true;
		}
		for (size_t i = 0; i < sizeof wrappers / sizeof wrappers[0]; i++) {
			size_t l = strlen(wrappers[i]);
			if (strncasecmp(p, wrappers[i], l) == 0) {
				p += l;
				changed = true;
			}
		}
	}
	snprintf(out, cap, "%s", p);
	/* The courtesy notice and our own tail are not the point. */
	char *cut = strstr(out, " Replies to this message");
	if (cut)
		*cut = '\0';
	cut = strstr(out, " in " EAGER_REPO ".");
	if (cut)
		*cut = '\0';
	size_t l = strlen(out);
	while (l &&
	       (out[l - 1] == '.' || out[l - 1] == '!' || out[l - 1] == '?' || out[l - 1] == ' '))
		out[--l] = '\0';
}

/* A word-for-word synonym swap: what an echo-prone model does to sound
 * new without adding anything. */
static const char *const synonyms[][2] = {
        {"create", "make"},
        {"issue", "ticket"},
        {"bug", "defect"},
        {"fix", "repair"},
        {"open", "file"},
        {"think", "believe"},
        {"handle", "deal with"},
        {"flaky", "unreliable"},
        {"tests", "checks"},
        {"move", "migrate"},
        {"should", "ought to"},
        {"problem", "trouble"},
        {"write", "draft"},
        {"plan", "proposal"},
        {"stale", "outdated"},
        {"counts", "numbers"},
        {"retries", "retry attempts"},
        {"timeout", "time-out"},
        {"quickly", "fast"},
        {"idea", "notion"},
};

static void paraphrase(const char *in, char *out, size_t cap)
{
	size_t o = 0;
	const char *p = in;
	out[0] = '\0';
	while (*p && o + 1 < cap) {
		const char *w = p;
		while (*p && (isalnum((unsigned char)*p) || *p == '-' || *p == '\''))
			p++;
		size_t wl = (size_t)(p - w);
		const char *rep = NULL;
		for (size_t i = 0; wl && i < sizeof synonyms / sizeof synonyms[0]; i++)
			if (strlen(synonyms[i][0]) == wl && strncasecmp(w, synonyms[i][0], wl) == 0)
				rep = synonyms[i][1];
		int n = rep ? snprintf(out + o, cap - o, "%s", rep)
		            : snprintf(out + o, cap - o, "%.*s", (int)wl, w);
		if (n < 0 || (size_t)n >= cap - o)
			break;
		o += (size_t)n;
		if (!*p)
			break;
		if (!wl) { /* a separator */
			out[o++] = *p++;
			out[o] = '\0';
		}
	}
}

/* The second half first ("a, b" → "b — a"): same words, another order. */
static void reorder(const char *in, char *out, size_t cap)
{
	const char *mid = strstr(in, ", ");
	size_t skip = 2;
	if (!mid) {
		mid = strstr(in, " and ");
		skip = 5;
	}
	if (!mid) {
		size_t l = strlen(in);
		mid = in + l / 2;
		while (*mid && *mid != ' ')
			mid++;
		skip = *mid ? 1 : 0;
	}
	if (!*mid) {
		snprintf(out, cap, "%s", in);
		return;
	}
	snprintf(out, cap, "%s \xe2\x80\x94 %.*s", mid + skip, (int)(mid - in), in);
}

static cJSON *commitment(const char *request)
{
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "type", "create_issue");
	cJSON_AddStringToObject(c, "repo", EAGER_REPO);
	char title[120];
	snprintf(title, sizeof title, "%.100s", request[0] ? request : "Follow-up from the room");
	cJSON_AddStringToObject(c, "title", title);
	char desc[EAGER_TEXT_MAX + 40];
	snprintf(desc, sizeof desc, "The host asked: %s", request);
	cJSON_AddStringToObject(c, "description", desc);
	return c;
}

/* A host asking after work promised earlier ("did you open the issue?",
 * "where is the link?"). */
static bool asks_after_work(const char *text)
{
	static const char *const asks[] = {
	        "did you",    "did anyone", "where is the link", "where's the link",
	        "is it done", "any news",   "what's the link",   "what is the link"};
	for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++)
		if (strcasestr(text, asks[i]))
			return true;
	return false;
}

/* The first link of the prompt's "<head>\n- …" lines, or false. */
static bool section_link(const char *prompt, const char *head, char *out, size_t cap)
{
	const char *p = strstr(prompt, head);
	if (!p)
		return false;
	p = strchr(p, '\n') + 1;
	while (strncmp(p, "- ", 2) == 0) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		const char *u = memmem(p, len, "http", 4);
		if (u) {
			size_t ul = 0;
			while (u + ul < p + len && u[ul] != ' ' && u[ul] != '"')
				ul++;
			snprintf(out, cap, "%.*s", (int)ul, u);
			return true;
		}
		if (!eol)
			break;
		p = eol + 1;
	}
	return false;
}

/* The link of what the prompt says the request's work became: this
 * agent's ("Your work for it:"), else what others reported done ("Done
 * for it by others:"). */
static bool work_link(const char *prompt, char *out, size_t cap)
{
	return section_link(prompt, "Your work for it:\n", out, cap) ||
	       section_link(prompt, "Done for it by others:\n", out, cap);
}

/* The space_decision arguments for agent a (locked by the caller). */
static cJSON *decide(struct eager_agent *a, const char *prompt)
{
	struct eager_model *m = a->m;
	struct line last = {0}, host = {0};
	cJSON *d = cJSON_CreateObject();
	cJSON_AddBoolToObject(d, "shouldSpeak", true);
	if (!read_history(m, a->name, prompt, &last, &host)) {
		cJSON_AddStringToObject(d, "reason", "eager: nothing to answer, speaking anyway");
		char msg[128];
		snprintf(msg, sizeof msg, "%s here, ready to help.", a->name);
		cJSON_AddStringToObject(d, "message", msg);
		return d;
	}
	char request[EAGER_TEXT_MAX];
	read_request(prompt, &host, request, sizeof request);
	/* Address the author of the line answered, or another agent when the
	 * host wrote it. */
	const char *to = last.author;
	if (last.host || strcmp(to, a->name) == 0)
		to = m->agent[(a->index + 1 + a->calls % (m->n > 1 ? m->n - 1 : 1)) % m->n].name;
	if (strcmp(to, a->name) == 0)
		to = last.author;
	char core[EAGER_TEXT_MAX], alt[EAGER_TEXT_MAX + 64], msg[2 * EAGER_TEXT_MAX];
	core_of(m, last.text, core, sizeof core);
	unsigned style = (unsigned)((a->calls + a->index + m->seed) % EAGER_STYLES);
	bool commits = false;
	char link[EAGER_TEXT_MAX];
	/* what a model with a real prompt does when the host asks after the
	 * work and the prompt says what it became: it gives the link (once) */
	if (host.text[0] && !host.answered && asks_after_work(host.text) &&
	    work_link(prompt, link, sizeof link))
		style = EAGER_STYLE_LINK;
	switch (style) {
	case EAGER_STYLE_LINK:
		snprintf(msg, sizeof msg, "Yes, it is open: %s", link);
		break;
	case 0:
		paraphrase(core, alt, sizeof alt);
		snprintf(msg, sizeof msg, "%s, in other words: %s.", to, alt);
		break;
	case 1:
		snprintf(msg, sizeof msg, "Great point, %s \xe2\x80\x94 %s.", to, core);
		break;
	case 2:
		snprintf(msg, sizeof msg, "%s, I'll open an issue for this: %s.", to, core);
		commits = true;
		break;
	case 3:
		paraphrase(core, alt, sizeof alt);
		snprintf(msg, sizeof msg, "%s, on it: filing %s in " EAGER_REPO ".", to, alt);
		commits = true;
		break;
	case 4:
		snprintf(msg, sizeof msg, "%s, %s.", to, core);
		break;
	case 5:
		snprintf(msg, sizeof msg, "%s, agreed, I'll take care of %s.", to, core);
		break;
	default:
		reorder(core, alt, sizeof alt);
		snprintf(msg, sizeof msg, "%s, also, %s.", to, alt);
		break;
	}
	char reason[96];
	snprintf(reason, sizeof reason, "eager style %u: answering %s", style, last.author);
	cJSON_AddStringToObject(d, "reason", reason);
	cJSON_AddStringToObject(d, "message", msg);
	if (commits) {
		cJSON *arr = cJSON_AddArrayToObject(d, "commitments");
		cJSON_AddItemToArray(arr, commitment(request));
	}
	struct said *sd = &m->said[m->said_next++ % EAGER_SAID_MAX];
	free(sd->text);
	sd->text = strdup(msg);
	sd->commits = commits;
	return d;
}

/* Layer 2 (§2.2): the label a careless model gives. */
static const char *label(const char *prompt)
{
	static const char *const verbs[] = {"create", "open", "file",  "fix",    "write",
	                                    "add",    "make", "build", "update", "draft"};
	for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
		if (strcasestr(prompt, verbs[i]))
			return "ACTION_REQUEST";
	return "DISCUSSION";
}

/* §11.2 the owner retry: of course it commits ("HOST REQUEST: \"…\"…"). */
static cJSON *retry(struct eager_agent *a, const char *rest)
{
	char request[EAGER_TEXT_MAX];
	const char *end = strstr(rest, "\"\nREPO:");
	snprintf(request, sizeof request, "%.*s", (int)(end ? end - rest : 0), rest);
	cJSON *d = cJSON_CreateObject();
	cJSON_AddBoolToObject(d, "shouldSpeak", true);
	cJSON_AddStringToObject(d, "reason", "eager: the retry asks for a commitment");
	cJSON_AddStringToObject(d, "message", "Creating that now.");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(d, "commitments"), commitment(request));
	struct said *sd = &a->m->said[a->m->said_next++ % EAGER_SAID_MAX];
	free(sd->text);
	sd->text = strdup("Creating that now.");
	sd->commits = true;
	return d;
}

/* The tool-less calls (caller frees the answer):
 *   Layer 2 (§2.2, `Message: "…"`)   a label, label();
 *   the echo judge (§10.6, `Candidate: "…"`)   YES: every answer of this
 *             model restates the line it answers, so YES is the truth;
 *   extraction (§8.4, `Reply 1: "…"`)   eager: any promise-sounding reply
 *             is a create_issue for the host line in the context;
 *   the forced issue body (§11.3, "Write the issue body:")   markdown;
 *   anything else   "OK.". */
static char *plain(const char *user)
{
	if (strncmp(user, "Message: \"", 10) == 0)
		return strdup(label(user + 10));
	if (strncmp(user, "Candidate: ", 11) == 0)
		return strdup("YES");
	if (strncmp(user, "Reply 1: \"", 10) == 0) {
		static const char *const promises[] = {
		        "i'll", "i will", "let me", "on it", "filing", "i'm going to", "take care"};
		const char *eol = strchr(user + 10, '\n');
		size_t len = eol ? (size_t)(eol - (user + 10)) : strlen(user + 10);
		char reply[EAGER_TEXT_MAX];
		snprintf(reply, sizeof reply, "%.*s", (int)len, user + 10);
		bool promise = false;
		for (size_t i = 0; i < sizeof promises / sizeof promises[0]; i++)
			promise |= strcasestr(reply, promises[i]) != NULL;
		if (!promise)
			return strdup("[]");
		char title[EAGER_TEXT_MAX] = "";
		const char *ctx = strstr(user, "(recent messages from others):\n");
		if (ctx) {
			ctx = strchr(ctx, '\n') + 1;
			const char *colon = strstr(ctx, ": ");
			const char *cend = strchr(ctx, '\n');
			if (colon && (!cend || colon < cend))
				snprintf(title, sizeof title, "%.*s",
				         (int)(cend ? cend - (colon + 2) : (long)strlen(colon + 2)),
				         colon + 2);
		}
		cJSON *arr = cJSON_CreateArray();
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "description", reply);
		cJSON_AddStringToObject(c, "type", "create_issue");
		cJSON *p = cJSON_AddObjectToObject(c, "params");
		char t[120];
		snprintf(t, sizeof t, "%.100s", title[0] ? title : reply);
		cJSON_AddStringToObject(p, "title", t);
		cJSON_AddStringToObject(p, "repo", EAGER_REPO);
		cJSON_AddStringToObject(c, "confidence", "high");
		cJSON_AddItemToArray(arr, c);
		char *out = cJSON_PrintUnformatted(arr);
		cJSON_Delete(arr);
		return out;
	}
	if (strstr(user, "Write the issue body:"))
		return strdup(
		        "## What the host asked\n\nThe host asked for this in the agent-space; "
		        "see the conversation for the details.\n\n- [ ] done when the host "
		        "confirms\n");
	return strdup("OK.");
}

static void answer(struct httpfake_response *resp, uint64_t call, const char *content,
                   const cJSON *tool_args)
{
	cJSON *o = cJSON_CreateObject();
	char id[48];
	snprintf(id, sizeof id, "chatcmpl-eager-%llu", (unsigned long long)call);
	cJSON_AddStringToObject(o, "id", id);
	cJSON_AddStringToObject(o, "object", "chat.completion");
	cJSON_AddNumberToObject(o, "created", (double)(wall_ms() / 1000));
	cJSON_AddStringToObject(o, "model", "eager-model");
	cJSON *choices = cJSON_AddArrayToObject(o, "choices");
	cJSON *choice = cJSON_CreateObject();
	cJSON_AddItemToArray(choices, choice);
	cJSON_AddNumberToObject(choice, "index", 0);
	cJSON *msg = cJSON_AddObjectToObject(choice, "message");
	cJSON_AddStringToObject(msg, "role", "assistant");
	if (content)
		cJSON_AddStringToObject(msg, "content", content);
	else
		cJSON_AddNullToObject(msg, "content");
	if (tool_args) {
		cJSON *arr = cJSON_AddArrayToObject(msg, "tool_calls");
		cJSON *c = cJSON_CreateObject();
		char cid[48];
		snprintf(cid, sizeof cid, "call_eager_%llu", (unsigned long long)call);
		cJSON_AddStringToObject(c, "id", cid);
		cJSON_AddStringToObject(c, "type", "function");
		cJSON *fn = cJSON_AddObjectToObject(c, "function");
		cJSON_AddStringToObject(fn, "name", "space_decision");
		char *args = cJSON_PrintUnformatted(tool_args);
		cJSON_AddStringToObject(fn, "arguments", args);
		free(args);
		cJSON_AddItemToArray(arr, c);
	}
	cJSON_AddStringToObject(choice, "finish_reason", tool_args ? "tool_calls" : "stop");
	cJSON *u = cJSON_AddObjectToObject(o, "usage");
	cJSON_AddNumberToObject(u, "prompt_tokens", 100);
	cJSON_AddNumberToObject(u, "completion_tokens", 30);
	cJSON_AddNumberToObject(u, "total_tokens", 130);
	char *s = cJSON_PrintUnformatted(o);
	httpfake_response_json(resp, 200, s);
	free(s);
	cJSON_Delete(o);
}

static void on_chat(const struct httpfake_request *req, struct httpfake_response *resp, void *ud)
{
	struct eager_agent *a = ud;
	struct eager_model *m = a->m;
	cJSON *body = cJSON_ParseWithLength(req->body, req->body_len);
	if (!body) {
		httpfake_response_json(resp, 400,
		                       "{\"error\":{\"message\":\"eager_model: the body is not "
		                       "JSON\",\"type\":\"invalid_request_error\"}}");
		return;
	}
	const char *user = last_user(body);
	pthread_mutex_lock(&m->mu);
	m->last_call_ms = wall_ms();
	uint64_t call = m->calls++;
	if (offers_tool(body, "space_decision")) {
		m->decisions++;
		cJSON *d = user && strncmp(user, "HOST REQUEST: \"", 15) == 0
		                   ? retry(a, user + 15)
		                   : decide(a, user ? user : "");
		a->calls++;
		pthread_mutex_unlock(&m->mu);
		answer(resp, call, NULL, d);
		cJSON_Delete(d);
	} else {
		a->calls++;
		pthread_mutex_unlock(&m->mu);
		char *text = plain(user ? user : "");
		answer(resp, call, text, NULL);
		free(text);
	}
	/* a model takes a moment; other connections go on meanwhile */
	httpfake_response_delay(resp, 150 + (unsigned)(call * 37 % 350));
	cJSON_Delete(body);
}

static void on_models(const struct httpfake_request *req, struct httpfake_response *resp, void *ud)
{
	(void)req;
	(void)ud;
	httpfake_response_json(resp, 200,
	                       "{\"object\":\"list\",\"data\":[{\"id\":\"eager-model\","
	                       "\"object\":\"model\",\"owned_by\":\"loop-sim\"}]}");
}

struct eager_model *eager_model_new(const char *const *names, size_t n, unsigned seed, char *err,
                                    size_t errlen)
{
	if (n == 0 || n > EAGER_AGENTS_MAX) {
		snprintf(err, errlen, "eager_model: %zu agents (1..%d)", n, EAGER_AGENTS_MAX);
		return NULL;
	}
	struct eager_model *m = calloc(1, sizeof *m);
	if (!m) {
		snprintf(err, errlen, "eager_model: out of memory");
		return NULL;
	}
	m->http = httpfake_new(0, err, errlen);
	if (!m->http) {
		free(m);
		return NULL;
	}
	pthread_mutex_init(&m->mu, NULL);
	m->n = n;
	m->seed = seed;
	for (size_t i = 0; i < n; i++) {
		struct eager_agent *a = &m->agent[i];
		a->m = m;
		a->index = i;
		snprintf(a->name, sizeof a->name, "%s", names[i]);
		snprintf(a->base_url, sizeof a->base_url, "%s/a%zu/v1", httpfake_base_url(m->http),
		         i);
		char path[64];
		snprintf(path, sizeof path, "/a%zu/v1/chat/completions", i);
		httpfake_handle(m->http, "POST", path, on_chat, a);
		snprintf(path, sizeof path, "/a%zu/v1/models", i);
		httpfake_handle(m->http, "GET", path, on_models, a);
	}
	return m;
}

void eager_model_free(struct eager_model *m)
{
	if (!m)
		return;
	httpfake_free(m->http);
	for (size_t i = 0; i < EAGER_SAID_MAX; i++)
		free(m->said[i].text);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

const char *eager_model_base_url(const struct eager_model *m, size_t i)
{
	return i < m->n ? m->agent[i].base_url : "";
}

int64_t eager_model_last_call_ms(struct eager_model *m)
{
	pthread_mutex_lock(&m->mu);
	int64_t t = m->last_call_ms;
	pthread_mutex_unlock(&m->mu);
	return t;
}

int eager_model_committed(struct eager_model *m, const char *text)
{
	int r = -1;
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < EAGER_SAID_MAX && r != 1; i++) {
		const struct said *sd = &m->said[i];
		if (sd->text && strncmp(text, sd->text, strlen(sd->text)) == 0)
			r = sd->commits;
	}
	pthread_mutex_unlock(&m->mu);
	return r;
}

void eager_model_counts(struct eager_model *m, uint64_t *calls, uint64_t *decisions)
{
	pthread_mutex_lock(&m->mu);
	*calls = m->calls;
	*decisions = m->decisions;
	pthread_mutex_unlock(&m->mu);
}

char *eager_model_home(char *err, size_t errlen)
{
	char *home = home_new();
	char mem[600];
	snprintf(mem, sizeof mem, "%s/memory", home);
	struct ga_err e = {{0}};
	if (fsx_mkdir_p(mem, &e) != 0) {
		snprintf(err, errlen, "%s", e.msg);
		home_remove(home);
		return NULL;
	}
	home_write(home, "memory/space-config.json",
	           "{\"cooldownMinMs\":3000,\"cooldownMaxMs\":4000,\"replyDelayMinMs\":500,"
	           "\"replyDelayMaxMs\":800}\n");
	return home;
}
