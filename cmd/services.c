/* services — the table of platform services and their life (services.h). */
#include "cmd/services.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

/* Weak: a service whose cmd/svc_<name>.c is not in the build is absent
 * (its address is NULL), so the table never names a stub. */
extern const struct ga_service svc_commitments __attribute__((weak));
extern const struct ga_service svc_github __attribute__((weak));
extern const struct ga_service svc_bluesky __attribute__((weak));
extern const struct ga_service svc_reflection __attribute__((weak));
extern const struct ga_service svc_workspace __attribute__((weak));
extern const struct ga_service svc_space __attribute__((weak));

static const struct ga_service *known(int i)
{
	switch (i) {
	case 0:
		return &svc_commitments;
	case 1:
		return &svc_github;
	case 2:
		return &svc_bluesky;
	case 3:
		return &svc_reflection;
	case 4:
		return &svc_workspace;
	/* last: quiesced after the others, as it leaves the room politely */
	case 5:
		return &svc_space;
	default:
		return NULL;
	}
}
#define KNOWN_COUNT 6

void ga_services_start(struct ga_services *s, const struct ga_svc_ctx *ctx)
{
	memset(s, 0, sizeof *s);
	for (int i = 0; i < KNOWN_COUNT && s->n < GA_SERVICES_MAX; i++) {
		const struct ga_service *svc = known(i);
		if (!svc || !svc->start || (!ctx->http && !svc->without_http))
			continue;
		struct ga_err err = {{0}};
		void *obj = svc->start(ctx, &err);
		if (!obj) {
			if (err.msg[0])
				log_kv(LOG_LEVEL_ERROR, "daemon", "service not started", "service",
				       svc->name, "error", err.msg);
			else
				log_kv(LOG_LEVEL_INFO, "daemon", "service off (not configured)",
				       "service", svc->name);
			continue;
		}
		log_kv(LOG_LEVEL_INFO, "daemon", "service started", "service", svc->name);
		s->svc[s->n] = svc;
		s->obj[s->n] = obj;
		s->n++;
	}
}

void ga_services_reload(struct ga_services *s)
{
	for (int i = 0; i < s->n; i++)
		if (s->svc[i]->reload)
			s->svc[i]->reload(s->obj[i]);
}

void ga_services_status(struct ga_services *s, cJSON *obj)
{
	cJSON *o = cJSON_AddObjectToObject(obj, "services");
	for (int i = 0; i < s->n; i++) {
		cJSON *st = s->svc[i]->status ? s->svc[i]->status(s->obj[i]) : NULL;
		if (!st)
			st = cJSON_CreateObject();
		cJSON_AddItemToObject(o, s->svc[i]->name, st);
	}
}

static void one_drained(void *ud)
{
	struct ga_services *s = ud;
	if (--s->draining == 0 && s->drained)
		s->drained(s->drained_ud);
}

void ga_services_quiesce(struct ga_services *s, void (*done)(void *ud), void *ud)
{
	for (int i = 0; i < s->n; i++)
		if (s->svc[i]->quiesce)
			s->svc[i]->quiesce(s->obj[i]);
	s->drained = done;
	s->drained_ud = ud;
	s->draining = 1; /* held until every drain is asked, so done comes once */
	for (int i = 0; i < s->n; i++) {
		if (s->svc[i]->drain) {
			s->draining++;
			s->svc[i]->drain(s->obj[i], one_drained, s);
		}
	}
	one_drained(s);
}

const struct ga_room *ga_services_room(const struct ga_services *s, void **svc)
{
	for (int i = 0; i < s->n; i++) {
		if (s->svc[i]->room) {
			*svc = s->obj[i];
			return s->svc[i]->room;
		}
	}
	*svc = NULL;
	return NULL;
}

void ga_services_free(struct ga_services *s)
{
	for (int i = s->n - 1; i >= 0; i--)
		if (s->svc[i]->free)
			s->svc[i]->free(s->obj[i]);
	s->n = 0;
}

int ga_svc_env_ms(const struct ga_svc_ctx *ctx, const char *name, int64_t lo, int64_t hi,
                  int64_t def, int64_t *out, struct ga_err *err)
{
	const char *v = ctx->env ? ctx->env(ctx->ud, name) : getenv(name);
	*out = def;
	if (!v || !*v)
		return 0;
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (errno || *end || n < lo || n > hi)
		return err_set(err,
		               "%s=\"%.40s\" is invalid: expected a whole number of "
		               "milliseconds from %lld to %lld",
		               name, v, (long long)lo, (long long)hi);
	*out = n;
	return 0;
}
