/*
 * skills — see skills.h.
 */
#include "modules/skills/skills.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fsx.h"
#include "common/strbuf.h"
#include "common/utf8.h"
#include "common/xalloc.h"

static char *trim_dup(const char *s, size_t len)
{
	while (len && isspace((unsigned char)*s)) {
		s++;
		len--;
	}
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	return xstrndup(s, len);
}

static void skill_free(struct skill *sk)
{
	free(sk->name);
	free(sk->path);
	free(sk->body);
	for (size_t i = 0; i < sk->n_sections; i++) {
		free(sk->sections[i].name);
		free(sk->sections[i].body);
	}
	for (size_t i = 0; i < sk->n_meta; i++) {
		free(sk->meta[i].key);
		free(sk->meta[i].value);
	}
	memset(sk, 0, sizeof *sk);
}

void skills_free(struct skills *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		skill_free(&s->items[i]);
	free(s->items);
	s->items = NULL;
	s->n = 0;
}

const char *skill_meta(const struct skill *sk, const char *key)
{
	for (size_t i = 0; i < sk->n_meta; i++)
		if (strcmp(sk->meta[i].key, key) == 0)
			return sk->meta[i].value;
	return NULL;
}

/* Splits text (NUL-terminated) into front matter, body and sections. */
static int parse_skill(struct skill *sk, const char *text, struct ga_err *err)
{
	const char *p = text;
	if (strncmp(p, "---\n", 4) == 0) {
		const char *end = strstr(p + 4, "\n---");
		if (!end)
			return err_set(err,
			               "%s: the front matter opened with '---' is never closed",
			               sk->path);
		const char *line = p + 4;
		while (line < end + 1) {
			const char *nl = memchr(line, '\n', (size_t)(end + 1 - line));
			if (!nl)
				nl = end + 1;
			const char *colon = memchr(line, ':', (size_t)(nl - line));
			if (colon && sk->n_meta < SKILL_META_MAX) {
				sk->meta[sk->n_meta].key = trim_dup(line, (size_t)(colon - line));
				sk->meta[sk->n_meta].value =
				        trim_dup(colon + 1, (size_t)(nl - colon - 1));
				sk->n_meta++;
			}
			line = nl + 1;
		}
		p = end + 4;
		while (*p && *p != '\n')
			p++;
	}
	sk->body = trim_dup(p, strlen(p));

	/* sections: "## " at the start of a line, outside code fences */
	const char *cur_name = NULL, *cur_start = NULL;
	size_t cur_name_len = 0;
	bool fence = false;
	const char *line = sk->body;
	for (;;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		if (len >= 3 && strncmp(line, "```", 3) == 0)
			fence = !fence;
		bool heading = !fence && len > 3 && strncmp(line, "## ", 3) == 0;
		if (heading || !nl) {
			const char *stop = heading ? line : line + len;
			if (cur_name) {
				if (sk->n_sections >= SKILL_SECTIONS_MAX)
					return err_set(err, "%s has more than %d sections",
					               sk->path, SKILL_SECTIONS_MAX);
				struct skill_section *sec = &sk->sections[sk->n_sections++];
				sec->name = trim_dup(cur_name, cur_name_len);
				sec->body = trim_dup(cur_start, (size_t)(stop - cur_start));
			}
			if (heading) {
				cur_name = line + 3;
				cur_name_len = len - 3;
				cur_start = nl ? nl + 1 : line + len;
			}
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	return 0;
}

static bool skip_name(const char *name)
{
	size_t n = strlen(name);
	return name[0] == '.' || (n > 9 && strcmp(name + n - 9, ".template") == 0) ||
	       n >= SKILL_NAME_MAX;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(((const struct skill *)a)->name, ((const struct skill *)b)->name);
}

int skills_load(struct skills *out, const char *const *dirs, size_t n_dirs, struct ga_err *err)
{
	struct skills s = {0};
	s.items = xcalloc(SKILLS_MAX, sizeof *s.items);
	for (size_t d = 0; d < n_dirs; d++) {
		if (!dirs[d])
			continue;
		DIR *dir = opendir(dirs[d]);
		if (!dir)
			continue; /* a missing directory just has no skills */
		struct dirent *de;
		while ((de = readdir(dir))) {
			if (skip_name(de->d_name))
				continue;
			bool dup = false;
			for (size_t i = 0; i < s.n; i++)
				dup |= strcmp(s.items[i].name, de->d_name) == 0;
			if (dup)
				continue; /* an earlier directory wins */
			char *sub = fsx_join(dirs[d], de->d_name);
			char *path = fsx_join(sub, "SKILL.md");
			free(sub);
			if (!fsx_exists(path)) {
				free(path);
				continue;
			}
			if (s.n >= SKILLS_MAX) {
				err_set(err, "more than %d skills under %s", SKILLS_MAX, dirs[d]);
				free(path);
				closedir(dir);
				skills_free(&s);
				return -1;
			}
			struct ga_err ferr = {{0}};
			size_t len = 0;
			char *text = fsx_read_file(path, SKILL_FILE_MAX_BYTES, &len, &ferr);
			if (!text || !utf8_valid(text, len) || memchr(text, '\0', len)) {
				if (text)
					err_set(err, "%s is not valid UTF-8 text", path);
				else
					err_set(err, "%s", ferr.msg);
				free(text);
				free(path);
				closedir(dir);
				skills_free(&s);
				return -1;
			}
			struct skill *sk = &s.items[s.n++];
			sk->name = xstrdup(de->d_name);
			sk->path = path;
			int rc = parse_skill(sk, text, err);
			free(text);
			if (rc != 0) {
				closedir(dir);
				skills_free(&s);
				return -1;
			}
		}
		closedir(dir);
	}
	qsort(s.items, s.n, sizeof *s.items, cmp_names);
	*out = s;
	return 0;
}

int skills_reload(struct skills *s, const char *const *dirs, size_t n_dirs, struct ga_err *err)
{
	struct skills fresh;
	if (skills_load(&fresh, dirs, n_dirs, err) != 0)
		return -1;
	skills_free(s);
	*s = fresh;
	return 0;
}

const struct skill *skills_find(const struct skills *s, const char *name)
{
	for (size_t i = 0; name && i < s->n; i++)
		if (strcmp(s->items[i].name, name) == 0)
			return &s->items[i];
	return NULL;
}

char *skills_substitute(const char *tmpl, const struct skill_var *vars, size_t n_vars,
                        const char *where, struct ga_err *err)
{
	struct strbuf sb = {0};
	sb_init(&sb, SKILL_RENDER_MAX_BYTES);
	const char *p = tmpl;
	while (*p) {
		const char *open = strstr(p, "{{");
		if (!open) {
			if (sb_puts(&sb, p) != 0)
				goto too_big;
			break;
		}
		if (sb_append(&sb, p, (size_t)(open - p)) != 0)
			goto too_big;
		const char *close = strstr(open + 2, "}}");
		if (!close) {
			sb_free(&sb);
			err_set(err, "%s has a '{{' that is never closed with '}}'", where);
			return NULL;
		}
		const char *n = open + 2, *e = close;
		while (n < e && *n == ' ')
			n++;
		while (e > n && e[-1] == ' ')
			e--;
		size_t nlen = (size_t)(e - n);
		const char *value = NULL;
		for (size_t i = 0; i < n_vars; i++)
			if (strlen(vars[i].name) == nlen && strncmp(vars[i].name, n, nlen) == 0) {
				value = vars[i].value;
				break;
			}
		if (!value) {
			sb_free(&sb);
			err_set(err, "%s uses {{%.*s}} but no value was given", where,
			        (int)(nlen > 60 ? 60 : nlen), n);
			return NULL;
		}
		if (sb_puts(&sb, value) != 0)
			goto too_big;
		p = close + 2;
	}
	return sb_detach(&sb);
too_big:
	sb_free(&sb);
	err_set(err, "%s renders to more than %d bytes", where, SKILL_RENDER_MAX_BYTES);
	return NULL;
}

static char *subsection(const char *body, const char *name)
{
	size_t nlen = strlen(name);
	const char *line = body;
	while (line && *line) {
		if (strncmp(line, "### ", 4) == 0) {
			const char *nl = strchr(line, '\n');
			size_t len = nl ? (size_t)(nl - line) : strlen(line);
			char *h = trim_dup(line + 4, len - 4);
			bool hit = strlen(h) == nlen && strcmp(h, name) == 0;
			free(h);
			if (hit) {
				const char *start = nl ? nl + 1 : line + len;
				const char *next = strstr(start, "\n### ");
				const char *end = next ? next : start + strlen(start);
				return trim_dup(start, (size_t)(end - start));
			}
		}
		const char *nl = strchr(line, '\n');
		line = nl ? nl + 1 : NULL;
	}
	return NULL;
}

static char *loaded_names(const struct skills *s)
{
	struct strbuf sb = {0};
	sb_init(&sb, 4096);
	for (size_t i = 0; i < s->n; i++)
		sb_printf(&sb, "%s%s", i ? ", " : "", s->items[i].name);
	if (!s->n)
		sb_puts(&sb, "none");
	return sb_detach(&sb);
}

char *skills_render(const struct skills *s, const char *skill, const char *section,
                    const struct skill_var *vars, size_t n_vars, struct ga_err *err)
{
	const struct skill *sk = skills_find(s, skill);
	if (!sk) {
		char *names = loaded_names(s);
		err_set(err, "unknown skill '%s'; loaded: %s", skill ? skill : "(null)", names);
		free(names);
		return NULL;
	}
	const char *text = NULL;
	char *owned = NULL;
	char label[200];
	if (!section) {
		text = sk->body;
		snprintf(label, sizeof label, "skill '%s'", sk->name);
		for (size_t i = 0; i < sk->n_sections; i++)
			if (strcmp(sk->sections[i].name, SKILLS_SYSTEM_SECTION) == 0) {
				text = sk->sections[i].body;
				snprintf(label, sizeof label, "skill '%s' section '%s'", sk->name,
				         SKILLS_SYSTEM_SECTION);
			}
	} else {
		char sec[128];
		snprintf(sec, sizeof sec, "%s", section);
		char *slash = strchr(sec, '/');
		if (slash)
			*slash = '\0';
		for (size_t i = 0; i < sk->n_sections; i++)
			if (strcmp(sk->sections[i].name, sec) == 0)
				text = sk->sections[i].body;
		if (text && slash) {
			owned = subsection(text, slash + 1);
			text = owned;
		}
		if (!text) {
			err_set(err, "skill '%s' has no section '%s' (%s)", sk->name, section,
			        sk->path);
			return NULL;
		}
		snprintf(label, sizeof label, "skill '%s' section '%s'", sk->name, section);
	}
	char *out = skills_substitute(text, vars, n_vars, label, err);
	free(owned);
	return out;
}

char *skills_system_prompt(const char *soul, const char *self, const char *skill_text)
{
	struct strbuf sb = {0};
	const char *parts[] = {soul, self, skill_text};
	bool any = false;
	for (size_t i = 0; i < 3; i++) {
		if (!parts[i] || !*parts[i])
			continue;
		if (any)
			sb_puts(&sb, "\n\n---\n\n");
		sb_puts(&sb, parts[i]);
		any = true;
	}
	return sb_detach(&sb);
}
