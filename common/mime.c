/*
 * mime — content types and page-file names for the static web servers. See
 * mime.h.
 */
#include "common/mime.h"

#include <stdlib.h>
#include <string.h>

static const struct {
	const char *ext, *type;
} types[] = {
        {".html", "text/html; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".txt", "text/plain; charset=utf-8"},
        /* JSON is UTF-8 by definition (RFC 8259 defines no charset). */
        {".json", "application/json"},
};

const char *mime_type(const char *name)
{
	const char *dot = name ? strrchr(name, '.') : NULL;
	for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
		if (strcmp(dot, types[i].ext) == 0)
			return types[i].type;
	return NULL;
}

bool mime_name_ok(const char *name, size_t len, size_t max_len)
{
	if (!name || len == 0 || len > max_len || name[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

const struct mime_file *mime_file_find(const struct mime_file *files, size_t n, const char *name,
                                       size_t len)
{
	for (size_t i = 0; name && i < n; i++)
		if (files[i].name && strlen(files[i].name) == len &&
		    memcmp(files[i].name, name, len) == 0)
			return &files[i];
	return NULL;
}

void mime_file_clear(struct mime_file *f)
{
	free(f->name);
	free(f->data);
	memset(f, 0, sizeof *f);
}
