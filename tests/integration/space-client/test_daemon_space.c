/*
 * general-agent in the agent-space, black-box: real `agent-space` rooms,
 * real general-agent processes, and an observer member speaking raw
 * WebSocket.
 *
 *   - discovery by SPACE_URL; join and identity as another member sees
 *     them; a stable id across restarts; a polite leave on SIGTERM;
 *   - --social-only advertises ["social"] (and nothing otherwise);
 *   - discovery falling back to localhost (GA_SPACE_LOCALHOST_URL) when
 *     mDNS finds nothing or is off (the default ws://localhost:7777 is
 *     held by tests/unit/space-client/test_tunables: no test here may
 *     reach a room a user of this machine runs there);
 *   - discovery by mDNS through a private avahi-daemon (skipped, saying
 *     why, when one cannot be started here);
 *   - reconnect after the room is killed and restarted, and after a
 *     shutdown message;
 *   - two agents with the same name end up with one in the room and the
 *     other stopped with an error naming the duplicate;
 *   - a server that accepts TCP and never answers the upgrade;
 *   - a host message addressed to the agent is logged, and not answered.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "tests/integration/space-client/harness.h"
#include "testutil.h"

#define W TH_WAIT_MS

/* Fast reconnects for tests; everything else as shipped. */
#define FAST_ENV "GA_SPACE_BACKOFF_MS=100,200", "GA_SPACE_CONNECT_TIMEOUT_MS=3000"

static void must_log(struct th_agent *a, struct th_room *r, const char *needle)
{
	if (!th_agent_wait_log(a, needle, W)) {
		th_fail_dump(a, r);
		fail_msg("the agent never logged '%s'", needle);
	}
}

static cJSON *must_expect(struct ws_client *obs, const char *type, th_pred pred, const void *arg,
                          struct th_agent *a, struct th_room *r)
{
	cJSON *m = th_expect(obs, type, pred, arg, W);
	if (!m) {
		th_fail_dump(a, r);
		fail_msg("the observer never saw a '%s' message", type);
	}
	return m;
}

static const char *str(const cJSON *o, const char *k)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static void url_env(char *buf, size_t cap, const struct th_room *r)
{
	snprintf(buf, cap, "SPACE_URL=ws://127.0.0.1:%d", r->port);
}

/* --- SPACE_URL, join, identity, id, leave ----------------------------------------------- */

static void test_space_url_join_and_identity(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	struct ws_client *obs = th_observe(&room, "Obs");
	char home[256], url[128];
	th_home_new(home, sizeof home);
	url_env(url, sizeof url, &room);
	const char *env[] = {"AGENT_NAME=Ada", url, FAST_ENV, NULL};
	struct th_agent a;
	th_agent_start(&a, home, NULL, env);
	must_log(&a, &room, "discovery: SPACE_URL is set; using it");
	must_log(&a, &room, "joined the room");

	cJSON *join = must_expect(obs, "join", th_pred_name, "Ada", &a, &room);
	const char *id = str(join, "id");
	assert_non_null(id);
	assert_int_equal(strncmp(id, "Ada-", 4), 0);
	assert_int_equal(strncmp(str(join, "version"), "0.", 2), 0);
	/* a full agent sends all three capabilities (space-protocol.md §7.2) */
	char *caps = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(join, "capabilities"));
	assert_non_null(caps);
	assert_string_equal(caps, "[\"social\",\"github\",\"code\"]");
	free(caps);
	char first_id[128];
	snprintf(first_id, sizeof first_id, "%s", id);
	cJSON_Delete(join);

	/* identity right after the join, built from SOUL.md and SELF.md */
	cJSON *idn = must_expect(obs, "identity", th_pred_name, "Ada", &a, &room);
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(idn, "summary");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, "coreValues")), 5);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(s, "coreValues"), 0)
	                            ->valuestring,
	                    "You are a maker's companion: curious");
	assert_string_equal(
	        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(s, "currentInterests"), 0)
	                ->valuestring,
	        "Tools that make collaboration calmer");
	assert_int_equal(strncmp(str(s, "voice"), "Warm, direct, specific.", 23), 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, "expertise")), 0);
	assert_string_equal(str(s, "recentWork"), "No recent completed work");
	const char *essence = str(s, "soulEssence");
	assert_non_null(essence);
	assert_int_equal(strncmp(essence, "You are a maker's companion", 27), 0);
	assert_non_null(strstr(essence, "if it were your own idea."));
	assert_null(strstr(essence, "You keep your promises")); /* three sentences only */
	cJSON_Delete(idn);
	cJSON *p = must_expect(obs, "presence", th_pred_has_agent, "Ada", &a, &room);
	assert_non_null(cJSON_GetObjectItemCaseSensitive(th_presence_agent(p, "Ada"), "identity"));
	cJSON_Delete(p);

	/* SIGHUP after an edit of SELF.md: the room hears the identity again,
	 * with the new interests */
	char *self = tu_read(home, "SELF.md");
	assert_non_null(self);
	char *at = strstr(self, "Tools that make collaboration calmer");
	assert_non_null(at);
	char *edited = NULL;
	assert_true(asprintf(&edited, "%.*sQuiet rooms after a reload%s", (int)(at - self), self,
	                     at + strlen("Tools that make collaboration calmer")) > 0);
	tu_write(home, "SELF.md", edited);
	free(edited);
	free(self);
	th_agent_signal(&a, SIGHUP);
	idn = must_expect(obs, "identity", th_pred_name, "Ada", &a, &room);
	s = cJSON_GetObjectItemCaseSensitive(idn, "summary");
	assert_string_equal(
	        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(s, "currentInterests"), 0)
	                ->valuestring,
	        "Quiet rooms after a reload");
	cJSON_Delete(idn);

	/* SIGTERM: a polite leave, exit 0 */
	th_agent_signal(&a, SIGTERM);
	cJSON *leave = must_expect(obs, "leave", th_pred_name, "Ada", &a, &room);
	cJSON_Delete(leave);
	assert_int_equal(th_agent_wait_exit(&a, W), 0);

	/* a restart keeps the id (state file "space_identity") */
	th_agent_start(&a, home, NULL, env);
	join = must_expect(obs, "join", th_pred_name, "Ada", &a, &room);
	assert_string_equal(str(join, "id"), first_id);
	cJSON_Delete(join);
	th_agent_signal(&a, SIGTERM);
	assert_int_equal(th_agent_wait_exit(&a, W), 0);
	th_observer_free(obs);
	assert_int_equal(th_room_stop(&room, SIGTERM), 0);
}

/* --- --social-only ------------------------------------------------------------------------ */

static void test_social_only_capabilities(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	struct ws_client *obs = th_observe(&room, "Obs");
	char home[256], url[128];
	th_home_new(home, sizeof home);
	url_env(url, sizeof url, &room);
	const char *env[] = {"AGENT_NAME=Sol", url, FAST_ENV, NULL};
	struct th_agent a;
	th_agent_start(&a, home, (const char *const[]){"--social-only", NULL}, env);
	cJSON *join = must_expect(obs, "join", th_pred_name, "Sol", &a, &room);
	const cJSON *caps = cJSON_GetObjectItemCaseSensitive(join, "capabilities");
	assert_true(cJSON_IsArray(caps));
	assert_int_equal(cJSON_GetArraySize(caps), 1);
	assert_string_equal(cJSON_GetArrayItem(caps, 0)->valuestring, "social");
	cJSON_Delete(join);
	cJSON *p = must_expect(obs, "presence", th_pred_has_agent, "Sol", &a, &room);
	caps = cJSON_GetObjectItemCaseSensitive(th_presence_agent(p, "Sol"), "capabilities");
	assert_int_equal(cJSON_GetArraySize(caps), 1);
	cJSON_Delete(p);
	th_agent_signal(&a, SIGTERM);
	assert_int_equal(th_agent_wait_exit(&a, W), 0);
	th_observer_free(obs);
	th_room_stop(&room, SIGTERM);
}

/* --- the localhost fallback ------------------------------------------------------------------- */

static void test_localhost_fallback(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	struct ws_client *obs = th_observe(&room, "Obs");
	char home[256], fallback[128];
	th_home_new(home, sizeof home);
	snprintf(fallback, sizeof fallback, "GA_SPACE_LOCALHOST_URL=ws://127.0.0.1:%d", room.port);
	/* No SPACE_URL; mDNS cannot work (no bus there), so discovery falls
	 * through to "localhost". */
	const char *env[] = {"AGENT_NAME=Lo",
	                     "SPACE_URL",
	                     "GA_SPACE_MDNS=1",
	                     fallback,
	                     "GA_SPACE_MDNS_TIMEOUT_MS=500",
	                     "DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent/ga-test-bus",
	                     FAST_ENV,
	                     NULL};
	struct th_agent a;
	th_agent_start(&a, home, NULL, env);
	must_log(&a, &room, "discovery: SPACE_URL not set; browsing mDNS");
	must_log(&a, &room, "discovery: mDNS found no room");
	must_log(&a, &room, "discovery: falling back to the default room");
	must_log(&a, &room, "via=localhost");
	cJSON *join = must_expect(obs, "join", th_pred_name, "Lo", &a, &room);
	cJSON_Delete(join);
	th_agent_signal(&a, SIGTERM);
	assert_int_equal(th_agent_wait_exit(&a, W), 0);

	/* With mDNS off the fallback comes at once. (Its default,
	 * ws://localhost:7777, is never used here: a user's room may be there.) */
	char want[160];
	snprintf(want, sizeof want, "falling back to the default room url=ws://127.0.0.1:%d",
	         room.port);
	const char *env2[] = {"AGENT_NAME=Lo", "SPACE_URL", "GA_SPACE_MDNS=0",
	                      fallback,        FAST_ENV,    NULL};
	th_agent_start(&a, home, NULL, env2);
	must_log(&a, &room, "discovery: SPACE_URL not set; mDNS is off");
	must_log(&a, &room, want);
	join = must_expect(obs, "join", th_pred_name, "Lo", &a, &room);
	cJSON_Delete(join);
	th_agent_signal(&a, SIGTERM);
	assert_int_equal(th_agent_wait_exit(&a, W), 0);
	th_observer_free(obs);
	th_room_stop(&room, SIGTERM);
}

/* --- mDNS through a private avahi-daemon --------------------------------------------------------
 */

struct mdns_env {
	pid_t dbus, avahi;
	char dir[256];
	char bus[300];
	char why[300];
};

static bool have(const char *prog)
{
	char path[600];
	const char *dirs[] = {"/usr/sbin", "/usr/bin", "/sbin", "/bin", NULL};
	for (int i = 0; dirs[i]; i++) {
		snprintf(path, sizeof path, "%s/%s", dirs[i], prog);
		if (access(path, X_OK) == 0)
			return true;
	}
	return false;
}

static pid_t spawn(const char *log, char *const argv[], const char *bus_env)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		if (bus_env)
			putenv((char *)bus_env);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static void mdns_env_stop(struct mdns_env *m)
{
	pid_t pids[] = {m->avahi, m->dbus};
	for (int i = 0; i < 2; i++) {
		if (pids[i] > 0) {
			kill(pids[i], SIGTERM);
			int64_t end = th_now_ms() + 5000;
			while (waitpid(pids[i], NULL, WNOHANG) == 0) {
				if (th_now_ms() > end) {
					kill(pids[i], SIGKILL);
					waitpid(pids[i], NULL, 0);
					break;
				}
				th_msleep(10);
			}
			th_untrack_pid(pids[i]);
		}
	}
	m->avahi = m->dbus = 0;
}

/* A private system bus and an avahi-daemon on it. false (with why) when
 * that is not possible here. */
static bool mdns_env_start(struct mdns_env *m)
{
	memset(m, 0, sizeof *m);
	if (!have("dbus-daemon") || !have("avahi-daemon")) {
		snprintf(m->why, sizeof m->why, "dbus-daemon or avahi-daemon is not installed");
		return false;
	}
	if (geteuid() != 0) {
		snprintf(m->why, sizeof m->why, "avahi-daemon needs root to run");
		return false;
	}
	/* avahi-daemon keeps one pid file per machine: a second one refuses
	 * to start while another runs (a stale file is fine). */
	FILE *pf = fopen("/run/avahi-daemon/pid", "r");
	if (pf) {
		int other = 0;
		if (fscanf(pf, "%d", &other) == 1 && other > 0 && kill(other, 0) == 0) {
			fclose(pf);
			snprintf(m->why, sizeof m->why,
			         "an avahi-daemon (pid %d) already runs on this machine", other);
			return false;
		}
		fclose(pf);
	}
	const char *base = getenv("TMPDIR");
	snprintf(m->dir, sizeof m->dir, "%s/spc-mdns-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(m->dir)) {
		snprintf(m->why, sizeof m->why, "mkdtemp failed");
		return false;
	}
	char conf[400], aconf[400], log[400], alog[400];
	snprintf(conf, sizeof conf, "%s/bus.conf", m->dir);
	snprintf(aconf, sizeof aconf, "%s/avahi.conf", m->dir);
	snprintf(log, sizeof log, "%s/dbus.log", m->dir);
	snprintf(alog, sizeof alog, "%s/avahi.log", m->dir);
	snprintf(m->bus, sizeof m->bus, "DBUS_SYSTEM_BUS_ADDRESS=unix:path=%s/bus", m->dir);
	FILE *f = fopen(conf, "w");
	fprintf(f,
	        "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-BUS Bus Configuration "
	        "1.0//EN\"\n"
	        " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
	        "<busconfig><type>system</type><listen>unix:path=%s/bus</listen>"
	        "<auth>EXTERNAL</auth><policy context=\"default\"><allow user=\"*\"/>"
	        "<allow own=\"*\"/><allow send_type=\"method_call\"/>"
	        "<allow send_destination=\"*\"/><allow receive_sender=\"*\"/></policy>"
	        "</busconfig>\n",
	        m->dir);
	fclose(f);
	f = fopen(aconf, "w");
	fprintf(f,
	        "[server]\nhost-name=ga-spc-%d\nuse-ipv4=yes\nuse-ipv6=no\n"
	        "ratelimit-interval-usec=1000000\nratelimit-burst=1000\n"
	        "[wide-area]\nenable-wide-area=no\n"
	        "[publish]\npublish-hinfo=no\npublish-workstation=no\n[reflector]\n[rlimits]\n",
	        (int)getpid());
	fclose(f);
	char *dargv[] = {"dbus-daemon", "--config-file", conf, "--nofork", NULL};
	m->dbus = spawn(log, dargv, NULL);
	th_track_pid(m->dbus);
	th_track_dir(m->dir);
	char sock[400];
	snprintf(sock, sizeof sock, "%s/bus", m->dir);
	int64_t end = th_now_ms() + 5000;
	while (access(sock, F_OK) != 0 && th_now_ms() < end)
		th_msleep(10);
	if (access(sock, F_OK) != 0) {
		snprintf(m->why, sizeof m->why, "a private dbus-daemon did not start");
		mdns_env_stop(m);
		return false;
	}
	char *aargv[] = {"avahi-daemon",    "-f",          aconf,
	                 "--no-drop-root",  "--no-chroot", "--no-rlimits",
	                 "--no-proc-title", NULL};
	m->avahi = spawn(alog, aargv, m->bus);
	th_track_pid(m->avahi);
	end = th_now_ms() + 10000;
	for (;;) {
		char *t = NULL;
		FILE *lf = fopen(alog, "r");
		if (lf) {
			char buf[8192];
			size_t n = fread(buf, 1, sizeof buf - 1, lf);
			buf[n] = '\0';
			fclose(lf);
			t = strstr(buf, "Server startup complete") ? buf : NULL;
			if (!t && (waitpid(m->avahi, NULL, WNOHANG) == m->avahi)) {
				m->avahi = 0;
				snprintf(m->why, sizeof m->why,
				         "avahi-daemon did not start: %.200s", buf);
				mdns_env_stop(m);
				return false;
			}
		}
		if (t)
			return true;
		if (th_now_ms() > end) {
			snprintf(m->why, sizeof m->why,
			         "avahi-daemon did not complete its startup within 10 s "
			         "(no multicast interface?)");
			mdns_env_stop(m);
			return false;
		}
		th_msleep(20);
	}
}

static void test_mdns_discovery(void **state)
{
	(void)state;
	struct mdns_env m;
	if (!mdns_env_start(&m)) {
		print_message("SKIPPED mDNS discovery: %s\n", m.why);
		skip();
	}
	/* Any other agent-space advertised on this machine is visible too (and
	 * may answer first): the room has a name of its own, and the agent
	 * looks for that name. */
	char instance[64], name[80], wanted[96], found[96];
	snprintf(instance, sizeof instance, "spc-mdns-%d-%lld", (int)getpid(),
	         (long long)th_now_ms());
	snprintf(name, sizeof name, "SPACE_NAME=%s", instance);
	snprintf(wanted, sizeof wanted, "GA_SPACE_MDNS_NAME=%s", instance);
	snprintf(found, sizeof found, "instance=%s ", instance);
	/* A decoy advertised first, as another room on the machine would be. */
	char decoy_name[96];
	snprintf(decoy_name, sizeof decoy_name, "SPACE_NAME=decoy-%s", instance);
	const char *denv[] = {m.bus, decoy_name, NULL};
	struct th_room decoy;
	th_room_start(&decoy, 0, denv, true);
	const char *renv[] = {m.bus, name, NULL};
	struct th_room room;
	th_room_start(&room, 0, renv, true);
	char home[256];
	th_home_new(home, sizeof home);
	/* a fallback that cannot work, so only mDNS can bring it in */
	const char *env[] = {"AGENT_NAME=Mdns", m.bus,  "SPACE_URL",
	                     "GA_SPACE_MDNS=1", wanted, "GA_SPACE_LOCALHOST_URL=ws://127.0.0.1:1",
	                     FAST_ENV,          NULL};
	struct th_agent a;
	th_agent_start(&a, home, NULL, env);
	bool ok = th_agent_wait_log(&a, "via=mDNS", W);
	if (!ok)
		th_fail_dump(&a, &room);
	/* The log is read and released before any assertion, which would
	 * leave the function early. */
	char *log = th_agent_log(&a);
	bool found_room = log && strstr(log, "discovery: mDNS found a room");
	bool found_ours = log && strstr(log, found);
	free(log);
	th_agent_signal(&a, SIGTERM);
	int rc = th_agent_wait_exit(&a, W);
	th_room_stop(&room, SIGTERM);
	th_room_stop(&decoy, SIGTERM);
	mdns_env_stop(&m);
	assert_true(ok);
	assert_true(found_room);
	assert_true(found_ours);
	assert_int_equal(rc, 0);
}

/* --- reconnects
 * ----------------------------------------------------------------------------------- */

static void test_reconnect_after_kill_and_restart(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	char home[256], url[128];
	th_home_new(home, sizeof home);
	url_env(url, sizeof url, &room);
	const char *env[] = {"AGENT_NAME=Re", url, FAST_ENV, NULL};
	struct th_agent a;
	th_agent_start(&a, home, NULL, env);
	must_log(&a, &room, "joined the room");

	/* killed: no shutdown message, no close frame */
	th_room_stop(&room, SIGKILL);
	must_log(&a, &room, "left the room; reconnecting after a pause");
	/* while it is down the agent keeps trying */
	must_log(&a, &room, "could not join the room; retrying after a pause");
	th_room_restart(&room);
	struct ws_client *obs = th_observe(&room, "Obs");
	cJSON *p = th_expect(obs, "presence", th_pred_has_agent, "Re", W);
	if (!p) {
		th_fail_dump(&a, &room);
		fail_msg("the agent did not come back after the restart");
	}
	cJSON_Delete(p);
	assert_true(th_agent_wait_count(&a, "joined the room", 2, W));

	/* a shutdown message: reconnect after (the reference stopped for good) */
	th_room_stop(&room, SIGTERM);
	must_log(&a, &room, "the room is shutting down; will reconnect");
	th_observer_free(obs);
	th_room_restart(&room);
	obs = th_observe(&room, "Obs");
	p = th_expect(obs, "presence", th_pred_has_agent, "Re", W);
	if (!p) {
		th_fail_dump(&a, &room);
		fail_msg("the agent did not come back after a shutdown");
	}
	cJSON_Delete(p);
	th_agent_signal(&a, SIGTERM);
	assert_int_equal(th_agent_wait_exit(&a, W), 0);
	th_observer_free(obs);
	th_room_stop(&room, SIGTERM);
}

/* --- two agents with one name
 * --------------------------------------------------------------------- */

/* The id of an agent as it logged it when it joined. */
static void joined_id(struct th_agent *a, char *out, size_t cap)
{
	char *log = th_agent_log(a);
	const char *j = strstr(log, "joined the room");
	assert_non_null(j);
	j = strstr(j, " id=");
	assert_non_null(j);
	j += 4;
	size_t n = strcspn(j, " \n");
	snprintf(out, cap, "%.*s", (int)n, j);
	free(log);
}

/* The 4002 warning names the connection that replaced
 * us, never an older connection with our name from the room's history. */
static void test_replaced_warning_names_the_rival(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	char h0[256], h1[256], h2[256], url[128];
	th_home_new(h0, sizeof h0);
	th_home_new(h1, sizeof h1);
	th_home_new(h2, sizeof h2);
	url_env(url, sizeof url, &room);
	const char *env[] = {"AGENT_NAME=Twin", url, "GA_SPACE_BACKOFF_MS=60000", NULL};
	/* an earlier Twin joins and leaves: its leave stays in the history */
	struct th_agent old, a, b;
	th_agent_start(&old, h0, NULL, env);
	must_log(&old, &room, "joined the room");
	char old_id[64];
	joined_id(&old, old_id, sizeof old_id);
	th_agent_signal(&old, SIGTERM);
	assert_int_equal(th_agent_wait_exit(&old, W), 0);
	th_room_host(&room, "an unrelated line between the two");
	th_msleep(200);
	/* a Twin that replaced nobody ... */
	th_agent_start(&a, h1, NULL, env);
	must_log(&a, &room, "joined the room");
	/* ... is replaced by another one */
	th_agent_start(&b, h2, NULL, env);
	must_log(&b, &room, "joined the room");
	must_log(&a, &room, "replaced by another connection");
	char *log = th_agent_log(&a);
	char needle[96];
	snprintf(needle, sizeof needle, "other_id=%s", old_id);
	if (strstr(log, needle))
		fail_msg("the warning names the earlier connection %s:\n%s", old_id, log);
	assert_non_null(strstr(log, "other_id=(unknown)"));
	free(log);
	th_agent_signal(&a, SIGTERM);
	th_agent_signal(&b, SIGTERM);
	assert_int_equal(th_agent_wait_exit(&a, W), 0);
	assert_int_equal(th_agent_wait_exit(&b, W), 0);
	th_room_stop(&room, SIGTERM);
}

/* The agent's last "replaced by another connection" (if any) is followed
 * by a "joined the room": it is back in, not waiting out a backoff. */
static bool rejoined_after_last_replace(struct th_agent *a)
{
	char *log = th_agent_log(a);
	const char *last = NULL;
	for (const char *p = log; (p = strstr(p, "replaced by another connection")) != NULL; p++)
		last = p;
	bool in = last ? strstr(last, "joined the room") != NULL
	               : strstr(log, "joined the room") != NULL;
	free(log);
	return in;
}

static void test_same_name_does_not_churn_forever(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	struct ws_client *obs = th_observe(&room, "Obs");
	char h1[256], h2[256], url[128];
	th_home_new(h1, sizeof h1);
	th_home_new(h2, sizeof h2);
	url_env(url, sizeof url, &room);
	const char *env[] = {"AGENT_NAME=Twin", url, "GA_SPACE_BACKOFF_MS=100",
	                     "GA_SPACE_REPLACED_LIMIT=3", NULL};
	struct th_agent a, b;
	th_agent_start(&a, h1, NULL, env);
	must_log(&a, &room, "joined the room");
	/* ids are made from the clock: start the second one a moment later */
	th_agent_start(&b, h2, NULL, env);
	must_log(&b, &room, "joined the room");

	const char *gave_up = "another agent keeps joining the room with this agent's name";
	int64_t end = th_now_ms() + 20000;
	while (th_agent_count(&a, gave_up) + th_agent_count(&b, gave_up) == 0) {
		if (th_now_ms() > end) {
			th_fail_dump(&a, &room);
			th_fail_dump(&b, NULL);
			fail_msg("the two same-name agents never settled");
		}
		th_msleep(20);
	}
	struct th_agent *loser = th_agent_count(&a, gave_up) ? &a : &b;
	struct th_agent *winner = loser == &a ? &b : &a;
	assert_int_equal(th_agent_count(winner, gave_up), 0);
	/* both processes live on; only one is in the room */
	assert_true(th_agent_alive(loser));
	assert_true(th_agent_alive(winner));
	/* the winner may still be waiting out its backoff after the last
	 * time the loser replaced it: count its joins once it is back in */
	end = th_now_ms() + 20000;
	while (!rejoined_after_last_replace(winner)) {
		if (th_now_ms() > end) {
			th_fail_dump(winner, &room);
			fail_msg("the winner never rejoined after it was last replaced");
		}
		th_msleep(20);
	}
	int wj = th_agent_count(winner, "joined the room");
	int lj = th_agent_count(loser, "joined the room");
	/* Quiet period: many backoff steps long, nobody rejoins any more. */
	th_msleep(1000);
	assert_int_equal(th_agent_count(winner, "joined the room"), wj);
	assert_int_equal(th_agent_count(loser, "joined the room"), lj);

	/* The observer's latest presence: exactly one Twin, the winner; the
	 * loser's error names the winner's id. */
	th_observer_free(obs);
	obs = th_observe(&room, "Obs2");
	char *ll = th_agent_log(loser);
	char *wl = th_agent_log(winner);
	const char *wid = strstr(wl, "joined the room");
	assert_non_null(wid);
	wid = strstr(wid, " id=");
	assert_non_null(wid);
	char winner_id[64];
	sscanf(wid + 4, "%63s", winner_id);
	char needle[128];
	snprintf(needle, sizeof needle, "other_id=%s", winner_id);
	if (!strstr(ll, needle))
		fail_msg("the loser's error does not name the winner (%s):\n%s", needle, ll);
	free(ll);
	free(wl);

	/* a fresh joiner's presence is the room's member list now */
	struct ws_client *obs3 = ws_connect("127.0.0.1", room.port, W);
	assert_non_null(obs3);
	th_send(obs3, "{\"type\":\"join\",\"name\":\"Obs3\",\"id\":\"o3\",\"version\":\"1\"}");
	cJSON *p = th_expect(obs3, "presence", NULL, NULL, W);
	assert_non_null(p);
	assert_int_equal(th_presence_count(p, "Twin"), 1);
	assert_string_equal(str(th_presence_agent(p, "Twin"), "id"), winner_id);
	cJSON_Delete(p);
	ws_free(obs3);

	th_agent_signal(&a, SIGTERM);
	th_agent_signal(&b, SIGTERM);
	assert_int_equal(th_agent_wait_exit(&a, W), 0);
	assert_int_equal(th_agent_wait_exit(&b, W), 0);
	th_observer_free(obs);
	th_room_stop(&room, SIGTERM);
}

/* --- a server that never answers
 * ------------------------------------------------------------------ */

static void test_server_never_answers(void **state)
{
	(void)state;
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(ls, 16), 0);
	socklen_t sl = sizeof sa;
	getsockname(ls, (struct sockaddr *)&sa, &sl);
	char home[256], url[128];
	th_home_new(home, sizeof home);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", ntohs(sa.sin_port));
	const char *env[] = {"AGENT_NAME=Wait", url, "GA_SPACE_CONNECT_TIMEOUT_MS=300",
	                     "GA_SPACE_BACKOFF_MS=100", NULL};
	struct th_agent a;
	th_agent_start(&a, home, NULL, env);
	/* Accept and hold every connection, say nothing. */
	int held[16], nheld = 0;
	int64_t end = th_now_ms() + W;
	while ((nheld < 3 || th_agent_count(&a, "no answer within 300 ms") < 2) &&
	       th_now_ms() < end) {
		struct pollfd pfd = {.fd = ls, .events = POLLIN};
		if (poll(&pfd, 1, 20) == 1 && nheld < 16) {
			int c = accept(ls, NULL, NULL);
			if (c >= 0)
				held[nheld++] = c;
		}
	}
	if (nheld < 3 || th_agent_count(&a, "no answer within 300 ms") < 2) {
		th_fail_dump(&a, NULL);
		fail_msg("expected repeated timed-out attempts, saw %d connections", nheld);
	}
	/* it did not give up: still running, still trying */
	assert_true(th_agent_alive(&a));
	th_agent_signal(&a, SIGTERM);
	assert_int_equal(th_agent_wait_exit(&a, W), 0);
	for (int i = 0; i < nheld; i++)
		close(held[i]);
	close(ls);
}

/* --- a scripted server: the upgrade answered, then silence; the close -------------------- */

/* Just enough of a WebSocket server to watch what the client does on the
 * wire: accept one connection, answer the upgrade, read masked frames. */
static int fw_listen(int *port)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(ls, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(ls, 16) != 0)
		fail_msg("listen: %s", strerror(errno));
	socklen_t sl = sizeof sa;
	getsockname(ls, (struct sockaddr *)&sa, &sl);
	*port = ntohs(sa.sin_port);
	return ls;
}

static bool fw_readable(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, timeout_ms) == 1;
}

/* Accepts a connection and answers its upgrade; the request head goes to
 * head. -1 on timeout. */
static int fw_accept_upgrade(int ls, char *head, size_t cap)
{
	if (!fw_readable(ls, W))
		return -1;
	int fd = accept(ls, NULL, NULL);
	size_t n = 0;
	while (n + 1 < cap && !strstr(head, "\r\n\r\n")) {
		if (!fw_readable(fd, W))
			break;
		ssize_t r = read(fd, head + n, 1);
		if (r <= 0)
			break;
		n += (size_t)r;
		head[n] = '\0';
	}
	const char *k = strcasestr(head, "Sec-WebSocket-Key:");
	if (!k)
		fail_msg("no Sec-WebSocket-Key in:\n%s", head);
	char key[64] = "";
	sscanf(k + 18, " %63s", key);
	char cat[160];
	snprintf(cat, sizeof cat, "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_Digest(cat, strlen(cat), md, &mdlen, EVP_sha1(), NULL);
	char accept_b64[64];
	EVP_EncodeBlock((unsigned char *)accept_b64, md, (int)mdlen);
	char resp[256];
	int rl = snprintf(resp, sizeof resp,
	                  "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	                  "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
	                  accept_b64);
	if (write(fd, resp, (size_t)rl) != rl)
		fail_msg("write 101");
	return fd;
}

static bool fw_read_n(int fd, unsigned char *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		if (!fw_readable(fd, W))
			return false;
		ssize_t r = read(fd, buf + got, n - got);
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

/* One client frame: opcode, unmasked payload (NUL-terminated, caller
 * frees). NULL when the connection ended or nothing came. */
static char *fw_read_frame(int fd, int *opcode, size_t *len)
{
	unsigned char h[2];
	if (!fw_read_n(fd, h, 2))
		return NULL;
	*opcode = h[0] & 0x0f;
	size_t n = h[1] & 0x7f;
	if (n == 126) {
		unsigned char e[2];
		fw_read_n(fd, e, 2);
		n = (size_t)e[0] << 8 | e[1];
	} else if (n == 127) {
		unsigned char e[8];
		fw_read_n(fd, e, 8);
		n = 0;
		for (int i = 0; i < 8; i++)
			n = n << 8 | e[i];
	}
	if (!(h[1] & 0x80))
		fail_msg("a client frame without a mask");
	unsigned char mask[4];
	fw_read_n(fd, mask, 4);
	char *p = malloc(n + 1);
	fw_read_n(fd, (unsigned char *)p, n);
	for (size_t i = 0; i < n; i++)
		p[i] = (char)(p[i] ^ mask[i % 4]);
	p[n] = '\0';
	*len = n;
	return p;
}

static void fw_send_text(int fd, const char *text)
{
	size_t n = strlen(text);
	unsigned char h[4] = {0x81, 0, 0, 0};
	size_t hl = 2;
	if (n < 126) {
		h[1] = (unsigned char)n;
	} else {
		h[1] = 126;
		h[2] = (unsigned char)(n >> 8);
		h[3] = (unsigned char)n;
		hl = 4;
	}
	if (write(fd, h, hl) != (ssize_t)hl || write(fd, text, n) != (ssize_t)n)
		fail_msg("fake server write failed");
}

/* The next data frame (pings/pongs skipped), as text. */
static char *fw_next_text(int fd, int *opcode)
{
	for (;;) {
		size_t len;
		char *p = fw_read_frame(fd, opcode, &len);
		if (!p || (*opcode != 0x9 && *opcode != 0xA))
			return p;
		free(p);
	}
}

static void test_upgrade_without_join_and_polite_close(void **state)
{
	(void)state;
	int port;
	int ls = fw_listen(&port);
	char home[256], url[128];
	th_home_new(home, sizeof home);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d/room?x=1", port);
	const char *env[] = {"AGENT_NAME=Ada", url, "GA_SPACE_CONNECT_TIMEOUT_MS=400",
	                     "GA_SPACE_BACKOFF_MS=100", NULL};
	struct th_agent a;
	th_agent_start(&a, home, NULL, env);

	/* 1: upgrade answered, join never echoed: the agent gives up on it */
	char head[4096] = "";
	int fd = fw_accept_upgrade(ls, head, sizeof head);
	assert_true(fd >= 0);
	assert_int_equal(strncmp(head, "GET /room?x=1 HTTP/1.1", 22), 0);
	assert_null(
	        strcasestr(head, "Sec-WebSocket-Protocol")); /* none offered, like the reference */
	int op;
	char *t = fw_next_text(fd, &op);
	assert_non_null(t);
	assert_int_equal(op, 0x1);
	assert_non_null(strstr(t, "\"type\":\"join\",\"name\":\"Ada\""));
	char id[64] = "";
	const char *ip = strstr(t, "\"id\":\"");
	sscanf(ip + 6, "%63[^\"]", id);
	free(t);
	t = fw_next_text(fd, &op);
	assert_non_null(strstr(t, "\"type\":\"identity\""));
	free(t);
	if (!th_agent_wait_log(&a, "no answer within 400 ms", W)) {
		th_fail_dump(&a, NULL);
		fail_msg("the silent room was not given up on");
	}
	close(fd);

	/* 2: the next attempt is answered; SIGTERM closes with 1000 */
	memset(head, 0, sizeof head);
	fd = fw_accept_upgrade(ls, head, sizeof head);
	assert_true(fd >= 0);
	t = fw_next_text(fd, &op);
	assert_non_null(strstr(t, "\"type\":\"join\""));
	free(t);
	char echo[256];
	snprintf(echo, sizeof echo,
	         "{\"type\":\"join\",\"name\":\"Ada\",\"id\":\"%s\",\"version\":\"0.1.0\"}", id);
	fw_send_text(fd, echo);
	if (!th_agent_wait_log(&a, "joined the room", W)) {
		th_fail_dump(&a, NULL);
		fail_msg("the echoed join was not taken as joined");
	}
	th_agent_signal(&a, SIGTERM);
	char *frame = NULL;
	for (;;) {
		frame = fw_next_text(fd, &op);
		if (!frame || op == 0x8)
			break;
		free(frame);
	}
	assert_non_null(frame);
	assert_int_equal(op, 0x8);
	unsigned code = (unsigned)((unsigned char)frame[0] << 8 | (unsigned char)frame[1]);
	assert_int_equal(code, 1000);
	assert_string_equal(frame + 2, "Client disconnecting");
	free(frame);
	/* answer the close like a server does */
	unsigned char cl[4] = {0x88, 2, 0x03, 0xe8};
	if (write(fd, cl, 4) != 4)
		print_message("close echo not written\n");
	assert_int_equal(th_agent_wait_exit(&a, W), 0);
	close(fd);
	close(ls);
}

/* --- host messages
 * --------------------------------------------------------------------------------- */

static void test_host_addressed_is_logged_not_answered(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	struct ws_client *obs = th_observe(&room, "Obs");
	char home[256], url[128];
	th_home_new(home, sizeof home);
	url_env(url, sizeof url, &room);
	const char *env[] = {"AGENT_NAME=Ada", url, "LOG_LEVEL=debug", FAST_ENV, NULL};
	struct th_agent a;
	th_agent_start(&a, home, NULL, env);
	cJSON *p = must_expect(obs, "presence", th_pred_has_agent, "Ada", &a, &room);
	cJSON_Delete(p);
	must_log(&a, &room, "joined the room");

	th_room_host(&room, "good morning, room");
	th_room_host(&room, "@Ada could you take a look?");
	must_log(&a, &room, "host addressed me: @Ada could you take a look?");
	/* the unaddressed one is a debug line, not an info one */
	must_log(&a, &room, "text=\"good morning, room\"");
	assert_int_equal(th_agent_count(&a, "host addressed me: good morning"), 0);
	/* a peer's chat: kind peer, chain 1 after the host's message */
	th_send(obs,
	        "{\"type\":\"chat\",\"name\":\"Obs\",\"id\":\"x\",\"content\":\"Ada, hello\"}");
	must_log(&a, &room, "chat from=Obs");
	char *log = th_agent_log(&a);
	const char *line = strstr(log, "chat from=Obs");
	assert_non_null(strstr(line, "kind=peer"));
	/* it carried no chain: the event says 0; the chain derived from
	 * history (one agent message since the host's) is the store's, and the
	 * gate's decision names it */
	assert_non_null(strstr(line, "chain=0"));
	assert_non_null(strstr(line, "addressed_me=yes"));
	free(log);
	must_log(&a, &room, "no marker, history 1");
	/* no model, no reply: nothing from Ada but typing-free silence */
	cJSON *c = th_expect(obs, "chat", th_pred_name, "Ada", 500);
	assert_null(c);
	th_agent_signal(&a, SIGTERM);
	assert_int_equal(th_agent_wait_exit(&a, W), 0);
	th_observer_free(obs);
	th_room_stop(&room, SIGTERM);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_teardown(test_space_url_join_and_identity, th_teardown),
	        cmocka_unit_test_teardown(test_social_only_capabilities, th_teardown),
	        cmocka_unit_test_teardown(test_localhost_fallback, th_teardown),
	        cmocka_unit_test_teardown(test_mdns_discovery, th_teardown),
	        cmocka_unit_test_teardown(test_reconnect_after_kill_and_restart, th_teardown),
	        cmocka_unit_test_teardown(test_same_name_does_not_churn_forever, th_teardown),
	        cmocka_unit_test_teardown(test_replaced_warning_names_the_rival, th_teardown),
	        cmocka_unit_test_teardown(test_server_never_answers, th_teardown),
	        cmocka_unit_test_teardown(test_upgrade_without_join_and_polite_close, th_teardown),
	        cmocka_unit_test_teardown(test_host_addressed_is_logged_not_answered, th_teardown),
	};
	const char *filter = getenv("SPC_TEST_FILTER");
	if (filter)
		cmocka_set_test_filter(filter);
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	th_cleanup_all();
	return rc;
}
