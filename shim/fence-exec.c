/*
 * fence-exec.c: gmux-fence-exec, the first program of a fenced container
 * (docs/containers.md).  The job's keeper outside cannot install its
 * seccomp filter in podman (podman, conmon and runc would run under it),
 * so this program, mounted read-only into the container and linked
 * statically (an image may have no C library), installs it as the
 * container's first process and hands the listener back; every process
 * of the container descends from it, so the filter covers them all.
 *
 *	gmux-fence-exec CMD ARGS...
 *
 * Descriptor 3 is a SOCK_SEQPACKET socket to the keeper: one message
 * with the filter (struct sock_filter instructions) and, where the kernel
 * has Landlock's network rules, the backstop's ruleset (SCM_RIGHTS).
 * This program enters the ruleset (where the container's own seccomp
 * profile lets it), installs the filter, sends the listener back with one
 * byte (FENCE_IN_LANDLOCK: it entered the ruleset) and execs CMD in the
 * container's PATH.  It never execs CMD unfenced: any failure exits 126
 * with a line on stderr (127 for a command not found).
 */

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define FENCE_SOCK	3
#define FENCE_IN_LANDLOCK 0x1	/* as src/fence-int.h has it */

static void
fail(const char *what, int code)
{
	fprintf(stderr, "gmux: fence: %s: %s\n", what, strerror(errno));
	_exit(code);
}

/*
 * Receives the filter into insns (its length in instructions, 0 on
 * failure) and the ruleset into *ruleset (-1: none).
 */
static unsigned short
recv_filter(struct sock_filter *insns, size_t size, int *ruleset)
{
	ssize_t	 n;

	n = fdpass_recv(FENCE_SOCK, insns, size, ruleset);
	if (n <= 0 || n % (ssize_t)sizeof *insns != 0) {
		if (n >= 0)
			errno = EPROTO;
		return (0);
	}
	return ((unsigned short)(n / (ssize_t)sizeof *insns));
}

int
main(int argc, char **argv)
{
	static struct sock_filter	 insns[BPF_MAXINSNS];
	struct sock_fprog		 prog;
	int				 lfd, ruleset;
	char				 c = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: gmux-fence-exec CMD [ARGS...]\n");
		return (2);
	}
	if ((prog.len = recv_filter(insns, sizeof insns, &ruleset)) == 0)
		fail("no filter from the keeper", 126);
	prog.filter = insns;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		fail("no_new_privs", 126);
	/* The backstop: the filter alone holds where a profile refuses it. */
	if (ruleset != -1 && syscall(SYS_landlock_restrict_self, ruleset,
	    0) == 0)
		c |= FENCE_IN_LANDLOCK;
	if (ruleset != -1)
		close(ruleset);
	if ((lfd = fence_install(&prog)) == -1)
		fail("seccomp", 126);
	if (fdpass_send(FENCE_SOCK, &c, 1, lfd) != 1)
		fail("sending the listener", 126);
	close(lfd);
	close(FENCE_SOCK);
	execvp(argv[1], argv + 1);
	fprintf(stderr, "gmux: %s: %s\n", argv[1], strerror(errno));
	return (errno == ENOENT ? 127 : 126);
}
