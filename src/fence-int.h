/*
 * fence-int.h: what the fence's files (fence*.c, dns.c) share only
 * among themselves; gmux.h keeps what crosses families.  The units that
 * test these pieces include it too.
 */

#ifndef FENCE_INT_H
#define FENCE_INT_H

#include "gmux.h"

/* fence.c: the network fence around one job */
int		 fence_job_done(const struct fence_job *);
void		 fence_job_test_bypass(struct fence_job *);
#define FENCE_IN_LANDLOCK 0x1	/* gmux-fence-exec entered the ruleset */

/* dns.c */
#define DNS_MAX_NAME	255
#define DNS_NXDOMAIN	(-1)	/* lookup results besides a count */
#define DNS_SERVFAIL	(-2)
struct dns_rr {
	int		 family;	/* AF_INET or AF_INET6 */
	u_char		 addr[16];
	uint32_t	 ttl;		/* seconds */
};
struct dns_question {
	uint16_t	 id;
	uint16_t	 flags;
	char		 name[DNS_MAX_NAME + 1];	/* lower case, no dot */
	int		 plain;		/* only [a-z0-9_-] labels */
	uint16_t	 qtype;
	uint16_t	 qclass;
	size_t		 len;		/* header and question, bytes */
};
typedef int	(*dns_lookup_cb)(const char *, struct dns_rr *, u_int,
		     void *);
struct dns_conn;
int		 dns_parse_query(const u_char *, size_t, struct dns_question *,
		     char **);
size_t		 dns_answer(const u_char *, size_t, u_char *, size_t,
		     dns_lookup_cb, void *);
struct dns_conn	*dns_conn_create(int, int);
int		 dns_conn_read(struct dns_conn *, dns_lookup_cb, void *);
int		 dns_conn_write(struct dns_conn *);
int		 dns_conn_pending(const struct dns_conn *);
void		 dns_conn_free(struct dns_conn *);

/* fence-policy.c: --allow, --deny-net, --add-host */
struct fence	*fence_copy(const struct fence *);
int		 fence_parse_addr(const char *, u_char *);
int		 fence_parse_allow(const char *, struct fence_rule *, char **);
int		 fence_check(const struct fence *, char **);
int		 fence_rule_port(const struct fence_rule *, uint16_t);
int		 fence_match_addr(const struct fence *, int, const u_char *,
		     uint16_t);
int		 fence_loopback(int, const u_char *);
#define FENCE_UNIX_DGRAM	"dgram"	/* --allow unix:dgram */
int		 fence_unix_dgram(const struct fence *);

/* fence-names.c: allowed names, resolved outside the job */
#define FENCE_NAMES_REFRESH_MS	(60 * 1000)
#define FENCE_NAMES_TTL_MS	(5 * 60 * 1000)
struct fence_names;
struct fence_names *fence_names_create(const struct fence *);
int		 fence_names_start(struct fence_names *, char **);
int		 fence_names_fd(const struct fence_names *);
void		 fence_names_collect(struct fence_names *);
int		 fence_names_allows(struct fence_names *, int, const u_char *,
		     uint16_t);
int		 fence_names_lookup(const char *, struct dns_rr *, u_int,
		     void *);
void		 fence_names_free(struct fence_names *);

/* fence-unix.c: AF_UNIX connects and binds, checked */
struct fence_call {			/* a notified connect or bind */
	uint64_t	 addr[16];	/* the job's sockaddr, our own copy */
	u_int		 alen;
	uint64_t	 id;
	pid_t		 pid;		/* the calling thread */
	int		 fd;		/* the job's descriptor */
	int		 sock;		/* our duplicate of the job's socket */
	int		 domain;
	int		 type;
	int		 tcp_state;	/* TCP's state, -1 if not TCP */
	int		 nonblock;	/* the job's O_NONBLOCK */
	int		 cloexec;	/* and FD_CLOEXEC */
};
struct fence_unix;
#define FENCE_UNIX_OWNDIRS	0x1	/* jailed: its directories' sockets */
struct fence_unix *fence_unix_create(const char *, char *const *,
		     const struct fence *, int);
int		 fence_unix_connect(struct fence_unix *,
		     const struct fence_call *, int *, int *);
int		 fence_unix_bind(struct fence_unix *,
		     const struct fence_call *);
#define FENCE_META_NOFOLLOW	0x1	/* fence_unix_meta(): lchown & co */
#define FENCE_META_EMPTY	0x2	/* AT_EMPTY_PATH */
int		 fence_unix_meta(struct fence_unix *, pid_t, int, const char *,
		     int, uid_t, gid_t, int);
void		 fence_unix_free(struct fence_unix *);

/* fence-out.c: the supervisor's sockets, made like the job's */
int		 fence_out_open(const struct fence_call *, int64_t *);
int		 fence_out_state(int, int, int);
int		 fence_out_busy(const struct fence_call *);
int		 fence_out_target(const struct fence_call *, int *, u_char *,
		     uint16_t *);

/* fence-call.c: a notified call, read out of the job */
struct fence_tasks;
struct fence_tasks *fence_tasks_create(void);
void		 fence_tasks_free(struct fence_tasks *);
int		 fence_call_read(struct fence_tasks *, int, uint64_t, pid_t,
		     const uint64_t *, struct fence_call *);
int		 fence_call_udp(int, uint64_t, const uint64_t *);
int		 fence_call_path(struct fence_tasks *, int, uint64_t, pid_t,
		     const uint64_t *, int, int, char *, int *);

/* fence-super.c: the supervisor, outside the job */
#define FENCE_SUPER_JAIL	0x1	/* jailed: binds AF_UNIX by itself */
#define FENCE_SUPER_NOLOOP	0x2	/* host loopback: its own ports only */
struct fence_super;
struct fence_super *fence_super_create(const struct fence *,
		     struct fence_names *, const char *, char *const *, int,
		     int, char **);
u_int		 fence_super_pollfds(const struct fence_super *,
		     struct pollfd *);
void		 fence_super_dispatch(struct fence_super *,
		     const struct pollfd *, u_int);
int		 fence_super_done(const struct fence_super *);
void		 fence_super_counts(const struct fence_super *, uint64_t *,
		     uint64_t *, uint64_t *);
const char	*fence_super_last_refused(const struct fence_super *);
uint64_t	 fence_super_loopback_refused(const struct fence_super *,
		     const char **);
void		 fence_super_free(struct fence_super *);

#endif /* FENCE_INT_H */
