/*
 * term.c: a terminal job's side (docs/terminals.md).  Its command runs in
 * a tmux session whose server is the job's own process, started by the
 * keeper in the foreground on a private socket in the job's directory, so
 * the session and all in it have the job's group, environment, fence and
 * jail.  The daemon writes the session's files here before the keeper
 * starts; the keeper is not changed, only the command it is given.
 */

#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "term-int.h"

/*
 * The job's command.  tmux's -D keeps the server in the foreground (the
 * job's process group) and turns exit-empty off, which the conf turns on
 * again so that the server, and the job, end with the session.  The exit
 * status is the session command's, which cmd.sh writes.
 */
static const char term_wrapper[] =
	"export GMUX_TERM_DIR=\"$1\" GMUX_TERM_CWD=\"$(pwd)\"; "
	"unset TMUX TMUX_PANE; cd \"$1\" || exit 126; "
	"tmux -D -S tmux.sock -f tmux.conf; r=$?; "
	"if [ -s exit ]; then r=$(cat exit); fi; exit \"$r\"";

/*
 * The one session.  Its command is cmd.sh by name: the conf holds no
 * argument of the user's, so it needs no quoting of tmux's.
 */
static const char term_conf[] =
	"set -s exit-empty on\n"
	"set -g remain-on-exit off\n"
	"new-session -d -s gmux -x 80 -y 24 -c \"$GMUX_TERM_CWD\" "
	"\"exec /bin/sh \\\"$GMUX_TERM_DIR/cmd.sh\\\"\"\n";

/*
 * A remote shell's session outside its jail (workspace_shell_unjail): no
 * key may reach tmux's command prompt or run a command on the host (a new
 * window, run-shell, copy-pipe); C-b d detaches, as anywhere.
 */
static const char term_conf_locked[] =
	"unbind-key -a -T prefix\n"
	"unbind-key -a -T root\n"
	"unbind-key -a -T copy-mode\n"
	"unbind-key -a -T copy-mode-vi\n"
	"bind-key -T prefix d detach-client\n"
	"set -g mouse off\n";

/* The job's terminal directory, jobs/jN/term.  The caller frees it. */
char *
term_dir(u_int id)
{
	return (path_job_file(id, "term"));
}

/* Appends s to *buf as one word for sh: in single quotes, ' as '\''. */
static void
term_quote(char **buf, size_t *len, const char *s)
{
	size_t	 n = strlen(s), i, o = *len;

	*buf = xrealloc(*buf, o + 4 * n + 4);
	(*buf)[o++] = '\'';
	for (i = 0; i < n; i++) {
		if (s[i] == '\'') {
			memcpy(*buf + o, "'\\''", 4);
			o += 4;
		} else
			(*buf)[o++] = s[i];
	}
	(*buf)[o++] = '\'';
	(*buf)[o++] = ' ';
	(*buf)[o] = '\0';
	*len = o;
}

/* cmd.sh: says the session runs, runs the command, keeps its status. */
static char *
term_script(char *const *argv)
{
	char	*buf = xstrdup(": >\"$GMUX_TERM_DIR/ready\"\n");
	size_t	 len = strlen(buf), i;

	for (i = 0; argv[i] != NULL; i++)
		term_quote(&buf, &len, argv[i]);
	buf = xrealloc(buf, len + 64);
	snprintf(buf + len, 64, "\necho $? >\"$GMUX_TERM_DIR/exit\"\n");
	return (buf);
}

/* Writes name in dir; -1 with *cause. */
static int
term_write(const char *dir, const char *name, const char *text, char **cause)
{
	char	*path;
	int	 rc;

	xasprintf(&path, "%s/%s", dir, name);
	rc = write_file_replace(path, text, strlen(text), 0600, cause);
	free(path);
	return (rc);
}

/* A fresh terminal directory: what a previous run left goes. */
static int
term_fresh(const char *dir, char **cause)
{
	static const char *const old[] = { "ready", "exit", "tmux.sock" };
	char			*path;
	size_t			 i;

	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		xasprintf(cause, "%s: %s", dir, strerror(errno));
		return (-1);
	}
	for (i = 0; i < nitems(old); i++) {
		xasprintf(&path, "%s/%s", dir, old[i]);
		unlink(path);
		free(path);
	}
	return (0);
}

/*
 * Readies a terminal job's start: its directory and files, the keeper's
 * command in *argv (the caller frees it with strv_free), and for a remote
 * job the jail's grants of the directory and the terminal devices.
 */
int
term_job_prepare(const struct job *j, struct jail_spec *js, char ***argv,
    char **cause)
{
	char	*dir, *script, *conf, **in = NULL;
	int	 rc = -1;

	dir = term_dir(j->id);
	if (term_fresh(dir, cause) != 0)
		goto out;
	/* A shell in a workspace: its session execs into the container. */
	if (j->req.spec.in_workspace != NULL &&
	    (in = workspace_shell_argv(j, cause)) == NULL)
		goto out;
	script = term_script(in != NULL ? in : j->req.argv);
	strv_free(in);
	rc = term_write(dir, "cmd.sh", script, cause);
	free(script);
	if (rc == 0) {
		xasprintf(&conf, "%s%s", j->req.confined &&
		    j->req.spec.in_workspace != NULL ? term_conf_locked : "",
		    term_conf);
		rc = term_write(dir, "tmux.conf", conf, cause);
		free(conf);
	}
	if (rc != 0)
		goto out;
	*argv = NULL;
	strv_add(argv, "/bin/sh");
	strv_add(argv, "-c");
	strv_add(argv, term_wrapper);
	strv_add(argv, "gmux-shell");
	strv_add(argv, dir);
	if (js != NULL && js->work != NULL) {
		strv_add(&js->sockets, dir);
		/*
		 * XXX the panes' slaves are opened by path (even through
		 * TIOCGPTPEER, Landlock checks the open), so /dev/pts goes
		 * whole: other jobs' terminals of this user are in reach
		 * (docs/terminals.md, "Limits").  A devpts instance of the
		 * job's own, in its mount namespace, would close it.
		 */
		strv_add(&js->devs, "/dev/ptmx");
		strv_add(&js->devs, "/dev/pts");
	}
	rc = 0;
out:
	free(dir);
	return (rc);
}

/*
 * "publish": [PORT, ...], 1-65535 each, at most JOBREQ_PUBLISH_MAX, no
 * port twice.  Fills v and *n; -1 with *cause naming the field.
 */
int
term_publish_from_json(json_t *a, u_int *v, u_int *n, char **cause)
{
	json_t		*e;
	json_int_t	 p;
	size_t		 i, k;

	if (!json_is_array(a) || json_array_size(a) > JOBREQ_PUBLISH_MAX) {
		xasprintf(cause, "publish: an array of at most %d ports",
		    JOBREQ_PUBLISH_MAX);
		return (-1);
	}
	*n = 0;
	json_array_foreach(a, i, e) {
		p = json_integer_value(e);
		if (!json_is_integer(e) || p < 1 || p > 65535) {
			xasprintf(cause, "publish: a port is 1 to 65535");
			return (-1);
		}
		for (k = 0; k < *n; k++) {
			if (v[k] == (u_int)p) {
				xasprintf(cause, "publish: port %u is given "
				    "twice", v[k]);
				return (-1);
			}
		}
		v[(*n)++] = (u_int)p;
	}
	return (0);
}

/* "terminal" and "publish", in a request or a job as the API shows it. */
void
term_publish_to_json(json_t *o, int flags, const u_int *v, u_int n)
{
	json_t	*a;
	u_int	 i;

	if (flags & JOB_TERM)
		json_object_set_new(o, "terminal", json_true());
	if (n == 0)
		return;
	a = json_array();
	for (i = 0; i < n; i++)
		json_array_append_new(a, json_integer(v[i]));
	json_object_set_new(o, "publish", a);
}
