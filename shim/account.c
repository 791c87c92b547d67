/*
 * account.c: this process's side of the shared region.  It maps the file
 * the daemon named in GMUX_REGION, registers the process under each of its
 * job's slots, and reserves before every allocation (see region.h for the
 * protocol and what a death in the middle leaves behind).
 *
 * Without GMUX_REGION the process is not a gmux job and everything passes
 * through.  With it but unusable (missing, wrong version, bad slot, job
 * ended) allocations fail closed, and standard error says so once.
 */

#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

#define ACCT_MAX_SLOTS	16

enum acct_state {
	ACCT_OFF,		/* not a gmux job */
	ACCT_ON,
	ACCT_BROKEN,		/* fail closed */
};

static struct gmux_region	*rg;
static enum acct_state		 state;
static char			 why[160];
static pthread_once_t		 once = PTHREAD_ONCE_INIT;
static pthread_mutex_t		 reg_lock = PTHREAD_MUTEX_INITIALIZER;
static int			 said_broken, said_ended, said_full;

static struct {
	uint32_t	 slot;
	uint32_t	 gen;
	int		 proc;		/* our entry, -1 until registered */
} refs[ACCT_MAX_SLOTS];
static int	 nrefs;

static void
acct_child(void)
{
	int	 i;

	/* A forked child is a new process: it registers anew. */
	pthread_mutex_init(&reg_lock, NULL);
	for (i = 0; i < nrefs; i++)
		refs[i].proc = -1;
	track_reset();
}

/* Parses "slot:gen[,slot:gen...]"; -1 on anything else. */
static int
parse_slots(const char *s)
{
	char		*end;
	unsigned long	 slot, gen;

	for (nrefs = 0; *s != '\0' && nrefs < ACCT_MAX_SLOTS; nrefs++) {
		errno = 0;
		slot = strtoul(s, &end, 10);
		if (end == s || *end != ':' || slot >= GMUX_REGION_SLOTS)
			return (-1);
		s = end + 1;
		gen = strtoul(s, &end, 10);
		if (end == s || errno != 0 || gen > UINT32_MAX ||
		    (*end != ',' && *end != '\0'))
			return (-1);
		refs[nrefs].slot = slot;
		refs[nrefs].gen = gen;
		refs[nrefs].proc = -1;
		s = *end == ',' ? end + 1 : end;
	}
	return (nrefs > 0 && *s == '\0' ? 0 : -1);
}

static struct gmux_region *
map_region(const char *path)
{
	struct gmux_region	*r;
	struct stat		 sb;
	int			 fd;

	if ((fd = open(path, O_RDWR|O_CLOEXEC)) == -1) {
		snprintf(why, sizeof why, "%s: %s", path, strerror(errno));
		return (NULL);
	}
	if (fstat(fd, &sb) == -1 || sb.st_size != (off_t)sizeof *r) {
		snprintf(why, sizeof why, "%s: not a region of this version",
		    path);
		close(fd);
		return (NULL);
	}
	r = mmap(NULL, sizeof *r, PROT_READ|PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (r == MAP_FAILED) {
		snprintf(why, sizeof why, "mmap %s: %s", path, strerror(errno));
		return (NULL);
	}
	if (atomic_load(&r->magic) != GMUX_REGION_MAGIC ||
	    r->version != GMUX_REGION_VERSION || r->size != sizeof *r) {
		snprintf(why, sizeof why, "%s: not a region of this version",
		    path);
		munmap(r, sizeof *r);
		return (NULL);
	}
	return (r);
}

static void
acct_init(void)
{
	const char	*path = getenv(GMUX_REGION_ENV);
	const char	*slots = getenv(GMUX_REGION_SLOTS_ENV);

	if (path == NULL || *path == '\0') {
		state = ACCT_OFF;
		return;
	}
	state = ACCT_BROKEN;
	if (slots == NULL || parse_slots(slots) != 0) {
		snprintf(why, sizeof why, "bad %s", GMUX_REGION_SLOTS_ENV);
		return;
	}
	if ((rg = map_region(path)) == NULL)
		return;
	pthread_atfork(NULL, NULL, acct_child);
	state = ACCT_ON;
	shim_log("region %s, %d slot(s)", path, nrefs);
}

static enum acct_state
acct_state(void)
{
	pthread_once(&once, acct_init);
	if (state == ACCT_BROKEN) {
		shim_warn_once(&said_broken, "cannot use the shared region "
		    "(%s): GPU allocations are refused", why);
	}
	return (state);
}

int
acct_active(void)
{
	return (acct_state() != ACCT_OFF);
}

int
acct_multi(void)
{
	return (acct_state() == ACCT_ON && nrefs > 1);
}

/* The slot for device ordinal dev: the job's cards in device order. */
static int
ref_index(int dev)
{
	if (nrefs == 1)
		return (0);
	return (dev >= 0 && dev < nrefs ? dev : -1);
}

/* Claims a process entry under the slot of refs[r]; -1 if all are taken. */
static int
acct_register(int r)
{
	uint64_t	 owner, zero;
	pid_t		 pid = getpid();
	int		 i;

	pthread_mutex_lock(&reg_lock);
	if (refs[r].proc != -1) {
		pthread_mutex_unlock(&reg_lock);
		return (0);
	}
	owner = GMUX_REGION_OWNER(refs[r].slot, pid);
	for (i = 0; i < GMUX_REGION_PROCS; i++) {
		zero = 0;
		if (atomic_compare_exchange_strong(&rg->procs[i].owner, &zero,
		    owner))
			break;
	}
	if (i < GMUX_REGION_PROCS) {
		atomic_store(&rg->procs[i].used, 0);
		atomic_store(&rg->procs[i].start, gmux_region_start_time(pid));
		refs[r].proc = i;
		shim_log("registered as entry %d of slot %u", i, refs[r].slot);
	}
	pthread_mutex_unlock(&reg_lock);
	return (i < GMUX_REGION_PROCS ? 0 : -1);
}

/* The live slot of dev, registered; NULL (and a warning) if none. */
static struct gmux_region_slot *
live_slot(int dev, int *r)
{
	struct gmux_region_slot	*sl;

	if (acct_state() != ACCT_ON || (*r = ref_index(dev)) == -1)
		return (NULL);
	sl = &rg->slots[refs[*r].slot];
	if (atomic_load(&sl->gen) != refs[*r].gen) {
		shim_warn_once(&said_ended, "the job's slot in the shared "
		    "region has ended: GPU allocations are refused");
		return (NULL);
	}
	if (refs[*r].proc == -1 && acct_register(*r) != 0) {
		shim_warn_once(&said_full, "no free process entry in the "
		    "shared region: GPU allocations are refused");
		return (NULL);
	}
	return (sl);
}

static void
max_store(_Atomic uint64_t *a, uint64_t v)
{
	uint64_t	 old = atomic_load(a);

	while (old < v && !atomic_compare_exchange_weak(a, &old, v))
		;
}

/*
 * Reserves n bytes on device dev before the real allocator runs.  Returns
 * 0, or -1 when it would pass the cap or the region cannot be used.
 */
int
acct_reserve(int dev, uint64_t n)
{
	struct gmux_region_slot	*sl;
	uint64_t		 old, cap;
	int			 r;

	if (acct_state() == ACCT_OFF)
		return (0);
	if ((sl = live_slot(dev, &r)) == NULL)
		return (-1);
	old = atomic_load(&sl->used);
	do {
		cap = atomic_load(&sl->cap);
		if (n > cap || old > cap - n) {
			atomic_fetch_add(&sl->denied, 1);
			shim_log("refused %llu bytes: %llu of %llu used",
			    (unsigned long long)n, (unsigned long long)old,
			    (unsigned long long)cap);
			return (-1);
		}
	} while (!atomic_compare_exchange_weak(&sl->used, &old, old + n));
	atomic_fetch_add(&rg->procs[refs[r].proc].used, n);
	max_store(&sl->peak, old + n);
	return (0);
}

/* Returns n bytes: the process's count first, then the job's. */
void
acct_release(int dev, uint64_t n)
{
	struct gmux_region_slot	*sl;
	int			 r;

	if (n == 0 || acct_state() != ACCT_ON || (r = ref_index(dev)) == -1 ||
	    refs[r].proc == -1)
		return;
	sl = &rg->slots[refs[r].slot];
	if (atomic_load(&sl->gen) != refs[r].gen)
		return;
	gmux_region_sub(&rg->procs[refs[r].proc].used, n);
	gmux_region_sub(&sl->used, n);
}

/* The slot of dev whatever its state, for reading; NULL if none. */
struct gmux_region_slot *
acct_slot(int dev)
{
	int	 r;

	if (acct_state() != ACCT_ON || (r = ref_index(dev)) == -1)
		return (NULL);
	return (&rg->slots[refs[r].slot]);
}

/* The job's slot on the card of that UUID (NVML knows cards by UUID). */
struct gmux_region_slot *
acct_slot_uuid(const char *uuid)
{
	struct gmux_region_slot	*sl;
	int			 r;

	if (acct_state() != ACCT_ON)
		return (NULL);
	for (r = 0; r < nrefs; r++) {
		sl = &rg->slots[refs[r].slot];
		if (sl->card < GMUX_REGION_CARDS &&
		    strcmp(rg->cards[sl->card].uuid, uuid) == 0)
			return (sl);
	}
	return (NULL);
}

/*
 * What device dev should report: *total is the cap, *avail what is left
 * of it for the whole job.  Returns 0 if there is nothing to report (not a
 * gmux job), 1 otherwise; a broken region reports nothing available.
 */
int
acct_report(int dev, uint64_t *total, uint64_t *avail)
{
	struct gmux_region_slot	*sl;
	uint64_t		 cap, used;

	switch (acct_state()) {
	case ACCT_OFF:
		return (0);
	case ACCT_BROKEN:
		*avail = 0;
		return (1);
	case ACCT_ON:
		break;
	}
	if ((sl = acct_slot(dev)) == NULL) {
		*avail = 0;
		return (1);
	}
	cap = atomic_load(&sl->cap);
	used = atomic_load(&sl->used);
	*total = cap;
	*avail = used < cap ? cap - used : 0;
	return (1);
}
