/*
 * issues — what the work loop does to issues besides creating and
 * commenting (gh_work.h): labels, assignees, the event history, updates.
 */
#include <stdlib.h>
#include <string.h>

#include "adapters/github/gh_work.h"
#include "adapters/github/ghcall.h"

static uint64_t labels(struct gh_client *c, const char *method, const char *owner, const char *repo,
                       int64_t number, const char *const *v, size_t n, gh_done_fn cb, void *ud,
                       struct ga_err *err)
{
	bool set = strcmp(method, "PUT") == 0;
	if (n > GH_LABELS_MAX || (n && !v) || (!set && n == 0))
		return refuse(err, "%s takes %s to %d labels, not %zu",
		              set ? "setting labels" : "adding labels", set ? "0" : "1",
		              GH_LABELS_MAX, n);
	for (size_t i = 0; i < n; i++)
		if (!v[i] || !v[i][0] || strlen(v[i]) > 50 || strchr(v[i], ','))
			return refuse(err, "'%.60s' is not a label name (1-50 bytes, no comma)",
			              v[i] ? v[i] : "");
	struct strbuf path;
	if (number_path(&path, owner, repo, "issues", number, "/labels", err) != 0)
		return 0;
	char what[200];
	snprintf(what, sizeof what, "%s the labels of %s/%s#%lld", set ? "set" : "add to", owner,
	         repo, (long long)number);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "labels", string_array(v, n));
	return write_json(c, method, what, o, &path, true, cb, ud, err);
}

uint64_t gh_labels_set(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                       const char *const *v, size_t n, gh_done_fn cb, void *ud, struct ga_err *err)
{
	return labels(c, "PUT", owner, repo, number, v, n, cb, ud, err);
}

uint64_t gh_labels_add(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                       const char *const *v, size_t n, gh_done_fn cb, void *ud, struct ga_err *err)
{
	return labels(c, "POST", owner, repo, number, v, n, cb, ud, err);
}

uint64_t gh_label_remove(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                         const char *label, gh_done_fn cb, void *ud, struct ga_err *err)
{
	if (!label || !label[0] || strlen(label) > 50)
		return refuse(err, "'%.60s' is not a label name", label ? label : "");
	struct strbuf path;
	if (number_path(&path, owner, repo, "issues", number, "/labels/", err) != 0)
		return 0;
	char what[200];
	snprintf(what, sizeof what, "remove label %s from %s/%s#%lld", label, owner, repo,
	         (long long)number);
	/* A label is one path segment: its '/' is encoded too. */
	for (const unsigned char *p = (const unsigned char *)label; *p; p++)
		if ((isalnum(*p) || strchr("-._~", *p) ? sb_putc(&path, (char)*p)
		                                       : sb_printf(&path, "%%%02X", *p)) != 0)
			return too_long(&path, what, err);
	struct gh_req req = {.method = "DELETE", .what = what};
	return call_with(c, &req, &path, cb, ud, err);
}

uint64_t gh_assignees_add(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                          const char *const *logins, size_t n, gh_done_fn cb, void *ud,
                          struct ga_err *err)
{
	return logins_write(c, "POST", owner, repo, "issues", number, "/assignees", "assignees",
	                    GH_ASSIGNEES_MAX, "assigning", logins, n, cb, ud, err);
}

uint64_t gh_assignees_remove(struct gh_client *c, const char *owner, const char *repo,
                             int64_t number, const char *const *logins, size_t n, gh_done_fn cb,
                             void *ud, struct ga_err *err)
{
	return logins_write(c, "DELETE", owner, repo, "issues", number, "/assignees", "assignees",
	                    GH_ASSIGNEES_MAX, "assigning", logins, n, cb, ud, err);
}

uint64_t gh_issue_events(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                         size_t max_items, gh_done_fn cb, void *ud, struct ga_err *err)
{
	struct strbuf path;
	if (number_path(&path, owner, repo, "issues", number, "/events", err) != 0)
		return 0;
	char what[200];
	snprintf(what, sizeof what, "list the events of %s/%s#%lld", owner, repo,
	         (long long)number);
	return get_list(c, &path, what, NULL, 0, max_items, cb, ud, err);
}

uint64_t gh_issue_update(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                         const struct gh_issue_update *in, gh_done_fn cb, void *ud,
                         struct ga_err *err)
{
	static const char *const states[] = {"open", "closed", NULL};
	static const char *const reasons[] = {"completed", "not_planned", "reopened", NULL};
	if (!in || (in->state && !one_of(in->state, states)) ||
	    (in->state_reason && !one_of(in->state_reason, reasons)))
		return refuse(err, "an issue update takes state open or closed and a reason "
		                   "completed, not_planned or reopened");
	if (in->body && strlen(in->body) > GH_MAX_BODY_BYTES)
		return refuse(err, "the issue body is longer than %zu bytes; nothing was sent",
		              GH_MAX_BODY_BYTES);
	struct strbuf path;
	if (number_path(&path, owner, repo, "issues", number, "", err) != 0)
		return 0;
	char what[200];
	snprintf(what, sizeof what, "update issue %s/%s#%lld", owner, repo, (long long)number);
	cJSON *o = cJSON_CreateObject();
	const char *const kv[][2] = {{"title", in->title},
	                             {"body", in->body},
	                             {"state", in->state},
	                             {"state_reason", in->state_reason}};
	add_strings(o, kv, 4);
	return write_json(c, "PATCH", what, o, &path, true, cb, ud, err);
}
