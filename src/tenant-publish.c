/*
 * tenant-publish.c: what every job may read, none write
 * (docs/tenants.md): DATASETS_DIRECTORIES, and the named interpreters of
 * PYTHON_INTERPRETERS that `gmux run --python NAME` picks.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

/*
 * NAME's interpreter from PYTHON_INTERPRETERS (NAME=PATH,...): 0 with
 * *path (the caller frees it); -1 with *cause naming those there are.
 */
int
tenant_python(const char *name, char **path, char **cause)
{
	const char	*v = config_get("PYTHON_INTERPRETERS");
	char		*copy, *item, *next, *eq, *val, *names = NULL, *tmp;
	int		 rc = -1;

	*path = NULL;
	copy = xstrdup(v != NULL ? v : "");
	for (item = copy; item != NULL && *item != '\0'; item = next) {
		if ((next = strchr(item, ',')) != NULL)
			*next++ = '\0';
		if ((eq = strchr(item, '=')) == NULL ||
		    *(val = strtrim(eq + 1)) != '/')
			continue;	/* not NAME=/PATH */
		*eq = '\0';
		if (strcmp(strtrim(item), name) == 0 && rc != 0) {
			*path = xstrdup(val);
			rc = 0;
		}
		xasprintf(&tmp, "%s%s%s", names ? names : "", names ? ", " :
		    "", strtrim(item));
		free(names);
		names = tmp;
	}
	if (rc != 0)
		xasprintf(cause, "python: no interpreter '%.32s' here (%s)",
		    name, names != NULL ? names : "PYTHON_INTERPRETERS names "
		    "none");
	free(names);
	free(copy);
	return (rc);
}

/* The directory above path's bin/ (its prefix), or path's own. */
static char *
tenant_prefix_of(const char *path)
{
	char	*p = xstrdup(path), *slash;

	if ((slash = strrchr(p, '/')) != NULL && slash != p)
		*slash = '\0';
	if ((slash = strrchr(p, '/')) != NULL && slash != p &&
	    strcmp(slash, "/bin") == 0)
		*slash = '\0';
	return (p);
}

/* A confined job's jail reads every dataset, and its interpreter's. */
static void
tenant_publish_jail(struct jail_spec *js, const char *python)
{
	char	**dirs = tenant_datasets(), *prefix;
	size_t	  i;

	for (i = 0; dirs != NULL && dirs[i] != NULL; i++)
		strv_add(&js->exec, dirs[i]);	/* read, never write */
	strv_free(dirs);
	if (python != NULL) {
		prefix = tenant_prefix_of(python);
		strv_add(&js->exec, prefix);
		free(prefix);
	}
}

/*
 * What j's start needs of what is published: its interpreter first in
 * its PATH, as its command if that is python or python3 (*argv then a
 * copy the caller frees), in GMUX_PYTHON; its jail's reads.  -1 with
 * *cause if its interpreter is not (or no longer) published.
 */
int
tenant_publish(const struct job *j, char ***argv, char ***env,
    struct jail_spec *js, char **cause)
{
	const char	*name = j->req.spec.python, *path = NULL, *e;
	char		*python = NULL, *dir;
	size_t		 i;

	if (name != NULL && tenant_python(name, &python, cause) != 0)
		return (-1);
	if (js != NULL)
		tenant_publish_jail(js, python);
	if (python == NULL)
		return (0);
	for (i = 0; (e = (*env)[i]) != NULL; i++) {
		if (strncmp(e, "PATH=", 5) == 0)
			path = e + 5;
	}
	dir = xstrdup(python);
	*strrchr(dir, '/') = '\0';
	job_env_set(env, "PATH=%s%s%s", dir, path != NULL ? ":" : "",
	    path != NULL ? path : "");
	job_env_set(env, "GMUX_PYTHON=%s", python);
	free(dir);
	if (strcmp((*argv)[0], "python") == 0 ||
	    strcmp((*argv)[0], "python3") == 0) {
		*argv = strv_copy(*argv);
		free((*argv)[0]);
		(*argv)[0] = python;
		python = NULL;
	}
	free(python);
	return (0);
}
