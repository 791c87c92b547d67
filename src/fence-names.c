/*
 * fence-names.c: the names a fenced job may reach, resolved outside the
 * job through the host's resolver (getaddrinfo, so /etc/hosts and NSS
 * count) or pinned by --add-host.  The first round runs when the job is
 * set up, before it starts, so the job never races its own allowlist;
 * later rounds run on a helper thread that posts each round back to the
 * loop through a socket, so a slow resolver never stalls the loop.
 *
 * getaddrinfo() gives no TTL: an address stays allowed for
 * FENCE_NAMES_TTL_MS after the last round that returned it, and rounds
 * come every FENCE_NAMES_REFRESH_MS.
 */

#include <sys/socket.h>

#include <netinet/in.h>

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gmux.h"
#include "fence-int.h"

#define NAMES_MAX_ADDRS	64
#define NAMES_PARALLEL	16

struct names_addr {
	int		 family;
	u_char		 addr[16];
	int64_t		 expires;	/* monotonic ms; INT64_MAX if pinned */
};

struct names_entry {
	char		*name;
	int		 pinned;
	int		 status;	/* 0, DNS_NXDOMAIN or DNS_SERVFAIL */
	struct names_addr a[NAMES_MAX_ADDRS];
	u_int		 n;
};

/* One round of the helper thread, posted to the loop as a pointer. */
struct names_round {
	u_int		 n;
	struct {
		int		 status;
		u_int		 n;
		struct names_addr a[NAMES_MAX_ADDRS];
	} r[];
};

/* What the thread and the loop share; the last one out frees it. */
struct names_shared {
	pthread_mutex_t	 lock;
	pthread_cond_t	 wake;
	int		 stop;
	int		 refs;
	int		 wfd;
	char		**names;	/* resolved, not pinned; entry order */
	u_int		 n;
};

struct fence_names {
	const struct fence *policy;
	struct names_entry *e;
	u_int		 n;
	int		 rfd;
	struct names_shared *shared;
};

static struct names_entry *
find_entry(struct fence_names *fn, const char *name)
{
	u_int	 i;

	for (i = 0; i < fn->n; i++) {
		if (strcmp(fn->e[i].name, name) == 0)
			return (&fn->e[i]);
	}
	return (NULL);
}

static struct names_entry *
add_entry(struct fence_names *fn, const char *name)
{
	struct names_entry	*e;

	if ((e = find_entry(fn, name)) != NULL)
		return (e);
	fn->e = xreallocarray(fn->e, fn->n + 1, sizeof *fn->e);
	e = &fn->e[fn->n++];
	memset(e, 0, sizeof *e);
	e->name = xstrdup(name);
	return (e);
}

/* Resolves one name; fills addresses and returns a status. */
static int
resolve(const char *name, struct names_addr *a, u_int *n)
{
	struct addrinfo	 hints, *res, *ai;
	const void	*p;
	u_int		 i;
	int		 rc;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	*n = 0;
	if ((rc = getaddrinfo(name, NULL, &hints, &res)) != 0) {
		if (rc == EAI_NONAME || rc == EAI_NODATA)
			return (DNS_NXDOMAIN);
		return (DNS_SERVFAIL);
	}
	for (ai = res; ai != NULL && *n < NAMES_MAX_ADDRS; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET)
			p = &((struct sockaddr_in *)ai->ai_addr)->sin_addr;
		else if (ai->ai_family == AF_INET6)
			p = &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
		else
			continue;
		memset(&a[*n], 0, sizeof a[*n]);
		a[*n].family = ai->ai_family;
		memcpy(a[*n].addr, p, ai->ai_family == AF_INET ? 4 : 16);
		for (i = 0; i < *n; i++) {
			if (a[i].family == a[*n].family &&
			    memcmp(a[i].addr, a[*n].addr, 16) == 0)
				break;
		}
		if (i == *n)
			(*n)++;
	}
	freeaddrinfo(res);
	return (0);
}

/* One name of a round, resolved on a thread of its own. */
struct names_job {
	const char	*name;
	int		*status;
	struct names_addr *a;
	u_int		*n;
};

static void *
resolve_thread(void *arg)
{
	struct names_job	*j = arg;

	*j->status = resolve(j->name, j->a, j->n);
	return (NULL);
}

/*
 * Resolves every name; the caller frees the round.  The names go in
 * parallel, NAMES_PARALLEL at a time, so a dead resolver costs one
 * timeout, not one per name; all threads are joined before returning.
 */
static struct names_round *
resolve_round(char **names, u_int n)
{
	struct names_round	*r;
	struct names_job	 j[NAMES_PARALLEL];
	pthread_t		 t[NAMES_PARALLEL];
	int			 made[NAMES_PARALLEL];
	u_int			 i, k, batch;

	r = xcalloc(1, sizeof *r + n * sizeof r->r[0]);
	r->n = n;
	for (i = 0; i < n; i += batch) {
		batch = n - i < NAMES_PARALLEL ? n - i : NAMES_PARALLEL;
		for (k = 0; k < batch; k++) {
			j[k].name = names[i + k];
			j[k].status = &r->r[i + k].status;
			j[k].a = r->r[i + k].a;
			j[k].n = &r->r[i + k].n;
			made[k] = batch > 1 && pthread_create(&t[k], NULL,
			    resolve_thread, &j[k]) == 0;
			if (!made[k])
				resolve_thread(&j[k]);
		}
		for (k = 0; k < batch; k++) {
			if (made[k])
				pthread_join(t[k], NULL);
		}
	}
	return (r);
}

/* The address that expires first, the one a full entry gives up. */
static u_int
soonest(const struct names_entry *e)
{
	u_int	 i, best = 0;

	for (i = 1; i < e->n; i++) {
		if (e->a[i].expires < e->a[best].expires)
			best = i;
	}
	return (best);
}

/* Merges a round: addresses seen now live another TTL. */
static void
merge_round(struct fence_names *fn, struct names_round *r)
{
	struct names_entry	*e;
	struct names_addr	*a;
	int64_t			 expires = clock_mono_ms() + FENCE_NAMES_TTL_MS;
	u_int			 i, j, k, old;

	for (i = 0, k = 0; i < fn->n && k < r->n; i++) {
		if ((e = &fn->e[i])->pinned)
			continue;
		e->status = r->r[k].status;
		for (j = 0; j < r->r[k].n; j++) {
			a = &r->r[k].a[j];
			for (old = 0; old < e->n; old++) {
				if (e->a[old].family == a->family &&
				    memcmp(e->a[old].addr, a->addr, 16) == 0)
					break;
			}
			if (old == e->n && e->n == NAMES_MAX_ADDRS)
				old = soonest(e);
			else if (old == e->n)
				e->n++;
			e->a[old] = *a;
			e->a[old].expires = expires;
		}
		k++;
	}
}

/*
 * Returns the table for a policy's names (the caller frees it), with the
 * first round resolved: this blocks for as long as the host's resolver
 * takes (one timeout at worst, the names go in parallel), which is why it
 * runs in the keeper before the job starts.  No thread outlives it.
 */
struct fence_names *
fence_names_create(const struct fence *f)
{
	struct fence_names	*fn;
	struct names_entry	*e;
	struct names_round	*r;
	u_int			 i, n = 0;
	char			**names;

	fn = xcalloc(1, sizeof *fn);
	fn->policy = f;
	fn->rfd = -1;
	for (i = 0; i < f->npins; i++) {
		e = add_entry(fn, f->pins[i].name);
		e->pinned = 1;
		if (e->n < NAMES_MAX_ADDRS) {
			e->a[e->n].family = f->pins[i].family;
			memcpy(e->a[e->n].addr, f->pins[i].addr, 16);
			e->a[e->n++].expires = INT64_MAX;
		}
	}
	for (i = 0; i < f->nrules; i++) {
		if (f->rules[i].name != NULL)
			add_entry(fn, f->rules[i].name);
	}
	names = xcalloc(fn->n + 1, sizeof *names);
	for (i = 0; i < fn->n; i++) {
		if (!fn->e[i].pinned)
			names[n++] = fn->e[i].name;
	}
	r = resolve_round(names, n);
	merge_round(fn, r);
	free(r);
	free(names);
	return (fn);
}

static void
shared_unref(struct names_shared *sh)
{
	int	 last;

	pthread_mutex_lock(&sh->lock);
	last = --sh->refs == 0;
	pthread_mutex_unlock(&sh->lock);
	if (!last)
		return;
	close(sh->wfd);
	strv_free(sh->names);
	pthread_mutex_destroy(&sh->lock);
	pthread_cond_destroy(&sh->wake);
	free(sh);
}

static void *
names_thread(void *arg)
{
	struct names_shared	*sh = arg;
	struct names_round	*r;
	struct timespec		 ts;
	int			 stop;

	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += FENCE_NAMES_REFRESH_MS / 1000;
		pthread_mutex_lock(&sh->lock);
		while (!sh->stop && pthread_cond_timedwait(&sh->wake, &sh->lock,
		    &ts) != ETIMEDOUT)
			;
		stop = sh->stop;
		pthread_mutex_unlock(&sh->lock);
		if (stop)
			break;
		r = resolve_round(sh->names, sh->n);
		if (send(sh->wfd, &r, sizeof r, MSG_DONTWAIT|MSG_NOSIGNAL) !=
		    sizeof r)
			free(r);
	}
	shared_unref(sh);
	return (NULL);
}

/*
 * Starts the refresh thread, if a name needs resolving.  After this the
 * process has a second thread: only async-signal-safe code may run
 * between a fork() and an exec().
 */
int
fence_names_start(struct fence_names *fn, char **cause)
{
	struct names_shared	*sh;
	pthread_condattr_t	 ca;
	pthread_t		 t;
	int			 sv[2];
	u_int			 i;

	for (i = 0; i < fn->n && fn->e[i].pinned; i++)
		;
	if (i == fn->n || fn->shared != NULL)
		return (0);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET|SOCK_CLOEXEC, 0, sv) != 0) {
		xasprintf(cause, "socketpair: %s", strerror(errno));
		return (-1);
	}
	sh = xcalloc(1, sizeof *sh);
	pthread_mutex_init(&sh->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sh->wake, &ca);
	pthread_condattr_destroy(&ca);
	sh->refs = 2;
	sh->wfd = sv[1];
	sh->names = xcalloc(fn->n + 1, sizeof *sh->names);
	for (i = 0; i < fn->n; i++) {
		if (!fn->e[i].pinned)
			sh->names[sh->n++] = xstrdup(fn->e[i].name);
	}
	if ((errno = pthread_create(&t, NULL, names_thread, sh)) != 0) {
		xasprintf(cause, "pthread_create: %s", strerror(errno));
		close(sv[0]);
		sh->refs = 1;
		shared_unref(sh);
		return (-1);
	}
	pthread_detach(t);
	fn->shared = sh;
	fn->rfd = sv[0];
	set_nonblock(fn->rfd);
	return (0);
}

/* The descriptor readable when the thread has posted a round, or -1. */
int
fence_names_fd(const struct fence_names *fn)
{
	return (fn->rfd);
}

/* Takes in the rounds the thread has posted. */
void
fence_names_collect(struct fence_names *fn)
{
	struct names_round	*r;

	while (recv(fn->rfd, &r, sizeof r, MSG_DONTWAIT) == sizeof r) {
		merge_round(fn, r);
		free(r);
	}
}

/* Whether addr:port belongs to an allowed name, unexpired, on its port. */
int
fence_names_allows(struct fence_names *fn, int family, const u_char *addr,
    uint16_t port)
{
	const struct fence_rule	*r;
	struct names_entry	*e;
	int64_t			 now = clock_mono_ms();
	u_int			 i, j;

	for (i = 0; i < fn->policy->nrules; i++) {
		r = &fn->policy->rules[i];
		if (r->name == NULL || !fence_rule_port(r, port))
			continue;
		if ((e = find_entry(fn, r->name)) == NULL)
			continue;
		for (j = 0; j < e->n; j++) {
			if (e->a[j].family == family && e->a[j].expires > now &&
			    memcmp(e->a[j].addr, addr,
			    family == AF_INET ? 4 : 16) == 0)
				return (1);
		}
	}
	return (0);
}

/*
 * The stub's lookup (a dns_lookup_cb; arg is the table): the name's live
 * addresses, DNS_NXDOMAIN for a name not allowed, DNS_SERVFAIL when the
 * host's resolver failed and nothing is known.
 */
int
fence_names_lookup(const char *name, struct dns_rr *rr, u_int max,
    void *arg)
{
	struct fence_names	*fn = arg;
	struct names_entry	*e;
	int64_t			 now = clock_mono_ms();
	u_int			 i, n = 0;

	if ((e = find_entry(fn, name)) == NULL)
		return (DNS_NXDOMAIN);
	for (i = 0; i < e->n && n < max; i++) {
		if (e->a[i].expires <= now)
			continue;
		rr[n].family = e->a[i].family;
		memcpy(rr[n].addr, e->a[i].addr, 16);
		rr[n].ttl = FENCE_NAMES_REFRESH_MS / 1000;
		n++;
	}
	if (n == 0 && e->status != 0)
		return (e->status);
	return ((int)n);
}

void
fence_names_free(struct fence_names *fn)
{
	struct names_round	*r;
	u_int			 i;

	if (fn == NULL)
		return;
	if (fn->shared != NULL) {
		pthread_mutex_lock(&fn->shared->lock);
		fn->shared->stop = 1;
		pthread_cond_signal(&fn->shared->wake);
		pthread_mutex_unlock(&fn->shared->lock);
		while (recv(fn->rfd, &r, sizeof r, MSG_DONTWAIT) == sizeof r)
			free(r);
		close(fn->rfd);
		shared_unref(fn->shared);
	}
	for (i = 0; i < fn->n; i++)
		free(fn->e[i].name);
	free(fn->e);
	free(fn);
}
