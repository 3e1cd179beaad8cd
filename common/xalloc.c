/*
 * xalloc — see xalloc.h. Failure is fatal by design: one line on stderr,
 * then abort() so a core dump shows where memory ran out.
 */
#include "common/xalloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(const char *what, size_t n)
{
	fprintf(stderr, "fatal: out of memory in %s (%zu bytes)\n", what, n);
	abort();
}

void *xmalloc(size_t n)
{
	/* malloc(0) may return NULL legitimately; ask for one byte instead so
	 * NULL always means failure. */
	void *p = malloc(n ? n : 1);
	if (!p)
		oom("xmalloc", n);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	if (size && nmemb > SIZE_MAX / size)
		oom("xcalloc (size overflow)", SIZE_MAX);
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		oom("xcalloc", nmemb * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom("xrealloc", n);
	return q;
}

void *xreallocarray(void *p, size_t nmemb, size_t size)
{
	if (size && nmemb > SIZE_MAX / size)
		oom("xreallocarray (size overflow)", SIZE_MAX);
	return xrealloc(p, nmemb * size);
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s);
	char *p = xmalloc(n + 1);
	memcpy(p, s, n + 1);
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = xmalloc(len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *p = NULL;
	int n = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (n < 0 || !p)
		oom("xasprintf", 0);
	return p;
}
