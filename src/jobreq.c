/*
 * jobreq.c: a job request as it crosses the API: JSON in, checked fields
 * out.  Every field is validated here, so the daemon only ever sees a
 * request that makes sense (it may still not fit).
 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

#define JOBREQ_MAX_ARGS	4096
#define JOBREQ_MAX_ENV	8192
#define JOBREQ_MAX_STR	(128 * 1024)
#define JOBREQ_MAX_STR_TEXT	"128 KiB"

void
jobreq_init(struct jobreq *r)
{
	memset(r, 0, sizeof *r);
	r->card = -1;
	r->ncards = 1;
	r->priority = 5;
	r->grace_ms = 10 * 1000;
	r->umask = -1;
	jobspec_init(&r->spec);
}

/* The value of variable name in r's environment, or NULL. */
const char *
jobreq_env(const struct jobreq *r, const char *name)
{
	char *const	*e;
	size_t		 len = strlen(name);

	for (e = r->env; e != NULL && *e != NULL; e++) {
		if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
			return (*e + len + 1);
	}
	return (NULL);
}

void
jobreq_clear(struct jobreq *r)
{
	strv_free(r->argv);
	strv_free(r->env);
	free(r->cwd);
	free(r->card_uuid);
	fence_free(r->fence);
	free(r->manifest);
	free(r->key);
	jobspec_clear(&r->spec);
	jobreq_init(r);
}

/* Whether s may not be an entry of a string array, and why. */
static int
strv_bad(json_t *s, int need_eq, const char **why)
{
	if (!json_is_string(s))
		*why = "must be a string";
	else if (json_string_length(s) > JOBREQ_MAX_STR)
		*why = "is over " JOBREQ_MAX_STR_TEXT;
	else if (strlen(json_string_value(s)) != json_string_length(s))
		*why = "must not hold a NUL byte";
	else if (need_eq && strchr(json_string_value(s), '=') == NULL)
		*why = "must be a NAME=VALUE string";
	else
		return (0);
	return (1);
}

/* Returns a NULL-terminated copy of a JSON array of strings, or NULL. */
static char **
strv_from_json(json_t *a, const char *field, size_t max, int need_eq,
    char **cause)
{
	char		**v;
	const char	 *why;
	size_t		  i, n;
	json_t		 *s;

	if (!json_is_array(a)) {
		xasprintf(cause, "%s: must be an array of strings", field);
		return (NULL);
	}
	if ((n = json_array_size(a)) > max) {
		xasprintf(cause, "%s: more than %zu entries", field, max);
		return (NULL);
	}
	v = xcalloc(n + 1, sizeof *v);
	json_array_foreach(a, i, s) {
		if (strv_bad(s, need_eq, &why)) {
			xasprintf(cause, "%s[%zu]: %s", field, i, why);
			strv_free(v);
			return (NULL);
		}
		v[i] = xstrdup(json_string_value(s));
	}
	return (v);
}

/* Whether s may be an idempotency key (JOBREQ_KEY_RULE). */
int
jobreq_key_ok(const char *s)
{
	size_t	 n = strlen(s);

	return (n != 0 && n <= JOBREQ_KEY_MAX && strspn(s,
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789._:-") == n);
}

static int
key_from_json(json_t *v, struct jobreq *r, char **cause)
{
	const char	*s = json_string_value(v);

	if (s == NULL || strlen(s) != json_string_length(v) ||
	    !jobreq_key_ok(s)) {
		xasprintf(cause, "idempotency_key: must be %s",
		    JOBREQ_KEY_RULE);
		return (-1);
	}
	free(r->key);
	r->key = xstrdup(s);
	return (0);
}

static int
share_from_json(json_t *v, u_int *seats, char **cause)
{
	double	 d, r;

	if (json_is_string(v))
		return (parse_share(json_string_value(v), seats, cause));
	if (!json_is_number(v))
		goto bad;
	d = json_number_value(v);
	if (!(d >= 0 && d <= 1))
		goto bad;
	r = nearbyint(d * 100);
	if (fabs(d * 100 - r) > 1e-6) {
		xasprintf(cause, "share: %g is finer than steps of 0.01", d);
		return (-1);
	}
	*seats = (u_int)r;
	return (0);
bad:
	xasprintf(cause, "share: must be a number between 0 and 1");
	return (-1);
}

static int
size_from_json(json_t *v, const char *field, uint64_t *out, char **cause)
{
	char	*why;

	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return (0);
	}
	if (json_is_string(v)) {
		if (parse_size(json_string_value(v), out, &why) != 0) {
			xasprintf(cause, "%s: %s", field, why);
			free(why);
			return (-1);
		}
		/* Past this it would not survive jobreq_to_json. */
		if (*out > INT64_MAX) {
			xasprintf(cause, "%s: larger than %lld bytes", field,
			    (long long)INT64_MAX);
			return (-1);
		}
		return (0);
	}
	xasprintf(cause, "%s: must be a byte count or a size like 20G", field);
	return (-1);
}

static int
int_from_json(json_t *v, const char *field, int64_t min, int64_t max,
    int64_t *out, char **cause)
{
	if (!json_is_integer(v) || json_integer_value(v) < min ||
	    json_integer_value(v) > max) {
		xasprintf(cause, "%s: must be an integer from %lld to %lld",
		    field, (long long)min, (long long)max);
		return (-1);
	}
	*out = json_integer_value(v);
	return (0);
}

static int
flag_from_json(json_t *v, const char *field, int bit, int *flags, char **cause)
{
	if (!json_is_boolean(v)) {
		xasprintf(cause, "%s: must be true or false", field);
		return (-1);
	}
	if (json_is_true(v))
		*flags |= bit;
	else
		*flags &= ~bit;
	return (0);
}

static int
card_from_json(json_t *v, struct jobreq *r, char **cause)
{
	if (json_is_null(v))
		return (0);
	if (json_is_integer(v) && json_integer_value(v) >= 0 &&
	    json_integer_value(v) < 1024) {
		r->card = (int)json_integer_value(v);
		return (0);
	}
	if (json_is_string(v) && json_string_length(v) > 0 &&
	    json_string_length(v) < 256) {
		free(r->card_uuid);
		r->card_uuid = xstrdup(json_string_value(v));
		return (0);
	}
	xasprintf(cause, "card: must be an index or a UUID");
	return (-1);
}

static int
field_from_json(const char *k, json_t *v, struct jobreq *r, char **cause)
{
	int64_t	 n;

	if (strcmp(k, "argv") == 0) {
		strv_free(r->argv);
		r->argv = strv_from_json(v, k, JOBREQ_MAX_ARGS, 0, cause);
		return (r->argv == NULL ? -1 : 0);
	}
	if (strcmp(k, "env") == 0) {
		strv_free(r->env);
		r->env = strv_from_json(v, k, JOBREQ_MAX_ENV, 1, cause);
		return (r->env == NULL ? -1 : 0);
	}
	if (strcmp(k, "cwd") == 0) {
		if (!json_is_string(v) || json_string_value(v)[0] != '/' ||
		    json_string_length(v) > 4096 ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			xasprintf(cause, "cwd: must be an absolute path");
			return (-1);
		}
		free(r->cwd);
		r->cwd = xstrdup(json_string_value(v));
		return (0);
	}
	if (strcmp(k, "manifest") == 0) {
		if (!json_is_string(v) || !digest_valid(json_string_value(v))) {
			xasprintf(cause, "manifest: must be a SHA-256 in hex");
			return (-1);
		}
		free(r->manifest);
		r->manifest = xstrdup(json_string_value(v));
		return (0);
	}
	if (strcmp(k, "idempotency_key") == 0)
		return (key_from_json(v, r, cause));
	if (strcmp(k, "share") == 0)
		return (share_from_json(v, &r->seats, cause));
	if (strcmp(k, "mem") == 0)
		return (size_from_json(v, k, &r->mem, cause));
	if (strcmp(k, "card") == 0)
		return (card_from_json(v, r, cause));
	if (strcmp(k, "cards") == 0) {
		if (int_from_json(v, k, 1, 64, &n, cause) != 0)
			return (-1);
		r->ncards = (u_int)n;
		return (0);
	}
	if (strcmp(k, "priority") == 0) {
		if (int_from_json(v, k, 0, 9, &n, cause) != 0)
			return (-1);
		r->priority = (u_int)n;
		return (0);
	}
	if (strcmp(k, "grace_ms") == 0)
		return (int_from_json(v, k, 0, 86400000, &r->grace_ms, cause));
	if (strcmp(k, "timeout_ms") == 0)
		return (int_from_json(v, k, 0, 86400000LL * 365,
		    &r->timeout_ms, cause));
	if (strcmp(k, "burst") == 0)
		return (flag_from_json(v, k, JOB_BURST, &r->flags, cause));
	if (strcmp(k, "preemptible") == 0)
		return (flag_from_json(v, k, JOB_PREEMPTIBLE, &r->flags,
		    cause));
	if (strcmp(k, "requeue") == 0)
		return (flag_from_json(v, k, JOB_REQUEUE, &r->flags, cause));
	if (strcmp(k, "no_wait") == 0)
		return (flag_from_json(v, k, JOB_NOWAIT, &r->flags, cause));
	if (strcmp(k, "pull") == 0)
		return (flag_from_json(v, k, JOB_PULL, &r->flags, cause));
	if (strcmp(k, "task_worker") == 0)
		return (flag_from_json(v, k, JOB_TASK_WORKER, &r->flags,
		    cause));
	if (strcmp(k, "terminal") == 0)
		return (flag_from_json(v, k, JOB_TERM, &r->flags, cause));
	if (strcmp(k, "publish") == 0)
		return (term_publish_from_json(v, r->publish, &r->npublish,
		    cause));
	if (strcmp(k, "umask") == 0) {
		if (int_from_json(v, k, 0, 0777, &n, cause) != 0)
			return (-1);
		r->umask = (int)n;
		return (0);
	}
	if (strcmp(k, "confined") == 0) {
		xasprintf(cause, "confined: the host decides, not a request");
		return (-1);
	}
	if ((n = jobspec_field(k, v, r, cause)) != 1)
		return ((int)n);
	/* The fence's fields are read together once the loop is done. */
	if (strcmp(k, "allow") == 0 || strcmp(k, "deny_net") == 0 ||
	    strcmp(k, "add_host") == 0)
		return (0);
	xasprintf(cause, "%s: unknown field", k);
	return (-1);
}

/*
 * Fills r (initialised by the caller) from a JSON object.  Returns -1 with
 * *cause naming the field on the first bad one; r must then be cleared.
 */
int
jobreq_from_json(json_t *o, struct jobreq *r, char **cause)
{
	const char	*k;
	json_t		*v;
	int		 have_cards = 0;

	if (!json_is_object(o)) {
		xasprintf(cause, "the request must be a JSON object");
		return (-1);
	}
	json_object_foreach(o, k, v) {
		if (field_from_json(k, v, r, cause) != 0)
			return (-1);
		if (strcmp(k, "cards") == 0)
			have_cards = 1;
	}
	if (r->argv == NULL || r->argv[0] == NULL || *r->argv[0] == '\0') {
		xasprintf(cause, "argv: a command is needed");
		return (-1);
	}
	if (jobspec_finish(o, r, cause) != 0)
		return (-1);
	if (r->spec.gpus != 0)
		have_cards = 1;
	fence_free(r->fence);
	if (fence_from_json(o, &r->fence, cause) != 0)
		return (-1);
	if (r->npublish != 0 && r->fence != NULL && r->fence->deny_net) {
		xasprintf(cause, "publish: a job with deny_net has its own "
		    "loopback, not the host's: it cannot publish ports");
		return (-1);
	}
	if (r->manifest != NULL && r->cwd != NULL) {
		xasprintf(cause, "manifest: a job runs in its synced tree or "
		    "in cwd, not both");
		return (-1);
	}
	if (r->seats == 0) {
		if (r->mem != 0 || r->card != -1 || r->card_uuid != NULL ||
		    (have_cards && r->ncards != 0)) {
			xasprintf(cause, "share: a job with share 0 has no "
			    "card (it cannot ask for memory or a card)");
			return (-1);
		}
		r->ncards = 0;
	}
	return (0);
}

/*
 * Fills r from a request as the daemon saved it: with "confined", which
 * no request may carry.  Takes "confined" out of o.
 */
int
jobreq_from_saved(json_t *o, struct jobreq *r, char **cause)
{
	int	 confined = json_is_true(json_object_get(o, "confined"));
	json_t	*el = json_incref(json_object_get(o, "element"));
	int	 rc = -1;

	json_object_del(o, "confined");
	json_object_del(o, "element");
	if (jobreq_from_json(o, r, cause) != 0)
		goto out;
	if (el != NULL &&
	    jobspec_element_from_json(el, &r->spec, cause) != 0)
		goto out;
	r->confined = confined;
	rc = 0;
out:
	json_decref(el);
	return (rc);
}

/*
 * A resize: only "share" and "mem" (a guarantee above 0: a running job
 * keeps its card).  Fills r's seats and mem from what is given.
 */
int
jobreq_patch_from_json(json_t *o, struct jobreq *r, char **cause)
{
	const char	*k;
	json_t		*v;

	if (!json_is_object(o) || json_object_size(o) == 0) {
		xasprintf(cause, "a JSON object with share and/or mem is "
		    "needed");
		return (-1);
	}
	json_object_foreach(o, k, v) {
		if (strcmp(k, "share") != 0 && strcmp(k, "mem") != 0) {
			xasprintf(cause, "%s: only share and mem can change",
			    k);
			return (-1);
		}
		if (field_from_json(k, v, r, cause) != 0)
			return (-1);
	}
	if (r->seats == 0) {
		xasprintf(cause, "share: a running job keeps at least 0.01");
		return (-1);
	}
	return (0);
}

/* Returns the request as a JSON object; the caller owns the reference. */
json_t *
jobreq_to_json(const struct jobreq *r)
{
	json_t	*o, *a;
	size_t	 i;

	o = json_object();
	a = json_array();
	for (i = 0; r->argv != NULL && r->argv[i] != NULL; i++)
		json_array_append_new(a, json_string(r->argv[i]));
	json_object_set_new(o, "argv", a);
	if (r->env != NULL) {
		a = json_array();
		for (i = 0; r->env[i] != NULL; i++)
			json_array_append_new(a, json_string(r->env[i]));
		json_object_set_new(o, "env", a);
	}
	if (r->cwd != NULL)
		json_object_set_new(o, "cwd", json_string(r->cwd));
	if (r->manifest != NULL)
		json_object_set_new(o, "manifest", json_string(r->manifest));
	json_object_set_new(o, "share", json_real(r->seats / 100.0));
	if (r->mem != 0)
		json_object_set_new(o, "mem", json_integer((json_int_t)r->mem));
	if (r->card_uuid != NULL)
		json_object_set_new(o, "card", json_string(r->card_uuid));
	else if (r->card != -1)
		json_object_set_new(o, "card", json_integer(r->card));
	if (r->seats != 0)
		json_object_set_new(o, "cards", json_integer(r->ncards));
	json_object_set_new(o, "priority", json_integer(r->priority));
	json_object_set_new(o, "grace_ms", json_integer(r->grace_ms));
	if (r->timeout_ms != 0)
		json_object_set_new(o, "timeout_ms",
		    json_integer(r->timeout_ms));
	json_object_set_new(o, "burst", json_boolean(r->flags & JOB_BURST));
	json_object_set_new(o, "preemptible",
	    json_boolean(r->flags & JOB_PREEMPTIBLE));
	json_object_set_new(o, "requeue", json_boolean(r->flags & JOB_REQUEUE));
	json_object_set_new(o, "no_wait", json_boolean(r->flags & JOB_NOWAIT));
	if (r->flags & JOB_PULL)
		json_object_set_new(o, "pull", json_true());
	if (r->flags & JOB_TASK_WORKER)
		json_object_set_new(o, "task_worker", json_true());
	term_publish_to_json(o, r->flags, r->publish, r->npublish);
	if (r->umask >= 0)
		json_object_set_new(o, "umask", json_integer(r->umask));
	fence_to_json(r->fence, o);
	if (r->key != NULL)
		json_object_set_new(o, "idempotency_key", json_string(r->key));
	if (r->confined)
		json_object_set_new(o, "confined", json_true());
	jobspec_to_json(&r->spec, o);
	if ((a = jobspec_element_json(&r->spec)) != NULL)
		json_object_set_new(o, "element", a);
	return (o);
}
