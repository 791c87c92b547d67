/*
 * api-tenant.c: the tenants' routes (docs/tenants.md), on the Unix socket
 * only (server-tls.c refuses them over TCP, as the tokens' routes): a
 * tenant's token cannot change its own quota.
 */

#include <math.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "gmux.h"
#include "tenant-int.h"

#define TENANT_SHARE_MAX	(64 * SEATS_PER_CARD)

/* An owner's name; else the 400 is sent. */
static int
api_tenant_owner(struct evhttp_request *req, const char *name)
{
	if (token_owner_valid(name))
		return (0);
	api_error(req, 400, "name: '%.64s' is not an owner's name", name);
	return (-1);
}

/* A name a tenant may have (with accounts, an account's); else 400. */
static int
api_tenant_name(struct evhttp_request *req, const char *name)
{
	char	*cause = NULL;

	if (api_tenant_owner(req, name) != 0)
		return (-1);
	if (tenant_owner_ok(name, &cause) != 0) {
		api_error(req, 400, "%s", cause);
		free(cause);
		return (-1);
	}
	return (0);
}

static u_int
api_tenant_running(const char *owner)
{
	struct job	*j;
	u_int		 n = 0;

	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (j->state == JOB_RUNNING && strcmp(j->owner, owner) == 0)
			n++;
	}
	return (n);
}

/* GET /v1/tenants: whether accounts are made, and every tenant. */
void
api_tenants_list(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct tenant	*t;
	const char	*why;
	json_t		*o, *a, *e;
	int		 on = tenant_accounts_on(&why);

	a = json_array();
	TAILQ_FOREACH(t, tenants_all(), entry) {
		e = tenant_to_json(t);
		json_object_set_new(e, "jobs",
		    json_integer(api_tenant_running(t->name)));
		json_object_set_new(e, "disk_limit",
		    json_integer((json_int_t)tenant_disk_limit(t)));
		json_object_set_new(e, "error", t->end_error != NULL ?
		    json_string(t->end_error) : json_null());
		json_array_append_new(a, e);
	}
	o = json_pack("{s:b, s:o}", "accounts", on, "tenants", a);
	json_object_set_new(o, "why", why != NULL ? json_string(why) :
	    json_null());
	json_object_set_new(o, "disk_method", json_string(
	    tenant_disk_quotas() ? "quota" : "walk"));
	api_reply(req, 200, o);
	json_decref(o);
}

/* t changed: kept, said, and answered. */
static void
api_tenant_saved(struct evhttp_request *req, struct tenant *t,
    const char *what)
{
	json_t	*o;

	tenants_save();
	log_info("tenant %s: %s", t->name, what);
	o = tenant_to_json(t);
	api_reply(req, 200, o);
	json_decref(o);
}

/* "2", "0.5": cards' worth of guaranteed share, in seats. */
static int
api_tenant_share(const char *s, u_int *seats, char **cause)
{
	double	 v;
	char	*end;

	v = strtod(s, &end);
	if (end == s || *end != '\0' || !(v >= 0) ||
	    v * SEATS_PER_CARD > TENANT_SHARE_MAX) {
		xasprintf(cause, "share: '%.32s' is not a number of cards "
		    "(0 to 64)", s);
		return (-1);
	}
	*seats = (u_int)lround(v * SEATS_PER_CARD);
	return (0);
}

/* One field of a quota's body into t; -1 with *cause naming it. */
static int
api_tenant_field(struct tenant *t, const char *k, json_t *v, char **cause)
{
	const char	*s = json_string_value(v);
	json_int_t	 n;
	char		*why;

	if (strcmp(k, "jobs") == 0) {
		n = json_is_integer(v) ? json_integer_value(v) : -1;
		if (n < 0 || n > 1000000) {
			xasprintf(cause, "jobs: a count from 0 to 1000000");
			return (-1);
		}
		t->q_jobs = (u_int)n;
		return (0);
	}
	if (strcmp(k, "share") != 0 && strcmp(k, "mem") != 0 &&
	    strcmp(k, "disk") != 0) {
		xasprintf(cause, "%.32s: no such field (share, mem, jobs, "
		    "disk)", k);
		return (-1);
	}
	if (s == NULL) {
		xasprintf(cause, "%s: a string is needed", k);
		return (-1);
	}
	if (strcmp(k, "share") == 0)
		return (api_tenant_share(s, &t->q_share, cause));
	if (parse_size(s, strcmp(k, "mem") == 0 ? &t->q_mem : &t->q_disk,
	    &why) == 0)
		return (0);
	xasprintf(cause, "%s: %s", k, why);
	free(why);
	return (-1);
}

/* PATCH /v1/tenants/NAME {"share", "mem", "jobs", "disk"}: its quota. */
void
api_tenant_quota(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct tenant	 copy, *t;
	json_t		*body, *v;
	const char	*k;
	char		*cause = NULL;

	if (api_tenant_name(req, id) != 0)
		return;
	if ((body = api_body(req, &cause)) == NULL || !json_is_object(body)) {
		api_error(req, 400, "%s", cause ? cause : "a JSON object");
		goto out;
	}
	t = tenant_get(id);
	copy = *t;
	json_object_foreach(body, k, v) {
		if (api_tenant_field(&copy, k, v, &cause) != 0) {
			api_error(req, 400, "%s", cause);
			goto out;
		}
	}
	t->q_share = copy.q_share;
	t->q_mem = copy.q_mem;
	t->q_jobs = copy.q_jobs;
	t->q_disk = copy.q_disk;
	if (t->state == TENANT_ACTIVE)
		tenant_home_quota(t);
	api_tenant_saved(req, t, "quota set");
out:
	free(cause);
	json_decref(body);
}

/* PUT /v1/tenants/NAME/user {"user": USER}: runs as an existing account. */
void
api_tenant_map(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct tenant	*t;
	struct passwd	*pw;
	json_t		*body;
	const char	*user;
	char		*cause = NULL;

	if (api_tenant_owner(req, id) != 0)
		return;
	if ((body = api_body(req, &cause)) == NULL ||
	    (user = json_string_value(json_object_get(body, "user"))) ==
	    NULL) {
		api_error(req, 400, "%s", cause ? cause : "user: a name");
		goto out;
	}
	if ((pw = getpwnam(user)) == NULL || pw->pw_uid == 0) {
		api_error(req, 400, "user: '%.64s' is %s", user, pw == NULL ?
		    "no account on this host" : "root's: never mapped");
		goto out;
	}
	t = tenant_get(id);
	free(t->user);
	t->user = xstrdup(user);
	api_tenant_saved(req, t, "mapped");
out:
	free(cause);
	json_decref(body);
}

/* The owner's tokens and invites, revoked. */
static void
api_tenant_revoke(const char *owner)
{
	struct tokens	*tk;
	char		*cause = NULL, *tid;
	u_int		 i;

	if ((tk = server_tls_tokens(&cause)) == NULL ||
	    tokens_refresh(tk, &cause) != 0) {
		log_warnx("%s: %s", __func__, cause);
		free(cause);
		return;
	}
	for (i = 0; i < tk->n; i++) {
		if (strcmp(tk->v[i].owner, owner) != 0 || tk->v[i].revoked)
			continue;
		/* (a revoke reads the file again: tk->v is made anew) */
		tid = xstrdup(tk->v[i].id);
		if (tokens_revoke(tk, tid, &cause) != 0) {
			log_warnx("%s: %s", __func__, cause);
			free(cause);
			cause = NULL;
		}
		free(tid);
	}
}

/*
 * DELETE /v1/tenants/NAME: its tokens revoked at once, its jobs stopped
 * with their grace; once they have ended its home archived, its account
 * and record removed: 200 if that was at once, else 202 ("removed":
 * false) and the daemon's tick finishes it (gmux tenant rm waits).
 */
void
api_tenant_rm(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct tenant	*t;
	struct job	*j, *next;
	json_t		*o;
	u_int		 stopped = 0;
	int		 rc = 0;

	if (api_tenant_owner(req, id) != 0)
		return;
	if (strcmp(id, api_me()) == 0) {
		api_error(req, 400, "name: %s is the daemon's own user", id);
		return;
	}
	api_tenant_revoke(id);
	TAILQ_FOREACH_SAFE(j, &all_jobs, entry, next) {
		if (!job_ended(j) && strcmp(j->owner, id) == 0) {
			job_stop(j, j->req.grace_ms, "stopped");
			stopped++;
		}
	}
	if ((t = tenant_find(id)) == NULL)
		log_info("tenant %s removed (it had no record)", id);
	else {
		t->removing = 1;
		t->end_retry = 0;	/* asked again: tried again at once */
		rc = tenant_remove(t);
	}
	o = json_pack("{s:s, s:b, s:i}", "name", id, "removed", rc != 1,
	    "stopped", stopped);
	api_reply(req, rc == 1 ? 202 : 200, o);
	json_decref(o);
}
