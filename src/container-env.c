/*
 * container-env.c: a devcontainer's containerEnv in a remote job's
 * container (docs/containers.md, "A remote workspace").  Its values go in
 * through an env file of the job's (podman run --env-file), never through
 * podman's own environment, which stays the daemon's: a client's value
 * there could steer podman itself.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "container-int.h"

#define CONTAINER_ENV_VALUE	(64 * 1024)
#define CONTAINER_ENV_TOTAL	(1024 * 1024)
#define CONTAINER_ENV_FILE	"container.env"

/* NAME's value in env (NAME=VALUE strings), or NULL. */
const char *
container_getenv(char *const *env, const char *name)
{
	size_t	 n = strlen(name);

	for (; env != NULL && *env != NULL; env++) {
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
			return (*env + n + 1);
	}
	return (NULL);
}

/* Whether NAME is one gmux sets itself (the shim's among them). */
static int
container_env_reserved(const char *name)
{
	char	*kv;
	int	 rc;

	xasprintf(&kv, "%s=", name);
	rc = container_var(kv);
	free(kv);
	return (rc);
}

/*
 * Whether r's container_env can go in: 0, or -1 with *cause naming the
 * variable.  A name gmux sets itself is refused for every job (the
 * client's value would replace the share's, the shim's or the fence's);
 * a remote job's values must fit an env file, one variable a line.
 */
int
container_env_check(const struct jobreq *r, char **cause)
{
	char *const	*n;
	const char	*v;
	size_t		 total = 0, len;

	for (n = r->spec.container_env; n != NULL && *n != NULL; n++) {
		if (container_env_reserved(*n)) {
			xasprintf(cause, "container_env.%s: gmux sets it "
			    "itself (GMUX_*, CUDA_*, HSA_*, ROCR_*, HIP_*, "
			    "ZE_*, NVIDIA_*, LD_PRELOAD, LD_LIBRARY_PATH, "
			    "RES_OPTIONS): a client's value cannot replace it",
			    *n);
			return (-1);
		}
		if (!r->confined)
			continue;
		if ((v = container_getenv(r->env, *n)) == NULL) {
			xasprintf(cause, "container_env.%s: has no value in "
			    "env", *n);
			return (-1);
		}
		if (strpbrk(v, "\r\n") != NULL) {
			xasprintf(cause, "container_env.%s: its value holds a "
			    "line break (an env file has one variable a "
			    "line)", *n);
			return (-1);
		}
		if ((len = strlen(v)) > CONTAINER_ENV_VALUE) {
			xasprintf(cause, "container_env.%s: its value is over "
			    "64 KiB", *n);
			return (-1);
		}
		if ((total += strlen(*n) + len + 2) > CONTAINER_ENV_TOTAL) {
			xasprintf(cause, "container_env: the values are over "
			    "1 MiB in all");
			return (-1);
		}
	}
	return (0);
}

/*
 * Writes a remote job's container_env (r's names, their values from its
 * env, checked by container_env_check) to its env file, jobs/jN/
 * container.env, 0600 and the account's where podman runs as one (s),
 * and makes cs take it (--env-file) instead of the names, which podman
 * would look up in its own environment.  0, or -1 with *cause.
 */
int
container_env_file(struct container_spec *cs, const struct jobreq *r,
    const struct keeper_spec *s, char **cause)
{
	char *const	*n;
	char		*path, *text;
	size_t		 len = 0, at = 0;
	int		 rc = -1;

	if (!cs->confined || r->spec.container_env == NULL)
		return (0);
	if (container_env_check(r, cause) != 0)	/* its env as it came */
		return (-1);
	for (n = r->spec.container_env; *n != NULL; n++)
		len += strlen(*n) + strlen(container_getenv(r->env, *n)) + 2;
	text = xmalloc(len + 1);
	for (n = r->spec.container_env; *n != NULL; n++)
		at += (size_t)snprintf(text + at, len + 1 - at, "%s=%s\n", *n,
		    container_getenv(r->env, *n));
	path = path_job_file(s->id, CONTAINER_ENV_FILE);
	if (write_file_atomic(path, text, at, 0600, cause) != 0)
		goto out;
	if (s->as_account && tenant_give(path, s->uid, s->gid, cause) != 0) {
		unlink(path);
		goto out;
	}
	cs->env = NULL;
	cs->env_file = path;
	path = NULL;
	rc = 0;
out:
	free(path);
	free(text);
	return (rc);
}

/* Removes job id's env file: the values are not needed once it ends. */
void
container_env_forget(u_int id)
{
	char	*path = path_job_file(id, CONTAINER_ENV_FILE);

	if (unlink(path) != 0 && errno != ENOENT)
		log_warnx("%s: %s: %s", __func__, path, strerror(errno));
	free(path);
}
