/*
 * target.c: the string that names a remote host, TOKEN@HOST:PORT#PIN, as
 * `gmux serve --addr` prints it and `gmux remote add` takes it.  HOST is a
 * name, an IPv4 address or an IPv6 address in brackets ([::1]:7070); the
 * port defaults to 7070; PIN is the host key's SHA-256 in hex.  Errors
 * never quote the string: it holds a secret.
 */

#include <sys/socket.h>

#include <arpa/inet.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

#define TOKEN_MIN	16
#define TOKEN_MAX	256
#define HOST_MAX	253

void
target_clear(struct target *t)
{
	if (t->token != NULL) {
		explicit_bzero(t->token, strlen(t->token));
		free(t->token);
	}
	free(t->host);
	memset(t, 0, sizeof *t);
}

static int
target_token_ok(const char *s, size_t len)
{
	size_t	 i;

	if (len < TOKEN_MIN || len > TOKEN_MAX)
		return (0);
	for (i = 0; i < len; i++) {
		if (!isalnum((u_char)s[i]) && s[i] != '-' && s[i] != '_')
			return (0);
	}
	return (1);
}

/* A host name or IPv4 address: letters, digits, '.', '-' and '_'. */
static int
target_name_ok(const char *s, size_t len)
{
	size_t	 i;

	if (len == 0 || len > HOST_MAX || s[0] == '-' || s[0] == '.')
		return (0);
	for (i = 0; i < len; i++) {
		if (!isalnum((u_char)s[i]) && s[i] != '-' && s[i] != '.' &&
		    s[i] != '_')
			return (0);
	}
	return (1);
}

static int
target_port(const char *s, size_t len, u_int *port)
{
	u_int	 v = 0;
	size_t	 i;

	if (len == 0 || len > 5)
		return (-1);
	for (i = 0; i < len; i++) {
		if (!isdigit((u_char)s[i]))
			return (-1);
		v = v * 10 + (u_int)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return (-1);
	*port = v;
	return (0);
}

/* Parses HOST[:PORT] (s, len: not NUL-terminated) into t. */
static int
target_hostport_parse(const char *s, size_t len, struct target *t,
    char **cause)
{
	const char	*end = s + len, *close, *colon;
	char		 v6[INET6_ADDRSTRLEN + 1];
	struct in6_addr	 a6;

	t->port = TARGET_PORT;
	if (len > 0 && *s == '[') {
		if ((close = memchr(s, ']', len)) == NULL ||
		    (size_t)(close - s - 1) >= sizeof v6)
			goto bad_host;
		memcpy(v6, s + 1, (size_t)(close - s - 1));
		v6[close - s - 1] = '\0';
		if (inet_pton(AF_INET6, v6, &a6) != 1)
			goto bad_host;
		t->host = xstrdup(v6);
		colon = close + 1;
		if (colon == end)
			return (0);
		if (*colon != ':')
			goto bad_host;
	} else {
		colon = memchr(s, ':', len);
		if (colon != NULL && memchr(colon + 1, ':', (size_t)(end -
		    colon - 1)) != NULL) {
			xasprintf(cause, "an IPv6 address goes in brackets, "
			    "like [::1]:7070");
			return (-1);
		}
		if (!target_name_ok(s, (size_t)((colon ? colon : end) - s)))
			goto bad_host;
		t->host = xstrndup(s, (size_t)((colon ? colon : end) - s));
		if (colon == NULL)
			return (0);
	}
	if (target_port(colon + 1, (size_t)(end - colon - 1), &t->port) != 0) {
		xasprintf(cause, "the port is not a number from 1 to 65535");
		return (-1);
	}
	return (0);
bad_host:
	xasprintf(cause, "the host is not a name, an IPv4 address or an IPv6 "
	    "address in brackets");
	return (-1);
}

/*
 * Parses TOKEN@HOST[:PORT]#PIN into t (cleared first; free its parts with
 * target_clear).  Returns 0, or -1 with *cause naming the bad part.
 */
int
target_parse(const char *s, struct target *t, char **cause)
{
	const char	*at, *hash;
	size_t		 i;

	memset(t, 0, sizeof *t);
	if ((at = strchr(s, '@')) == NULL || (hash = strrchr(s, '#')) == NULL ||
	    hash < at) {
		xasprintf(cause, "a remote is written TOKEN@HOST:PORT#PIN");
		return (-1);
	}
	if (!target_token_ok(s, (size_t)(at - s))) {
		xasprintf(cause, "the token is not %d to %d letters, digits, "
		    "'-' or '_'", TOKEN_MIN, TOKEN_MAX);
		return (-1);
	}
	if (strlen(hash + 1) != DIGEST_HEX - 1)
		goto bad_pin;
	for (i = 0; i < DIGEST_HEX - 1; i++) {
		if (!isxdigit((u_char)hash[1 + i]))
			goto bad_pin;
		t->pin[i] = (char)tolower((u_char)hash[1 + i]);
	}
	t->pin[i] = '\0';
	if (target_hostport_parse(at + 1, (size_t)(hash - at - 1), t,
	    cause) != 0) {
		target_clear(t);
		return (-1);
	}
	t->token = xstrndup(s, (size_t)(at - s));
	return (0);
bad_pin:
	xasprintf(cause, "the pin is not 64 hex digits (a SHA-256)");
	target_clear(t);
	return (-1);
}

/* Returns "host:port", with brackets for IPv6; the caller frees it. */
char *
target_hostport(const struct target *t)
{
	char	*s;

	if (strchr(t->host, ':') != NULL)
		xasprintf(&s, "[%s]:%u", t->host, t->port);
	else
		xasprintf(&s, "%s:%u", t->host, t->port);
	return (s);
}

/* Returns TOKEN@HOST:PORT#PIN; the caller frees (and should wipe) it. */
char *
target_format(const struct target *t)
{
	char	*hp, *s;

	hp = target_hostport(t);
	xasprintf(&s, "%s@%s#%s", t->token, hp, t->pin);
	free(hp);
	return (s);
}
