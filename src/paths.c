/*
 * paths.c: where gmux keeps its files.  With $GMUX_HOME everything is under
 * it (several daemons and tests side by side); otherwise XDG: state under
 * $XDG_STATE_HOME/gmux, configuration under $XDG_CONFIG_HOME/gmux and the
 * socket under $XDG_RUNTIME_DIR/gmux.
 */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

static char	*home;		/* state: database, jobs */
static char	*confdir;
static char	*rundir;
static char	*sock, *db, *jobs, *config;

static char *
xdg_dir(const char *var, const char *fallback)
{
	const char	*v = getenv(var), *h;
	char		*s;

	if (v != NULL && *v == '/') {
		xasprintf(&s, "%s/gmux", v);
		return (s);
	}
	if (fallback == NULL)
		return (NULL);
	if ((h = getenv("HOME")) == NULL || *h == '\0')
		h = "/tmp";
	xasprintf(&s, "%s/%s/gmux", h, fallback);
	return (s);
}

static void
paths_init(void)
{
	const char	*g = getenv("GMUX_HOME");

	if (home != NULL)
		return;
	if (g != NULL && *g != '\0') {
		home = xstrdup(g);
		confdir = xstrdup(g);
		rundir = xstrdup(g);
	} else {
		home = xdg_dir("XDG_STATE_HOME", ".local/state");
		confdir = xdg_dir("XDG_CONFIG_HOME", ".config");
		if ((rundir = xdg_dir("XDG_RUNTIME_DIR", NULL)) == NULL)
			rundir = xstrdup(home);
	}
	xasprintf(&sock, "%s/gmux.sock", rundir);
	xasprintf(&db, "%s/state.db", home);
	xasprintf(&jobs, "%s/jobs", home);
	xasprintf(&config, "%s/config", confdir);
}

const char *
path_home(void)
{
	paths_init();
	return (home);
}

const char *
path_socket(void)
{
	paths_init();
	return (sock);
}

const char *
path_db(void)
{
	paths_init();
	return (db);
}

const char *
path_jobs(void)
{
	paths_init();
	return (jobs);
}

const char *
path_config(void)
{
	paths_init();
	return (config);
}

/*
 * The task broker's socket for workers (docs/tasks.md): the one socket of
 * the host's a jailed job may reach, when it is a task worker.
 */
const char *
path_task_socket(void)
{
	static char	*s;

	if (s == NULL)
		xasprintf(&s, "%s/tasks/w/worker.sock", path_home());
	return (s);
}

/* Returns the job's directory; the caller frees it. */
char *
path_job(u_int id)
{
	char	*s;

	xasprintf(&s, "%s/j%u", path_jobs(), id);
	return (s);
}

/* Returns a file in the job's directory; the caller frees it. */
char *
path_job_file(u_int id, const char *name)
{
	char	*s;

	xasprintf(&s, "%s/j%u/%s", path_jobs(), id, name);
	return (s);
}

/*
 * Whether path lies beneath dir (both absolute and real, without a
 * trailing slash but "/"): a prefix that ends at a component, never dir
 * itself.  A NULL dir holds nothing.
 */
int
path_under(const char *path, const char *dir)
{
	size_t	 len;

	if (dir == NULL)
		return (0);
	len = strcmp(dir, "/") == 0 ? 0 : strlen(dir);
	return (strncmp(path, dir, len) == 0 && path[len] == '/' &&
	    strcmp(path, "/") != 0);
}
