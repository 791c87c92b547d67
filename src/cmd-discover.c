/*
 * cmd-discover.c: gmux remote discover: listens for the hosts that gmux
 * serve --announce makes known on the LAN (announce.c checks each
 * datagram against its own pin's key), lists them, and adds one with an
 * invite read on stdin (docs/remote.md, "Discovery").
 */

#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "gmux.h"
#include "cmd-int.h"

#define DISCOVER_HOSTS_MAX	64

struct heard {
	struct announce	 a;
	int64_t		 at;		/* ours, ms */
};

/* Takes discover's options (ch counts from OPT_WAIT); -1 for a bad one. */
int
discover_option(struct discover *d, int ch, const char *arg)
{
	char	*cause = NULL;

	switch (ch) {
	case 0:
		if (parse_duration(arg, &d->wait_ms, &cause) != 0 ||
		    d->wait_ms <= 0) {
			free(cause);
			return (-1);
		}
		break;
	case 1:
		d->first = 1;
		break;
	case 2:
		d->add = arg;
		break;
	case 3:
		d->host = arg;
		break;
	}
	return (0);
}

/* Keeps a, one entry per pin (its newest); returns the count. */
static u_int
discover_keep(struct heard *h, u_int n, const struct announce *a)
{
	u_int	 i;

	for (i = 0; i < n; i++) {
		if (strcmp(h[i].a.pin, a->pin) == 0)
			break;
	}
	if (i == n && n == DISCOVER_HOSTS_MAX)
		return (n);
	if (i == n || a->time >= h[i].a.time) {
		h[i].a = *a;
		h[i].at = clock_ms();
	}
	return (i == n ? n + 1 : n);
}

/* Listens as d says; fills h, returns how many hosts, or -1. */
static int
discover_listen(const struct discover *d, struct heard *h)
{
	struct sockaddr_in	 sin;
	struct pollfd		 pfd;
	struct announce		 a;
	char			 buf[ANNOUNCE_MAX + 1], *cause = NULL;
	int64_t			 end = clock_mono_ms() + d->wait_ms, left;
	ssize_t			 len;
	u_int			 n = 0, dropped = 0;
	int			 fd, on = 1;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)config_uint("ANNOUNCE_PORT",
	    ANNOUNCE_PORT, 1, 65535));
	fd = socket(AF_INET, SOCK_DGRAM|SOCK_CLOEXEC, 0);
	if (fd == -1 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on,
	    sizeof on) != 0 || bind(fd, (struct sockaddr *)&sin,
	    sizeof sin) != 0) {
		fprintf(stderr, "gmux remote discover: UDP port %u: %s\n",
		    ntohs(sin.sin_port), strerror(errno));
		return (-1);
	}
	pfd.fd = fd;
	pfd.events = POLLIN;
	while ((left = end - clock_mono_ms()) > 0 && !(d->first && n > 0)) {
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		if ((len = recv(fd, buf, sizeof buf, 0)) <= 0)
			continue;
		if (announce_parse(buf, (size_t)len, &a, &cause) != 0) {
			log_debug("%s: dropped: %s", __func__, cause);
			free(cause);
			cause = NULL;
			dropped++;
			continue;
		}
		if (d->host == NULL || strcmp(a.name, d->host) == 0)
			n = discover_keep(h, n, &a);
	}
	close(fd);
	if (dropped != 0)
		log_debug("%s: %u datagrams dropped", __func__, dropped);
	return ((int)n);
}

static void
discover_print(const struct heard *h, u_int n, int json)
{
	json_t	*arr, *o, *addrs;
	u_int	 i, k;

	if (!json) {
		for (i = 0; i < n; i++)
			printf("%-16s %s:%u %s %llds ago\n", h[i].a.name,
			    h[i].a.addrs[0], h[i].a.port, h[i].a.pin,
			    (long long)((clock_ms() - h[i].a.time) / 1000));
		return;
	}
	arr = json_array();
	for (i = 0; i < n; i++) {
		addrs = json_array();
		for (k = 0; k < h[i].a.naddrs; k++)
			json_array_append_new(addrs, json_string(
			    h[i].a.addrs[k]));
		o = json_pack("{s:s,s:o,s:i,s:s,s:I,s:I}", "name",
		    h[i].a.name, "addrs", addrs, "port", h[i].a.port, "pin",
		    h[i].a.pin, "time", (json_int_t)h[i].a.time, "heard",
		    (json_int_t)h[i].at);
		json_array_append_new(arr, o);
	}
	json_dumpf(arr, stdout, JSON_INDENT(2));
	printf("\n");
	json_decref(arr);
}

/* Adds the one host heard as name, with the invite (or token) on stdin. */
static int
discover_add(const struct discover *d, const struct heard *h, u_int n)
{
	char	*line, *at, *text;
	int	 rc;

	if (n != 1) {
		fprintf(stderr, "gmux remote discover: %s hosts heard%s; name "
		    "one with --host\n", n == 0 ? "no" : "several",
		    d->host != NULL ? " of that name" : "");
		return (1);
	}
	if ((line = remote_read_target()) == NULL) {
		fprintf(stderr, "gmux remote discover: no invite on stdin\n");
		return (1);
	}
	if ((at = strchr(line, '@')) != NULL)
		*at = '\0';	/* a whole INVITE@HOST:PORT#PIN: its invite */
	xasprintf(&text, "%s@%s:%u#%s", line, h->a.addrs[0], h->a.port,
	    h->a.pin);
	rc = remote_add_text(d->add, text, 0, 1);
	explicit_bzero(line, strlen(line));
	explicit_bzero(text, strlen(text));
	free(line);
	free(text);
	return (rc);
}

/* gmux remote discover [--wait D] [--first] [--json] [--add NAME] */
int
remote_discover(const struct discover *d, int json)
{
	struct heard	*h;
	int		 n, rc = 0;

	if (d->host != NULL && d->add == NULL)
		cmd_usage_error(&cmd_remote_entry, "--host goes with --add");
	h = xcalloc(DISCOVER_HOSTS_MAX, sizeof *h);
	if ((n = discover_listen(d, h)) == -1)
		rc = 1;
	else if (d->add != NULL)
		rc = discover_add(d, h, (u_int)n);
	else
		discover_print(h, (u_int)n, json);
	free(h);
	return (rc);
}
