/*
 * httpfake_proc — the fake server programs' signals, record and port file.
 * See httpfake_proc.h.
 */
#include "tests/fakes/httpfake/httpfake_proc.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void httpfake_proc_init(struct httpfake_proc *pr, const char *prog)
{
	memset(pr, 0, sizeof *pr);
	pr->prog = prog;
	sigemptyset(&pr->stop);
	sigaddset(&pr->stop, SIGTERM);
	sigaddset(&pr->stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &pr->stop, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void write_record(const struct httpfake_request *req, void *userdata)
{
	const struct httpfake_proc *pr = userdata;
	char *line = httpfake_request_to_json(req);
	fputs(line, pr->record);
	fputc('\n', pr->record);
	/* Flushed per line: the test reads the file while we run. */
	if (fflush(pr->record) != 0)
		fprintf(stderr, "%s: cannot write the record file: %s\n", pr->prog,
		        strerror(errno));
	free(line);
}

int httpfake_proc_write_port_file(const char *prog, const char *path, unsigned port)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
		fprintf(stderr, "%s: --port-file path is too long: %s\n", prog, path);
		return -1;
	}
	FILE *f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "%s: cannot create %s: %s\n", prog, tmp, strerror(errno));
		return -1;
	}
	int bad = fprintf(f, "%u\n", port) < 0;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path) != 0) {
		fprintf(stderr, "%s: cannot write port file %s: %s\n", prog, path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

int httpfake_proc_start(struct httpfake_proc *pr, struct httpfake *fake, const char *port_file,
                        const char *record)
{
	if (record) {
		pr->record = fopen(record, "a");
		if (!pr->record) {
			fprintf(stderr, "%s: cannot open record file %s: %s\n", pr->prog, record,
			        strerror(errno));
			return HTTPFAKE_EX_CANTCREAT;
		}
		httpfake_set_observer(fake, write_record, pr);
	}
	if (port_file &&
	    httpfake_proc_write_port_file(pr->prog, port_file, httpfake_port(fake)) != 0)
		return HTTPFAKE_EX_CANTCREAT;
	return 0;
}

int httpfake_proc_wait(struct httpfake_proc *pr)
{
	int sig = 0;
	while (sigwait(&pr->stop, &sig) != 0)
		;
	return sig;
}

void httpfake_proc_close(struct httpfake_proc *pr)
{
	if (pr->record)
		fclose(pr->record);
	pr->record = NULL;
}
