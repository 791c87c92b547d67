/*
 * pacer.c: the launch pacer, a token bucket of GPU time in front of every
 * kernel and graph launch.  It is how a live compute resize takes effect:
 * MPS fixes a client's share of the SMs when the client starts, so the job
 * runs inside that ceiling (mps_pct, fixed) and the pacer holds it to the
 * current ceiling (live) by letting it keep the GPU busy only a fraction
 * ceiling / mps_pct of the time.  At or above the MPS ceiling the pacer
 * does nothing; on cards without MPS the base is the whole card.
 *
 * The cost of a launch is the GPU time it takes, measured now and then
 * with a pair of events around one launch (one sample in flight at a
 * time) and averaged.  A launch spends its estimated cost; the bucket
 * refills at rate x wall time, holds at most BURST_NS, and a launch that
 * finds it in debt waits, outside any lock, until the debt is paid.
 */

#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "shim.h"

#define BURST_NS	(2 * 1000 * 1000LL)	/* GPU time that may bunch up */
#define FIRST_COST_NS	(50 * 1000LL)		/* until the first sample */

struct pace {
	int		 sampling;	/* this launch is being measured */
	int		 ptsz;
	CUstream	 stream;
};

static pthread_mutex_t	 lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t		 tokens;	/* GPU ns, may go negative */
static int64_t		 last_ns;
static int64_t		 cost_ns = FIRST_COST_NS;
static struct {
	CUevent		 start, end;
	CUcontext	 ctx;
	int		 made;
	int		 busy;		/* a sample is in flight */
	int		 measured;	/* cost_ns is no longer the guess */
} sample;

static int64_t
now_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec);
}

/* The fraction of the MPS share the job may use now, in 1/1000s. */
static int
pacer_rate(void)
{
	struct gmux_region_slot	*sl;
	uint32_t		 ceiling, base;

	if (!acct_active() || (sl = acct_slot(cuda_dev())) == NULL)
		return (1000);
	base = sl->mps_pct != 0 ? sl->mps_pct : 100;
	ceiling = atomic_load(&sl->ceiling);
	if (ceiling >= base)
		return (1000);
	return (ceiling == 0 ? 1 : (int)(ceiling * 1000 / base));
}

/* Folds a finished sample into the cost estimate.  Locked. */
static void
sample_poll(void)
{
	__typeof__(&cuEventQuery)	 q = REAL(cuEventQuery);
	__typeof__(&cuEventElapsedTime)	 et = REAL(cuEventElapsedTime);
	float				 ms;
	int64_t				 ns;

	if (!sample.busy || q == NULL || et == NULL ||
	    q(sample.end) != CUDA_SUCCESS)
		return;
	sample.busy = 0;
	if (et(&ms, sample.start, sample.end) != CUDA_SUCCESS || ms < 0)
		return;
	ns = (int64_t)(ms * 1e6);
	if (!sample.measured)		/* the guess goes at the first sample */
		cost_ns = ns;
	cost_ns = cost_ns + (ns - cost_ns) / 4;
	sample.measured = 1;
	if (cost_ns < 1000)
		cost_ns = 1000;
}

/* Starts measuring this launch if no sample is in flight.  Locked. */
static int
sample_start(CUstream s, int ptsz)
{
	__typeof__(&cuCtxGetCurrent)	 gc = REAL(cuCtxGetCurrent);
	__typeof__(&cuEventCreate)	 ec = REAL(cuEventCreate);
	__typeof__(&cuEventRecord)	 er;
	CUcontext			 ctx;

	er = ptsz ? REAL(cuEventRecord_ptsz) : REAL(cuEventRecord);
	if (sample.busy || gc == NULL || ec == NULL || er == NULL ||
	    gc(&ctx) != CUDA_SUCCESS || ctx == NULL)
		return (0);
	if (!sample.made || sample.ctx != ctx) {
		if (ec(&sample.start, 0) != CUDA_SUCCESS ||
		    ec(&sample.end, 0) != CUDA_SUCCESS)
			return (0);
		sample.ctx = ctx;
		sample.made = 1;
	}
	return (er(sample.start, s) == CUDA_SUCCESS);
}

/*
 * Pays for one launch, waiting if the bucket is in debt.  The sample's
 * start event is recorded after the wait, right before the launch, so the
 * wait is never taken for GPU time.
 */
static void
pacer_before(struct pace *p, CUstream s, int ptsz)
{
	struct timespec	 ts;
	int64_t		 now, wait = 0;
	int		 rate;

	p->sampling = 0;
	if ((rate = pacer_rate()) >= 1000)
		return;
	pthread_mutex_lock(&lock);
	now = now_ns();
	if (last_ns == 0)
		last_ns = now;
	tokens += (now - last_ns) * rate / 1000;
	if (tokens > BURST_NS)
		tokens = BURST_NS;
	last_ns = now;
	sample_poll();
	if (tokens < 0)
		wait = -tokens * 1000 / rate;
	tokens -= cost_ns;
	pthread_mutex_unlock(&lock);
	if (wait > 0) {
		ts.tv_sec = wait / 1000000000LL;
		ts.tv_nsec = wait % 1000000000LL;
		while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
			;
	}
	pthread_mutex_lock(&lock);
	p->sampling = sample_start(s, ptsz);
	p->ptsz = ptsz;
	p->stream = s;
	pthread_mutex_unlock(&lock);
}

static void
pacer_after(struct pace *p, CUresult rc)
{
	__typeof__(&cuEventRecord)	 er;

	if (!p->sampling)
		return;
	er = p->ptsz ? REAL(cuEventRecord_ptsz) : REAL(cuEventRecord);
	pthread_mutex_lock(&lock);
	if (rc == CUDA_SUCCESS && er != NULL &&
	    er(sample.end, p->stream) == CUDA_SUCCESS)
		sample.busy = 1;
	pthread_mutex_unlock(&lock);
}

/* One paced wrapper: the real call between pacer_before and pacer_after. */
#define PACED(name, ptsz, stream, params, args)				\
SHIM_EXPORT CUresult							\
name params								\
{									\
	__typeof__(&name)	 fn = REAL(name);			\
	struct pace		 p;					\
	CUresult		 rc;					\
									\
	if (fn == NULL)							\
		return (CUDA_ERROR_NOT_INITIALIZED);			\
	pacer_before(&p, stream, ptsz);					\
	rc = fn args;							\
	pacer_after(&p, rc);						\
	return (rc);							\
}
#define PACED2(name, stream, params, args)				\
	PACED(name, 0, stream, params, args)				\
	PACED(name##_ptsz, 1, stream, params, args)

PACED2(cuLaunchKernel, s,
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
    unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
    CUstream s, void **params, void **extra),
    (f, gx, gy, gz, bx, by, bz, shmem, s, params, extra))
PACED2(cuLaunchKernelEx, (c != NULL ? c->hStream : NULL),
    (const CUlaunchConfig *c, CUfunction f, void **params, void **extra),
    (c, f, params, extra))
PACED2(cuLaunchCooperativeKernel, s,
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
    unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
    CUstream s, void **params),
    (f, gx, gy, gz, bx, by, bz, shmem, s, params))
PACED2(cuGraphLaunch, s, (CUgraphExec g, CUstream s), (g, s))
