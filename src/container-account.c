/*
 * container-account.c: a containerized job as its tenant's account
 * (docs/containers.md, "As the job's owner"): rootless podman run by the
 * account, its storage under the account's home, the image loaded into
 * it from the daemon's store the first time a job of the account needs
 * it, and its container removed as the account.
 */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "container-int.h"

#define ACCOUNT_PODMAN_MS	30000
#define ACCOUNT_LOAD_MS		(10 * 60 * 1000)

/*
 * What would point the account's podman away from its home: not passed
 * on (the caller's own, the daemon's runtime directory, a remote
 * job's TMPDIR in its jail).
 */
static const char *const account_unset[] = {
	"XDG_RUNTIME_DIR=", "XDG_DATA_HOME=", "XDG_CONFIG_HOME=",
	"CONTAINERS_", "DBUS_SESSION_BUS_ADDRESS=", "REGISTRY_AUTH_FILE=",
	"TMPDIR=",
};

/*
 * An account's container job starts podman in / (the caller's directory,
 * or the daemon's HOME, may be closed to the account; the container has
 * the image's own).  Always 0.
 */
int
container_account_cwd(struct keeper_spec *s)
{
	if (s->container != NULL && s->as_account)
		s->cwd = "/";
	return (0);
}

/*
 * The environment an account's podman runs in (in its keeper): *envp
 * without what would send it elsewhere than the account's home, and that
 * home as HOME (from the job's own, which a remote job's podman does not
 * run in).  *envp is replaced (the old one is the caller's).
 */
void
container_account_env(const struct keeper_spec *s, char ***envp)
{
	const char	*home = container_getenv(s->env, "HOME");

	if (s->container == NULL || !s->as_account || home == NULL)
		return;
	container_account_podman_env(envp, home);
}

/*
 * *envp without what would send an account's podman elsewhere than home,
 * and home as HOME; *envp is replaced (the old one is the caller's).  A
 * remote shell in a workspace runs its podman exec so too (workspace.c).
 */
void
container_account_podman_env(char ***envp, const char *home)
{
	char		**out = NULL, *const *e;
	u_int		  i;

	for (e = *envp; e != NULL && *e != NULL; e++) {
		for (i = 0; i < nitems(account_unset); i++) {
			if (strncmp(*e, account_unset[i],
			    strlen(account_unset[i])) == 0)
				break;
		}
		if (i == nitems(account_unset) && strncmp(*e, "HOME=", 5) != 0)
			container_push(&out, *e);
	}
	container_addf(&out, "HOME=%s", home);
	*envp = out;
}

/*
 * setpriv ... env -i HOME=HOME PATH=... podman ARGS: podman as the account
 * uid, in its home.  The caller frees it (strv_free).
 */
char **
container_account_argv(uid_t uid, gid_t gid, const char *home,
    const char *const *args, u_int nargs)
{
	char	**argv = NULL;
	u_int	  i;

	container_push(&argv, "setpriv");
	container_addf(&argv, "--reuid=%u", (u_int)uid);
	container_addf(&argv, "--regid=%u", (u_int)gid);
	container_push(&argv, "--clear-groups");
	container_push(&argv, "--");
	container_push(&argv, "env");
	container_push(&argv, "-i");
	container_addf(&argv, "HOME=%s", home);
	container_push(&argv, "PATH=/usr/local/bin:/usr/bin:/bin");
	container_push(&argv, container_podman(NULL));
	for (i = 0; i < nargs; i++)
		container_push(&argv, args[i]);
	return (argv);
}

/* Runs argv; its exit status, -1 if it could not be run. */
static int
account_status(char *const *argv, int ms)
{
	char	*out;
	int	 status;

	if ((out = proc_output(argv, ms, &status)) == NULL)
		return (-1);
	free(out);
	return (status);
}

/* Runs podman ARGS as s's account; its exit status, -1 if none. */
static int
account_run(const struct keeper_spec *s, const char *home,
    const char *const *args, u_int nargs)
{
	char	**argv;
	int	  status;

	argv = container_account_argv(s->uid, s->gid, home, args, nargs);
	status = account_status(argv, ACCOUNT_PODMAN_MS);
	strv_free(argv);
	return (status);
}

/*
 * Loads image into the account's store from the daemon's: podman save by
 * the daemon's user piped to podman load by the account.  The names are
 * the script's arguments, never part of it.
 */
static int
account_load(const struct keeper_spec *s, const char *home,
    const char *image)
{
	const char	 *args[] = { "load", "-q" };
	char		**load, **argv = NULL;
	size_t		  i;
	int		  status;

	container_push(&argv, "/bin/sh");
	container_push(&argv, "-c");
	container_push(&argv, "i=$1 p=$2; shift 2; \"$p\" save -- \"$i\" | "
	    "\"$@\"");
	container_push(&argv, "sh");
	container_push(&argv, image);
	container_push(&argv, container_podman(NULL));
	load = container_account_argv(s->uid, s->gid, home, args, nitems(args));
	for (i = 0; load[i] != NULL; i++)
		container_push(&argv, load[i]);
	strv_free(load);
	status = account_status(argv, ACCOUNT_LOAD_MS);
	strv_free(argv);
	return (status);
}

/*
 * In the keeper of an account's container job, before it starts: the
 * image into the account's store if it is not there but in the daemon's
 * (once: it is kept).  An image in neither is left for podman run to
 * refuse (exit 125, "image not known").  0, or -1 with *cause.
 */
int
container_account_load(const struct keeper_spec *s, char *const *env,
    char **cause)
{
	const char	*home, *image, *exists[] = { "image", "exists", NULL };
	char		*ours[] = { NULL, "image", "exists", NULL, NULL };

	if (s->container == NULL || !s->as_account)
		return (0);
	if ((home = container_getenv(env, "HOME")) == NULL) {
		xasprintf(cause, "image: the account has no home");
		return (-1);
	}
	image = exists[2] = s->container->image;
	if (account_run(s, home, exists, nitems(exists)) == 0)
		return (0);
	ours[0] = (char *)container_podman(NULL);
	ours[3] = (char *)image;
	if (account_status(ours, ACCOUNT_PODMAN_MS) != 0)
		return (0);
	if (account_load(s, home, image) != 0 ||
	    account_run(s, home, exists, nitems(exists)) != 0) {
		xasprintf(cause, "image: %s could not be loaded into the "
		    "account's store from the daemon's", image);
		return (-1);
	}
	log_debug("%s: j%u: %s loaded for uid %u", __func__, s->id, image,
	    (u_int)s->uid);
	return (0);
}

/* Removes an account's job's container, as the account. */
void
container_account_remove(const struct keeper_spec *s, char *const *env)
{
	const char	*home = container_getenv(env, "HOME");
	const char	*args[] = { "rm", "-f", "-i", "-t", "0", NULL };
	char		*name;
	int		 rc;

	if (!s->as_account || home == NULL) {
		container_remove(s->id);
		return;
	}
	name = container_name(s->id);
	args[5] = name;
	rc = account_run(s, home, args, nitems(args));
	log_debug("%s: %s as uid %u: %d", __func__, name, (u_int)s->uid, rc);
	free(name);
}

/*
 * The orphan sweep of the accounts' stores: at the daemon's start, each
 * account whose home has a rootless store is asked (podman ps -a as the
 * account, off the loop) for this daemon's containers, and those whose
 * job is not running (a keeper killed with the daemon) are removed, as
 * the account, off the loop too.
 */
struct account_sweep {
	uid_t	 uid;
	gid_t	 gid;
	char	*home;
	char   **names;		/* its orphans */
};

static int	(*account_running)(u_int);

static void
account_sweep_free(struct account_sweep *w)
{
	free(w->home);
	strv_free(w->names);
	free(w);
}

static void
account_removed_cb(char *out, int status, void *arg)
{
	struct account_sweep	*w = arg;

	tenant_swept(w->uid);

	log_info("%s: uid %u: %u orphan container(s) removed (%d)", __func__,
	    (u_int)w->uid, (u_int)strv_len(w->names), status);
	free(out);
	account_sweep_free(w);
}

static void
account_orphan(u_int id, void *arg)
{
	struct account_sweep	*w = arg;
	char			*name = container_name(id);

	strv_add(&w->names, name);
	free(name);
}

/* In the loop: an account's containers listed; its orphans removed. */
static void
account_listed_cb(char *out, int status, void *arg)
{
	struct account_sweep	*w = arg;
	const char		*rm[] = { "rm", "-f", "-i", "-t", "0" };
	char			**argv, *cause = NULL;
	u_int			  i;

	if (status != 0 || out == NULL)
		goto done;
	w->names = xcalloc(1, sizeof *w->names);
	container_orphans(out, account_running, account_orphan, w);
	if (strv_len(w->names) == 0)
		goto done;
	argv = container_account_argv(w->uid, w->gid, w->home, rm, nitems(rm));
	for (i = 0; w->names[i] != NULL; i++)
		container_push(&argv, w->names[i]);
	if (proc_async_start(argv, ACCOUNT_PODMAN_MS, account_removed_cb, w,
	    &cause) == 0) {
		strv_free(argv);
		free(out);
		return;
	}
	log_warnx("%s: %s", __func__, cause);
	free(cause);
	strv_free(argv);
done:
	tenant_swept(w->uid);
	free(out);
	account_sweep_free(w);
}

/* One account's sweep, if its home has a rootless store: 1 if started. */
static int
account_sweep_one(uid_t uid, gid_t gid, const char *home, void *arg)
{
	struct account_sweep	*w;
	const char		*ps[] = { "ps", "-a", "--format",
				    CONTAINER_PS_FORMAT, "--filter", NULL };
	char			**argv, *store, *label, *cause = NULL;
	int			  rc;

	xasprintf(&store, "%s/.local/share/containers/storage", home);
	if (container_podman(NULL) == NULL || access(store, F_OK) != 0) {
		free(store);
		return (0);
	}
	free(store);
	xasprintf(&label, "label=gmux.home=%s", container_label());
	ps[5] = label;
	w = xcalloc(1, sizeof *w);
	w->uid = uid;
	w->gid = gid;
	w->home = xstrdup(home);
	argv = container_account_argv(uid, gid, home, ps, nitems(ps));
	if ((rc = proc_async_start(argv, ACCOUNT_PODMAN_MS, account_listed_cb,
	    w, &cause)) != 0) {
		log_warnx("%s: %s", __func__, cause);
		free(cause);
		account_sweep_free(w);
	}
	strv_free(argv);
	free(label);
	return (rc == 0);
}

/*
 * At the daemon's start: the accounts' orphan containers, removed off the
 * loop (running(id) says whether job id runs).
 */
void
container_account_sweep(int (*running)(u_int))
{
	account_running = running;
	tenant_accounts_each(account_sweep_one, NULL);
}
