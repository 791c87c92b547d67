/*
 * jobspec.c: the placement directives of a job request (--gpus, --cpus,
 * --ram, --vram, --server, --mode, --job-name, --time, --output, --error,
 * --partition, --nodes, --array, --image, payloads): read from the
 * request's JSON and checked here, as jobreq.c checks the rest.  Whether
 * this host can honour them is for the daemon (jobspec-host.c); a
 * cluster's scheduler reads the same fields.
 */

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

#define JOBSPEC_MAX_NAME	128
#define JOBSPEC_MAX_PATH	4096
#define JOBSPEC_MAX_TIME_MS	(86400000LL * 365)

static const char *const jobspec_modes[] = { "shared", "exclusive",
    "overcommit" };

void
jobspec_init(struct jobspec *s)
{
	memset(s, 0, sizeof *s);
	s->nodes = 1;
}

void
jobspec_clear(struct jobspec *s)
{
	free(s->name);
	free(s->gpu_type);
	free(s->server);
	free(s->output);
	free(s->error);
	free(s->partition);
	free(s->python);
	free(s->array);
	free(s->image);
	strv_free(s->container_env);
	free(s->in_workspace);
	free(s->template);
	json_decref(s->mounts);
	json_decref(s->payloads);
	jobspec_init(s);
}

/* A name, tag or type: printable, no '/', no spaces at either end. */
static int
jobspec_word(const char *s, size_t max, int spaces)
{
	size_t	 i, n = strlen(s);

	if (n == 0 || n > max || isspace((u_char)s[0]) ||
	    isspace((u_char)s[n - 1]))
		return (0);
	for (i = 0; i < n; i++) {
		if (s[i] == '/' || (u_char)s[i] < 0x20 || s[i] == 0x7f ||
		    (!spaces && s[i] == ' '))
			return (0);
	}
	return (1);
}

/* Replaces *to with v's string if it is a word; -1 with *cause if not. */
static int
jobspec_string(json_t *v, const char *field, int spaces, char **to,
    char **cause)
{
	if (!json_is_string(v) || strlen(json_string_value(v)) !=
	    json_string_length(v) || !jobspec_word(json_string_value(v),
	    JOBSPEC_MAX_NAME, spaces)) {
		xasprintf(cause, "%s: must be 1 to %d printable characters, "
		    "no '/'", field, JOBSPEC_MAX_NAME);
		return (-1);
	}
	free(*to);
	*to = xstrdup(json_string_value(v));
	return (0);
}

/* An --output or --error path; its % patterns are jobspec-host.c's. */
static int
jobspec_path(json_t *v, const char *field, char **to, char **cause)
{
	const char	*p;

	if (!json_is_string(v) || json_string_length(v) == 0 ||
	    json_string_length(v) > JOBSPEC_MAX_PATH ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		xasprintf(cause, "%s: must be a file's path", field);
		return (-1);
	}
	for (p = json_string_value(v); (p = strchr(p, '%')) != NULL; p += 2) {
		if (p[1] == '\0' || strchr("jAaxu%", p[1]) == NULL) {
			xasprintf(cause, "%s: %%%c is not %%j, %%A, %%a, %%x, "
			    "%%u or %%%%", field, p[1] ? p[1] : ' ');
			return (-1);
		}
	}
	free(*to);
	*to = xstrdup(json_string_value(v));
	return (0);
}

static int
jobspec_uint(json_t *v, const char *field, u_int min, u_int max, u_int *to,
    char **cause)
{
	if (!json_is_integer(v) || json_integer_value(v) < min ||
	    json_integer_value(v) > max) {
		xasprintf(cause, "%s: must be an integer from %u to %u", field,
		    min, max);
		return (-1);
	}
	*to = (u_int)json_integer_value(v);
	return (0);
}

static int
jobspec_size(json_t *v, const char *field, uint64_t *to, char **cause)
{
	char	*why = NULL;

	if (json_is_integer(v) && json_integer_value(v) > 0) {
		*to = (uint64_t)json_integer_value(v);
		return (0);
	}
	if (json_is_string(v) && parse_size(json_string_value(v), to,
	    &why) == 0 && *to > 0 && *to <= INT64_MAX)
		return (0);
	xasprintf(cause, "%s: %s", field, why != NULL ? why :
	    "must be a size like 32G");
	free(why);
	return (-1);
}

/*
 * "[VENDOR|MODEL:]N" (nvidia:1, rtx4090:2, 4) or a type alone (one card);
 * *type gets the type lowercased (allocated) or NULL.
 */
int
jobspec_gpus(const char *text, char **type, u_int *n, char **cause)
{
	const char	*colon = strrchr(text, ':'), *num = text;
	char		*t = NULL, *why = NULL;
	size_t		 i, len;

	*type = NULL;
	if (colon != NULL || strspn(text, "0123456789") != strlen(text)) {
		len = colon != NULL ? (size_t)(colon - text) : strlen(text);
		t = xstrndup(text, len);
		for (i = 0; i < len; i++) {
			if (!isalnum((u_char)t[i]) && t[i] != '-' &&
			    t[i] != '_' && t[i] != '.')
				goto bad;
			t[i] = (char)tolower((u_char)t[i]);
		}
		if (len == 0 || len > 64)
			goto bad;
		num = colon != NULL ? colon + 1 : "1";
	}
	if (parse_uint(num, 1, SCHED_CARDS_MAX, n, &why) != 0)
		goto bad;
	*type = t;
	return (0);
bad:
	free(why);
	free(t);
	xasprintf(cause, "gpus: '%s' is not [VENDOR|MODEL:]N (like nvidia:1, "
	    "rtx4090:2 or 4; N up to %d)", text, SCHED_CARDS_MAX);
	return (-1);
}

/* Reads the parts of a Slurm time: D-H, D-H:M, D-H:M:S, M, M:S, H:M:S. */
static int
jobspec_clock(const char *text, int64_t *ms)
{
	unsigned long	 v[4];
	const char	*p = text;
	char		*end;
	int		 n = 0, days = 0;
	int64_t		 s;

	if (strchr(text, '-') != NULL) {
		if (!isdigit((u_char)*p))
			return (-1);
		v[n++] = strtoul(p, &end, 10);
		if (end == p || *end != '-')
			return (-1);
		days = 1;
		p = end + 1;
	}
	for (;;) {
		if (!isdigit((u_char)*p) || n == 4)
			return (-1);
		v[n++] = strtoul(p, &end, 10);
		if (end - p > 6)
			return (-1);
		p = end;
		if (*p == '\0')
			break;
		if (*p++ != ':')
			return (-1);
	}
	if (days) {	/* D-H[:M[:S]] */
		s = (int64_t)v[0] * 86400 + (int64_t)v[1] * 3600;
		s += (n > 2 ? (int64_t)v[2] * 60 : 0) + (n > 3 ? v[3] : 0);
	} else if (n == 1)
		s = (int64_t)v[0] * 60;
	else if (n == 2)
		s = (int64_t)v[0] * 60 + (int64_t)v[1];
	else if (n == 3)
		s = (int64_t)v[0] * 3600 + (int64_t)v[1] * 60 + (int64_t)v[2];
	else
		return (-1);
	*ms = s * 1000;
	return (0);
}

/*
 * A run-time limit: a duration (90s, 30m, 2h) or Slurm's forms (a bare
 * number is minutes; MM:SS, HH:MM:SS, D-HH:MM:SS).
 */
int
jobspec_time(const char *text, int64_t *ms, char **cause)
{
	char	*why = NULL;

	if (strpbrk(text, ":-") != NULL || (*text != '\0' &&
	    strspn(text, "0123456789") == strlen(text))) {
		if (jobspec_clock(text, ms) != 0)
			goto bad;
	} else if (parse_duration(text, ms, &why) != 0)
		goto bad;
	if (*ms <= 0 || *ms > JOBSPEC_MAX_TIME_MS)
		goto bad;
	return (0);
bad:
	free(why);
	xasprintf(cause, "time: '%s' is not a time limit (like 30m, 2h, "
	    "90 (minutes), 1:30:00 or 2-00:00:00; at most 365 days)", text);
	return (-1);
}

static int
jobspec_mode_field(json_t *v, struct jobspec *s, char **cause)
{
	u_int	 i;

	for (i = 0; json_is_string(v) && i < nitems(jobspec_modes); i++) {
		if (strcmp(json_string_value(v), jobspec_modes[i]) == 0) {
			s->mode = (enum jobspec_mode)i;
			return (0);
		}
	}
	xasprintf(cause, "mode: must be exclusive, shared or overcommit");
	return (-1);
}

static int
jobspec_gpus_field(json_t *v, struct jobspec *s, char **cause)
{
	char	*type;

	if (!json_is_string(v)) {
		xasprintf(cause, "gpus: must be a string like nvidia:1");
		return (-1);
	}
	if (jobspec_gpus(json_string_value(v), &type, &s->gpus, cause) != 0)
		return (-1);
	free(s->gpu_type);
	s->gpu_type = type;
	return (0);
}

static int
jobspec_array_field(json_t *v, struct jobspec *s, char **cause)
{
	struct array_spec	 a;

	if (!json_is_string(v)) {
		xasprintf(cause, "array: must be a string like 0-15%%4");
		return (-1);
	}
	if (array_parse(json_string_value(v), &a, cause) != 0)
		return (-1);
	array_clear(&a);
	free(s->array);
	s->array = xstrdup(json_string_value(v));
	return (0);
}

static int
jobspec_payloads_field(json_t *v, struct jobspec *s, char **cause)
{
	if (!json_is_array(v) || json_array_size(v) == 0 ||
	    json_array_size(v) > ARRAY_MAX_INDEX + 1) {
		xasprintf(cause, "payloads: must be an array of 1 to %u JSON "
		    "values", ARRAY_MAX_INDEX + 1);
		return (-1);
	}
	json_decref(s->payloads);
	s->payloads = json_incref(v);
	return (0);
}

/*
 * An image's name as Podman takes it: a plain reference (imageref.c),
 * never a flag of podman's, a transport or a path.
 */
int
jobspec_image_ok(const char *image, char **cause)
{
	return (imageref_check(image, cause));
}

/* Whether s reads as a job id (12, j12, j12_3): gmux shell WORD says. */
int
jobspec_reads_as_job(const char *s)
{
	const char	*p = s + (*s == 'j');

	if (!isdigit((u_char)*p))
		return (0);
	p += strspn(p, "0123456789");
	if (*p == '_')
		p += 1 + strspn(p + 1, "0123456789");
	return (*p == '\0');
}

/*
 * A workspace's name: letters, digits and ._- (not first), and not what
 * reads as a job id: gmux shell WORD takes either.
 */
int
jobspec_workspace_name_ok(const char *name, char **cause)
{
	if (name == NULL || *name == '-' || *name == '\0' ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != strlen(name)) {
		xasprintf(cause, "name: a workspace's name is letters, digits "
		    "and ._- (not first)");
		return (-1);
	}
	if (jobspec_reads_as_job(name)) {
		xasprintf(cause, "name: %.64s reads as a job id (gmux shell "
		    "takes either)", name);
		return (-1);
	}
	return (0);
}

/* container_env: names of variables (in env) that go in a container. */
static int
jobspec_names(json_t *v, struct jobspec *s, char **cause)
{
	json_t		*x;
	const char	*n;
	size_t		 i;

	if (!json_is_array(v) || json_array_size(v) > 256)
		goto bad;
	strv_free(s->container_env);
	s->container_env = NULL;
	json_array_foreach(v, i, x) {
		if ((n = json_string_value(x)) == NULL || *n == '\0' ||
		    strlen(n) > 128 || strspn(n, "abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != strlen(n) ||
		    isdigit((u_char)*n))
			goto bad;
		strv_add(&s->container_env, n);
	}
	return (0);
bad:
	xasprintf(cause, "container_env: must be an array of up to 256 "
	    "variables' names");
	return (-1);
}

static int
jobspec_image_field(json_t *v, struct jobspec *s, char **cause)
{
	if (!json_is_string(v) ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		xasprintf(cause, "image: must be an image's name");
		return (-1);
	}
	if (jobspec_image_ok(json_string_value(v), cause) != 0)
		return (-1);
	free(s->image);
	s->image = xstrdup(json_string_value(v));
	return (0);
}

/*
 * One field of a request, if it is a directive: 0 if taken, -1 with
 * *cause if bad, 1 if k is not one of these.
 */
int
jobspec_field(const char *k, json_t *v, struct jobreq *r, char **cause)
{
	struct jobspec	*s = &r->spec;

	if (strcmp(k, "name") == 0)
		return (jobspec_string(v, k, 1, &s->name, cause));
	if (strcmp(k, "gpus") == 0)
		return (jobspec_gpus_field(v, s, cause));
	if (strcmp(k, "cpus") == 0)
		return (jobspec_uint(v, k, 1, 65536, &s->cpus, cause));
	if (strcmp(k, "ram") == 0)
		return (jobspec_size(v, k, &s->ram, cause));
	if (strcmp(k, "vram") == 0)
		return (jobspec_size(v, k, &s->vram, cause));
	if (strcmp(k, "server") == 0)
		return (jobspec_string(v, k, 0, &s->server, cause));
	if (strcmp(k, "mode") == 0)
		return (jobspec_mode_field(v, s, cause));
	if (strcmp(k, "time_limit_ms") == 0) {
		if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
		    json_integer_value(v) > JOBSPEC_MAX_TIME_MS) {
			xasprintf(cause, "time_limit_ms: must be an integer "
			    "from 1 to %lld", (long long)JOBSPEC_MAX_TIME_MS);
			return (-1);
		}
		s->time_ms = json_integer_value(v);
		return (0);
	}
	if (strcmp(k, "output") == 0)
		return (jobspec_path(v, k, &s->output, cause));
	if (strcmp(k, "error") == 0)
		return (jobspec_path(v, k, &s->error, cause));
	if (strcmp(k, "partition") == 0)
		return (jobspec_string(v, k, 0, &s->partition, cause));
	if (strcmp(k, "python") == 0)	/* tenant-publish.c */
		return (jobspec_string(v, k, 0, &s->python, cause));
	if (strcmp(k, "nodes") == 0)
		return (jobspec_uint(v, k, 1, JOBSPEC_NODES_MAX, &s->nodes,
		    cause));
	if (strcmp(k, "array") == 0)
		return (jobspec_array_field(v, s, cause));
	if (strcmp(k, "payloads") == 0)
		return (jobspec_payloads_field(v, s, cause));
	if (strcmp(k, "image") == 0)
		return (jobspec_image_field(v, s, cause));
	if (strcmp(k, "container_env") == 0)
		return (jobspec_names(v, s, cause));
	if (strcmp(k, "workspace") == 0) {
		if (!json_is_boolean(v)) {
			xasprintf(cause, "workspace: must be true or false");
			return (-1);
		}
		s->workspace = json_is_true(v);
		return (0);
	}
	if (strcmp(k, "in_workspace") == 0)
		return (jobspec_string(v, k, 0, &s->in_workspace, cause));
	if (strcmp(k, "mounts") == 0)
		return (workspace_mounts_from_json(v, &s->mounts, cause));
	if (strcmp(k, "template") == 0)	/* its image: container-config.c */
		return (jobspec_string(v, k, 0, &s->template, cause));
	if (strcmp(k, "element") == 0) {
		xasprintf(cause, "element: the daemon sets it, not a request");
		return (-1);
	}
	return (1);
}

/* --gpus asks for cards: how many, and whole ones unless a share is given. */
static int
jobspec_finish_gpus(json_t *o, struct jobreq *r, char **cause)
{
	struct jobspec	*s = &r->spec;

	if (s->gpus == 0)
		return (0);
	if (json_object_get(o, "cards") != NULL && r->ncards != s->gpus) {
		xasprintf(cause, "cards: %u, but gpus asks for %u", r->ncards,
		    s->gpus);
		return (-1);
	}
	r->ncards = s->gpus;
	if (json_object_get(o, "share") == NULL)
		r->seats = SEATS_PER_CARD;
	if (r->seats == 0) {
		xasprintf(cause, "share: 0 has no card, but gpus asks for %u",
		    s->gpus);
		return (-1);
	}
	return (0);
}

static int
jobspec_finish_mode(json_t *o, struct jobreq *r, char **cause)
{
	struct jobspec	*s = &r->spec;
	char		*have;

	if (s->mode == JOBSPEC_EXCLUSIVE) {
		if (json_object_get(o, "share") != NULL &&
		    r->seats != SEATS_PER_CARD) {
			have = format_share(r->seats);
			xasprintf(cause, "mode: exclusive takes whole cards, "
			    "not a share of %s", have);
			free(have);
			return (-1);
		}
		r->seats = SEATS_PER_CARD;
	}
	if (s->vram == 0)
		return (0);
	if (r->seats == 0) {
		xasprintf(cause, "vram: a job with share 0 has no card");
		return (-1);
	}
	/* A shared job's memory fit is its cap: at least the free memory. */
	if (s->mode == JOBSPEC_SHARED && r->mem == 0)
		r->mem = s->vram;
	else if (s->mode == JOBSPEC_SHARED && r->mem < s->vram) {
		xasprintf(cause, "mem: a cap below vram cannot hold it");
		return (-1);
	}
	return (0);
}

static int
jobspec_finish_array(struct jobspec *s, char **cause)
{
	struct array_spec	 a;
	size_t			 n;

	if (s->payloads == NULL)
		return (0);
	n = json_array_size(s->payloads);
	if (s->array == NULL) {
		xasprintf(&s->array, "0-%zu", n - 1);
		return (0);
	}
	if (array_parse(s->array, &a, cause) != 0)
		return (-1);
	if (a.count != n) {
		xasprintf(cause, "array: %u elements for %zu payloads", a.count,
		    n);
		array_clear(&a);
		return (-1);
	}
	array_clear(&a);
	return (0);
}

/*
 * What the directives mean together and for the rest of the request, once
 * every field is read: called before jobreq.c's own checks.
 */
int
jobspec_finish(json_t *o, struct jobreq *r, char **cause)
{
	if (jobspec_finish_gpus(o, r, cause) != 0)
		return (-1);
	if (jobspec_finish_mode(o, r, cause) != 0)
		return (-1);
	/* (exclusive took whole cards above) */
	if (r->seats == 0 && r->spec.mode != JOBSPEC_SHARED) {
		xasprintf(cause, "mode: overcommit shares a card, and a job "
		    "with share 0 has none: give its compute share with "
		    "--share (e.g. --share 0.5; its memory is admitted on "
		    "measured use)");
		return (-1);
	}
	if (jobspec_finish_array(&r->spec, cause) != 0)
		return (-1);
	if (r->spec.array != NULL && r->spec.nodes > 1) {
		xasprintf(cause, "array: a gang (nodes %u) is not an array's "
		    "element: submit the gang once per index", r->spec.nodes);
		return (-1);
	}
	if (r->spec.workspace && r->spec.image == NULL) {
		xasprintf(cause, "workspace: needs an image");
		return (-1);
	}
	if (r->spec.workspace && jobspec_workspace_name_ok(r->spec.name,
	    cause) != 0)
		return (-1);
	if (r->spec.in_workspace != NULL && (!(r->flags & JOB_TERM) ||
	    r->spec.workspace)) {
		xasprintf(cause, "in_workspace: only for a terminal (terminal: "
		    "true) that is no workspace itself");
		return (-1);
	}
	/* Its elements wait with the array's age: a bound would cut them. */
	if (r->spec.array != NULL && r->timeout_ms != 0) {
		xasprintf(cause, "timeout_ms: not for an array (its elements "
		    "wait their turn in it)");
		return (-1);
	}
	return (0);
}

static void
set_string(json_t *o, const char *k, const char *v)
{
	if (v != NULL)
		json_object_set_new(o, k, json_string(v));
}

/* Adds the directives that are set to o (the request's JSON). */
void
jobspec_to_json(const struct jobspec *s, json_t *o)
{
	json_t	*a;
	char	*gpus;
	size_t	 i;

	set_string(o, "name", s->name);
	if (s->gpus != 0) {
		if (s->gpu_type != NULL)
			xasprintf(&gpus, "%s:%u", s->gpu_type, s->gpus);
		else
			xasprintf(&gpus, "%u", s->gpus);
		json_object_set_new(o, "gpus", json_string(gpus));
		free(gpus);
	}
	if (s->cpus != 0)
		json_object_set_new(o, "cpus", json_integer(s->cpus));
	if (s->ram != 0)
		json_object_set_new(o, "ram", json_integer((json_int_t)s->ram));
	if (s->vram != 0)
		json_object_set_new(o, "vram", json_integer((json_int_t)
		    s->vram));
	set_string(o, "server", s->server);
	if (s->mode != JOBSPEC_SHARED)
		json_object_set_new(o, "mode",
		    json_string(jobspec_modes[s->mode]));
	if (s->time_ms != 0)
		json_object_set_new(o, "time_limit_ms",
		    json_integer(s->time_ms));
	set_string(o, "output", s->output);
	set_string(o, "error", s->error);
	set_string(o, "partition", s->partition);
	set_string(o, "python", s->python);
	if (s->nodes != 1)
		json_object_set_new(o, "nodes", json_integer(s->nodes));
	set_string(o, "array", s->array);
	if (s->payloads != NULL)
		json_object_set_new(o, "payloads", json_incref(s->payloads));
	set_string(o, "image", s->image);
	if (s->container_env != NULL) {
		a = json_array();
		for (i = 0; s->container_env[i] != NULL; i++)
			json_array_append_new(a,
			    json_string(s->container_env[i]));
		json_object_set_new(o, "container_env", a);
	}
	if (s->workspace)
		json_object_set_new(o, "workspace", json_true());
	set_string(o, "in_workspace", s->in_workspace);
	set_string(o, "template", s->template);
	if (s->mounts != NULL)
		json_object_set_new(o, "mounts", json_incref(s->mounts));
}

/* An element's place in its array, as saved; NULL if s is no element. */
json_t *
jobspec_element_json(const struct jobspec *s)
{
	if (s->array_of == 0)
		return (NULL);
	return (json_pack("{s:I,s:I,s:I,s:b,s:I}", "of",
	    (json_int_t)s->array_of, "index", (json_int_t)s->array_index,
	    "count", (json_int_t)s->array_count, "stdin", s->stdin_file,
	    "submit", (json_int_t)s->array_submit));
}

int
jobspec_element_from_json(json_t *o, struct jobspec *s, char **cause)
{
	json_int_t	 of, index, count, submit = 0;
	int		 in;

	if (json_unpack(o, "{s:I,s:I,s:I,s:b,s?I}", "of", &of, "index",
	    &index, "count", &count, "stdin", &in, "submit", &submit) != 0 ||
	    of <= 0 || submit < 0 ||
	    of > UINT32_MAX || index < 0 || index > ARRAY_MAX_INDEX ||
	    count <= 0 || count > ARRAY_MAX_INDEX + 1) {
		xasprintf(cause, "element: not an array's element");
		return (-1);
	}
	s->array_of = (u_int)of;
	s->array_index = (u_int)index;
	s->array_count = (u_int)count;
	s->stdin_file = in;
	s->array_submit = submit;
	return (0);
}
