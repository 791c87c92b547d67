/*
 * workspace.c: the daemon's side of a shell inside a workspace
 * (docs/containers.md, "A shell in a workspace").  The shell is a terminal
 * job of the workspace's owner whose tmux session, on the host, runs
 * `podman exec -it` into the workspace's container; a workspace has at
 * most one live shell (a second gmux shell NAME attaches to it), and its
 * shells end with it.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

/*
 * What a shell's session runs: it waits (up to a minute) for the
 * container, which podman may still be making when the workspace is
 * running, then becomes podman exec.  Its arguments: podman, the
 * container, the command inside.  No detach keys: tmux's C-b d detaches.
 */
#define WORKSPACE_EXEC_SH \
    "p=$1 c=$2; shift 2; n=0; " \
    "until [ \"$(\"$p\" container inspect -f '{{.State.Running}}' " \
    "\"$c\" 2>/dev/null)\" = true ]; do " \
    "n=$((n+1)); if [ $n -gt 600 ]; then " \
    "echo \"gmux: the workspace's container $c is not running\" >&2; " \
    "exit 125; fi; sleep 0.1; done; " \
    "exec \"$p\" exec -it --detach-keys= -e TERM \"$c\" \"$@\""

/* The owner's live (queued or running) workspace called name, or NULL. */
struct job *
workspace_find_live(const char *owner, const char *name)
{
	struct job	*j;

	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (j->req.spec.workspace && j->req.spec.name != NULL &&
		    (j->state == JOB_QUEUED || j->state == JOB_RUNNING) &&
		    strcmp(j->req.spec.name, name) == 0 &&
		    strcmp(j->owner, owner) == 0)
			return (j);
	}
	return (NULL);
}

/* The live shell in owner's workspace name, or NULL. */
struct job *
workspace_shell_live(const char *owner, const char *name)
{
	struct job	*j;

	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (j->req.spec.in_workspace != NULL && !job_ended(j) &&
		    strcmp(j->req.spec.in_workspace, name) == 0 &&
		    strcmp(j->owner, owner) == 0)
			return (j);
	}
	return (NULL);
}

/*
 * Whether owner may have the shell r asks for in a workspace: 0, or -1
 * with *code (an HTTP status) and *cause.  The shell takes nothing of its
 * own: inside the container it has the workspace's share, caps and fence.
 */
int
workspace_shell_check(const struct jobreq *r, const char *owner, int *code,
    char **cause)
{
	const char	*name = r->spec.in_workspace;
	struct job	*ws;

	*code = 400;
	if (r->seats != 0 || r->spec.image != NULL || r->fence != NULL ||
	    r->npublish != 0 || r->manifest != NULL) {
		xasprintf(cause, "in_workspace: a shell in a workspace has the "
		    "workspace's share, image, fence and ports; it asks for "
		    "none of its own");
		return (-1);
	}
	/* (podman exec CONTAINER ARGV: an option there would be podman's) */
	if (r->argv == NULL || r->argv[0] == NULL || r->argv[0][0] == '-') {
		xasprintf(cause, "argv: a shell in a workspace runs a command "
		    "(not an option) inside");
		return (-1);
	}
	if ((ws = workspace_find_live(owner, name)) == NULL) {
		*code = 404;
		xasprintf(cause, "in_workspace: no workspace %s", name);
		return (-1);
	}
	if (ws->state != JOB_RUNNING) {
		*code = 409;
		xasprintf(cause, "in_workspace: %s is queued: %s", name,
		    ws->reason != NULL ? ws->reason : "waiting");
		return (-1);
	}
	return (0);
}

/*
 * The command shell j's session runs (the caller frees it with
 * strv_free): podman exec into its workspace's container, of j's command.
 * NULL with *cause if the workspace has gone.
 */
char **
workspace_shell_argv(const struct job *j, char **cause)
{
	struct job	*ws;
	char		**argv;
	const char	*podman;
	size_t		 n = strv_len(j->req.argv), i;

	ws = workspace_find_live(j->owner, j->req.spec.in_workspace);
	if (ws == NULL || ws->state != JOB_RUNNING) {
		xasprintf(cause, "in_workspace: no running workspace %s",
		    j->req.spec.in_workspace);
		return (NULL);
	}
	if ((podman = container_podman(cause)) == NULL)
		return (NULL);
	argv = xcalloc(n + 7, sizeof *argv);
	argv[0] = xstrdup("/bin/sh");
	argv[1] = xstrdup("-c");
	argv[2] = xstrdup(WORKSPACE_EXEC_SH);
	argv[3] = xstrdup("gmux-workspace-shell");
	argv[4] = xstrdup(podman);
	argv[5] = container_name(ws->id);
	for (i = 0; i < n; i++)
		argv[6 + i] = xstrdup(j->req.argv[i]);
	return (argv);
}

/*
 * A remote shell in a workspace (docs/containers.md, "A remote
 * workspace"): its session runs podman exec into the confined container,
 * which is its confinement as the workspace's podman run is, so it runs
 * outside the Landlock jail (podman could not run in it), in its own
 * directory, with podman's environment the daemon's (a client's
 * CONTAINERS_CONF or XDG_* would point podman elsewhere).  Its tmux
 * session is locked (term.c): no key but the detach runs a tmux command.
 */
void
workspace_shell_unjail(const struct job *j, struct keeper_spec *s)
{
	char	**env;

	if (j->req.spec.in_workspace == NULL || !j->req.confined)
		return;
	s->jail = NULL;
	s->overlay = NULL;
	s->cwd = s->dir;
	env = container_confined_env(s->env);
	strv_free(s->env);
	s->env = env;
}

/*
 * The same shell of an owner with an account (its keeper runs as it, HOME
 * its home): podman exec as the account, in the account's own store, as
 * its workspace's podman run is (container-account.c).
 */
void
workspace_shell_account(const struct job *j, struct keeper_spec *s)
{
	char	**old = s->env, *home = NULL;
	size_t	  i;

	if (j->req.spec.in_workspace == NULL || !j->req.confined ||
	    !s->as_account)
		return;
	for (i = 0; old != NULL && old[i] != NULL; i++) {
		if (strncmp(old[i], "HOME=", 5) == 0)
			home = old[i] + 5;
	}
	if (home == NULL)
		return;
	container_account_podman_env(&s->env, home);
	strv_free(old);
}

/* Workspace ws has ended: so do the shells in it. */
void
workspace_ended(struct job *ws)
{
	struct job	*j;

	if (!ws->req.spec.workspace || ws->req.spec.name == NULL)
		return;
	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (j->req.spec.in_workspace != NULL && !job_ended(j) &&
		    strcmp(j->req.spec.in_workspace, ws->req.spec.name) == 0 &&
		    strcmp(j->owner, ws->owner) == 0) {
			log_debug("%s: %s ends with %s", __func__, j->name,
			    ws->name);
			job_stop(j, 0, "stopped");
		}
	}
}
