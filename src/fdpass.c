/*
 * fdpass.c: a message and a descriptor with it (SCM_RIGHTS) over a Unix
 * socket.  Only the C library: gmux-fence-exec (shim/fence-exec.c), linked
 * alone and statically, is built with it too.
 */

#include <sys/socket.h>

#include <errno.h>
#include <string.h>

#include "gmux.h"

/*
 * Sends len bytes of data over sock, with fd (-1: none).  Returns what
 * sendmsg() did: the bytes sent, or -1.
 */
ssize_t
fdpass_send(int sock, const void *data, size_t len, int fd)
{
	struct msghdr	 m;
	struct iovec	 iov;
	struct cmsghdr	*cm;
	union {
		char		 buf[CMSG_SPACE(sizeof (int))];
		struct cmsghdr	 align;
	} u;

	memset(&m, 0, sizeof m);
	memset(&u, 0, sizeof u);
	iov.iov_base = (void *)data;
	iov.iov_len = len;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	if (fd != -1) {
		m.msg_control = u.buf;
		m.msg_controllen = sizeof u.buf;
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof (int));
		memcpy(CMSG_DATA(cm), &fd, sizeof fd);
	}
	return (sendmsg(sock, &m, MSG_NOSIGNAL));
}

/*
 * Receives a message of up to size bytes into data from sock, and the
 * descriptor that came with it into *fd (close-on-exec; -1: none).
 * Returns its length (0 at the end), or -1 (EMSGSIZE: it was cut).
 */
ssize_t
fdpass_recv(int sock, void *data, size_t size, int *fd)
{
	struct msghdr	 m;
	struct iovec	 iov;
	struct cmsghdr	*cm;
	ssize_t		 n;
	union {
		char		 buf[CMSG_SPACE(sizeof (int))];
		struct cmsghdr	 align;
	} u;

	memset(&m, 0, sizeof m);
	iov.iov_base = data;
	iov.iov_len = size;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.buf;
	m.msg_controllen = sizeof u.buf;
	*fd = -1;
	while ((n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) == -1) {
		if (errno != EINTR)
			return (-1);
	}
	cm = CMSG_FIRSTHDR(&m);
	if (n >= 0 && cm != NULL && cm->cmsg_level == SOL_SOCKET &&
	    cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof *fd))
		memcpy(fd, CMSG_DATA(cm), sizeof *fd);
	if (m.msg_flags & (MSG_TRUNC|MSG_CTRUNC)) {
		errno = EMSGSIZE;
		return (-1);
	}
	return (n);
}
