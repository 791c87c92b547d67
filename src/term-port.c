/*
 * term-port.c: a published port's connection (docs/terminals.md).  The
 * daemon connects to the job's port on the host's loopback (term-dial.c
 * waits for that, on the loop) and, once that has succeeded, splices it
 * to the owner's upgraded API connection, bytes as they are, both ways.
 * Nothing listens: each connection is a request.
 */

#include <sys/socket.h>

#include <netinet/in.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "gmux.h"
#include "term-int.h"

#define PORT_HIGH	(1024 * 1024)	/* buffered one way, at most */

struct splice {
	struct bufferevent	*bev;		/* the client's */
	struct evhttp_connection *evcon;	/* freed with it */
	struct bufferevent	*port;
	int			 shut;		/* one side closed: flush, go */
};

/*
 * Starts a connect to 127.0.0.1:port.  Returns the socket, non-blocking,
 * its connect done or going on (writable once it ends: term-dial.c waits
 * for that on the loop), or -1 with *cause.
 */
int
term_port_open(u_int port, char **cause)
{
	struct sockaddr_in	 sin;
	int			 fd;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC,
	    0)) == -1) {
		xasprintf(cause, "socket: %s", strerror(errno));
		return (-1);
	}
	if (connect(fd, (struct sockaddr *)&sin, sizeof sin) == 0 ||
	    errno == EINPROGRESS)
		return (fd);
	xasprintf(cause, "%s", strerror(errno));
	close(fd);
	return (-1);
}

static void
splice_free(struct splice *s)
{
	bufferevent_free(s->port);
	bufferevent_setcb(s->bev, NULL, NULL, NULL, NULL);
	evhttp_connection_free(s->evcon);	/* and its bev */
	free(s);
}

/* Moves what from has read to to's output, holding from if to is full. */
static void
splice_move(struct bufferevent *from, struct bufferevent *to)
{
	evbuffer_add_buffer(bufferevent_get_output(to),
	    bufferevent_get_input(from));
	if (evbuffer_get_length(bufferevent_get_output(to)) > PORT_HIGH)
		bufferevent_disable(from, EV_READ);
}

static void
splice_read(struct bufferevent *bev, void *arg)
{
	struct splice	*s = arg;

	splice_move(bev, bev == s->bev ? s->port : s->bev);
}

/* Output drained: read again, or, once one side has closed, go. */
static void
splice_write(struct bufferevent *bev, void *arg)
{
	struct splice		*s = arg;
	struct bufferevent	*other = bev == s->bev ? s->port : s->bev;

	if (s->shut) {
		if (evbuffer_get_length(bufferevent_get_output(s->bev)) == 0 &&
		    evbuffer_get_length(bufferevent_get_output(s->port)) == 0)
			splice_free(s);
		return;
	}
	bufferevent_enable(other, EV_READ);
}

static void
splice_event(struct bufferevent *bev, short what, void *arg)
{
	struct splice		*s = arg;
	struct bufferevent	*other = bev == s->bev ? s->port : s->bev;

	if (!(what & (BEV_EVENT_EOF|BEV_EVENT_ERROR)))
		return;
	splice_move(bev, other);
	if (what & BEV_EVENT_ERROR || s->shut ||
	    evbuffer_get_length(bufferevent_get_output(other)) == 0) {
		splice_free(s);
		return;
	}
	s->shut = 1;		/* what is left goes, then both close */
	bufferevent_disable(bev, EV_READ);
	bufferevent_disable(other, EV_READ);
}

/*
 * Takes over an upgraded API connection: answers 101 for proto and
 * splices it to other (its bytes, both ways, as they are), which it owns.
 */
void
term_splice_start(struct bufferevent *bev, void *evcon,
    struct bufferevent *other, const char *proto)
{
	struct splice	*s;

	s = xcalloc(1, sizeof *s);
	s->bev = bev;
	s->evcon = evcon;
	s->port = other;
	bufferevent_setcb(bev, splice_read, splice_write, splice_event, s);
	bufferevent_setcb(other, splice_read, splice_write, splice_event, s);
	bufferevent_set_timeouts(bev, NULL, NULL);
	bufferevent_set_timeouts(other, NULL, NULL);
	bufferevent_setwatermark(bev, EV_READ, 0, 0);
	bufferevent_setwatermark(other, EV_READ, 0, 0);
	evbuffer_add_printf(bufferevent_get_output(bev),
	    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: %s\r\n"
	    "Connection: Upgrade\r\n\r\n", proto);
	bufferevent_enable(bev, EV_READ|EV_WRITE);
	bufferevent_enable(other, EV_READ|EV_WRITE);
	if (evbuffer_get_length(bufferevent_get_input(bev)) != 0)
		splice_read(bev, s);
	if (evbuffer_get_length(bufferevent_get_input(other)) != 0)
		splice_read(other, s);
}

/* Takes over an upgraded API connection as the port fd is connected to. */
void
term_port_start(struct bufferevent *bev, void *evcon, int fd)
{
	log_debug("%s: fd %d", __func__, fd);
	term_splice_start(bev, evcon, bufferevent_socket_new(server_base, fd,
	    BEV_OPT_CLOSE_ON_FREE), PORT_UPGRADE);
}
