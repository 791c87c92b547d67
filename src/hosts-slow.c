/*
 * hosts-slow.c: hosts that did not answer in time.  A host that accepts a
 * connection and never answers must not slow every command: each host is
 * asked with short deadlines (to connect and shake hands, then to the
 * answer's first byte), one that missed them is remembered as slow for a
 * while, in the state directory, and is then asked last and waited for
 * less.  A host that answers is forgotten at once.
 *
 * The file, slow-hosts (0600), has one line per host:
 *	NAME SINCE_MS WHY
 * A line that does not parse is dropped; so is one older than SLOW_KEEP_MS.
 */

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gmux.h"

#define SLOW_KEEP_MS		(10 * 60 * 1000)
#define SLOW_CONNECT_MS		1000	/* a host not known to be slow */
#define SLOW_ANSWER_MS		2000
#define SLOW_AGAIN_CONNECT_MS	250	/* one that is */
#define SLOW_AGAIN_ANSWER_MS	500
#define SLOW_MAX		64

struct slow_host {
	char	*name;
	int64_t	 since;		/* ms since the epoch */
	char	*why;
};

static struct slow_host	 slow_v[SLOW_MAX];
static u_int		 slow_n;
static int		 slow_loaded;

static char *
slow_path(void)
{
	char	*path;

	xasprintf(&path, "%s/slow-hosts", path_home());
	return (path);
}

static void
slow_add(const char *name, int64_t since, const char *why)
{
	struct slow_host	*h;
	char			*p;

	if (slow_n == SLOW_MAX)
		return;
	h = &slow_v[slow_n++];
	h->name = xstrdup(name);
	h->since = since;
	h->why = xstrdup(why);
	for (p = h->why; *p != '\0'; p++) {
		if ((u_char)*p < ' ' || *p == 0x7f)
			*p = ' ';	/* one line in the file */
	}
}

static struct slow_host *
slow_lookup(const char *name)
{
	u_int	 i;

	for (i = 0; i < slow_n; i++) {
		if (strcmp(slow_v[i].name, name) == 0)
			return (&slow_v[i]);
	}
	return (NULL);
}

/*
 * Takes the file's text (changed in place): its lines younger than
 * SLOW_KEEP_MS at now replace what is remembered.  Returns how many.
 */
u_int
hosts_slow_parse(char *text, int64_t now)
{
	char		*line, *next, *end, *sp;
	int64_t		 since;

	hosts_slow_forget();
	for (line = text; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if ((sp = strchr(line, ' ')) == NULL)
			continue;
		*sp++ = '\0';
		if (*sp < '0' || *sp > '9')
			continue;
		since = strtoll(sp, &end, 10);
		if (*end != ' ' || !remote_name_valid(line) || since > now ||
		    now - since > SLOW_KEEP_MS || slow_lookup(line) != NULL)
			continue;
		slow_add(line, since, end + 1);
	}
	slow_loaded = 1;
	return (slow_n);
}

/* Forgets every host (what the file said is read again when asked). */
void
hosts_slow_forget(void)
{
	u_int	 i;

	for (i = 0; i < slow_n; i++) {
		free(slow_v[i].name);
		free(slow_v[i].why);
	}
	slow_n = 0;
	slow_loaded = 0;
}

/* Reads the file once per command; what it cannot read is forgotten. */
static void
slow_load(void)
{
	char		*path, *text, *cause = NULL;
	size_t		 len;

	if (slow_loaded)
		return;
	path = slow_path();
	text = read_file(path, 64 * 1024, &len, &cause);
	free(cause);
	free(path);
	hosts_slow_parse(text, clock_ms());
	free(text);
}

static void
slow_save(void)
{
	char	*path, *text = NULL, *s, *cause = NULL;
	u_int	 i;

	for (i = 0; i < slow_n; i++) {
		xasprintf(&s, "%s%s %lld %s\n", text != NULL ? text : "",
		    slow_v[i].name, (long long)slow_v[i].since, slow_v[i].why);
		free(text);
		text = s;
	}
	path = slow_path();
	if (text == NULL)
		unlink(path);
	else if (mkdir_p(path_home(), 0700) == 0 && write_file_replace(path,
	    text, strlen(text), 0600, &cause) != 0) {
		log_debug("%s: %s", __func__, cause);
		free(cause);
	}
	free(path);
	free(text);
}

static struct slow_host *
slow_find(const char *name)
{
	slow_load();
	return (slow_lookup(name));
}

/* Is this host remembered as slow? */
int
hosts_slow(const struct remote *rm)
{
	return (slow_find(rm->name) != NULL);
}

/* Sets a request to rm's deadlines: short, shorter if it was slow. */
void
hosts_slow_deadlines(const struct remote *rm, struct client_req *q)
{
	if (hosts_slow(rm)) {
		q->connect_ms = SLOW_AGAIN_CONNECT_MS;
		q->answer_ms = SLOW_AGAIN_ANSWER_MS;
	} else {
		q->connect_ms = SLOW_CONNECT_MS;
		q->answer_ms = SLOW_ANSWER_MS;
	}
}

/*
 * What a skipped host's warning adds (allocated; "" if nothing): since
 * when it has been slow and why, when it was before this command.
 */
char *
hosts_slow_note(const struct remote *rm)
{
	struct slow_host	*h = slow_find(rm->name);
	struct tm		 tm;
	time_t			 t;
	char			 at[16], *s;

	if (h == NULL)
		return (xstrdup(""));
	t = (time_t)(h->since / 1000);
	localtime_r(&t, &tm);
	strftime(at, sizeof at, "%H:%M:%S", &tm);
	xasprintf(&s, " (slow since %s: %s; asked last)", at, h->why);
	return (s);
}

/*
 * After a request to rm: one that missed a deadline makes it slow (or
 * keeps it so, from when it first was), one that was answered forgets it.
 */
void
hosts_slow_heard(const struct remote *rm, const struct client_req *q)
{
	struct slow_host	*h = slow_find(rm->name);
	const char		*why, *colon;

	if (q->late && h == NULL) {
		why = q->reply.error != NULL ? q->reply.error : "no answer";
		if ((colon = strstr(why, ": ")) != NULL)
			why = colon + 2;	/* not its address again */
		slow_add(rm->name, clock_ms(), why);
		slow_save();
	} else if (!q->late && h != NULL && q->reply.status != 0) {
		free(h->name);
		free(h->why);
		*h = slow_v[--slow_n];
		slow_save();
	}
}
