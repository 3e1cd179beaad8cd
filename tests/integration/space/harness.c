/*
 * harness — see harness.h. Runs a real agent-space per test.
 */
#include "tests/integration/space/harness.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define MAX_LIVE_SPACES 8
#define LOG_TAIL_BYTES  12000

static struct space *live[MAX_LIVE_SPACES];
static const char *site_file = "?";
static int site_line;

void h_at(const char *file, int line)
{
	site_file = file;
	site_line = line;
}

void h_fail(const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	print_error("ERROR: %s\n", buf);
	_fail(site_file, site_line);
	abort(); /* not reached: _fail longjmps */
}

static void *h_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		abort();
	return p;
}

static void msleep(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

char *h_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 65536, n = 0;
	char *buf = h_xmalloc(cap);
	for (;;) {
		if (cap - n < 65536) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static void mkdirs(const char *path)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof tmp, "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(tmp, 0700);
			*p = '/';
		}
	}
	mkdir(tmp, 0700);
}

void h_write_file(const char *path, const char *text, size_t len)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		mkdirs(dir);
	}
	FILE *f = fopen(path, "wb");
	if (!f)
		h_fail("cannot write %s: %s", path, strerror(errno));
	if (len && fwrite(text, 1, len, f) != len)
		h_fail("short write to %s", path);
	fclose(f);
}

char *space_mkdtemp(void)
{
	char tmpl[] = "/tmp/space-test-XXXXXX";
	if (!mkdtemp(tmpl))
		return NULL;
	return strdup(tmpl);
}

/* The server is started with SPACE_DATA_DIR=<dir>/data. Whether it keeps its
 * log directly in SPACE_DATA_DIR or in a `data/` folder below it (as the
 * reference does below its base directory) is the server's business; seeds
 * are written to both places and reads use the one the server touched last. */
void space_seed_file(const char *dir, const char *name, const char *text, size_t len)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/data/%s", dir, name);
	h_write_file(p, text, len);
	snprintf(p, sizeof p, "%s/data/data/%s", dir, name);
	h_write_file(p, text, len);
}

void space_log_file(const struct space *s, const char *name, char *out, size_t outsz)
{
	char a[PATH_MAX], b[PATH_MAX];
	snprintf(a, sizeof a, "%s/%s", s->data_dir, name);
	snprintf(b, sizeof b, "%s/data/%s", s->data_dir, name);
	struct stat sa, sb;
	int ha = stat(a, &sa) == 0, hb = stat(b, &sb) == 0;
	const char *pick = a;
	if (hb && !ha)
		pick = b;
	else if (ha && hb) {
		/* Both seeded: the one the server appended to is newer. */
		if (sb.st_mtim.tv_sec > sa.st_mtim.tv_sec ||
		    (sb.st_mtim.tv_sec == sa.st_mtim.tv_sec &&
		     sb.st_mtim.tv_nsec > sa.st_mtim.tv_nsec))
			pick = b;
	}
	snprintf(out, outsz, "%s", pick);
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

static void rm_rf(const char *dir)
{
	if (dir[0])
		nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void register_live(struct space *s)
{
	for (int i = 0; i < MAX_LIVE_SPACES; i++)
		if (!live[i]) {
			live[i] = s;
			return;
		}
	h_fail("too many servers in one test");
}

static void unregister_live(struct space *s)
{
	for (int i = 0; i < MAX_LIVE_SPACES; i++)
		if (live[i] == s)
			live[i] = NULL;
}

static void print_server_log(struct space *s, const char *why)
{
	size_t n = 0;
	char *log = h_read_file(s->log_path, &n);
	fprintf(stderr, "---- agent-space output (%s), pid %d, port %d ----\n", why, (int)s->pid,
	        s->port);
	if (log) {
		const char *start = log;
		if (n > LOG_TAIL_BYTES) {
			start = log + n - LOG_TAIL_BYTES;
			fprintf(stderr, "[... %zu bytes omitted ...]\n", n - LOG_TAIL_BYTES);
		}
		fputs(start, stderr);
		free(log);
	}
	fprintf(stderr, "---- end of agent-space output ----\n");
}

static const char *server_binary(void)
{
	static char path[PATH_MAX];
	const char *bin = getenv("SPACE_BIN");
	if (bin && *bin)
		return bin;
	const char *bd = getenv("GA_BUILD_DIR");
	snprintf(path, sizeof path, "%s/agent-space", bd && *bd ? bd : ".");
	return path;
}

bool space_alive(struct space *s)
{
	if (s->exited)
		return false;
	if (proc_alive(&s->proc))
		return true;
	s->exited = true;
	int st = s->proc.status;
	s->exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return false;
}

int space_wait_exit(struct space *s, int timeout_ms)
{
	int64_t deadline = ws_now_ms() + timeout_ms;
	while (space_alive(s)) {
		if (ws_now_ms() > deadline)
			return -1;
		msleep(10);
	}
	return 0;
}

/* Server defaults; the test's env comes after them and wins. */
#define SERVER_ENV_MAX 48

static struct space *start_in(const char *dir, const char *const *env, unsigned nofile);

struct space *space_start_in_(const char *dir, const char *const *env)
{
	return start_in(dir, env, 0);
}

/* nofile: 0, or the open-file limit (soft and hard) the server starts
 * under, set by util-linux's prlimit, which then execs the server. */
static struct space *start_in(const char *dir, const char *const *env, unsigned nofile)
{
	const char *bin = server_binary();
	if (access(bin, X_OK) != 0)
		h_fail("server binary %s is missing (build the agent-space target)", bin);
	struct space *s = calloc(1, sizeof *s);
	if (!s)
		abort();
	snprintf(s->dir, sizeof s->dir, "%s", dir);
	snprintf(s->data_dir, sizeof s->data_dir, "%s/data", dir);
	snprintf(s->log_path, sizeof s->log_path, "%s/server.log", dir);
	snprintf(s->port_file, sizeof s->port_file, "%s/port", dir);
	unlink(s->port_file);
	register_live(s);

	char data_env[340];
	snprintf(data_env, sizeof data_env, "SPACE_DATA_DIR=%s", s->data_dir);
	const char *envv[SERVER_ENV_MAX + 1] = {"SPACE_PORT=0", "SPACE_BIND=127.0.0.1",
	                                        "SPACE_NAME=space-test",
	                                        "SPACE_SHUTDOWN_GRACE_MS=200", data_env};
	size_t ne = 5;
	for (const char *const *e = env; e && *e; e++) {
		if (ne >= SERVER_ENV_MAX)
			h_fail("more than %d environment strings for the server", SERVER_ENV_MAX);
		envv[ne++] = *e;
	}
	envv[ne] = NULL;
	const char *argv[] = {"--no-mdns", "--port-file", s->port_file, NULL};
	char limit[64], abs_bin[PATH_MAX];
	snprintf(limit, sizeof limit, "--nofile=%u:%u", nofile, nofile);
	if (!realpath(bin, abs_bin)) /* prlimit runs it from the test's directory */
		h_fail("realpath %s: %s", bin, strerror(errno));
	const char *limited_argv[] = {limit,         abs_bin,      "--no-mdns",
	                              "--port-file", s->port_file, NULL};
	/* Run in the test's directory so no stray ./.env is read. */
	struct proc_opts o = {
	        .binary = bin, .cwd = s->dir, .argv = argv, .env = envv, .log_path = s->log_path};
	if (nofile) {
		o.binary = "/usr/bin/prlimit";
		o.argv = limited_argv;
	}
	if (proc_start_opts(&s->proc, &o) != 0)
		h_fail("cannot start %s", bin);
	s->pid = s->proc.pid;

	/* Wait for "<port>\n" in the port file. */
	int64_t deadline = ws_now_ms() + 20000;
	for (;;) {
		char *txt = h_read_file(s->port_file, NULL);
		if (txt && strchr(txt, '\n')) {
			s->port = atoi(txt);
			free(txt);
			break;
		}
		free(txt);
		if (!space_alive(s)) {
			print_server_log(s, "exited during startup");
			h_fail("agent-space exited during startup with status %d", s->exit_status);
		}
		if (ws_now_ms() > deadline) {
			print_server_log(s, "startup timeout");
			h_fail("agent-space did not write its port file within 20 s");
		}
		msleep(5);
	}
	if (s->port <= 0 || s->port > 65535)
		h_fail("bad port in port file: %d", s->port);
	return s;
}

struct space *space_start_nofile_(const char *const *env, unsigned nofile)
{
	char *dir = space_mkdtemp();
	if (!dir)
		h_fail("mkdtemp: %s", strerror(errno));
	struct space *s = start_in(dir, env, nofile);
	free(dir);
	return s;
}

struct space *space_start_(const char *const *env)
{
	return space_start_nofile_(env, 0);
}

void space_pass(struct space *s)
{
	s->passed = true;
}

int space_stop(struct space *s)
{
	if (!s)
		return 0;
	int rc = 0;
	for (size_t i = 0; i < s->nclients; i++)
		ws_free(s->clients[i]);
	free(s->clients);
	s->clients = NULL;
	s->nclients = 0;
	for (size_t i = 0; i < s->njson; i++)
		cJSON_Delete(s->json[i]);
	free(s->json);
	s->json = NULL;
	s->njson = 0;
	proc_close_stdin(&s->proc);
	const char *why = NULL;
	if (space_alive(s)) {
		proc_signal(&s->proc, SIGTERM);
		if (space_wait_exit(s, 15000) < 0) {
			proc_signal(&s->proc, SIGKILL);
			space_wait_exit(s, 5000);
			why = "did not exit within 15 s of SIGTERM";
			rc = -1;
		}
	}
	if (!why && s->exit_status != 0) {
		why = "exit status not 0 (crash or sanitizer report?)";
		rc = -1;
	}
	if (why)
		fprintf(stderr, "agent-space (pid %d) %s: status %d\n", (int)s->pid, why,
		        s->exit_status);
	if (rc != 0 || !s->passed)
		print_server_log(s, rc ? why : "test failed");
	proc_cleanup(&s->proc);
	unregister_live(s);
	if (!s->keep_dir)
		rm_rf(s->dir);
	free(s);
	return rc;
}

void space_test_filter_from_env(void)
{
	const char *f = getenv("SPACE_TEST_FILTER");
	if (f && *f)
		cmocka_set_test_filter(f);
}

int space_teardown(void **state)
{
	int rc = 0;
	for (int i = 0; i < MAX_LIVE_SPACES; i++)
		if (live[i] && space_stop(live[i]) != 0)
			rc = -1;
	return rc;
}

void space_host(struct space *s, const char *line)
{
	if (s->proc.stdin_fd < 0)
		h_fail("host input already closed");
	size_t n = strlen(line);
	char *buf = h_xmalloc(n + 2);
	memcpy(buf, line, n);
	buf[n] = '\n';
	buf[n + 1] = '\0';
	int rc = proc_write_stdin(&s->proc, buf);
	free(buf);
	if (rc != 0)
		h_fail("writing host input: %s", strerror(errno));
}

void space_host_eof(struct space *s)
{
	proc_close_stdin(&s->proc);
}

char *space_read_log(struct space *s)
{
	char *t = h_read_file(s->log_path, NULL);
	return t ? t : strdup("");
}

size_t space_log_size(struct space *s)
{
	struct stat st;
	return stat(s->log_path, &st) == 0 ? (size_t)st.st_size : 0;
}

bool space_wait_log(struct space *s, const char *needle, int timeout_ms)
{
	return space_wait_log_from(s, 0, needle, timeout_ms);
}

bool space_wait_log_from(struct space *s, size_t offset, const char *needle, int timeout_ms)
{
	int64_t deadline = ws_now_ms() + timeout_ms;
	for (;;) {
		char *t = space_read_log(s);
		bool found = strlen(t) >= offset && strstr(t + offset, needle) != NULL;
		free(t);
		if (found)
			return true;
		if (ws_now_ms() > deadline)
			return false;
		msleep(20);
	}
}

/* ---- clients ----------------------------------------------------------- */

void h_adopt(struct space *s, struct ws_client *c)
{
	if (s->nclients == s->cap_clients) {
		s->cap_clients = s->cap_clients ? s->cap_clients * 2 : 16;
		s->clients = realloc(s->clients, s->cap_clients * sizeof *s->clients);
		if (!s->clients)
			abort();
	}
	s->clients[s->nclients++] = c;
}

void h_drop(struct space *s, struct ws_client *c)
{
	for (size_t i = 0; i < s->nclients; i++)
		if (s->clients[i] == c) {
			s->clients[i] = s->clients[--s->nclients];
			break;
		}
	ws_free(c);
}

void h_drop_reset(struct space *s, struct ws_client *c)
{
	for (size_t i = 0; i < s->nclients; i++)
		if (s->clients[i] == c) {
			s->clients[i] = s->clients[--s->nclients];
			break;
		}
	ws_free_reset(c);
}

struct ws_client *h_connect_ex(struct space *s, const char *path, const char *extra_headers,
                               int rcvbuf, int *status_out)
{
	struct ws_client *c = ws_connect_ex("127.0.0.1", s->port, path, extra_headers, rcvbuf,
	                                    H_TIMEOUT_MS, status_out);
	if (c)
		h_adopt(s, c);
	return c;
}

struct ws_client *h_connect_(struct space *s)
{
	int status = 0;
	struct ws_client *c = h_connect_ex(s, "/", NULL, 0, &status);
	if (!c)
		h_fail("WebSocket handshake with 127.0.0.1:%d failed (HTTP status %d)", s->port,
		       status);
	snprintf(c->label, sizeof c->label, "conn#%zu", s->nclients);
	return c;
}

void h_close_(struct space *s, struct ws_client *c)
{
	ws_send_close(c, 1000, "bye");
	ws_wait_close(c, H_TIMEOUT_MS);
	h_drop(s, c);
}

void h_send_json_(struct ws_client *c, const cJSON *v)
{
	char *t = cJSON_PrintUnformatted(v);
	if (!t)
		abort();
	int rc = ws_send_text(c, t);
	free(t);
	if (rc < 0)
		h_fail("%s: send failed", c->label);
}

void h_send_(struct ws_client *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *t = NULL;
	if (vasprintf(&t, fmt, ap) < 0)
		abort();
	va_end(ap);
	int rc = ws_send_text(c, t);
	free(t);
	if (rc < 0)
		h_fail("%s: send failed", c->label);
}

static cJSON *keep(struct space *s, cJSON *v)
{
	if (s->njson == s->cap_json) {
		s->cap_json = s->cap_json ? s->cap_json * 2 : 64;
		s->json = realloc(s->json, s->cap_json * sizeof *s->json);
		if (!s->json)
			abort();
	}
	s->json[s->njson++] = v;
	return v;
}

cJSON *h_parse_(struct space *s, const char *text)
{
	cJSON *v = cJSON_Parse(text);
	if (!v)
		h_fail("invalid JSON: %.200s", text);
	return keep(s, v);
}

cJSON *h_next_(struct space *s, struct ws_client *c, int timeout_ms)
{
	struct ws_msg m;
	int r = ws_recv(c, &m, timeout_ms);
	if (r != WS_RECV_MSG)
		return NULL;
	if (m.opcode != WS_OP_TEXT) {
		free(m.data);
		h_fail("%s: server sent a binary frame", c->label);
	}
	cJSON *v = cJSON_ParseWithLength(m.data, m.len);
	if (!v) {
		char head[201];
		snprintf(head, sizeof head, "%s", m.data);
		free(m.data);
		h_fail("%s: server sent invalid JSON: %s", c->label, head);
	}
	free(m.data);
	return keep(s, v);
}

static const char *describe_end(struct ws_client *c, char *buf, size_t n)
{
	if (c->got_close)
		snprintf(buf, n, "connection closed by server with %d '%s'", c->close_code,
		         c->close_reason);
	else if (c->eof)
		snprintf(buf, n, "connection ended without close frame");
	else
		snprintf(buf, n, "timed out after %d ms", H_TIMEOUT_MS);
	return buf;
}

cJSON *h_try_expect_(struct space *s, struct ws_client *c, const char *type, h_pred pred,
                     const void *arg, int timeout_ms)
{
	int64_t deadline = ws_now_ms() + timeout_ms;
	for (;;) {
		int64_t left = deadline - ws_now_ms();
		if (left < 0)
			return NULL;
		cJSON *m = h_next_(s, c, (int)left);
		if (!m)
			return NULL;
		const char *t = h_str(m, "type");
		if (t && strcmp(t, type) == 0 && (!pred || pred(m, arg)))
			return m;
	}
}

cJSON *h_expect_where_(struct space *s, struct ws_client *c, const char *type, h_pred pred,
                       const void *arg)
{
	cJSON *m = h_try_expect_(s, c, type, pred, arg, H_TIMEOUT_MS);
	if (!m) {
		char why[256];
		h_fail("%s: no '%s' message%s: %s", c->label, type,
		       pred ? " matching the condition" : "", describe_end(c, why, sizeof why));
	}
	return m;
}

cJSON *h_expect_(struct space *s, struct ws_client *c, const char *type)
{
	return h_expect_where_(s, c, type, NULL, NULL);
}

bool h_pred_error_has(const cJSON *msg, const void *needle)
{
	const char *m = h_str(msg, "message");
	return m && strstr(m, needle);
}

cJSON *h_expect_error_(struct space *s, struct ws_client *c, const char *needle)
{
	cJSON *m = h_try_expect_(s, c, "error", NULL, NULL, H_TIMEOUT_MS);
	if (!m) {
		char why[256];
		h_fail("%s: expected an error containing '%s': %s", c->label, needle,
		       describe_end(c, why, sizeof why));
	}
	const char *msg = h_str(m, "message");
	if (!msg || !strstr(msg, needle))
		h_fail("%s: expected an error containing '%s', got '%s'", c->label, needle,
		       msg ? msg : "(no message)");
	return m;
}

void h_expect_none_(struct space *s, struct ws_client *c, const char *type, int ms)
{
	int64_t deadline = ws_now_ms() + ms;
	for (;;) {
		int64_t left = deadline - ws_now_ms();
		if (left <= 0)
			return;
		cJSON *m = h_next_(s, c, (int)left);
		if (!m) {
			if (c->got_close || c->eof) {
				if (!type)
					return;
				return;
			}
			continue;
		}
		const char *t = h_str(m, "type");
		if (!type || (t && strcmp(t, type) == 0)) {
			char *txt = cJSON_PrintUnformatted(m);
			char head[301];
			snprintf(head, sizeof head, "%s", txt ? txt : "?");
			free(txt);
			h_fail("%s: expected no %s message, got %s", c->label, type ? type : "",
			       head);
		}
	}
}

int h_wait_close(struct ws_client *c, int timeout_ms)
{
	int r = ws_wait_close(c, timeout_ms);
	if (r == WS_RECV_CLOSED)
		return c->close_code;
	if (r == WS_RECV_EOF)
		return 1006;
	return -1;
}

struct ws_client *h_join_json_(struct space *s, const char *join_json, cJSON **history)
{
	struct ws_client *c = h_connect_(s);
	cJSON *j = cJSON_Parse(join_json);
	if (j) {
		const char *n = h_str(j, "name");
		if (n)
			snprintf(c->label, sizeof c->label, "%s", n);
		cJSON_Delete(j);
	}
	if (ws_send_text(c, join_json) < 0)
		h_fail("%s: send failed", c->label);
	/* §3.3: join(self) → presence → history_response → workspace_state×N →
	 * presence. Check the order on the way, for a precise failure. */
	bool presence_seen = false;
	cJSON *h = NULL;
	while (!h) {
		cJSON *m = h_next_(s, c, H_TIMEOUT_MS);
		if (!m) {
			char why[256];
			h_fail("%s: join not answered with presence + history_response: %s",
			       c->label, describe_end(c, why, sizeof why));
		}
		const char *t = h_str(m, "type");
		if (t && strcmp(t, "presence") == 0)
			presence_seen = true;
		else if (t && strcmp(t, "history_response") == 0)
			h = m;
		else if (t && strcmp(t, "error") == 0)
			h_fail("%s: join answered with error '%s'", c->label, h_str(m, "message"));
	}
	if (!presence_seen)
		h_fail("%s: history_response arrived before the newcomer's first presence "
		       "(§3.3: join → presence → history_response → presence)",
		       c->label);
	if (history)
		*history = h;
	h_expect_(s, c, "presence");
	return c;
}

struct ws_client *h_join_(struct space *s, const char *name, const char *id)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "type", "join");
	cJSON_AddStringToObject(j, "name", name);
	cJSON_AddStringToObject(j, "id", id);
	cJSON_AddStringToObject(j, "version", "1.0.0");
	const char *t = h_print(s, j);
	cJSON_Delete(j);
	return h_join_json_(s, t, NULL);
}

/* ---- predicates ---------------------------------------------------------- */

bool h_pred_name(const cJSON *msg, const void *name)
{
	const char *n = h_str(msg, "name");
	return n && strcmp(n, name) == 0;
}

bool h_pred_content(const cJSON *msg, const void *content)
{
	const char *n = h_str(msg, "content");
	return n && strcmp(n, content) == 0;
}

bool h_pred_nagents(const cJSON *msg, const void *n)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(msg, "agents");
	return cJSON_IsArray(a) && cJSON_GetArraySize(a) == *(const int *)n;
}

/* ---- JSON helpers ------------------------------------------------------ */

const char *h_print(struct space *s, const cJSON *v)
{
	char *t = v ? cJSON_PrintUnformatted(v) : NULL;
	cJSON *holder = keep(s, cJSON_CreateString(t ? t : "(null)"));
	free(t);
	return holder->valuestring;
}

const char *h_str(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

void h_assert_keys_(const cJSON *obj, const char *keys)
{
	char got[1024];
	size_t n = 0;
	got[0] = '\0';
	for (const cJSON *it = obj ? obj->child : NULL; it; it = it->next) {
		int w = snprintf(got + n, sizeof got - n, "%s%s", n ? "," : "",
		                 it->string ? it->string : "?");
		if (w < 0 || (size_t)w >= sizeof got - n)
			break;
		n += (size_t)w;
	}
	if (strcmp(got, keys) != 0)
		h_fail("key order: expected [%s], got [%s]", keys, got);
}

void h_assert_timestamp_(const char *ts)
{
	const char *pat = "dddd-dd-ddTdd:dd:dd.dddZ";
	bool ok = ts && strlen(ts) == strlen(pat);
	for (size_t i = 0; ok && pat[i]; i++)
		ok = pat[i] == 'd' ? isdigit((unsigned char)ts[i]) != 0 : ts[i] == pat[i];
	if (!ok)
		h_fail("not a JS ISO timestamp: '%s'", ts ? ts : "(null)");
}

const char *h_presence_names(const cJSON *presence, char *buf, size_t bufsz)
{
	size_t n = 0;
	buf[0] = '\0';
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(presence, "agents");
	const cJSON *it;
	cJSON_ArrayForEach(it, a)
	{
		const char *nm = h_str(it, "name");
		int w = snprintf(buf + n, bufsz - n, "%s%s", n ? "," : "", nm ? nm : "?");
		if (w < 0 || (size_t)w >= bufsz - n)
			break;
		n += (size_t)w;
	}
	return buf;
}

char *h_repeat(const char *unit, size_t count)
{
	size_t ul = strlen(unit);
	char *r = h_xmalloc(ul * count + 1);
	for (size_t i = 0; i < count; i++)
		memcpy(r + i * ul, unit, ul);
	r[ul * count] = '\0';
	return r;
}

/* ---- chat log ---------------------------------------------------------- */

cJSON *h_log_entries(struct space *s)
{
	char path[PATH_MAX];
	space_log_file(s, "chat.jsonl", path, sizeof path);
	cJSON *arr = keep(s, cJSON_CreateArray());
	char *txt = h_read_file(path, NULL);
	if (!txt)
		return arr;
	char *save = NULL;
	for (char *line = strtok_r(txt, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *v = cJSON_Parse(line);
		if (v)
			cJSON_AddItemToArray(arr, v);
	}
	free(txt);
	return arr;
}

static bool entry_matches(const cJSON *e, const char *type, const char *agent_name,
                          const char *content)
{
	const char *t = h_str(e, "type"), *n = h_str(e, "agentName"), *c = h_str(e, "content");
	return (!type || (t && strcmp(t, type) == 0)) &&
	       (!agent_name || (n && strcmp(n, agent_name) == 0)) &&
	       (!content || (c && strcmp(c, content) == 0));
}

int h_count_log_entries(struct space *s, const char *type, const char *agent_name,
                        const char *content)
{
	int n = 0;
	const cJSON *e;
	cJSON *arr = h_log_entries(s);
	cJSON_ArrayForEach(e, arr)
	{
		if (entry_matches(e, type, agent_name, content))
			n++;
	}
	return n;
}

cJSON *h_wait_log_entry_(struct space *s, const char *type, const char *agent_name,
                         const char *content)
{
	int64_t deadline = ws_now_ms() + H_TIMEOUT_MS;
	for (;;) {
		cJSON *arr = h_log_entries(s);
		cJSON *e;
		cJSON_ArrayForEach(e, arr)
		{
			if (entry_matches(e, type, agent_name, content))
				return e;
		}
		if (ws_now_ms() > deadline)
			h_fail("no log entry type=%s agentName=%s content=%.100s in the chat log",
			       type ? type : "*", agent_name ? agent_name : "*",
			       content ? content : "*");
		msleep(20);
	}
}

/* ---- HTTP -------------------------------------------------------------- */

int h_http(struct space *s, const char *request, char **response)
{
	return ws_http("127.0.0.1", s->port, request, H_TIMEOUT_MS, response);
}
