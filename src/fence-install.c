/*
 * fence-install.c: installs a fence's seccomp filter with a listener, for
 * the supervisor outside to answer its notifications.  Only system
 * calls: the keeper's child runs it between fork() and exec(), and
 * gmux-fence-exec (shim/fence-exec.c), linked alone and statically, is
 * built with it too.
 */

#include <sys/syscall.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <errno.h>
#include <unistd.h>

#include "gmux.h"

#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV	(1UL << 5)
#endif

/*
 * Installs prog (no_new_privs already set) and returns its listener, or
 * -1 with errno.  A notified call waits killably where the kernel can.
 */
int
fence_install(const struct sock_fprog *prog)
{
	int	 lfd;

	lfd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
	    SECCOMP_FILTER_FLAG_NEW_LISTENER|
	    SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, prog);
	if (lfd == -1 && errno == EINVAL)	/* before Linux 5.19 */
		lfd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		    SECCOMP_FILTER_FLAG_NEW_LISTENER, prog);
	return (lfd);
}
