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

#ifndef TAILQ_FOREACH_SAFE
#define TAILQ_FOREACH_SAFE(var, head, field, tvar)			\
	for ((var) = TAILQ_FIRST(head);					\
	    (var) != NULL && ((tvar) = TAILQ_NEXT(var, field), 1);	\
	    (var) = (tvar))
#endif

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

/* http.c: the client's HTTP/1.1 response parser */
struct http_resp {
	int		 state;
	int		 status;
	int64_t		 length;	/* Content-Length, -1 if none */
	int		 chunked;
	uint64_t	 left;		/* body or chunk bytes to come */
	u_int		 nheaders;
	char		 line[8192];
	size_t		 linelen;
};
void		 http_resp_init(struct http_resp *);
int		 http_resp_feed(struct http_resp *, const char *, size_t,
		     void (*)(const char *, size_t, void *), void *, char **);

/* client.c: the CLI's side of the API */
struct client_reply {
	long		 status;
	json_t		*body;		/* NULL if not JSON */
	char		*error;		/* the body's "error", or a transport error */
};
struct client_stream_cbs {
	int		 (*frame)(const struct frame *, void *);
	int		 (*interrupt)(void *);	/* Ctrl-C; nonzero ends it */
	void		*arg;
};
int		 client_daemon_running(void);
int		 client_call(const char *, const char *, json_t *,
		     struct client_reply *);
void		 client_reply_clear(struct client_reply *);
int		 client_stream(const char *, const char *, json_t *,
		     const struct client_stream_cbs *, struct client_reply *);
void		 client_catch_interrupts(void);
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
struct option;
int		 cmd_getopt(const struct cmd_entry *, int, char **,
		     const char *, const struct option *);
uint64_t	 cmd_arg_size(const struct cmd_entry *, const char *,
		     const char *);
u_int		 cmd_arg_share(const struct cmd_entry *, const char *,
		     const char *);
int64_t		 cmd_arg_duration(const struct cmd_entry *, const char *,
		     const char *);
u_int		 cmd_arg_uint(const struct cmd_entry *, const char *,
		     const char *, u_int, u_int);
json_t		*cmd_call(const struct cmd_entry *, const char *, const char *,
		     json_t *);

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

/* stream.c: a job's output on the terminal (run, logs, attach) */
#define STREAM_LOGS	0	/* Ctrl-C quits */
#define STREAM_RUN	1	/* Ctrl-C stops the job; again, detaches */
#define STREAM_ATTACH	2	/* Ctrl-C detaches */
struct stream {
	char		 job[16];	/* learned from the first frame if empty */
	int		 mode;
	uint64_t	 offset;	/* output bytes shown so far */
	int		 ended;		/* the exit frame came */
	int		 exit_code;	/* -1 if the job has none */
	char		 state[16];
	int		 interrupts;
	int		 detached;
};
void		 stream_init(struct stream *, const char *, int);
int		 stream_run(struct stream *, const char *, const char *,
		     json_t *, int);

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
	char		*bus_id;	/* PCI address, as the tool gives it */
	struct card_enforce enforce;
};
struct cards {
	struct card	*v;
	u_int		 n;
};
#define CARDS_MAX	1024		/* cards one host may have */
#define CARD_UNKNOWN	UINT64_MAX	/* a figure the tool did not give */
#define CARD_TOOL_TIMEOUT_MS 10000	/* the longest a vendor tool may run */
/* A process the driver reports on a card (enforcement compares these). */
struct card_proc {
	pid_t		 pid;
	enum vendor	 vendor;
	int		 card;		/* gmux index; -1 until matched */
	int		 vendor_index;	/* the tool's index; -1: by UUID */
	char		*uuid;		/* the card's, if the tool names it */
	uint64_t	 mem;		/* bytes; CARD_UNKNOWN: not reported */
};
struct card_procs {
	struct card_proc *v;
	u_int		  n;
};
/* A card's measured use (for gmux top). */
struct card_usage {
	enum vendor	 vendor;
	int		 card;		/* gmux index; -1 until matched */
	int		 vendor_index;	/* the tool's card index */
	int		 util;		/* percent busy, -1 if unknown */
	uint64_t	 mem_used;	/* bytes, CARD_UNKNOWN if unknown */
};
struct card_usages {
	struct card_usage *v;
	u_int		   n;
};
/* What is asked of a vendor's tool while the daemon runs. */
enum card_query {
	CARD_QUERY_PROCS,	/* the processes on each card */
	CARD_QUERY_USAGE,	/* each card's measured use */
};
const char	*vendor_name(enum vendor);
int		 vendor_from_name(const char *, enum vendor *);
const char	*vendor_device_env(enum vendor);
struct card	*cards_add(struct cards *);
void		 cards_truncate(struct cards *, u_int);
void		 cards_free(struct cards *);
int		 cards_detect(struct cards *, const char *, char **);
struct card	*cards_find(struct cards *, const char *);
json_t		*card_to_json(const struct card *);
char		*card_device_id(const struct card *);
int		 card_room(const struct cards *, const char *, char **);
int		 card_parse_u64(const char *, uint64_t *);
char		*card_trim(char *);
int		 card_na(const char *);
int		 card_text_ok(const char *);
struct card_proc *card_procs_add(struct card_procs *);
void		 card_procs_truncate(struct card_procs *, u_int);
void		 card_procs_free(struct card_procs *);
struct card_usage *card_usages_add(struct card_usages *);
void		 card_usages_truncate(struct card_usages *, u_int);
void		 card_usages_free(struct card_usages *);

/* card-tool.c: running the vendors' tools */
typedef void	(*card_tool_cb)(char *, char *, void *);
int		 card_tool_found(const char *);
char		*card_tool_run(char *const *, char **);
int		 card_tool_output(char *const *, char **, char **);
int		 card_tool_cards(char *const *,
		     int (*)(const char *, struct cards *, char **),
		     struct cards *, char **);
int		 card_tool_start(char *const *, card_tool_cb, void *, char **);
void		 card_tool_timeout(int);

/* card-query.c: the processes on the cards and their use, while serving */
typedef void	(*cards_procs_cb)(struct card_procs *, const char *, void *);
typedef void	(*cards_usage_cb)(struct card_usages *, const char *, void *);
int		 cards_procs(const struct cards *, struct card_procs *,
		     char **);
int		 cards_usage(const struct cards *, struct card_usages *,
		     char **);
int		 cards_procs_start(const struct cards *, cards_procs_cb, void *,
		     char **);
int		 cards_usage_start(const struct cards *, cards_usage_cb, void *,
		     char **);

/* card-fake.c */
int		 card_fake_parse(const char *, struct cards *, char **);

/* card-nvidia.c */
int		 card_nvidia_parse(const char *, struct cards *, char **);
int		 card_nvidia_parse_apps(const char *, struct card_procs *,
		     char **);
int		 card_nvidia_parse_usage(const char *, struct card_usages *,
		     char **);
int		 card_nvidia_detect(struct cards *, char **);
char *const	*card_nvidia_argv(enum card_query);

/* card-amd.c */
int		 card_amd_parse_amdsmi(const char *, struct cards *, char **);
int		 card_amd_parse_amdsmi_list(const char *, struct cards *, u_int,
		     char **);
int		 card_amd_parse_rocmsmi(const char *, struct cards *, char **);
int		 card_amd_parse_procs(const char *, struct card_procs *,
		     char **);
int		 card_amd_parse_usage(const char *, struct card_usages *,
		     char **);
int		 card_amd_detect(struct cards *, char **);
char *const	*card_amd_argv(enum card_query);

/* card-intel.c */
int		 card_intel_parse(const char *, struct cards *, char **);
int		 card_intel_detect(struct cards *, char **);

/* card-json.c: the JSON that amd-smi, rocm-smi and xpu-smi print */
json_t		*card_json_load(const char *, char **);
json_t		*card_json_list(json_t *, char **);
json_t		*card_json_get(json_t *, const char *);
char		*card_json_text(json_t *, const char *);
int		 card_json_u64(json_t *, uint64_t *);
int		 card_json_bytes(json_t *, const char *, uint64_t *);
int		 card_json_index(json_t *, const char *, int *);

/* enforce.c: the one interface through which caps and ceilings change */
void		 enforce_init(struct cards *);
void		 enforce_shutdown(void);
int		 enforce_job_env(u_int, const struct card *, u_int, u_int,
		     uint64_t, char ***, char **);
void		 enforce_set(u_int, const struct card *, u_int, u_int,
		     uint64_t);
void		 enforce_forget(u_int);
void		 enforce_tick(const struct cards *,
		     void (*)(const struct card_procs *, void *), void *);
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
dead void	 proc_exec(char *const *, int);

/* proc-async.c: running a helper program without waiting for it */
#define PROC_ASYNC_TIMEOUT	-2	/* ran past its time; killed */
#define PROC_ASYNC_TOOBIG	-3	/* printed too much; killed */
#define PROC_ASYNC_CANCELLED	-4	/* proc_async_shutdown */
struct event_base;
typedef void	(*proc_async_cb)(char *, int, void *);
void		 proc_async_init(struct event_base *);
int		 proc_async_start(char *const *, int, proc_async_cb, void *,
		     char **);
int		 proc_async_reaped(pid_t, int);
u_int		 proc_async_count(void);
void		 proc_async_shutdown(void);
/* (end) */

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
int		 db_in_transaction(struct db *);
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
	char		*link_buf;	/* an unfinished line from the keeper */
	size_t		 link_len;
	struct event	*ctl_ev;
	int		 stopping;	/* a stop was asked for */
	int		 log_wd;	/* inotify watch on the log, or -1 */
	char		*audit;		/* what enforcement found wrong, or NULL */
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
void		 job_set_id(struct job *, u_int);
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
	const char	 *cwd;
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
struct db	*state_database(void);

/* follow.c: streaming a job's log to clients */
#define FOLLOW_LIVE	0x1	/* until the job ends */
#define FOLLOW_RAW	0x2	/* bare output, no frames (for curl) */
#define FOLLOW_WAIT	0x4	/* no stream: reply with the job when it ends */
struct evhttp_request;
int		 follow_start(struct job *, struct evhttp_request *, uint64_t,
		     int, json_t *);
void		 follow_job_changed(struct job *);
void		 follow_job_ended(struct job *);
void		 follow_init(void);
int		 follow_seek(int, uint64_t, off_t *, uint64_t *);

/* server.c: the daemon */
struct event_base;
extern struct event_base *server_base;
extern struct cards server_cards;
extern int	 server_audit_report_only;
int		 server_main(const char *, int);
void		 server_schedule(void);
void		 server_tick(void);
void		 server_card_usage(struct sched_card *);
int		 server_place(struct job *, char **);

/* server-api.c: the route table and request helpers */
struct evhttp;
void		 api_setup(struct evhttp *);
json_t		*api_body(struct evhttp_request *, char **);
void		 api_reply(struct evhttp_request *, int, json_t *);
void		 api_error(struct evhttp_request *, int, const char *, ...)
		     printflike(3, 4);
const char	*api_query(struct evhttp_request *, const char *);
int		 api_query_flag(struct evhttp_request *, const char *);
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
struct region_job_info {
	u_int		 slots;		/* cards the job counts on */
	u_int		 nprocs;	/* processes registered */
	u_int		 ceiling;
	uint64_t	 cap;
	uint64_t	 used;
	uint64_t	 peak;
	uint64_t	 denied;	/* allocations refused at the cap */
};
int		 region_open(const char *, const struct cards *, char **);
void		 region_close(void);
const char	*region_path(void);
int		 region_job_start(u_int, u_int, u_int, u_int, u_int, uint64_t,
		     char **, char **);
int		 region_job_set(u_int, u_int, u_int, uint64_t);
void		 region_job_end(u_int);
int		 region_job_info(u_int, struct region_job_info *);
int		 region_pid_job(pid_t, u_int *);
u_int		 region_tick(void);
/* (end) */

/* mps.c (issue 5) */
int		 mps_start(const struct card *, char **);
void		 mps_stop(const struct card *);
void		 mps_stop_all(void);
const char	*mps_pipe_dir(u_int);
/* (end) */

/* cumask.c (issue 5: AMD compute-unit masks) */
#define CUMASK_WORDS	8		/* 512 CUs at most */
struct cumask_geom {
	u_int		 cus;		/* active compute units */
	u_int		 xcds;		/* XCDs the mask interleaves over */
};
int		 cumask_geometry(const struct card *, struct cumask_geom *);
int		 cumask_pick(const struct cumask_geom *, const uint64_t *, u_int,
		     uint64_t *);
char		*cumask_format(const uint64_t *);
char		*cumask_take(u_int, const struct card *, u_int, char **);
void		 cumask_release(u_int);
/* (end) */

/* audit.c (issue 5: GPU processes the shim does not know) */
struct audit_job {
	u_int		 id;
	pid_t		 keeper;	/* every process of the job descends */
	uint64_t	 cap;
};
struct audit_offender {
	u_int		 job;
	pid_t		 pid;		/* 0: the job as a whole */
	int		 stop;		/* to be stopped unless report-only */
	const char	*why;
};
typedef void	(*audit_cb)(const struct card_procs *, void *);
u_int		 audit_check(const struct card_procs *,
		     const struct audit_job *, u_int, pid_t (*)(pid_t),
		     int (*)(pid_t, u_int *), struct audit_offender **);
pid_t		 audit_parent(pid_t);
int		 audit_start(const struct cards *, audit_cb, void *);
u_int		 audit_act(const struct card_procs *, const struct audit_job *,
		     u_int, int, struct audit_offender **);
void		 audit_enforce(const struct audit_offender *, u_int, int);
/* (end) */

/* fence.c (issue 6) */
/* (end) */

/* dns.c (issue 6) */
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
