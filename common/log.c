/*
 * log — see log.h.
 *
 * A line is built into a fixed static buffer (no allocation while logging)
 * from "pieces" (component, message, keys, values). Secrets are redacted
 * twice:
 *   1. while each raw piece is copied in, before any escaping or quoting, so
 *      a secret containing '"' or '\' is still found in JSON mode and a
 *      secret that would straddle the length cut is never half-printed (a
 *      match is decided on the whole raw piece, then "[redacted]" is
 *      emitted instead);
 *   2. over the finished line, for the odd secret that spans two pieces.
 * Output units (an escape like \u001f, a multi-byte UTF-8 character, a
 * `,"key":"` group) are written whole or not at all, so a cut line is still
 * valid UTF-8 and, in JSON mode, still one valid JSON object.
 */
#include "common/log.h"

#include "common/strbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/fsx.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"

/* Secrets shorter than this are ignored: a 1-3 byte "secret" would redact
 * ordinary words everywhere. */
#define LOG_SECRET_MIN_LEN 4
/* Room kept at the end of a line for the truncation marker and closers. */
#define LOG_RESERVE 48
/* Keys are code constants; anything longer is cut at this many bytes. */
#define LOG_KEY_MAX 128

#define REDACTED  "[redacted]"
#define TRUNCATED "\xe2\x80\xa6[truncated]" /* "…[truncated]" */

static struct {
	enum log_level min;
	bool json;
	FILE *out;
	/* sorted longest first so a secret containing another wins */
	char *secrets[LOG_MAX_SECRETS];
	size_t secret_len[LOG_MAX_SECRETS];
	int nsecrets;
	/* the echo (log_set_echo): compact copies of the serious lines */
	FILE *echo;
	enum log_level echo_min;
	/* the rotated file (log_to_file): its path, bound and size so far */
	FILE *file;
	char *file_path;
	size_t file_max, file_size;
} L = {.min = LOG_LEVEL_INFO};

static char line_buf[LOG_LINE_MAX];
static char final_buf[LOG_LINE_MAX];
static char msg_buf[LOG_LINE_MAX];

enum piece_mode {
	MODE_JSON,        /* JSON string content */
	MODE_TEXT,        /* text-format message/component: only control chars escaped */
	MODE_TEXT_QUOTED, /* text-format value inside double quotes */
	MODE_TEXT_KEY,    /* text-format key: [A-Za-z0-9_.-], the rest becomes '_' */
};

struct line {
	char *buf;
	size_t len;
	size_t limit; /* content limit; closers may use the space above it */
	size_t cap;   /* hard limit, including the newline */
	bool full;
	bool in_string; /* JSON: inside an open string literal */
};

/* Appends n bytes as one unit, or marks the line full and appends nothing. */
static int put_raw(struct line *l, const char *s, size_t n)
{
	if (l->full || n > l->limit - l->len) {
		l->full = true;
		return -1;
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
	return 0;
}

static int put_str(struct line *l, const char *s)
{
	return put_raw(l, s, strlen(s));
}

/* Closers: may use the reserved space, never more than cap. */
static void put_final(struct line *l, const char *s)
{
	size_t n = strlen(s);
	if (n > l->cap - l->len)
		n = l->cap - l->len;
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

/* Length of the longest registered secret found at src[i..n), or 0. When
 * the source was cut short (`src_cut`), a tail that is the beginning of a
 * secret counts too: it may be the first half of one. */
static size_t secret_at(const char *src, size_t n, size_t i, bool src_cut)
{
	for (int k = 0; k < L.nsecrets; k++) {
		size_t sl = L.secret_len[k];
		if (src[i] != L.secrets[k][0])
			continue;
		if (n - i >= sl) {
			if (memcmp(src + i, L.secrets[k], sl) == 0)
				return sl;
		} else if (src_cut && memcmp(src + i, L.secrets[k], n - i) == 0) {
			return n - i;
		}
	}
	return 0;
}

static int put_escaped_byte(struct line *l, unsigned char c, enum piece_mode mode)
{
	static const char hex[] = "0123456789abcdef";
	char e[8];
	switch (c) {
	case '\n':
		return put_raw(l, "\\n", 2);
	case '\r':
		return put_raw(l, "\\r", 2);
	case '\t':
		return put_raw(l, "\\t", 2);
	default:
		break;
	}
	if (mode == MODE_JSON)
		return put_raw(l, e, sb_json_escape_byte(c, e));
	e[0] = '\\';
	e[1] = 'x';
	e[2] = hex[c >> 4];
	e[3] = hex[c & 15];
	return put_raw(l, e, 4);
}

/* Copies a raw piece into the line, redacting secrets and escaping for
 * `mode`. Returns -1 once the line is full. */
static int put_piece(struct line *l, const char *src, size_t n, enum piece_mode mode, bool src_cut)
{
	size_t i = 0;
	while (i < n) {
		size_t sl = secret_at(src, n, i, src_cut);
		if (sl) {
			if (put_str(l, mode == MODE_TEXT_KEY ? "_redacted_" : REDACTED) < 0)
				return -1;
			i += sl;
			continue;
		}
		unsigned char c = (unsigned char)src[i];
		int rc;
		if (c >= 0x80) {
			unsigned cp;
			int len = utf8_decode(src + i, n - i, &cp);
			if (len > 0) {
				rc = mode == MODE_TEXT_KEY ? put_raw(l, "_", 1)
				                           : put_raw(l, src + i, (size_t)len);
				if (rc < 0)
					return -1;
				i += (size_t)len;
				continue;
			}
			/* invalid UTF-8: never copy it, a log line stays valid text */
			if (mode == MODE_JSON)
				rc = put_raw(l, "\\ufffd", 6);
			else if (mode == MODE_TEXT_KEY)
				rc = put_raw(l, "_", 1);
			else
				rc = put_escaped_byte(l, c, mode);
		} else if (mode == MODE_TEXT_KEY) {
			bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			          (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
			char ch = ok ? (char)c : '_';
			rc = put_raw(l, &ch, 1);
		} else if (c < 0x20 || (c == 0x7f && mode != MODE_JSON)) {
			rc = put_escaped_byte(l, c, mode);
		} else if ((c == '"' || c == '\\') &&
		           (mode == MODE_JSON || mode == MODE_TEXT_QUOTED)) {
			char e[2] = {'\\', (char)c};
			rc = put_raw(l, e, 2);
		} else {
			rc = put_raw(l, (const char *)&src[i], 1);
		}
		if (rc < 0)
			return -1;
		i++;
	}
	return 0;
}

/* The payload of a typed value (LOG_INT, LOG_BOOL): the text after
 * LOG_TYPED_MARK when it is true, false or a JSON number (RFC 8259 §6);
 * else NULL and the value is a string, mark and all. *bare is set when the
 * payload may be written unquoted: it holds no registered secret. */
static const char *typed_payload(const char *v, bool *bare)
{
	*bare = false;
	if (!v || v[0] != LOG_TYPED_MARK[0])
		return NULL;
	const char *p = v + 1, *s = p;
	if (strcmp(p, "true") != 0 && strcmp(p, "false") != 0) {
		if (*s == '-')
			s++;
		if (*s == '0')
			s++;
		else if (*s >= '1' && *s <= '9')
			while (*s >= '0' && *s <= '9')
				s++;
		else
			return NULL;
		if (*s == '.') {
			if (!(*++s >= '0' && *s <= '9'))
				return NULL;
			while (*s >= '0' && *s <= '9')
				s++;
		}
		if (*s == 'e' || *s == 'E') {
			s++;
			if (*s == '+' || *s == '-')
				s++;
			if (!(*s >= '0' && *s <= '9'))
				return NULL;
			while (*s >= '0' && *s <= '9')
				s++;
		}
		if (*s || s - p > 40)
			return NULL;
	}
	size_t n = strlen(p);
	*bare = true;
	for (size_t i = 0; i < n && *bare; i++)
		*bare = secret_at(p, n, i, false) == 0;
	return p;
}

/* Text values are quoted when they are empty or hold anything that would
 * make `key=value` ambiguous to read back. */
static bool needs_quotes(const char *v)
{
	if (!*v)
		return true;
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || *p == 0x7f)
			return true;
		if (*p >= 0x80) {
			unsigned cp;
			int n = utf8_decode((const char *)p, strlen((const char *)p), &cp);
			if (n < 0)
				return true;
			p += n - 1;
		}
	}
	return false;
}

static const char *level_upper(enum log_level lvl)
{
	switch (lvl) {
	case LOG_LEVEL_DEBUG:
		return "DEBUG";
	case LOG_LEVEL_INFO:
		return "INFO ";
	case LOG_LEVEL_WARN:
		return "WARN ";
	case LOG_LEVEL_ERROR:
		return "ERROR";
	default:
		return "?    ";
	}
}

/* ts NULL: the compact form of the echo (no time). */
static void build_text(struct line *l, const char *ts, enum log_level lvl, const char *comp,
                       const char *msg, size_t msg_len, bool msg_cut, const char *const *kv)
{
	if (ts) {
		put_str(l, ts);
		put_raw(l, " ", 1);
	}
	put_str(l, level_upper(lvl));
	put_raw(l, " ", 1);
	if (put_piece(l, comp, strlen(comp), MODE_TEXT, false) < 0 || put_raw(l, ": ", 2) < 0 ||
	    put_piece(l, msg, msg_len, MODE_TEXT, msg_cut) < 0)
		return;
	for (size_t i = 0; kv && kv[i]; i += 2) {
		const char *val = kv[i + 1];
		bool bare;
		const char *typed = typed_payload(val, &bare);
		if (typed)
			val = typed;
		char kb[LOG_KEY_MAX + 16];
		struct line key = {.buf = kb, .limit = LOG_KEY_MAX, .cap = LOG_KEY_MAX};
		put_raw(&key, " ", 1);
		put_piece(&key, kv[i], strlen(kv[i]), MODE_TEXT_KEY, false);
		key.limit = key.cap = sizeof(kb);
		key.full = false;
		bool quoted = val && needs_quotes(val);
		put_str(&key, val ? (quoted ? "=\"" : "=") : "=(null)");
		if (put_raw(l, kb, key.len) < 0)
			return;
		if (!val)
			continue;
		if (put_piece(l, val, strlen(val), quoted ? MODE_TEXT_QUOTED : MODE_TEXT, false) <
		    0)
			return;
		if (quoted && put_raw(l, "\"", 1) < 0)
			return;
	}
}

static void build_json(struct line *l, const char *ts, enum log_level lvl, const char *comp,
                       const char *msg, size_t msg_len, bool msg_cut, const char *const *kv)
{
	put_str(l, "{\"ts\":\"");
	put_str(l, ts);
	put_str(l, "\",\"level\":\"");
	put_str(l, log_level_name(lvl));
	put_str(l, "\",\"component\":\"");
	l->in_string = true;
	if (put_piece(l, comp, strlen(comp), MODE_JSON, false) < 0 ||
	    put_str(l, "\",\"msg\":\"") < 0 || put_piece(l, msg, msg_len, MODE_JSON, msg_cut) < 0)
		return;
	for (size_t i = 0; kv && kv[i]; i += 2) {
		const char *val = kv[i + 1];
		if (l->in_string) {
			if (put_raw(l, "\"", 1) < 0)
				return;
			l->in_string = false;
		}
		char kb[LOG_KEY_MAX * 6 + 16];
		struct line key = {.buf = kb, .limit = LOG_KEY_MAX, .cap = LOG_KEY_MAX};
		put_raw(&key, ",\"", 2);
		put_piece(&key, kv[i], strlen(kv[i]), MODE_JSON, false);
		key.limit = key.cap = sizeof(kb);
		key.full = false;
		bool bare;
		const char *typed = typed_payload(val, &bare);
		if (typed && !bare) {
			val = typed;
			typed = NULL;
		}
		put_str(&key, typed ? "\":" : val ? "\":\"" : "\":null");
		if (put_raw(l, kb, key.len) < 0)
			return;
		if (typed) {
			if (put_str(l, typed) < 0)
				return;
			continue;
		}
		if (!val)
			continue;
		l->in_string = true;
		if (put_piece(l, val, strlen(val), MODE_JSON, false) < 0)
			return;
	}
	if (l->in_string && put_raw(l, "\"", 1) == 0)
		l->in_string = false;
}

/* Pass 2: whole-line redaction of secrets that span pieces. Returns the
 * buffer to write (line_buf or final_buf) and its length. */
static const char *redact_line(const char *s, size_t n, size_t *out_n)
{
	bool any = false;
	for (int k = 0; k < L.nsecrets && !any; k++)
		any = memmem(s, n, L.secrets[k], L.secret_len[k]) != NULL;
	if (!any) {
		*out_n = n;
		return s;
	}
	size_t o = 0;
	bool fits = true;
	for (size_t i = 0; i < n;) {
		size_t sl = secret_at(s, n, i, false);
		const char *src = sl ? REDACTED : s + i;
		size_t len = sl ? strlen(REDACTED) : 1;
		if (len > sizeof(final_buf) - o) {
			fits = false;
			break;
		}
		memcpy(final_buf + o, src, len);
		o += len;
		i += sl ? sl : 1;
	}
	if (fits) {
		*out_n = o;
		return final_buf;
	}
	/* "[redacted]" made the line too long: mask in place instead, same
	 * length, so nothing of the secret survives. */
	memcpy(final_buf, s, n);
	for (size_t i = 0; i < n;) {
		size_t sl = secret_at(final_buf, n, i, false);
		if (sl) {
			memset(final_buf + i, '*', sl);
			i += sl;
		} else {
			i++;
		}
	}
	*out_n = n;
	return final_buf;
}

static void finish_line(struct line *l, bool json)
{
	if (l->full) {
		if (!json)
			put_final(l, TRUNCATED "\n");
		else if (l->in_string)
			put_final(l, TRUNCATED "\"}\n");
		else
			put_final(l, ",\"truncated\":true}\n");
	} else {
		put_final(l, json ? "}\n" : "\n");
	}
}

/* The rotated file got n bytes: past its bound it becomes <path>.1 (the
 * older .1 dropped) and writing goes on in a new file. When the new file
 * cannot be opened, lines go to the stream of log_init. */
static void file_grew(size_t n)
{
	L.file_size += n;
	if (L.file_size < L.file_max)
		return;
	fclose(L.file);
	L.file = NULL;
	struct ga_err err = {{0}};
	fsx_rotate(L.file_path, 0, 1, &err);
	L.file = fopen(L.file_path, "a");
	L.file_size = 0;
	if (L.file)
		setvbuf(L.file, NULL, _IOLBF, 0);
}

static void emit(enum log_level lvl, const char *comp, const char *msg, size_t msg_len,
                 bool msg_cut, const char *const *kv)
{
	char ts[TIME_ISO_LEN + 1];
	time_format_iso(time_now_ms(), ts);
	if (!comp)
		comp = "-";
	struct line l = {.buf = line_buf, .limit = LOG_LINE_MAX - LOG_RESERVE, .cap = LOG_LINE_MAX};
	if (L.json)
		build_json(&l, ts, lvl, comp, msg, msg_len, msg_cut, kv);
	else
		build_text(&l, ts, lvl, comp, msg, msg_len, msg_cut, kv);
	finish_line(&l, L.json);
	size_t n;
	const char *out = redact_line(l.buf, l.len, &n);
	FILE *f = L.file ? L.file : L.out ? L.out : stderr;
	fwrite(out, 1, n, f);
	fflush(f);
	if (L.file)
		file_grew(n);
	if (L.echo && lvl >= L.echo_min) {
		struct line e = {
		        .buf = line_buf, .limit = LOG_LINE_MAX - LOG_RESERVE, .cap = LOG_LINE_MAX};
		build_text(&e, NULL, lvl, comp, msg, msg_len, msg_cut, kv);
		finish_line(&e, false);
		out = redact_line(e.buf, e.len, &n);
		fwrite(out, 1, n, L.echo);
		fflush(L.echo);
	}
}

void log_init(enum log_level min, int json, FILE *out)
{
	L.min = min;
	if (json < 0) {
		const char *fmt = getenv("LOG_FORMAT");
		L.json = fmt && strcasecmp(fmt, "json") == 0;
	} else {
		L.json = json != 0;
	}
	L.out = out;
}

void log_set_echo(FILE *out, enum log_level min)
{
	L.echo = out;
	L.echo_min = min;
}

int log_to_file(const char *path, size_t max_bytes, struct ga_err *err)
{
	log_close_file();
	if (max_bytes && fsx_rotate(path, max_bytes, 1, err) < 0)
		return -1;
	FILE *f = fopen(path, "a");
	if (!f)
		return err_set(err, "cannot open the log %s: %s", path, strerror(errno));
	setvbuf(f, NULL, _IOLBF, 0);
	long at = ftell(f);
	L.file = f;
	L.file_path = xstrdup(path);
	L.file_max = max_bytes ? max_bytes : SIZE_MAX;
	L.file_size = at > 0 ? (size_t)at : 0;
	return 0;
}

void log_close_file(void)
{
	if (L.file)
		fclose(L.file);
	L.file = NULL;
	free(L.file_path);
	L.file_path = NULL;
}

void log_set_level(enum log_level min)
{
	L.min = min;
}

enum log_level log_get_level(void)
{
	return L.min;
}

int log_level_parse(const char *s, enum log_level *out)
{
	static const char *const names[] = {"debug", "info", "warn", "error", "off"};
	for (int i = 0; s && i < 5; i++) {
		if (strcasecmp(s, names[i]) == 0) {
			if (out)
				*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

const char *log_level_name(enum log_level lvl)
{
	switch (lvl) {
	case LOG_LEVEL_DEBUG:
		return "debug";
	case LOG_LEVEL_INFO:
		return "info";
	case LOG_LEVEL_WARN:
		return "warn";
	case LOG_LEVEL_ERROR:
		return "error";
	case LOG_LEVEL_OFF:
		return "off";
	}
	return "unknown";
}

void log_add_secret(const char *value)
{
	if (!value)
		return;
	size_t n = strlen(value);
	if (n < LOG_SECRET_MIN_LEN)
		return;
	for (int k = 0; k < L.nsecrets; k++)
		if (L.secret_len[k] == n && memcmp(L.secrets[k], value, n) == 0)
			return;
	if (L.nsecrets == LOG_MAX_SECRETS) {
		/* Say so loudly (without the value): an unredacted secret is a
		 * configuration problem someone must see. */
		log_writef(
		        LOG_LEVEL_ERROR, "log",
		        "more than %d secrets registered; a %zu-byte secret will NOT be redacted",
		        LOG_MAX_SECRETS, n);
		return;
	}
	int at = L.nsecrets;
	while (at > 0 && L.secret_len[at - 1] < n) {
		L.secrets[at] = L.secrets[at - 1];
		L.secret_len[at] = L.secret_len[at - 1];
		at--;
	}
	L.secrets[at] = xstrdup(value);
	L.secret_len[at] = n;
	L.nsecrets++;
}

void log_remove_secret(const char *value)
{
	if (!value)
		return;
	size_t n = strlen(value);
	for (int k = 0; k < L.nsecrets; k++) {
		if (L.secret_len[k] != n || memcmp(L.secrets[k], value, n) != 0)
			continue;
		memset(L.secrets[k], 0, n);
		free(L.secrets[k]);
		/* keep the table sorted longest first */
		for (int j = k; j + 1 < L.nsecrets; j++) {
			L.secrets[j] = L.secrets[j + 1];
			L.secret_len[j] = L.secret_len[j + 1];
		}
		L.nsecrets--;
		L.secrets[L.nsecrets] = NULL;
		return;
	}
}

void log_clear_secrets(void)
{
	for (int k = 0; k < L.nsecrets; k++) {
		/* scrub before freeing: the heap may be dumped later */
		memset(L.secrets[k], 0, L.secret_len[k]);
		free(L.secrets[k]);
		L.secrets[k] = NULL;
	}
	L.nsecrets = 0;
}

char *log_redact(const char *s)
{
	if (!s)
		return xstrdup("");
	size_t n = strlen(s);
	struct strbuf sb = {0};
	sb_init(&sb, STRBUF_DEFAULT_MAX);
	for (size_t i = 0; i < n;) {
		size_t sl = secret_at(s, n, i, false);
		if (sl) {
			sb_puts(&sb, REDACTED);
			i += sl;
		} else {
			sb_putc(&sb, s[i]);
			i++;
		}
	}
	return sb_detach(&sb);
}

void log_write(enum log_level lvl, const char *component, const char *msg, const char *const *kv)
{
	if (lvl < L.min || lvl >= LOG_LEVEL_OFF)
		return;
	if (!msg)
		msg = "";
	emit(lvl, component, msg, strlen(msg), false, kv);
}

void log_writef(enum log_level lvl, const char *component, const char *fmt, ...)
{
	if (lvl < L.min || lvl >= LOG_LEVEL_OFF)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg_buf, sizeof(msg_buf), fmt, ap);
	va_end(ap);
	if (n < 0) {
		msg_buf[0] = '\0';
		n = 0;
	}
	bool cut = (size_t)n >= sizeof(msg_buf);
	emit(lvl, component, msg_buf, cut ? sizeof(msg_buf) - 1 : (size_t)n, cut, NULL);
}

const char *log_itoa(char *buf, long long v)
{
	snprintf(buf, 24, "%lld", v);
	return buf;
}

const char *log_num(char *buf, long long v)
{
	snprintf(buf, LOG_NUM_BUF, LOG_TYPED_MARK "%lld", v);
	return buf;
}
