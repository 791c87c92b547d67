/*
 * audit.c: the check behind the trust model.  libgmux.so counts only in
 * processes that load it; a job that clears LD_PRELOAD before starting a
 * child escapes it.  So the daemon asks the driver which processes hold
 * each real card (nvidia-smi, amd-smi) and compares with the processes
 * registered in the shared region: a GPU process of a job that never
 * registered is an offender, to be reported and stopped (or reported only,
 * by policy).  A job whose processes hold more than its cap by the
 * driver's own count is reported too.
 */

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "../shim/region.h"

#define AUDIT_DEPTH	64		/* parents walked to find the keeper */
#define AUDIT_CONTEXT	(1ULL << 30)	/* a CUDA context's own memory, roughly */

static void
audit_add(struct audit_gpu_proc **v, u_int *n, pid_t pid, uint64_t used,
    const char *card)
{
	struct audit_gpu_proc	*p;

	*v = xreallocarray(*v, *n + 1, sizeof **v);
	p = &(*v)[(*n)++];
	memset(p, 0, sizeof *p);
	p->pid = pid;
	p->used = used;
	snprintf(p->card, sizeof p->card, "%s", card);
}

/*
 * Parses `nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory
 * --format=csv,noheader,nounits`: "UUID, PID, MiB" a line; "[N/A]" memory
 * counts as 0.  Returns -1 with *cause on a line of another shape.
 */
int
audit_parse_nvidia(const char *text, struct audit_gpu_proc **v, u_int *n,
    char **cause)
{
	char		*copy, *line, *next, uuid[64];
	long long	 pid, mib;
	int		 rc = 0, off;

	*v = NULL;
	*n = 0;
	copy = xstrdup(text);
	for (line = copy; line != NULL && rc == 0; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		line[strcspn(line, "\r")] = '\0';
		if (*line == '\0' || strstr(line, "No running") != NULL)
			continue;
		mib = 0;
		off = -1;	/* %n is not reached if the second comma is not */
		if (sscanf(line, "%63[^,], %lld, %n", uuid, &pid, &off) != 2 ||
		    off == -1 ||
		    pid <= 0 || pid > INT32_MAX ||
		    (sscanf(line + off, "%lld", &mib) != 1 &&
		    strncmp(line + off, "[N/A]", 5) != 0) || mib < 0) {
			xasprintf(cause, "nvidia-smi: bad line '%.64s'", line);
			rc = -1;
			continue;
		}
		audit_add(v, n, (pid_t)pid, (uint64_t)mib << 20, uuid);
	}
	free(copy);
	if (rc != 0) {
		free(*v);
		*v = NULL;
		*n = 0;
	}
	return (rc);
}

/* A memory figure of amd-smi: a number of bytes, or {"value","unit"}. */
static uint64_t
amd_bytes(json_t *j)
{
	json_t		*u;
	uint64_t	 v;
	const char	*unit;

	if (json_is_integer(j))
		return ((uint64_t)json_integer_value(j));
	if (!json_is_object(j) || !json_is_integer(json_object_get(j, "value")))
		return (0);
	v = (uint64_t)json_integer_value(json_object_get(j, "value"));
	u = json_object_get(j, "unit");
	unit = json_is_string(u) ? json_string_value(u) : "B";
	if (strcmp(unit, "KB") == 0 || strcmp(unit, "KiB") == 0)
		return (v << 10);
	if (strcmp(unit, "MB") == 0 || strcmp(unit, "MiB") == 0)
		return (v << 20);
	if (strcmp(unit, "GB") == 0 || strcmp(unit, "GiB") == 0)
		return (v << 30);
	return (v);
}

/* Finds every object with a "pid" under j, on the card named gpu. */
static void
amd_walk(json_t *j, const char *gpu, struct audit_gpu_proc **v, u_int *n,
    int depth)
{
	json_t		*x, *mem;
	const char	*key;
	size_t		 i;
	char		 card[32];

	if (depth > 8)
		return;
	if (json_is_array(j)) {
		json_array_foreach(j, i, x)
			amd_walk(x, gpu, v, n, depth + 1);
		return;
	}
	if (!json_is_object(j))
		return;
	if (json_is_integer(x = json_object_get(j, "gpu"))) {
		snprintf(card, sizeof card, "%lld",
		    (long long)json_integer_value(x));
		gpu = card;
	}
	x = json_object_get(j, "pid");
	if (json_is_integer(x) && json_integer_value(x) > 0) {
		mem = json_object_get(json_object_get(j, "memory_usage"),
		    "vram_mem");
		audit_add(v, n, (pid_t)json_integer_value(x), amd_bytes(mem),
		    gpu != NULL ? gpu : "");
		return;
	}
	json_object_foreach(j, key, x)
		amd_walk(x, gpu, v, n, depth + 1);
}

/*
 * Parses `amd-smi process --json`: a list per GPU ("gpu": index) of
 * process objects with "pid" and memory_usage.vram_mem.  The walk takes
 * any nesting, since amd-smi's layout has moved between releases.
 */
int
audit_parse_amdsmi(const char *text, struct audit_gpu_proc **v, u_int *n,
    char **cause)
{
	json_t		*j;
	json_error_t	 err;

	*v = NULL;
	*n = 0;
	if ((j = json_loads(text, 0, &err)) == NULL) {
		xasprintf(cause, "amd-smi: %s", err.text);
		return (-1);
	}
	amd_walk(j, NULL, v, n, 0);
	json_decref(j);
	return (0);
}

/* Which running job owns pid: a keeper among its ancestors, else -1. */
static int
audit_owner(pid_t pid, const struct audit_job *jobs, u_int njobs,
    pid_t (*parent)(pid_t))
{
	u_int	 d, k;

	for (d = 0; d < AUDIT_DEPTH && pid > 1; d++) {
		for (k = 0; k < njobs; k++) {
			if (jobs[k].keeper == pid)
				return ((int)k);
		}
		pid = parent(pid);
	}
	return (-1);
}

static void
audit_offend(struct audit_offender **o, u_int *n, u_int job, pid_t pid,
    int stop, const char *why)
{
	*o = xreallocarray(*o, *n + 1, sizeof **o);
	(*o)[*n].job = job;
	(*o)[*n].pid = pid;
	(*o)[*n].stop = stop;
	(*o)[*n].why = why;
	(*n)++;
}

/*
 * Compares the driver's GPU processes with the region.  parent gives a
 * process's parent (audit_parent in the daemon); registered says whether
 * a pid counts in the region.  Returns the offenders (the caller frees
 * *out): each unregistered GPU process of a job (stop = 1), and a job
 * whose processes hold more than its cap plus a context's worth each
 * (stop = 0: the driver's per-process figures are only indicative).
 */
u_int
audit_check(const struct audit_gpu_proc *gp, u_int ngp,
    const struct audit_job *jobs, u_int njobs, pid_t (*parent)(pid_t),
    int (*registered)(pid_t, u_int *), struct audit_offender **out)
{
	uint64_t	*held;
	u_int		*count, i, n = 0;
	int		 k;

	*out = NULL;
	held = xcalloc(njobs + 1, sizeof *held);
	count = xcalloc(njobs + 1, sizeof *count);
	for (i = 0; i < ngp; i++) {
		if ((k = audit_owner(gp[i].pid, jobs, njobs, parent)) == -1)
			continue;	/* not a job's: another user, MPS */
		held[k] += gp[i].used;
		count[k]++;
		if (!registered(gp[i].pid, NULL))
			audit_offend(out, &n, jobs[k].id, gp[i].pid, 1,
			    "GPU process not registered with libgmux");
	}
	for (k = 0; k < (int)njobs; k++) {
		if (jobs[k].cap != 0 &&
		    held[k] > jobs[k].cap + count[k] * AUDIT_CONTEXT)
			audit_offend(out, &n, jobs[k].id, 0, 0,
			    "holds more than its memory cap by the driver's count");
	}
	free(held);
	free(count);
	return (n);
}

/* The parent of pid, from /proc; 0 if it is gone. */
pid_t
audit_parent(pid_t pid)
{
	return ((pid_t)gmux_region_stat(pid, 4));
}

/*
 * Asks the vendors' tools which processes hold real cards and checks
 * them against jobs.  Returns the offenders (caller frees *out).
 */
u_int
audit_scan(const struct cards *cs, const struct audit_job *jobs,
    u_int njobs, struct audit_offender **out)
{
	static char	*nv[] = { "nvidia-smi",
	    "--query-compute-apps=gpu_uuid,pid,used_memory",
	    "--format=csv,noheader,nounits", NULL };
	static char	*amd[] = { "amd-smi", "process", "--json", NULL };
	struct audit_gpu_proc *gp = NULL, *more;
	u_int		 ngp = 0, nmore, i, n;
	int		 want_nv = 0, want_amd = 0, status;
	char		*text, *cause = NULL;

	for (i = 0; i < cs->n; i++) {
		want_nv |= !cs->v[i].fake && cs->v[i].vendor == VENDOR_NVIDIA;
		want_amd |= !cs->v[i].fake && cs->v[i].vendor == VENDOR_AMD;
	}
	if (want_nv && (text = proc_output(nv, 5000, &status)) != NULL) {
		if (status != 0 || audit_parse_nvidia(text, &gp, &ngp, &cause))
			log_debug("%s: %s", __func__, cause ? cause : "failed");
		free(text);
	}
	if (want_amd && (text = proc_output(amd, 5000, &status)) != NULL) {
		if (status == 0 &&
		    audit_parse_amdsmi(text, &more, &nmore, &cause) == 0) {
			gp = xreallocarray(gp, ngp + nmore + 1, sizeof *gp);
			memcpy(gp + ngp, more, nmore * sizeof *gp);
			ngp += nmore;
			free(more);
		}
		free(text);
	}
	free(cause);
	n = audit_check(gp, ngp, jobs, njobs, audit_parent, region_pid_job, out);
	free(gp);
	return (n);
}

/* Stops the offenders that warrant it, unless the policy is to report. */
void
audit_enforce(const struct audit_offender *o, u_int n, int report_only)
{
	u_int	 i;

	for (i = 0; i < n; i++) {
		log_warnx("j%u: pid %ld: %s%s", o[i].job, (long)o[i].pid,
		    o[i].why, o[i].stop && !report_only ? "; stopped" : "");
		if (o[i].stop && !report_only && o[i].pid > 1)
			kill(o[i].pid, SIGKILL);
	}
}
