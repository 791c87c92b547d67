/*
 * task-int.h: what the task family (task-*.c, api-task.c) shares inside
 * itself.  docs/tasks.md is the contract.
 */

#ifndef TASK_INT_H
#define TASK_INT_H

#include <sys/queue.h>

#include <stdint.h>

struct bufferevent;

#define TASK_ATTEMPTS	3		/* leases before a lost task fails */
#define TASK_POOL_MAX	200
#define TASK_SESSION_MIN 16
#define TASK_SESSION_MAX 64
#define TASK_KEEP_MS	(10 * 60 * 1000) /* results of a gone caller */

/* Frame types on task connections (docs/tasks.md). */
#define TF_SUBMIT	'T'
#define TF_ACK		'K'
#define TF_RESULT	'R'
#define TF_POOL		'P'
#define TF_HELLO	'H'
#define TF_LEASE	'L'
#define TF_DONE		'D'
#define TF_CANCEL	'C'
#define TF_WITHDRAW	'X'
#define TF_VALUE	'V'		/* a streamed call's part */
#define TF_UPLOAD	'U'		/* a streamed result's part */
#define TASK_ERROR_MAX	1024		/* a withdrawal's reason, bytes */

enum task_state {
	TASK_QUEUED,
	TASK_LEASED,
	TASK_DONE,
	TASK_FAILED
};

struct task_worker;

/* An opaque value: bytes in memory, or a file the daemon never reads. */
struct task_value {
	u_char		*data;
	size_t		 len;
	char		*file;		/* absolute path, or NULL */
};

struct task {
	uint64_t		 id;		/* the daemon's number */
	char			*owner;
	char			*session;
	uint64_t		 cid;		/* the caller's number */
	char			*key;		/* "session:cid" */
	char			*pool;
	enum task_state		 state;
	u_int			 attempts;	/* leases so far */
	int64_t			 timeout_ms;	/* from each lease; 0: none */
	int64_t			 deadline;	/* while leased (mono ms) */
	char			*error;		/* failed: why */
	char			*lost;		/* the last loss, or NULL */
	char			 wname[16];	/* the last worker's */
	int64_t			 ended;		/* done or failed (mono ms) */
	struct task_worker	*worker;	/* while leased */
	struct task_value	 call;
	struct task_value	 out;
	TAILQ_ENTRY(task)	 qentry;	/* its pool's queue */
	TAILQ_ENTRY(task)	 entry;		/* the broker's list */
};
TAILQ_HEAD(task_list, task);

struct task_pool {
	char			*owner;
	char			*pool;
	struct task_list	 queue;
	u_int			 nqueued;
	u_int			 nworkers;
	TAILQ_ENTRY(task_pool)	 entry;
};

struct task_worker {
	u_int			 id;
	char			 name[16];	/* "w3" */
	char			*owner;
	struct task_pool	*pool;
	struct task		*task;		/* leased, or NULL */
	u_int			 done;
	u_int			 job;		/* its job's number, 0: none */
	double			 score;
	char			*device;
	int64_t			 since;		/* wall ms */
	void			*conn;		/* task-conn.c's */
	TAILQ_ENTRY(task_worker) entry;
	TAILQ_ENTRY(task_worker) ientry;	/* while idle */
};

struct task_broker {
	uint64_t		 next_id;
	u_int			 next_worker;
	struct task_list	 tasks;
	struct hmap		*bykey;
	TAILQ_HEAD(, task_pool)	 pools;
	TAILQ_HEAD(, task_worker) workers;
	TAILQ_HEAD(, task_worker) idle;		/* longest idle first */
};

/* task-broker.c: the pure part: queues, leases, attempts, deadlines */
int		 task_pool_valid(const char *);
int		 task_session_valid(const char *);
int		 task_file_valid(const char *);
json_t		*task_payload_parse(const void *, size_t, const u_char **,
		     size_t *);
struct task_broker *task_broker_create(void);
void		 task_broker_free(struct task_broker *);
struct task	*task_find(struct task_broker *, const char *, uint64_t);
struct task	*task_submit(struct task_broker *, const char *, const char *,
		     uint64_t, const char *, int64_t, int *);
struct task_worker *task_worker_add(struct task_broker *, const char *,
		     const char *);
struct task	*task_worker_remove(struct task_broker *, struct task_worker *,
		     const char *);
struct task	*task_lease(struct task_broker *, struct task_worker *,
		     int64_t);
struct task	*task_complete(struct task_broker *, struct task_worker *,
		     uint64_t);
int		 task_lose(struct task_broker *, struct task *, const char *);
void		 task_fail(struct task_broker *, struct task *, const char *,
		     ...) __attribute__((format(printf, 3, 4)));
struct task	*task_expired(struct task_broker *, int64_t);
struct task	*task_withdraw(struct task_broker *, const char *,
		     const char *, const char *, const char *);
void		 task_drop(struct task_broker *, struct task *);
struct task_pool *task_pool_find(struct task_broker *, const char *,
		     const char *, int);
void		 task_value_set(struct task_value *, const void *, size_t,
		     char *);

/* task-spool.c: accepted tasks and their results on disk */
const char	*task_spool_dir(void);
const char	*task_worker_dir(void);
int		 task_spool_init(char **);
void		 task_spool_task(const struct task *);
void		 task_spool_result(const struct task *);
void		 task_spool_remove(struct task_broker *, const struct task *);
void		 task_spool_load(struct task_broker *);
u_int		 task_spool_replay(struct task_broker *, const char *, size_t);

/* task-conn.c: the framed connections of callers and workers */
struct task_broker *task_conn_broker(char **);
void		 task_conn_caller(struct bufferevent *, void *, const char *,
		     const char *, int);
int		 task_conn_session_ok(const char *, const char *);
json_t		*task_conn_workers(const char *);
struct task_peer {			/* a worker on another member */
	const char	*owner;
	const char	*member;
	const char	*job;		/* its cluster job */
	int		 seats;		/* its share there, -1: not said */
	int		 card;		/* its card there, -1: none said */
	int64_t		 mem;		/* its cap there, bytes, -1: none */
};
void		 task_conn_peer(struct bufferevent *, void *,
		     const struct task_peer *);

/* task-value.c: big values streamed through owners' spool directories */
#define TASK_FRAME_HDR	(FRAME_HDR + 4)	/* and the JSON header's length */
struct task_vout;
struct task_vin;
void		 task_frame_head(u_char *, u_char, size_t, size_t);
char		*task_value_take(const char *, const char *, char **);
int		 task_value_range(const char *, const char *, size_t,
		     uint64_t *, uint64_t *, char **);
int		 task_value_field(json_t *, const char *, uint64_t *);
struct task_vout *task_vout_open(const struct task *, uint64_t *, char **);
void		 task_vout_free(struct task_vout *);
int		 task_vout_pump(struct bufferevent *, struct task_vout *);
int		 task_vin_part(struct task_vin **, const struct task *,
		     const void *, size_t, char **);
char		*task_vin_end(struct task_vin **, uint64_t, uint64_t, char **);
void		 task_vin_free(struct task_vin *, int);
void		 task_value_sweep(struct task_broker *);

/* task-peer.c: a worker here for another member's broker */
struct job;
void		 task_peer_relay(int, struct job *, const char *,
		     const char *);

#endif
