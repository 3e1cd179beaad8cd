/* gitfix — real git fixtures and git http-backend behind Basic auth (see
 * gitfix.h). */
#include "gitfix.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static const char *const FIXED_ENV[] = {"PATH=/usr/local/bin:/usr/bin:/bin",
                                        "GIT_CONFIG_NOSYSTEM=1",
                                        "GIT_CONFIG_GLOBAL=/dev/null",
                                        "GIT_AUTHOR_NAME=Fixture",
                                        "GIT_AUTHOR_EMAIL=fixture@example.com",
                                        "GIT_COMMITTER_NAME=Fixture",
                                        "GIT_COMMITTER_EMAIL=fixture@example.com",
                                        "LC_ALL=C",
                                        "HOME=/nonexistent",
                                        NULL};

static char *read_fd_all(int fd, size_t *len_out)
{
	size_t cap = 4096, len = 0;
	char *b = malloc(cap);
	for (;;) {
		if (len + 1024 > cap)
			b = realloc(b, cap *= 2);
		ssize_t n = read(fd, b + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	b[len] = '\0';
	if (len_out)
		*len_out = len;
	return b;
}

int gf_run(const char *cwd, const char *const *argv, char **out)
{
	int p[2];
	if (pipe(p) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		int dn = open("/dev/null", O_RDONLY);
		dup2(dn, 0);
		if (cwd && chdir(cwd) != 0)
			_exit(126);
		execvpe(argv[0], (char *const *)argv, (char *const *)FIXED_ENV);
		_exit(127);
	}
	close(p[1]);
	char *o = read_fd_all(p[0], NULL);
	close(p[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	size_t n = strlen(o);
	while (n && (o[n - 1] == '\n' || o[n - 1] == ' '))
		o[--n] = '\0';
	if (out)
		*out = o;
	else
		free(o);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void gf_mkdirs(const char *path)
{
	char *c = strdup(path);
	for (char *s = c + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(c, 0700);
			*s = '/';
		}
	mkdir(c, 0700);
	free(c);
}

void gf_path(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap)
		abort();
}

int gf_remote_commit(const char *dir, const char *branch, const char *file, const char *content)
{
	char *tmp = tu_tempdir();
	char work[1024];
	snprintf(work, sizeof work, "%s/w", tmp);
	int rc = -1;
	const char *clone[] = {"git", "clone", "--quiet", "--", dir, work, NULL};
	if (gf_run(NULL, clone, NULL) != 0)
		goto out;
	char ref[256];
	snprintf(ref, sizeof ref, "refs/heads/%s", branch);
	char tracking[300];
	snprintf(tracking, sizeof tracking, "origin/%s", branch);
	const char *has[] = {"git", "rev-parse", "--verify", "--quiet", tracking, NULL};
	const char *co_remote[] = {"git", "checkout", "--quiet", "-B", branch, tracking, NULL};
	const char *co[] = {"git", "checkout", "--quiet", "-B", branch, NULL};
	gf_run(work, gf_run(work, has, NULL) == 0 ? co_remote : co, NULL);
	tu_write(work, file, content);
	const char *add[] = {"git", "add", "--", file, NULL};
	const char *commit[] = {"git", "commit", "--quiet", "-m", file, NULL};
	char spec[300];
	snprintf(spec, sizeof spec, "HEAD:%s", ref);
	const char *push[] = {"git", "push", "--quiet", "origin", spec, NULL};
	if (gf_run(work, add, NULL) == 0 && gf_run(work, commit, NULL) == 0 &&
	    gf_run(work, push, NULL) == 0)
		rc = 0;
out:
	tu_rmrf(tmp);
	free(tmp);
	return rc;
}

int gf_remote_new(const char *dir, const char *branch)
{
	char head[300];
	snprintf(head, sizeof head, "--initial-branch=%s", branch);
	const char *init[] = {"git", "init", "--quiet", "--bare", head, "--", dir, NULL};
	if (gf_run(NULL, init, NULL) != 0)
		return -1;
	/* Pushes over http are allowed by REMOTE_USER; file:// pushes need
	 * nothing. */
	return gf_remote_commit(dir, branch, "README.md", "# fixture\n");
}

char *gf_rev(const char *dir, const char *ref)
{
	char *out = NULL;
	const char *argv[] = {"git", "rev-parse", "--verify", "--quiet", ref, NULL};
	if (gf_run(dir, argv, &out) != 0) {
		free(out);
		return strdup("");
	}
	return out;
}

/* ---- git http-backend behind Basic auth ------------------------------------------------ */

struct gf_http {
	struct MHD_Daemon *d;
	char *root;
	char *token;
	int port;
	pthread_mutex_t lock;
	int requests, refused, authorized;
};

struct req {
	char *body;
	size_t len;
	bool too_large;
};

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, const char *text,
                                 bool challenge)
{
	struct MHD_Response *r =
	        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
	if (challenge)
		MHD_add_response_header(r, "WWW-Authenticate", "Basic realm=\"gitfix\"");
	enum MHD_Result ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

/* Runs git http-backend with the CGI variables of this request; body on
 * its stdin; returns its whole stdout (caller frees). */
static char *run_cgi(struct gf_http *h, struct MHD_Connection *c, const char *method,
                     const char *url, const struct req *rq, size_t *out_len)
{
	char tmpl[] = "/tmp/gitfix-body-XXXXXX";
	int bfd = mkstemp(tmpl);
	if (bfd < 0)
		return NULL;
	unlink(tmpl);
	if (rq->len && write(bfd, rq->body, rq->len) != (ssize_t)rq->len) {
		close(bfd);
		return NULL;
	}
	lseek(bfd, 0, SEEK_SET);
	const char *q = strchr(url, '?');
	const char *qs = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "service");
	char env[12][1024];
	int ne = 0;
	snprintf(env[ne++], sizeof env[0], "GIT_PROJECT_ROOT=%s", h->root);
	snprintf(env[ne++], sizeof env[0], "GIT_HTTP_EXPORT_ALL=1");
	snprintf(env[ne++], sizeof env[0], "PATH_INFO=%.*s", (int)(q ? q - url : (long)strlen(url)),
	         url);
	snprintf(env[ne++], sizeof env[0], "QUERY_STRING=%s%s", qs ? "service=" : "", qs ? qs : "");
	snprintf(env[ne++], sizeof env[0], "REQUEST_METHOD=%s", method);
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	snprintf(env[ne++], sizeof env[0], "CONTENT_TYPE=%s", ct ? ct : "");
	snprintf(env[ne++], sizeof env[0], "CONTENT_LENGTH=%zu", rq->len);
	const char *ce = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
	snprintf(env[ne++], sizeof env[0], "HTTP_CONTENT_ENCODING=%s", ce ? ce : "");
	const char *gp = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Git-Protocol");
	snprintf(env[ne++], sizeof env[0], "GIT_PROTOCOL=%s", gp ? gp : "");
	snprintf(env[ne++], sizeof env[0], "REMOTE_USER=fixture");
	snprintf(env[ne++], sizeof env[0], "PATH=/usr/bin:/bin");
	char *envp[13];
	for (int i = 0; i < ne; i++)
		envp[i] = env[i];
	envp[ne] = NULL;
	int p[2];
	if (pipe(p) != 0) {
		close(bfd);
		return NULL;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(bfd, 0);
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		char *argv[] = {"git-http-backend", NULL};
		execve("/usr/lib/git-core/git-http-backend", argv, envp);
		_exit(127);
	}
	close(p[1]);
	close(bfd);
	char *out = read_fd_all(p[0], out_len);
	close(p[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return out;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **state)
{
	(void)version;
	struct gf_http *h = cls;
	struct req *rq = *state;
	if (!rq) {
		rq = calloc(1, sizeof *rq);
		*state = rq;
		return MHD_YES;
	}
	if (*upload_size) {
		if (rq->len + *upload_size > GITFIX_MAX_BODY) {
			rq->too_large = true;
		} else {
			rq->body = realloc(rq->body, rq->len + *upload_size);
			memcpy(rq->body + rq->len, upload_data, *upload_size);
			rq->len += *upload_size;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&h->lock);
	h->requests++;
	pthread_mutex_unlock(&h->lock);
	if (rq->too_large)
		return send_text(c, 413, "too large\n", false);
	char *pw = NULL;
	char *user = MHD_basic_auth_get_username_password(c, &pw);
	bool ok = pw && strcmp(pw, h->token) == 0;
	MHD_free(user);
	MHD_free(pw);
	pthread_mutex_lock(&h->lock);
	if (ok)
		h->authorized++;
	else
		h->refused++;
	pthread_mutex_unlock(&h->lock);
	if (!ok)
		return send_text(c, 401, "authentication required\n", true);
	size_t len = 0;
	char *out = run_cgi(h, c, method, url, rq, &len);
	if (!out)
		return send_text(c, 500, "cgi failed\n", false);
	/* The CGI answer: header lines, a blank line, the body (binary). */
	size_t hdr_end = 0, body_at = 0;
	for (size_t i = 0; i + 1 < len; i++) {
		if (out[i] == '\n' && out[i + 1] == '\n') {
			hdr_end = i;
			body_at = i + 2;
			break;
		}
		if (i + 3 < len && memcmp(out + i, "\r\n\r\n", 4) == 0) {
			hdr_end = i;
			body_at = i + 4;
			break;
		}
	}
	if (!body_at) {
		free(out);
		return send_text(c, 502, "bad cgi answer\n", false);
	}
	unsigned status = 200;
	struct MHD_Response *r = MHD_create_response_from_buffer(len - body_at, out + body_at,
	                                                         MHD_RESPMEM_MUST_COPY);
	for (char *line = out; line < out + hdr_end;) {
		char *e = memchr(line, '\n', (size_t)(out + hdr_end - line));
		if (!e)
			e = out + hdr_end;
		char *end = e;
		if (end > line && end[-1] == '\r')
			end--;
		*end = '\0';
		char *colon = strchr(line, ':');
		if (colon) {
			*colon = '\0';
			char *v = colon + 1;
			while (*v == ' ')
				v++;
			if (strcasecmp(line, "Status") == 0)
				status = (unsigned)atoi(v);
			else
				MHD_add_response_header(r, line, v);
		}
		line = e + 1;
	}
	enum MHD_Result res = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	free(out);
	return res;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode code)
{
	(void)cls;
	(void)c;
	(void)code;
	struct req *rq = *state;
	if (rq) {
		free(rq->body);
		free(rq);
	}
	*state = NULL;
}

struct gf_http *gf_http_start(const char *root, const char *token)
{
	struct gf_http *h = calloc(1, sizeof *h);
	h->root = strdup(root);
	h->token = strdup(token);
	pthread_mutex_init(&h->lock, NULL);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	h->d = MHD_start_daemon(
	        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0,
	        NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
	        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_END);
	if (!h->d) {
		gf_http_stop(h);
		return NULL;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : 0;
	return h;
}

int gf_http_port(const struct gf_http *h)
{
	return h->port;
}

static int counter(const struct gf_http *h, const int *field)
{
	pthread_mutex_lock((pthread_mutex_t *)&h->lock);
	int v = *field;
	pthread_mutex_unlock((pthread_mutex_t *)&h->lock);
	return v;
}

int gf_http_requests(const struct gf_http *h)
{
	return counter(h, &h->requests);
}

int gf_http_refused(const struct gf_http *h)
{
	return counter(h, &h->refused);
}

int gf_http_authorized(const struct gf_http *h)
{
	return counter(h, &h->authorized);
}

void gf_http_stop(struct gf_http *h)
{
	if (!h)
		return;
	if (h->d)
		MHD_stop_daemon(h->d);
	pthread_mutex_destroy(&h->lock);
	free(h->root);
	free(h->token);
	free(h);
}
