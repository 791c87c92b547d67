/*
 * card-tool.c: running a vendor's tool (nvidia-smi, amd-smi, rocm-smi,
 * xpu-smi).  A tool that is not installed is not an error; one that is
 * installed but fails, hangs or says nothing is, and says why.
 */

#include <sys/stat.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

static int	card_tool_ms = CARD_TOOL_TIMEOUT_MS;

/* Sets how long a tool may run (tests shorten it). */
void
card_tool_timeout(int ms)
{
	card_tool_ms = ms > 0 ? ms : CARD_TOOL_TIMEOUT_MS;
}

/* Returns 1 if name is an executable file in a directory of $PATH. */
int
card_tool_found(const char *name)
{
	const char	*path = getenv("PATH");
	char		*copy, *dir, *next, *full;
	struct stat	 sb;
	int		 found = 0;

	if (path == NULL || *path == '\0')
		path = "/usr/bin:/bin";
	copy = xstrdup(path);
	for (dir = copy; dir != NULL && !found; dir = next) {
		if ((next = strchr(dir, ':')) != NULL)
			*next++ = '\0';
		xasprintf(&full, "%s/%s", *dir != '\0' ? dir : ".", name);
		if (stat(full, &sb) == 0 && S_ISREG(sb.st_mode) &&
		    access(full, X_OK) == 0)
			found = 1;
		free(full);
	}
	free(copy);
	return (found);
}

/* Returns the first line of s, at most 200 bytes; the caller frees it. */
static char *
tool_first_line(const char *s)
{
	size_t	 n;

	s += strspn(s, " \t\r\n");
	n = strcspn(s, "\r\n");
	if (n > 200)
		n = 200;
	return (xstrndup(s, n));
}

/*
 * Runs argv and returns what it printed (the caller frees it), or NULL with
 * *cause if it could not run, ran too long or exited non-zero.
 */
char *
card_tool_run(char *const *argv, char **cause)
{
	char	*out, *line;
	int	 status;

	log_debug("%s: %s", __func__, argv[0]);
	out = proc_output(argv, card_tool_ms, &status);
	if (out == NULL) {
		xasprintf(cause, "%s: did not finish within %d ms",
		    argv[0], card_tool_ms);
		return (NULL);
	}
	if (status == 0)
		return (out);
	line = tool_first_line(out);
	if (status == 127)
		xasprintf(cause, "%s: could not be run", argv[0]);
	else if (status == -1)
		xasprintf(cause, "%s: killed by a signal", argv[0]);
	else if (*line != '\0')
		xasprintf(cause, "%s: exit status %d: %s", argv[0], status,
		    line);
	else
		xasprintf(cause, "%s: exit status %d", argv[0], status);
	free(line);
	free(out);
	return (NULL);
}

/*
 * Runs argv if its tool is installed: *out is then what it printed (the
 * caller frees it), or NULL if it is not installed.  Returns -1 with
 * *cause if it is installed but failed.
 */
int
card_tool_output(char *const *argv, char **out, char **cause)
{
	*out = NULL;
	if (!card_tool_found(argv[0]))
		return (0);
	if ((*out = card_tool_run(argv, cause)) == NULL)
		return (-1);
	return (0);
}
