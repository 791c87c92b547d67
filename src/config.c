/*
 * config.c: the daemon's settings.  One file, $GMUX_HOME/config (or
 * $XDG_CONFIG_HOME/gmux/config), of KEY=VALUE lines with # comments, as
 * the cluster seed's "one file per computer"; each key can be overridden
 * by GMUX_KEY in the environment.  Unknown keys are reported, not fatal,
 * so one file can serve several versions.
 */

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

#define CONFIG_MAX	(256 * 1024)

static const char *config_keys[] = {
	"JOB_RETENTION_DAYS",
	"BLOB_STORE_SIZE",	/* remote runs (issue 7) */
	"UPLOAD_LIMIT",
	"PULL_LIMIT",
	"REMOTE_READ",		/* remote jobs' jail */
	"REMOTE_PATH",
	"REMOTE_UNCONFINED",
	"REMOTE_LOOPBACK",
	"REMOTE_OVERLAY",	/* remote jobs' trees (worktree.c) */
	"REMOTE_WORK_RETENTION",
	"KEEPER_START_TIMEOUT",	/* a keeper that never starts its job */
	"AUTH_TIMEOUT",
	"TCP_CONNECTIONS_MAX",
	"TCP_ANON_PER_SOURCE",
	"TCP_ANON_GRACE_MS",
	"CLUSTER_MODE",		/* clusters (docs/cluster.md) */
	"CLUSTER_ID",
	"ETCD",
	"NAME",
	"ADDR",
	"CLUSTER_LEASE",
	"TOKENS",		/* a token file hosts share (cluster.md) */
	"UI",			/* the dashboard (issue 12) */
	"ANNOUNCE",		/* discovery (docs/remote.md) */
	"ANNOUNCE_PORT",
	"ANNOUNCE_INTERVAL",
	"TENANT_ACCOUNTS",	/* tenants (docs/tenants.md) */
	"TENANT_HOME_ROOT",
	"TENANT_UID_RANGE",
	"TENANT_ACCOUNT_PREFIX",
	"USER_DISK_LIMIT",
	"TENANT_DISK_EVERY",
	"TENANT_RETENTION_DAYS",
	"DATASETS_DIRECTORIES",
	"PYTHON_INTERPRETERS",
	"HOME_SHARED",		/* images across members (containers.md) */
	"IMAGE_STORE",
	"CONTAINERS_TEMPLATES",	/* containers (docs/containers.md) */
	"CONTAINERS_ALLOW_OWN_IMAGES",
	"CONTAINERS_IMAGES",
};

static struct config_entry	*config_entries;
static u_int			 config_n;

static int
config_known(const char *key)
{
	u_int	 i;

	for (i = 0; i < nitems(config_keys); i++) {
		if (strcmp(config_keys[i], key) == 0)
			return (1);
	}
	return (0);
}

/*
 * Parses a config text into entries (the caller frees them with
 * config_free).  A line that is not KEY=VALUE is an error naming the line.
 */
int
config_parse(const char *text, struct config_entry **out, u_int *n,
    char **cause)
{
	char	*copy, *line, *next, *eq, *k, *v;
	u_int	 lineno = 0;
	int	 rc = 0;

	*out = NULL;
	*n = 0;
	copy = xstrdup(text);
	for (line = copy; line != NULL && rc == 0; line = next) {
		lineno++;
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		line = strtrim(line);
		if (*line == '\0' || *line == '#')
			continue;
		if ((eq = strchr(line, '=')) == NULL) {
			xasprintf(cause, "line %u: not KEY=VALUE", lineno);
			rc = -1;
			break;
		}
		*eq = '\0';
		k = strtrim(line);
		v = strtrim(eq + 1);
		if (*k == '\0' || strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "0123456789_") != strlen(k)) {
			xasprintf(cause, "line %u: '%s' is not a key", lineno,
			    k);
			rc = -1;
			break;
		}
		*out = xreallocarray(*out, *n + 1, sizeof **out);
		(*out)[*n].key = xstrdup(k);
		(*out)[*n].value = xstrdup(v);
		(*n)++;
	}
	free(copy);
	if (rc != 0) {
		config_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return (rc);
}

void
config_free(struct config_entry *e, u_int n)
{
	u_int	 i;

	for (i = 0; i < n; i++) {
		free(e[i].key);
		free(e[i].value);
	}
	free(e);
}

/* Reads the config file, if there is one; a bad one is an error. */
int
config_load(char **cause)
{
	char	*text, *why = NULL;
	u_int	 i;

	config_free(config_entries, config_n);
	config_entries = NULL;
	config_n = 0;
	if ((text = read_file(path_config(), CONFIG_MAX, NULL, &why)) == NULL) {
		free(why);
		return (0);	/* no file: every default */
	}
	if (config_parse(text, &config_entries, &config_n, &why) != 0) {
		xasprintf(cause, "%s: %s", path_config(), why);
		free(why);
		free(text);
		return (-1);
	}
	free(text);
	for (i = 0; i < config_n; i++) {
		if (!config_known(config_entries[i].key))
			log_warnx("%s: unknown key %s", path_config(),
			    config_entries[i].key);
	}
	return (0);
}

/* A setting's value: GMUX_KEY from the environment, then the file. */
const char *
config_get(const char *key)
{
	char		 env[128];
	const char	*v;
	u_int		 i;

	snprintf(env, sizeof env, "GMUX_%s", key);
	if ((v = getenv(env)) != NULL)
		return (v);
	for (i = config_n; i > 0; i--) {
		if (strcmp(config_entries[i - 1].key, key) == 0)
			return (config_entries[i - 1].value);
	}
	return (NULL);
}

/* A number setting; a bad value is reported and the default used. */
u_int
config_uint(const char *key, u_int def, u_int min, u_int max)
{
	const char	*v = config_get(key);
	char		*cause = NULL;
	u_int		 n;

	if (v == NULL)
		return (def);
	if (parse_uint(v, min, max, &n, &cause) != 0) {
		log_warnx("%s: %s; using %u", key, cause, def);
		free(cause);
		return (def);
	}
	return (n);
}
