/*
 * tmpdir.h: a private temporary directory for a unit test binary, removed
 * at the end, and small helpers for files in it.
 */

#ifndef TMPDIR_H
#define TMPDIR_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char	tmpdir[64];

/* Makes /tmp/gmux-test-NAME.XXXXXX; returns 0 or -1. */
static inline int
tmpdir_init(const char *name)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/gmux-test-%s.XXXXXX", name);
	return (mkdtemp(tmpdir) != NULL ? 0 : -1);
}

/* Removes the directory; returns 0 or -1. */
static inline int
tmpdir_cleanup(void)
{
	char	*cmd;
	int	 rc;

	xasprintf(&cmd, "rm -rf '%s'", tmpdir);
	rc = system(cmd) == 0 ? 0 : -1;
	free(cmd);
	return (rc);
}

/* Returns an allocated path under the directory; the caller frees it. */
static inline char *
tpath(const char *name)
{
	char	*s;

	xasprintf(&s, "%s/%s", tmpdir, name);
	return (s);
}

/* A path under the directory for use in place (8 rotating buffers). */
static inline const char *
T(const char *name)
{
	static char	 bufs[8][512];
	static u_int	 i;
	char		*b = bufs[i++ % 8];

	snprintf(b, sizeof bufs[0], "%s/%s", tmpdir, name);
	return (b);
}

/* Writes len bytes to name (under the directory) with mode; 0 or -1. */
static inline int
tmp_write(const char *name, const void *data, size_t len, int mode)
{
	int	 fd, rc;

	if ((fd = open(T(name), O_WRONLY|O_CREAT|O_TRUNC, mode)) == -1)
		return (-1);
	rc = write_all(fd, data, len) == (ssize_t)len ? 0 : -1;
	close(fd);
	return (rc);
}

/* Returns the content of name (under the directory) or NULL; caller frees. */
static inline char *
tmp_read(const char *name, size_t *len)
{
	char	*cause = NULL, *s;

	s = read_file(T(name), 1 << 24, len, &cause);
	free(cause);
	return (s);
}

#endif
