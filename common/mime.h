/*
 * mime — what the two static web servers of the project (the dashboard,
 * modules/dashboard, and the room's web page, space/web) share about the
 * page files they serve: one content-type table, one rule for the names a
 * request may ask for, and the lookup of a requested name among the files
 * read at start.
 *
 * Both servers read their page directory once and serve from memory, so a
 * request can only ever name one of those files: no path a client sends
 * reaches the file system. mime_name_ok is the rule that keeps it so (one
 * path segment of [A-Za-z0-9._-], not starting with '.', bounded).
 *
 * A struct mime_file owns its name and data (mime_file_clear frees both);
 * type points into the static table (never freed).
 */
#ifndef GA_COMMON_MIME_H
#define GA_COMMON_MIME_H

#include <stdbool.h>
#include <stddef.h>

struct mime_file {
	char *name; /* the file's name in its directory: what a request names */
	char *data; /* the whole file, NUL-terminated */
	size_t len; /* bytes of data, without the NUL */
	const char *type;
};

/* The Content-Type for a file name by its extension (".html", ".css",
 * ".js", ".svg", ".png", ".ico", ".txt", ".json"; exact case), or NULL when
 * the extension is not one the servers serve. Static string. */
const char *mime_type(const char *name);

/* True when name[0..len) is one path segment of [A-Za-z0-9._-], not
 * starting with '.' (so neither ".." nor a hidden file), of 1 to max_len
 * bytes. name need not be NUL-terminated; NULL is false. */
bool mime_name_ok(const char *name, size_t len, size_t max_len);

/* The file whose name is exactly name[0..len), or NULL. */
const struct mime_file *mime_file_find(const struct mime_file *files, size_t n, const char *name,
                                       size_t len);

/* Frees name and data and zeroes the file. */
void mime_file_clear(struct mime_file *f);

#endif
