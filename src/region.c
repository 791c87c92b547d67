/*
 * region.c: the daemon's side of the shared region (shim/region.h): it
 * makes the file, gives each job a slot per card with its cap and compute
 * ceiling, changes them on resize, and returns the share of every process
 * that died, found through pidfds in the one-second tick (never through
 * the process's own atexit, which SIGKILL skips).
 */

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "../shim/region.h"

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");

static struct gmux_region	*rg;
static char			*rg_path;

/* The daemon's own view of each process entry: the owner it saw, a pidfd. */
static struct {
	uint64_t	 owner;
	int		 fd;
} watch[GMUX_REGION_PROCS];

static int
region_valid(const struct gmux_region *r)
{
	return (atomic_load(&r->magic) == GMUX_REGION_MAGIC &&
	    r->version == GMUX_REGION_VERSION && r->size == sizeof *r);
}

/* Maps an existing region of the right version; NULL if there is none. */
static struct gmux_region *
region_adopt(const char *path)
{
	struct gmux_region	*r;
	struct stat		 sb;
	int			 fd;

	if ((fd = open(path, O_RDWR|O_CLOEXEC|O_NOFOLLOW)) == -1)
		return (NULL);
	if (fstat(fd, &sb) == -1 || sb.st_size != (off_t)sizeof *r ||
	    sb.st_uid != getuid()) {
		close(fd);
		return (NULL);
	}
	fchmod(fd, 0600);
	r = mmap(NULL, sizeof *r, PROT_READ|PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (r == MAP_FAILED)
		return (NULL);
	if (!region_valid(r)) {
		munmap(r, sizeof *r);
		return (NULL);
	}
	return (r);
}

/*
 * Makes a fresh region beside path and renames it into place, so a shim
 * never maps a half-made file.  Processes that still map an older file
 * keep counting there, apart from the new jobs.
 */
static struct gmux_region *
region_make(const char *path, char **cause)
{
	struct gmux_region	*r;
	char			*tmp;
	int			 fd;

	xasprintf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	unlink(tmp);
	fd = open(tmp, O_RDWR|O_CREAT|O_EXCL|O_CLOEXEC|O_NOFOLLOW, 0600);
	if (fd == -1 || ftruncate(fd, sizeof *r) == -1) {
		xasprintf(cause, "%s: %s", tmp, strerror(errno));
		goto fail;
	}
	r = mmap(NULL, sizeof *r, PROT_READ|PROT_WRITE, MAP_SHARED, fd, 0);
	if (r == MAP_FAILED) {
		xasprintf(cause, "mmap %s: %s", tmp, strerror(errno));
		goto fail;
	}
	r->version = GMUX_REGION_VERSION;
	r->size = sizeof *r;
	atomic_store(&r->magic, GMUX_REGION_MAGIC);
	if (rename(tmp, path) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		munmap(r, sizeof *r);
		goto fail;
	}
	close(fd);
	free(tmp);
	return (r);
fail:
	if (fd != -1)
		close(fd);
	unlink(tmp);
	free(tmp);
	return (NULL);
}

/*
 * Opens the region at path (NULL: $GMUX_HOME/shim.region), adopting the
 * one a previous daemon left if it is valid, since jobs outlive daemons and
 * their processes still count there.  The card table is rewritten from cs.
 */
int
region_open(const char *path, const struct cards *cs, char **cause)
{
	u_int			 i;
	struct gmux_region_card	*rc;

	region_close();
	if (path != NULL)
		rg_path = xstrdup(path);
	else
		xasprintf(&rg_path, "%s/shim.region", path_home());
	if ((rg = region_adopt(rg_path)) == NULL &&
	    (rg = region_make(rg_path, cause)) == NULL) {
		free(rg_path);
		rg_path = NULL;
		return (-1);
	}
	for (i = 0; i < GMUX_REGION_PROCS; i++)
		watch[i].fd = -1;
	for (i = 0; cs != NULL && i < cs->n && i < GMUX_REGION_CARDS; i++) {
		rc = &rg->cards[i];
		memset(rc->uuid, 0, sizeof rc->uuid);
		if (cs->v[i].uuid != NULL)
			snprintf(rc->uuid, sizeof rc->uuid, "%s",
			    cs->v[i].uuid);
		rc->memory = cs->v[i].memory;
		rc->index = cs->v[i].index;
		rc->vendor = cs->v[i].vendor;
	}
	rg->ncards = i;
	log_debug("%s: %s, %u cards", __func__, rg_path, rg->ncards);
	return (0);
}

void
region_close(void)
{
	u_int	 i;

	if (rg == NULL)
		return;
	for (i = 0; i < GMUX_REGION_PROCS; i++) {
		if (watch[i].fd != -1)
			close(watch[i].fd);
		watch[i].fd = -1;
		watch[i].owner = 0;
	}
	munmap(rg, sizeof *rg);
	rg = NULL;
	free(rg_path);
	rg_path = NULL;
}

/* The region's file, or NULL if none is open. */
const char *
region_path(void)
{
	return (rg_path);
}

static int
slot_live(u_int s)
{
	return ((atomic_load(&rg->slots[s].gen) & 1) != 0);
}

/* Counts the processes registered under each slot, in one pass. */
static void
proc_counts(u_int *counts)
{
	u_int		 i;
	uint64_t	 o;

	memset(counts, 0, GMUX_REGION_SLOTS * sizeof *counts);
	for (i = 0; i < GMUX_REGION_PROCS; i++) {
		o = atomic_load(&rg->procs[i].owner);
		if (o != 0 && GMUX_REGION_OWNER_SLOT(o) < GMUX_REGION_SLOTS)
			counts[GMUX_REGION_OWNER_SLOT(o)]++;
	}
}

/*
 * Gives job a slot on card with its share, pacer ceiling, MPS ceiling
 * (fixed for the job's life) and memory cap.  Returns the slot's name for
 * the environment ("slot:gen"; the caller frees it) in *env.  A slot is
 * reused only once every process that counted on it is gone.
 */
int
region_job_start(u_int job, u_int card, u_int share, u_int ceiling,
    u_int mps_pct, uint64_t cap, char **env, char **cause)
{
	struct gmux_region_slot	*sl;
	u_int			 s, counts[GMUX_REGION_SLOTS];
	uint32_t		 gen;

	if (rg == NULL) {
		xasprintf(cause, "the shared region is not open");
		return (-1);
	}
	proc_counts(counts);
	for (s = 0; s < GMUX_REGION_SLOTS; s++) {
		if (!slot_live(s) && counts[s] == 0)
			break;
	}
	if (s == GMUX_REGION_SLOTS) {
		xasprintf(cause, "all %d slots of the shared region are in use",
		    GMUX_REGION_SLOTS);
		return (-1);
	}
	sl = &rg->slots[s];
	sl->job = job;
	sl->card = card;
	sl->mps_pct = mps_pct;
	atomic_store(&sl->share, share);
	atomic_store(&sl->ceiling, ceiling);
	atomic_store(&sl->cap, cap);
	atomic_store(&sl->used, 0);
	atomic_store(&sl->peak, 0);
	atomic_store(&sl->denied, 0);
	gen = atomic_load(&sl->gen) + 1;
	atomic_store(&sl->gen, gen);
	xasprintf(env, "%u:%u", s, gen);
	log_debug("%s: j%u card %u slot %u cap %llu ceiling %u mps %u",
	    __func__, job, card, s, (unsigned long long)cap, ceiling, mps_pct);
	return (0);
}

/* Changes a running job's share, ceiling and cap; the next allocation and
 * the next launch see them.  Returns -1 if the job has no slot. */
int
region_job_set(u_int job, u_int share, u_int ceiling, uint64_t cap)
{
	u_int	 s;
	int	 found = -1;

	for (s = 0; rg != NULL && s < GMUX_REGION_SLOTS; s++) {
		if (!slot_live(s) || rg->slots[s].job != job)
			continue;
		atomic_store(&rg->slots[s].share, share);
		atomic_store(&rg->slots[s].ceiling, ceiling);
		atomic_store(&rg->slots[s].cap, cap);
		found = 0;
	}
	return (found);
}

/* Ends the job's slots: its processes' next allocations fail closed. */
void
region_job_end(u_int job)
{
	u_int	 s;

	for (s = 0; rg != NULL && s < GMUX_REGION_SLOTS; s++) {
		if (slot_live(s) && rg->slots[s].job == job)
			atomic_fetch_add(&rg->slots[s].gen, 1);
	}
}

/* Sums what the job holds over its slots; -1 if it has none. */
int
region_job_info(u_int job, struct region_job_info *ri)
{
	u_int			 s, counts[GMUX_REGION_SLOTS];
	struct gmux_region_slot	*sl;

	memset(ri, 0, sizeof *ri);
	if (rg == NULL)
		return (-1);
	proc_counts(counts);
	for (s = 0; s < GMUX_REGION_SLOTS; s++) {
		sl = &rg->slots[s];
		if (!slot_live(s) || sl->job != job)
			continue;
		ri->slots++;
		ri->cap += atomic_load(&sl->cap);
		ri->used += atomic_load(&sl->used);
		ri->peak += atomic_load(&sl->peak);
		ri->denied += atomic_load(&sl->denied);
		ri->ceiling = atomic_load(&sl->ceiling);
		ri->nprocs += counts[s];
	}
	return (ri->slots != 0 ? 0 : -1);
}

/* Says whether pid counts in the region, and for which job. */
int
region_pid_job(pid_t pid, u_int *job)
{
	u_int		 i;
	uint64_t	 o;

	for (i = 0; rg != NULL && i < GMUX_REGION_PROCS; i++) {
		o = atomic_load(&rg->procs[i].owner);
		if (o == 0 || GMUX_REGION_OWNER_PID(o) != pid)
			continue;
		if (job != NULL)
			*job = rg->slots[GMUX_REGION_OWNER_SLOT(o) %
			    GMUX_REGION_SLOTS].job;
		return (1);
	}
	return (0);
}

/* Returns a dead process's share to its slot and frees its entry. */
static void
region_reap(u_int i, uint64_t owner)
{
	struct gmux_region_proc	*p = &rg->procs[i];
	u_int			 s = GMUX_REGION_OWNER_SLOT(owner);
	uint64_t		 used = atomic_load(&p->used);

	if (s < GMUX_REGION_SLOTS)
		gmux_region_sub(&rg->slots[s].used, used);
	atomic_store(&p->used, 0);
	atomic_store(&p->start, 0);
	atomic_compare_exchange_strong(&p->owner, &owner, 0);
	log_debug("%s: pid %d slot %u returned %llu", __func__,
	    GMUX_REGION_OWNER_PID(owner), s, (unsigned long long)used);
}

/*
 * Starts watching entry i: a pidfd, checked against the start time the shim
 * wrote, so a pid reused since cannot stand for the dead process.  Returns
 * 1 if the process is already gone.
 */
static int
region_watch(u_int i, uint64_t owner)
{
	pid_t		 pid = GMUX_REGION_OWNER_PID(owner);
	uint64_t	 start = atomic_load(&rg->procs[i].start);
	int		 fd;

	if (watch[i].fd != -1)
		close(watch[i].fd);
	watch[i].fd = -1;
	watch[i].owner = 0;
	if (start == 0)		/* still registering, or died doing so */
		return (kill(pid, 0) == -1 && errno == ESRCH);
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd == -1 && errno == ESRCH)
		return (1);
	if (gmux_region_start_time(pid) != start) {
		if (fd != -1)
			close(fd);
		return (1);
	}
	watch[i].fd = fd;	/* -1 without pidfds: checked by start time */
	watch[i].owner = owner;
	return (0);
}

static int
region_dead(u_int i)
{
	struct pollfd	 pfd;
	uint64_t	 o = watch[i].owner;

	if (watch[i].fd == -1) {
		return (gmux_region_start_time(GMUX_REGION_OWNER_PID(o)) !=
		    atomic_load(&rg->procs[i].start));
	}
	pfd.fd = watch[i].fd;
	pfd.events = POLLIN;
	return (poll(&pfd, 1, 0) == 1);
}

/*
 * A slot with no process left holds nothing, whatever slot.used says (see
 * region.h for how a death at the wrong instant can leave bytes there).
 * The values are read before the processes are counted: a process that
 * registers after the count reserves after the read, so the
 * compare-and-swap fails unless what it added is back to zero.
 */
static void
region_settle(void)
{
	u_int		 s, counts[GMUX_REGION_SLOTS];
	uint64_t	 used[GMUX_REGION_SLOTS];

	for (s = 0; s < GMUX_REGION_SLOTS; s++)
		used[s] = atomic_load(&rg->slots[s].used);
	proc_counts(counts);
	for (s = 0; s < GMUX_REGION_SLOTS; s++) {
		if (used[s] == 0 || counts[s] != 0)
			continue;
		if (atomic_compare_exchange_strong(&rg->slots[s].used,
		    &used[s], 0))
			log_debug("%s: slot %u settled %llu", __func__, s,
			    (unsigned long long)used[s]);
	}
}

/*
 * The one-second check: watches processes that registered since, returns
 * the share of those that died.  Returns how many were reaped.
 */
u_int
region_tick(void)
{
	u_int		 i, n = 0;
	uint64_t	 o;

	if (rg == NULL)
		return (0);
	for (i = 0; i < GMUX_REGION_PROCS; i++) {
		o = atomic_load(&rg->procs[i].owner);
		if (o == 0) {
			if (watch[i].fd != -1)
				close(watch[i].fd);
			watch[i].fd = -1;
			watch[i].owner = 0;
			continue;
		}
		if (watch[i].owner != o && !region_watch(i, o))
			continue;
		if (watch[i].owner == o && !region_dead(i))
			continue;
		if (watch[i].fd != -1)
			close(watch[i].fd);
		watch[i].fd = -1;
		watch[i].owner = 0;
		region_reap(i, o);
		n++;
	}
	region_settle();
	return (n);
}
