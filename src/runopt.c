/*
 * runopt.c: the flags of `gmux run` that make a job request, as one
 * table: gmux run reads them from its command line, gmux submit from a
 * job file's #GMUX lines (and #SBATCH ones, translated), so a job file
 * takes every flag run does, checked the same way.
 */

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "jobspec-int.h"

struct runopt;
typedef int (*runopt_fn)(json_t *, const struct runopt *, const char *,
    char **);

static int	runopt_share(json_t *, const struct runopt *, const char *,
		    char **);
static int	runopt_size(json_t *, const struct runopt *, const char *,
		    char **);
static int	runopt_card(json_t *, const struct runopt *, const char *,
		    char **);
static int	runopt_uint(json_t *, const struct runopt *, const char *,
		    char **);
static int	runopt_true(json_t *, const struct runopt *, const char *,
		    char **);
static int	runopt_duration(json_t *, const struct runopt *, const char *,
		    char **);
static int	runopt_fence(json_t *, const struct runopt *, const char *,
		    char **);
static int	runopt_gpus(json_t *, const struct runopt *, const char *,
		    char **);
static int	runopt_mode(json_t *, const struct runopt *, const char *,
		    char **);
static int	runopt_word(json_t *, const struct runopt *, const char *,
		    char **);
static int	runopt_time(json_t *, const struct runopt *, const char *,
		    char **);
static int	runopt_chdir(json_t *, const struct runopt *, const char *,
		    char **);
static int	runopt_array(json_t *, const struct runopt *, const char *,
		    char **);
static int	runopt_port(json_t *, const struct runopt *, const char *,
		    char **);

struct runopt {
	const char	*name;		/* the long flag, without -- */
	int		 has_arg;
	runopt_fn	 fn;
	const char	*key;		/* the request's field */
	u_int		 min;		/* runopt_uint's bounds */
	u_int		 max;
};

static const struct runopt runopts[] = {
	{ "share", 1, runopt_share, "share", 0, 0 },
	{ "mem", 1, runopt_size, "mem", 0, 0 },
	{ "card", 1, runopt_card, "card", 0, 0 },
	{ "cards", 1, runopt_uint, "cards", 1, 64 },
	{ "priority", 1, runopt_uint, "priority", 0, 9 },
	{ "burst", 0, runopt_true, "burst", 0, 0 },
	{ "preemptible", 0, runopt_true, "preemptible", 0, 0 },
	{ "requeue", 0, runopt_true, "requeue", 0, 0 },
	{ "no-wait", 0, runopt_true, "no_wait", 0, 0 },
	{ "timeout", 1, runopt_duration, "timeout_ms", 0, 0 },
	{ "grace", 1, runopt_duration, "grace_ms", 0, 0 },
	{ "deny-net", 0, runopt_true, "deny_net", 0, 0 },
	{ "allow", 1, runopt_fence, "allow", 0, 0 },
	{ "add-host", 1, runopt_fence, "add_host", 0, 0 },
	{ "gpus", 1, runopt_gpus, "gpus", 0, 0 },
	{ "cpus", 1, runopt_uint, "cpus", 1, 65536 },
	{ "ram", 1, runopt_size, "ram", 0, 0 },
	{ "vram", 1, runopt_size, "vram", 0, 0 },
	{ "server", 1, runopt_word, "server", 0, 0 },
	{ "mode", 1, runopt_mode, "mode", 0, 0 },
	{ "job-name", 1, runopt_word, "name", 0, 0 },
	{ "time", 1, runopt_time, "time_limit_ms", 0, 0 },
	{ "output", 1, runopt_word, "output", 0, 0 },
	{ "error", 1, runopt_word, "error", 0, 0 },
	{ "chdir", 1, runopt_chdir, "cwd", 0, 0 },
	{ "partition", 1, runopt_word, "partition", 0, 0 },
	{ "python", 1, runopt_word, "python", 0, 0 },
	{ "nodes", 1, runopt_uint, "nodes", 1, JOBSPEC_NODES_MAX },
	{ "array", 1, runopt_array, "array", 0, 0 },
	{ "publish", 1, runopt_port, "publish", 1, 65535 },
	{ "image", 1, runopt_word, "image", 0, 0 },
	{ "container", 1, runopt_word, "image", 0, 0 },
};

/*
 * getopt_long's table for a command that takes these flags and its own
 * (nown of them), in all (size entries, zeroed: a static of the command's).
 */
const struct option *
runopt_options(struct option *all, u_int size, const struct option *own,
    u_int nown)
{
	u_int	 i;

	if (all[0].name != NULL)
		return (all);
	for (i = 0; i < nitems(runopts) && i + nown + 1 < size; i++) {
		all[i].name = runopts[i].name;
		all[i].has_arg = runopts[i].has_arg ? required_argument :
		    no_argument;
		all[i].flag = NULL;
		all[i].val = RUNOPT_BASE + (int)i;
	}
	memcpy(&all[i], own, nown * sizeof *own);
	return (all);
}

/* The flag named name (without --), or -1. */
int
runopt_find(const char *name)
{
	u_int	 i;

	for (i = 0; i < nitems(runopts); i++) {
		if (strcmp(runopts[i].name, name) == 0)
			return ((int)i);
	}
	return (-1);
}

int
runopt_has_arg(int i)
{
	return (runopts[i].has_arg);
}

/*
 * Applies flag i with value v (NULL for a flag without one) to request o;
 * -1 with *cause ("--share: ...") if v is bad.
 */
int
runopt_apply(json_t *o, int i, const char *v, char **cause)
{
	const struct runopt	*r = &runopts[i];
	json_t			*utf8 = v != NULL ? json_string(v) : NULL;
	char			*why = NULL;

	json_decref(utf8);
	if (r->has_arg && utf8 == NULL) {
		xasprintf(cause, "--%s: needs a value (UTF-8 text)", r->name);
		return (-1);
	}
	if (r->fn(o, r, v, &why) == 0)
		return (0);
	xasprintf(cause, "--%s: %s", r->name, why);
	free(why);
	return (-1);
}

static int
runopt_share(json_t *o, const struct runopt *r, const char *v, char **cause)
{
	u_int	 seats;

	if (parse_share(v, &seats, cause) != 0)
		return (-1);
	json_object_set_new(o, r->key, json_real(seats / 100.0));
	return (0);
}

static int
runopt_size(json_t *o, const struct runopt *r, const char *v, char **cause)
{
	uint64_t	 n;

	if (parse_size(v, &n, cause) != 0)
		return (-1);
	if (n > INT64_MAX || (n == 0 && strcmp(r->key, "mem") != 0)) {
		xasprintf(cause, "'%s' is not a size above 0", v);
		return (-1);
	}
	json_object_set_new(o, r->key, json_integer((json_int_t)n));
	return (0);
}

static int
runopt_card(json_t *o, const struct runopt *r, const char *v, char **cause)
{
	u_int	 n;

	if (*v == '\0' || strlen(v) > 255) {
		xasprintf(cause, "a card's index or UUID is needed");
		return (-1);
	}
	if (strspn(v, "0123456789") != strlen(v)) {
		json_object_set_new(o, r->key, json_string(v));
		return (0);
	}
	if (parse_uint(v, 0, 1023, &n, cause) != 0)
		return (-1);
	json_object_set_new(o, r->key, json_integer(n));
	return (0);
}

static int
runopt_uint(json_t *o, const struct runopt *r, const char *v, char **cause)
{
	u_int	 n;

	if (parse_uint(v, r->min, r->max, &n, cause) != 0)
		return (-1);
	json_object_set_new(o, r->key, json_integer(n));
	return (0);
}

/* A port to publish, added to the request's list (docs/terminals.md). */
static int
runopt_port(json_t *o, const struct runopt *r, const char *v, char **cause)
{
	json_t	*a;
	u_int	 n;

	if (parse_uint(v, r->min, r->max, &n, cause) != 0)
		return (-1);
	if ((a = json_object_get(o, r->key)) == NULL) {
		a = json_array();
		json_object_set_new(o, r->key, a);
	}
	json_array_append_new(a, json_integer(n));
	return (0);
}

static int
runopt_true(json_t *o, const struct runopt *r, const char *v, char **cause)
{
	if (v != NULL) {
		xasprintf(cause, "takes no value");
		return (-1);
	}
	json_object_set_new(o, r->key, json_true());
	return (0);
}

static int
runopt_duration(json_t *o, const struct runopt *r, const char *v,
    char **cause)
{
	int64_t	 ms;

	if (parse_duration(v, &ms, cause) != 0)
		return (-1);
	json_object_set_new(o, r->key, json_integer(ms));
	return (0);
}

/* --allow and --add-host: checked here, so a typo is a usage error. */
static int
runopt_fence(json_t *o, const struct runopt *r, const char *v, char **cause)
{
	struct fence	*f = fence_create();
	json_t		*a;
	int		 rc;

	if (strcmp(r->key, "allow") == 0)
		rc = fence_allow(f, v, cause);
	else
		rc = fence_add_host(f, v, cause);
	fence_free(f);
	if (rc != 0)
		return (-1);
	if ((a = json_object_get(o, r->key)) == NULL) {
		a = json_array();
		json_object_set_new(o, r->key, a);
	}
	json_array_append_new(a, json_string(v));
	return (0);
}

static int
runopt_gpus(json_t *o, const struct runopt *r, const char *v, char **cause)
{
	char	*type;
	u_int	 n;

	if (jobspec_gpus(v, &type, &n, cause) != 0)
		return (-1);
	free(type);
	json_object_set_new(o, r->key, json_string(v));
	return (0);
}

static int
runopt_mode(json_t *o, const struct runopt *r, const char *v, char **cause)
{
	if (strcmp(v, "exclusive") != 0 && strcmp(v, "shared") != 0 &&
	    strcmp(v, "overcommit") != 0) {
		xasprintf(cause, "'%s' is not exclusive, shared or overcommit",
		    v);
		return (-1);
	}
	json_object_set_new(o, r->key, json_string(v));
	return (0);
}

/* A name, tag or path: checked in full by the request (jobspec.c). */
static int
runopt_word(json_t *o, const struct runopt *r, const char *v, char **cause)
{
	if (*v == '\0') {
		xasprintf(cause, "must not be empty");
		return (-1);
	}
	json_object_set_new(o, r->key, json_string(v));
	return (0);
}

static int
runopt_time(json_t *o, const struct runopt *r, const char *v, char **cause)
{
	int64_t	 ms;
	char	*why = NULL;

	if (jobspec_time(v, &ms, &why) != 0) {
		/* jobspec_time names the field: "time: ..." */
		xasprintf(cause, "%s", why + strlen("time: "));
		free(why);
		return (-1);
	}
	json_object_set_new(o, r->key, json_integer(ms));
	return (0);
}

/* --chdir DIR: the job runs there (relative to this directory). */
static int
runopt_chdir(json_t *o, const struct runopt *r, const char *v, char **cause)
{
	char	*path;
	json_t	*s;

	if ((path = realpath(v, NULL)) == NULL) {
		xasprintf(cause, "%s: %s", v, strerror(errno));
		return (-1);
	}
	if ((s = json_string(path)) == NULL) {
		xasprintf(cause, "%s: the path is not valid UTF-8", v);
		free(path);
		return (-1);
	}
	json_object_set_new(o, r->key, s);
	free(path);
	return (0);
}

static int
runopt_array(json_t *o, const struct runopt *r, const char *v, char **cause)
{
	struct array_spec	 a;
	char			*why = NULL;

	if (array_parse(v, &a, &why) != 0) {
		/* array_parse names the field: "array: ..." */
		xasprintf(cause, "%s", why + strlen("array: "));
		free(why);
		return (-1);
	}
	array_clear(&a);
	json_object_set_new(o, r->key, json_string(v));
	return (0);
}
