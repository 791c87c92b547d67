/*
 * api-cluster-int.h: what the cluster's routes (api-cluster.c,
 * api-cluster-relay.c) share: a request waiting for etcd.
 */

#ifndef API_CLUSTER_INT_H
#define API_CLUSTER_INT_H

struct ac {				/* a request waiting for etcd */
	struct evhttp_request	*req;
	json_t			*body;	/* a submission's request */
	char			*owner;	/* who asks (a copy: it outlives the
					   dispatch) */
	int			 admin;
	int			 proxied;	/* a member's call */
	int			 confined;
	enum api_transport	 transport;
	json_t			*out;
	json_t			*rest;	/* a stop's ops for its next Txns */
	size_t			 rest_at; /* the first not sent */
	const char		*proto;	/* a terminal's or port's upgrade */
	u_int			 tries;	/* a stop's reads after a lost CAS */
	int			 all;	/* members: those that left too */
};

/* api-cluster.c */
void		 ac_free(struct ac *);
int		 ac_failed(struct ac *, const char *);
struct ac	*ac_job_request(struct evhttp_request *, const char *,
		     const struct api_who *);
json_t		*ac_find(struct ac *, struct etcd_reply *, const char *,
		     const struct etcd_kv **, int);
json_t		*ac_rank0(json_t *);

#endif
