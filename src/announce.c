/*
 * announce.c: the LAN announcement of gmux serve --announce, made and
 * read (docs/remote.md, "Discovery"): a few KEY VALUE lines, signed with
 * the host's TLS key, which the datagram carries so that a client can
 * check that it hashes to the pin.  The parser takes only the exact form.
 */

#include <arpa/inet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "gmux.h"

#define ANNOUNCE_KEY_MAX	200	/* DER SubjectPublicKeyInfo, bytes */
#define ANNOUNCE_SIG_MAX	80	/* DER ECDSA P-256 signature */

/* Whether name is a host name the announcement may carry. */
static int
announce_name_ok(const char *name)
{
	size_t	n = strlen(name);

	if (n == 0 || n >= ANNOUNCE_NAME_MAX)
		return (0);
	return (strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
	    "WXYZ0123456789._-") == n);
}

/*
 * The datagram of a, signed with id; its length in *len.  NULL if id
 * cannot sign or a does not fit.  The caller frees it.
 */
char *
announce_format(const struct announce *a, const struct tls_identity *id,
    size_t *len)
{
	struct evbuffer	*b;
	u_char		*spki, *sig = NULL;
	size_t		 spkilen, siglen, n;
	char		 hex[2 * ANNOUNCE_KEY_MAX + 1], *out = NULL;
	u_int		 i;

	if (!announce_name_ok(a->name) || a->naddrs == 0 ||
	    a->naddrs > ANNOUNCE_ADDRS_MAX ||
	    (spki = tls_identity_spki(id, &spkilen)) == NULL)
		return (NULL);
	b = evbuffer_new();
	evbuffer_add_printf(b, "gmux-announce 1\nname %s\nport %u\n",
	    a->name, a->port);
	for (i = 0; i < a->naddrs; i++)
		evbuffer_add_printf(b, "addr %s\n", a->addrs[i]);
	evbuffer_add_printf(b, "pin %s\ntime %lld\n", tls_identity_pin(id),
	    (long long)a->time);
	if (spkilen > ANNOUNCE_KEY_MAX)
		goto out;
	hex_encode(spki, spkilen, hex);
	evbuffer_add_printf(b, "key %s\n", hex);
	n = evbuffer_get_length(b);
	sig = tls_identity_sign(id, evbuffer_pullup(b, -1), n, &siglen);
	if (sig == NULL || siglen > ANNOUNCE_SIG_MAX)
		goto out;
	hex_encode(sig, siglen, hex);
	evbuffer_add_printf(b, "sig %s\n", hex);
	if ((*len = evbuffer_get_length(b)) <= ANNOUNCE_MAX) {
		out = xmalloc(*len + 1);
		evbuffer_copyout(b, out, *len);
		out[*len] = '\0';
	}
out:
	free(spki);
	free(sig);
	evbuffer_free(b);
	return (out);
}

/* Decodes hex of at most max bytes into out; its length, or -1. */
static ssize_t
announce_unhex(const char *hex, u_char *out, size_t max)
{
	size_t	n = strlen(hex), i;
	u_int	v;

	if (n == 0 || n % 2 != 0 || n / 2 > max ||
	    strspn(hex, "0123456789abcdef") != n)
		return (-1);
	for (i = 0; i < n / 2; i++) {
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return (-1);
		out[i] = (u_char)v;
	}
	return ((ssize_t)(n / 2));
}

/* The value of line if it is "KEY VALUE" for key, else NULL. */
static const char *
announce_value(const char *line, const char *key)
{
	size_t	n = strlen(key);

	if (strncmp(line, key, n) != 0 || line[n] != ' ' || line[n + 1] == '\0')
		return (NULL);
	return (line + n + 1);
}

/* Reads a decimal of at most digits digits into *v; -1 if it is not one. */
static int
announce_number(const char *s, size_t digits, long long *v)
{
	size_t	n = strlen(s);

	if (n == 0 || n > digits || strspn(s, "0123456789") != n ||
	    (s[0] == '0' && n > 1))
		return (-1);
	*v = strtoll(s, NULL, 10);
	return (0);
}

/* Checks one line (the ith, its form fixed by where it is) into a. */
static int
announce_line(const char *line, u_int *at, struct announce *a,
    u_char *key, ssize_t *keylen, char **cause)
{
	const char	*v;
	struct in_addr	 in;
	char		 canon[INET_ADDRSTRLEN];
	long long	 n;

	switch (*at) {
	case 0:
		if (strcmp(line, "gmux-announce 1") != 0)
			goto bad;
		break;
	case 1:
		if ((v = announce_value(line, "name")) == NULL ||
		    !announce_name_ok(v))
			goto bad;
		snprintf(a->name, sizeof a->name, "%s", v);
		break;
	case 2:
		if ((v = announce_value(line, "port")) == NULL ||
		    announce_number(v, 5, &n) != 0 || n < 1 || n > 65535)
			goto bad;
		a->port = (uint16_t)n;
		break;
	case 3:
		if ((v = announce_value(line, "addr")) == NULL) {
			if (a->naddrs == 0)
				goto bad;
			(*at)++;
			return (announce_line(line, at, a, key, keylen, cause));
		}
		if (a->naddrs == ANNOUNCE_ADDRS_MAX ||
		    inet_pton(AF_INET, v, &in) != 1 ||
		    inet_ntop(AF_INET, &in, canon, sizeof canon) == NULL ||
		    strcmp(canon, v) != 0)
			goto bad;
		snprintf(a->addrs[a->naddrs++], sizeof a->addrs[0], "%s", v);
		return (0);	/* more addresses may follow */
	case 4:
		if ((v = announce_value(line, "pin")) == NULL ||
		    strlen(v) != DIGEST_HEX - 1 ||
		    strspn(v, "0123456789abcdef") != DIGEST_HEX - 1)
			goto bad;
		snprintf(a->pin, sizeof a->pin, "%s", v);
		break;
	case 5:
		if ((v = announce_value(line, "time")) == NULL ||
		    announce_number(v, 15, &n) != 0)
			goto bad;
		a->time = n;
		break;
	case 6:
		if ((v = announce_value(line, "key")) == NULL ||
		    (*keylen = announce_unhex(v, key, ANNOUNCE_KEY_MAX)) == -1)
			goto bad;
		break;
	default:
		goto bad;
	}
	(*at)++;
	return (0);
bad:
	xasprintf(cause, "line '%.24s': not what an announcement has there",
	    line);
	return (-1);
}

/*
 * Parses and checks a datagram of len bytes into a: its exact form, its
 * key's pin, its signature.  Returns 0, or -1 with *cause.
 */
int
announce_parse(const char *buf, size_t len, struct announce *a, char **cause)
{
	u_char		 key[ANNOUNCE_KEY_MAX], sig[ANNOUNCE_SIG_MAX];
	char		 text[ANNOUNCE_MAX + 1], *line, *next, *sigline;
	char		 pin[DIGEST_HEX];
	ssize_t		 keylen = -1, siglen;
	u_int		 at = 0;

	memset(a, 0, sizeof *a);
	if (len == 0 || len > ANNOUNCE_MAX || memchr(buf, '\0', len) != NULL ||
	    buf[len - 1] != '\n') {
		xasprintf(cause, "not an announcement (size or NUL)");
		return (-1);
	}
	memcpy(text, buf, len);
	text[len] = '\0';
	if ((sigline = strstr(text, "\nsig ")) == NULL ||
	    strchr(sigline + 1, '\n') != text + len - 1) {
		xasprintf(cause, "no signature as its last line");
		return (-1);
	}
	*++sigline = '\0';	/* the signed part ends with its newline */
	for (line = text; *line != '\0'; line = next) {
		next = strchr(line, '\n');
		*next++ = '\0';
		if (announce_line(line, &at, a, key, &keylen, cause) != 0)
			return (-1);
	}
	text[len - 1] = '\0';
	if (at != 7 || (siglen = announce_unhex(sigline + 4, sig,
	    sizeof sig)) == -1) {
		xasprintf(cause, "lines missing or a bad signature line");
		return (-1);
	}
	if (tls_spki_verify(key, (size_t)keylen, buf, (size_t)(sigline - text),
	    sig, (size_t)siglen, pin) != 0 || strcmp(pin, a->pin) != 0) {
		xasprintf(cause, "its signature or key does not match its pin");
		return (-1);
	}
	return (0);
}
