/*
 * err — see err.h. vsnprintf truncates long messages into the fixed buffer.
 */
#include "common/err.h"

#include <stdarg.h>
#include <stdio.h>

int err_set(struct ga_err *err, const char *fmt, ...)
{
	if (!err)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		err->msg[0] = '\0';
	return -1;
}

void err_fmt(char *buf, size_t cap, const char *fmt, ...)
{
	if (!buf || cap == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (vsnprintf(buf, cap, fmt, ap) < 0)
		buf[0] = '\0';
	va_end(ap);
}

void err_clear(struct ga_err *err)
{
	if (err)
		err->msg[0] = '\0';
}
