/*
 * devcontainer.c: the part of a devcontainer.json a workspace is made from
 * (docs/containers.md): image or build.dockerfile, mounts, containerEnv,
 * forwardPorts, postCreateCommand (and name, which is only a label).  The
 * file is JSON with comments (JSONC), as VS Code writes it: comments are
 * blanked before jansson reads it.  Any other key, or a value of the wrong
 * shape, is refused naming it: a setting silently dropped would give a
 * workspace other than the one the file describes.
 */

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

#define DEVCONTAINER_MAX	(1024 * 1024)
#define DEVCONTAINER_MAX_LIST	256

void
devcontainer_init(struct devcontainer *dc)
{
	memset(dc, 0, sizeof *dc);
}

void
devcontainer_free(struct devcontainer *dc)
{
	free(dc->image);
	free(dc->dockerfile);
	free(dc->context);
	strv_free(dc->mounts);
	strv_free(dc->env);
	free(dc->ports);
	strv_free(dc->post_create);
	devcontainer_init(dc);
}

/*
 * Blanks // and block comments outside strings (newlines kept, so jansson's
 * line numbers stay the file's).  Returns a copy; the caller frees it.
 */
static char *
devcontainer_uncomment(const char *text, size_t len)
{
	char	*s = xmalloc(len + 1);
	size_t	 i;
	int	 str = 0;

	memcpy(s, text, len);
	s[len] = '\0';
	for (i = 0; i < len; i++) {
		if (str) {
			if (s[i] == '\\' && i + 1 < len)
				i++;
			else if (s[i] == '"')
				str = 0;
		} else if (s[i] == '"')
			str = 1;
		else if (s[i] == '/' && i + 1 < len && s[i + 1] == '/') {
			for (; i < len && s[i] != '\n'; i++)
				s[i] = ' ';
		} else if (s[i] == '/' && i + 1 < len && s[i + 1] == '*') {
			for (; i < len && !(s[i] == '*' && i + 1 < len &&
			    s[i + 1] == '/'); i++)
				if (s[i] != '\n')
					s[i] = ' ';
			if (i < len)
				s[i] = s[i + 1] = ' ';
			i++;
		}
	}
	return (s);
}

/* A string without NULs, 1 to max bytes; else -1 with *cause for field. */
static int
devcontainer_string(json_t *v, const char *field, size_t max, char **to,
    char **cause)
{
	if (!json_is_string(v) || json_string_length(v) == 0 ||
	    json_string_length(v) > max ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		xasprintf(cause, "%s: must be a string of 1 to %zu bytes",
		    field, max);
		return (-1);
	}
	free(*to);
	*to = xstrdup(json_string_value(v));
	return (0);
}

static int
devcontainer_build(json_t *v, struct devcontainer *dc, char **cause)
{
	const char	*k;
	json_t		*x;

	if (!json_is_object(v)) {
		xasprintf(cause, "build: must be an object with dockerfile");
		return (-1);
	}
	json_object_foreach(v, k, x) {
		if (strcmp(k, "dockerfile") == 0) {
			if (devcontainer_string(x, "build.dockerfile", 4096,
			    &dc->dockerfile, cause) != 0)
				return (-1);
		} else if (strcmp(k, "context") == 0) {
			if (devcontainer_string(x, "build.context", 4096,
			    &dc->context, cause) != 0)
				return (-1);
		} else {
			xasprintf(cause, "build.%.64s: unknown key (gmux takes "
			    "dockerfile and context)", k);
			return (-1);
		}
	}
	if (dc->dockerfile == NULL) {
		xasprintf(cause, "build.dockerfile: is needed");
		return (-1);
	}
	return (0);
}

/*
 * A mount: "source=A,target=B[,type=bind|volume][,readonly]" as the file
 * writes it, or the same as an object; kept in the string form.
 */
static int
devcontainer_mount(json_t *v, char ***to, char **cause)
{
	const char	*s;
	char		*m = NULL;

	if (json_is_object(v)) {
		if (json_unpack(v, "{s:s,s:s,s?s!}", "source", &s, "target",
		    &s, "type", &s) != 0)
			goto bad;
		xasprintf(&m, "source=%s,target=%s,type=%s",
		    json_string_value(json_object_get(v, "source")),
		    json_string_value(json_object_get(v, "target")),
		    json_is_string(json_object_get(v, "type")) ?
		    json_string_value(json_object_get(v, "type")) : "bind");
	} else if (json_is_string(v) && strstr(json_string_value(v),
	    "target=") != NULL)
		m = xstrdup(json_string_value(v));
	if (m == NULL || strlen(m) > 4096 || strchr(m, '\n') != NULL)
		goto bad;
	strv_add(to, m);
	free(m);
	return (0);
bad:
	free(m);
	xasprintf(cause, "mounts: each must be \"source=A,target=B[,type=T]\" "
	    "or {\"source\", \"target\", \"type\"}");
	return (-1);
}

static int
devcontainer_mounts(json_t *v, struct devcontainer *dc, char **cause)
{
	json_t	*x;
	size_t	 i;

	if (!json_is_array(v) || json_array_size(v) > DEVCONTAINER_MAX_LIST) {
		xasprintf(cause, "mounts: must be an array of up to %d",
		    DEVCONTAINER_MAX_LIST);
		return (-1);
	}
	json_array_foreach(v, i, x) {
		if (devcontainer_mount(x, &dc->mounts, cause) != 0)
			return (-1);
	}
	return (0);
}

/* A variable's name: a letter or _, then letters, digits, _. */
static int
devcontainer_name_ok(const char *s)
{
	if (!isalpha((u_char)*s) && *s != '_')
		return (0);
	for (s++; *s != '\0'; s++) {
		if (!isalnum((u_char)*s) && *s != '_')
			return (0);
	}
	return (1);
}

static int
devcontainer_env(json_t *v, struct devcontainer *dc, char **cause)
{
	const char	*k;
	json_t		*x;
	char		*e;

	if (!json_is_object(v) || json_object_size(v) > DEVCONTAINER_MAX_LIST) {
		xasprintf(cause, "containerEnv: must be an object of up to %d "
		    "NAME: value", DEVCONTAINER_MAX_LIST);
		return (-1);
	}
	json_object_foreach(v, k, x) {
		if (!devcontainer_name_ok(k) || strlen(k) > 128 ||
		    !json_is_string(x) || strlen(json_string_value(x)) !=
		    json_string_length(x) || json_string_length(x) > 65536) {
			xasprintf(cause, "containerEnv.%.64s: a name of "
			    "letters, digits and _ with a string value", k);
			return (-1);
		}
		xasprintf(&e, "%s=%s", k, json_string_value(x));
		strv_add(&dc->env, e);
		free(e);
	}
	return (0);
}

static int
devcontainer_ports(json_t *v, struct devcontainer *dc, char **cause)
{
	json_t	*x;
	size_t	 i;

	if (!json_is_array(v) || json_array_size(v) > DEVCONTAINER_MAX_LIST)
		goto bad;
	free(dc->ports);
	dc->nports = 0;
	dc->ports = xcalloc(json_array_size(v) + 1, sizeof *dc->ports);
	json_array_foreach(v, i, x) {
		if (!json_is_integer(x) || json_integer_value(x) < 1 ||
		    json_integer_value(x) > 65535)
			goto bad;
		dc->ports[dc->nports++] = (u_int)json_integer_value(x);
	}
	return (0);
bad:
	xasprintf(cause, "forwardPorts: must be an array of ports (1 to "
	    "65535)");
	return (-1);
}

/* A command: a string (run by /bin/sh -c) or an array (run as it is). */
static int
devcontainer_command(json_t *v, struct devcontainer *dc, char **cause)
{
	json_t	*x;
	size_t	 i;

	if (json_is_string(v) && json_string_length(v) > 0 &&
	    strlen(json_string_value(v)) == json_string_length(v)) {
		strv_free(dc->post_create);
		dc->post_create = xcalloc(4, sizeof *dc->post_create);
		dc->post_create[0] = xstrdup("/bin/sh");
		dc->post_create[1] = xstrdup("-c");
		dc->post_create[2] = xstrdup(json_string_value(v));
		return (0);
	}
	if (!json_is_array(v) || json_array_size(v) == 0 ||
	    json_array_size(v) > DEVCONTAINER_MAX_LIST)
		goto bad;
	strv_free(dc->post_create);
	dc->post_create = xcalloc(json_array_size(v) + 1,
	    sizeof *dc->post_create);
	json_array_foreach(v, i, x) {
		if (!json_is_string(x) || strlen(json_string_value(x)) !=
		    json_string_length(x))
			goto bad;
		dc->post_create[i] = xstrdup(json_string_value(x));
	}
	return (0);
bad:
	xasprintf(cause, "postCreateCommand: must be a command string or an "
	    "array of strings");
	return (-1);
}

static int
devcontainer_key(const char *k, json_t *v, struct devcontainer *dc,
    char **cause)
{
	char	*name = NULL;

	if (strcmp(k, "name") == 0) {
		if (devcontainer_string(v, k, 256, &name, cause) != 0)
			return (-1);
		free(name);
		return (0);
	}
	if (strcmp(k, "image") == 0)
		return (devcontainer_string(v, k, 255, &dc->image, cause));
	if (strcmp(k, "build") == 0)
		return (devcontainer_build(v, dc, cause));
	if (strcmp(k, "mounts") == 0)
		return (devcontainer_mounts(v, dc, cause));
	if (strcmp(k, "containerEnv") == 0)
		return (devcontainer_env(v, dc, cause));
	if (strcmp(k, "forwardPorts") == 0)
		return (devcontainer_ports(v, dc, cause));
	if (strcmp(k, "postCreateCommand") == 0)
		return (devcontainer_command(v, dc, cause));
	xasprintf(cause, "%.64s: unknown key (gmux takes name, image, build, "
	    "mounts, containerEnv, forwardPorts and postCreateCommand)", k);
	return (-1);
}

/*
 * Reads a devcontainer.json's text into dc: 0, or -1 with *cause naming
 * the field (or the line and column of bad JSON).  dc is the caller's to
 * free either way.
 */
int
devcontainer_parse(const char *text, size_t len, struct devcontainer *dc,
    char **cause)
{
	json_error_t	 e;
	json_t		*o, *v;
	const char	*k;
	char		*s;
	int		 rc = -1;

	if (len > DEVCONTAINER_MAX) {
		xasprintf(cause, "larger than %d bytes", DEVCONTAINER_MAX);
		return (-1);
	}
	s = devcontainer_uncomment(text, len);
	o = json_loadb(s, len, JSON_REJECT_DUPLICATES, &e);
	free(s);
	if (o == NULL) {
		xasprintf(cause, "line %d, column %d: %s", e.line, e.column,
		    e.text);
		return (-1);
	}
	if (!json_is_object(o)) {
		xasprintf(cause, "must be a JSON object");
		goto out;
	}
	json_object_foreach(o, k, v) {
		if (devcontainer_key(k, v, dc, cause) != 0)
			goto out;
	}
	if ((dc->image == NULL) == (dc->dockerfile == NULL)) {
		xasprintf(cause, "image: one of image and build.dockerfile is "
		    "needed");
		goto out;
	}
	if (dc->image != NULL && jobspec_image_ok(dc->image, cause) != 0)
		goto out;
	rc = 0;
out:
	json_decref(o);
	return (rc);
}
