/*
 * env — `.env` parsing. See env.h for the grammar.
 */
#include "common/env.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsx.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

static void env_set(struct env_file *f, const char *key, size_t klen, char *value, int line)
{
	for (size_t i = 0; i < f->count; i++) {
		if (strlen(f->entries[i].key) == klen &&
		    memcmp(f->entries[i].key, key, klen) == 0) {
			free(f->entries[i].value);
			f->entries[i].value = value;
			f->entries[i].line = line;
			return;
		}
	}
	f->entries = xreallocarray(f->entries, f->count + 1, sizeof *f->entries);
	f->entries[f->count].key = xstrndup(key, klen);
	f->entries[f->count].value = value;
	f->entries[f->count].line = line;
	f->count++;
}

void env_file_free(struct env_file *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->count; i++) {
		free(f->entries[i].key);
		free(f->entries[i].value);
	}
	free(f->entries);
	free(f->path);
	memset(f, 0, sizeof *f);
}

/* Shows the offending line in an error, bounded and without control bytes. */
static void excerpt(const char *s, const char *end, char out[48])
{
	size_t n = 0;
	while (s < end && *s != '\n' && n < 40) {
		unsigned char c = (unsigned char)*s++;
		out[n++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	if (s < end && *s != '\n')
		memcpy(out + n, "...", 3), n += 3;
	out[n] = '\0';
}

int env_parse(const char *text, size_t len, struct env_file *out, struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	if (len > ENV_MAX_FILE_BYTES)
		return err_set(err, "the .env file is larger than %d bytes", ENV_MAX_FILE_BYTES);
	const char *p = text, *end = text + len;
	int line = 0;
	struct strbuf val = {0};
	sb_init(&val, ENV_MAX_FILE_BYTES);

	while (p < end) {
		line++;
		const char *ls = p;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p >= end)
			break;
		if (*p == '\n' || *p == '\r' || *p == '#') {
			while (p < end && *p != '\n')
				p++;
			if (p < end)
				p++;
			continue;
		}
		if ((size_t)(end - p) > 7 && memcmp(p, "export", 6) == 0 &&
		    (p[6] == ' ' || p[6] == '\t')) {
			p += 6;
			while (p < end && (*p == ' ' || *p == '\t'))
				p++;
		}
		const char *key = p;
		/* "export" followed only by blanks at the end of the input. */
		if (p >= end || !(isalpha((unsigned char)*p) || *p == '_'))
			goto bad_line;
		while (p < end && (isalnum((unsigned char)*p) || *p == '_'))
			p++;
		size_t klen = (size_t)(p - key);
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p >= end || *p != '=')
			goto bad_line;
		p++;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;

		sb_reset(&val);
		if (p < end && *p == '\'') {
			const char *q = memchr(p + 1, '\'', (size_t)(end - p - 1));
			const char *nl = memchr(p + 1, '\n', (size_t)(end - p - 1));
			if (!q || (nl && nl < q)) {
				sb_free(&val);
				env_file_free(out);
				return err_set(err, "line %d: unterminated single quote in %.*s",
				               line, (int)klen, key);
			}
			sb_append(&val, p + 1, (size_t)(q - p - 1));
			p = q + 1;
		} else if (p < end && *p == '"') {
			int start_line = line;
			p++;
			for (;;) {
				if (p >= end) {
					sb_free(&val);
					env_file_free(out);
					return err_set(err,
					               "line %d: unterminated double quote in %.*s",
					               start_line, (int)klen, key);
				}
				char c = *p++;
				if (c == '"')
					break;
				if (c == '\n')
					line++;
				if (c == '\\' && p < end) {
					char e = *p++;
					switch (e) {
					case 'n':
						c = '\n';
						break;
					case 'r':
						c = '\r';
						break;
					case 't':
						c = '\t';
						break;
					case '"':
						c = '"';
						break;
					case '\\':
						c = '\\';
						break;
					case '$':
						c = '$';
						break;
					default:
						/* Unknown escape: keep it as written,
						 * as dotenv does. */
						sb_putc(&val, '\\');
						c = e;
						break;
					}
				}
				sb_putc(&val, c);
			}
		} else {
			const char *vs = p;
			while (p < end && *p != '\n') {
				if (*p == '#' && (p == vs || p[-1] == ' ' || p[-1] == '\t'))
					break;
				p++;
			}
			const char *ve = p;
			while (ve > vs && (ve[-1] == ' ' || ve[-1] == '\t' || ve[-1] == '\r'))
				ve--;
			sb_append(&val, vs, (size_t)(ve - vs));
		}
		/* After the value: only blanks or a comment may follow. */
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
			p++;
		if (p < end && *p == '#')
			while (p < end && *p != '\n')
				p++;
		if (p < end && *p != '\n') {
			char ex[48];
			excerpt(ls, end, ex);
			sb_free(&val);
			env_file_free(out);
			return err_set(err,
			               "line %d: unexpected text after the value of %.*s: '%s'",
			               line, (int)klen, key, ex);
		}
		if (p < end)
			p++;
		if (out->count >= ENV_MAX_ENTRIES) {
			sb_free(&val);
			env_file_free(out);
			return err_set(err, "line %d: more than %d keys", line, ENV_MAX_ENTRIES);
		}
		env_set(out, key, klen, sb_detach(&val), line);
		continue;

	bad_line : {
		char ex[48];
		excerpt(ls, end, ex);
		sb_free(&val);
		env_file_free(out);
		return err_set(err, "line %d: expected KEY=VALUE, got '%s'", line, ex);
	}
	}
	sb_free(&val);
	return 0;
}

int env_load_file(const char *path, struct env_file *out, int *missing, struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	if (missing)
		*missing = 0;
	size_t len = 0;
	struct ga_err rerr = {{0}};
	errno = 0;
	char *text = fsx_read_file(path, ENV_MAX_FILE_BYTES, &len, &rerr);
	if (!text) {
		if (errno == ENOENT) {
			if (missing)
				*missing = 1;
			return 0;
		}
		return err_set(err, "%s", rerr.msg);
	}
	struct ga_err perr = {{0}};
	int rc = env_parse(text, len, out, &perr);
	free(text);
	if (rc != 0)
		return err_set(err, "%s: %s", path, perr.msg);
	out->path = xstrdup(path);
	return 0;
}

const char *env_file_get(const struct env_file *f, const char *key)
{
	if (!f)
		return NULL;
	for (size_t i = 0; i < f->count; i++)
		if (strcmp(f->entries[i].key, key) == 0)
			return f->entries[i].value;
	return NULL;
}

const char *env_lookup(const struct env_file *f, const char *key)
{
	const char *v = getenv(key);
	if (v)
		return v;
	return env_file_get(f, key);
}
