/*
 * fence.c: the network fence around one job: the seccomp filter and the
 * Landlock domain the job starts in, and the handing of the filter's
 * listener to the supervisor outside it.  How the keeper uses it:
 *
 *   before fork()        fj = fence_job_create(policy, cwd, jail, &cause);
 *                        (jail: a remote job's, else NULL)
 *                        fence_job_env(fj, &env);
 *   child, before exec   fence_job_child(fj);   (exits 126 on failure)
 *   parent, after fork   fence_job_start(fj, &cause);
 *   poll loop            n = fence_job_pollfds(fj, pfd); poll(...);
 *                        fence_job_dispatch(fj, pfd, n);
 *   once a second        fence_job_write_stats(fj, "jobs/jN/fence", ...)
 *   job over             fence_job_free(fj)
 *
 * The filter is built in the parent, before fork(), so the child does
 * nothing but system calls between fork() and exec().  Only this file
 * sees libseccomp (landlock.c has Landlock's calls).
 */

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <linux/filter.h>
#include <netinet/in.h>
#include <linux/seccomp.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "fence-int.h"

#define FENCE_AF_LIMIT	64	/* families above are refused wholesale */

struct filter_made;

struct fence_job {
	struct fence		*policy;
	char			*workdir;
	struct fence_names	*names;
	struct filter_made	*filter;	/* made once, shared */
	int			 sp[2];		/* carries the listener out */
	int			 landlock;	/* the kernel's ABI, 0: none */
	const struct jail	*jail;		/* a remote job's; NULL: none */
	char			 uid_map[32];
	char			 gid_map[32];
	int			 bypass;	/* tests: no connect rule */
	int			 netns;		/* --deny-net got a namespace */
	int			 ipcns;		/* a jailed job got one */
	int			 inside;	/* installed in a container */
	struct fence_super	*super;
	char			*text;
	uint64_t		 written[2];	/* counts last written */
	int			 wrote;
	int			 loop_said;	/* its loopback refusal said */
};

#define LOW32(i, v)	SCMP_CMP((i), SCMP_CMP_MASKED_EQ, 0xffffffffULL, (v))

/* A filter's variant: which of these it is made for. */
#define FILTER_OPEN	0x1	/* the open fence */
#define FILTER_BYPASS	0x2	/* tests: no connect rule */
#define FILTER_JAILED	0x4	/* a remote job's */
#define FILTER_DGRAM	0x8	/* --allow unix:dgram */
#define FILTER_VARIANTS	0x10

/*
 * AF_UNIX datagram sockets, made by socket() or socketpair(): sendmsg()
 * takes its address from a msghdr, which a filter cannot read, so such a
 * socket could send to any pathname socket the job can name (a relay of
 * the user's moved into its directory, journald), past the rule connect()
 * is held to.  Only the stream and seqpacket types are left (seqpacket
 * ignores sendmsg's address); SOCK_RAW is refused too, since the kernel
 * makes it a datagram socket.
 */
static int
filter_unix_dgram(scmp_filter_ctx ctx)
{
	uint32_t	 no = SCMP_ACT_ERRNO(EPERM);
	int		 rc = 0, t;

	for (t = 0; t < 16; t++) {
		struct scmp_arg_cmp a0 = LOW32(0, AF_UNIX);
		struct scmp_arg_cmp a1 = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, t);

		if (t == SOCK_STREAM || t == SOCK_SEQPACKET)
			continue;
		rc |= seccomp_rule_add(ctx, no, SCMP_SYS(socket), 2, a0, a1);
		rc |= seccomp_rule_add(ctx, no, SCMP_SYS(socketpair), 2, a0,
		    a1);
	}
	return (rc);
}

/*
 * socket(): UNIX, INET and INET6 only; TCP streams as they are; UDP goes
 * to the supervisor (which hands back a stand-in); raw, packet, netlink,
 * SCTP, MPTCP, ICMP, UDP-Lite and the rest get an error.  An open fence
 * (a remote job's that asked for none) lets UDP and NETLINK_ROUTE sockets
 * be made (getifaddrs() needs one): it polices connects, not the network.
 * Arguments are ints: only their low 32 bits count, as for the kernel, so
 * the masked comparisons ignore what a caller leaves in the high half,
 * and every low-half value not allowed matches some refusing rule.
 */
static int
filter_socket(scmp_filter_ctx ctx, int open)
{
	static const int	 inet[] = { AF_INET, AF_INET6 };
	uint32_t		 no = SCMP_ACT_ERRNO(EPERM), act;
	int			 rc = 0, af, t, p;
	u_int			 i;

	for (af = 0; af < FENCE_AF_LIMIT; af++) {
		if (af == AF_UNIX || af == AF_INET || af == AF_INET6 ||
		    (open && af == AF_NETLINK))
			continue;
		act = (af == AF_NETLINK || af == AF_PACKET) ? no :
		    SCMP_ACT_ERRNO(EAFNOSUPPORT);
		rc |= seccomp_rule_add(ctx, act, SCMP_SYS(socket), 1,
		    LOW32(0, af));
	}
	rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT),
	    SCMP_SYS(socket), 1, SCMP_CMP(0, SCMP_CMP_GE, FENCE_AF_LIMIT, 0));
	/* An open fence's netlink: NETLINK_ROUTE (0) only, no sock_diag. */
	if (open)
		rc |= seccomp_rule_add(ctx, no, SCMP_SYS(socket), 2,
		    LOW32(0, AF_NETLINK), SCMP_CMP(2, SCMP_CMP_NE, 0, 0));
	for (i = 0; i < nitems(inet); i++) {
		for (t = 0; t < 16; t++) {
			struct scmp_arg_cmp a0 = LOW32(0, inet[i]);
			struct scmp_arg_cmp a1 = SCMP_A1(SCMP_CMP_MASKED_EQ,
			    0xf, t);
			int ok = t == SOCK_STREAM ? IPPROTO_TCP :
			    t == SOCK_DGRAM ? IPPROTO_UDP : 0;

			if (ok == 0) {
				rc |= seccomp_rule_add(ctx, no,
				    SCMP_SYS(socket), 2, a0, a1);
				continue;
			}
			for (p = 1; p < ok; p++)
				rc |= seccomp_rule_add(ctx, no,
				    SCMP_SYS(socket), 3, a0, a1, LOW32(2, p));
			rc |= seccomp_rule_add(ctx, no, SCMP_SYS(socket), 3,
			    a0, a1, SCMP_CMP(2, SCMP_CMP_GT, ok, 0));
			if (t != SOCK_DGRAM || open)
				continue;
			rc |= seccomp_rule_add(ctx, SCMP_ACT_NOTIFY,
			    SCMP_SYS(socket), 3, a0, a1, LOW32(2, 0));
			rc |= seccomp_rule_add(ctx, SCMP_ACT_NOTIFY,
			    SCMP_SYS(socket), 3, a0, a1, LOW32(2, ok));
		}
	}
	return (rc);
}

/*
 * Everything but socket().  Binds go to the supervisor too: it binds a
 * fenced job's sockets, and a jailed job's TCP ones (to learn the ports
 * the job's loopback connects may go to), and lets a jailed job's AF_UNIX
 * binds go on as its own (Landlock holds them to its own directories).
 * An open fence lets UDP datagrams go where they are addressed.
 */
static int
filter_rest(scmp_filter_ctx ctx, int bypass, int open)
{
	static const int	 refused[] = {
		SCMP_SYS(io_uring_setup), SCMP_SYS(io_uring_enter),
		SCMP_SYS(io_uring_register), SCMP_SYS(ptrace),
		SCMP_SYS(process_vm_writev), SCMP_SYS(pidfd_getfd),
	};
	uint32_t		 no = SCMP_ACT_ERRNO(EPERM);
	struct scmp_arg_cmp	 fo;
	int			 rc = 0;
	u_int			 i;

	for (i = 0; i < nitems(refused); i++)
		rc |= seccomp_rule_add(ctx, no, refused[i], 0);
	if (!bypass)
		rc |= seccomp_rule_add(ctx, SCMP_ACT_NOTIFY,
		    SCMP_SYS(connect), 0);
	rc |= seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(bind), 0);
	if (!open)
		rc |= seccomp_rule_add(ctx, no, SCMP_SYS(sendto), 2,
		    SCMP_CMP(4, SCMP_CMP_NE, 0, 0),
		    SCMP_CMP(5, SCMP_CMP_GT, 0, 0));
	fo = SCMP_A3(SCMP_CMP_MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN);
	rc |= seccomp_rule_add(ctx, no, SCMP_SYS(sendto), 1, fo);
	rc |= seccomp_rule_add(ctx, no, SCMP_SYS(sendmmsg), 1, fo);
	fo = SCMP_A2(SCMP_CMP_MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN);
	rc |= seccomp_rule_add(ctx, no, SCMP_SYS(sendmsg), 1, fo);
	/*
	 * A listener of the job's own would get the job's connects first
	 * (the newest filter wins a tie) and could CONTINUE them.
	 */
	rc |= seccomp_rule_add(ctx, no, SCMP_SYS(seccomp), 1,
	    SCMP_A1(SCMP_CMP_MASKED_EQ, SECCOMP_FILTER_FLAG_NEW_LISTENER,
	    SECCOMP_FILTER_FLAG_NEW_LISTENER));
	return (rc);
}

/*
 * A jailed job's own rules.  Its chmod() and chown() (and fchmod() and
 * fchown(): it may open files it can only read) go to the supervisor,
 * which does them in the job's own directories only: Landlock does not
 * govern modes and owners, and a job could otherwise open the host's key
 * to every user.  And it may not reach other processes of the user's
 * through their limits and scheduling (an RLIMIT_CPU of a second kills
 * the daemon as surely as a signal): only its own (pid 0: the caller).
 */
static int
filter_jail(scmp_filter_ctx ctx)
{
	static const int	 meta[] = {
		SCMP_SYS(chmod), SCMP_SYS(chown), SCMP_SYS(lchown),
		SCMP_SYS(fchmodat), FENCE_SYS_FCHMODAT2, SCMP_SYS(fchownat),
		SCMP_SYS(fchmod), SCMP_SYS(fchown),
	};
	static const int	 sched[] = {
		SCMP_SYS(sched_setscheduler), SCMP_SYS(sched_setparam),
		SCMP_SYS(sched_setattr),
	};
	struct scmp_arg_cmp	 not0 = SCMP_CMP(0, SCMP_CMP_NE, 0, 0);
	struct scmp_arg_cmp	 not1 = SCMP_CMP(1, SCMP_CMP_NE, 0, 0);
	uint32_t		 no = SCMP_ACT_ERRNO(EPERM);
	int			 rc = 0;
	u_int			 i;

	for (i = 0; i < nitems(meta); i++)
		rc |= seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, meta[i], 0);
	for (i = 0; i < nitems(sched); i++)
		rc |= seccomp_rule_add(ctx, no, sched[i], 1, not0);
	/* setpriority(PRIO_PROCESS, 0), ioprio_set(IOPRIO_WHO_PROCESS, 0) */
	rc |= seccomp_rule_add(ctx, no, SCMP_SYS(setpriority), 1,
	    SCMP_CMP(0, SCMP_CMP_NE, PRIO_PROCESS, 0));
	rc |= seccomp_rule_add(ctx, no, SCMP_SYS(setpriority), 1, not1);
	rc |= seccomp_rule_add(ctx, no, SCMP_SYS(ioprio_set), 1,
	    SCMP_CMP(0, SCMP_CMP_NE, 1, 0));
	rc |= seccomp_rule_add(ctx, no, SCMP_SYS(ioprio_set), 1, not1);
	/* prlimit64(pid, resource, new, old): reading others' is harmless */
	rc |= seccomp_rule_add(ctx, no, SCMP_SYS(prlimit64), 2,
	    SCMP_CMP(0, SCMP_CMP_NE, 0, 0), SCMP_CMP(2, SCMP_CMP_NE, 0, 0));
	return (rc);
}

/*
 * The filters made so far, one per variant (FILTER_*): libseccomp takes
 * about a millisecond to make one, and every job of a variant gets the
 * same.  The daemon makes a job's
 * variant before it forks the job's keeper (fence_prepare), which finds
 * it made.  They live as long as the process; jobs point at them.
 */
static struct filter_made {
	struct sock_filter	*prog;
	u_short			 len;
} filter_made[FILTER_VARIANTS];

/*
 * Builds a filter (foreign architectures and x32 are killed: libseccomp
 * checks both before any rule) into fm, as BPF, to be loaded by the child
 * with flags libseccomp does not know.
 */
static int
filter_build(struct filter_made *fm, int variant, char **cause)
{
	scmp_filter_ctx		 ctx;
	off_t			 size;
	int			 open = (variant & FILTER_OPEN) != 0;
	int			 fd = -1, rc = -1;

	if ((ctx = seccomp_init(SCMP_ACT_ALLOW)) == NULL) {
		xasprintf(cause, "seccomp_init failed");
		return (-1);
	}
	if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
	    SCMP_ACT_KILL_PROCESS) != 0 ||
	    filter_socket(ctx, open) != 0 ||
	    (!open && !(variant & FILTER_DGRAM) &&
	    filter_unix_dgram(ctx) != 0) ||
	    filter_rest(ctx, (variant & FILTER_BYPASS) != 0, open) != 0 ||
	    ((variant & FILTER_JAILED) && filter_jail(ctx) != 0)) {
		xasprintf(cause, "seccomp: cannot build the filter");
		goto out;
	}
	if ((fd = memfd_create("gmux-fence", MFD_CLOEXEC)) == -1 ||
	    seccomp_export_bpf(ctx, fd) != 0 ||
	    (size = lseek(fd, 0, SEEK_END)) <= 0 ||
	    size % sizeof *fm->prog != 0 ||
	    size / sizeof *fm->prog > BPF_MAXINSNS) {
		xasprintf(cause, "seccomp: cannot export the filter");
		goto out;
	}
	fm->prog = xmalloc((size_t)size);
	if (pread(fd, fm->prog, (size_t)size, 0) != size) {
		xasprintf(cause, "seccomp: cannot read the filter back");
		free(fm->prog);
		fm->prog = NULL;
		goto out;
	}
	fm->len = (u_short)(size / sizeof *fm->prog);
	rc = 0;
out:
	if (fd != -1)
		close(fd);
	seccomp_release(ctx);
	return (rc);
}

/* The variant of the filter a job with this fence gets (NULL: open). */
static int
filter_variant(const struct fence *policy, int jailed, int bypass)
{
	int	 v = 0;

	if (policy == NULL || policy->open)
		v |= FILTER_OPEN;
	if (fence_unix_dgram(policy))
		v |= FILTER_DGRAM;
	if (jailed)
		v |= FILTER_JAILED;
	if (bypass)
		v |= FILTER_BYPASS;
	return (v);
}

/* Points fj at its variant's filter, made now if not yet. */
static int
filter_get(struct fence_job *fj, char **cause)
{
	struct filter_made	*fm;
	int			 v;

	v = filter_variant(fj->policy, fj->jail != NULL, fj->bypass);
	fm = &filter_made[v];
	if (fm->prog == NULL && filter_build(fm, v, cause) != 0)
		return (-1);
	fj->filter = fm;
	return (0);
}

/*
 * Makes the filter of a job with this fence (NULL: the open one a jailed
 * job gets), so that the job's keeper, forked after, finds it made.  A
 * failure is left for the keeper to meet and report.
 */
void
fence_prepare(const struct fence *policy, int jailed)
{
	struct filter_made	*fm;
	int			 v = filter_variant(policy, jailed, 0);
	char			*cause = NULL;

	fm = &filter_made[v];
	if (fm->prog == NULL && filter_build(fm, v, &cause) != 0)
		log_debug("%s: %s", __func__, cause);
	free(cause);
}

/*
 * Sets up the fence for a job that will run in workdir: resolves the
 * allowed names (blocking, before the job exists), builds the filter.  A
 * remote job's fence is in its jail (NULL: none, which must outlive it):
 * the jail's Landlock domain replaces the fence's own (it handles TCP
 * connects too), the job gets an IPC namespace where it can, binds its
 * AF_UNIX sockets itself, may connect to those in the jail's directories,
 * and to the host's loopback only where it bound (unless the host's
 * operator set REMOTE_LOOPBACK=1).
 * Returns NULL with a cause; the caller frees the result.
 */
struct fence_job *
fence_job_create(const struct fence *policy, const char *workdir,
    const struct jail *jail, char **cause)
{
	struct fence_job	*fj;

	if (policy == NULL || (!policy->deny_net && !policy->open &&
	    policy->nrules == 0)) {
		xasprintf(cause, "no fence was asked for");
		return (NULL);
	}
	fj = xcalloc(1, sizeof *fj);
	fj->sp[0] = fj->sp[1] = -1;
	fj->policy = fence_copy(policy);
	fj->workdir = xstrdup(workdir);
	fj->text = fence_text(policy);
	fj->landlock = landlock_abi();
	fj->jail = jail;
	if (filter_get(fj, cause) != 0)
		goto fail;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET|SOCK_CLOEXEC, 0, fj->sp) != 0) {
		xasprintf(cause, "socketpair: %s", strerror(errno));
		goto fail;
	}
	fj->names = fence_names_create(fj->policy);
	return (fj);
fail:
	fence_job_free(fj);
	return (NULL);
}

/* Tests only: a filter without the connect rule, to test the backstop. */
void
fence_job_test_bypass(struct fence_job *fj)
{
	char	*cause = NULL;

	fj->bypass = 1;
	if (filter_get(fj, &cause) != 0)
		fatalx("%s", cause);
}

/*
 * Adds what the job's environment needs: RES_OPTIONS=use-vc, so glibc
 * asks the stub over TCP (its UDP path drops any answer whose source is
 * not the nameserver's address, which the stub cannot have).  An open
 * fence has no stub: the job asks its nameserver.
 */
void
fence_job_env(const struct fence_job *fj, char ***envp)
{
	char	**env = *envp, *s;
	size_t	 i, n = strv_len(env);

	if (fj->policy->open)
		return;
	for (i = 0; i < n; i++) {
		if (strncmp(env[i], "RES_OPTIONS=", 12) == 0)
			break;
	}
	if (i == n) {
		env = xreallocarray(env, n + 2, sizeof *env);
		env[n] = xstrdup("RES_OPTIONS=use-vc");
		env[n + 1] = NULL;
	} else if (strstr(env[i], "use-vc") == NULL) {
		xasprintf(&s, "%s use-vc", env[i]);
		free(env[i]);
		env[i] = s;
	}
	*envp = env;
}

/* The child's way out: a message on stderr and 126, the job never runs. */
static dead void
child_fail(const char *what)
{
	const char	*e = strerrordesc_np(errno), *v[5];
	u_int		 i;

	v[0] = "gmux: fence: ";
	v[1] = what;
	v[2] = ": ";
	v[3] = e != NULL ? e : "error";
	v[4] = "\n";
	for (i = 0; i < nitems(v); i++) {
		if (write(2, v[i], strlen(v[i])) < 0)
			break;
	}
	_exit(126);
}

static int
write_file(const char *path, const char *s)
{
	ssize_t	 n;
	int	 fd;

	if ((fd = open(path, O_WRONLY|O_CLOEXEC)) == -1)
		return (-1);
	n = write(fd, s, strlen(s));
	close(fd);
	return (n == (ssize_t)strlen(s) ? 0 : -1);
}

/*
 * Namespaces, where unprivileged user namespaces work (the job keeps its
 * own uid and gid in its user namespace, and no capability after exec):
 * --deny-net gets an empty network namespace, a jailed job an IPC
 * namespace (no SysV or POSIX message queue of the host's).  When they do
 * not work, the filter alone refuses connects, and the host's IPC objects
 * stay within reach.  Returns what was made, as FENCE_NS_* bits.
 */
static int
child_ns(struct fence_job *fj)
{
	int	 flags = 0, made = 0;

	if (fj->policy->deny_net) {
		flags |= CLONE_NEWNET;
		made |= FENCE_NS_NET;
	}
	if (fj->jail != NULL) {
		flags |= CLONE_NEWIPC;
		made |= FENCE_NS_IPC;
	}
	/* The job's own ids: its account's where its keeper dropped to one. */
	snprintf(fj->uid_map, sizeof fj->uid_map, "%u %u 1\n", getuid(),
	    getuid());
	snprintf(fj->gid_map, sizeof fj->gid_map, "%u %u 1\n", getgid(),
	    getgid());
	if (flags == 0 || unshare(CLONE_NEWUSER|flags) != 0)
		return (0);
	if (write_file("/proc/self/setgroups", "deny") != 0 ||
	    write_file("/proc/self/uid_map", fj->uid_map) != 0 ||
	    write_file("/proc/self/gid_map", fj->gid_map) != 0)
		child_fail("user namespace");
	return (made);
}

/*
 * The backstop: TCP connects handled with no rule allowing any, so a
 * connect() the job makes itself fails even if the filter were bypassed.
 * Binding is not handled: a job may listen (a DDP rendezvous, a notebook
 * kernel), and a listening socket sends nothing on its own.  With ABI 6,
 * the domain is also scoped: no abstract UNIX socket and no signal
 * outside it (the keeper and the daemon are out of reach).  A jailed job
 * enters the jail's domain instead, which handles all this and files.
 */
static void
child_landlock(struct fence_job *fj)
{
	int	 fd;

	if (fj->jail != NULL) {
		if (landlock_enter(jail_ruleset(fj->jail)) != 0)
			child_fail("landlock (the jail)");
		return;
	}
	if (fj->landlock < 4)
		return;
	if ((fd = landlock_ruleset(fj->landlock, LANDLOCK_NET|
	    LANDLOCK_SCOPE)) == -1 || landlock_enter(fd) != 0)
		child_fail("landlock");
	close(fd);
}

/*
 * In the job's child, after fork() and chdir(), before descriptors are
 * closed and exec(): no_new_privs, Landlock, the filter, and its listener
 * sent to the parent and closed here.  Only system calls: the parent may
 * have threads.  Does not return on failure: the job is never unfenced.
 */
void
fence_job_child(struct fence_job *fj)
{
	struct sock_fprog	 prog;
	int			 lfd, ns;

	close(fj->sp[0]);
	ns = child_ns(fj);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		child_fail("no_new_privs");
	child_landlock(fj);
	prog.len = fj->filter->len;
	prog.filter = fj->filter->prog;
	if ((lfd = fence_install(&prog)) == -1)
		child_fail("seccomp");
	if (send_fd(fj->sp[1], lfd, (char)ns) != 0)
		child_fail("sending the listener");
	close(lfd);
	close(fj->sp[1]);
}

/*
 * A container's job: the filter is installed inside the container, by
 * gmux-fence-exec as its first process (shim/fence-exec.c), not in the
 * keeper's child, which is podman.  No namespace is made (the container
 * has its own); the Landlock backstop goes in as a ruleset made here.
 */
void
fence_job_inside(struct fence_job *fj)
{
	fj->inside = 1;
}

/*
 * Sends a container's first process its filter, and with it (where the
 * kernel has network rules) the backstop's Landlock ruleset to enter.
 */
static int
send_filter(struct fence_job *fj)
{
	size_t	 len = fj->filter->len * sizeof *fj->filter->prog;
	int	 fd = -1, rc;

	if (fj->landlock >= 4)
		fd = landlock_ruleset(fj->landlock,
		    LANDLOCK_NET|LANDLOCK_SCOPE);
	rc = fdpass_send(fj->sp[0], fj->filter->prog, len, fd) ==
	    (ssize_t)len ? 0 : -1;
	if (fd != -1)
		close(fd);
	return (rc);
}

/*
 * In the child of a job whose fence is installed inside its container:
 * leaves the keeper's end of the socket at descriptor fd, open across
 * exec (podman --preserve-fds passes it in).  Only system calls.
 */
void
fence_job_child_pass(struct fence_job *fj, int fd)
{
	close(fj->sp[0]);
	if (fj->sp[1] == fd)
		fcntl(fd, F_SETFD, 0);
	else if (dup2(fj->sp[1], fd) == -1)
		child_fail("the fence's socket");
}

/*
 * In the parent after fork(): takes the listener from the child (waiting
 * for it; the child either sends it or exits 126), and what namespaces
 * the child got (a container's first process: whether it entered the
 * Landlock ruleset), having sent a container's first process the filter.
 * Returns it, or -1.
 */
static int
take_listener(struct fence_job *fj)
{
	char	 c = 0;
	int	 lfd;

	close(fj->sp[1]);
	fj->sp[1] = -1;
	if (fj->inside && send_filter(fj) != 0) {
		close(fj->sp[0]);
		fj->sp[0] = -1;
		return (-1);
	}
	lfd = recv_fd(fj->sp[0], &c);
	if (fj->inside && !(c & FENCE_IN_LANDLOCK))
		fj->landlock = 0;
	fj->netns = !fj->inside && (c & FENCE_NS_NET) != 0;
	fj->ipcns = !fj->inside && (c & FENCE_NS_IPC) != 0;
	close(fj->sp[0]);
	fj->sp[0] = -1;
	return (lfd);
}

/*
 * In the parent after fork(): takes the listener and starts the
 * supervisor.  The keeper becomes non-dumpable, so a job running as the
 * same user cannot write the supervisor's memory through /proc.
 */
int
fence_job_start(struct fence_job *fj, char **cause)
{
	int	 lfd, flags = 0;

	if ((lfd = take_listener(fj)) == -1 && fj->inside) {
		/*
		 * The container never reached its first process, which execs
		 * nothing unfenced: podman's own exit and error say why.
		 */
		return (0);
	}
	if (lfd == -1) {
		xasprintf(cause, "the job's fence was not installed");
		return (-1);
	}
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (fj->jail != NULL) {
		flags = FENCE_SUPER_JAIL;
		if (!jail_loopback(fj->jail))
			flags |= FENCE_SUPER_NOLOOP;
	}
	fj->super = fence_super_create(fj->policy, fj->names, fj->workdir,
	    fj->jail != NULL ? jail_sockets(fj->jail) : NULL, lfd, flags,
	    cause);
	return (fj->super == NULL ? -1 : 0);
}

/*
 * In the parent of a child that makes no connect (a probe): takes its
 * listener and closes it, so that any connect it tried would fail.
 */
void
fence_job_release(struct fence_job *fj)
{
	int	 lfd;

	if ((lfd = take_listener(fj)) != -1)
		close(lfd);
}

/*
 * Fills pfd (room for FENCE_POLLFDS) with the descriptors to poll for
 * reading and returns how many; after poll(), hand the same entries to
 * fence_job_dispatch().
 */
u_int
fence_job_pollfds(const struct fence_job *fj, struct pollfd *pfd)
{
	if (fj->super == NULL)
		return (0);
	return (fence_super_pollfds(fj->super, pfd));
}

void
fence_job_dispatch(struct fence_job *fj, const struct pollfd *pfd, u_int n)
{
	if (fj->super != NULL)
		fence_super_dispatch(fj->super, pfd, n);
}

/* Whether no process of the job is left inside the fence. */
int
fence_job_done(const struct fence_job *fj)
{
	return (fj->super == NULL || fence_super_done(fj->super));
}

/*
 * The line for the job's log the first time its fence refused a connect
 * to the host's loopback because the host keeps it closed to remote jobs
 * (allocated), or NULL: said once a job, not at every connect.
 */
char *
fence_job_loopback_news(struct fence_job *fj)
{
	const char	*first;
	char		*line;

	if (fj->super == NULL || fj->loop_said ||
	    fence_super_loopback_refused(fj->super, &first) == 0)
		return (NULL);
	fj->loop_said = 1;
	xasprintf(&line, "gmux: the fence refused %s: this host keeps its "
	    "loopback closed to remote jobs (see REMOTE_LOOPBACK)\n", first);
	return (line);
}

/* The fence and its counts, for ps --json and the job's directory. */
json_t *
fence_job_stats(const struct fence_job *fj)
{
	uint64_t	 refused = 0, allowed = 0, lookups = 0;
	const char	*last = "";

	if (fj->super != NULL) {
		fence_super_counts(fj->super, &refused, &allowed, &lookups);
		last = fence_super_last_refused(fj->super);
	}
	return (json_pack("{s:s, s:I, s:I, s:I, s:s, s:i, s:b, s:b, s:b}",
	    "fence", fj->text, "refused", (json_int_t)refused, "allowed",
	    (json_int_t)allowed, "lookups", (json_int_t)lookups,
	    "last_refused", last, "landlock", fj->landlock, "netns",
	    fj->netns, "jail", fj->jail != NULL, "ipcns", fj->ipcns));
}

/*
 * Writes the stats to path (0600, atomically) if the counts moved since
 * the last write; meant for the keeper's once-a-second tick.
 */
int
fence_job_write_stats(struct fence_job *fj, const char *path, char **cause)
{
	uint64_t	 refused = 0, allowed = 0, lookups;
	json_t		*j;
	char		*s;
	int		 rc;

	if (fj->super != NULL)
		fence_super_counts(fj->super, &refused, &allowed, &lookups);
	if (fj->wrote && fj->written[0] == refused && fj->written[1] == allowed)
		return (0);
	j = fence_job_stats(fj);
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	rc = write_file_atomic(path, s, strlen(s), 0600, cause);
	free(s);
	if (rc == 0) {
		fj->wrote = 1;
		fj->written[0] = refused;
		fj->written[1] = allowed;
	}
	return (rc);
}

/* Frees it all; the listener closes, and the job's connects get ENOSYS. */
void
fence_job_free(struct fence_job *fj)
{
	if (fj == NULL)
		return;
	fence_super_free(fj->super);
	fence_names_free(fj->names);
	if (fj->sp[0] != -1)
		close(fj->sp[0]);
	if (fj->sp[1] != -1)
		close(fj->sp[1]);
	fence_free(fj->policy);
	free(fj->workdir);
	free(fj->text);
	free(fj);
}
