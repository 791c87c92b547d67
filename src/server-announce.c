/*
 * server-announce.c: serve --announce: the host's signed announcement
 * (announce.c) sent by UDP to the broadcast address of every IPv4
 * interface that is up, once as it starts serving and then every
 * ANNOUNCE_INTERVAL seconds.  It carries no secret: a token or an invite
 * never goes in it.
 */

#include <sys/socket.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "gmux.h"

int			 server_announce_on;	/* --announce, or ANNOUNCE=1 */
static int		 announce_fd = -1;
static struct event	*announce_ev;
static uint16_t		 announce_port;

/* The announcement's addresses: --addr's, else every interface's. */
static void
announce_addrs(struct announce *a, struct ifaddrs *ifs)
{
	const char	*host = server_tls_host();
	struct in_addr	 in;
	struct ifaddrs	*i;
	struct sockaddr_in *sin;

	if (host != NULL && inet_pton(AF_INET, host, &in) == 1 &&
	    in.s_addr != htonl(INADDR_ANY)) {
		snprintf(a->addrs[a->naddrs++], sizeof a->addrs[0], "%s", host);
		return;
	}
	for (i = ifs; i != NULL && a->naddrs < ANNOUNCE_ADDRS_MAX;
	    i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET ||
		    !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
			continue;
		sin = (struct sockaddr_in *)i->ifa_addr;
		inet_ntop(AF_INET, &sin->sin_addr, a->addrs[a->naddrs++],
		    sizeof a->addrs[0]);
	}
}

/* Sends the announcement to each interface's broadcast address. */
static void
announce_send(evutil_socket_t fd, short events, void *arg)
{
	struct announce		 a;
	struct ifaddrs		*ifs = NULL, *i;
	struct sockaddr_in	 to;
	char			*dgram;
	size_t			 len;

	if (getifaddrs(&ifs) != 0)
		return;
	memset(&a, 0, sizeof a);
	if (gethostname(a.name, sizeof a.name) != 0 || *a.name == '\0')
		snprintf(a.name, sizeof a.name, "gmux");
	a.name[strcspn(a.name, ".")] = '\0';	/* the short name */
	a.port = (uint16_t)server_tls_port();
	a.time = clock_ms();
	announce_addrs(&a, ifs);
	dgram = announce_format(&a, server_tls_identity(), &len);
	for (i = ifs; dgram != NULL && i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET ||
		    !(i->ifa_flags & IFF_UP) ||
		    !(i->ifa_flags & IFF_BROADCAST) ||
		    (i->ifa_flags & IFF_LOOPBACK) || i->ifa_broadaddr == NULL)
			continue;
		memcpy(&to, i->ifa_broadaddr, sizeof to);
		to.sin_port = htons(announce_port);
		if (sendto(announce_fd, dgram, len, 0, (struct sockaddr *)&to,
		    sizeof to) == -1)
			log_debug("%s: %s: %s", __func__, i->ifa_name,
			    strerror(errno));
	}
	if (dgram == NULL)
		log_debug("%s: cannot make the announcement", __func__);
	free(dgram);
	freeifaddrs(ifs);
}

/*
 * Starts announcing, if asked (--announce or ANNOUNCE=1) and serving TCP.
 * Returns 0, or -1 with *cause.
 */
int
server_announce_start(char **cause)
{
	const char	*v = config_get("ANNOUNCE");
	struct timeval	 tv;
	int		 on = 1;

	if (!server_announce_on && (v == NULL || strcmp(v, "1") != 0))
		return (0);
	if (server_tls_identity() == NULL) {
		xasprintf(cause, "--announce: needs --addr (it announces the "
		    "TLS port)");
		return (-1);
	}
	announce_port = (uint16_t)config_uint("ANNOUNCE_PORT", ANNOUNCE_PORT,
	    1, 65535);
	tv.tv_sec = config_uint("ANNOUNCE_INTERVAL", 2, 1, 3600);
	tv.tv_usec = 0;
	announce_fd = socket(AF_INET, SOCK_DGRAM|SOCK_NONBLOCK|SOCK_CLOEXEC, 0);
	if (announce_fd == -1 || setsockopt(announce_fd, SOL_SOCKET,
	    SO_BROADCAST, &on, sizeof on) != 0) {
		xasprintf(cause, "--announce: socket: %s", strerror(errno));
		return (-1);
	}
	announce_ev = event_new(server_base, -1, EV_PERSIST, announce_send,
	    NULL);
	if (announce_ev == NULL || event_add(announce_ev, &tv) != 0)
		fatalx("%s: event", __func__);
	announce_send(-1, 0, NULL);
	log_info("announcing port %u on UDP port %u every %lld s",
	    server_tls_port(), announce_port, (long long)tv.tv_sec);
	return (0);
}

void
server_announce_stop(void)
{
	if (announce_ev != NULL)
		event_free(announce_ev);
	announce_ev = NULL;
	if (announce_fd != -1)
		close(announce_fd);
	announce_fd = -1;
}
