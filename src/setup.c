/*
 * setup.c: gmux setup install/uninstall.  Puts the binary, libgmux.so,
 * the manual page, bash's completion, a config file and a systemd unit in
 * place, under a root (a temporary one in tests), and keeps a list of what
 * it made so that uninstall removes that and nothing else.  Both may run
 * again: install rewrites the same files, uninstall of nothing is done.
 */

#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "cmd-int.h"
#include "setup-int.h"

#define SETUP_EXE_MAX	(256ULL << 20)

static const char setup_config_text[] =
    "# gmux's config, KEY=VALUE lines (docs/cli.md, \"The config file\").\n"
    "# JOB_RETENTION_DAYS=30\n";

void
setup_init(struct setup *s, const char *root, int system)
{
	const char	*h = getenv("HOME"), *x = getenv("XDG_CONFIG_HOME");
	const char	*g = getenv("GMUX_HOME");

	memset(s, 0, sizeof *s);
	s->root = xstrdup(root != NULL ? root : "");
	while (*s->root != '\0' && s->root[strlen(s->root) - 1] == '/')
		s->root[strlen(s->root) - 1] = '\0';
	s->system = system;
	if (h == NULL || *h != '/')
		h = "/root";
	if (system) {
		s->prefix = xstrdup("/usr/local");
		s->unitdir = xstrdup("/etc/systemd/system");
		s->home = xstrdup("/var/lib/gmux");
		xasprintf(&s->config, "%s/config", s->home);
	} else {
		xasprintf(&s->prefix, "%s/.local", h);
		if (x != NULL && *x == '/')
			xasprintf(&s->unitdir, "%s/systemd/user", x);
		else
			xasprintf(&s->unitdir, "%s/.config/systemd/user", h);
		s->home = g != NULL && *g == '/' ? xstrdup(g) : NULL;
		s->config = xstrdup(path_config());
	}
	xasprintf(&s->manifest, "%s/lib/gmux/installed", s->prefix);
	s->made = xcalloc(1, sizeof *s->made);
}

void
setup_clear(struct setup *s)
{
	free(s->root);
	free(s->prefix);
	free(s->unitdir);
	free(s->home);
	free(s->config);
	free(s->manifest);
	strv_free(s->made);
	memset(s, 0, sizeof *s);
}

/* path under the root; the caller frees it. */
static char *
setup_at(const struct setup *s, const char *path)
{
	char	*p;

	xasprintf(&p, "%s%s", s->root, path);
	return (p);
}

/* Keeps "kind path" in the list of what was made, once. */
static void
setup_note(struct setup *s, char kind, const char *path)
{
	char	*line;
	u_int	 i;

	xasprintf(&line, "%c %s", kind, path);
	for (i = 0; s->made[i] != NULL; i++) {
		if (strcmp(s->made[i], line) == 0)
			break;
	}
	if (s->made[i] == NULL)
		strv_add(&s->made, line);
	free(line);
}

/* Makes the directories of dir (a path under the root) that are missing. */
static int
setup_mkdir(struct setup *s, const char *dir, char **cause)
{
	char	*p, *at;
	size_t	 i;
	int	 rc = 0;

	p = xstrdup(dir);
	for (i = 1; rc == 0 && i <= strlen(dir); i++) {
		if (dir[i] != '/' && dir[i] != '\0')
			continue;
		p[i] = '\0';
		at = setup_at(s, p);
		if (mkdir(at, 0755) == 0)
			setup_note(s, 'd', p);
		else if (errno != EEXIST) {
			xasprintf(cause, "%s: %s", at, strerror(errno));
			rc = -1;
		}
		free(at);
		p[i] = dir[i];
	}
	free(p);
	return (rc);
}

/* Writes path (under the root) whole, making its directories. */
static int
setup_put(struct setup *s, const char *path, const void *buf, size_t len,
    int mode, char **cause)
{
	char	*dir, *at;
	int	 rc;

	dir = xstrdup(path);
	*strrchr(dir, '/') = '\0';
	rc = setup_mkdir(s, dir, cause);
	free(dir);
	if (rc != 0)
		return (-1);
	at = setup_at(s, path);
	if ((rc = write_file_replace(at, buf, len, mode, cause)) == 0)
		setup_note(s, 'f', path);
	free(at);
	return (rc);
}

/* Copies the file from (a real path) to path under the root. */
static int
setup_copy(struct setup *s, const char *from, const char *path, int mode,
    char **cause)
{
	char	*buf;
	size_t	 len;
	int	 rc;

	if ((buf = read_file(from, SETUP_EXE_MAX, &len, cause)) == NULL)
		return (-1);
	rc = setup_put(s, path, buf, len, mode, cause);
	free(buf);
	return (rc);
}

/* What fn writes to a FILE, put at path under the root. */
static int
setup_put_made(struct setup *s, const char *path, void (*fn)(FILE *),
    char **cause)
{
	FILE	*f;
	char	*buf = NULL;
	size_t	 len = 0;
	int	 rc;

	if ((f = open_memstream(&buf, &len)) == NULL)
		fatal("open_memstream");
	fn(f);
	fclose(f);
	rc = setup_put(s, path, buf, len, 0644, cause);
	free(buf);
	return (rc);
}

/*
 * The unit.  Hardened where it does not break jobs: no new privileges
 * (the jail needs none), /usr and /etc read-only for a system unit.  Not
 * PrivateTmp: a local job runs in its submitter's directory, which may be
 * under /tmp.  A user unit gets neither of the last two: they need user
 * namespaces systemd does not set up for user managers.  KillMode=process:
 * the jobs' keepers outlive a restart of the daemon, which finds them
 * again.  The caller frees the text.
 */
static char *
setup_unit(const struct setup *s)
{
	char	*u, *env = NULL;

	if (s->home != NULL)
		xasprintf(&env, "Environment=GMUX_HOME=%s\n", s->home);
	xasprintf(&u, "# gmux's %s unit, written by gmux setup install\n"
	    "[Unit]\nDescription=gmux: share this machine's GPUs\n"
	    "Documentation=man:gmux(1)\n%s"
	    "\n[Service]\nType=simple\n%sExecStart=%s/bin/gmux serve\n"
	    "Restart=on-failure\nKillMode=process\nUMask=0077\n"
	    "NoNewPrivileges=yes\n%s"
	    "\n[Install]\nWantedBy=%s\n", s->system ? "system" : "user",
	    s->system ? "After=network-online.target\n"
	    "Wants=network-online.target\n" : "", env != NULL ? env : "",
	    s->prefix, s->system ? "ProtectSystem=full\nStateDirectory=gmux\n"
	    "StateDirectoryMode=0700\n" : "",
	    s->system ? "multi-user.target" : "default.target");
	free(env);
	return (u);
}

/* Whether systemd is this machine's init (sd_booted(3)'s test). */
int
setup_systemd_running(void)
{
	return (access("/run/systemd/system", F_OK) == 0);
}

/* The files an install makes, in the order of setup_paths. */
enum { SETUP_BIN, SETUP_SHIM, SETUP_LIST, SETUP_MAN, SETUP_BASH,
    SETUP_CONFIG, SETUP_UNIT };

/* The files an install makes, in one list; the caller frees it. */
static char **
setup_paths(const struct setup *s)
{
	static const char *const under_prefix[] = { "bin/gmux",
	    "lib/gmux/libgmux.so", "lib/gmux/installed",
	    "share/man/man1/gmux.1", "share/bash-completion/completions/gmux" };
	char	**v, *p;
	u_int	  i;

	v = xcalloc(1, sizeof *v);
	for (i = 0; i < nitems(under_prefix); i++) {
		xasprintf(&p, "%s/%s", s->prefix, under_prefix[i]);
		strv_add(&v, p);
		free(p);
	}
	strv_add(&v, s->config);
	xasprintf(&p, "%s/gmux.service", s->unitdir);
	strv_add(&v, p);
	free(p);
	return (v);
}

/*
 * Whether a line of the list names what an install makes: one of its
 * files, or a directory above one.  Uninstall removes nothing else, what
 * ever the list says.
 */
static int
setup_ours(const struct setup *s, char kind, const char *path)
{
	char	**v = setup_paths(s);
	size_t	  len = strlen(path);
	u_int	  i;
	int	  ours = 0;

	for (i = 0; v[i] != NULL && !ours; i++) {
		if (kind == 'f')
			ours = strcmp(v[i], path) == 0;
		else
			ours = len > 1 && strncmp(v[i], path, len) == 0 &&
			    v[i][len] == '/' && strstr(path, "/..") == NULL &&
			    strstr(path, "//") == NULL;
	}
	strv_free(v);
	return (ours);
}

/* The list of what an earlier install made, if any. */
static void
setup_load(struct setup *s)
{
	char	*at, *text, *line, *next, *cause = NULL;

	at = setup_at(s, s->manifest);
	text = read_file(at, 1 << 20, NULL, &cause);
	free(at);
	free(cause);
	if (text == NULL)
		return;
	for (line = text; *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		else
			next = line + strlen(line);
		if ((line[0] == 'f' || line[0] == 'd') && line[1] == ' ' &&
		    setup_ours(s, line[0], line + 2))
			setup_note(s, line[0], line + 2);
	}
	free(text);
}

static int
setup_save(struct setup *s, char **cause)
{
	char	*text, *at;
	int	 rc;

	setup_note(s, 'f', s->manifest);
	text = strv_join(s->made, "\n");
	at = setup_at(s, s->manifest);
	rc = write_file_replace(at, text, strlen(text), 0644, cause);
	free(at);
	free(text);
	return (rc);
}

static void
setup_bash(FILE *f)
{
	completion_write(f, "bash");
}

/* The config, only if there is none; its directory is gmux's own. */
static int
setup_config(struct setup *s, const char *path, char **cause)
{
	char	*at, *dir, *slash;
	int	 rc = 0;

	at = setup_at(s, path);
	if (access(at, F_OK) != 0) {
		rc = setup_put(s, path, setup_config_text,
		    strlen(setup_config_text), 0600, cause);
		dir = xstrdup(at);
		if ((slash = strrchr(dir, '/')) != NULL)
			*slash = '\0';
		if (rc == 0 && chmod(dir, 0700) != 0)
			fatal("chmod %s", dir);
		free(dir);
	}
	free(at);
	return (rc);
}

/* The files, each written again if there; the config only if absent. */
static int
setup_files(struct setup *s, char **cause)
{
	char	 exe[4096], *shim, *unit, **v;
	ssize_t	 n;
	int	 rc;

	if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) <= 0)
		fatal("readlink /proc/self/exe");
	exe[n] = '\0';
	if ((shim = enforce_find_shim()) == NULL) {
		xasprintf(cause, "no libgmux.so beside %s (make builds it)",
		    exe);
		return (-1);
	}
	v = setup_paths(s);
	rc = setup_copy(s, exe, v[SETUP_BIN], 0755, cause);
	if (rc == 0)
		rc = setup_copy(s, shim, v[SETUP_SHIM], 0644, cause);
	free(shim);
	if (rc == 0)
		rc = setup_put_made(s, v[SETUP_MAN], manpage_write, cause);
	if (rc == 0)
		rc = setup_put_made(s, v[SETUP_BASH], setup_bash, cause);
	if (rc == 0)
		rc = setup_config(s, v[SETUP_CONFIG], cause);
	unit = setup_unit(s);
	if (rc == 0)
		rc = setup_put(s, v[SETUP_UNIT], unit, strlen(unit), 0644,
		    cause);
	free(unit);
	strv_free(v);
	return (rc);
}

/*
 * The paths go into the unit as they are: one with a character systemd
 * would read as more than a path (a space, a quote, %, a newline) is
 * refused rather than escaped.
 */
static int
setup_check(const struct setup *s, char **cause)
{
	const char	*v[] = { s->prefix, s->unitdir, s->config, s->home };
	u_int		 i;

	for (i = 0; i < nitems(v); i++) {
		if (v[i] != NULL && (*v[i] != '/' ||
		    strpbrk(v[i], " \t\r\n\"'\\%$;") != NULL)) {
			xasprintf(cause, "%s: not a plain absolute path (set "
			    "HOME or GMUX_HOME to one)", v[i]);
			return (-1);
		}
	}
	return (0);
}

int
setup_install(struct setup *s, char **cause)
{
	if (setup_check(s, cause) != 0)
		return (-1);
	setup_load(s);
	if (setup_files(s, cause) != 0)
		return (-1);
	return (setup_save(s, cause));
}

/* Whether the config at path is no longer the one install wrote. */
static int
setup_config_changed(const char *path)
{
	char	*text, *cause = NULL;
	int	 changed;

	if ((text = read_file(path, 1 << 20, NULL, &cause)) == NULL) {
		free(cause);
		return (0);
	}
	changed = strcmp(text, setup_config_text) != 0;
	free(text);
	return (changed);
}

/* Removes what the list names: files, then directories deepest first. */
int
setup_uninstall(struct setup *s, char **cause)
{
	char	*at;
	u_int	 i, n;
	int	 rc = 0;

	setup_load(s);
	n = strv_len(s->made);
	for (i = 0; i < n; i++) {
		if (s->made[i][0] != 'f')
			continue;
		at = setup_at(s, s->made[i] + 2);
		if (strcmp(s->made[i] + 2, s->config) == 0 &&
		    setup_config_changed(at)) {
			printf("kept %s: it was changed\n", at);
			free(at);
			continue;
		}
		if (unlink(at) != 0 && errno != ENOENT) {
			xasprintf(cause, "%s: %s", at, strerror(errno));
			rc = -1;
		}
		free(at);
	}
	for (i = n; i > 0; i--) {
		if (s->made[i - 1][0] != 'd')
			continue;
		at = setup_at(s, s->made[i - 1] + 2);
		if (rmdir(at) != 0 && errno != ENOENT && errno != ENOTEMPTY)
			log_warn("%s: rmdir %s", __func__, at);
		free(at);
	}
	return (rc);
}
