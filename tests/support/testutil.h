/* Small helpers shared by the tests: temp dirs and files. */
#ifndef GA_TESTS_SUPPORT_TESTUTIL_H
#define GA_TESTS_SUPPORT_TESTUTIL_H

#include <stddef.h>

/* GA_TEST_SANITIZED: built with AddressSanitizer (gcc or clang). Timing
 * bounds that state a requirement keep it
 * in a plain build and get room for ASan's slowdown on a loaded CI
 * machine in a sanitizer build. */
#if defined(__SANITIZE_ADDRESS__)
#define GA_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GA_TEST_SANITIZED 1
#endif
#endif

/* mkdtemp under TMPDIR; caller frees and removes with tu_rmrf. */
char *tu_tempdir(void);
void tu_rmrf(const char *path);
void tu_write(const char *dir, const char *name, const char *content);
/* Whole file dir/name — or dir alone when name is NULL — (caller frees),
 * or NULL. */
char *tu_read(const char *dir, const char *name);
/* Number of entries in dir whose name starts with prefix. */
int tu_count_prefix(const char *dir, const char *prefix);
/* The number after "key:" in /proc/PID/status (VmRSS, VmHWM: kB), or -1. */
long tu_proc_status_kb(int pid, const char *key);

#endif
