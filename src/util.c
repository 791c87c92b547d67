/* util.c: parsing and formatting of sizes, shares and durations; files. */

#include <sys/socket.h>
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "gmux.h"

/*
 * Sizes are binary: 20G is 20 GiB.  "20G", "20GB", "20GiB", "512M", "1.5G"
 * and a plain byte count are accepted.
 */
int
parse_size(const char *s, uint64_t *out, char **cause)
{
	const char	*p = s, *unit;
	uint64_t	 whole = 0, frac = 0, fscale = 1, mult = 1;
	int		 digits = 0;

	while (isdigit((u_char)*p)) {
		if (whole > (UINT64_MAX - 9) / 10)
			goto bad;
		whole = whole * 10 + (uint64_t)(*p++ - '0');
		digits++;
	}
	if (*p == '.') {
		p++;
		while (isdigit((u_char)*p)) {
			/* Six digits at most: frac * mult must fit 64 bits. */
			if (fscale < 1000000ULL) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				fscale *= 10;
			}
			p++;
			digits++;
		}
	}
	if (digits == 0)
		goto bad;
	unit = p;
	switch (toupper((u_char)*p)) {
	case '\0':
		break;
	case 'K': mult = 1ULL << 10; p++; break;
	case 'M': mult = 1ULL << 20; p++; break;
	case 'G': mult = 1ULL << 30; p++; break;
	case 'T': mult = 1ULL << 40; p++; break;
	case 'B': break;
	default:
		goto bad;
	}
	if (p != unit && (*p == 'i' || *p == 'I'))
		p++;
	if (*p == 'B' || *p == 'b')
		p++;
	if (*p != '\0')
		goto bad;
	if (whole > UINT64_MAX / mult)
		goto bad;
	*out = whole * mult + (frac * mult) / fscale;
	return (0);
bad:
	xasprintf(cause, "'%s' is not a size (like 20G, 512M or 1.5T)", s);
	return (-1);
}

/*
 * A share is a fraction of a card in [0, 1] in steps of 0.01: 0.25 is 25
 * seats.
 */
int
parse_share(const char *s, u_int *seats, char **cause)
{
	const char	*p = s;
	u_int		 whole = 0, frac = 0, nfrac = 0;

	if (!isdigit((u_char)*p) && *p != '.')
		goto bad;
	while (isdigit((u_char)*p)) {
		whole = whole * 10 + (u_int)(*p++ - '0');
		if (whole > 1)
			goto range;
	}
	if (*p == '.') {
		p++;
		while (isdigit((u_char)*p)) {
			if (nfrac >= 2) {
				if (*p != '0')
					goto steps;
			} else
				frac = frac * 10 + (u_int)(*p - '0');
			nfrac++;
			p++;
		}
	}
	if (*p != '\0')
		goto bad;
	if (nfrac == 1)
		frac *= 10;
	*seats = whole * 100 + frac;
	if (*seats > 100)
		goto range;
	return (0);
steps:
	xasprintf(cause, "'%s' is finer than steps of 0.01", s);
	return (-1);
range:
	xasprintf(cause, "'%s' is not between 0 and 1", s);
	return (-1);
bad:
	xasprintf(cause, "'%s' is not a share (a fraction like 0.25)", s);
	return (-1);
}

/* Durations: "10s", "500ms", "2m", "1h", "1d"; a bare number is seconds. */
int
parse_duration(const char *s, int64_t *ms, char **cause)
{
	char		*end;
	double		 v;
	int64_t		 mult;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno != 0 || v < 0 || !isdigit((u_char)*s))
		goto bad;
	if (*end == '\0' || strcmp(end, "s") == 0)
		mult = 1000;
	else if (strcmp(end, "ms") == 0)
		mult = 1;
	else if (strcmp(end, "m") == 0)
		mult = 60 * 1000;
	else if (strcmp(end, "h") == 0)
		mult = 3600 * 1000;
	else if (strcmp(end, "d") == 0)
		mult = 86400 * 1000;
	else
		goto bad;
	if (v * (double)mult > 1e15)
		goto bad;
	*ms = (int64_t)(v * (double)mult + 0.5);
	return (0);
bad:
	xasprintf(cause, "'%s' is not a duration (like 10s, 500ms or 2m)", s);
	return (-1);
}

int
parse_uint(const char *s, u_int min, u_int max, u_int *out, char **cause)
{
	unsigned long	 v;
	char		*end;

	errno = 0;
	if (!isdigit((u_char)*s))
		goto bad;
	v = strtoul(s, &end, 10);
	if (*end != '\0' || errno != 0)
		goto bad;
	if (v < min || v > max) {
		xasprintf(cause, "'%s' is not between %u and %u", s, min, max);
		return (-1);
	}
	*out = (u_int)v;
	return (0);
bad:
	xasprintf(cause, "'%s' is not a number", s);
	return (-1);
}

/* Returns an allocated string like "20G" or "1.5G"; the caller frees it. */
char *
format_size(uint64_t n)
{
	static const char	 units[] = "BKMGT";
	char			*s;
	u_int			 u = 0;
	uint64_t		 scale = 1;

	while (u < sizeof units - 2 && n >= scale * 1024)
		scale *= 1024, u++;
	if (u == 0)
		xasprintf(&s, "%lluB", (unsigned long long)n);
	else if (n % scale == 0)
		xasprintf(&s, "%llu%c", (unsigned long long)(n / scale),
		    units[u]);
	else
		xasprintf(&s, "%.1f%c", (double)n / (double)scale, units[u]);
	return (s);
}

/* Returns an allocated "0.25" for 25 seats. */
char *
format_share(u_int seats)
{
	char	*s;

	if (seats % 100 == 0)
		xasprintf(&s, "%u", seats / 100);
	else if (seats % 10 == 0)
		xasprintf(&s, "%u.%u", seats / 100, (seats % 100) / 10);
	else
		xasprintf(&s, "%u.%02u", seats / 100, seats % 100);
	return (s);
}

/* Returns an allocated age like "5s", "3m", "2h" or "4d". */
char *
format_age(int64_t ms)
{
	char	*s;
	int64_t	 sec = ms < 0 ? 0 : ms / 1000;

	if (sec < 60)
		xasprintf(&s, "%llds", (long long)sec);
	else if (sec < 3600)
		xasprintf(&s, "%lldm", (long long)(sec / 60));
	else if (sec < 86400)
		xasprintf(&s, "%lldh", (long long)(sec / 3600));
	else
		xasprintf(&s, "%lldd", (long long)(sec / 86400));
	return (s);
}

/*
 * Returns an allocated duration as parse_duration() reads it, exactly, in
 * the largest unit that divides it: "90s", not the "1m" of format_age().
 */
char *
format_duration(int64_t ms)
{
	static const struct {
		int64_t		 ms;
		const char	*unit;
	} units[] = {
		{ 86400 * 1000, "d" }, { 3600 * 1000, "h" }, { 60 * 1000, "m" },
		{ 1000, "s" },
	};
	char	*s;
	u_int	 i;

	for (i = 0; i < nitems(units); i++) {
		if (ms > 0 && ms % units[i].ms == 0) {
			xasprintf(&s, "%lld%s", (long long)(ms / units[i].ms),
			    units[i].unit);
			return (s);
		}
	}
	xasprintf(&s, "%lldms", (long long)ms);
	return (s);
}

/* Writes all of buf, waiting if fd is non-blocking and full. */
ssize_t
write_all(int fd, const void *buf, size_t len)
{
	const char	*p = buf;
	size_t		 left = len;
	ssize_t		 n;
	struct pollfd	 pfd;

	while (left > 0) {
		n = write(fd, p, left);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN) {
			pfd.fd = fd;
			pfd.events = POLLOUT;
			(void)poll(&pfd, 1, -1);
			continue;
		}
		if (n <= 0)
			return (-1);
		p += n;
		left -= (size_t)n;
	}
	return ((ssize_t)len);
}

/*
 * Writes s to path, a file that exists (a /proc file: a user namespace's
 * maps); system calls only, so a child just forked may call it.
 */
int
write_proc(const char *path, const char *s)
{
	int	 fd, rc;

	if ((fd = open(path, O_WRONLY|O_CLOEXEC)) == -1)
		return (-1);
	rc = write_all(fd, s, strlen(s)) == -1 ? -1 : 0;
	close(fd);
	return (rc);
}

/*
 * Crash-safe write: a temporary file beside the target, fsync, rename, and
 * fsync of the directory, so a reader sees the old file or the new one.
 */
int
write_file_atomic(const char *path, const void *buf, size_t len, int mode,
    char **cause)
{
	char	*tmp, *dir, *slash;
	int	 fd, dfd, rc = -1;

	xasprintf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, mode);
	if (fd == -1) {
		xasprintf(cause, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	if (write_all(fd, buf, len) == -1 || fsync(fd) == -1) {
		xasprintf(cause, "%s: %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		goto out;
	}
	close(fd);
	if (rename(tmp, path) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		unlink(tmp);
		goto out;
	}
	dir = xstrdup(path);
	if ((slash = strrchr(dir, '/')) != NULL) {
		*slash = '\0';
		if ((dfd = open(*dir ? dir : "/",
		    O_RDONLY|O_DIRECTORY|O_CLOEXEC)) != -1) {
			fsync(dfd);
			close(dfd);
		}
	}
	free(dir);
	rc = 0;
out:
	free(tmp);
	return (rc);
}

/*
 * Replaces path by a temporary file renamed over it, without the fsyncs of
 * write_file_atomic: for caches, whose readers check what they read (a
 * torn file is a miss), and for which a flush per command would cost more
 * than what they save.  Returns 0 or -1 with *cause.
 */
int
write_file_replace(const char *path, const void *buf, size_t len, int mode,
    char **cause)
{
	char	*tmp;
	int	 fd, rc = -1;

	xasprintf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	if ((fd = open(tmp, O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, mode)) == -1)
		goto out;
	if (write_all(fd, buf, len) == -1) {
		close(fd);
		goto out;
	}
	if (close(fd) == 0 && rename(tmp, path) == 0)
		rc = 0;
out:
	if (rc != 0) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	return (rc);
}

/*
 * Reads a whole file of at most max bytes; returns it NUL-terminated (the
 * caller frees it) and its length in *len if len is not NULL.
 */
char *
read_file(const char *path, size_t max, size_t *len, char **cause)
{
	struct stat	 st;
	char		*buf = NULL;
	size_t		 used = 0, size = 0;
	ssize_t		 n;
	int		 fd;

	if ((fd = open(path, O_RDONLY|O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return (NULL);
	}
	/* Sized at once (a large file is not copied as it grows). */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (uint64_t)st.st_size < max) {
		size = (size_t)st.st_size + 4096 + 2;
		buf = xmalloc(size);
	}
	for (;;) {
		if (used + 4096 + 1 > size) {
			size = size == 0 ? 8192 : size * 2;
			buf = xrealloc(buf, size);
		}
		n = read(fd, buf + used, size - used - 1);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			xasprintf(cause, "%s: %s", path, strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		used += (size_t)n;
		if (used > max) {
			xasprintf(cause, "%s: larger than %zu bytes", path,
			    max);
			goto fail;
		}
	}
	close(fd);
	if (buf == NULL)
		buf = xmalloc(1);
	buf[used] = '\0';
	if (len != NULL)
		*len = used;
	return (buf);
fail:
	close(fd);
	free(buf);
	return (NULL);
}

int
mkdir_p(const char *path, int mode)
{
	char	*p, *s;
	int	 rc = 0;

	p = xstrdup(path);
	for (s = p + 1; rc == 0; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, mode) == -1 && errno != EEXIST)
			rc = -1;
		*s = c;
		if (c == '\0')
			break;
	}
	free(p);
	return (rc);
}

int
set_nonblock(int fd)
{
	int	 fl;

	if ((fl = fcntl(fd, F_GETFL)) == -1)
		return (-1);
	return (fcntl(fd, F_SETFL, fl | O_NONBLOCK));
}

/* Trims blanks (and CR, LF) at both ends of s, in place; returns the start. */
char *
strtrim(char *s)
{
	size_t	 n;

	s += strspn(s, " \t\r\n");
	n = strlen(s);
	while (n > 0 && strchr(" \t\r\n", s[n - 1]) != NULL)
		s[--n] = '\0';
	return (s);
}

/* Returns the words of v joined by sep; the caller frees it. */
char *
strv_join(char *const *v, const char *sep)
{
	struct evbuffer	*b = buf_new();
	size_t		 i;

	for (i = 0; v != NULL && v[i] != NULL; i++)
		evbuffer_add_printf(b, "%s%s", i != 0 ? sep : "", v[i]);
	return (buf_finish(b, NULL));
}

/* A growable buffer for text (libevent's); out of memory is fatal. */
struct evbuffer *
buf_new(void)
{
	struct evbuffer	*b;

	if ((b = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	return (b);
}

/*
 * Frees b and returns what it held as a string (*len bytes, if len is
 * not NULL, and a NUL); the caller frees it.
 */
char *
buf_finish(struct evbuffer *b, size_t *len)
{
	size_t	 n = evbuffer_get_length(b);
	char	*s;

	s = xmalloc(n + 1);
	if (evbuffer_remove(b, s, n) != (int)n)
		fatalx("%s: evbuffer_remove failed", __func__);
	s[n] = '\0';
	if (len != NULL)
		*len = n;
	evbuffer_free(b);
	return (s);
}

size_t
strv_len(char *const *v)
{
	size_t	 n = 0;

	while (v != NULL && v[n] != NULL)
		n++;
	return (n);
}

/* Returns a deep copy, NULL-terminated; free with strv_free. */
char **
strv_copy(char *const *v)
{
	size_t	 n = strv_len(v), i;
	char	**c;

	c = xcalloc(n + 1, sizeof *c);
	for (i = 0; i < n; i++)
		c[i] = xstrdup(v[i]);
	return (c);
}

/* Appends a copy of s to *v (NULL-terminated) unless it is there. */
void
strv_add(char ***v, const char *s)
{
	size_t	 n = strv_len(*v), i;

	for (i = 0; i < n; i++) {
		if (strcmp((*v)[i], s) == 0)
			return;
	}
	*v = xreallocarray(*v, n + 2, sizeof **v);
	(*v)[n] = xstrdup(s);
	(*v)[n + 1] = NULL;
}

void
strv_free(char **v)
{
	size_t	 i;

	if (v == NULL)
		return;
	for (i = 0; v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

#define USER_NAME_CACHE	4
#define USER_NAME_TTL	(10 * 1000)	/* ms: a renamed user shows soon */

/*
 * Returns the user's name, or the number if it has none; caller frees.
 * The daemon asks for every request's owner: getpwuid reads and parses
 * /etc/passwd (or asks NSS) each time, about a twentieth of what a job
 * submission costs it, so the last few answers are kept a few seconds.
 */
char *
user_name(uid_t uid)
{
	static struct {
		uid_t	 uid;
		char	*name;
		int64_t	 when;
	}		 cache[USER_NAME_CACHE];
	static u_int	 next;
	struct passwd	*pw;
	char		*s;
	int64_t		 now = clock_mono_ms();
	u_int		 i;

	for (i = 0; i < USER_NAME_CACHE; i++) {
		if (cache[i].name != NULL && cache[i].uid == uid &&
		    now - cache[i].when < USER_NAME_TTL)
			return (xstrdup(cache[i].name));
	}
	if ((pw = getpwuid(uid)) != NULL)
		s = xstrdup(pw->pw_name);
	else
		xasprintf(&s, "%lu", (u_long)uid);
	i = next++ % USER_NAME_CACHE;
	free(cache[i].name);
	cache[i].uid = uid;
	cache[i].name = xstrdup(s);
	cache[i].when = now;
	return (s);
}

/* Sends fd over the Unix socket sock with one byte, c. */
int
send_fd(int sock, int fd, char c)
{
	return (fdpass_send(sock, &c, 1, fd) == 1 ? 0 : -1);
}

/*
 * Receives a descriptor (close-on-exec) and its byte (*c) from sock.
 * Returns it, or -1.
 */
int
recv_fd(int sock, char *c)
{
	int	 fd;

	if (fdpass_recv(sock, c, 1, &fd) == -1 && fd != -1) {
		close(fd);
		fd = -1;
	}
	return (fd);
}

/*
 * The full path of the executable file name in a directory of $PATH
 * (/usr/bin:/bin if unset), or NULL.  The caller frees it.
 */
char *
find_program(const char *name)
{
	const char	*path = getenv("PATH");
	char		*copy, *dir, *next, *full = NULL;
	struct stat	 sb;

	if (path == NULL || *path == '\0')
		path = "/usr/bin:/bin";
	copy = xstrdup(path);
	for (dir = copy; dir != NULL; dir = next) {
		if ((next = strchr(dir, ':')) != NULL)
			*next++ = '\0';
		xasprintf(&full, "%s/%s", *dir != '\0' ? dir : ".", name);
		if (stat(full, &sb) == 0 && S_ISREG(sb.st_mode) &&
		    access(full, X_OK) == 0)
			break;
		free(full);
		full = NULL;
	}
	free(copy);
	return (full);
}

/* Whether name is a program in $PATH. */
int
have_program(const char *name)
{
	char	*full;

	if ((full = find_program(name)) == NULL)
		return (0);
	free(full);
	return (1);
}
