/*
 * dl.c: how the shim gets between a program and the driver.  Three doors
 * lead to the driver and each is watched: the exported cu* symbols (for
 * programs linked with -lcuda), dlsym (for programs and runtimes that
 * dlopen libcuda.so.1: our dlsym answers with our wrapper for every name
 * we wrap), and cuGetProcAddress, where the real driver is asked first
 * with the caller's (symbol, version, flags) and what it returns is
 * swapped for the wrapper of that exact variant.
 */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

struct shim_sym shim_syms[SYM_COUNT] = {
#define W(name, base, version, ptsz) \
	{ #name, base, version, ptsz, (void *)name, NULL },
#define R(name, base, version, ptsz) \
	{ #name, base, version, ptsz, NULL, NULL },
#include "syms.h"
#undef W
#undef R
};

/*
 * Names that only reach legacy (pre-3.2, 32-bit) allocators: they are not
 * counted, so they are refused rather than let through.
 */
static const char *denied[] = {
	"cuMemAlloc", "cuMemAllocPitch", "cuArrayCreate", "cuArray3DCreate",
};

typedef void *(*dlsym_fn)(void *, const char *);
static _Atomic(dlsym_fn) real_dlsym_fn;

/*
 * The real dlsym.  dlsym(RTLD_NEXT, "dlsym") would need dlsym, which is
 * us; glibc's private _dl_sym is no longer exported.  dlvsym is not
 * overridden, so asking it for dlsym by version finds libc's own without
 * recursion: GLIBC_2.34 where dlsym moved into libc, the base versions of
 * x86_64 (2.2.5) and aarch64 (2.17) before that.
 */
static void *
real_dlsym(void *handle, const char *name)
{
	static const char	*versions[] = {
		"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17",
	};
	dlsym_fn		 fn = atomic_load(&real_dlsym_fn);
	size_t			 i;

	for (i = 0; fn == NULL && i < sizeof versions / sizeof *versions; i++)
		fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
	if (fn == NULL)
		return (NULL);
	atomic_store(&real_dlsym_fn, fn);
	return (fn(handle, name));
}

/*
 * RTLD_NEXT means "after the caller", and glibc finds the caller from its
 * return address, which is now inside this library.  So the search after
 * the caller's object is done here: each later object in load order is
 * asked, and only a definition in that object itself counts.
 */
static void *
next_after(const void *caller, const char *name)
{
	Dl_info		 info;
	struct link_map	*lm = NULL, *l, *owner;
	void		*sym;

	if (dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) == 0 ||
	    lm == NULL)
		return (real_dlsym(RTLD_NEXT, name));
	for (l = lm->l_next; l != NULL; l = l->l_next) {
		if ((sym = real_dlsym(l, name)) == NULL)
			continue;
		owner = NULL;
		if (dladdr1(sym, &info, (void **)&owner,
		    RTLD_DL_LINKMAP) != 0 && owner == l)
			return (sym);
	}
	return (NULL);
}

static int
is_denied(const char *name)
{
	size_t	 i;

	for (i = 0; i < sizeof denied / sizeof *denied; i++) {
		if (strcmp(name, denied[i]) == 0)
			return (1);
	}
	return (0);
}

/* Keeps the first real address seen for a variant. */
static void
set_real(struct shim_sym *s, void *real)
{
	void	*expected = NULL;

	if (real != NULL && real != s->wrapper)
		atomic_compare_exchange_strong(&s->real, &expected, real);
}

static void *
lib_handle(const char *name)
{
	const char	*lib;
	void		*h;

	lib = strncmp(name, "nvml", 4) == 0 ? "libnvidia-ml.so.1" :
	    "libcuda.so.1";
	if ((h = dlopen(lib, RTLD_LAZY|RTLD_NOLOAD)) == NULL)
		h = dlopen(lib, RTLD_LAZY);
	return (h);
}

/*
 * Returns the real function of entry id: the next definition after this
 * library (the driver the program linked), else the driver's own library
 * opened by name.  Never one of our own wrappers.
 */
void *
shim_real(enum shim_sym_id id)
{
	struct shim_sym	*s = &shim_syms[id];
	void		*p, *h;

	if ((p = atomic_load(&s->real)) != NULL)
		return (p);
	p = real_dlsym(RTLD_NEXT, s->name);
	if ((p == NULL || p == s->wrapper) && (h = lib_handle(s->name)) != NULL)
		p = real_dlsym(h, s->name);
	set_real(s, p);
	return (atomic_load(&s->real));
}

static struct shim_sym *
find_wrapped(const char *name)
{
	size_t	 i;

	for (i = 0; i < SYM_COUNT; i++) {
		if (shim_syms[i].wrapper != NULL &&
		    strcmp(shim_syms[i].name, name) == 0)
			return (&shim_syms[i]);
	}
	return (NULL);
}

SHIM_EXPORT void *
dlsym(void *handle, const char *name)
{
	void		*sym;
	struct shim_sym	*s;

	if (handle == RTLD_NEXT)
		sym = next_after(__builtin_return_address(0), name);
	else
		sym = real_dlsym(handle, name);
	if (sym == NULL ||
	    (strncmp(name, "cu", 2) != 0 && strncmp(name, "nvml", 4) != 0))
		return (sym);
	if (is_denied(name)) {
		shim_log("dlsym %s: refused (legacy allocator)", name);
		return (NULL);
	}
	if ((s = find_wrapped(name)) == NULL)
		return (sym);
	set_real(s, sym);
	if (shim_real(s - shim_syms) == NULL)
		return (sym);
	shim_log("dlsym %s: wrapped", name);
	return (s->wrapper);
}

/*
 * What cuGetProcAddress hands out for symbol, given the driver's answer
 * fn: the wrapper of the variant whose real address is fn; failing that
 * (a driver may hand out an address that is not its exported symbol's),
 * the variant the documented rules pick for (version, flags).  NULL if
 * the symbol is one we wrap but no wrapped variant is that old: it is
 * refused rather than let through uncounted.
 */
void *
shim_proc_address(const char *symbol, void *fn, int version, cuuint64_t flags)
{
	struct shim_sym	*s, *pick = NULL;
	int		 ptsz, any = 0;
	size_t		 i;

	if (symbol == NULL || fn == NULL)
		return (fn);
	ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
	for (i = 0; i < SYM_COUNT; i++) {
		s = &shim_syms[i];
		if (s->wrapper == NULL || strcmp(s->base, symbol) != 0)
			continue;
		any = 1;
		if (fn == s->wrapper || shim_real(i) == fn)
			return (s->wrapper);
		if (s->ptsz == ptsz && s->version <= version &&
		    (pick == NULL || s->version > pick->version))
			pick = s;
	}
	if (!any)
		return (fn);
	if (pick == NULL) {
		shim_log("cuGetProcAddress %s %d: refused (no counted variant)",
		    symbol, version);
		return (NULL);
	}
	set_real(pick, fn);
	return (pick->wrapper);
}

SHIM_EXPORT CUresult
cuGetProcAddress(const char *symbol, void **pfn, int version,
    cuuint64_t flags)
{
	__typeof__(&cuGetProcAddress)	 fn = REAL(cuGetProcAddress);
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	rc = fn(symbol, pfn, version, flags);
	if (rc != CUDA_SUCCESS || pfn == NULL || *pfn == NULL)
		return (rc);
	if ((*pfn = shim_proc_address(symbol, *pfn, version, flags)) == NULL)
		return (CUDA_ERROR_NOT_FOUND);
	return (rc);
}

SHIM_EXPORT CUresult
cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
    cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
	__typeof__(&cuGetProcAddress_v2) fn = REAL(cuGetProcAddress_v2);
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	rc = fn(symbol, pfn, version, flags, status);
	if (rc != CUDA_SUCCESS || pfn == NULL || *pfn == NULL)
		return (rc);
	if ((*pfn = shim_proc_address(symbol, *pfn, version, flags)) == NULL) {
		if (status != NULL)
			*status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
		return (CUDA_ERROR_NOT_FOUND);
	}
	return (rc);
}

/*
 * Logging only when GMUX_SHIM_LOG is set: "stderr" (or "1") for standard
 * error, anything else is a file appended to.  One line per event.
 */
static int
log_fd(void)
{
	static _Atomic int	 fd = -2;
	const char		*v;
	int			 f = atomic_load(&fd), nf;

	if (f != -2)
		return (f);
	v = getenv("GMUX_SHIM_LOG");
	if (v == NULL || *v == '\0')
		nf = -1;
	else if (strcmp(v, "stderr") == 0 || strcmp(v, "1") == 0)
		nf = 2;
	else
		nf = open(v, O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC, 0600);
	if (!atomic_compare_exchange_strong(&fd, &f, nf) && nf > 2)
		close(nf);
	return (atomic_load(&fd));
}

static void
shim_vwrite(int fd, const char *fmt, va_list ap)
{
	char	 line[512];
	int	 n;

	n = snprintf(line, sizeof line, "gmux shim[%ld]: ", (long)getpid());
	if (n < 0 || (size_t)n >= sizeof line)
		return;
	vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
	n = (int)strlen(line);
	line[n++] = '\n';
	while (write(fd, line, n) == -1 && errno == EINTR)
		;
}

void
shim_log(const char *fmt, ...)
{
	va_list	 ap;
	int	 fd, saved = errno;

	if ((fd = log_fd()) < 0)
		return;
	va_start(ap, fmt);
	shim_vwrite(fd, fmt, ap);
	va_end(ap);
	errno = saved;
}

/* Says something once on standard error, whatever GMUX_SHIM_LOG says. */
void
shim_warn_once(int *said, const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	if (__atomic_exchange_n(said, 1, __ATOMIC_SEQ_CST))
		return;
	va_start(ap, fmt);
	shim_vwrite(2, fmt, ap);
	va_end(ap);
	errno = saved;
}
