/*
 * enforce.c: the one interface through which a job's caps and ceilings
 * reach the card.  At start it works out, per card, from what was found
 * and what started, what can be enforced and how (card->enforce, shown by
 * `gmux cards`); then each job's environment, each resize and each end go
 * through here.  Every change is recorded (for fake cards without the fake
 * driver this record is all there is, and tests read it back).
 */

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "../shim/region.h"

#define ENFORCE_CARDS	64
#define AUDIT_EVERY	10	/* ticks between asking the vendors' tools */
#define AUDIT_TICKS_ENV	"GMUX_AUDIT_TICKS"	/* tests ask more often */

static char	*shim_path;	/* libgmux.so, NULL if not found */
static char	*fake_cuda;	/* the fake driver's directory, tests only */
static int	 region_ok;
static u_int	 ticks;
static u_int	 audit_every = AUDIT_EVERY;
static struct {
	int	 shim;		/* jobs get libgmux.so (and a region slot) */
	int	 mps;		/* an MPS control daemon runs */
	int	 cumask;
} caps[ENFORCE_CARDS];

/*
 * Finds one of gmux's files, name: $env if set, else beside the gmux
 * binary (the build tree), else in ../lib/gmux (an install).  The caller
 * frees it; NULL if it is nowhere.
 */
char *
enforce_find_file(const char *env, const char *name)
{
	const char	*set = getenv(env);
	char		 exe[PATH_MAX], *slash, *path;
	ssize_t		 n;

	if (set != NULL && *set != '\0')
		return (access(set, R_OK) == 0 ? xstrdup(set) : NULL);
	if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) <= 0)
		return (NULL);
	exe[n] = '\0';
	if ((slash = strrchr(exe, '/')) == NULL)
		return (NULL);
	*slash = '\0';
	xasprintf(&path, "%s/%s", exe, name);
	if (access(path, R_OK) == 0)
		return (path);
	free(path);
	xasprintf(&path, "%s/../lib/gmux/%s", exe, name);
	if (access(path, R_OK) == 0)
		return (path);
	free(path);
	return (NULL);
}

/* Finds libgmux.so ($GMUX_SHIM, beside gmux, ../lib/gmux). */
char *
enforce_find_shim(void)
{
	return (enforce_find_file("GMUX_SHIM", "libgmux.so"));
}

/* Appends a sentence to *why. */
static void
why_add(char **why, const char *fmt, ...)
{
	va_list	 ap;
	char	*s, *t;

	va_start(ap, fmt);
	xvasprintf(&s, fmt, ap);
	va_end(ap);
	if (*why == NULL)
		*why = s;
	else {
		xasprintf(&t, "%s; %s", *why, s);
		free(*why);
		free(s);
		*why = t;
	}
}

static void
enforce_nvidia(struct card *c, const char *shim_why)
{
	char	*cause = NULL;

	caps[c->index].shim = shim_why == NULL && (!c->fake || fake_cuda);
	if (!c->fake && mps_start(c, &cause) == 0)
		caps[c->index].mps = 1;
	c->enforce.memory = caps[c->index].shim ? "shim" : "admission";
	c->enforce.live_memory = 1;
	c->enforce.compute = caps[c->index].mps ? "mps" :
	    caps[c->index].shim ? "pacer" : "admission";
	c->enforce.live_compute = 1;
	if (c->fake && !caps[c->index].shim)
		why_add(&c->enforce.why, "fake card: shares are admitted and "
		    "recorded, not enforced (set GMUX_FAKE_CUDA to run the "
		    "shim against the fake driver)");
	else if (c->fake)
		why_add(&c->enforce.why, "fake card: the shim runs against the "
		    "fake driver; MPS is not started for fake cards");
	if (!c->fake && shim_why != NULL)
		why_add(&c->enforce.why, "memory: %s", shim_why);
	if (cause != NULL)
		why_add(&c->enforce.why, "compute: %s", cause);
	if (caps[c->index].mps && caps[c->index].shim)
		why_add(&c->enforce.why, "compute: the MPS ceiling is fixed "
		    "when a job starts; a live resize is paced below it");
	free(cause);
}

static void
enforce_amd(struct card *c, const char *shim_why)
{
	struct cumask_geom	 g;

	caps[c->index].shim = !c->fake && shim_why == NULL;
	caps[c->index].cumask = cumask_geometry(c, &g) == 0;
	c->enforce.memory = caps[c->index].shim ? "shim" : "admission";
	c->enforce.live_memory = 1;
	c->enforce.compute = caps[c->index].cumask ? "cu-mask" : "admission";
	c->enforce.live_compute = !caps[c->index].cumask;
	if (c->fake)
		why_add(&c->enforce.why, "fake card: CU masks are computed, "
		    "not applied; memory is admitted, not enforced");
	else if (shim_why != NULL)
		why_add(&c->enforce.why, "memory: %s", shim_why);
	if (caps[c->index].cumask)
		why_add(&c->enforce.why, "compute: a resize applies at the "
		    "next start (CU masks are fixed when queues are made)");
	else
		why_add(&c->enforce.why, "compute: the card's compute units "
		    "are unknown, so no CU mask");
}

/* How many ticks between audits: GMUX_AUDIT_TICKS (1 to 3600), else 10. */
static void
enforce_audit_every(void)
{
	const char	*s = getenv(AUDIT_TICKS_ENV);
	char		*cause = NULL;

	audit_every = AUDIT_EVERY;
	if (s != NULL && parse_uint(s, 1, 3600, &audit_every, &cause) != 0) {
		log_warnx("%s: %s", AUDIT_TICKS_ENV, cause);
		free(cause);
		audit_every = AUDIT_EVERY;
	}
}

/* Says, per card, what can be enforced on it and how; starts MPS. */
void
enforce_init(struct cards *cs)
{
	u_int		 i;
	struct card	*c;
	char		*shim_why = NULL, *cause = NULL;
	const char	*fc = getenv("GMUX_FAKE_CUDA");

	free(shim_path);
	free(fake_cuda);
	fake_cuda = fc != NULL && *fc != '\0' ? xstrdup(fc) : NULL;
	enforce_audit_every();
	memset(caps, 0, sizeof caps);
	if ((shim_path = enforce_find_shim()) == NULL)
		shim_why = xstrdup("libgmux.so not found beside gmux");
	else if (region_open(NULL, cs, &cause) != 0) {
		xasprintf(&shim_why, "shared region: %s", cause);
		free(cause);
	}
	region_ok = shim_why == NULL;
	for (i = 0; i < cs->n && i < ENFORCE_CARDS; i++) {
		c = &cs->v[i];
		free(c->enforce.why);
		c->enforce.why = NULL;
		if (c->vendor == VENDOR_NVIDIA)
			enforce_nvidia(c, shim_why);
		else if (c->vendor == VENDOR_AMD)
			enforce_amd(c, shim_why);
		else {
			c->enforce.memory = c->enforce.compute = "admission";
			c->enforce.live_memory = c->enforce.live_compute = 1;
			why_add(&c->enforce.why, "%s: admission only; %s "
			    "places the job, nothing caps it",
			    vendor_name(c->vendor),
			    vendor_device_env(c->vendor) ?
			    vendor_device_env(c->vendor) : "nothing");
		}
	}
	free(shim_why);
}

/* Stops what enforce_init started: the MPS daemons, the region. */
void
enforce_shutdown(void)
{
	mps_stop_all();
	region_close();
	memset(caps, 0, sizeof caps);
}

/*
 * Sets name=value in *envp, or with sep puts value in front of what the
 * variable already holds (LD_PRELOAD, LD_LIBRARY_PATH, HSA_TOOLS_LIB).
 */
static void
env_put(char ***envp, const char *name, const char *sep, const char *fmt, ...)
{
	va_list	 ap;
	char	*value, *kv;
	size_t	 n, len = strlen(name);

	va_start(ap, fmt);
	xvasprintf(&value, fmt, ap);
	va_end(ap);
	for (n = 0; (*envp)[n] != NULL; n++) {
		if (strncmp((*envp)[n], name, len) == 0 &&
		    (*envp)[n][len] == '=')
			break;
	}
	if ((*envp)[n] != NULL && sep != NULL && (*envp)[n][len + 1] != '\0')
		xasprintf(&kv, "%s=%s%s%s", name, value, sep,
		    (*envp)[n] + len + 1);
	else
		xasprintf(&kv, "%s=%s", name, value);
	free(value);
	if ((*envp)[n] != NULL) {
		free((*envp)[n]);
		(*envp)[n] = kv;
		return;
	}
	*envp = xreallocarray(*envp, n + 2, sizeof **envp);
	(*envp)[n] = kv;
	(*envp)[n + 1] = NULL;
}

/* The device variables: the card's id, as its vendor's runtime reads it. */
static void
enforce_device_env(const struct card *c, char ***envp)
{
	const char	*var = vendor_device_env(c->vendor);
	char		*id;

	if (var == NULL)
		return;
	id = card_device_id(c);
	if (c->vendor == VENDOR_AMD && !c->fake) {
		/* HIP numbers what ROCr left visible: the card is HIP's 0. */
		env_put(envp, "ROCR_VISIBLE_DEVICES", NULL, "%s", id);
		env_put(envp, var, NULL, "0");
	} else {
		env_put(envp, var, NULL, "%s", id);
		if (c->vendor == VENDOR_AMD)
			env_put(envp, "ROCR_VISIBLE_DEVICES", NULL, "%s", id);
	}
	free(id);
}

/* The shim: its region slot, and the library in front of the driver. */
static int
enforce_shim_env(u_int job, const struct card *c, u_int seats,
    u_int ceiling, u_int mps_pct, uint64_t mem, char ***envp, char **cause)
{
	char	*slots;

	if (region_job_start(job, c->index, seats, ceiling, mps_pct, mem,
	    &slots, cause) != 0)
		return (-1);
	env_put(envp, GMUX_REGION_ENV, NULL, "%s", region_path());
	env_put(envp, GMUX_REGION_SLOTS_ENV, NULL, "%s", slots);
	env_put(envp, "LD_PRELOAD", ":", "%s", shim_path);
	if (c->vendor == VENDOR_AMD)
		env_put(envp, "HSA_TOOLS_LIB", " ", "%s", shim_path);
	if (c->fake && fake_cuda != NULL) {
		env_put(envp, "LD_LIBRARY_PATH", ":", "%s", fake_cuda);
		env_put(envp, "FAKE_CUDA_MEM", NULL, "%llu",
		    (unsigned long long)c->memory);
		env_put(envp, "FAKE_CUDA_UUIDS", NULL, "%s", c->uuid);
	}
	free(slots);
	return (0);
}

/*
 * Starts enforcing a job on card c: its guarantee (seats), its ceiling
 * (the burst ceiling, or seats), its memory cap (0: its share of the
 * card).  Adds to *envp what the job's processes need: the device
 * variable, the shim and its slot, MPS's pipe and SM percentage, the CU
 * mask.  Returns -1 with *cause if the job cannot be given its slot.
 */
int
enforce_job_env(u_int job, const struct card *c, u_int seats, u_int ceiling,
    uint64_t mem, char ***envp, char **cause)
{
	u_int	 i = c->index, mps_pct = 0;
	char	*mask;

	if (ceiling < seats)
		ceiling = seats;
	if (mem == 0)
		mem = seats != 0 ? c->memory / SEATS_PER_CARD * seats :
		    c->memory;
	enforce_device_env(c, envp);
	if (i < ENFORCE_CARDS && caps[i].mps) {
		mps_pct = ceiling == 0 ? 1 : ceiling;
		env_put(envp, "CUDA_MPS_PIPE_DIRECTORY", NULL, "%s",
		    mps_pipe_dir(i));
		env_put(envp, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", NULL, "%u",
		    mps_pct);
	}
	if (i < ENFORCE_CARDS && caps[i].shim && region_ok &&
	    enforce_shim_env(job, c, seats, ceiling, mps_pct, mem, envp,
	    cause) != 0)
		return (-1);
	if (i < ENFORCE_CARDS && caps[i].cumask) {
		if ((mask = cumask_take(job, c, seats, cause)) == NULL)
			return (-1);
		env_put(envp, "HSA_CU_MASK", NULL, "%s", mask);
		free(mask);
	}
	enforce_set(job, c, seats, ceiling, mem);
	return (0);
}

/*
 * Applies a job's guarantee, ceiling and memory cap on card c: at once
 * for the memory cap and the pacer's ceiling, which the shim reads on the
 * next allocation and launch.  (MPS and CU masks keep what the job
 * started with.)
 */
void
enforce_set(u_int job, const struct card *c, u_int seats, u_int ceiling,
    uint64_t mem)
{
	region_job_set(job, seats, ceiling < seats ? seats : ceiling, mem);
	log_debug("%s: j%u card %u seats %u ceiling %u mem %llu", __func__,
	    job, c->index, seats, ceiling, (unsigned long long)mem);
}

/* The job has ended: its slot and its CU mask are given back. */
void
enforce_forget(u_int job)
{
	region_job_end(job);
	cumask_release(job);
	log_debug("%s: j%u", __func__, job);
}

/*
 * What a remote job on these cards (bit i: card i) needs beyond the
 * system's files, for its jail: the shim (and the fake driver) to load,
 * the region to count in, MPS's pipe directories to connect in.  Never
 * from the job's environment, which its client wrote.
 */
void
enforce_jail_paths(uint64_t cards, struct jail_spec *js)
{
	u_int	 i;

	for (i = 0; i < ENFORCE_CARDS; i++) {
		if ((cards & (1ULL << i)) == 0)
			continue;
		if (caps[i].shim && region_ok) {
			strv_add(&js->exec, shim_path);
			strv_add(&js->rw, region_path());
			if (fake_cuda != NULL)
				strv_add(&js->exec, fake_cuda);
		}
		if (caps[i].mps && mps_pipe_dir(i) != NULL)
			strv_add(&js->sockets, mps_pipe_dir(i));
	}
}

/*
 * The daemon's one-second tick: returns dead processes' memory, and every
 * ten ticks (GMUX_AUDIT_TICKS) starts an audit of the real cards
 * (audit_start: one at a time, never waiting for the vendors' tools).
 * When it has the driver's GPU processes, done(ps, arg) is called from
 * the loop to act on them (audit_act) against the jobs running then.
 */
void
enforce_tick(const struct cards *cs,
    void (*done)(const struct card_procs *, void *), void *arg)
{
	region_tick();
	if (++ticks % audit_every == 0)
		audit_start(cs, done, arg);
}
