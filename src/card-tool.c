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
#include "card-int.h"

static int	card_tool_ms = CARD_TOOL_TIMEOUT_MS;

/* Sets how long a tool may run (tests shorten it). */
void
card_tool_timeout(int ms)
{
	card_tool_ms = ms > 0 ? ms : CARD_TOOL_TIMEOUT_MS;
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
 * Judges a finished run of tool name (out and status as proc_output or
 * proc_async_start give them): 0 if it printed out and exited 0, else -1
 * with *cause.  out stays the caller's.
 */
static int
card_tool_check(const char *name, const char *out, int status, char **cause)
{
	char	*line;

	if (out == NULL && status == PROC_ASYNC_TOOBIG) {
		xasprintf(cause, "%s: printed too much", name);
		return (-1);
	}
	if (out == NULL && status == PROC_ASYNC_CANCELLED) {
		xasprintf(cause, "%s: cancelled", name);
		return (-1);
	}
	if (out == NULL) {
		xasprintf(cause, "%s: did not finish within %d ms", name,
		    card_tool_ms);
		return (-1);
	}
	if (status == 0)
		return (0);
	line = tool_first_line(out);
	if (status == 127)
		xasprintf(cause, "%s: could not be run", name);
	else if (status == -1)
		xasprintf(cause, "%s: killed by a signal", name);
	else if (*line != '\0')
		xasprintf(cause, "%s: exit status %d: %s", name, status, line);
	else
		xasprintf(cause, "%s: exit status %d", name, status);
	free(line);
	return (-1);
}

/*
 * Runs argv and returns what it printed (the caller frees it), or NULL with
 * *cause if it could not run, ran too long or exited non-zero.  It waits:
 * for detection at start only; the daemon's loop uses card_tool_start.
 */
static char *
card_tool_run(char *const *argv, char **cause)
{
	char	*out;
	int	 status;

	log_debug("%s: %s", __func__, argv[0]);
	out = proc_output(argv, card_tool_ms, &status);
	if (card_tool_check(argv[0], out, status, cause) == 0)
		return (out);
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
	if (!have_program(argv[0]))
		return (0);
	if ((*out = card_tool_run(argv, cause)) == NULL)
		return (-1);
	return (0);
}

/*
 * Runs argv if its tool is installed and adds to cs the cards that parse
 * reads in what it printed.  Returns 1 if the tool is not installed, 0
 * if its cards were added, -1 with *cause if it failed or parse refused
 * its output.
 */
int
card_tool_cards(char *const *argv,
    int (*parse)(const char *, struct cards *, char **), struct cards *cs,
    char **cause)
{
	char	*out;
	int	 rc;

	if (card_tool_output(argv, &out, cause) != 0)
		return (-1);
	if (out == NULL)
		return (1);
	rc = parse(out, cs, cause);
	free(out);
	return (rc);
}

struct card_tool_pending {
	char		*name;
	card_tool_cb	 cb;
	void		*arg;
};

static void
card_tool_done(char *out, int status, void *arg)
{
	struct card_tool_pending	*r = arg;
	char				*cause = NULL;

	if (card_tool_check(r->name, out, status, &cause) != 0) {
		free(out);
		out = NULL;
	}
	r->cb(out, cause, r->arg);
	free(r->name);
	free(r);
}

/*
 * Starts argv on the loop (proc_async_start) if its tool is installed and
 * returns at once: 0 if it started, 1 if the tool is not installed, -1
 * with *cause if it could not start.  Once it is over, cb(out, cause, arg)
 * is called: out is what it printed, or NULL and cause says why (as
 * card_tool_run's); cb frees both.
 */
int
card_tool_start(char *const *argv, card_tool_cb cb, void *arg, char **cause)
{
	struct card_tool_pending	*r;

	if (!have_program(argv[0]))
		return (1);
	r = xmalloc(sizeof *r);
	r->name = xstrdup(argv[0]);
	r->cb = cb;
	r->arg = arg;
	if (proc_async_start(argv, card_tool_ms, card_tool_done, r,
	    cause) != 0) {
		free(r->name);
		free(r);
		return (-1);
	}
	return (0);
}
