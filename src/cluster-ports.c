/*
 * cluster-ports.c: the MASTER_PORTs (29500-29999) that programs on this
 * member listen on, sampled off the loop and published in its record
 * ("ports_held"), so that the leader gives a gang whose rank 0 is here a
 * port no one holds (docs/cluster.md, "Gangs").  The sample is a helper
 * thread's (DESIGN.md decision 1): it reads /proc/net/tcp and tcp6, the
 * listening sockets of this member's network, and hands the loop a
 * bitmap through an eventfd.  One round at a time, each second.
 */

#include <sys/eventfd.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cluster-int.h"

#define PORTS_FILE_MAX	(4 * 1024 * 1024)	/* of /proc/net/tcp read */
#define TCP_LISTEN	0x0a			/* st in /proc/net/tcp */
#define PORTS_EVERY_MS	1000			/* a sample, at most */

struct ports_round {
	u_char		 held[CLUSTER_PORTS_BYTES];
};

static u_char			 ports_held[CLUSTER_PORTS_BYTES];
static struct ports_round	*ports_busy;	/* in the thread, or NULL */
static int			 ports_efd = -1;
static struct event		*ports_ev;
static int64_t			 ports_last;

/* Is port in the gangs' range and marked in held? */
int
cluster_ports_has(const u_char *held, u_int port)
{
	u_int	 i;

	if (port < CLUSTER_GANG_PORT || port >= CLUSTER_GANG_PORT +
	    CLUSTER_GANG_PORTS)
		return (0);
	i = port - CLUSTER_GANG_PORT;
	return ((held[i / 8] >> (i % 8)) & 1);
}

static void
ports_mark(u_char *held, u_int port)
{
	u_int	 i = port - CLUSTER_GANG_PORT;

	held[i / 8] |= (u_char)(1 << (i % 8));
}

/*
 * Marks in held the gangs' ports that text (/proc/net/tcp or tcp6, len
 * bytes) shows a socket listening on, on any address.  A line that is
 * not one is passed over.
 */
void
cluster_ports_parse(const char *text, size_t len, u_char *held)
{
	const char	*p = text, *end = text + len, *nl;
	char		 line[256];
	unsigned int	 port, st;
	size_t		 n;

	for (; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		n = (size_t)(nl - p);
		if (n >= sizeof line)
			continue;
		memcpy(line, p, n);
		line[n] = '\0';
		/* "  0: 0100007F:7344 00000000:0000 0A ..." */
		if (sscanf(line, " %*u: %*[0-9A-Fa-f]:%4x %*[0-9A-Fa-f]:%*4x "
		    "%2x", &port, &st) != 2 || st != TCP_LISTEN)
			continue;
		if (port >= CLUSTER_GANG_PORT && port < CLUSTER_GANG_PORT +
		    CLUSTER_GANG_PORTS)
			ports_mark(held, port);
	}
}

/* In the thread: one file's listening ports into held. */
static void
ports_read(const char *path, u_char *held)
{
	char	*text, *cause = NULL;
	size_t	 len;

	if ((text = read_file(path, PORTS_FILE_MAX, &len, &cause)) == NULL) {
		free(cause);
		return;
	}
	cluster_ports_parse(text, len, held);
	free(text);
}

static void *
ports_main(void *arg)
{
	struct ports_round	*r = arg;
	uint64_t		 one = 1;

	ports_read("/proc/net/tcp", r->held);
	ports_read("/proc/net/tcp6", r->held);
	if (write(ports_efd, &one, sizeof one) == -1)
		log_warn("%s: eventfd", __func__);
	return (NULL);
}

/* In the loop: the round is over; its bitmap is the one published. */
static void
ports_done_cb(evutil_socket_t fd, short events, void *arg)
{
	uint64_t	 n;

	if (read(fd, &n, sizeof n) == -1 || ports_busy == NULL)
		return;
	memcpy(ports_held, ports_busy->held, sizeof ports_held);
	free(ports_busy);
	ports_busy = NULL;
}

/* Starts a round's thread; an errno if it could not be. */
static int
ports_start(struct ports_round *r)
{
	if (ports_efd == -1) {
		if ((ports_efd = eventfd(0, EFD_NONBLOCK|EFD_CLOEXEC)) == -1)
			return (errno);
		ports_ev = event_new(cluster->base, ports_efd,
		    EV_READ|EV_PERSIST, ports_done_cb, NULL);
		if (ports_ev == NULL || event_add(ports_ev, NULL) != 0)
			fatalx("%s: event_new", __func__);
	}
	return (thread_start_detached(ports_main, r));
}

/* On the tick: a new sample each second, one at a time. */
void
cluster_ports_tick(int64_t now)
{
	struct ports_round	*r;
	int			 e;

	if (ports_busy != NULL || now - ports_last < PORTS_EVERY_MS)
		return;
	ports_last = now;
	r = xcalloc(1, sizeof *r);
	if ((e = ports_start(r)) != 0) {
		log_warnx("cluster: cannot sample the ports held: %s",
		    strerror(e));
		free(r);
		return;
	}
	ports_busy = r;
}

/* The ports held, for the record: an array, or NULL if none is. */
json_t *
cluster_ports_json(void)
{
	json_t	*a = NULL;
	u_int	 port;

	for (port = CLUSTER_GANG_PORT; port < CLUSTER_GANG_PORT +
	    CLUSTER_GANG_PORTS; port++) {
		if (!cluster_ports_has(ports_held, port))
			continue;
		if (a == NULL)
			a = json_array();
		json_array_append_new(a, json_integer(port));
	}
	return (a);
}

/* A record's "ports_held" into held (what is not a port is passed). */
void
cluster_ports_from_json(json_t *a, u_char *held)
{
	json_t		*v;
	json_int_t	 port;
	size_t		 i;

	memset(held, 0, CLUSTER_PORTS_BYTES);
	json_array_foreach(a, i, v) {
		port = json_integer_value(v);
		if (port >= CLUSTER_GANG_PORT && port < CLUSTER_GANG_PORT +
		    CLUSTER_GANG_PORTS)
			ports_mark(held, (u_int)port);
	}
}
