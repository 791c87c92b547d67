/*
 * region.h: the layout of the shared region, a file under $GMUX_HOME that
 * the daemon maps read-write and every job process maps through the shim.
 * Included by both sides (src/region.c and shim/); nothing here may depend
 * on the rest of gmux.
 *
 * Per card: the card's UUID and memory.  Per job slot: its cap, its use,
 * its compute share and ceiling.  Per process: its pid, the slot it counts
 * against and its own use.
 *
 * The protocol that keeps two processes of one job under the cap:
 *
 *   reserve(n):  CAS loop on slot.used: fail if used + n > cap, else
 *                used += n; then proc.used += n.  Only then the real
 *                allocator is called.
 *   rollback(n) and free(n): proc.used -= n, then slot.used -= n.
 *
 * A process that dies between the two steps of reserve (a window of a few
 * instructions, never spanning a system call or the driver) or between the
 * two steps of a free leaves n counted in slot.used that no process owns:
 * the reaper subtracts only proc.used.  The error is always on the side of
 * less memory for the job, never more; it is settled when the job has no
 * registered process left (region_tick).  A process that dies during the
 * real allocator call is reaped exactly: its reservation is in proc.used.
 */

#ifndef GMUX_REGION_H
#define GMUX_REGION_H

#include <sys/types.h>

#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define GMUX_REGION_MAGIC	0x314e4745524d4d47ULL	/* "GMMREGN1" */
#define GMUX_REGION_VERSION	1
#define GMUX_REGION_CARDS	64
#define GMUX_REGION_SLOTS	256
#define GMUX_REGION_PROCS	2048

/* What the daemon puts in a job's environment. */
#define GMUX_REGION_ENV		"GMUX_REGION"		/* the file */
#define GMUX_REGION_SLOTS_ENV	"GMUX_REGION_SLOTS"	/* "slot:gen[,...]" */

struct gmux_region_card {
	char			 uuid[64];
	uint64_t		 memory;	/* the card's bytes */
	uint32_t		 index;		/* gmux's card index */
	uint32_t		 vendor;
};

/*
 * A job on one card.  gen is odd while the slot belongs to a running job;
 * each take and each release adds one, so a process of an ended job (whose
 * environment names the old gen) can never count against the next one.
 */
struct gmux_region_slot {
	_Atomic uint32_t	 gen;
	uint32_t		 job;
	uint32_t		 card;
	/* MPS ceiling fixed at start; 0 none */
	uint32_t		 mps_pct;
	_Atomic uint32_t	 share;		/* guaranteed seats, live */
	/* the pacer's target in seats, live */
	_Atomic uint32_t	 ceiling;
	_Atomic uint64_t	 cap;		/* bytes, live */
	/* reserved or held, all processes */
	_Atomic uint64_t	 used;
	_Atomic uint64_t	 peak;
	_Atomic uint64_t	 denied;	/* allocations refused at cap */
};

/*
 * A process counting against a slot.  owner is (slot << 32 | pid), 0 when
 * free; start is the process's start time (field 22 of /proc/PID/stat) so
 * a reused pid is never taken for the registered process, 0 until set.
 */
struct gmux_region_proc {
	_Atomic uint64_t	 owner;
	_Atomic uint64_t	 start;
	_Atomic uint64_t	 used;
};

struct gmux_region {
	_Atomic uint64_t	 magic;		/* written last, when ready */
	uint32_t		 version;
	/* sizeof (struct gmux_region) */
	uint32_t		 size;
	uint32_t		 ncards;
	uint32_t		 pad;
	struct gmux_region_card	 cards[GMUX_REGION_CARDS];
	struct gmux_region_slot	 slots[GMUX_REGION_SLOTS];
	struct gmux_region_proc	 procs[GMUX_REGION_PROCS];
};

#define GMUX_REGION_OWNER(slot, pid) \
	(((uint64_t)(slot) << 32) | (uint32_t)(pid))
#define GMUX_REGION_OWNER_SLOT(o)	((uint32_t)((o) >> 32))
#define GMUX_REGION_OWNER_PID(o)	((int32_t)((o) & 0xffffffffU))

/*
 * Returns numeric field n (from 4 on) of /proc/PID/stat, or 0 if the
 * process is gone: 4 is the parent, 22 the start time (clock ticks after
 * boot).  No allocation: the shim calls it too.  The command name (field
 * 2) may hold spaces and parentheses, so fields are counted from the last
 * ')'.
 */
static inline uint64_t
gmux_region_stat(pid_t pid, int n)
{
	char		 path[64], buf[1024], *p;
	int		 fd, field;
	ssize_t		 len;
	uint64_t	 v = 0;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY|O_CLOEXEC)) == -1)
		return (0);
	len = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (len <= 0)
		return (0);
	buf[len] = '\0';
	if ((p = strrchr(buf, ')')) == NULL)
		return (0);
	for (field = 2; *p != '\0' && field < n; p++) {
		if (*p == ' ')
			field++;
	}
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (uint64_t)(*p++ - '0');
	return (v);
}

static inline uint64_t
gmux_region_start_time(pid_t pid)
{
	return (gmux_region_stat(pid, 22));
}

/* Subtracts v from a counter without going below zero. */
static inline void
gmux_region_sub(_Atomic uint64_t *a, uint64_t v)
{
	uint64_t	 old = atomic_load(a), new;

	do {
		new = old > v ? old - v : 0;
	} while (!atomic_compare_exchange_weak(a, &old, new));
}

#endif /* GMUX_REGION_H */
