/*
 * fence-call.c: a notified call read out of the job, for the supervisor:
 * the address, copied once into our memory, and the job's socket, a
 * duplicate through pidfd_getfd(), with the descriptor's flags; or the
 * path a chmod() or chown() names.  Also the stand-in for a UDP socket().
 */

#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "fence-int.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD	O_EXCL
#endif

#define TASKS		32
#define TASK_FDS	8

/*
 * A job thread's pidfd and /proc/TID/fdinfo, kept across its connects: a
 * pidfd names one task for good, so a stale entry (the thread gone, its
 * number reused) fails with ESRCH and is opened again.  Opening an fdinfo
 * file costs some 20 us in a VM, reading one again 2: the files of the
 * last few descriptor numbers stay open (a read tells of whatever file has
 * the number now).
 */
struct task {
	pid_t		 tid;
	int		 pidfd;
	int		 fdinfo;
	uint64_t	 used;
	struct {
		int	 fd;
		int	 file;
	}		 fds[TASK_FDS];
	u_int		 next;
};

struct fence_tasks {
	struct task	 t[TASKS];
	uint64_t	 clock;
};

static void
task_close(struct task *t)
{
	u_int	 i;

	if (t->pidfd != -1)
		close(t->pidfd);
	if (t->fdinfo != -1)
		close(t->fdinfo);
	for (i = 0; i < TASK_FDS; i++) {
		if (t->fds[i].file != -1)
			close(t->fds[i].file);
		t->fds[i].file = -1;
	}
	t->pidfd = t->fdinfo = -1;
	t->tid = 0;
}

/* Returns an empty cache; the caller frees it with fence_tasks_free(). */
struct fence_tasks *
fence_tasks_create(void)
{
	struct fence_tasks	*ft;
	u_int			 i, j;

	ft = xcalloc(1, sizeof *ft);
	for (i = 0; i < TASKS; i++) {
		ft->t[i].pidfd = ft->t[i].fdinfo = -1;
		for (j = 0; j < TASK_FDS; j++)
			ft->t[i].fds[j].file = -1;
	}
	return (ft);
}

void
fence_tasks_free(struct fence_tasks *ft)
{
	u_int	 i;

	if (ft == NULL)
		return;
	for (i = 0; i < TASKS; i++)
		task_close(&ft->t[i]);
	free(ft);
}

/* Returns the cache entry for tid, opened afresh if fresh is set. */
static struct task *
task_get(struct fence_tasks *ft, pid_t tid, int fresh)
{
	struct task	*t, *lru = &ft->t[0];
	char		 p[64];

	for (t = ft->t; t < ft->t + TASKS; t++) {
		if (t->tid == tid)
			break;
		if (t->used < lru->used)
			lru = t;
	}
	if (t == ft->t + TASKS || fresh) {
		if (t == ft->t + TASKS)
			t = lru;
		task_close(t);
		t->pidfd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);
		if (t->pidfd == -1 && errno == EINVAL)
			t->pidfd = (int)syscall(SYS_pidfd_open, tid, 0);
		snprintf(p, sizeof p, "/proc/%d/fdinfo", (int)tid);
		t->fdinfo = open(p, O_RDONLY|O_DIRECTORY|O_CLOEXEC);
		t->tid = tid;
	}
	t->used = ++ft->clock;
	return (t);
}

static int
fdinfo_flags(int file)
{
	char	 buf[512], *f;
	ssize_t	 n;

	if ((n = pread(file, buf, sizeof buf - 1, 0)) <= 0)
		return (-1);
	buf[n] = '\0';
	if ((f = strstr(buf, "flags:")) == NULL)
		return (-1);
	return ((int)strtoul(f + 6, NULL, 8));
}

/* The file flags of the job's descriptor (O_CLOEXEC among them), or -1. */
static int
job_fdflags(struct task *t, int fd)
{
	char	 name[16];
	u_int	 i;
	int	 flags;

	for (i = 0; i < TASK_FDS; i++) {
		if (t->fds[i].file != -1 && t->fds[i].fd == fd &&
		    (flags = fdinfo_flags(t->fds[i].file)) != -1)
			return (flags);
	}
	i = t->next++ % TASK_FDS;
	if (t->fds[i].file != -1)
		close(t->fds[i].file);
	snprintf(name, sizeof name, "%d", fd);
	t->fds[i].fd = fd;
	t->fds[i].file = openat(t->fdinfo, name, O_RDONLY|O_CLOEXEC);
	return (t->fds[i].file == -1 ? -1 : fdinfo_flags(t->fds[i].file));
}

/*
 * Reads what a notified connect() or bind() (args: fd, address, length)
 * asked.  The notification is checked to be still pending after both
 * reads, so the thread they came from was the one waiting, alive all
 * along, and its number not yet anyone else's.  Returns 0, an errno to
 * answer with, or -1 when the notification is gone.  c->sock, when not
 * -1, is the caller's to close.
 */
int
fence_call_read(struct fence_tasks *ft, int listener, uint64_t id,
    pid_t pid, const uint64_t *args, struct fence_call *c)
{
	struct iovec	 local, remote;
	struct tcp_info	 ti;
	struct task	*t;
	socklen_t	 len = sizeof (int), tlen = sizeof ti;
	int		 alen = (int)args[2], err = 0, flags;

	memset(c, 0, sizeof *c);
	c->id = id;
	c->pid = pid;
	c->fd = (int)args[0];
	c->sock = -1;
	if (alen < 2 || (size_t)alen > sizeof c->addr)
		return (EINVAL);
	c->alen = (u_int)alen;
	t = task_get(ft, c->pid, 0);
	local.iov_base = c->addr;
	local.iov_len = c->alen;
	remote.iov_base = (void *)(uintptr_t)args[1];
	remote.iov_len = c->alen;
	if (process_vm_readv(c->pid, &local, 1, &remote, 1, 0) != alen)
		err = errno == EFAULT ? EFAULT : ECONNREFUSED;
	if (err == 0 && t->pidfd != -1)
		c->sock = (int)syscall(SYS_pidfd_getfd, t->pidfd, c->fd, 0);
	if (err == 0 && c->sock == -1 && errno != EBADF) {  /* stale entry */
		t = task_get(ft, c->pid, 1);
		c->sock = (int)syscall(SYS_pidfd_getfd, t->pidfd, c->fd, 0);
	}
	if (err == 0 && c->sock == -1)
		err = errno == EBADF ? EBADF : ECONNREFUSED;
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &c->id) != 0)
		return (-1);
	if (err != 0)
		return (err);
	if (getsockopt(c->sock, SOL_SOCKET, SO_DOMAIN, &c->domain, &len) != 0)
		return (errno == ENOTSOCK ? ENOTSOCK : EBADF);
	c->tcp_state = -1;	/* one call tells TCP's type and state */
	if (c->domain != AF_UNIX && getsockopt(c->sock, IPPROTO_TCP,
	    TCP_INFO, &ti, &tlen) == 0) {
		c->type = SOCK_STREAM;
		c->tcp_state = ti.tcpi_state;
	} else if (getsockopt(c->sock, SOL_SOCKET, SO_TYPE, &c->type,
	    &len) != 0)
		return (EBADF);
	if ((flags = job_fdflags(t, c->fd)) == -1)	/* not likely */
		flags = fcntl(c->sock, F_GETFL) | O_CLOEXEC;
	c->nonblock = (flags & O_NONBLOCK) != 0;
	c->cloexec = (flags & O_CLOEXEC) != 0;
	return (0);
}

/*
 * Copies a NUL-terminated string of the job's (at most size bytes with the
 * NUL) into buf, a page at a time: process_vm_readv() stops at the first
 * page that is not mapped.  Returns 0 or an errno.
 */
static int
read_string(pid_t pid, uint64_t addr, char *buf, size_t size)
{
	struct iovec	 local, remote;
	size_t		 got = 0, want;
	ssize_t		 n;

	while (got < size) {
		want = 4096 - ((addr + got) & 4095);
		if (want > size - got)
			want = size - got;
		local.iov_base = buf + got;
		local.iov_len = want;
		remote.iov_base = (void *)(uintptr_t)(addr + got);
		remote.iov_len = want;
		if ((n = process_vm_readv(pid, &local, 1, &remote, 1, 0)) <= 0)
			return (EFAULT);
		if (memchr(buf + got, '\0', (size_t)n) != NULL)
			return (0);
		got += (size_t)n;
	}
	return (ENAMETOOLONG);
}

/*
 * Reads what a notified call on a path asked: the path (argument patharg;
 * -1: none, "", as for fchmod()) into path (PATH_MAX bytes), and in *dirfd
 * the directory it is relative to, ours: a duplicate of the job's
 * descriptor (argument dirarg), or the thread's working directory if dirarg
 * is -1 or holds AT_FDCWD.  Checked as fence_call_read() does.  Returns 0,
 * an errno to answer with, or -1 when the notification is gone; *dirfd,
 * when not -1, is the caller's to close.
 */
int
fence_call_path(struct fence_tasks *ft, int listener, uint64_t id, pid_t pid,
    const uint64_t *args, int patharg, int dirarg, char *path, int *dirfd)
{
	struct task	*t;
	char		 p[64];
	int		 err, fd = dirarg == -1 ? AT_FDCWD : (int)args[dirarg];

	*dirfd = -1;
	if (patharg == -1) {
		*path = '\0';
		err = 0;
	} else
		err = read_string(pid, args[patharg], path, PATH_MAX);
	if (err == 0 && fd == AT_FDCWD) {
		snprintf(p, sizeof p, "/proc/%d/cwd", (int)pid);
		if ((*dirfd = open(p, O_PATH|O_DIRECTORY|O_CLOEXEC)) == -1)
			err = EACCES;
	} else if (err == 0) {
		t = task_get(ft, pid, 0);
		*dirfd = (int)syscall(SYS_pidfd_getfd, t->pidfd, fd, 0);
		if (*dirfd == -1 && errno != EBADF) {	/* stale entry */
			t = task_get(ft, pid, 1);
			*dirfd = (int)syscall(SYS_pidfd_getfd, t->pidfd, fd, 0);
		}
		if (*dirfd == -1)
			err = EBADF;
	}
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) != 0)
		return (-1);
	return (err);
}

/*
 * Answers a UDP socket() (args: domain, type, protocol) with an unconnected
 * AF_UNIX SOCK_SEQPACKET socket in its place: it keeps datagram
 * boundaries, ignores sendmsg() addresses and reaches nothing until a
 * connect() to port 53 makes it the DNS stub's.  A real UDP socket could
 * send anywhere with sendmsg(), whose address no filter can see.  Returns
 * 0 when answered (the call returns the new descriptor) or an errno to
 * answer with.
 */
int
fence_call_udp(int listener, uint64_t id, const uint64_t *args)
{
	struct seccomp_notif_addfd	 a;
	int				 domain = (int)args[0];
	int				 type = (int)args[1];
	int				 proto = (int)args[2], sock, err = 0;

	if ((domain != AF_INET && domain != AF_INET6) ||
	    (type & 0xf) != SOCK_DGRAM || (proto != 0 && proto != IPPROTO_UDP))
		return (EPERM);
	sock = socket(AF_UNIX, SOCK_SEQPACKET|SOCK_CLOEXEC|
	    (type & SOCK_NONBLOCK), 0);
	if (sock == -1)
		return (errno);
	memset(&a, 0, sizeof a);
	a.id = id;
	a.flags = SECCOMP_ADDFD_FLAG_SEND;
	a.srcfd = (uint32_t)sock;
	a.newfd_flags = (type & SOCK_CLOEXEC) ? O_CLOEXEC : 0;
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a) < 0 &&
	    errno != ENOENT)
		err = errno;
	close(sock);
	return (err);
}
