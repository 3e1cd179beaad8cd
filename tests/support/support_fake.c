/*
 * support_fake — see support_fake.h.
 */
#include "support_fake.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support_wait.h"

int support_fake_start(struct support_fake *f, const char *binary, const char *dir,
                       const char *const *argv, char *err, size_t errlen)
{
	memset(f, 0, sizeof *f);
	const char *build = getenv("GA_BUILD_DIR");
	const char *name = strrchr(binary, '/') ? strrchr(binary, '/') + 1 : binary;
	char bin[600];
	if (!build || !*build) {
		snprintf(err, errlen, "GA_BUILD_DIR is not set: cannot find %s", binary);
		return -1;
	}
	snprintf(bin, sizeof bin, "%s/%s", build, binary);
	snprintf(f->port_file, sizeof f->port_file, "%s/%s.port", dir, name);
	snprintf(f->record, sizeof f->record, "%s/%s.requests", dir, name);
	unlink(f->port_file);
	const char *args[PROC_MAX_ARGS];
	size_t n = 0;
	for (const char *const *a = argv; a && *a; a++) {
		if (n + 5 > PROC_MAX_ARGS) {
			snprintf(err, errlen, "%s: more than %d arguments", name,
			         PROC_MAX_ARGS - 5);
			return -1;
		}
		args[n++] = *a;
	}
	args[n++] = "--port-file";
	args[n++] = f->port_file;
	args[n++] = "--record";
	args[n++] = f->record;
	args[n] = NULL;
	struct proc_opts o = {.binary = bin, .cwd = dir, .argv = args};
	if (proc_start_opts(&f->proc, &o) != 0) {
		snprintf(err, errlen, "cannot start %s (is the target built?)", bin);
		return -1;
	}
	f->started = true;
	char why[700];
	f->port = support_wait_port_file(&f->proc, f->port_file, SUPPORT_WAIT_MS, why, sizeof why);
	if (f->port < 0) {
		char *e = proc_stderr(&f->proc);
		snprintf(err, errlen, "%s did not start: %s; its stderr:\n%s", name, why,
		         e ? e : "(unreadable)");
		free(e);
		proc_cleanup(&f->proc);
		f->started = false;
		return -1;
	}
	snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d", f->port);
	return 0;
}

int support_fake_stop(struct support_fake *f)
{
	if (!f->started)
		return -1;
	proc_signal(&f->proc, SIGTERM);
	int rc = proc_wait(&f->proc, SUPPORT_WAIT_MS);
	proc_cleanup(&f->proc); /* kills it if it did not stop */
	f->started = false;
	return rc;
}
