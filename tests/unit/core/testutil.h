/* Small helpers for the foundation's unit tests: temp dirs and files. */
#ifndef GA_TESTS_CORE_TESTUTIL_H
#define GA_TESTS_CORE_TESTUTIL_H

#include <stddef.h>

/* mkdtemp under TMPDIR; caller frees and removes with tu_rmrf. */
char *tu_tempdir(void);
void tu_rmrf(const char *path);
void tu_write(const char *dir, const char *name, const char *content);
/* Whole file (caller frees), or NULL. */
char *tu_read(const char *dir, const char *name);
/* Number of entries in dir whose name starts with prefix. */
int tu_count_prefix(const char *dir, const char *prefix);

#endif
