/*
 * gmux.h: the one internal header.  Prototypes are grouped by the file
 * that defines them; a file's section lists only what it exports.
 */

#ifndef GMUX_H
#define GMUX_H

#include <sys/types.h>
#include <sys/queue.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#ifndef GMUX_VERSION
#define GMUX_VERSION "0.0.0"
#endif

#define printflike(a, b) __attribute__((format(printf, a, b)))
#define dead __attribute__((noreturn))

#define nitems(a) (sizeof(a) / sizeof((a)[0]))

/* Seats: a card's compute is 100 seats of 1%. */
#define SEATS_PER_CARD 100

/* Exit codes of the CLI besides the job's own. */
#define EXIT_USAGE 2		/* bad flag or value */
#define EXIT_FAILURE_GMUX 1	/* gmux itself failed */

/* xmalloc.c */
void		*xmalloc(size_t);
void		*xcalloc(size_t, size_t);
void		*xrealloc(void *, size_t);
void		*xreallocarray(void *, size_t, size_t);
char		*xstrdup(const char *);
char		*xstrndup(const char *, size_t);
int		 xasprintf(char **, const char *, ...) printflike(2, 3);
int		 xvasprintf(char **, const char *, va_list);

/* log.c */
void		 log_open(int, const char *);
void		 log_close(void);
int		 log_level(void);
void		 log_debug(const char *, ...) printflike(1, 2);
void		 log_info(const char *, ...) printflike(1, 2);
void		 log_warn(const char *, ...) printflike(1, 2);
void		 log_warnx(const char *, ...) printflike(1, 2);
dead void	 fatal(const char *, ...) printflike(1, 2);
dead void	 fatalx(const char *, ...) printflike(1, 2);

/* util.c */
int		 parse_size(const char *, uint64_t *, char **);
int		 parse_share(const char *, u_int *, char **);
int		 parse_duration(const char *, int64_t *, char **);
int		 parse_uint(const char *, u_int, u_int, u_int *, char **);
char		*format_size(uint64_t);
char		*format_share(u_int);
char		*format_age(int64_t);
int		 write_file_atomic(const char *, const void *, size_t, int,
		     char **);
char		*read_file(const char *, size_t, size_t *, char **);
int		 mkdir_p(const char *, int);
int		 set_nonblock(int);
int		 set_cloexec(int);
ssize_t		 write_all(int, const void *, size_t);
char		*strv_join(char *const *, const char *);
void		 strv_free(char **);
char	       **strv_copy(char *const *);
size_t		 strv_len(char *const *);
char		*user_name(uid_t);

/* clock.c */
int64_t		 clock_ms(void);
int64_t		 clock_mono_ms(void);
void		 clock_set_test(int64_t);

/* paths.c */
void		 paths_init(void);
const char	*path_home(void);
const char	*path_socket(void);
const char	*path_db(void);
const char	*path_jobs(void);
const char	*path_config(void);
char		*path_job(u_int);
char		*path_job_file(u_int, const char *);

/* frame.c: the framed output stream (logs, attach, remote streaming) */
#define FRAME_STDOUT	1
#define FRAME_STDERR	2
#define FRAME_EXIT	3	/* payload: JSON {"exit_code":N,"state":S} */
#define FRAME_INFO	4	/* payload: JSON, e.g. the job or its queue place */
#define FRAME_HDR	5	/* type byte + 4-byte big-endian length */
#define FRAME_MAX	(1024 * 1024)
struct frame {
	u_char		 type;
	uint32_t	 len;
	const char	*data;
};
size_t		 frame_header(u_char *, u_char, uint32_t);
ssize_t		 frame_parse(const void *, size_t, struct frame *, char **);
int		 frame_counts(u_char);

/* jobreq.c: what a client asks for when it starts a job */
#define JOB_BURST	0x1
#define JOB_PREEMPTIBLE	0x2
#define JOB_REQUEUE	0x4
#define JOB_NOWAIT	0x8
struct jobreq {
	char		**argv;
	char		**env;
	char		 *cwd;
	u_int		  seats;	/* 0..100 */
	uint64_t	  mem;		/* 0: share x card memory */
	int		  card;		/* -1: any */
	char		 *card_uuid;	/* pins by UUID when set */
	u_int		  ncards;	/* cards wanted, default 1 (0 if seats 0) */
	u_int		  priority;	/* 0..9, default 5 */
	int		  flags;
	int64_t		  grace_ms;
	int64_t		  timeout_ms;	/* bound on queueing; 0: none */
};
void		 jobreq_init(struct jobreq *);
void		 jobreq_clear(struct jobreq *);
int		 jobreq_from_json(json_t *, struct jobreq *, char **);
json_t		*jobreq_to_json(const struct jobreq *);

/* output.c: tables and JSON on the CLI */
struct table;
struct table	*table_create(const char *const *, u_int);
void		 table_add(struct table *, ...);
void		 table_print(struct table *, FILE *);
void		 table_free(struct table *);
void		 json_print(json_t *, FILE *);

/* client.c: the CLI's side of the API */
struct client_reply {
	long		 status;
	json_t		*body;		/* NULL if not JSON */
	char		*error;		/* the body's "error", or a transport error */
};
typedef int (*client_frame_cb)(const struct frame *, void *);
int		 client_daemon_running(void);
int		 client_call(const char *, const char *, json_t *,
		     struct client_reply *);
void		 client_reply_clear(struct client_reply *);
int		 client_stream(const char *, const char *, json_t *,
		     client_frame_cb, void *, int, struct client_reply *);
int		 client_ok(struct client_reply *, const char *);
dead void	 client_die(struct client_reply *, const char *);

/* cmd.c: the command table */
struct cmd_entry {
	const char	*name;
	const char	*args;		/* synopsis after the name */
	const char	*help;		/* one line */
	const char	*options;	/* option lines for --help */
	int		 (*exec)(int, char **);
	int		  hidden;
};
extern const struct cmd_entry *cmd_table[];
const struct cmd_entry *cmd_find(const char *);
void		 cmd_print_help(const struct cmd_entry *, FILE *);
void		 cmd_print_usage(FILE *);
dead void	 cmd_usage_error(const struct cmd_entry *, const char *, ...)
		     printflike(2, 3);
int		 cmd_help_wanted(int, char **);

/* cmd-*.c: one command each */
extern const struct cmd_entry cmd_serve_entry;
extern const struct cmd_entry cmd_run_entry;
extern const struct cmd_entry cmd_ps_entry;
extern const struct cmd_entry cmd_logs_entry;
extern const struct cmd_entry cmd_attach_entry;
extern const struct cmd_entry cmd_stop_entry;
extern const struct cmd_entry cmd_cards_entry;
extern const struct cmd_entry cmd_version_entry;
extern const struct cmd_entry cmd_help_entry;
extern const struct cmd_entry cmd_keeper_entry;

/* cmd-logs.c: shared by run, logs and attach */
struct stream_state {
	const char	*job;
	uint64_t	 offset;	/* output bytes already shown */
	int		 exit_code;	/* -1 until the exit frame */
	char		*state;
	int		 quiet_info;
};
int		 stream_frame(const struct frame *, void *);
int		 stream_follow(struct stream_state *, int);

/* card.c: what the host has */
enum vendor {
	VENDOR_NONE,
	VENDOR_NVIDIA,
	VENDOR_AMD,
	VENDOR_INTEL,
};
struct card_enforce {
	const char	*memory;	/* "driver", "shim", "admission" or "none" */
	const char	*compute;	/* "mps", "cu-mask", "pacer", "admission" */
	int		 live_memory;	/* a resize applies at once */
	int		 live_compute;
	char		*why;		/* what is missing and why; NULL if nothing */
};
struct card {
	u_int		 index;		/* gmux's own, 0..n-1 */
	enum vendor	 vendor;
	char		*model;
	char		*uuid;
	int		 vendor_index;	/* the vendor tool's index */
	uint64_t	 memory;	/* bytes */
	int		 fake;
	u_int		 cus;		/* compute units (AMD), 0 if unknown */
	struct card_enforce enforce;
};
struct cards {
	struct card	*v;
	u_int		 n;
};
const char	*vendor_name(enum vendor);
int		 vendor_from_name(const char *, enum vendor *);
const char	*vendor_device_env(enum vendor);
struct card	*cards_add(struct cards *);
void		 cards_free(struct cards *);
int		 cards_detect(struct cards *, const char *, char **);
struct card	*cards_find(struct cards *, const char *);
json_t		*card_to_json(const struct card *);
char		*card_device_id(const struct card *);

/* card-fake.c */
int		 card_fake_parse(const char *, struct cards *, char **);

/* card-nvidia.c */
int		 card_nvidia_parse(const char *, struct cards *, char **);
int		 card_nvidia_detect(struct cards *, char **);

/* card-amd.c */
int		 card_amd_parse_amdsmi(const char *, struct cards *, char **);
int		 card_amd_parse_rocmsmi(const char *, struct cards *, char **);
int		 card_amd_detect(struct cards *, char **);

/* card-intel.c */
int		 card_intel_parse(const char *, struct cards *, char **);
int		 card_intel_detect(struct cards *, char **);

/* enforce.c: the one interface through which caps and ceilings change */
void		 enforce_init(struct cards *);
void		 enforce_job_env(const struct card *, u_int, uint64_t,
		     char ***);
void		 enforce_set(u_int, const struct card *, u_int, u_int,
		     uint64_t);
void		 enforce_forget(u_int);
json_t		*enforce_history(void);

/* sched.c: pure scheduling policy; no I/O */
struct sched_card {
	u_int		 seats_used;	/* guaranteed seats admitted */
	uint64_t	 mem_used;
	uint64_t	 memory;
	u_int		 index;
};
int		 sched_place(const struct sched_card *, u_int, u_int, uint64_t,
		     int, int *, char **);

/* proc.c: running a helper program and capturing its output */
char		*proc_output(char *const *, int, int *);

/* db.c: SQLite behind a small interface (the only user of sqlite3.h) */
struct db;
struct dbstmt;
struct db	*db_open(const char *, char **);
void		 db_close(struct db *);
int		 db_exec(struct db *, const char *, char **);
struct dbstmt	*db_prepare(struct db *, const char *);
void		 db_bind_int(struct dbstmt *, int, int64_t);
void		 db_bind_double(struct dbstmt *, int, double);
void		 db_bind_text(struct dbstmt *, int, const char *);
void		 db_bind_null(struct dbstmt *, int);
int		 db_step(struct dbstmt *);	/* 1 row, 0 done, -1 error */
int64_t		 db_col_int(struct dbstmt *, int);
double		 db_col_double(struct dbstmt *, int);
const char	*db_col_text(struct dbstmt *, int);
int		 db_col_null(struct dbstmt *, int);
void		 db_reset(struct dbstmt *);
void		 db_finalize(struct dbstmt *);
int		 db_begin(struct db *);
int		 db_commit(struct db *);
const char	*db_error(struct db *);

/* job.c: jobs as the daemon sees them */
enum job_state {
	JOB_QUEUED,
	JOB_RUNNING,
	JOB_EXITED,
	JOB_STOPPED,
	JOB_PREEMPTED,
	JOB_FAILED,
};
struct follower;
struct job {
	u_int		 id;
	char		 name[16];	/* "j12" */
	char		*owner;
	struct jobreq	 req;
	enum job_state	 state;
	char		*reason;	/* why queued or failed; NULL if none */
	int		 card;		/* -1: none */
	u_int		 seats;
	uint64_t	 mem;
	int		 exit_code;	/* -1 while not ended */
	int64_t		 created;	/* ms since the epoch */
	int64_t		 started;
	int64_t		 ended;
	pid_t		 keeper_pid;
	pid_t		 pgid;
	int		 ctl_fd;	/* link to the keeper, -1 if none */
	struct event	*ctl_ev;
	int		 stopping;	/* a stop was asked for */
	TAILQ_HEAD(, follower) followers;
	TAILQ_ENTRY(job) entry;
};
TAILQ_HEAD(jobs, job);
extern struct jobs all_jobs;
const char	*job_state_name(enum job_state);
int		 job_state_from_name(const char *, enum job_state *);
int		 job_ended(const struct job *);
struct job	*job_find(const char *);
struct job	*job_find_id(u_int);
struct job	*job_create(u_int, const char *, struct jobreq *);
int		 job_start(struct job *, char **);
int		 job_stop(struct job *, int64_t, const char *);
void		 job_finish(struct job *);
void		 job_adopt(struct job *);
json_t		*job_to_json(const struct job *);
void		 job_free(struct job *);

/* keeper.c: the small process that owns one job */
struct keeper_spec {
	u_int		  id;
	char		 *dir;		/* the job's directory */
	char		**argv;
	char		**env;
	char		 *cwd;
};
pid_t		 keeper_spawn(const struct keeper_spec *, int *, char **);
int		 keeper_connect(u_int);
int		 keeper_send(int, const char *);
json_t		*keeper_status(u_int);

/* state.c: the daemon's records in SQLite */
int		 state_open(char **);
void		 state_close(void);
u_int		 state_next_id(void);
void		 state_save_job(const struct job *);
void		 state_load_jobs(void);

/* follow.c: streaming a job's log to clients */
struct evhttp_request;
int		 follow_start(struct job *, struct evhttp_request *, uint64_t,
		     int, int);
void		 follow_job_changed(struct job *);
void		 follow_job_ended(struct job *);
void		 follow_init(void);
int		 follow_seek(int, uint64_t, off_t *);

/* server.c: the daemon */
struct event_base;
extern struct event_base *server_base;
extern struct cards server_cards;
int		 server_main(const char *, int);
void		 server_schedule(void);

/* server-api.c: the route table and request helpers */
struct evhttp;
void		 api_setup(struct evhttp *);
json_t		*api_body(struct evhttp_request *, char **);
void		 api_reply(struct evhttp_request *, int, json_t *);
void		 api_error(struct evhttp_request *, int, const char *, ...)
		     printflike(3, 4);
const char	*api_query(struct evhttp_request *, const char *);
char		*api_owner(struct evhttp_request *);

/* api-job.c, api-card.c: the handlers */
void		 api_jobs_list(struct evhttp_request *, const char *);
void		 api_jobs_create(struct evhttp_request *, const char *);
void		 api_job_get(struct evhttp_request *, const char *);
void		 api_job_stop(struct evhttp_request *, const char *);
void		 api_job_log(struct evhttp_request *, const char *);
void		 api_cards_list(struct evhttp_request *, const char *);
void		 api_version(struct evhttp_request *, const char *);

/* sched.c (issue 3: queue, preemption, burst, resize) */
/* (end) */

/* ledger.c (issue 4) */
/* (end) */

/* usage and top (issue 4) */
/* (end) */

/* metrics.c (issue 4) */
/* (end) */

/* region.c (issue 5: the shim's shared region, daemon side) */
/* (end) */

/* mps.c (issue 5) */
/* (end) */

/* fence.c (issue 6): the network fence around one job */
#define FENCE_POLLFDS	2	/* descriptors the keeper polls for a fence */
struct fence;
struct fence_job;
struct pollfd;
struct fence_job *fence_job_create(const struct fence *, const char *,
		     char **);
void		 fence_job_env(const struct fence_job *, char ***);
void		 fence_job_child(struct fence_job *);
int		 fence_job_start(struct fence_job *, char **);
u_int		 fence_job_pollfds(const struct fence_job *, struct pollfd *);
void		 fence_job_dispatch(struct fence_job *, const struct pollfd *,
		     u_int);
int		 fence_job_done(const struct fence_job *);
uint64_t	 fence_job_refused(const struct fence_job *);
json_t		*fence_job_stats(const struct fence_job *);
int		 fence_job_write_stats(struct fence_job *, const char *,
		     char **);
void		 fence_job_free(struct fence_job *);
void		 fence_job_test_bypass(struct fence_job *);
int		 fence_landlock_abi(void);
/* (end) */

/* dns.c (issue 6) */
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
int		 dns_conn_fd(const struct dns_conn *);
int		 dns_conn_read(struct dns_conn *, dns_lookup_cb, void *);
int		 dns_conn_write(struct dns_conn *);
int		 dns_conn_pending(const struct dns_conn *);
void		 dns_conn_free(struct dns_conn *);
/* (end) */

/* fence-policy.c (issue 6): --allow, --deny-net, --add-host */
#define FENCE_MAX_RULES	256
struct fence_rule {
	char		*name;		/* a host name, lower case; or NULL */
	int		 family;	/* AF_INET or AF_INET6 for an address */
	u_char		 addr[16];
	u_int		 prefix;	/* leading bits that must match */
	uint16_t	 port_lo;	/* 0: any port */
	uint16_t	 port_hi;
	char		*text;		/* the canonical spelling */
};
struct fence_pin {			/* --add-host NAME=ADDR */
	char		*name;
	int		 family;
	u_char		 addr[16];
};
struct fence {
	int		  deny_net;
	struct fence_rule *rules;
	u_int		  nrules;
	struct fence_pin *pins;
	u_int		  npins;
};
struct fence	*fence_create(void);
void		 fence_free(struct fence *);
struct fence	*fence_copy(const struct fence *);
int		 fence_parse_addr(const char *, u_char *);
int		 fence_check_name(char *, char **);
int		 fence_parse_allow(const char *, struct fence_rule *, char **);
int		 fence_allow(struct fence *, const char *, char **);
int		 fence_add_host(struct fence *, const char *, char **);
const struct fence_rule *fence_find_name(const struct fence *, const char *);
int		 fence_check(const struct fence *, char **);
int		 fence_rule_port(const struct fence_rule *, uint16_t);
int		 fence_match_addr(const struct fence *, int, const u_char *,
		     uint16_t);
int		 fence_from_json(json_t *, struct fence **, char **);
void		 fence_to_json(const struct fence *, json_t *);
char		*fence_text(const struct fence *);
/* (end) */

/* fence-names.c (issue 6): allowed names, resolved outside the job */
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
/* (end) */

/* fence-unix.c (issue 6): AF_UNIX connects and binds, checked */
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
struct fence_unix *fence_unix_create(const char *);
int		 fence_unix_connect(struct fence_unix *,
		     const struct fence_call *, int *, int *);
int		 fence_unix_bind(struct fence_unix *,
		     const struct fence_call *);
void		 fence_unix_free(struct fence_unix *);
/* (end) */

/* fence-out.c (issue 6): the supervisor's sockets, made like the job's */
int		 fence_out_open(const struct fence_call *, int64_t *);
int		 fence_out_state(int, int, int);
int		 fence_out_busy(const struct fence_call *);
int		 fence_out_target(const struct fence_call *, int *, u_char *,
		     uint16_t *);
/* (end) */

/* fence-call.c (issue 6): a notified call, read out of the job */
struct fence_tasks;
struct fence_tasks *fence_tasks_create(void);
void		 fence_tasks_free(struct fence_tasks *);
int		 fence_call_read(struct fence_tasks *, int, uint64_t, pid_t,
		     const uint64_t *, struct fence_call *);
int		 fence_call_udp(int, uint64_t, const uint64_t *);
/* (end) */

/* fence-super.c (issue 6): the supervisor, outside the job */
struct fence_super;
struct fence_super *fence_super_create(const struct fence *,
		     struct fence_names *, const char *, int, char **);
u_int		 fence_super_pollfds(const struct fence_super *,
		     struct pollfd *);
void		 fence_super_dispatch(struct fence_super *,
		     const struct pollfd *, u_int);
int		 fence_super_done(const struct fence_super *);
void		 fence_super_counts(const struct fence_super *, uint64_t *,
		     uint64_t *, uint64_t *);
const char	*fence_super_last_refused(const struct fence_super *);
void		 fence_super_free(struct fence_super *);
/* (end) */

/* tls.c (issue 7) */
/* (end) */

/* cas.c (issue 7) */
/* (end) */

/* sync.c (issue 7) */
/* (end) */

/* remote.c (issue 7) */
/* (end) */

#endif /* GMUX_H */
