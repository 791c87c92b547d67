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

/* fence.c (issue 6) */
/* (end) */

/* dns.c (issue 6) */
/* (end) */

/* tls.c (issue 7) */
struct tls_identity;
struct bufferevent;
struct tls_pin {
	char		 want[65];	/* the pinned key's SHA-256, hex */
	char		 seen[65];	/* what the host showed */
	int		 checked;	/* the check ran */
	int		 mismatch;	/* and failed */
};
struct tls_identity *tls_identity_load(const char *, int, char **);
int		 tls_identity_reissue(struct tls_identity *, char **);
void		 tls_identity_free(struct tls_identity *);
const char	*tls_identity_pin(const struct tls_identity *);
void		*tls_server_create(const struct tls_identity *, char **);
void		 tls_server_free(void *);
struct bufferevent *tls_server_bev(struct event_base *, void *);
int		 tls_client_pin(void *, struct tls_pin *);
char		*tls_pin_error(const struct tls_pin *, const char *);
/* (end) */

/* token.c (issue 7) */
struct token {
	char		*id;		/* "t1" */
	char		*owner;
	char		 hash[65];	/* SHA-256 of the token, hex */
	int64_t		 created;	/* ms */
	int		 revoked;
};
struct tokens {
	struct token	*v;
	u_int		 n;
	char		*path;
	uint64_t	 dev, ino, size;	/* the file as last read */
	int64_t		 mtime_ns;
};
struct ratelimit;
int		 token_owner_valid(const char *);
struct tokens	*tokens_open(const char *, char **);
void		 tokens_free(struct tokens *);
void		 tokens_clear(struct tokens *);
int		 tokens_parse(const char *, size_t, struct tokens *, char **);
int		 tokens_refresh(struct tokens *, char **);
int		 tokens_add(struct tokens *, const char *, char **, char **,
		     char **);
int		 tokens_revoke(struct tokens *, const char *, char **);
json_t		*tokens_to_json(const struct tokens *);
const struct token *tokens_check(const struct tokens *, const char *);
int		 tokens_authorize(struct tokens *, struct ratelimit *,
		     const char *, const char *, int64_t, char **, int *,
		     char **);
/* (end) */

/* ratelimit.c (issue 7) */
struct ratelimit *ratelimit_create(u_int, int64_t, int64_t, u_int);
void		 ratelimit_free(struct ratelimit *);
u_int		 ratelimit_count(const struct ratelimit *);
int64_t		 ratelimit_check(struct ratelimit *, const char *, int64_t);
void		 ratelimit_fail(struct ratelimit *, const char *, int64_t);
void		 ratelimit_key(const char *, char *, size_t);
/* (end) */

/* target.c (issue 7) */
#define TARGET_PORT	7070
struct target {
	char		*token;
	char		*host;		/* no brackets */
	u_int		 port;
	char		 pin[65];
};
int		 target_parse(const char *, struct target *, char **);
void		 target_clear(struct target *);
char		*target_format(const struct target *);
char		*target_hostport(const struct target *);
char		*target_url(const struct target *, const char *);
/* (end) */

/* digest.c (issue 7) */
#define DIGEST_LEN	32
#define DIGEST_HEX	65	/* 64 hex digits and a NUL */
struct digest {
	void		*ctx;
};
void		 digest_init(struct digest *);
void		 digest_update(struct digest *, const void *, size_t);
void		 digest_final(struct digest *, char *);
void		 digest_abort(struct digest *);
void		 digest_buf(const void *, size_t, char *);
int		 digest_fd(int, char *, uint64_t *, char **);
int		 digest_valid(const char *);
int		 digest_equal(const char *, const char *);
void		 hex_encode(const u_char *, size_t, char *);
void		 random_bytes(void *, size_t);
void		 base64url_encode(const u_char *, size_t, char *);
/* (end) */

/* hmap.c (issue 7) */
struct hmap;
struct hmap	*hmap_create(void);
void		 hmap_free(struct hmap *);
size_t		 hmap_count(const struct hmap *);
void		*hmap_get(const struct hmap *, const char *);
void		*hmap_put(struct hmap *, const char *, void *);
void		*hmap_del(struct hmap *, const char *);
int		 hmap_next(const struct hmap *, size_t *, const char **,
		     void **);
/* (end) */

/* cas.c (issue 7) */
#define CAS_SIZE_UNKNOWN	UINT64_MAX
struct cas;
struct cas_writer;
struct cas	*cas_open(const char *, uint64_t, char **);
void		 cas_close(struct cas *);
uint64_t	 cas_generation(const struct cas *);
uint64_t	 cas_total(const struct cas *);
uint64_t	 cas_limit(const struct cas *);
size_t		 cas_count(const struct cas *);
int		 cas_has(const struct cas *, const char *, uint64_t *);
int		 cas_check(struct cas *, const char *, uint64_t *);
void		 cas_touch(struct cas *, const char *);
int		 cas_open_blob(struct cas *, const char *, uint64_t *);
int		 cas_pin(struct cas *, const char *);
void		 cas_unpin(struct cas *, const char *);
void		 cas_evict(struct cas *);
int		 cas_sync(struct cas *);
struct cas_writer *cas_writer_create(struct cas *, const char *, uint64_t,
		     char **);
int		 cas_writer_write(struct cas_writer *, const void *, size_t,
		     char **);
int		 cas_writer_finish(struct cas_writer *, int, char *, char **);
int		 cas_writer_commit(struct cas_writer *, char **);
void		 cas_writer_abort(struct cas_writer *);
int		 cas_put(struct cas *, const char *, const void *, size_t,
		     char **);
int		 cas_ingest_fd(struct cas *, int, char *, uint64_t *, char **);
/* (end) */

/* sync.c (issue 7) */
struct progress;
struct statcache;
struct manifest;
struct sync_stats {
	uint64_t	 files, dirs, links, bytes;	/* the tree */
	uint64_t	 hashed, hashed_bytes;		/* stat cache misses */
	uint64_t	 moved, moved_bytes;		/* sent or fetched */
	uint64_t	 skipped;
	char		**warnings;	/* the first few skipped, why */
	u_int		 nwarnings;
};
typedef int (*sync_fetch_cb)(const char *, int, void *, char **);
void		 sync_stats_clear(struct sync_stats *);
int		 sync_scan(const char *, struct statcache *, struct manifest *,
		     struct sync_stats *, char **);
int		 sync_pull_apply(const char *, const struct manifest *,
		     sync_fetch_cb, void *, struct progress *,
		     struct sync_stats *, char **);
/* (end) */

/* remote.c (issue 7): the client's side of a remote run's files */
#define REMOTE_MANIFEST_TYPE	"text/x-gmux-manifest"
#define REMOTE_BATCH_TYPE	"application/x-gmux-batch"
#define REMOTE_MANIFEST_MAX	(128 * 1024 * 1024)
#define REMOTE_ENTRIES_MAX	1000000
#define REMOTE_BATCH_MAX	(16 * 1024 * 1024)
#define REMOTE_SMALL_MAX	(256 * 1024)	/* larger blobs go alone */
struct remote_io {
	/* One request; 0 and *status (and *reply if the body is JSON) when
	 * a reply came, -1 with *cause if none did. */
	int		(*request)(void *, const char *, const char *,
			    const char *, const void *, size_t, long *,
			    json_t **, char **);
	/* PUT /v1/blobs/DIGEST from fd (size bytes); it owns fd and may
	 * queue the upload until flush. */
	int		(*put_blob)(void *, const char *, int, uint64_t,
			    char **);
	int		(*flush)(void *, char **);
	/* GET /v1/blobs/DIGEST into fd. */
	int		(*get_blob)(void *, const char *, int, char **);
	void		*arg;
};
int		 remote_sync(const struct remote_io *, const char *,
		     struct statcache *, int, char *, struct sync_stats *,
		     char **);
int		 remote_pull(const struct remote_io *, const char *,
		     char *const *, const char *, int, struct sync_stats *,
		     char **);
/* (end) */

/* remote-host.c (issue 7): the host's side of the sync routes */
int		 remote_host_manifest_post(struct cas *, uint64_t,
		     const void *, size_t, json_t **, char **);
int		 remote_host_manifest_get(struct cas *, uint64_t, const char *,
		     json_t **, char **);
int		 remote_host_blob_put(struct cas *, const char *, const void *,
		     size_t, char **);
int		 remote_host_batch(struct cas *, const void *, size_t,
		     json_t **, char **);
int		 remote_host_prepare(struct cas *, const char *, const char *,
		     json_t **, char **);
int		 remote_host_pull(struct cas *, const char *, json_t *,
		     uint64_t, json_t **, char **);
/* (end) */

/* remote-local.c (issue 7): the sync routes in process */
struct remote_local {
	struct cas	*cas;
	uint64_t	 max_upload;
	const char	*jobdir;	/* what pull reads; NULL: no pull */
	void		(*tamper)(char *, size_t);	/* tests: spoil PUTs */
	u_int		 requests, batches, puts, gets;
};
void		 remote_local_io(struct remote_local *, struct remote_io *);
/* (end) */

/* remotes.c (issue 7): the client's hosts */
struct remote {
	char		*name;
	struct target	 target;
};
struct remotes {
	struct remote	*v;
	u_int		 n;
	char		*dflt;
	char		*path;
};
struct remote_card_room {
	u_int		 seats_free;
	uint64_t	 mem_free;
};
struct remote_room {
	int		 ok;		/* answered, pin and token good */
	int		 is_default;
	const struct remote_card_room *cards;
	u_int		 ncards;
};
char		*remotes_path(void);
int		 remote_name_valid(const char *);
int		 remotes_load(struct remotes *, const char *, char **);
int		 remotes_save(const struct remotes *, char **);
void		 remotes_clear(struct remotes *);
const struct remote *remotes_find(const struct remotes *, const char *);
int		 remotes_add(struct remotes *, const char *, const char *,
		     char **);
int		 remotes_rm(struct remotes *, const char *, char **);
int		 remotes_set_default(struct remotes *, const char *, char **);
json_t		*remotes_to_json(const struct remotes *);
int		 remotes_pick(const struct remote_room *, u_int, u_int,
		     uint64_t);
char		*remotes_invite(const char *, const char *, u_int,
		     const char *);
/* (end) */

/* confine.c (issue 7): file operations that cannot leave a directory */
#define CONFINE_DEPTH	256
struct stat;
struct walk_ops {
	int		(*dir_enter)(int, const char *, void *, char **);
	void		(*dir_leave)(const char *, void *);
	int		(*entry)(int, const char *, const char *,
			    const struct stat *, void *, char **);
};
int		 confine_path_ok(const char *, char **);
int		 confine_open(int, const char *, int, mode_t);
int		 confine_parent(int, const char *, int, const char **);
int		 confine_walk(int, const struct walk_ops *, void *, char **);
int		 confine_remove(const char *);
char		*confine_read_fd(int, size_t, size_t *);
/* (end) */

/* ignore.c (issue 7): .gmuxignore */
struct ignore;
int		 ignore_wildmatch(const char *, const char *);
struct ignore	*ignore_create(void);
void		 ignore_free(struct ignore *);
void		 ignore_defaults(struct ignore *);
void		 ignore_parse(struct ignore *, const char *, const char *,
		     size_t);
size_t		 ignore_mark(const struct ignore *);
void		 ignore_truncate(struct ignore *, size_t);
int		 ignore_match(const struct ignore *, const char *, int);
/* (end) */

/* manifest.c (issue 7) */
#define MENTRY_FILE	'f'
#define MENTRY_DIR	'd'
#define MENTRY_LINK	'l'
struct mentry {
	char		*path;
	char		*target;	/* links only */
	uint64_t	 size;
	u_int		 mode;		/* permission bits */
	char		 type;
	char		 digest[65];	/* files only */
};
struct manifest {
	struct mentry	*v;
	size_t		 n;
	size_t		 size;
	uint64_t	 bytes;		/* of all files */
};
void		 manifest_init(struct manifest *);
void		 manifest_clear(struct manifest *);
struct mentry	*manifest_add(struct manifest *, char, const char *, u_int,
		     uint64_t, const char *, const char *);
void		 manifest_sort(struct manifest *);
const struct mentry *manifest_find(const struct manifest *, const char *);
char		*manifest_escape(const char *);
char		*manifest_unescape(const char *, size_t);
char		*manifest_format(const struct manifest *, size_t *);
int		 manifest_link_ok(const char *, const char *);
int		 manifest_parse(const char *, size_t, size_t, struct manifest *,
		     char **);
/* (end) */

/* statcache.c (issue 7) */
struct statcache;
struct statcache *statcache_load(const char *);
void		 statcache_free(struct statcache *);
int		 statcache_parse(struct statcache *, const char *, size_t,
		     char **);
const char	*statcache_get(struct statcache *, const char *,
		     const struct stat *);
void		 statcache_hashing(struct statcache *);
void		 statcache_put(struct statcache *, const char *,
		     const struct stat *, const char *);
void		 statcache_counts(const struct statcache *, size_t *, size_t *);
int		 statcache_save(struct statcache *, char **);
char		*statcache_path(const char *);
/* (end) */

/* tree.c (issue 7): the host's side of moving a tree */
int		 tree_materialize(struct cas *, const struct manifest *,
		     const char *, char **);
int		 tree_pull(struct cas *, const char *, char *const *, uint64_t,
		     struct manifest *, char **);
/* (end) */

/* batch.c (issue 7): many small blobs in one body */
struct batch {
	char		*data;
	size_t		 len;
	size_t		 size;
	u_int		 n;
};
typedef int (*batch_cb)(const char *, const void *, size_t, void *, char **);
void		 batch_init(struct batch *);
void		 batch_clear(struct batch *);
char		*batch_reserve(struct batch *, size_t);
char		*batch_add(struct batch *, const char *, size_t);
int		 batch_parse(const void *, size_t, size_t, batch_cb, void *,
		     char **);
/* (end) */

/* progress.c (issue 7) */
struct progress {
	int		 fd;		/* -1: silent */
	const char	*what;
	int64_t		 start;
	int64_t		 last;
	uint64_t	 files, files_total;
	uint64_t	 bytes, bytes_total;
	int		 shown;
};
int		 progress_tty(void);
void		 progress_start(struct progress *, int, const char *, uint64_t,
		     uint64_t, int64_t);
char		*progress_line(const struct progress *, int64_t);
void		 progress_add(struct progress *, uint64_t, uint64_t, int64_t);
void		 progress_end(struct progress *, int64_t);
/* (end) */

#endif /* GMUX_H */
