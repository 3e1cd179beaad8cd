/*
 * xalloc — allocation helpers that never return NULL.
 *
 * On allocation failure they print one line to stderr and abort(): a daemon
 * that cannot allocate 64 bytes cannot do anything useful, and checking every
 * small allocation hides the real error paths. Sizes are checked for
 * multiplication overflow.
 */
#ifndef GA_COMMON_XALLOC_H
#define GA_COMMON_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
/* reallocarray semantics: p resized to nmemb*size, overflow aborts. */
void *xreallocarray(void *p, size_t nmemb, size_t size);
char *xstrdup(const char *s);
/* Copies at most n bytes of s and NUL-terminates. */
char *xstrndup(const char *s, size_t n);
/* Like asprintf; caller frees. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
