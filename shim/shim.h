/*
 * shim.h: the internal interface of libgmux.so, the preload library that
 * counts a job's GPU memory in the shared region and paces its launches.
 * It lives inside someone else's process: nothing here aborts, exits or
 * allocates through gmux's xmalloc; every failure is a return code.
 */

#ifndef GMUX_SHIM_H
#define GMUX_SHIM_H

#include <stdint.h>

#include "cuda-types.h"
#include "region.h"

#define SHIM_EXPORT __attribute__((visibility("default")))

/* dl.c: finding the real functions, and the dlsym override */
enum shim_sym_id {
#define W(name, base, version, ptsz) SYM_##name,
#define R(name, base, version, ptsz) SYM_##name,
#include "syms.h"
#undef W
#undef R
	SYM_COUNT
};
struct shim_sym {
	const char	*name;		/* the exported name */
	const char	*base;		/* the name cuGetProcAddress is asked */
	int		 version;	/* the first driver with this variant */
	int		 ptsz;		/* per-thread default stream variant */
	void		*wrapper;	/* NULL: called, never wrapped */
	_Atomic(void *)	 real;
};
extern struct shim_sym shim_syms[SYM_COUNT];
void		*shim_real(enum shim_sym_id);
void		*shim_proc_address(const char *, void *, int, cuuint64_t);
void		 shim_log(const char *, ...)
		     __attribute__((format(printf, 1, 2)));
void		 shim_warn_once(int *, const char *, ...)
		     __attribute__((format(printf, 2, 3)));

/* The real entry point f, typed, or NULL. */
#define REAL(f) ((__typeof__(&f))shim_real(SYM_##f))

/* account.c: the job's share of the shared region, as this process sees it */
int		 acct_active(void);	/* 0: not under gmux, pass through */
int		 acct_multi(void);	/* several cards: ordinals matter */
int		 acct_reserve(int, uint64_t);
void		 acct_release(int, uint64_t);
struct gmux_region_slot *acct_slot(int);
struct gmux_region_slot *acct_slot_uuid(const char *);
int		 acct_report(int, uint64_t *, uint64_t *);

/* track.c: what this process allocated, by handle */
enum track_kind {
	TRACK_PTR = 1,		/* cuMemAlloc*, managed */
	TRACK_VMM,		/* cuMemCreate */
	TRACK_ARRAY,
	TRACK_MIPMAP,
	TRACK_HSA,		/* hsa_amd_memory_pool_allocate */
};
int		 track_add(enum track_kind, uint64_t, uint64_t, int);
int		 track_del(enum track_kind, uint64_t, uint64_t *, int *);
void		 track_reset(void);

/* cuda.c */
int		 cuda_dev(void);
int		 cuda_reserve(int, uint64_t);

/* pool.c: stream-ordered allocations, counted by pool growth */
void		 pool_refresh(CUmemoryPool);

#endif /* GMUX_SHIM_H */
