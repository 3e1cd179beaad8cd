/*
 * space/web — the room's read-only web page: routes, the mirror of what the
 * room does not keep, and the JSON the page reads. See web.h.
 */
#include "space/web.h"

#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsx.h"
#include "common/jsonnul.h"
#include "common/log.h"
#include "common/mime.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "space/proto.h"

#define LOG_COMP "space-web"

#ifndef GA_DATADIR_FROM_BINDIR
#define GA_DATADIR_FROM_BINDIR "../share/general-agent"
#endif

const char SPACE_WEB_SECURITY_HEADERS[] =
        "X-Content-Type-Options: nosniff\r\n"
        "X-Frame-Options: DENY\r\n"
        "Referrer-Policy: no-referrer\r\n"
        "Content-Security-Policy: default-src 'self'; img-src 'self' data:; "
        "frame-ancestors 'none'; form-action 'none'\r\n";

struct web_event {
	char *json;
	size_t len;
};

struct web_claim {
	char *action, *target, *owner;
	int64_t at;    /* the claim or its last renewal: expiry counts from it */
	int64_t since; /* its own time: the broadcast's "since", else the claim's */
};

struct space_web {
	char *dir;
	char *name;
	int64_t claim_ttl_ms;
	space_web_presence_fn presence_of;
	struct mime_file files[SPACE_WEB_STATIC_MAX_FILES];
	size_t nfiles;
	/* recent events, a ring */
	struct web_event ev[SPACE_WEB_EVENTS_MAX];
	size_t ev_head, ev_count, ev_bytes;
	/* claims, oldest first */
	struct web_claim claims[SPACE_WEB_CLAIMS_MAX];
	size_t nclaims;
	struct space_buf *last; /* the last message tapped (held) */
	bool members_dirty;
};

void space_web_presence_clear(struct space_web_presence *p)
{
	free(p->detail);
	memset(p, 0, sizeof *p);
}

/* --- files ------------------------------------------------------------------- */

/* The longest page file name served. */
#define WEB_NAME_MAX 63

static void load_files(struct space_web *w, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		log_warn(LOG_COMP, "the room's web page is not installed: %s cannot be read", dir);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *ct = mime_type(e->d_name);
		if (!ct || !mime_name_ok(e->d_name, strlen(e->d_name), WEB_NAME_MAX))
			continue;
		if (w->nfiles == SPACE_WEB_STATIC_MAX_FILES) {
			log_warn(LOG_COMP, "%s: more than %d files, %s and later ones not served",
			         dir, SPACE_WEB_STATIC_MAX_FILES, e->d_name);
			break;
		}
		char *path = fsx_join(dir, e->d_name);
		struct ga_err err = {{0}};
		size_t len = 0;
		char *data = fsx_read_file(path, SPACE_WEB_STATIC_MAX_BYTES, &len, &err);
		free(path);
		if (!data) {
			log_warn(LOG_COMP, "%s/%s not served: %s", dir, e->d_name, err.msg);
			continue;
		}
		struct mime_file *f = &w->files[w->nfiles++];
		f->name = xstrdup(e->d_name);
		f->data = data;
		f->len = len;
		f->type = ct;
	}
	closedir(d);
	if (!mime_file_find(w->files, w->nfiles, "index.html", 10))
		log_warn(LOG_COMP, "%s has no index.html: the room's web page is not installed",
		         dir);
	else
		w->dir = xstrdup(dir);
}

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool try_dir(char *out, size_t cap, const char *base, const char *rel)
{
	int n = snprintf(out, cap, "%s%s%s/" SPACE_WEB_SUBDIR, base, rel ? "/" : "",
	                 rel ? rel : "");
	return n > 0 && (size_t)n < cap && is_dir(out);
}

int space_web_find_dir(char *out, size_t cap)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	bool build_tree = false;
	if (n > 0 && (size_t)n < sizeof exe - 1) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			if (try_dir(out, cap, exe, GA_DATADIR_FROM_BINDIR))
				return 0;
			char cache[PATH_MAX + 32];
			snprintf(cache, sizeof cache, "%s/CMakeCache.txt", exe);
			build_tree = fsx_exists(cache);
		}
	}
	if (build_tree && try_dir(out, cap, GA_SOURCE_DIR, NULL))
		return 0;
	if (try_dir(out, cap, GA_DATADIR, NULL))
		return 0;
	if (try_dir(out, cap, GA_SOURCE_DIR, NULL))
		return 0;
	return -1;
}

struct space_web *space_web_new(const char *dir, const char *room_name, int64_t claim_ttl_ms,
                                space_web_presence_fn presence_of)
{
	struct space_web *w = xcalloc(1, sizeof *w);
	w->name = xstrdup(room_name ? room_name : "");
	w->claim_ttl_ms = claim_ttl_ms;
	w->presence_of = presence_of;
	char found[PATH_MAX];
	if (!dir && space_web_find_dir(found, sizeof found) == 0)
		dir = found;
	if (dir)
		load_files(w, dir);
	else
		log_warn(LOG_COMP, "the room's web page is not installed: no " SPACE_WEB_SUBDIR
		                   " next to the binary nor in the data directory");
	return w;
}

static void claim_free(struct web_claim *c)
{
	free(c->action);
	free(c->target);
	free(c->owner);
}

void space_web_free(struct space_web *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nfiles; i++)
		mime_file_clear(&w->files[i]);
	for (size_t i = 0; i < w->ev_count; i++)
		free(w->ev[(w->ev_head + i) % SPACE_WEB_EVENTS_MAX].json);
	for (size_t i = 0; i < w->nclaims; i++)
		claim_free(&w->claims[i]);
	space_buf_unref(w->last);
	free(w->dir);
	free(w->name);
	free(w);
}

const char *space_web_dir(const struct space_web *w)
{
	return w->dir;
}

size_t space_web_event_count(const struct space_web *w)
{
	return w->ev_count;
}

size_t space_web_claim_count(const struct space_web *w)
{
	return w->nclaims;
}

/* --- requests ----------------------------------------------------------------- */

const char *space_web_header(const char *head, size_t head_len, const char *name, size_t *vlen)
{
	size_t nl = strlen(name);
	const char *p = memchr(head, '\n', head_len); /* skip the request line */
	const char *end = head + head_len;
	while (p && p + 1 < end) {
		const char *line = p + 1;
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol)
			eol = end;
		if ((size_t)(eol - line) > nl && line[nl] == ':' &&
		    strncasecmp(line, name, nl) == 0) {
			const char *v = line + nl + 1, *ve = eol;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			*vlen = (size_t)(ve - v);
			return v;
		}
		p = eol < end ? eol : NULL;
	}
	return NULL;
}

static bool contains_ci(const char *s, size_t n, const char *needle)
{
	size_t k = strlen(needle);
	for (size_t i = 0; i + k <= n; i++)
		if (strncasecmp(s + i, needle, k) == 0)
			return true;
	return false;
}

static bool path_hostile(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c < 0x20 || c == 0x7f || c == '%' || c == '\\')
			return true;
		if (i + 1 < n && ((c == '.' && p[i + 1] == '.') || (c == '/' && p[i + 1] == '/')))
			return true;
	}
	return false;
}

static void refuse(struct space_web_req *r, unsigned status, const char *reason, const char *why)
{
	r->route = SPACE_WEB_REFUSED;
	r->status = status;
	r->reason = reason;
	r->why = why;
}

void space_web_classify(const struct space_web *w, const char *head, size_t head_len,
                        const char *method, size_t method_len, const char *path, size_t path_len,
                        struct space_web_req *out)
{
	memset(out, 0, sizeof *out);
	size_t pl = 0;
	while (pl < path_len && path[pl] != '?' && path[pl] != '#')
		pl++;
	if (path_hostile(path, pl)) {
		refuse(out, 400, "Bad Request",
		       "path not allowed: the room's web page has no path with '..', '//', '%', "
		       "'\\' or control characters\n");
		return;
	}
	enum space_web_route route = SPACE_WEB_NOT_MINE;
	const struct mime_file *file = NULL;
	bool api = pl >= 4 && memcmp(path, "/api", 4) == 0 && (pl == 4 || path[4] == '/');
	if (pl == 9 && memcmp(path, "/api/room", 9) == 0) {
		route = SPACE_WEB_ROOM;
	} else if (pl == 11 && memcmp(path, "/api/events", 11) == 0) {
		route = SPACE_WEB_EVENTS;
	} else if (api) {
		refuse(out, 404, "Not Found",
		       "no such API: the room's web page has GET /api/room and GET /api/events\n");
		return;
	} else if (pl == 1 && path[0] == '/') {
		/* §1 item 3 stays for every client that is not a browser. */
		size_t al = 0;
		const char *acc = space_web_header(head, head_len, "Accept", &al);
		if (acc && contains_ci(acc, al, "text/html"))
			route = SPACE_WEB_FILE;
	} else if (pl > 1 && path[0] == '/' && mime_name_ok(path + 1, pl - 1, WEB_NAME_MAX)) {
		file = mime_file_find(w->files, w->nfiles, path + 1, pl - 1);
		if (file)
			route = SPACE_WEB_FILE;
	}
	if (route == SPACE_WEB_NOT_MINE)
		return;
	bool get = method_len == 3 && memcmp(method, "GET", 3) == 0;
	bool head_m = method_len == 4 && memcmp(method, "HEAD", 4) == 0;
	if (route == SPACE_WEB_EVENTS && !get) {
		refuse(out, 405, "Method Not Allowed",
		       "the room's web page is read-only: /api/events answers GET only\n");
		out->allow = "GET";
		return;
	}
	if (!get && !head_m) {
		refuse(out, 405, "Method Not Allowed",
		       "the room's web page is read-only: only GET and HEAD are answered\n");
		out->allow = "GET, HEAD";
		return;
	}
	size_t vl = 0;
	const char *cl = space_web_header(head, head_len, "Content-Length", &vl);
	bool body = space_web_header(head, head_len, "Transfer-Encoding", &vl) != NULL;
	if (cl) {
		size_t z = 0;
		while (z < vl && cl[z] == '0')
			z++;
		body |= z != vl || vl == 0;
	}
	if (body) {
		refuse(out, 413, "Content Too Large",
		       "the room's web page takes no request body\n");
		return;
	}
	out->route = route;
	out->head_only = head_m;
	if (route == SPACE_WEB_FILE) {
		if (!file)
			file = mime_file_find(w->files, w->nfiles, "index.html", 10);
		if (!file || !w->dir) {
			refuse(out, 404, "Not Found",
			       "the room's web page is not installed (web/space was not found next "
			       "to agent-space nor in its data directory)\n");
			return;
		}
		out->file = file->name;
		out->data = file->data;
		out->len = file->len;
		out->ctype = file->type;
	}
}

/* --- events -------------------------------------------------------------------- */

static void ev_drop_oldest(struct space_web *w)
{
	struct web_event *e = &w->ev[w->ev_head];
	w->ev_bytes -= e->len;
	free(e->json);
	e->json = NULL;
	w->ev_head = (w->ev_head + 1) % SPACE_WEB_EVENTS_MAX;
	w->ev_count--;
}

static void ev_push(struct space_web *w, const char *json, size_t len)
{
	if (len > SPACE_WEB_EVENTS_MAX_BYTES)
		return;
	while (w->ev_count && (w->ev_count == SPACE_WEB_EVENTS_MAX ||
	                       w->ev_bytes + len > SPACE_WEB_EVENTS_MAX_BYTES))
		ev_drop_oldest(w);
	struct web_event *e = &w->ev[(w->ev_head + w->ev_count) % SPACE_WEB_EVENTS_MAX];
	e->json = xstrndup(json, len);
	e->len = len;
	w->ev_bytes += len;
	w->ev_count++;
}

/* The message's JSON within SPACE_WEB_EVENT_MAX_BYTES: a long content or
 * summary is cut to SPACE_WEB_CUT_UNITS and "cut": true added. NULL when
 * it cannot be brought under the bound. Caller frees. */
static char *bounded_json(const char *json, size_t len, size_t *out_len)
{
	if (len <= SPACE_WEB_EVENT_MAX_BYTES) {
		*out_len = len;
		return xstrndup(json, len);
	}
	struct ga_err err = {{0}};
	cJSON *root = json_parse_js(json, len, &err);
	if (!root)
		return NULL;
	static const char *const keys[] = {"content", "summary", "detail", "error"};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		cJSON *v = cJSON_GetObjectItemCaseSensitive(root, keys[i]);
		if (!cJSON_IsString(v))
			continue;
		size_t sl = strlen(v->valuestring);
		size_t cut = space_js_cut(v->valuestring, sl, SPACE_WEB_CUT_UNITS);
		if (cut < sl) {
			v->valuestring[cut] = '\0';
			if (!cJSON_GetObjectItemCaseSensitive(root, "cut"))
				cJSON_AddBoolToObject(root, "cut", true);
		}
	}
	struct strbuf sb;
	sb_init(&sb, SPACE_WEB_EVENT_MAX_BYTES * 2);
	int rc = space_js_stringify(&sb, root);
	cJSON_Delete(root);
	if (rc < 0) {
		sb_free(&sb);
		return NULL;
	}
	*out_len = sb.len;
	return sb_detach(&sb);
}

static void put_sse(struct strbuf *sb, const char *event, const char *json, size_t len)
{
	sb_printf(sb, "event: %s\ndata: ", event);
	sb_append(sb, json, len);
	sb_puts(sb, "\n\n");
}

static void put_iso_or_null(struct strbuf *sb, int64_t ms)
{
	char ts[TIME_ISO_LEN + 1];
	if (ms <= 0) {
		sb_puts(sb, "null");
		return;
	}
	sb_printf(sb, "\"%s\"", time_format_iso(ms, ts));
}

/* --- claims ---------------------------------------------------------------------- */

static void claims_expire(struct space_web *w, int64_t now)
{
	size_t k = 0;
	for (size_t i = 0; i < w->nclaims; i++) {
		if (now - w->claims[i].at >= w->claim_ttl_ms)
			claim_free(&w->claims[i]);
		else
			w->claims[k++] = w->claims[i];
	}
	w->nclaims = k;
}

static void claim_remove_at(struct space_web *w, size_t i)
{
	claim_free(&w->claims[i]);
	memmove(&w->claims[i], &w->claims[i + 1], (w->nclaims - i - 1) * sizeof w->claims[0]);
	w->nclaims--;
}

static struct web_claim *claim_find(struct space_web *w, const char *action, const char *target,
                                    size_t *idx)
{
	for (size_t i = 0; i < w->nclaims; i++)
		if (strcmp(w->claims[i].action, action) == 0 &&
		    strcmp(w->claims[i].target, target) == 0) {
			if (idx)
				*idx = i;
			return &w->claims[i];
		}
	return NULL;
}

static void claims_json(struct space_web *w, struct strbuf *sb, int64_t now)
{
	claims_expire(w, now);
	sb_putc(sb, '[');
	for (size_t i = 0; i < w->nclaims; i++) {
		const struct web_claim *c = &w->claims[i];
		if (i)
			sb_putc(sb, ',');
		sb_puts(sb, "{\"action\":");
		space_put_str(sb, c->action);
		sb_puts(sb, ",\"target\":");
		space_put_str(sb, c->target);
		sb_puts(sb, ",\"owner\":");
		space_put_str(sb, c->owner);
		sb_puts(sb, ",\"at\":");
		put_iso_or_null(sb, c->at);
		sb_puts(sb, ",\"since\":");
		put_iso_or_null(sb, c->since);
		sb_puts(sb, ",\"expiresAt\":");
		put_iso_or_null(sb, c->at + w->claim_ttl_ms);
		sb_putc(sb, '}');
	}
	sb_putc(sb, ']');
}

static void put_claims_event(struct space_web *w, struct strbuf *sb, int64_t now)
{
	struct strbuf j;
	sb_init(&j, 0);
	sb_puts(&j, "{\"claims\":");
	claims_json(w, &j, now);
	sb_putc(&j, '}');
	put_sse(sb, "claims", j.buf, j.len);
	sb_free(&j);
}

/* --- members ------------------------------------------------------------------------ */

static void members_json(struct space_web *w, const struct space_room *room, struct strbuf *sb)
{
	char ts[TIME_ISO_LEN + 1];
	sb_putc(sb, '[');
	bool first = true;
	for (const struct space_conn *m = space_room_first_member(room); m; m = m->next) {
		const struct space_web_presence *p = w->presence_of ? w->presence_of(m) : NULL;
		if (!first)
			sb_putc(sb, ',');
		first = false;
		sb_puts(sb, "{\"name\":");
		space_put_str(sb, m->name);
		sb_puts(sb, ",\"id\":");
		space_put_str(sb, m->id);
		sb_puts(sb, ",\"version\":");
		space_put_str(sb, m->version);
		sb_printf(sb, ",\"joinedAt\":\"%s\"", time_format_iso(m->joined_at, ts));
		sb_printf(sb, ",\"lastSeen\":\"%s\"", time_format_iso(m->last_seen, ts));
		sb_puts(sb, ",\"state\":");
		if (p && p->state[0])
			space_put_str(sb, p->state);
		else
			sb_puts(sb, "null");
		if (p && p->detail) {
			sb_puts(sb, ",\"detail\":");
			sb_puts(sb, p->detail);
		}
		sb_puts(sb, ",\"stateAt\":");
		put_iso_or_null(sb, p ? p->state_at : 0);
		sb_puts(sb, ",\"typingAt\":");
		put_iso_or_null(sb, p ? p->typing_at : 0);
		if (m->caps_json && strlen(m->caps_json) <= SPACE_WEB_CAPS_MAX_BYTES) {
			sb_puts(sb, ",\"capabilities\":");
			sb_puts(sb, m->caps_json);
		}
		sb_putc(sb, '}');
	}
	sb_putc(sb, ']');
}

bool space_web_take_members_dirty(struct space_web *w)
{
	bool d = w->members_dirty;
	w->members_dirty = false;
	return d;
}

struct space_buf *space_web_members_event(struct space_web *w, const struct space_room *room,
                                          int64_t now)
{
	char ts[TIME_ISO_LEN + 1];
	struct strbuf j, sb;
	sb_init(&j, 0);
	sb_printf(&j, "{\"now\":\"%s\",\"members\":", time_format_iso(now, ts));
	members_json(w, room, &j);
	sb_putc(&j, '}');
	sb_init(&sb, 0);
	put_sse(&sb, "members", j.buf, j.len);
	sb_free(&j);
	struct space_buf *b = space_buf_from_sb(&sb, SPACE_BUF_RAW);
	sb_free(&sb);
	return b;
}

/* --- the snapshot ---------------------------------------------------------------------- */

static void room_json(struct space_web *w, const struct space_room *room,
                      const struct space_web_stats *st, int64_t now, struct strbuf *sb)
{
	char ts[TIME_ISO_LEN + 1];
	sb_puts(sb, "{\"name\":");
	space_put_str(sb, w->name);
	sb_printf(sb, ",\"now\":\"%s\",\"claimTtlMs\":%" PRId64 ",\"members\":",
	          time_format_iso(now, ts), w->claim_ttl_ms);
	members_json(w, room, sb);
	sb_puts(sb, ",\"claims\":");
	claims_json(w, sb, now);
	sb_puts(sb, ",\"events\":[");
	for (size_t i = 0; i < w->ev_count; i++) {
		const struct web_event *e = &w->ev[(w->ev_head + i) % SPACE_WEB_EVENTS_MAX];
		if (i)
			sb_putc(sb, ',');
		sb_append(sb, e->json, e->len);
	}
	sb_printf(sb, "],\"web\":{\"clients\":%u,\"maxClients\":%d,\"dropped\":%" PRIu64 "}}",
	          st ? st->clients : 0, SPACE_WEB_MAX_CLIENTS, st ? st->dropped : 0);
}

char *space_web_room_json(struct space_web *w, const struct space_room *room,
                          const struct space_web_stats *st, int64_t now, size_t *len)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	room_json(w, room, st, now, &sb);
	*len = sb.len;
	return sb_detach(&sb);
}

struct space_buf *space_web_stream_start(struct space_web *w, const struct space_room *room,
                                         const struct space_web_stats *st, int64_t now)
{
	struct strbuf sb, j;
	sb_init(&sb, 0);
	sb_puts(&sb, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
	             "Cache-Control: no-store\r\nX-Accel-Buffering: no\r\n");
	sb_puts(&sb, SPACE_WEB_SECURITY_HEADERS);
	sb_puts(&sb, "Connection: close\r\n\r\nretry: 1000\n\n");
	sb_init(&j, 0);
	room_json(w, room, st, now, &j);
	put_sse(&sb, "room", j.buf, j.len);
	sb_free(&j);
	struct space_buf *b = space_buf_from_sb(&sb, SPACE_BUF_RAW);
	sb_free(&sb);
	return b;
}

struct space_buf *space_web_keepalive(void)
{
	static const char k[] = ": keepalive\n\n";
	return space_buf_new(k, sizeof k - 1, SPACE_BUF_RAW);
}

/* --- what the room said ------------------------------------------------------------------ */

/* The type of a room message: every one starts {"type":"<type>". */
static bool msg_type(const char *d, size_t len, char *out, size_t cap)
{
	static const char pre[] = "{\"type\":\"";
	if (len < sizeof pre || memcmp(d, pre, sizeof pre - 1) != 0)
		return false;
	size_t i = sizeof pre - 1, k = 0;
	while (i < len && d[i] != '"' && k + 1 < cap)
		out[k++] = d[i++];
	out[k] = '\0';
	return i < len && d[i] == '"';
}

static const char *str_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A claim or its end, from the parsed broadcast; true when the list changed. */
static bool claims_apply(struct space_web *w, const char *type, const cJSON *m, int64_t now)
{
	const char *name = str_of(m, "name");
	if (!name)
		return false;
	if (strcmp(type, "leave") == 0) {
		bool changed = false;
		for (size_t i = w->nclaims; i-- > 0;)
			if (strcmp(w->claims[i].owner, name) == 0) {
				claim_remove_at(w, i);
				changed = true;
			}
		return changed;
	}
	const char *action = str_of(m, "action"), *target = str_of(m, "target");
	if (!action || !target)
		return false;
	size_t idx;
	struct web_claim *c = claim_find(w, action, target, &idx);
	if (strcmp(type, "action_result") == 0) {
		if (c)
			claim_remove_at(w, idx);
		return c != NULL;
	}
	/* claim: a new one (the room broadcasts only those) */
	if (c)
		claim_remove_at(w, idx);
	claims_expire(w, now);
	if (w->nclaims == SPACE_WEB_CLAIMS_MAX)
		claim_remove_at(w, 0);
	c = &w->claims[w->nclaims++];
	c->action = xstrdup(action);
	c->target = xstrdup(target);
	c->owner = xstrdup(name);
	c->at = now;
	/* The room says "since" only for a claim its owner took before (and
	 * only within its bounds); the page never shows a time to come. */
	int64_t since;
	const char *since_iso = str_of(m, "since");
	c->since = since_iso && time_parse_iso(since_iso, &since) == 0 && since < now ? since : now;
	return true;
}

static void presence_apply(struct space_web_presence *p, const cJSON *m, int64_t now)
{
	const char *state = str_of(m, "state");
	if (!state || strlen(state) >= sizeof p->state)
		return;
	snprintf(p->state, sizeof p->state, "%s", state);
	p->state_at = now;
	free(p->detail);
	p->detail = NULL;
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(m, "detail");
	if (d) {
		struct strbuf sb;
		sb_init(&sb, SPACE_WEB_DETAIL_MAX_BYTES);
		if (space_js_stringify(&sb, d) == 0)
			p->detail = sb_detach(&sb);
		sb_free(&sb);
	}
}

/* A feed message the protocol sends without a time of its own (join,
 * leave, claim, action_result) gets the room's, as "at", so the page can
 * say when it happened; one with a timestamp is left as it is. */
static char *stamped(char *bj, size_t *bl, int64_t now)
{
	if (*bl < 2 || bj[*bl - 1] != '}' || memmem(bj, *bl, "\"timestamp\":", 12))
		return bj;
	char iso[TIME_ISO_LEN + 1];
	time_format_iso(now, iso);
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_append(&sb, bj, *bl - 1);
	sb_printf(&sb, "%s\"at\":\"%s\"}", *bl > 2 ? "," : "", iso);
	free(bj);
	*bl = sb.len;
	return sb_detach(&sb);
}

/* A message of the feed (kept and sent) or of presence (sent only). */
static struct space_buf *feed(struct space_web *w, const char *type, const char *json, size_t len,
                              bool keep, bool claims_changed, int64_t now)
{
	size_t bl = 0;
	char *bj = bounded_json(json, len, &bl);
	if (!bj)
		return NULL;
	if (keep)
		bj = stamped(bj, &bl, now);
	if (keep)
		ev_push(w, bj, bl);
	struct strbuf sb;
	sb_init(&sb, 0);
	put_sse(&sb, type, bj, bl);
	free(bj);
	if (claims_changed)
		put_claims_event(w, &sb, now);
	struct space_buf *b = space_buf_from_sb(&sb, SPACE_BUF_RAW);
	sb_free(&sb);
	return b;
}

struct space_buf *space_web_tap(struct space_web *w, struct space_buf *msg,
                                struct space_web_presence *sender, int64_t now)
{
	if (msg == w->last || (msg->flags & SPACE_BUF_RAW))
		return NULL;
	const char *d = space_buf_data(msg);
	char type[32];
	if (!msg_type(d, msg->len, type, sizeof type))
		return NULL;
	bool keep = false, parse = false, is_presence = false;
	if (strcmp(type, "presence") == 0 || strcmp(type, "identity") == 0) {
		is_presence = true;
	} else if (strcmp(type, "chat") == 0 || strcmp(type, "reflection") == 0 ||
	           strcmp(type, "shutdown") == 0) {
		keep = true;
	} else if (strcmp(type, "join") == 0) {
		keep = true;
		w->members_dirty = true;
	} else if (strcmp(type, "leave") == 0 || strcmp(type, "claim") == 0 ||
	           strcmp(type, "action_result") == 0) {
		keep = parse = true;
		w->members_dirty |= type[0] == 'l';
	} else if (strcmp(type, "typing") == 0 || strcmp(type, "state") == 0) {
		parse = type[0] == 's';
	} else {
		return NULL; /* error, history_response, workspace_state: not broadcasts */
	}
	space_buf_unref(w->last);
	w->last = space_buf_ref(msg);
	if (is_presence) {
		w->members_dirty = true;
		return NULL;
	}
	bool claims_changed = false;
	if (parse || sender) {
		cJSON *m = NULL;
		if (parse) {
			struct ga_err err = {{0}};
			m = json_parse_js(d, msg->len, &err);
			if (!m)
				return NULL;
		}
		if (type[0] == 't' && sender)
			sender->typing_at = now;
		else if (strcmp(type, "state") == 0 && sender)
			presence_apply(sender, m, now);
		else if (parse && strcmp(type, "state") != 0)
			claims_changed = claims_apply(w, type, m, now);
		cJSON_Delete(m);
	}
	return feed(w, type, d, msg->len, keep, claims_changed, now);
}

void space_web_input(struct space_web *w, const char *member_name, const char *data, size_t len,
                     int64_t now)
{
	if (!member_name || !w->nclaims || !memmem(data, len, "\"claim\"", 7))
		return;
	cJSON *root = NULL;
	if (space_msg_parse(data, len, &root) == SPACE_MSG_CLAIM) {
		const cJSON *a = space_js_get(root, "action"), *t = space_js_get(root, "target");
		if (cJSON_IsString(a) && cJSON_IsString(t)) {
			struct web_claim *c = claim_find(w, a->valuestring, t->valuestring, NULL);
			/* The room renews silently: same owner, not yet expired. */
			if (c && strcmp(c->owner, member_name) == 0 &&
			    now - c->at < w->claim_ttl_ms)
				c->at = now;
		}
	}
	cJSON_Delete(root);
}

/* A log entry {timestamp, agentName, agentId, type, content} as the
 * message the room broadcast for it (chat, join, leave); NULL otherwise. */
static char *entry_as_msg(const cJSON *e, size_t *len)
{
	const char *type = str_of(e, "type"), *ts = str_of(e, "timestamp");
	const char *name = str_of(e, "agentName"), *id = str_of(e, "agentId");
	if (!type || !ts || !name || !id)
		return NULL;
	bool chat = strcmp(type, "chat") == 0;
	if (!chat && strcmp(type, "join") != 0 && strcmp(type, "leave") != 0)
		return NULL;
	const char *content = str_of(e, "content");
	if (chat && !content)
		return NULL;
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, "{\"type\":");
	space_put_str(&sb, type);
	sb_puts(&sb, ",\"name\":");
	space_put_str(&sb, name);
	sb_puts(&sb, ",\"id\":");
	space_put_str(&sb, id);
	if (chat) {
		sb_puts(&sb, ",\"content\":");
		size_t cl = strlen(content);
		size_t cut = space_js_cut(content, cl, SPACE_WEB_CUT_UNITS);
		space_put_strn(&sb, content, cut);
		if (cut < cl)
			sb_puts(&sb, ",\"cut\":true");
	}
	sb_puts(&sb, ",\"timestamp\":");
	space_put_str(&sb, ts);
	sb_puts(&sb, ",\"history\":true}");
	*len = sb.len;
	return sb_detach(&sb);
}

static cJSON *history_entries(struct space_store *st, size_t limit, cJSON **root)
{
	struct space_buf *h = space_store_history(st, limit);
	struct ga_err err = {{0}};
	*root = json_parse_js(space_buf_data(h), h->len, &err);
	space_buf_unref(h);
	cJSON *entries = cJSON_GetObjectItemCaseSensitive(*root, "entries");
	return cJSON_IsArray(entries) ? entries : NULL;
}

void space_web_seed(struct space_web *w, struct space_store *st)
{
	cJSON *root = NULL;
	const cJSON *e, *entries = history_entries(st, SPACE_WEB_EVENTS_MAX, &root);
	cJSON_ArrayForEach(e, entries)
	{
		size_t len = 0;
		char *m = entry_as_msg(e, &len);
		if (m)
			ev_push(w, m, len);
		free(m);
	}
	cJSON_Delete(root);
}
