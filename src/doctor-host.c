/*
 * doctor-host.c: what this host can enforce, and why not: the vendors'
 * tools, MPS, Landlock, user namespaces, seccomp's user notification,
 * podman, etcd when the config names it, disk and the state's modes.
 * Each probe that changes a process's state runs in a child of its own.
 */

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <dirent.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "doctor-int.h"

#define DOCTOR_ETCD_MS		2000
#define DOCTOR_DISK_FAIL	(256ULL << 20)
#define DOCTOR_DISK_WARN	(2ULL << 30)

static const struct {
	const char	*check;
	const char	*name;
	const char	*lack;		/* what is missing without it */
	const char	*fix;
} doctor_tools[] = {
	{ "nvidia-smi", "nvidia-smi", "NVIDIA cards are not seen",
	  "install the NVIDIA driver's utilities (nvidia-smi on PATH)" },
	{ "mps", "nvidia-cuda-mps-control", "NVIDIA compute shares are not "
	  "enforced", "install CUDA's MPS (nvidia-cuda-mps-control on PATH)" },
	{ "amd-smi", "amd-smi", "AMD cards are seen only through rocm-smi",
	  "install ROCm's amd-smi (on PATH)" },
	{ "rocm-smi", "rocm-smi", "AMD cards are seen only through amd-smi",
	  "install ROCm's rocm-smi (on PATH)" },
	{ "xpu-smi", "xpu-smi", "Intel cards are not seen",
	  "install Intel's xpu-smi (on PATH)" },
};

static void
doctor_tool_checks(struct doctor *d)
{
	char	*full;
	u_int	 i;

	for (i = 0; i < nitems(doctor_tools); i++) {
		if ((full = find_program(doctor_tools[i].name)) != NULL)
			doctor_add(d, doctor_tools[i].check, DOCTOR_OK, NULL,
			    "%s", full);
		else
			doctor_add(d, doctor_tools[i].check, DOCTOR_WARN,
			    doctor_tools[i].fix, "%s not found in PATH: %s",
			    doctor_tools[i].name, doctor_tools[i].lack);
		free(full);
	}
}

static void
doctor_landlock(struct doctor *d)
{
	int	 abi = landlock_abi();

	if (abi == 0)
		doctor_add(d, "landlock", DOCTOR_WARN, "a kernel 5.13 or "
		    "later with landlock in its lsm= boot parameter",
		    "not available: remote jobs cannot be jailed (refused "
		    "unless REMOTE_UNCONFINED=1)");
	else
		doctor_add(d, "landlock", DOCTOR_OK, NULL, "ABI %d: remote "
		    "jobs' files are confined", abi);
}

/* Runs fn in a child; its exit status (0: it could), or -1. */
static int
doctor_in_child(int (*fn)(void))
{
	pid_t	 pid;
	int	 ws;

	fflush(NULL);
	if ((pid = fork()) == -1)
		return (-1);
	if (pid == 0)
		_exit(fn());
	while (waitpid(pid, &ws, 0) == -1 && errno == EINTR)
		;
	return (WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
}

static int
doctor_try_userns(void)
{
	return (unshare(CLONE_NEWUSER|CLONE_NEWNET) == 0 ? 0 : errno);
}

/* A filter that allows everything, with a listener: what the fence uses. */
static int
doctor_try_notify(void)
{
	struct sock_filter	 allow = BPF_STMT(BPF_RET|BPF_K,
				     SECCOMP_RET_ALLOW);
	struct sock_fprog	 prog = { 1, &allow };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return (errno);
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
	    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog) < 0)
		return (errno);
	return (0);
}

static void
doctor_kernel(struct doctor *d)
{
	int	 rc;

	if ((rc = doctor_in_child(doctor_try_userns)) == 0)
		doctor_add(d, "user namespaces", DOCTOR_OK, NULL,
		    "a job can get a network namespace of its own");
	else
		doctor_add(d, "user namespaces", DOCTOR_WARN, "sysctl "
		    "kernel.unprivileged_userns_clone=1 and "
		    "user.max_user_namespaces>0 (in a container: allow "
		    "unshare)", "unshare: %s: --deny-net keeps the host's "
		    "network namespace", rc > 0 ? strerror(rc) : "failed");
	if ((rc = doctor_in_child(doctor_try_notify)) == 0)
		doctor_add(d, "seccomp notify", DOCTOR_OK, NULL,
		    "the network fence can watch a job's connections");
	else
		doctor_add(d, "seccomp notify", DOCTOR_WARN, "Linux 5.5 or "
		    "later; in a container, a seccomp profile that allows "
		    "seccomp(2)", "%s: --deny-net and --allow cannot work",
		    rc > 0 ? strerror(rc) : "failed");
}

/* What container.c found: podman, its runtime, the networks it may use. */
static void
doctor_podman(struct doctor *d)
{
	char	*text = container_host_text();
	char	*warn = container_host_warning();

	if (warn != NULL)
		doctor_add(d, "podman", DOCTOR_WARN, warn, "%s", text);
	else if (container_podman(NULL) != NULL)
		doctor_add(d, "podman", DOCTOR_OK, NULL, "%s", text);
	else
		doctor_add(d, "podman", DOCTOR_WARN, "install podman and runc "
		    "for jobs in containers (gmux run --image)", "%s", text);
	free(warn);
	free(text);
}

/* What the daemon's pre-pulls of CONTAINERS_IMAGES found (if it has any). */
static void
doctor_images(struct doctor *d)
{
	json_t		*o, *v;
	const char	*image, *s;
	u_int		 ok = 0, bad = 0;

	if ((o = container_config_images()) == NULL)
		return;
	json_object_foreach(o, image, v) {
		if ((s = json_string_value(v)) == NULL)
			s = "?";
		if (strcmp(s, "ok") == 0) {
			ok++;
			continue;
		}
		bad++;
		doctor_add(d, "images", DOCTOR_WARN, "CONTAINERS_IMAGES names "
		    "images to pull ahead; a registry must be reachable (or "
		    "the image loaded by hand: podman load)", "%s %s", image,
		    s);
	}
	if (bad == 0)
		doctor_add(d, "images", DOCTOR_OK, NULL, "%u image%s of "
		    "CONTAINERS_IMAGES here", ok, ok == 1 ? "" : "s");
	json_decref(o);
}

/* Splits "http://HOST:PORT[/]" into host and port; the caller frees. */
static int
doctor_etcd_url(const char *url, char **host, char **port)
{
	const char	*h, *colon, *end;

	if (strncmp(url, "http://", 7) != 0)
		return (-1);
	h = url + 7;
	end = h + strcspn(h, "/");
	if (*h == '[') {
		if ((colon = memchr(h, ']', end - h)) == NULL ||
		    colon[1] != ':')
			return (-1);
		*host = xstrndup(h + 1, colon - h - 1);
		colon++;
	} else {
		if ((colon = memchr(h, ':', end - h)) == NULL)
			return (-1);
		*host = xstrndup(h, colon - h);
	}
	*port = xstrndup(colon + 1, end - colon - 1);
	return (0);
}

/* Waits for fd to be ready for events, at most DOCTOR_ETCD_MS. */
static int
doctor_wait(int fd, short events)
{
	struct pollfd	 p = { fd, events, 0 };

	return (poll(&p, 1, DOCTOR_ETCD_MS) == 1 ? 0 : -1);
}

/* Connects to host:port, at most DOCTOR_ETCD_MS; fd or -1 and errno. */
static int
doctor_connect(const char *host, const char *port)
{
	struct addrinfo	 hints, *ai;
	socklen_t	 len = sizeof(int);
	int		 fd, err = 0;

	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, port, &hints, &ai) != 0) {
		errno = EHOSTUNREACH;
		return (-1);
	}
	fd = socket(ai->ai_family, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC, 0);
	if (fd != -1 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		err = errno == EINPROGRESS ? ETIMEDOUT : errno;
		if (err == ETIMEDOUT && doctor_wait(fd, POLLOUT) == 0)
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
	}
	freeaddrinfo(ai);
	if (fd != -1 && err != 0) {
		close(fd);
		fd = -1;
		errno = err;
	}
	return (fd);
}

/* Asks one etcd its version; 0 with *seen, or -1 with *seen the reason. */
static int
doctor_etcd_ask(const char *url, char **seen)
{
	static const char req[] = "GET /version HTTP/1.0\r\n\r\n";
	char		 buf[2048], *host = NULL, *port = NULL;
	ssize_t		 n;
	size_t		 got = 0;
	int		 fd;

	if (doctor_etcd_url(url, &host, &port) != 0) {
		*seen = xstrdup("not an http://HOST:PORT URL");
		return (-1);
	}
	fd = doctor_connect(host, port);
	free(host);
	free(port);
	if (fd == -1) {
		xasprintf(seen, "%s", strerror(errno));
		return (-1);
	}
	n = write_all(fd, req, sizeof req - 1) == -1 ? -1 : 0;
	while (n >= 0 && got < sizeof buf - 1 && doctor_wait(fd, POLLIN) == 0 &&
	    (n = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	return (doctor_etcd_answer(buf, seen));
}

/*
 * An answer to GET /version, whole (HTTP/1.0: up to the close): 0 with
 * *seen "etcd VERSION", or -1 with *seen the reason.  The caller frees
 * *seen.
 */
int
doctor_etcd_answer(const char *buf, char **seen)
{
	const char	*v;

	if (strncmp(buf, "HTTP/1.", 7) != 0 ||
	    (v = strstr(buf, "\"etcdserver\":\"")) == NULL) {
		*seen = xstrdup("no answer from etcd");
		return (-1);
	}
	v += 14;
	xasprintf(seen, "etcd %.*s", (int)strcspn(v, "\"\r\n"), v);
	return (0);
}

/* Every endpoint of ETCD, when the config names one. */
static void
doctor_etcd(struct doctor *d)
{
	const char	*list = config_get("ETCD");
	char		*copy, *url, *next, *seen;

	if (list == NULL || *list == '\0')
		return;
	copy = xstrdup(list);
	for (url = copy; url != NULL; url = next) {
		if ((next = strchr(url, ',')) != NULL)
			*next++ = '\0';
		if (doctor_etcd_ask(url, &seen) == 0)
			doctor_add(d, "etcd", DOCTOR_OK, NULL, "%s: %s", url,
			    seen);
		else
			doctor_add(d, "etcd", DOCTOR_FAIL, "start etcd there, "
			    "or correct ETCD in the config", "%s: %s", url,
			    seen);
		free(seen);
	}
	free(copy);
}

static void
doctor_disk(struct doctor *d)
{
	struct statvfs	 sv;
	uint64_t	 avail;
	char		*s;

	if (statvfs(path_home(), &sv) != 0) {
		doctor_add(d, "disk", DOCTOR_OK, NULL, "%s: not made yet",
		    path_home());
		return;
	}
	avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	s = format_size(avail);
	if (avail < DOCTOR_DISK_FAIL)
		doctor_add(d, "disk", DOCTOR_FAIL, "free space there, or set "
		    "GMUX_HOME elsewhere", "%s free under %s: the state and "
		    "the logs cannot be kept", s, path_home());
	else if (avail < DOCTOR_DISK_WARN)
		doctor_add(d, "disk", DOCTOR_WARN, "free space there, or set "
		    "GMUX_HOME elsewhere", "%s free under %s", s, path_home());
	else
		doctor_add(d, "disk", DOCTOR_OK, NULL, "%s free under %s", s,
		    path_home());
	free(s);
}

/* With accounts: whether the homes' disk quotas are the kernel's. */
static void
doctor_tenant_disk(struct doctor *d)
{
	const char	*why;

	if (!tenant_accounts_on(&why))
		return;
	if (tenant_disk_quotas())
		doctor_add(d, "tenant disk", DOCTOR_OK, NULL, "project "
		    "quotas on TENANT_HOME_ROOT's filesystem: limits enforced "
		    "by the kernel");
	else
		doctor_add(d, "tenant disk", DOCTOR_WARN, "mount it with "
		    "project quotas (ext4 -O quota,project and prjquota, or "
		    "xfs pquota)", "TENANT_HOME_ROOT's filesystem has no "
		    "project quotas: homes measured by a walk, over the limit "
		    "only new jobs refused");
}

/* One state file or directory: a finding if others may read it. */
static int
doctor_mode(struct doctor *d, const char *path, int want_dir)
{
	struct stat	 sb;
	char		*fix;

	if (lstat(path, &sb) != 0 || (want_dir && !S_ISDIR(sb.st_mode)) ||
	    (!want_dir && !S_ISREG(sb.st_mode)))
		return (0);
	if ((sb.st_mode & 077) == 0)
		return (1);
	xasprintf(&fix, "chmod %s %s", want_dir ? "700" : "600", path);
	doctor_add(d, "state modes", DOCTOR_FAIL, fix, "%s is mode %04o: "
	    "others may read it", path, (u_int)(sb.st_mode & 07777));
	free(fix);
	return (-1);
}

/* The files directly in dir; returns how many are owner-only, or -1. */
static int
doctor_modes_in(struct doctor *d, const char *dir)
{
	DIR		*dp;
	struct dirent	*de;
	char		*path;
	int		 n, good = 0, bad = 0;

	if ((n = doctor_mode(d, dir, 1)) <= 0)
		return (n);
	if ((dp = opendir(dir)) == NULL)
		return (0);
	while ((de = readdir(dp)) != NULL) {
		xasprintf(&path, "%s/%s", dir, de->d_name);
		if ((n = doctor_mode(d, path, 0)) == 1)
			good++;
		else if (n == -1)
			bad = 1;
		free(path);
	}
	closedir(dp);
	return (bad ? -1 : good);
}

/* A file not directly in the home (which is checked whole). */
static int
doctor_mode_outside(struct doctor *d, const char *path)
{
	size_t	 len = strlen(path_home());

	if (strncmp(path, path_home(), len) == 0 && path[len] == '/' &&
	    strchr(path + len + 1, '/') == NULL)
		return (0);
	return (doctor_mode(d, path, 0));
}

static void
doctor_modes(struct doctor *d)
{
	char	*tls, *remotes;
	int	 a, b, c, e;

	xasprintf(&tls, "%s/tls", path_home());
	remotes = remotes_path();
	a = doctor_modes_in(d, path_home());
	b = doctor_modes_in(d, tls);
	c = doctor_mode_outside(d, path_config());
	e = doctor_mode_outside(d, remotes);
	if (a >= 0 && b >= 0 && c >= 0 && e >= 0)
		doctor_add(d, "state modes", DOCTOR_OK, NULL, "%d files under "
		    "%s, each its owner's only", a + b + c + e, path_home());
	free(remotes);
	free(tls);
}

/* Every check of this host, in the order a reader would fix them. */
void
doctor_host(struct doctor *d)
{
	char	*cause = NULL;

	if (config_load(&cause) != 0) {
		doctor_add(d, "config", DOCTOR_FAIL, "correct the line it "
		    "names", "%s", cause);
		free(cause);
	}
	doctor_tool_checks(d);
	doctor_landlock(d);
	doctor_kernel(d);
	doctor_podman(d);
	doctor_images(d);
	doctor_etcd(d);
	doctor_disk(d);
	doctor_tenant_disk(d);
	doctor_modes(d);
}
