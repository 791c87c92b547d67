/*
 * jobspec-host.c: what a standalone host makes of a job's directives.  It
 * honours what it can (a card's vendor or model, whole cards, its CPUs and
 * RAM, its name and tags, a run-time limit, output files) and refuses the
 * rest at submission with the reason: a gang needs a cluster.
 */

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "jobspec-int.h"

/* Lowercase, without spaces, dashes or underscores: "GeForce RTX-4090". */
static char *
squeeze(const char *s)
{
	char	*t = xmalloc(strlen(s) + 1), *p = t;

	for (; *s != '\0'; s++) {
		if (*s != ' ' && *s != '-' && *s != '_')
			*p++ = (char)tolower((u_char)*s);
	}
	*p = '\0';
	return (t);
}

/*
 * Whether a card of this vendor and model is of type t: its vendor
 * ("nvidia"), or a model that contains t not followed by a digit
 * ("rtx4090" in "NVIDIA GeForce RTX 4090"; "a10" is not an "A100").  A
 * cluster's leader asks it of its members' cards too.
 */
int
jobspec_type_is(const char *vendor, const char *model, const char *t)
{
	char		*m, *want, *p;
	int		 yes = 0;

	if (strcmp(vendor, t) == 0)
		return (1);
	if (model == NULL)
		return (0);
	m = squeeze(model);
	want = squeeze(t);
	for (p = m; *want != '\0' && (p = strstr(p, want)) != NULL; p++) {
		if (!isdigit((u_char)p[strlen(want)])) {
			yes = 1;
			break;
		}
	}
	free(m);
	free(want);
	return (yes);
}

/* The cards of type t with at least vram of memory (either may be unset). */
static uint64_t
jobspec_cards_of(const char *t, uint64_t vram)
{
	uint64_t	 m = 0;
	u_int		 c;

	for (c = 0; c < server_cards.n && c < SCHED_CARDS_MAX; c++) {
		if (t != NULL && !jobspec_type_is(vendor_name(
		    server_cards.v[c].vendor), server_cards.v[c].model, t))
			continue;
		if (server_cards.v[c].memory < vram)
			continue;
		m |= 1ULL << c;
	}
	return (m);
}

/*
 * The cards s may have, for the scheduler: 0 if any (no type, and a shared
 * job's memory fit is its cap).  None (a job restored after its cards
 * went) is a card the host lacks, so that nothing is eligible.
 */
uint64_t
jobspec_host_cards(const struct jobspec *s)
{
	uint64_t	 vram = s->mode == JOBSPEC_SHARED ? 0 : s->vram, m;

	if (s->gpu_type == NULL && vram == 0)
		return (0);
	if ((m = jobspec_cards_of(s->gpu_type, vram)) == 0 &&
	    server_cards.n < SCHED_CARDS_MAX)
		m = 1ULL << server_cards.n;
	return (m);
}

/* This host's name as --server means it: NAME in its config, or its own. */
const char *
jobspec_host_name(void)
{
	static char	 name[256];
	const char	*v;

	if ((v = config_get("NAME")) != NULL && *v != '\0')
		return (v);
	if (gethostname(name, sizeof name - 1) != 0 || *name == '\0')
		snprintf(name, sizeof name, "localhost");
	return (name);
}

/* Whether tags (a comma-separated list, TAGS in a config) holds tag. */
int
jobspec_tagged(const char *v, const char *tag)
{
	const char	*p;
	size_t		 n = strlen(tag);

	for (p = v; p != NULL && *p != '\0'; p += strcspn(p, ",")) {
		p += strspn(p, ", ");
		if (strncmp(p, tag, n) == 0 && (p[n] == ',' || p[n] == '\0' ||
		    p[n] == ' '))
			return (1);
	}
	return (0);
}

/* The cards, in words: "2 x H100, 1 x MI300X" (allocated). */
static char *
jobspec_cards_words(void)
{
	char		*s = xstrdup(""), *t;
	const char	*m;
	u_int		 c, k, n;

	for (c = 0; c < server_cards.n; c += n) {
		m = server_cards.v[c].model ? server_cards.v[c].model : "?";
		for (n = 1, k = c + 1; k < server_cards.n &&
		    server_cards.v[k].model != NULL &&
		    strcmp(server_cards.v[k].model, m) == 0; k++)
			n++;
		xasprintf(&t, "%s%s%u x %s", s, *s ? ", " : "", n, m);
		free(s);
		s = t;
	}
	if (*s == '\0') {
		free(s);
		s = xstrdup("none");
	}
	return (s);
}

/* --gpus TYPE:N, --vram against the cards; NULL if they can hold it. */
static char *
jobspec_host_gpus(const struct jobspec *s)
{
	uint64_t	 m;
	char		*why = NULL, *have, *size;
	u_int		 n;

	if (s->gpu_type == NULL && (s->mode == JOBSPEC_SHARED || s->vram == 0))
		return (NULL);
	have = jobspec_cards_words();
	m = jobspec_cards_of(s->gpu_type, 0);
	n = (u_int)__builtin_popcountll(m);
	if (s->gpu_type != NULL && n == 0)
		xasprintf(&why, "gpus: no card is an %s (this host has: %s)",
		    s->gpu_type, have);
	else if (s->gpu_type != NULL && n < s->gpus)
		xasprintf(&why, "gpus: needs %u %s cards; this host has %u",
		    s->gpus, s->gpu_type, n);
	else if (s->mode != JOBSPEC_SHARED && s->vram != 0 &&
	    (n = (u_int)__builtin_popcountll(jobspec_cards_of(s->gpu_type,
	    s->vram))) <
	    (s->gpus ? s->gpus : 1)) {
		size = format_size(s->vram);
		xasprintf(&why, "vram: needs %u card%s with %s; this host has "
		    "%u (%s)", s->gpus ? s->gpus : 1, s->gpus > 1 ? "s" : "",
		    size, n, have);
		free(size);
	}
	free(have);
	return (why);
}

/* --cpus, --ram against the host's; NULL if it has them. */
static char *
jobspec_host_size(const struct jobspec *s)
{
	long		 ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t	 ram = (uint64_t)sysconf(_SC_PHYS_PAGES) *
			     (uint64_t)sysconf(_SC_PAGESIZE);
	char		*why = NULL, *need, *have;

	if (s->cpus != 0 && ncpu > 0 && s->cpus > (u_long)ncpu)
		xasprintf(&why, "cpus: needs %u CPUs; this host has %ld",
		    s->cpus, ncpu);
	else if (s->ram != 0 && s->ram > ram) {
		need = format_size(s->ram);
		have = format_size(ram);
		xasprintf(&why, "ram: needs %s; this host has %s", need, have);
		free(need);
		free(have);
	}
	return (why);
}

/* What of the directives no standalone host does; NULL if none. */
static char *
jobspec_host_never(const struct job *j)
{
	const struct jobspec	*s = &j->req.spec;
	char			*why = NULL;

	if (s->nodes > 1)
		xasprintf(&why, "nodes: a gang of %u members needs a cluster; "
		    "this host runs standalone", s->nodes);
	else if (s->server != NULL &&
	    strcmp(s->server, jobspec_host_name()) != 0)
		xasprintf(&why, "server: no member is named %s (this host, "
		    "standalone, is %s)", s->server, jobspec_host_name());
	else if (s->partition != NULL && !jobspec_tagged(config_get("TAGS"),
	    s->partition))
		xasprintf(&why, "partition: this host has no tag %s (TAGS in "
		    "its config: %s)", s->partition, config_get("TAGS") ?
		    config_get("TAGS") : "none");
	else if (j->req.confined && (s->output != NULL || s->error != NULL))
		xasprintf(&why, "%s: a remote job's output streams back; it "
		    "writes no file on the host", s->output ? "output" :
		    "error");
	return (why);
}

/*
 * Whether this host could ever run j as its directives ask: 0, or -1 with
 * *code 422 and *cause saying why not.
 */
int
jobspec_host_check(struct job *j, int *code, char **cause)
{
	if ((*cause = jobspec_host_never(j)) == NULL &&
	    (*cause = jobspec_host_gpus(&j->req.spec)) == NULL &&
	    (*cause = jobspec_host_size(&j->req.spec)) == NULL)
		return (0);
	*code = 422;
	return (-1);
}

/* What a job learns of its directives: the names gmux and Slurm give. */
void
jobspec_host_env(const struct job *j, char ***envp)
{
	const struct jobspec	*s = &j->req.spec;
	const char		*cid;

	/* a cluster job's is its cluster id (jN repeats across members) */
	if ((cid = jobreq_env(&j->req, "GMUX_CLUSTER_JOB")) != NULL)
		job_env_set(envp, "SLURM_JOB_ID=%s", cid);
	else
		job_env_set(envp, "SLURM_JOB_ID=%u", j->id);
	if (s->name != NULL) {
		job_env_set(envp, "GMUX_JOB_NAME=%s", s->name);
		job_env_set(envp, "SLURM_JOB_NAME=%s", s->name);
	}
	if (s->cpus != 0) {
		job_env_set(envp, "GMUX_CPUS=%u", s->cpus);
		job_env_set(envp, "SLURM_CPUS_PER_TASK=%u", s->cpus);
	}
	if (s->array_of != 0)
		job_array_env(j, envp);
}

/*
 * A --output or --error pattern made a path: %j the job ("j12_3"), %A its
 * array ("j12", or the job), %a its index, %x its name, %u its owner, %%
 * a percent sign; relative to the job's directory.  A cluster job's are
 * the cluster's (its id, its array's, its element's index), not those of
 * the local job that runs it: members sharing a directory would write
 * one file.  NULL with *cause if a part is unknown.
 */
static char *
jobspec_expand(const struct job *j, const char *pat, char **cause)
{
	const struct jobspec	*s = &j->req.spec;
	const char		*p, *dir, *cid, *cof = NULL, *idx;
	char			*out, *t, part[80];

	/* a cluster job's: its id, and its array's if an element */
	if ((cid = jobreq_env(&j->req, "GMUX_CLUSTER_JOB")) != NULL)
		cof = jobreq_env(&j->req, "GMUX_ARRAY_JOB_ID");

	dir = j->req.cwd != NULL ? j->req.cwd : getenv("HOME");
	xasprintf(&out, "%s", *pat == '/' || dir == NULL ? "" : dir);
	if (*pat != '/' && dir != NULL && out[strlen(out) - 1] != '/') {
		xasprintf(&t, "%s/", out);
		free(out);
		out = t;
	}
	for (p = pat; *p != '\0'; p++) {
		if (*p != '%') {
			xasprintf(&t, "%s%c", out, *p);
			free(out);
			out = t;
			continue;
		}
		switch (*++p) {
		case 'j':
			snprintf(part, sizeof part, "%s", cid != NULL ? cid :
			    j->name);
			break;
		case 'A':
			if (cid != NULL)
				snprintf(part, sizeof part, "%s", cof != NULL ?
				    cof : cid);
			else
				snprintf(part, sizeof part, "j%u", s->array_of ?
				    s->array_of : j->id);
			break;
		case 'a':
			if (cid != NULL)
				snprintf(part, sizeof part, "%s", cof != NULL &&
				    (idx = jobreq_env(&j->req,
				    "GMUX_ARRAY_INDEX")) != NULL ? idx : "0");
			else
				snprintf(part, sizeof part, "%u",
				    s->array_index);
			break;
		case 'x':
			snprintf(part, sizeof part, "%s", s->name ? s->name :
			    "gmux");
			break;
		case 'u':
			snprintf(part, sizeof part, "%s", j->owner);
			break;
		case '%':
			snprintf(part, sizeof part, "%%");
			break;
		default:
			xasprintf(cause, "%s: %%%c is not %%j, %%A, %%a, %%x, "
			    "%%u or %%%%", pat, *p ? *p : ' ');
			free(out);
			return (NULL);
		}
		xasprintf(&t, "%s%s", out, part);
		free(out);
		out = t;
	}
	return (out);
}

/* The files the job's stdout and stderr go to as well (allocated). */
int
jobspec_host_paths(const struct job *j, char **out, char **err, char **cause)
{
	const struct jobspec	*s = &j->req.spec;

	*out = *err = NULL;
	if (s->output != NULL &&
	    (*out = jobspec_expand(j, s->output, cause)) == NULL)
		return (-1);
	if (s->error != NULL &&
	    (*err = jobspec_expand(j, s->error, cause)) == NULL) {
		free(*out);
		*out = NULL;
		return (-1);
	}
	return (0);
}

/* Once a second: a job past its --time is stopped, and says why. */
void
jobspec_host_tick(void)
{
	struct job	*j;
	int64_t		 now = clock_ms();
	char		*limit;

	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (j->state != JOB_RUNNING || j->req.spec.time_ms == 0 ||
		    j->stopping || now - j->started < j->req.spec.time_ms)
			continue;
		limit = format_duration(j->req.spec.time_ms);
		free(j->reason);
		xasprintf(&j->reason, "its time limit (%s) was reached", limit);
		free(limit);
		log_debug("%s: %s: %s", __func__, j->name, j->reason);
		job_stop(j, j->req.grace_ms, "stopped");
	}
}
