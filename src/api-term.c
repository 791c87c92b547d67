/*
 * api-term.c: the routes of terminals and published ports
 * (docs/terminals.md): checks made before a connection is upgraded, so a
 * refusal is an ordinary JSON error; then the connection is handed to
 * term-relay.c or term-port.c.
 */

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/bufferevent.h>
#include <event2/http.h>

#include "gmux.h"
#include "term-int.h"

/* Is the request's Upgrade proto?  Else answers 400. */
static int
api_term_upgrade(struct evhttp_request *req, const char *proto)
{
	const char	*up;

	up = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Upgrade");
	if (up != NULL && strcasecmp(up, proto) == 0)
		return (0);
	api_error(req, 400, "Upgrade: %s is needed", proto);
	return (-1);
}

/* The running job id names, as who may reach it; else NULL, answered. */
static struct job *
api_term_job(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct job	*j;

	if ((j = api_job_lookup(req, id, who)) == NULL)
		return (NULL);
	if (j->state == JOB_QUEUED) {
		api_error(req, 409, "%s is queued: %s", j->name, j->reason ?
		    j->reason : "waiting");
		return (NULL);
	}
	if (job_ended(j)) {
		if (j->exit_code >= 0)
			api_error(req, 409, "%s has ended: %s %d", j->name,
			    job_state_name(j->state), j->exit_code);
		else
			api_error(req, 409, "%s has ended: %s", j->name,
			    job_state_name(j->state));
		return (NULL);
	}
	return (j);
}

/* A query's number in 1..max; def if absent; -1 answered if bad. */
static long
api_term_number(struct evhttp_request *req, const char *name, long def,
    long max)
{
	const char	*v = api_query(req, name);
	char		*end;
	long		 n;

	if (v == NULL)
		return (def);
	n = strtol(v, &end, 10);
	if (*v == '\0' || *end != '\0' || n < 1 || n > max) {
		api_error(req, 400, "%s: a number from 1 to %ld", name, max);
		return (-1);
	}
	return (n);
}

/* GET /v1/jobs/ID/terminal?cols=C&rows=R&term=T, Upgrade: gmux-term/1 */
void
api_job_terminal(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct evhttp_connection	*evcon;
	struct job			*j;
	const char			*term;
	long				 cols, rows;

	if (api_term_upgrade(req, TERM_UPGRADE) != 0)
		return;
	if ((cols = api_term_number(req, "cols", 80, TERM_SIZE_MAX)) < 0 ||
	    (rows = api_term_number(req, "rows", 24, TERM_SIZE_MAX)) < 0)
		return;
	if ((term = api_query(req, "term")) == NULL)
		term = TERM_DEFAULT;
	if (!term_name_ok(term)) {
		api_error(req, 400, "term: 1 to 64 letters, digits, '.', "
		    "'_', '+' or '-'");
		return;
	}
	if ((j = api_term_job(req, id, who)) == NULL)
		return;
	if (!(j->req.flags & JOB_TERM)) {
		api_error(req, 400, "%s is not a terminal (gmux shell starts "
		    "one)", j->name);
		return;
	}
	evcon = evhttp_request_get_connection(req);
	term_relay_start(evhttp_connection_get_bufferevent(evcon), evcon, j,
	    (u_int)cols, (u_int)rows, term);
}

/* GET /v1/jobs/ID/port?port=N, Upgrade: gmux-port/1 */
void
api_job_port(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct job	*j;
	char		*what;
	long		 port;
	u_int		 i;

	if (api_term_upgrade(req, PORT_UPGRADE) != 0)
		return;
	if ((port = api_term_number(req, "port", 0, 65535)) <= 0) {
		if (port == 0)
			api_error(req, 400, "port: a number from 1 to 65535");
		return;
	}
	if ((j = api_term_job(req, id, who)) == NULL)
		return;
	for (i = 0; i < j->req.npublish; i++) {
		if (j->req.publish[i] == (u_int)port)
			break;
	}
	if (i == j->req.npublish) {
		api_error(req, 404, "%s does not publish port %ld (--publish)",
		    j->name, port);
		return;
	}
	/* A remote container's port is in its own network (term-netns.c). */
	xasprintf(&what, "%s's port %ld", j->name, port);
	term_dial(req, what, j->req.confined && j->req.spec.image != NULL,
	    j->keeper_pid, (u_int)port);
	free(what);
}
