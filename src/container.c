/*
 * container.c: a containerized job (docs/containers.md).  What the host
 * allows (podman, its runtime, its network), the `podman run` line a
 * job's keeper execs instead of the command, and the removal of what a
 * container job leaves behind.  Podman is spoken only through its
 * command line, always with the values of the job's variables passed by
 * name, never in an argv.
 */

#include <sys/resource.h>
#include <sys/stat.h>

#include <ctype.h>
#include <stdarg.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "container-int.h"

#define CONTAINER_RM_MS		30000
#define CONTAINER_PS_MS		10000

/* The variables gmux gives a job that go in by name (docs/containers.md). */
static const char *const container_vars[] = {
	"GMUX_", "CUDA_", "HSA_", "ROCR_", "HIP_", "ZE_", "NVIDIA_",
	"LD_PRELOAD=", "LD_LIBRARY_PATH=", "RES_OPTIONS=",
};

static struct {
	int		 probed;
	char		*podman;	/* its path; NULL: none */
	char		*runtime;	/* "runc"; NULL: podman's default */
	char		*why;		/* why containers cannot run */
	char		*fence_exec;	/* gmux-fence-exec; NULL: none */
	char		*user;		/* rootless: the daemon's user */
	int		 subuids;	/* rootless: it has a range */
	const char	*cgroups;	/* "v2", "hybrid", "v1" */
	char		 home[13];	/* this daemon's label */
} host;

/*
 * Appends s to the argv *v: strv_add keeps a list of distinct strings, and
 * a command line repeats its flags.
 */
void
container_push(char ***v, const char *s)
{
	size_t	 n = strv_len(*v);

	*v = xreallocarray(*v, n + 2, sizeof **v);
	(*v)[n] = xstrdup(s);
	(*v)[n + 1] = NULL;
}

/* Adds a formatted string to *v. */
void printflike(2, 3)
container_addf(char ***v, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;

	va_start(ap, fmt);
	xvasprintf(&s, fmt, ap);
	va_end(ap);
	container_push(v, s);
	free(s);
}

/*
 * The host's cgroups as a runtime sees them: "v2" (unified), "hybrid" (v1
 * controllers with a v2 tree beside them: crun refuses it) or "v1".
 */
static const char *
container_cgroups(void)
{
	struct stat	 st;

	if (stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0)
		return ("v2");
	if (stat("/sys/fs/cgroup/unified", &st) == 0)
		return ("hybrid");
	return ("v1");
}

/*
 * Whether the daemon's user (rootless) has subordinate UIDs and GIDs:
 * without, podman maps only the user itself (root inside), and an image
 * with files of other users fails.
 */
static int
container_subuids(const char *user)
{
	static const char *const files[] = { "/etc/subuid", "/etc/subgid" };
	char		 line[512], uid[16];
	size_t		 n = strlen(user);
	u_int		 i, found = 0;
	FILE		*f;

	snprintf(uid, sizeof uid, "%u:", (u_int)getuid());
	for (i = 0; i < nitems(files); i++) {
		if ((f = fopen(files[i], "re")) == NULL)
			continue;
		while (fgets(line, sizeof line, f) != NULL) {
			if ((strncmp(line, user, n) == 0 && line[n] == ':') ||
			    strncmp(line, uid, strlen(uid)) == 0) {
				found++;
				break;
			}
		}
		fclose(f);
	}
	return (found == nitems(files));
}

/*
 * Finds podman and its runtime once per process: runc wherever it is
 * installed (it works on every layout), else crun where cgroups are not
 * hybrid, else none.
 */
static void
container_probe(void)
{
	char		 hex[DIGEST_HEX];
	const char	*h = path_home();

	if (host.probed)
		return;
	host.probed = 1;
	digest_buf(h, strlen(h), hex);
	memcpy(host.home, hex, sizeof host.home - 1);
	host.home[sizeof host.home - 1] = '\0';
	host.cgroups = container_cgroups();
	host.fence_exec = enforce_find_file("GMUX_FENCE_EXEC",
	    "gmux-fence-exec");
	if (geteuid() != 0) {
		host.user = user_name(getuid());
		host.subuids = container_subuids(host.user);
	}
	if ((host.podman = find_program("podman")) == NULL) {
		host.why = xstrdup("podman is not installed (tests/setup-deps "
		    "installs it)");
		return;
	}
	if (have_program("runc"))
		host.runtime = xstrdup("runc");
	else if (have_program("crun") && strcmp(host.cgroups, "hybrid") != 0)
		host.runtime = xstrdup("crun");
	else {
		xasprintf(&host.why, "no OCI runtime that works with %s "
		    "cgroups (crun refuses hybrid ones): install runc",
		    host.cgroups);
		free(host.podman);
		host.podman = NULL;
	}
}

/* The path of podman, or NULL with *cause if this host has none. */
const char *
container_podman(char **cause)
{
	container_probe();
	if (host.podman == NULL && cause != NULL)
		xasprintf(cause, "image: %s", host.why);
	return (host.podman);
}

/*
 * What gmux doctor and gmux cards say of containers here (a new object):
 * podman, the runtime, the networks a container may have, and why not.
 */
json_t *
container_host_json(void)
{
	container_probe();
	return (json_pack("{s:b,s:s?,s:s?,s:s,s:b,s:[ss],s:b,s:o,s:s?}",
	    "podman", host.podman != NULL, "path", host.podman, "runtime",
	    host.runtime, "cgroups", host.cgroups, "rootless", geteuid() != 0,
	    "network", "none", "host", "fence", host.fence_exec != NULL,
	    "subuids", host.user == NULL ? json_null() :
	    json_boolean(host.subuids), "why", host.why));
}

/*
 * What a rootless host lacks that containers may need (a new string), or
 * NULL: gmux doctor warns with it.
 */
char *
container_host_warning(void)
{
	char	*s;

	container_probe();
	if (host.podman == NULL || host.user == NULL || host.subuids)
		return (NULL);
	xasprintf(&s, "%s has no subordinate UIDs and GIDs (/etc/subuid, "
	    "/etc/subgid): podman maps only %s (root inside), and an image "
	    "with files of other users fails; as root: usermod "
	    "--add-subuids FROM-TO --add-subgids FROM-TO %s", host.user,
	    host.user, host.user);
	return (s);
}

/* The same in one line (the caller frees it). */
char *
container_host_text(void)
{
	char	*s;

	container_probe();
	if (host.podman == NULL)
		return (xstrdup(host.why));
	xasprintf(&s, "podman %s, runtime %s, %s cgroups, %s, network none "
	    "(--deny-net) or host (unfenced, or --allow: %s)",
	    host.podman, host.runtime, host.cgroups, geteuid() != 0 ?
	    "rootless" : "rootful (the daemon runs as root)",
	    host.fence_exec != NULL ? "gmux's fence inside" :
	    "refused, no gmux-fence-exec");
	return (s);
}

/* This daemon's label, HOME in gmux-HOME-jN (its volumes' too). */
const char *
container_label(void)
{
	container_probe();
	return (host.home);
}

/* The container of job id: gmux-HOME-jN.  The caller frees it. */
char *
container_name(u_int id)
{
	char	*name;

	container_probe();
	xasprintf(&name, "gmux-%s-j%u", host.home, id);
	return (name);
}

/*
 * The kernel's pid_max: a runtime refuses an RLIMIT_NPROC above it on some
 * hosts (measured: 32768 taken, 32769 refused), so nproc is held to it.
 */
static rlim_t
container_pid_max(void)
{
	char		*text, *cause = NULL;
	unsigned long	 n;

	if ((text = read_file("/proc/sys/kernel/pid_max", 64, NULL,
	    &cause)) == NULL) {
		free(cause);
		return (RLIM_INFINITY);
	}
	n = strtoul(text, NULL, 10);
	free(text);
	return (n > 0 ? (rlim_t)n : RLIM_INFINITY);
}

/*
 * --ulimit FLAG=SOFT:HARD within the keeper's own limits: podman's
 * defaults may pass the host's hard limit, which the runtime then refuses.
 */
static void
container_limit(char ***argv, const char *flag, int resource, rlim_t max)
{
	struct rlimit	 rl;

	if (getrlimit(resource, &rl) != 0)
		return;
	if (rl.rlim_max > max)
		rl.rlim_max = max;
	if (rl.rlim_cur > rl.rlim_max)
		rl.rlim_cur = rl.rlim_max;
	container_push(argv, "--ulimit");
	if (rl.rlim_max == RLIM_INFINITY)
		container_addf(argv, "%s=-1:-1", flag);
	else
		container_addf(argv, "%s=%llu:%llu", flag,
		    (unsigned long long)rl.rlim_cur,
		    (unsigned long long)rl.rlim_max);
}

/* -v PATH:PATH[:ro] for each path of list that exists. */
static void
container_mounts(char ***argv, char *const *list, const char *how)
{
	struct stat	 st;

	for (; list != NULL && *list != NULL; list++) {
		if (stat(*list, &st) != 0)
			continue;
		container_push(argv, "-v");
		container_addf(argv, "%s:%s%s", *list, *list, how);
	}
}

/* Whether NAME=VALUE is one of gmux's variables (container_vars). */
int
container_var(const char *kv)
{
	u_int	 i;

	for (i = 0; i < nitems(container_vars); i++) {
		if (strncmp(kv, container_vars[i],
		    strlen(container_vars[i])) == 0)
			return (1);
	}
	return (0);
}

/* The environment's gmux variables, by name: -e NAME. */
static void
container_env(char ***argv, char *const *env)
{
	const char	*eq;

	for (; env != NULL && *env != NULL; env++) {
		if ((eq = strchr(*env, '=')) == NULL || !container_var(*env))
			continue;
		container_push(argv, "-e");
		container_addf(argv, "%.*s", (int)(eq - *env), *env);
	}
}

/* The card's device nodes, or its CDI name where the host has a spec. */
static void
container_devices(char ***argv, char *const *devices)
{
	for (; devices != NULL && *devices != NULL; devices++) {
		container_push(argv, "--device");
		container_push(argv, *devices);
	}
}

/*
 * A job with --allow: its fence is installed inside, by gmux-fence-exec
 * as the container's first process, mounted read-only at its own path;
 * the keeper's end of the fence's socket is descriptor 3 (keeper.c).
 */
static void
container_fence(char ***argv, const struct container_spec *c)
{
	if (!c->fenced)
		return;
	container_push(argv, "--preserve-fds=1");
	container_push(argv, "-v");
	container_addf(argv, "%s:%s:ro", host.fence_exec, host.fence_exec);
}

/*
 * A remote job's container (docs/containers.md, "Remote jobs"): no
 * capability, no new privileges, its tree at /work and its working
 * directory there; nothing else of the host's but the share's paths.
 */
static void
container_confined_args(char ***argv, const struct container_spec *c)
{
	container_push(argv, "--cap-drop=all");
	container_push(argv, "--security-opt=no-new-privileges");
	container_push(argv, "-v");
	container_push(argv, c->tree);
	container_push(argv, "--workdir=/work");
}

/*
 * The podman run line of spec's job (its argv after the image), with the
 * variables of env passed by name.  The caller frees it (strv_free).
 */
char **
container_argv(const struct keeper_spec *s, char *const *env)
{
	const struct container_spec	*c = s->container;
	char				**argv, *name;
	char *const			 *a;

	container_probe();
	argv = xcalloc(1, sizeof *argv);
	container_push(&argv, host.podman != NULL ? host.podman : "podman");
	container_push(&argv, "run");
	container_push(&argv, "--rm");
	container_push(&argv, "--pull=never");
	name = container_name(s->id);
	container_addf(&argv, "--name=%s", name);
	free(name);
	container_addf(&argv, "--label=gmux.home=%s", host.home);
	container_addf(&argv, "--label=gmux.job=%u", s->id);
	container_addf(&argv, "--runtime=%s", host.runtime);
	container_addf(&argv, "--network=%s", c->deny_net ? "none" : "host");
	if (c->confined)
		container_confined_args(&argv, c);
	if (s->stdin_path != NULL)
		container_push(&argv, "-i");
	/* An account's podman is set-uid's (newuidmap): its command is not. */
	if (s->as_account && !c->confined)
		container_push(&argv, "--security-opt=no-new-privileges");
	container_limit(&argv, "nofile", RLIMIT_NOFILE, RLIM_INFINITY);
	container_limit(&argv, "nproc", RLIMIT_NPROC, container_pid_max());
	container_devices(&argv, c->devices);
	container_mounts(&argv, c->ro, ":ro");
	container_mounts(&argv, c->rw, "");
	for (a = c->volumes; a != NULL && *a != NULL; a++)
		container_addf(&argv, "--mount=%s", *a);
	container_env(&argv, env);
	if (c->env_file != NULL) {
		container_push(&argv, "--env-file");
		container_push(&argv, c->env_file);
	}
	for (a = c->env; a != NULL && *a != NULL; a++) {
		container_push(&argv, "-e");
		container_push(&argv, *a);
	}
	container_fence(&argv, c);
	container_push(&argv, c->image);
	if (c->fenced)
		container_push(&argv, host.fence_exec);
	for (a = s->argv; *a != NULL; a++)
		container_push(&argv, *a);
	return (argv);
}

/* Runs podman with args; its exit status, -1 if it could not be run. */
static int
container_podman_run(const char *const *args, u_int nargs, int ms,
    char **out)
{
	char	**argv;
	char	 *text;
	u_int	  i;
	int	  status;

	if (container_podman(NULL) == NULL)
		return (-1);
	argv = xcalloc(1, sizeof *argv);
	container_push(&argv, host.podman);
	for (i = 0; i < nargs; i++)
		container_push(&argv, args[i]);
	text = proc_output(argv, ms, &status);
	strv_free(argv);
	if (out != NULL)
		*out = text;
	else
		free(text);
	return (text == NULL ? -1 : status);
}

/* Removes job id's container if it is left (stopped, killed, failed). */
void
container_remove(u_int id)
{
	char		*name = container_name(id);
	const char	*args[] = { "rm", "-f", "-i", "-t", "0", name };
	int		 rc;

	rc = container_podman_run(args, nitems(args), CONTAINER_RM_MS, NULL);
	log_debug("%s: %s: %d", __func__, name, rc);
	free(name);
}

/*
 * One line of podman ps -a --format CONTAINER_PS_FORMAT: a container's ID
 * (hexadecimal) and its gmux.job label, the job's number in decimal (no
 * sign, no leading zero, nothing after).  0 and *id, or -1 for a line
 * that names no job: a container without the label ("<no value>"), or a
 * label gmux did not write, which must not remove job N's container.
 */
static int
container_ps_line(const char *line, u_int *id)
{
	const char		*p = line + strspn(line, "0123456789abcdef");
	unsigned long long	 v = 0;

	if (p == line || p - line > 64 || *p++ != ' ' || *p < '1' ||
	    *p > '9')
		return (-1);
	for (; *p >= '0' && *p <= '9'; p++) {
		if ((v = v * 10 + (u_int)(*p - '0')) > UINT_MAX)
			return (-1);
	}
	if (*p != '\0')
		return (-1);
	*id = (u_int)v;
	return (0);
}

/*
 * What podman ps -a --format CONTAINER_PS_FORMAT printed, a line a
 * container ("ID JOB"): fn(job, arg) for each whose job is not running
 * (running(id) says).  out is cut into lines.
 */
void
container_orphans(char *out, int (*running)(u_int),
    void (*fn)(u_int, void *), void *arg)
{
	char	*line, *next;
	u_int	 id;

	for (line = out; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if (container_ps_line(line, &id) != 0 || running(id))
			continue;
		log_debug("%s: j%u: %.64s is an orphan", __func__, id, line);
		fn(id, arg);
	}
}

static void
container_sweep_one(u_int id, void *arg)
{
	container_remove(id);
}

/*
 * At the daemon's start: removes this daemon's containers whose job is not
 * running (running(id) says), the orphans of a keeper that died.  Only
 * where a container job was ever started here (the mark), so a daemon
 * that never ran one never runs podman.
 */
void
container_sweep(int (*running)(u_int))
{
	char		*mark, *out = NULL, *label;
	const char	*args[] = { "ps", "-a", "--format",
			    CONTAINER_PS_FORMAT, "--filter", NULL };

	xasprintf(&mark, "%s/containers", path_home());
	if (access(mark, F_OK) != 0 || container_podman(NULL) == NULL) {
		free(mark);
		return;
	}
	free(mark);
	xasprintf(&label, "label=gmux.home=%s", host.home);
	args[5] = label;
	if (container_podman_run(args, nitems(args), CONTAINER_PS_MS,
	    &out) == 0)
		container_orphans(out, running, container_sweep_one, NULL);
	free(out);
	free(label);
}

/* Marks this home as one that has run a container (container_sweep). */
static void
container_mark(void)
{
	char	*mark, *cause = NULL;

	xasprintf(&mark, "%s/containers", path_home());
	if (access(mark, F_OK) != 0 &&
	    write_file_atomic(mark, "", 0, 0600, &cause) != 0) {
		log_warnx("%s: %s", __func__, cause);
		free(cause);
	}
	free(mark);
}

/*
 * The card's nodes for a container: its CDI name where the host has an
 * NVIDIA spec, else the NVIDIA or AMD device nodes that exist.  Added to
 * *devices; a fake card has none.
 */
static void
container_card_devices(const struct card *c, char ***devices)
{
	static const char *const nv[] = { "/dev/nvidiactl",
	    "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia[0-9]*" };
	static const char *const amd[] = { "/dev/kfd",
	    "/dev/dri/renderD*" };
	const char *const	*pat = c->vendor == VENDOR_AMD ? amd : nv;
	u_int			 n = c->vendor == VENDOR_AMD ? nitems(amd) :
				     nitems(nv), i;
	glob_t			 g;
	size_t			 k;
	char			*id;

	if (c->fake || (c->vendor != VENDOR_NVIDIA && c->vendor != VENDOR_AMD))
		return;
	if (c->vendor == VENDOR_NVIDIA && (glob("/etc/cdi/nvidia*.yaml", 0,
	    NULL, &g) == 0 || glob("/var/run/cdi/nvidia*.yaml", 0, NULL,
	    &g) == 0)) {
		globfree(&g);
		id = card_device_id(c);
		container_addf(devices, "nvidia.com/gpu=%s", id);
		free(id);
		return;
	}
	for (i = 0; i < n; i++) {
		if (glob(pat[i], 0, NULL, &g) != 0)
			continue;
		for (k = 0; k < g.gl_pathc; k++)
			strv_add(devices, g.gl_pathv[k]);
		globfree(&g);
	}
}

/*
 * Whether r's fence can cover its container: --deny-net is podman's empty
 * network; --allow is gmux's fence inside (container_fence), except where
 * it could not hold: a unix: rule (the supervisor reaches no socket in the
 * container's mounts), a workspace (`podman exec` would run outside the
 * filter), a host without gmux-fence-exec.  0, or -1 with *cause.
 */
static int
container_check_fence(const struct jobreq *r, char **cause)
{
	const struct fence	*f = r->fence;
	const char		*why = NULL;

	container_probe();
	if (f == NULL || (f->deny_net && f->nrules == 0 && f->npins == 0))
		return (0);
	if (fence_has_unix(f))
		why = "a unix: rule cannot reach a socket from inside a "
		    "container";
	else if (r->spec.workspace)
		why = "a workspace's other processes (podman exec) would be "
		    "outside the fence";
	else if (host.fence_exec == NULL)
		why = "gmux-fence-exec is not installed beside gmux";
	if (why == NULL)
		return (0);
	xasprintf(cause, "allow: %s; it is not run unfenced", why);
	return (-1);
}

/*
 * Whether request r, which names an image, can run here as asked: 0, or
 * -1 with *code (an HTTP status) and *cause.  A container the fence
 * cannot cover is refused, never run unfenced.
 */
int
container_check(const struct jobreq *r, int *code, char **cause)
{
	*code = 400;
	/* A remote job's container has no network (container_spec_confine). */
	if (r->confined && r->fence != NULL && (r->fence->nrules != 0 ||
	    r->fence->npins != 0)) {
		xasprintf(cause, "allow: a remote job's container has no "
		    "network; it is not run unfenced");
		return (-1);
	}
	if (container_env_check(r, cause) != 0)
		return (-1);
	if (container_check_fence(r, cause) != 0)
		return (-1);
	if (container_podman(cause) == NULL) {
		*code = 422;
		return (-1);
	}
	return (0);
}

/*
 * What a job on cards (bit i: card i) asking r gets in its container: the
 * same paths a jail lets a remote job reach (the shim and the fake driver
 * to load, the region, MPS's pipes), at their own paths, and the cards'
 * device nodes.  Cleared by container_spec_clear.
 */
void
container_spec_make(uint64_t cards, const struct jobreq *r,
    struct container_spec *cs)
{
	struct jail_spec	 js;
	char			*scripts;
	u_int			 i;

	memset(cs, 0, sizeof *cs);
	memset(&js, 0, sizeof js);
	cs->image = r->spec.image;
	cs->env = r->spec.container_env;
	cs->deny_net = r->fence != NULL && r->fence->deny_net;
	cs->fenced = !r->confined && !cs->deny_net && r->fence != NULL &&
	    r->fence->nrules != 0;
	enforce_jail_paths(cards, &js);
	cs->ro = js.exec;
	cs->rw = js.rw;
	for (i = 0; js.sockets != NULL && js.sockets[i] != NULL; i++)
		strv_add(&cs->rw, js.sockets[i]);
	strv_free(js.sockets);
	/* A job file runs as its copy under the home: it goes in too. */
	xasprintf(&scripts, "%s/scripts/", path_home());
	if (r->argv != NULL && r->argv[0] != NULL &&
	    strncmp(r->argv[0], scripts, strlen(scripts)) == 0 &&
	    strstr(r->argv[0], "/..") == NULL)
		strv_add(&cs->ro, r->argv[0]);
	free(scripts);
	for (i = 0; i < server_cards.n && i < 64; i++) {
		if (cards & (1ULL << i))
			container_card_devices(&server_cards.v[i],
			    &cs->devices);
	}
	container_mark();
}

/*
 * Makes cs a remote job's (job id, over overlay ov, or its own copy of its
 * tree where ov is NULL): its tree is its working directory at /work, and
 * it has no network, since a container on the host's network could reach
 * the host's loopback and abstract sockets, which a remote job may not.
 */
void
container_spec_confine(struct container_spec *cs, u_int id,
    const struct overlay *ov)
{
	char	*work;

	cs->confined = 1;
	cs->deny_net = 1;
	if (ov != NULL) {
		cs->tree = overlay_podman_volume(ov, "/work");
		return;
	}
	work = path_job_file(id, "work");
	xasprintf(&cs->tree, "%s:/work", work);
	free(work);
}

/*
 * The environment podman itself runs in for a remote job (the caller frees
 * it): the daemon's own (podman reads CONTAINERS_*, XDG_*, TMPDIR from it:
 * a client's could point it at files of its choosing), and only gmux's
 * variables of env, for the container to take by name.
 */
char **
container_confined_env(char *const *env)
{
	extern char	**environ;
	char		**out = xcalloc(1, sizeof *out);
	char *const	 *e;

	for (e = environ; *e != NULL; e++) {
		if (!container_var(*e))
			container_push(&out, *e);
	}
	for (e = env; e != NULL && *e != NULL; e++) {
		if (container_var(*e))
			container_push(&out, *e);
	}
	return (out);
}

void
container_spec_clear(struct container_spec *cs)
{
	free(cs->tree);
	free(cs->env_file);
	strv_free(cs->devices);
	strv_free(cs->ro);
	strv_free(cs->rw);
	strv_free(cs->volumes);
	memset(cs, 0, sizeof *cs);
}
