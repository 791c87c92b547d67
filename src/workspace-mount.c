/*
 * workspace-mount.c: what a workspace has mounted (docs/containers.md,
 * "Home, cache and mounts"): the owner's home at its own path, the
 * owner's cache volume at /cache, and a request's "mounts" (a
 * devcontainer's): binds of paths within the owner's home, and volumes,
 * which are the owner's own (their names are prefixed with it).  Every
 * bind's source is resolved and checked again when the container starts.
 */

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define WM_MAX		32
#define WM_CACHE	"/cache"

/* A container's path: absolute, no ',' (--mount's), no "..", no controls. */
static int
wm_path_ok(const char *s)
{
	const char	*p;

	if (*s != '/' || strlen(s) > 4096 || strchr(s, ',') != NULL)
		return (0);
	for (p = s; *p != '\0'; p++) {
		if ((u_char)*p < 0x20 || *p == 0x7f)
			return (0);
	}
	for (p = s; (p = strstr(p, "/..")) != NULL; p += 3) {
		if (p[3] == '/' || p[3] == '\0')
			return (0);
	}
	return (1);
}

/* A volume's name: a letter or digit, then letters, digits and ._- */
static int
wm_volume_ok(const char *s)
{
	size_t	 n = strlen(s);

	return (n > 0 && n <= 64 && isalnum((u_char)*s) &&
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789._-") == n);
}

/* One mount of "mounts": -1 with *cause naming its field. */
static int
wm_one(json_t *m, size_t i, char **cause)
{
	const char	*type = NULL, *src = NULL, *dst = NULL, *k;
	json_t		*v;

	if (!json_is_object(m))
		goto shape;
	json_object_foreach(m, k, v) {
		if (strcmp(k, "readonly") == 0 && json_is_boolean(v))
			continue;
		if (!json_is_string(v) || strlen(json_string_value(v)) !=
		    json_string_length(v))
			goto shape;
		if (strcmp(k, "type") == 0)
			type = json_string_value(v);
		else if (strcmp(k, "source") == 0)
			src = json_string_value(v);
		else if (strcmp(k, "target") == 0)
			dst = json_string_value(v);
		else
			goto shape;
	}
	if (type == NULL || src == NULL || dst == NULL ||
	    (strcmp(type, "bind") != 0 && strcmp(type, "volume") != 0))
		goto shape;
	if (!wm_path_ok(dst) || strcmp(dst, "/") == 0) {
		xasprintf(cause, "mounts[%zu].target: an absolute path of the "
		    "container's, not /, without ',' or '..'", i);
		return (-1);
	}
	if (strcmp(type, "bind") == 0 ? !wm_path_ok(src) :
	    !wm_volume_ok(src)) {
		xasprintf(cause, "mounts[%zu].source: %s", i, *type == 'b' ?
		    "an absolute path, without ',' or '..'" : "a volume's "
		    "name: letters, digits and ._- (64 at most)");
		return (-1);
	}
	return (0);
shape:
	xasprintf(cause, "mounts[%zu]: must be {\"type\": \"bind\"|\"volume\", "
	    "\"source\", \"target\"[, \"readonly\": bool]}", i);
	return (-1);
}

/* "mounts" of a request, checked; *to takes a reference. */
int
workspace_mounts_from_json(json_t *v, json_t **to, char **cause)
{
	json_t	*m;
	size_t	 i;

	if (!json_is_array(v) || json_array_size(v) > WM_MAX) {
		xasprintf(cause, "mounts: an array of at most %d mounts",
		    WM_MAX);
		return (-1);
	}
	json_array_foreach(v, i, m) {
		if (wm_one(m, i, cause) != 0)
			return (-1);
	}
	json_decref(*to);
	*to = json_incref(v);
	return (0);
}

/*
 * The home of owner's jobs: its account's (tenants), else the daemon's
 * user's.  The caller frees it; NULL with *cause.
 */
static char *
wm_home(const char *owner, char **cause)
{
	struct passwd	*pw;
	const char	*h;
	char		*home = NULL, buf[PATH_MAX];
	uid_t		 uid;
	gid_t		 gid;
	int		 rc;

	if ((rc = tenant_account(owner, &uid, &gid, &home, cause)) == 1)
		h = home;
	else if (rc != 0)
		return (NULL);	/* (*cause: not there, or not yet) */
	else if ((h = getenv("HOME")) == NULL || *h != '/')
		h = (pw = getpwuid(getuid())) != NULL ? pw->pw_dir : "/";
	if (realpath(h, buf) == NULL) {
		xasprintf(cause, "mounts: the home %s: %s", h, strerror(errno));
		free(home);
		return (NULL);
	}
	free(home);
	return (xstrdup(buf));
}

/*
 * A bind's source, resolved: within home (or home itself), else NULL with
 * *cause naming mount i.  The caller frees it.
 */
static char *
wm_source(const char *src, const char *home, size_t i, char **cause)
{
	char	 buf[PATH_MAX];

	if (realpath(src, buf) == NULL) {
		xasprintf(cause, "mounts[%zu].source: %s: %s", i, src,
		    strerror(errno));
		return (NULL);
	}
	if (strcmp(buf, home) != 0 && !path_under(buf, home)) {
		xasprintf(cause, "mounts[%zu].source: %s is outside the "
		    "owner's home (%s)", i, src, home);
		return (NULL);
	}
	return (xstrdup(buf));
}

/* The podman volume of owner's called name (docs/containers.md). */
static char *
wm_volume(const char *owner, const char *name)
{
	char	*v;

	xasprintf(&v, "gmux-%s-%s-%s", container_label(), owner, name);
	return (v);
}

/*
 * Whether owner's jobs have a home of their own: a tenant's account's.
 * Else the home is the daemon's user's, which a remote workspace never
 * sees (its tree and its cache are its own).
 */
static int
wm_own_home(const char *owner)
{
	char	*home = NULL, *cause = NULL;
	uid_t	 uid;
	gid_t	 gid;
	int	 rc;

	rc = tenant_account(owner, &uid, &gid, &home, &cause);
	free(home);
	free(cause);
	return (rc == 1);
}

/*
 * A remote workspace binds no path: the client's paths are not the
 * host's, and the host's are not the client's to name.  0, or -1 with
 * *cause naming the mount.
 */
static int
wm_remote_binds(const struct jobreq *r, char **cause)
{
	json_t	*m;
	size_t	 i;

	if (!r->confined)
		return (0);
	json_array_foreach(r->spec.mounts, i, m) {
		if (strcmp(json_string_value(json_object_get(m, "type")),
		    "bind") == 0) {
			xasprintf(cause, "mounts[%zu].source: a remote "
			    "workspace binds no path of the host's (a volume "
			    "is its own)", i);
			return (-1);
		}
	}
	return (0);
}

/*
 * What workspace j has mounted, as --mount specs into *volumes: the
 * owner's home, its cache, its request's mounts (binds resolved and
 * checked again now).  -1 with *cause if one is refused.
 */
int
workspace_volumes(const struct job *j, char ***volumes, char **cause)
{
	json_t		*m;
	const char	*type, *src;
	char		*home, *real = NULL, *vol, *spec;
	size_t		 i;
	int		 rc = -1;

	if (wm_remote_binds(&j->req, cause) != 0 ||
	    (home = wm_home(j->owner, cause)) == NULL)
		return (-1);
	if (!j->req.confined || wm_own_home(j->owner)) {
		xasprintf(&spec, "type=bind,source=%s,target=%s", home, home);
		strv_add(volumes, spec);
		free(spec);
	}
	vol = wm_volume(j->owner, "cache");
	xasprintf(&spec, "type=volume,source=%s,target=%s", vol, WM_CACHE);
	strv_add(volumes, spec);
	free(spec);
	free(vol);
	json_array_foreach(j->req.spec.mounts, i, m) {
		type = json_string_value(json_object_get(m, "type"));
		src = json_string_value(json_object_get(m, "source"));
		if (strcmp(type, "bind") == 0 &&
		    (real = wm_source(src, home, i, cause)) == NULL)
			goto out;
		vol = real != NULL ? real : wm_volume(j->owner, src);
		xasprintf(&spec, "type=%s,source=%s,target=%s%s", type, vol,
		    json_string_value(json_object_get(m, "target")),
		    json_is_true(json_object_get(m, "readonly")) ? ",ro" : "");
		strv_add(volumes, spec);
		free(spec);
		free(vol);
		real = NULL;
	}
	rc = 0;
out:
	free(home);
	return (rc);
}

/*
 * At submission, where the home is known without making an account: the
 * binds of r are within owner's home.  0, or -1 with *cause (a 400).
 */
int
workspace_mounts_check(const struct jobreq *r, const char *owner,
    char **cause)
{
	json_t		*m;
	const char	*why;
	char		*home, *real;
	size_t		 i;

	if (r->spec.mounts == NULL)
		return (0);
	if (!r->spec.workspace) {
		xasprintf(cause, "mounts: only for a workspace");
		return (-1);
	}
	if (wm_remote_binds(r, cause) != 0)
		return (-1);
	if (tenant_accounts_on(&why))
		return (0);	/* checked as it starts */
	if ((home = wm_home(owner, cause)) == NULL)
		return (-1);
	json_array_foreach(r->spec.mounts, i, m) {
		if (strcmp(json_string_value(json_object_get(m, "type")),
		    "bind") != 0)
			continue;
		if ((real = wm_source(json_string_value(json_object_get(m,
		    "source")), home, i, cause)) == NULL) {
			free(home);
			return (-1);
		}
		free(real);
	}
	free(home);
	return (0);
}
