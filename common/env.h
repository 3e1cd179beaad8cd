/*
 * env — the `.env` file format and the environment overlay.
 *
 * Grammar (one assignment per line, as dotenv and shells write them):
 *   # comment                       whole-line comment
 *   KEY=value                       unquoted: trimmed; " #" starts a comment
 *   export KEY=value                the `export ` prefix is accepted
 *   KEY='literal $ \n value'        single quotes: taken verbatim
 *   KEY="line\nnext \"q\" \\ \t"    double quotes: \n \r \t \" \\ \$ escapes;
 *                                   may span lines (PEM keys)
 *   KEY=                            empty value
 * Keys are [A-Za-z_][A-Za-z0-9_]*. Anything else is an error that names the
 * line ("line 4: expected KEY=VALUE, got 'FOO BAR'"). A later assignment of
 * the same key replaces the earlier one.
 *
 * Lookup order: the process environment wins over the file, so an operator
 * can override one value without editing the file.
 *
 * Bounds: a file of at most ENV_MAX_FILE_BYTES, at most ENV_MAX_ENTRIES keys.
 */
#ifndef GA_COMMON_ENV_H
#define GA_COMMON_ENV_H

#include <stddef.h>

#include "err.h"

#define ENV_MAX_FILE_BYTES (1024 * 1024)
#define ENV_MAX_ENTRIES    1024

struct env_entry {
	char *key;
	char *value;
	int line;
};

struct env_file {
	struct env_entry *entries;
	size_t count;
	char *path; /* NULL when parsed from memory */
};

/* Parses text; on success fills *out (free with env_file_free). On error
 * returns -1, *out is left empty, and err names the line and the problem. */
int env_parse(const char *text, size_t len, struct env_file *out, struct ga_err *err);

/* Loads a file. A missing file is not an error: *out is empty and
 * *missing (if non-NULL) is set to 1. */
int env_load_file(const char *path, struct env_file *out, int *missing, struct ga_err *err);

void env_file_free(struct env_file *f);

/* The file's value for key, or NULL. Borrowed. */
const char *env_file_get(const struct env_file *f, const char *key);

/* getenv(key) if set (even to ""), else the file's value, else NULL.
 * f may be NULL. Borrowed. */
const char *env_lookup(const struct env_file *f, const char *key);

#endif
