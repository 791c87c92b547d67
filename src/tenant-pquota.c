/*
 * tenant-pquota.c: disk quotas through the filesystem's project quotas
 * where TENANT_HOME_ROOT's filesystem has them (ext4 mounted with
 * prjquota, xfs with pquota): each account's home is a project whose ID
 * is the account's UID, inherited by what is made under it, with the
 * tenant's disk limit as its hard block limit; the kernel refuses a write
 * past it (EDQUOT) and says the usage at once, without a walk.  Elsewhere
 * tenant-disk.c measures the homes.  The only file that sees quotactl and
 * FS_IOC_FSSETXATTR.
 */

#include <sys/ioctl.h>
#include <sys/quota.h>
#include <sys/syscall.h>

#include <linux/fs.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "tenant-int.h"

#ifndef PRJQUOTA
#define PRJQUOTA	2
#endif

static char	*pq_root;	/* the root last looked at */
static int	 pq_on;		/* its filesystem has project quotas */

/* quotactl on the filesystem holding fd (Linux 5.14: no device path). */
static int
pq_ctl(int fd, int cmd, uid_t id, void *addr)
{
#ifdef SYS_quotactl_fd
	/* QCMD's shift overflows an int for Q_GETINFO and the like. */
	u_int	 qcmd = ((u_int)cmd << SUBCMDSHIFT) | (PRJQUOTA & SUBCMDMASK);

	return ((int)syscall(SYS_quotactl_fd, fd, qcmd, (u_int)id, addr));
#else
	errno = ENOSYS;
	return (-1);
#endif
}

/* An fd on path's filesystem, or -1. */
static int
pq_open(const char *path)
{
	return (open(path, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC));
}

/*
 * Has TENANT_HOME_ROOT's filesystem project quotas?  Asked once (at the
 * first tick, and again if TENANT_HOME_ROOT changes); not while the root
 * is not made yet.
 */
int
tenant_disk_quotas(void)
{
	struct if_dqinfo	 info;
	const char		*root = tenant_home_root();
	int			 fd;

	if (pq_root != NULL && strcmp(pq_root, root) == 0)
		return (pq_on);
	if ((fd = pq_open(root)) == -1)
		return (0);
	free(pq_root);
	pq_root = xstrdup(root);
	pq_on = pq_ctl(fd, Q_GETINFO, 0, &info) == 0;
	log_debug("%s: %s: %s", __func__, root, pq_on ? "project quotas" :
	    strerror(errno));
	close(fd);
	return (pq_on);
}

/*
 * Makes t's home project t->uid (inherited by what is made under it) with
 * its disk limit; 0, or -1 with *cause.  What the home held before it
 * was a project stays outside it.
 */
int
tenant_pquota_set(const struct tenant *t, uint64_t limit, char **cause)
{
	struct fsxattr	 fsx;
	struct if_dqblk	 dq;
	int		 fd, rc = -1;

	if ((fd = pq_open(t->home)) == -1)
		goto fail;
	if (ioctl(fd, FS_IOC_FSGETXATTR, &fsx) != 0)
		goto fail;
	if (fsx.fsx_projid != t->uid ||
	    (fsx.fsx_xflags & FS_XFLAG_PROJINHERIT) == 0) {
		fsx.fsx_projid = t->uid;
		fsx.fsx_xflags |= FS_XFLAG_PROJINHERIT;
		if (ioctl(fd, FS_IOC_FSSETXATTR, &fsx) != 0)
			goto fail;
	}
	memset(&dq, 0, sizeof dq);
	dq.dqb_bhardlimit = dq.dqb_bsoftlimit = (limit + 1023) / 1024;
	dq.dqb_valid = QIF_BLIMITS;
	if (pq_ctl(fd, Q_SETQUOTA, t->uid, &dq) != 0)
		goto fail;
	rc = 0;
	goto out;
fail:
	xasprintf(cause, "tenant: project quota of %s: %s", t->home,
	    strerror(errno));
out:
	if (fd != -1)
		close(fd);
	return (rc);
}

/* The bytes project t->uid holds; -1 if the filesystem cannot say. */
int
tenant_pquota_used(const struct tenant *t, uint64_t *used)
{
	struct if_dqblk	 dq;
	int		 fd, rc;

	if ((fd = pq_open(t->home)) == -1)
		return (-1);
	memset(&dq, 0, sizeof dq);
	rc = pq_ctl(fd, Q_GETQUOTA, t->uid, &dq);
	close(fd);
	if (rc != 0 || (dq.dqb_valid & QIF_SPACE) == 0)
		return (-1);
	*used = dq.dqb_curspace;
	return (0);
}
