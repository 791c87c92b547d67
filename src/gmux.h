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

/* sched.c: pure scheduling policy; no I/O (the interface: top of sched.c) */
#define SCHED_CARDS_MAX	64		/* a host's cards fit in a uint64_t */
#define SCHED_PRIOS	10		/* priorities 0..9 */
#define SCHED_AGE_MS	(5 * 60 * 1000)	/* waiting this long = one level */
struct sched_req {			/* a job as the scheduler sees it */
	u_int		 id;		/* the daemon's job id, > 0 */
	u_int		 seats;		/* guarantee per card, 0..100 */
	uint64_t	 mem;		/* cap per card; 0: share x memory */
	u_int		 ncards;	/* cards at once (0 if seats is 0) */
	int		 pin;		/* card index, -1: any */
	u_int		 prio;		/* 0..9 */
	int		 flags;		/* JOB_BURST, JOB_PREEMPTIBLE... */
	int64_t		 submit;	/* ms; when it (re)entered the queue */
	int64_t		 timeout;	/* ms it may wait; 0: no bound */
};
struct sched_run {			/* where a running job is */
	uint64_t	 cards;		/* bit i: card i */
	int64_t		 start;		/* ms */
	u_int		 by;		/* preempted for this job; 0: not */
	int		 by_card;	/* the card it is cleared from */
};
enum sched_act {
	SCHED_ADMIT,		/* start job: one per card, card -1 if none */
	SCHED_QUEUE,		/* job waits: pos, reason */
	SCHED_REFUSE,		/* job will not run: reason */
	SCHED_PREEMPT,		/* stop job (grace, kill) to make room for by */
	SCHED_CEILING,		/* running job's compute ceiling on card */
	SCHED_RESIZE,		/* running job's guarantee and cap on card */
	SCHED_REQUEUE,		/* preempted job is back in the queue: pos */
};
struct sched_decision {
	enum sched_act	 act;
	u_int		 job;
	int		 card;		/* -1: not about one card */
	uint64_t	 cards;		/* ADMIT: all the job's cards */
	u_int		 seats;		/* guarantee on card */
	u_int		 ceiling;	/* compute ceiling on card, in seats */
	uint64_t	 mem;		/* memory cap on card */
	u_int		 by;		/* PREEMPT: the job it makes room for */
	u_int		 pos;		/* QUEUE, REQUEUE: 1-based position */
	char		*reason;	/* QUEUE, REFUSE, PREEMPT; out's */
};
struct sched_out {
	struct sched_decision *v;
	u_int		 n;
	u_int		 size;
};
enum sched_state {
	SCHED_QUEUED,
	SCHED_RUNNING,
};
enum sched_hold {
	SCHED_HOLD_NONE,
	SCHED_HOLD_DRAIN,	/* first in the queue: cards kept for it */
	SCHED_HOLD_CLAIM,	/* cards it is preempting jobs on */
};
struct sched_slot {			/* a running job on one card */
	struct sched_job *job;
	u_int		 card;
	uint64_t	 mem;		/* its cap on this card */
	u_int		 ceiling;	/* UINT_MAX until first told */
	int		 told;		/* decision to patch with the ceiling */
	TAILQ_ENTRY(sched_slot) entry;
};
TAILQ_HEAD(sched_slots, sched_slot);
struct sched_class;
struct sched_job {
	struct sched_req req;		/* seats and mem follow resizes */
	int64_t		 key;		/* submit - prio x age: queue order */
	enum sched_state state;
	uint64_t	 cards;		/* running: its cards; queued: held */
	enum sched_hold	 hold;
	int64_t		 start;
	u_int		 by;		/* running: preempted for this job */
	int		 by_card;
	struct sched_job *claimant;	/* running victim: who waits for it */
	u_int		 nvictims;	/* queued claimant: victims pending */
	struct sched_slot *slots;	/* running: one per card */
	struct sched_class *class;	/* queued: its class of equals */
	TAILQ_ENTRY(sched_job) centry;	/* in the class, by key */
	TAILQ_ENTRY(sched_job) tentry;	/* queued with a timeout */
	struct sched_job *left;		/* queue order: a treap */
	struct sched_job *right;
	u_int		 size;
	uint32_t	 weight;
	struct sched_job *hnext;	/* id hash chain */
};
TAILQ_HEAD(sched_jobs, sched_job);
struct sched_cref {			/* a class as scans read it: dense */
	uint64_t	 elig;		/* cards that could ever hold it */
	uint64_t	 mem;		/* 0: share x card memory */
	int64_t		 key;		/* of its first job */
	int64_t		 submit;
	struct sched_job *first;
	struct sched_class *k;
	u_int		 id;		/* of its first job */
	u_short		 ncards;
	u_short		 prio;
};
struct sched_cand {			/* a job that may fit, as a pass sees it */
	int64_t		 key;
	int64_t		 submit;
	uint64_t	 elig;
	uint64_t	 mem;
	uint64_t	 own;		/* cards held for it */
	struct sched_job *job;
	u_int		 id;
	u_int		 seats;
	u_int		 ncards;
};
struct sched_bucket {			/* the classes asking for n seats */
	struct sched_cref *v;
	u_int		 n;
	u_int		 size;
};
struct sched_card {
	uint64_t	 memory;
	u_int		 used;		/* guaranteed seats */
	uint64_t	 mem_used;	/* memory caps */
	u_int		 nburst;
	struct sched_slots slots;	/* by start time */
	struct sched_job *holder;	/* queued job it is kept for */
	u_int		 pre_seats[SCHED_PRIOS + 1]; /* preemptible below p */
	uint64_t	 pre_mem[SCHED_PRIOS + 1];
};
struct sched {
	struct sched_card card[SCHED_CARDS_MAX];
	u_int		 ncards;
	uint64_t	 all;		/* mask of every card */
	uint64_t	 held;		/* cards kept for queued jobs */
	uint64_t	 dirty;		/* more room for the queue since a pass */
	uint64_t	 pdirty;	/* more room by preemption */
	uint64_t	 touched;	/* ceilings to recompute */
	int64_t		 age;		/* ms of waiting per priority level */
	int		 restored;	/* claims to rebuild */
	struct sched_job *drain;	/* holder of SCHED_HOLD_DRAIN cards */
	struct sched_job *pcheck;	/* new job to try preempting for */
	struct sched_job **jhash;
	u_int		 jhsize;
	u_int		 njobs;
	struct sched_class **chash;
	u_int		 chsize;
	struct sched_bucket bucket[SEATS_PER_CARD + 1]; /* classes by seats */
	u_int		 nclasses;
	struct sched_job *root;		/* queue order */
	u_int		 npre[SCHED_PRIOS]; /* preemptible running, by prio */
	struct sched_jobs timed;
	struct sched_cand *cand;	/* scratch: admission candidates */
	u_int		 ncand;
	u_int		 cand_size;
};
struct sched_info {
	enum sched_state state;
	uint64_t	 cards;		/* running: its cards; queued: held */
	enum sched_hold	 hold;
	u_int		 pos;		/* queued: 1-based */
	u_int		 by;		/* running: being preempted for */
	u_int		 seats;
	int64_t		 start;
};
typedef void (*sched_walk_cb)(const struct sched_req *,
		     const struct sched_run *, void *);
struct sched	*sched_create(const uint64_t *, u_int, char **);
void		 sched_free(struct sched *);
void		 sched_set_age(struct sched *, int64_t);
int		 sched_submit(struct sched *, const struct sched_req *, int64_t,
		     struct sched_out *);
int		 sched_end(struct sched *, u_int, int64_t, struct sched_out *);
int		 sched_resize(struct sched *, u_int, u_int, uint64_t, int64_t,
		     struct sched_out *, char **);
void		 sched_tick(struct sched *, int64_t, struct sched_out *);
int		 sched_restore(struct sched *, const struct sched_req *,
		     const struct sched_run *, char **);
void		 sched_pass(struct sched *, int64_t, struct sched_out *);
void		 sched_walk(const struct sched *, sched_walk_cb, void *);
int		 sched_info(const struct sched *, u_int, struct sched_info *);
u_int		 sched_holder(const struct sched *, u_int);
u_int		 sched_ceiling(const struct sched *, u_int, u_int);
struct sched_job *sched_find(const struct sched *, u_int);
struct sched_decision *sched_emit(struct sched_out *, enum sched_act, u_int);
void		 sched_out_clear(struct sched_out *);
void		 sched_out_free(struct sched_out *);

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
/* sched-queue.c: the queue, in order and in classes of equal requests */
struct sched_class {
	struct sched_req shape;		/* seats, mem, ncards, pin, prio */
	uint64_t	 elig;		/* cards that could ever hold it */
	struct sched_jobs jobs;		/* by key */
	u_int		 n;
	u_int		 idx;		/* in its bucket */
	struct sched_class *hnext;
};
int		 sched_queue_cmp(const struct sched_job *,
		     const struct sched_job *);
void		 sched_queue_insert(struct sched *, struct sched_job *);
void		 sched_queue_remove(struct sched *, struct sched_job *);
struct sched_job *sched_queue_head(const struct sched *);
u_int		 sched_queue_position(const struct sched *,
		     const struct sched_job *);
u_int		 sched_queue_count(const struct sched *);
u_int		 sched_queue_list(const struct sched *, u_int *, u_int);
void		 sched_queue_free(struct sched *);

void		 sched_queue_enter(struct sched *, struct sched_job *);
void		 sched_queue_leave(struct sched *, struct sched_job *);

/* sched-card.c: room on the cards, placement, holds, ceilings */
u_int		 sched_card_free_seats(const struct sched_card *);
uint64_t	 sched_card_free_mem(const struct sched_card *);
uint64_t	 sched_card_need(const struct sched *, const struct sched_req *,
		     u_int);
uint64_t	 sched_card_eligible(const struct sched *,
		     const struct sched_req *);
u_int		 sched_card_fit(const struct sched *, const struct sched_req *,
		     uint64_t, uint64_t *);
uint64_t	 sched_card_place(const struct sched *,
		     const struct sched_req *, uint64_t, uint64_t);
uint64_t	 sched_card_avail(const struct sched *,
		     const struct sched_job *);
void		 sched_card_hold(struct sched *, struct sched_job *, uint64_t,
		     enum sched_hold);
void		 sched_card_release(struct sched *, struct sched_job *);
void		 sched_card_add(struct sched *, struct sched_job *);
void		 sched_card_remove(struct sched *, struct sched_job *);
void		 sched_card_ceilings(struct sched *, struct sched_out *, u_int);

/* sched-pass.c: the admission pass */
void		 sched_pass_run(struct sched *, int64_t, struct sched_out *);
void		 sched_pass_admit(struct sched *, struct sched_job *, uint64_t,
		     int64_t, struct sched_out *);

/* sched-preempt.c: making room by preemption */
int		 sched_preempt_for(struct sched *, struct sched_job *,
		     struct sched_out *);
void		 sched_preempt_round(struct sched *, struct sched_out *);
void		 sched_preempt_pool(struct sched *, struct sched_job *, int);

/* sched-explain.c: reasons, in words */
char		*sched_explain(const struct sched *, u_int, int64_t);
char		*sched_explain_req(const struct sched *,
		     const struct sched_req *, int64_t);
char		*sched_explain_reason(const struct sched *,
		     const struct sched_job *);
char		*sched_explain_need(const struct sched *,
		     const struct sched_req *, uint64_t);
char		*sched_explain_impossible(const struct sched *,
		     const struct sched_req *);
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
