/*
 * fence-super.c: the fence's supervisor.  It runs in the keeper, outside
 * the job, and answers the seccomp notifications of the job's connect(),
 * bind() and UDP socket() calls, and a jailed job's chmod() and chown().
 * For an allowed connect it connects a socket of its own, to its own copy
 * of the address, and puts that socket in place of the job's
 * (SECCOMP_IOCTL_NOTIF_ADDFD with SETFD): what is connected is what was
 * checked, whatever the job's memory says by then.  It never answers
 * CONTINUE to a connect: the kernel would read the address again, from
 * memory the job controls.  (A jailed job's AF_UNIX bind it does: the
 * jail, not the supervisor, decides that one.)
 *
 * The keeper polls two descriptors of it along with its own: the
 * listener, and an epoll set with the rest (the DNS stub's connections,
 * connects still in flight, the resolver thread, a timer).
 */

#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>

#include <linux/seccomp.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "fence-int.h"

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS	/* Linux 6.6 */
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS	SECCOMP_IOW(4, uint64_t)
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

#define SUPER_MAX_PENDING	1024
#define SUPER_MAX_DNS		64
#define SUPER_MAX_PORTS		1024

enum watch_type {
	W_NAMES,
	W_TIMER,
	W_DNS,
	W_PENDING,
};

struct watch {
	enum watch_type	 type;
	int		 fd;
	int		 gone;		/* freed after the dispatch round */
	TAILQ_ENTRY(watch) entry;
};

/* A blocking connect still in flight; the job's thread waits for it. */
struct pending {
	struct watch	 w;		/* w.fd: our socket */
	uint64_t	 id;
	pid_t		 pid;
	int		 fd;
	int		 cloexec;
	int		 domain;
	int		 type;
	int64_t		 deadline;	/* SO_SNDTIMEO; 0: none */
};

struct stub {
	struct watch	 w;
	struct dns_conn	*conn;
	uint32_t	 events;
};

/* A TCP address a jailed job bound: its loopback connects may go there. */
struct port {
	int		 family;	/* IPv4-mapped addresses as IPv4 */
	u_char		 addr[16];
	uint16_t	 port;
	int		 v6only;
	ino_t		 ino;		/* the socket: does it still listen? */
};

struct fence_super {
	const struct fence	*policy;
	struct fence_names	*names;
	struct fence_unix	*local;
	int			 listener;
	int			 epfd;
	struct watch		 wn;
	struct watch		 wt;
	TAILQ_HEAD(, watch)	 watches;	/* pending connects, stubs */
	TAILQ_HEAD(, watch)	 graveyard;
	int			 done;		/* no task left in the filter */
	u_int			 npending;
	u_int			 nstubs;
	struct fence_tasks	*tasks;
	int			 flags;		/* FENCE_SUPER_* */
	struct port		*ports;		/* what the job bound */
	u_int			 nports;
	uint64_t		 refused;
	uint64_t		 allowed;
	uint64_t		 lookups;
	char			 last[128];
	uint64_t		 loop_refused;	/* for NOLOOP, of them */
	char			 loop_first[128];
};

static void	super_timer_arm(struct fence_super *);

static int
watch_add(struct fence_super *s, struct watch *w, uint32_t events)
{
	struct epoll_event	 ev;

	memset(&ev, 0, sizeof ev);
	ev.events = events;
	ev.data.ptr = w;
	return (epoll_ctl(s->epfd, EPOLL_CTL_ADD, w->fd, &ev));
}

/* Takes a pending connect or a stub out; freed once the round is over. */
static void
watch_kill(struct fence_super *s, struct watch *w)
{
	if (w->fd != -1)
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	if (w->type == W_PENDING) {
		if (w->fd != -1)
			close(w->fd);
		s->npending--;
	} else {
		dns_conn_free(((struct stub *)w)->conn);  /* closes w->fd */
		s->nstubs--;
	}
	w->fd = -1;
	w->gone = 1;
	TAILQ_REMOVE(&s->watches, w, entry);
	TAILQ_INSERT_TAIL(&s->graveyard, w, entry);
}

static void
reply(struct fence_super *s, uint64_t id, int err)
{
	struct seccomp_notif_resp	 r;

	memset(&r, 0, sizeof r);
	r.id = id;
	r.error = err == 0 ? 0 : -err;
	if (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_SEND, &r) != 0)
		log_debug("%s: %llu: %s", __func__, (unsigned long long)id,
		    strerror(errno));
}

/*
 * Puts sock (ours; closed here) in place of the job's descriptor.
 * Returns -1 if that failed: the notification is gone (the thread was
 * killed) or has been answered with the error.
 */
static int
inject(struct fence_super *s, uint64_t id, int fd, int sock, int cloexec)
{
	struct seccomp_notif_addfd	 a;
	int				 rc;

	memset(&a, 0, sizeof a);
	a.id = id;
	a.flags = SECCOMP_ADDFD_FLAG_SETFD;
	a.srcfd = (uint32_t)sock;
	a.newfd = (uint32_t)fd;
	a.newfd_flags = cloexec ? O_CLOEXEC : 0;
	rc = ioctl(s->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
	close(sock);
	if (rc >= 0)
		return (0);
	if (errno != ENOENT)	/* EMFILE, say: the thread still waits */
		reply(s, id, errno);
	return (-1);
}

static void
refuse(struct fence_super *s, const struct fence_call *c, const char *what)
{
	s->refused++;
	snprintf(s->last, sizeof s->last, "%s", what);
	log_debug("%s: pid %d fd %d: %s refused", __func__, (int)c->pid, c->fd,
	    what);
	reply(s, c->id, ECONNREFUSED);
}

/* Finishes a connect that completed (err) for a blocking socket. */
static void
finish_blocking(struct fence_super *s, uint64_t id, int fd, int sock,
    int cloexec, int err)
{
	if (err != 0) {
		close(sock);
		reply(s, id, err);
		return;
	}
	fcntl(sock, F_SETFL, 0);	/* blocking, as the job's */
	if (inject(s, id, fd, sock, cloexec) == 0)
		reply(s, id, 0);
}

/* Waits in the loop for a blocking connect, as the job would in connect. */
static void
pend(struct fence_super *s, const struct fence_call *c, int sock,
    int64_t timeout_ms)
{
	struct pending	*p;

	if (s->npending >= SUPER_MAX_PENDING) {
		close(sock);
		reply(s, c->id, EAGAIN);
		return;
	}
	p = xcalloc(1, sizeof *p);
	p->w.type = W_PENDING;
	p->w.fd = sock;
	p->id = c->id;
	p->pid = c->pid;
	p->fd = c->fd;
	p->cloexec = c->cloexec;
	p->domain = c->domain;
	p->type = c->type;
	if (timeout_ms > 0)
		p->deadline = clock_mono_ms() + timeout_ms;
	if (watch_add(s, &p->w, EPOLLOUT) != 0) {
		close(sock);
		free(p);
		reply(s, c->id, errno);
		return;
	}
	TAILQ_INSERT_TAIL(&s->watches, &p->w, entry);
	s->npending++;
	if (p->deadline != 0)
		super_timer_arm(s);
}

static void
pending_ready(struct fence_super *s, struct pending *p)
{
	int	 sock = p->w.fd, err;

	if ((err = fence_out_state(sock, p->domain, p->type)) == EINPROGRESS)
		return;
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, sock, NULL);
	p->w.fd = -1;
	finish_blocking(s, p->id, p->fd, sock, p->cloexec, err);
	watch_kill(s, &p->w);
}

/* Connects our own socket to our copy of the address, then swaps it in. */
static void
connect_out(struct fence_super *s, const struct fence_call *c)
{
	int64_t	 timeout_ms;
	int	 sock, err;

	if ((sock = fence_out_open(c, &timeout_ms)) == -1) {
		reply(s, c->id, errno);
		return;
	}
	s->allowed++;
	if (connect(sock, (const struct sockaddr *)c->addr, c->alen) == 0)
		err = 0;
	else if ((err = errno) != EINPROGRESS) {
		close(sock);
		reply(s, c->id, err);
		return;
	}
	if (c->nonblock) {
		if (inject(s, c->id, c->fd, sock, c->cloexec) == 0)
			reply(s, c->id, err);
		return;
	}
	/* A blocking connect; on loopback it is often done already. */
	if ((err = fence_out_state(sock, c->domain, c->type)) != EINPROGRESS)
		finish_blocking(s, c->id, c->fd, sock, c->cloexec, err);
	else
		pend(s, c, sock, timeout_ms);
}

/* Answers a lookup connect with a socket pair whose far end is the stub. */
static void
connect_stub(struct fence_super *s, const struct fence_call *c, int type)
{
	struct stub	*st;
	int		 sv[2];

	if (s->nstubs >= SUPER_MAX_DNS) {
		reply(s, c->id, EAGAIN);
		return;
	}
	if (socketpair(AF_UNIX, type|SOCK_CLOEXEC, 0, sv) != 0) {
		reply(s, c->id, errno);
		return;
	}
	set_nonblock(sv[0]);
	if (c->nonblock)
		set_nonblock(sv[1]);
	st = xcalloc(1, sizeof *st);
	st->w.type = W_DNS;
	st->w.fd = sv[0];
	st->conn = dns_conn_create(sv[0], type == SOCK_STREAM);
	st->events = EPOLLIN;
	watch_add(s, &st->w, st->events);
	TAILQ_INSERT_TAIL(&s->watches, &st->w, entry);
	s->nstubs++;
	if (inject(s, c->id, c->fd, sv[1], c->cloexec) == 0)
		reply(s, c->id, 0);
}

/*
 * Whether the TCP socket ino listens on port now: a port the job bound
 * and let go may since be a host service's.
 */
static int
port_listening(ino_t ino, uint16_t port)
{
	static const char	*files[] = {
		"/proc/net/tcp", "/proc/net/tcp6"
	};
	char			 line[512];
	FILE			*f;
	u_int			 i, lport, st;
	u_long			 inode;
	int			 found = 0;

	for (i = 0; i < nitems(files) && !found; i++) {
		if ((f = fopen(files[i], "re")) == NULL)
			continue;
		while (!found && fgets(line, sizeof line, f) != NULL) {
			if (sscanf(line, "%*s %*[0-9A-Fa-f]:%x %*s %x %*s %*s "
			    "%*s %*s %*s %lu", &lport, &st, &inode) != 3)
				continue;
			found = inode == (u_long)ino && lport == port &&
			    st == 0x0a;		/* TCP_LISTEN */
		}
		fclose(f);
	}
	return (found);
}

/*
 * Whether a loopback address (or the unspecified one) is one the job
 * bound: the same address, or a wildcard of its family (an IPv6 one
 * covers IPv4 unless IPV6_V6ONLY), and the socket listens still.
 */
static int
own_port(const struct fence_super *s, int family, const u_char *addr,
    uint16_t port)
{
	static const u_char	 zero[16];
	const struct port	*p;
	u_int			 i, len = family == AF_INET ? 4 : 16;
	int			 any, covers;

	for (i = 0; i < s->nports; i++) {
		p = &s->ports[i];
		if (p->port != port)
			continue;
		any = memcmp(p->addr, zero, p->family == AF_INET ? 4 : 16) == 0;
		if (any)
			covers = p->family == family ||
			    (p->family == AF_INET6 && !p->v6only);
		else if (memcmp(addr, zero, len) == 0)
			covers = 0;	/* the kernel picks: only a wildcard */
		else
			covers = p->family == family &&
			    memcmp(p->addr, addr, len) == 0;
		if (covers && port_listening(p->ino, port))
			return (1);
	}
	return (0);
}

/* Remembers the TCP address a jailed job's socket was just bound to. */
static void
note_port(struct fence_super *s, const struct fence_call *c)
{
	struct fence_call	 b;
	struct port		 p;
	struct stat		 st;
	socklen_t		 len = sizeof b.addr;
	int			 on = 0;

	if (c->type != SOCK_STREAM)
		return;
	memset(&b, 0, sizeof b);
	memset(&p, 0, sizeof p);
	if (getsockname(c->sock, (struct sockaddr *)b.addr, &len) != 0 ||
	    fstat(c->sock, &st) != 0)
		return;
	b.alen = len;
	if (fence_out_target(&b, &p.family, p.addr, &p.port) != 0)
		return;
	/* SO_REUSEPORT could share a port with a host service. */
	len = sizeof on;
	if (getsockopt(c->sock, SOL_SOCKET, SO_REUSEPORT, &on, &len) == 0 &&
	    on) {
		log_debug("%s: port %u: SO_REUSEPORT, not the job's own",
		    __func__, p.port);
		return;
	}
	len = sizeof on;
	if (c->domain == AF_INET6 && getsockopt(c->sock, IPPROTO_IPV6,
	    IPV6_V6ONLY, &on, &len) == 0)
		p.v6only = on;
	p.ino = st.st_ino;
	if (s->nports == SUPER_MAX_PORTS) {
		memmove(s->ports, s->ports + 1,
		    (SUPER_MAX_PORTS - 1) * sizeof *s->ports);
		s->nports--;
	}
	s->ports = xreallocarray(s->ports, s->nports + 1, sizeof *s->ports);
	s->ports[s->nports++] = p;
	log_debug("%s: pid %d fd %d: port %u", __func__, (int)c->pid, c->fd,
	    p.port);
}

static void
connect_inet(struct fence_super *s, const struct fence_call *c)
{
	char		 a[INET6_ADDRSTRLEN], what[96];
	u_char		 addr[16];
	uint16_t	 port;
	int		 family, ok, err;

	if (fence_out_target(c, &family, addr, &port) != 0) {
		reply(s, c->id, EINVAL);
		return;
	}
	inet_ntop(family, addr, a, sizeof a);
	snprintf(what, sizeof what, family == AF_INET6 ? "[%s]:%u" : "%s:%u",
	    a, port);
	if (c->domain == AF_UNIX) {	/* our stand-in for a UDP socket */
		if (c->type != SOCK_SEQPACKET)
			reply(s, c->id, EINVAL);
		else if (port == 53)
			connect_stub(s, c, SOCK_SEQPACKET);
		else
			refuse(s, c, what);
		return;
	}
	ok = s->policy->open || (!s->policy->deny_net &&
	    (fence_match_addr(s->policy, family, addr, port) != -1 ||
	    fence_names_allows(s->names, family, addr, port)));
	/*
	 * A jailed job's TCP to the host's loopback: only to what it bound
	 * itself, whatever its fence (its client allowed, not the host's
	 * operator).  The host's resolver (127.0.0.53) stays as it was.
	 */
	if (ok && (s->flags & FENCE_SUPER_NOLOOP) && c->type == SOCK_STREAM &&
	    port != 53 && fence_loopback(family, addr) &&
	    !own_port(s, family, addr, port)) {
		ok = 0;
		if (s->loop_refused++ == 0)
			snprintf(s->loop_first, sizeof s->loop_first, "%s",
			    what);
	}
	if (!ok && port == 53 && c->type == SOCK_STREAM)
		connect_stub(s, c, SOCK_STREAM);
	else if (!ok)
		refuse(s, c, what);
	else if ((err = fence_out_busy(c)) != 0)
		reply(s, c->id, err);
	else {
		log_debug("%s: pid %d fd %d: %s", __func__, (int)c->pid, c->fd,
		    what);
		connect_out(s, c);
	}
}

static void
connect_unix(struct fence_super *s, const struct fence_call *c)
{
	const char	*path = (const char *)c->addr + 2;
	char		 what[128];
	int		 sock, refused, err;

	err = fence_unix_connect(s->local, c, &sock, &refused);
	if (refused) {
		snprintf(what, sizeof what, "unix:%s%.*s", *path ? "" : "@",
		    (int)(c->alen > 3 ? c->alen - 3 : 0), path + !*path);
		refuse(s, c, what);
		return;
	}
	if (err != 0) {
		reply(s, c->id, err);
		return;
	}
	if (!c->nonblock)
		fcntl(sock, F_SETFL, 0);	/* blocking, as the job's */
	s->allowed++;
	if (inject(s, c->id, c->fd, sock, c->cloexec) == 0)
		reply(s, c->id, 0);
}

static void
do_connect(struct fence_super *s, const struct fence_call *c)
{
	const struct sockaddr	*sa = (const void *)c->addr;

	if (sa->sa_family == AF_UNSPEC) {	/* a disconnect: harmless */
		reply(s, c->id, connect(c->sock, sa, c->alen) == 0 ? 0 : errno);
		return;
	}
	if (sa->sa_family == AF_UNIX && c->domain == AF_UNIX)
		connect_unix(s, c);
	else if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6)
		connect_inet(s, c);
	else
		reply(s, c->id, EAFNOSUPPORT);
}

/*
 * A jailed job's AF_UNIX bind goes on as the job's own call: Landlock holds
 * it to the job's directories (we, outside the jail, would bind anywhere).
 * No decision rests on it: should the job swap in another socket first,
 * that one binds unrecorded, and only the job's own connects suffer.
 */
static void
bind_continue(struct fence_super *s, uint64_t id)
{
	struct seccomp_notif_resp	 r;

	memset(&r, 0, sizeof r);
	r.id = id;
	r.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	if (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_SEND, &r) != 0)
		log_debug("%s: %llu: %s", __func__, (unsigned long long)id,
		    strerror(errno));
}

/*
 * Binds the job's socket (our duplicate) for it; a jailed job's TCP
 * address is remembered, for its loopback connects.
 */
static void
do_bind(struct fence_super *s, const struct fence_call *c)
{
	const struct sockaddr	*sa = (const void *)c->addr;
	int			 err;

	if (c->domain == AF_UNIX && (s->flags & FENCE_SUPER_JAIL)) {
		bind_continue(s, c->id);
		return;
	}
	if (sa->sa_family == AF_UNIX && c->domain == AF_UNIX)
		err = fence_unix_bind(s->local, c);
	else if (bind(c->sock, sa, c->alen) == 0) {
		err = 0;
		if (s->flags & FENCE_SUPER_NOLOOP)
			note_port(s, c);
	} else
		err = errno;
	reply(s, c->id, err);
}

/*
 * A jailed job's calls on modes and owners (the filter sends them here
 * only for a jailed job): where each keeps its arguments.
 */
static const struct meta_call {
	long		 nr;
	int		 path;		/* -1: none, the descriptor itself */
	int		 dir;		/* -1: the thread's working directory */
	int		 mode;		/* -1: a chown */
	int		 owner;		/* the uid, the gid next; -1: a chmod */
	int		 flags;		/* AT_* flags; -1: none */
	int		 nofollow;	/* lchown() */
} meta_calls[] = {
#ifdef SYS_chmod
	{ SYS_chmod, 0, -1, 1, -1, -1, 0 },
	{ SYS_chown, 0, -1, -1, 1, -1, 0 },
	{ SYS_lchown, 0, -1, -1, 1, -1, 1 },
#endif
	{ SYS_fchmodat, 1, 0, 2, -1, -1, 0 },
	{ FENCE_SYS_FCHMODAT2, 1, 0, 2, -1, 3, 0 },
	{ SYS_fchownat, 1, 0, -1, 2, 4, 0 },
	{ SYS_fchmod, -1, 0, 1, -1, -1, 0 },
	{ SYS_fchown, -1, 0, -1, 1, -1, 0 },
};

static const struct meta_call *
meta_find(long nr)
{
	u_int	 i;

	for (i = 0; i < nitems(meta_calls); i++) {
		if (meta_calls[i].nr == nr)
			return (&meta_calls[i]);
	}
	return (NULL);
}

/* Answers a chmod() or chown(): done within the job's own directories. */
static void
do_meta(struct fence_super *s, const struct meta_call *m, uint64_t id,
    pid_t pid, const uint64_t *args)
{
	char	 path[PATH_MAX];
	int	 dirfd, rc, flags = 0, at;

	at = m->flags == -1 ? 0 : (int)args[m->flags];
	rc = fence_call_path(s->tasks, s->listener, id, pid, args, m->path,
	    m->dir, path, &dirfd);
	if (rc == -1)
		goto out;
	if (rc == 0) {
		if (m->nofollow || (at & AT_SYMLINK_NOFOLLOW))
			flags |= FENCE_META_NOFOLLOW;
		if ((at & AT_EMPTY_PATH) || m->path == -1)
			flags |= FENCE_META_EMPTY;
		rc = fence_unix_meta(s->local, pid, dirfd, path, m->mode == -1 ?
		    -1 : (int)args[m->mode], m->owner == -1 ? (uid_t)-1 :
		    (uid_t)args[m->owner], m->owner == -1 ? (gid_t)-1 :
		    (gid_t)args[m->owner + 1], flags);
	}
	if (rc == EPERM) {
		s->refused++;
		snprintf(s->last, sizeof s->last, "%s:%.*s", m->mode == -1 ?
		    "chown" : "chmod", (int)sizeof s->last - 7, path);
	}
	reply(s, id, rc);
out:
	if (dirfd != -1)
		close(dirfd);
}

static void
super_notified(struct fence_super *s)
{
	struct seccomp_notif	 req;
	struct fence_call	 c;
	const struct meta_call	*m;
	uint64_t		 args[6];
	int			 rc, i;

	memset(&req, 0, sizeof req);
	if (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0)
		return;		/* ENOENT: the thread is gone already */
	for (i = 0; i < 6; i++)
		args[i] = req.data.args[i];
	if (req.data.nr == SYS_socket) {
		if ((rc = fence_call_udp(s->listener, req.id, args)) != 0)
			reply(s, req.id, rc);
		return;
	}
	if ((m = meta_find(req.data.nr)) != NULL) {
		do_meta(s, m, req.id, (pid_t)req.pid, args);
		return;
	}
	if (req.data.nr != SYS_connect && req.data.nr != SYS_bind) {
		reply(s, req.id, ENOSYS);
		return;
	}
	rc = fence_call_read(s->tasks, s->listener, req.id, (pid_t)req.pid,
	    args, &c);
	if (rc == 0 && req.data.nr == SYS_connect)
		do_connect(s, &c);
	else if (rc == 0)
		do_bind(s, &c);
	else if (rc == ECONNREFUSED)
		refuse(s, &c, "unreadable address or socket");
	else if (rc > 0)
		reply(s, req.id, rc);
	if (c.sock != -1)
		close(c.sock);
}

/* The stub's lookups go to the names table; counted for the stats. */
static int
super_lookup(const char *name, struct dns_rr *rr, u_int max, void *arg)
{
	struct fence_super	*s = arg;

	s->lookups++;
	return (fence_names_lookup(name, rr, max, s->names));
}

static void
super_stub(struct fence_super *s, struct stub *st, uint32_t events)
{
	struct epoll_event	 ev;
	uint32_t		 want;

	if (events & EPOLLIN) {
		if (dns_conn_read(st->conn, super_lookup, s) != 0)
			goto gone;
	} else if (events & (EPOLLHUP|EPOLLERR))
		goto gone;
	if ((events & EPOLLOUT) && dns_conn_write(st->conn) != 0)
		goto gone;
	want = EPOLLIN | (dns_conn_pending(st->conn) ? EPOLLOUT : 0);
	if (want != st->events) {
		memset(&ev, 0, sizeof ev);
		ev.events = st->events = want;
		ev.data.ptr = &st->w;
		epoll_ctl(s->epfd, EPOLL_CTL_MOD, st->w.fd, &ev);
	}
	return;
gone:
	watch_kill(s, &st->w);
}

static void
super_timer_arm(struct fence_super *s)
{
	struct itimerspec	 its;
	struct watch		*w;
	struct pending		*p;
	int64_t			 next = 0, left;

	TAILQ_FOREACH(w, &s->watches, entry) {
		p = (struct pending *)w;
		if (w->type == W_PENDING && p->deadline != 0 &&
		    (next == 0 || p->deadline < next))
			next = p->deadline;
	}
	memset(&its, 0, sizeof its);
	if (next != 0) {
		left = next - clock_mono_ms();
		if (left < 1)
			left = 1;
		its.it_value.tv_sec = left / 1000;
		its.it_value.tv_nsec = (left % 1000) * 1000000;
	}
	timerfd_settime(s->wt.fd, 0, &its, NULL);
}

/*
 * A blocking connect past the socket's SO_SNDTIMEO: the job gets the
 * socket, still connecting, and EINPROGRESS, as the kernel would do.
 */
static void
super_timeout(struct fence_super *s)
{
	struct watch	*w, *w1;
	struct pending	*p;
	uint64_t	 ticks;
	int64_t		 now = clock_mono_ms();
	int		 sock;

	if (read(s->wt.fd, &ticks, sizeof ticks) < 0 && errno != EAGAIN)
		log_debug("%s: %s", __func__, strerror(errno));
	for (w = TAILQ_FIRST(&s->watches); w != NULL; w = w1) {
		w1 = TAILQ_NEXT(w, entry);
		p = (struct pending *)w;
		if (w->type != W_PENDING || p->deadline == 0 ||
		    p->deadline > now)
			continue;
		sock = p->w.fd;
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, sock, NULL);
		p->w.fd = -1;
		fcntl(sock, F_SETFL, 0);	/* blocking, as the job's */
		if (inject(s, p->id, p->fd, sock, p->cloexec) == 0)
			reply(s, p->id, EINPROGRESS);
		watch_kill(s, w);
	}
	super_timer_arm(s);
}

/* The epoll set's events: stubs, connects in flight, resolver, timer. */
static void
super_events(struct fence_super *s)
{
	struct epoll_event	 ev[32];
	struct watch		*w;
	int			 n, i;

	n = epoll_wait(s->epfd, ev, nitems(ev), 0);
	for (i = 0; i < n; i++) {
		w = ev[i].data.ptr;
		if (w->gone)
			continue;
		switch (w->type) {
		case W_NAMES:
			fence_names_collect(s->names);
			break;
		case W_TIMER:
			super_timeout(s);
			break;
		case W_DNS:
			super_stub(s, (struct stub *)w, ev[i].events);
			break;
		case W_PENDING:
			pending_ready(s, (struct pending *)w);
			break;
		}
	}
	while ((w = TAILQ_FIRST(&s->graveyard)) != NULL) {
		TAILQ_REMOVE(&s->graveyard, w, entry);
		free(w);
	}
}

/*
 * Fills pfd (room for FENCE_POLLFDS) with the descriptors to poll for
 * reading and returns how many.  The listener is polled directly, not
 * through the epoll set: the kernel's same-CPU wake-up (which saves most
 * of a connect's cost in a VM) does not cross an epoll.
 */
u_int
fence_super_pollfds(const struct fence_super *s, struct pollfd *pfd)
{
	pfd[0].fd = s->done ? -1 : s->listener;
	pfd[0].events = POLLIN;
	pfd[0].revents = 0;
	pfd[1].fd = s->epfd;
	pfd[1].events = POLLIN;
	pfd[1].revents = 0;
	return (FENCE_POLLFDS);
}

/* Handles what poll() found on the descriptors fence_super_pollfds gave. */
void
fence_super_dispatch(struct fence_super *s, const struct pollfd *pfd,
    u_int n)
{
	u_int	 i;

	for (i = 0; i < n; i++) {
		if (pfd[i].fd == -1 || pfd[i].revents == 0)
			continue;
		if (pfd[i].fd == s->epfd)
			super_events(s);
		else if (pfd[i].fd != s->listener)
			continue;
		else if (pfd[i].revents & POLLIN)
			super_notified(s);
		else
			s->done = 1;	/* POLLHUP: no task left */
	}
}

/*
 * Returns the supervisor of a job's listener (which it now owns), or NULL
 * with a cause.  policy and names stay the caller's and must outlive it.
 * dirs (NULL-ended, or NULL) are more directories than workdir whose
 * sockets the job may connect to.  flags are FENCE_SUPER_*.
 */
struct fence_super *
fence_super_create(const struct fence *policy, struct fence_names *names,
    const char *workdir, char *const *dirs, int listener, int flags,
    char **cause)
{
	struct fence_super	*s;

	s = xcalloc(1, sizeof *s);
	s->tasks = fence_tasks_create();
	s->flags = flags;
	s->policy = policy;
	s->names = names;
	s->listener = listener;
	TAILQ_INIT(&s->watches);
	TAILQ_INIT(&s->graveyard);
	s->wn.type = W_NAMES;
	s->wt.type = W_TIMER;
	s->wt.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK|TFD_CLOEXEC);
	if ((s->epfd = epoll_create1(EPOLL_CLOEXEC)) == -1 || s->wt.fd == -1 ||
	    watch_add(s, &s->wt, EPOLLIN) != 0) {
		xasprintf(cause, "epoll: %s", strerror(errno));
		goto fail;
	}
	if (fence_names_start(names, cause) != 0)
		goto fail;
	s->wn.fd = fence_names_fd(names);
	if (s->wn.fd != -1 && watch_add(s, &s->wn, EPOLLIN) != 0) {
		xasprintf(cause, "epoll: %s", strerror(errno));
		goto fail;
	}
	s->local = fence_unix_create(workdir, dirs, policy,
	    (flags & FENCE_SUPER_JAIL) ? FENCE_UNIX_OWNDIRS : 0);
	/*
	 * The job waits while we work and we wait while it runs: waking
	 * each other on the same CPU saves an inter-processor interrupt
	 * per hand-over, which is most of a connect's cost in a VM.
	 */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
	    SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) != 0)
		log_debug("%s: no synchronous wake-up: %s", __func__,
		    strerror(errno));
	return (s);
fail:
	fence_super_free(s);
	return (NULL);
}

/*
 * Whether every task the filter was on has exited (children, grandchildren
 * and double-forked daemons included): the listener hung up.
 */
int
fence_super_done(const struct fence_super *s)
{
	return (s->done);
}

void
fence_super_counts(const struct fence_super *s, uint64_t *refused,
    uint64_t *allowed, uint64_t *lookups)
{
	*refused = s->refused;
	*allowed = s->allowed;
	*lookups = s->lookups;
}

/*
 * How many connects went to the host's loopback and were refused for it
 * (FENCE_SUPER_NOLOOP), and *first the first of them.
 */
uint64_t
fence_super_loopback_refused(const struct fence_super *s,
    const char **first)
{
	*first = s->loop_first;
	return (s->loop_refused);
}

/* The last refused destination ("1.2.3.4:443", "unix:/run/x"), or "". */
const char *
fence_super_last_refused(const struct fence_super *s)
{
	return (s->last);
}

/*
 * Frees the supervisor and closes the listener: from then on the job's
 * connects fail with ENOSYS (the kernel's answer when no one listens).
 */
void
fence_super_free(struct fence_super *s)
{
	struct watch	*w;

	if (s == NULL)
		return;
	while ((w = TAILQ_FIRST(&s->watches)) != NULL)
		watch_kill(s, w);
	while ((w = TAILQ_FIRST(&s->graveyard)) != NULL) {
		TAILQ_REMOVE(&s->graveyard, w, entry);
		free(w);
	}
	if (s->epfd != -1)
		close(s->epfd);
	if (s->wt.fd != -1)
		close(s->wt.fd);
	close(s->listener);
	fence_tasks_free(s->tasks);
	fence_unix_free(s->local);
	free(s->ports);
	free(s);
}
