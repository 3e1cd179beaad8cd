/* Helpers shared by the files of modules/reflection (not public). */
#ifndef GA_MODULES_REFLECTION_INTERNAL_H
#define GA_MODULES_REFLECTION_INTERNAL_H

#include <ctype.h>
#include <stdbool.h>

/* True for NULL, "" and white space only. */
static inline bool refl_blank(const char *s)
{
	for (; s && *s; s++)
		if (!isspace((unsigned char)*s))
			return false;
	return true;
}

#endif
