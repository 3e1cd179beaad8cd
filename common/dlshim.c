/*
 * dlshim — see dlshim.h. The failure message is built once into s->failure
 * and copied to every later caller, so the sticky outcome reads the same
 * each time.
 */
#include "common/dlshim.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static int fail(struct dlshim *s, struct ga_err *err)
{
	s->state = -1;
	s->loaded_name = NULL;
	if (s->table && s->table_size)
		memset(s->table, 0, s->table_size);
	return err_set(err, "%s", s->failure);
}

/* "cannot load a (why) or b (why): hint". Each dlerror() text is copied at
 * once: the next dlopen() overwrites it. Truncated at the buffer's end. */
static void *open_first(struct dlshim *s)
{
	size_t used = 0;
	int n = snprintf(s->failure, sizeof s->failure, "cannot load ");
	if (n > 0)
		used = (size_t)n;
	for (size_t i = 0; i < DLSHIM_NAMES_MAX && s->names[i]; i++) {
		void *h = dlopen(s->names[i],
		                 s->dlopen_flags ? s->dlopen_flags : RTLD_NOW | RTLD_LOCAL);
		if (h) {
			s->loaded_name = s->names[i];
			return h;
		}
		const char *why = dlerror();
		if (used < sizeof s->failure) {
			n = snprintf(s->failure + used, sizeof s->failure - used, "%s%s (%s)",
			             i ? " or " : "", s->names[i], why ? why : "no reason given");
			if (n > 0)
				used += (size_t)n;
		}
	}
	if (used < sizeof s->failure)
		snprintf(s->failure + used, sizeof s->failure - used, ": %s",
		         s->install_hint ? s->install_hint : "the library is not installed");
	return NULL;
}

int dlshim_load(struct dlshim *s, struct ga_err *err)
{
	if (s->state > 0)
		return 0;
	if (s->state < 0)
		return err_set(err, "%s", s->failure);
	if (!s->names[0]) {
		err_fmt(s->failure, sizeof s->failure, "dlshim: no library name given");
		return fail(s, err);
	}
	if (!s->table) {
		err_fmt(s->failure, sizeof s->failure, "dlshim: %s has no table to fill",
		        s->names[0]);
		return fail(s, err);
	}
	for (size_t i = 0; i < s->nsyms; i++) {
		if (s->syms[i].offset > s->table_size ||
		    s->table_size - s->syms[i].offset < sizeof(void *)) {
			err_fmt(s->failure, sizeof s->failure,
			        "dlshim: %s: the slot of %s (offset %zu) is outside its %zu-byte "
			        "table",
			        s->names[0], s->syms[i].name, s->syms[i].offset, s->table_size);
			return fail(s, err);
		}
	}
	void *h = open_first(s);
	if (!h)
		return fail(s, err);
	for (size_t i = 0; i < s->nsyms; i++) {
		void *f = dlsym(h, s->syms[i].name);
		if (!f) {
			err_fmt(s->failure, sizeof s->failure, "%s has no %s: %s", s->loaded_name,
			        s->syms[i].name,
			        s->missing_hint ? s->missing_hint : "the library is too old");
			dlclose(h);
			return fail(s, err);
		}
		/* POSIX guarantees data and function pointers convert through
		 * dlsym; memcpy keeps the conversion well defined in C. */
		memcpy((char *)s->table + s->syms[i].offset, &f, sizeof f);
	}
	/* h is deliberately never closed (dlshim.h: global state). */
	s->state = 1;
	return 0;
}
