/* Small helpers shared by the tests: temp dirs and files. */
#ifndef GA_TESTS_SUPPORT_TESTUTIL_H
#define GA_TESTS_SUPPORT_TESTUTIL_H

#include <stddef.h>

/* mkdtemp under TMPDIR; caller frees and removes with tu_rmrf. */
char *tu_tempdir(void);
void tu_rmrf(const char *path);
void tu_write(const char *dir, const char *name, const char *content);
/* Whole file dir/name — or dir alone when name is NULL — (caller frees),
 * or NULL. */
char *tu_read(const char *dir, const char *name);
/* Number of entries in dir whose name starts with prefix. */
int tu_count_prefix(const char *dir, const char *prefix);

#endif
