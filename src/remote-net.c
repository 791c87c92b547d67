/*
 * remote-net.c: the struct remote_io that remote.c's sync and pull use in
 * the CLI: requests to one host over pinned TLS (client.c).  Large blobs
 * are queued and sent several at once, each in parts of REMOTE_NET_PART
 * bytes (PUT /v1/blobs/D?size=N&offset=K), so no request body is large and
 * a file of any size fits the host's body limit.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define REMOTE_NET_PART		(8 * 1024 * 1024)

static int
remote_net_request(void *arg, const char *method, const char *path,
    const char *ctype, const void *body, size_t len, long *status,
    json_t **reply, char **cause)
{
	struct remote_net	*n = arg;
	struct client_req	 q;

	client_req_init(&q, n->target, method, path);
	q.ctype = ctype;
	q.body = body;
	q.len = len;
	n->requests++;
	if (client_request(&q) != 0) {
		*cause = q.reply.error;
		q.reply.error = NULL;
		client_reply_clear(&q.reply);
		return (-1);
	}
	*status = q.reply.status;
	*reply = q.reply.body;
	q.reply.body = NULL;
	if (*status >= 300 && *reply == NULL)
		*reply = json_pack("{s:s}", "error", q.reply.error ?
		    q.reply.error : "refused");
	client_reply_clear(&q.reply);
	return (0);
}

/* Sends the next part of each queued blob, all at once. */
static int
remote_net_round(struct remote_net *n, char **cause)
{
	struct client_req	 q[REMOTE_NET_PARALLEL];
	struct remote_net_put	*p;
	char			*paths[REMOTE_NET_PARALLEL];
	uint64_t		 len;
	u_int			 i;
	int			 rc = 0;

	for (i = 0; i < n->nput; i++) {
		p = &n->put[i];
		len = p->size - p->sent;
		if (len > REMOTE_NET_PART)
			len = REMOTE_NET_PART;
		if (p->size <= REMOTE_NET_PART)
			xasprintf(&paths[i], "/v1/blobs/%s", p->digest);
		else
			xasprintf(&paths[i], "/v1/blobs/%s?size=%llu&"
			    "offset=%llu", p->digest,
			    (unsigned long long)p->size,
			    (unsigned long long)p->sent);
		client_req_init(&q[i], n->target, "PUT", paths[i]);
		q[i].ctype = "application/octet-stream";
		q[i].bodyfd = p->fd;
		q[i].bodyoff = p->sent;
		q[i].bodysize = len;
	}
	client_multi(q, n->nput, 0);
	for (i = 0; i < n->nput; i++) {
		p = &n->put[i];
		n->requests++;
		if (q[i].reply.status == 200 || q[i].reply.status == 201)
			p->sent = p->size;	/* stored, or there already */
		else if (q[i].reply.status == 202)
			p->sent += q[i].bodysize;
		else if (rc == 0) {
			xasprintf(cause, "sending %.16s: %s", p->digest,
			    q[i].reply.error ? q[i].reply.error : "refused");
			rc = -1;
		}
		client_reply_clear(&q[i].reply);
		free(paths[i]);
	}
	return (rc);
}

/* Sends every queued blob; the queue is empty after, whatever happened. */
static int
remote_net_flush(void *arg, char **cause)
{
	struct remote_net	*n = arg;
	u_int			 i, j;
	int			 rc = 0;

	while (n->nput > 0) {
		if (rc == 0 && remote_net_round(n, cause) != 0)
			rc = -1;
		for (i = j = 0; i < n->nput; i++) {
			if (rc == 0 && n->put[i].sent < n->put[i].size)
				n->put[j++] = n->put[i];
			else
				close(n->put[i].fd);
		}
		n->nput = j;
	}
	return (rc);
}

static int
remote_net_put(void *arg, const char *digest, int fd, uint64_t size,
    char **cause)
{
	struct remote_net	*n = arg;
	struct remote_net_put	*p;

	if (n->nput == REMOTE_NET_PARALLEL && remote_net_flush(n, cause) != 0) {
		close(fd);
		return (-1);
	}
	p = &n->put[n->nput++];
	memcpy(p->digest, digest, DIGEST_HEX);
	p->fd = fd;
	p->size = size;
	p->sent = 0;
	return (0);
}

static int
remote_net_get(void *arg, const char *digest, int fd, char **cause)
{
	struct remote_net	*n = arg;
	struct client_req	 q;
	char			*path;
	int			 rc = 0;

	xasprintf(&path, "/v1/blobs/%s", digest);
	client_req_init(&q, n->target, "GET", path);
	q.sinkfd = fd;
	n->requests++;
	client_multi(&q, 1, 0);
	if (q.reply.error != NULL || q.reply.status != 200) {
		xasprintf(cause, "fetching %.16s: %s", digest, q.reply.error ?
		    q.reply.error : "refused");
		rc = -1;
	}
	client_reply_clear(&q.reply);
	free(path);
	return (rc);
}

/* Fills io to talk to n->target (n must outlive it). */
void
remote_net_io(struct remote_net *n, struct remote_io *io)
{
	io->request = remote_net_request;
	io->put_blob = remote_net_put;
	io->flush = remote_net_flush;
	io->get_blob = remote_net_get;
	io->arg = n;
}
