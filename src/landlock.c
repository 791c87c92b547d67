/*
 * landlock.c: Landlock, the kernel's access control for unprivileged
 * processes, as the fence and the jail use it: the ABI the kernel has, a
 * ruleset, a rule per path, and entering the ruleset.  A ruleset is made
 * and filled before fork() (opening paths, allocating); the child only
 * enters it, one system call.  Only this file sees Landlock's structures:
 * Debian's headers predate the network rights and the scopes.
 */

#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define LL_CREATE_RULESET_VERSION	(1U << 0)
#define LL_RULE_PATH_BENEATH		1

#define LL_FS_EXECUTE		(1ULL << 0)
#define LL_FS_WRITE_FILE	(1ULL << 1)
#define LL_FS_READ_FILE		(1ULL << 2)
#define LL_FS_READ_DIR		(1ULL << 3)
#define LL_FS_REMOVE_DIR	(1ULL << 4)
#define LL_FS_REMOVE_FILE	(1ULL << 5)
#define LL_FS_MAKE_CHAR		(1ULL << 6)
#define LL_FS_MAKE_DIR		(1ULL << 7)
#define LL_FS_MAKE_REG		(1ULL << 8)
#define LL_FS_MAKE_SOCK		(1ULL << 9)
#define LL_FS_MAKE_FIFO		(1ULL << 10)
#define LL_FS_MAKE_BLOCK	(1ULL << 11)
#define LL_FS_MAKE_SYM		(1ULL << 12)
#define LL_FS_REFER		(1ULL << 13)	/* ABI 2 */
#define LL_FS_TRUNCATE		(1ULL << 14)	/* ABI 3 */
#define LL_FS_IOCTL_DEV		(1ULL << 15)	/* ABI 5 */

#define LL_NET_CONNECT_TCP	(1ULL << 1)	/* ABI 4 */
#define LL_SCOPE_ABSTRACT_UNIX	(1ULL << 0)	/* ABI 6 */
#define LL_SCOPE_SIGNAL		(1ULL << 1)

/* What a rule on a file (not a directory) may grant. */
#define LL_FS_FILE	(LL_FS_EXECUTE|LL_FS_WRITE_FILE|LL_FS_READ_FILE| \
	LL_FS_TRUNCATE|LL_FS_IOCTL_DEV)

struct ll_ruleset_attr {
	uint64_t	 handled_access_fs;
	uint64_t	 handled_access_net;	/* ABI 4 */
	uint64_t	 scoped;		/* ABI 6 */
};

struct ll_path_beneath_attr {
	uint64_t	 allowed_access;
	int32_t		 parent_fd;
} __attribute__((packed));

/* Landlock's ABI version, 0 if the kernel has none (or it is off). */
int
landlock_abi(void)
{
	long	 v;

	v = syscall(SYS_landlock_create_ruleset, NULL, 0,
	    LL_CREATE_RULESET_VERSION);
	return (v < 0 ? 0 : (int)v);
}

/* Every file system right the ABI knows. */
static uint64_t
landlock_fs_all(int abi)
{
	uint64_t	 all = (LL_FS_MAKE_SYM << 1) - 1;

	if (abi >= 2)
		all |= LL_FS_REFER;
	if (abi >= 3)
		all |= LL_FS_TRUNCATE;
	if (abi >= 5)
		all |= LL_FS_IOCTL_DEV;
	return (all);
}

/*
 * A new ruleset (close-on-exec) that handles, as what says: LANDLOCK_FS
 * every file system right the ABI knows (only rules grant any), LANDLOCK_NET
 * TCP connects (ABI 4), LANDLOCK_SCOPE abstract UNIX sockets and signals
 * (ABI 6: none reaches outside the domain).  What the ABI lacks is left
 * out.  Only system calls: a child may call it.  Returns -1 with errno.
 */
int
landlock_ruleset(int abi, int what)
{
	struct ll_ruleset_attr	 a;
	size_t			 size = offsetof(struct ll_ruleset_attr,
				     handled_access_net);

	memset(&a, 0, sizeof a);
	if (what & LANDLOCK_FS)
		a.handled_access_fs = landlock_fs_all(abi);
	if ((what & LANDLOCK_NET) && abi >= 4) {
		a.handled_access_net = LL_NET_CONNECT_TCP;
		size = offsetof(struct ll_ruleset_attr, scoped);
	}
	if ((what & LANDLOCK_SCOPE) && abi >= 6) {
		a.scoped = LL_SCOPE_ABSTRACT_UNIX|LL_SCOPE_SIGNAL;
		size = sizeof a;
	}
	return ((int)syscall(SYS_landlock_create_ruleset, &a, size, 0));
}

/* Our rights (LANDLOCK_READ, ...) as the kernel's, for a directory. */
static uint64_t
landlock_rights(u_int rights)
{
	uint64_t	 r = 0;

	if (rights & LANDLOCK_READ)
		r |= LL_FS_READ_FILE;
	if (rights & LANDLOCK_LIST)
		r |= LL_FS_READ_DIR;
	if (rights & LANDLOCK_EXEC)
		r |= LL_FS_EXECUTE;
	if (rights & LANDLOCK_WRITE)
		r |= LL_FS_WRITE_FILE|LL_FS_TRUNCATE;
	if (rights & LANDLOCK_CREATE)
		r |= LL_FS_REMOVE_DIR|LL_FS_REMOVE_FILE|LL_FS_MAKE_DIR|
		    LL_FS_MAKE_REG|LL_FS_MAKE_SOCK|LL_FS_MAKE_FIFO|
		    LL_FS_MAKE_SYM|LL_FS_REFER;
	if (rights & LANDLOCK_DEVICE)
		r |= LL_FS_IOCTL_DEV;
	return (r);
}

/*
 * Grants rights on path (a directory: on everything beneath it), its
 * symlinks followed: a rule holds an inode, not a name.  Rights a file
 * cannot have, or the ABI does not know, are dropped.  Returns 0, or -1
 * with errno (ENOENT: nothing there).
 */
int
landlock_allow(int ruleset, int abi, const char *path, u_int rights)
{
	struct ll_path_beneath_attr	 pb;
	struct stat			 st;
	int				 fd, rc, saved;

	if ((fd = open(path, O_PATH|O_CLOEXEC)) == -1)
		return (-1);
	memset(&pb, 0, sizeof pb);
	pb.parent_fd = fd;
	pb.allowed_access = landlock_rights(rights) & landlock_fs_all(abi);
	if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
		pb.allowed_access &= LL_FS_FILE;
	rc = 0;
	if (pb.allowed_access != 0)
		rc = (int)syscall(SYS_landlock_add_rule, ruleset,
		    LL_RULE_PATH_BENEATH, &pb, 0);
	saved = errno;
	close(fd);
	errno = saved;
	return (rc == 0 ? 0 : -1);
}

/*
 * Puts the calling thread (and all it starts from now on) in the
 * ruleset's domain, after no_new_privs (which Landlock needs without
 * CAP_SYS_ADMIN).  Only system calls: for a child between fork() and
 * exec().  Returns 0, or -1 with errno.
 */
int
landlock_enter(int ruleset)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return (-1);
	return ((int)syscall(SYS_landlock_restrict_self, ruleset, 0));
}
