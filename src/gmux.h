/*
 * gmux.h: the one internal header, for what crosses families.  Ordered by
 * layer, each using only those above it: utilities, wire formats, cards,
 * the scheduler, jobs, the books, the fence, remote runs, the daemon, the
 * client, commands.  Within a layer, prototypes are grouped by the file
 * that defines them; a file's section lists only what it exports.  What a
 * family (sched*.c, ledger*.c, fence*.c, card*.c) shares only inside
 * itself is in its own FAMILY-int.h.
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

/* ---- Utilities ----------------------------------------------------------- */

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
void		 log_child(void);
int		 log_level(void);
void		 log_debug(const char *, ...) printflike(1, 2);
void		 log_info(const char *, ...) printflike(1, 2);
void		 log_warn(const char *, ...) printflike(1, 2);
void		 log_warnx(const char *, ...) printflike(1, 2);
dead void	 fatal(const char *, ...) printflike(1, 2);
dead void	 fatalx(const char *, ...) printflike(1, 2);

/* threads.c: helper threads, and forks beside them */
int		 thread_start(pthread_t *, void *(*)(void *), void *);
int		 thread_start_detached(void *(*)(void *), void *);
void		 thread_idle(void);
void		 thread_busy(void);
pid_t		 fork_quiet(void);

/* util.c */
int		 parse_size(const char *, uint64_t *, char **);
int		 parse_share(const char *, u_int *, char **);
int		 parse_duration(const char *, int64_t *, char **);
int		 parse_uint(const char *, u_int, u_int, u_int *, char **);
char		*format_size(uint64_t);
char		*format_share(u_int);
char		*format_age(int64_t);
char		*format_duration(int64_t);
int		 write_file_replace(const char *, const void *, size_t, int,
		     char **);
int		 write_file_atomic(const char *, const void *, size_t, int,
		     char **);
char		*read_file(const char *, size_t, size_t *, char **);
int		 mkdir_p(const char *, int);
int		 set_nonblock(int);
ssize_t		 write_all(int, const void *, size_t);
int		 write_proc(const char *, const char *);
int		 send_fd(int, int, char);
int		 recv_fd(int, char *);

/* fdpass.c: a message with a descriptor, over a Unix socket */
ssize_t		 fdpass_send(int, const void *, size_t, int);
ssize_t		 fdpass_recv(int, void *, size_t, int *);
char		*strv_join(char *const *, const char *);
struct evbuffer;
struct evbuffer	*buf_new(void);
char		*buf_finish(struct evbuffer *, size_t *);
char		*strtrim(char *);
void		 strv_free(char **);
void		 strv_add(char ***, const char *);
char	       **strv_copy(char *const *);
size_t		 strv_len(char *const *);
char		*user_name(uid_t);
char		*find_program(const char *);
int		 have_program(const char *);

/* clock.c */
int64_t		 clock_ms(void);
int64_t		 clock_mono_ms(void);
int64_t		 clock_mono_us(void);
void		 clock_set_test(int64_t);

/* paths.c */
const char	*path_home(void);
const char	*path_socket(void);
const char	*path_db(void);
const char	*path_jobs(void);
const char	*path_config(void);
const char	*path_task_socket(void);
char		*path_job(u_int);
char		*path_job_file(u_int, const char *);
int		 path_under(const char *, const char *);

/* proc.c: running a helper program and capturing its output */
char		*proc_output(char *const *, int, int *);
char		*proc_stat(const char *, char *, size_t);
u_int		 proc_kill_session(pid_t, const char *, int);
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

/* db.c: SQLite behind a small interface (the only user of sqlite3.h) */
struct db;
struct dbstmt;
struct db	*db_open(const char *, char **);
void		 db_close(struct db *);
int		 db_exec(struct db *, const char *, char **);
struct dbstmt	*db_prepare(struct db *, const char *);
void		 db_bind_int(struct dbstmt *, int, int64_t);
void		 db_bind_text(struct dbstmt *, int, const char *);
int		 db_step(struct dbstmt *);	/* 1 row, 0 done, -1 error */
int64_t		 db_col_int(struct dbstmt *, int);
const char	*db_col_text(struct dbstmt *, int);
int		 db_col_null(struct dbstmt *, int);
void		 db_reset(struct dbstmt *);
void		 db_finalize(struct dbstmt *);
int		 db_begin(struct db *);
int		 db_commit(struct db *);
int		 db_in_transaction(struct db *);
const char	*db_error(struct db *);

/* digest.c: SHA-256, hex, constant-time comparison, random bytes */
#define DIGEST_LEN	32
#define DIGEST_HEX	65	/* 64 hex digits and a NUL */
struct digest {
	void		*ctx;
};
void		 digest_init(struct digest *);
void		 digest_update(struct digest *, const void *, size_t);
void		 digest_final(struct digest *, char *);
void		 digest_abort(struct digest *);
void		 digest_bytes(const void *, size_t, u_char *);
void		 digest_buf(const void *, size_t, char *);
int		 digest_from_hex(const char *, u_char *);
int		 digest_fd(int, char *, uint64_t *, char **);
int		 digest_valid(const char *);
int		 digest_equal(const char *, const char *);
void		 hex_encode(const u_char *, size_t, char *);
void		 random_bytes(void *, size_t);
void		 base64url_encode(const u_char *, size_t, char *);
void		 base64_encode(const u_char *, size_t, char *);
ssize_t		 base64_decode(const char *, size_t, u_char *);

/* hmap.c */
struct hmap;
struct hmap	*hmap_create(void);
void		 hmap_free(struct hmap *);
size_t		 hmap_count(const struct hmap *);
void		*hmap_get(const struct hmap *, const char *);
void		*hmap_put(struct hmap *, const char *, void *);
void		*hmap_del(struct hmap *, const char *);
int		 hmap_next(const struct hmap *, size_t *, const char **,
		     void **);

/* confine.c: file operations that cannot leave a directory */
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

/* ---- Wire formats -------------------------------------------------------- */

/* frame.c: the framed output stream (logs, attach, remote streaming) */
#define FRAME_STDOUT	1
#define FRAME_STDERR	2
#define FRAME_EXIT	3	/* payload: JSON {"exit_code":N,"state":S} */
/* payload: JSON, e.g. the job or its queue place */
#define FRAME_INFO	4
#define FRAME_HDR	5	/* type byte + 4-byte big-endian length */
#define FRAME_MAX	(1024 * 1024)
struct frame {
	u_char		 type;
	uint32_t	 len;
	const char	*data;
};
size_t		 frame_header(u_char *, u_char, uint32_t);
uint32_t	 frame_len(const u_char *);
ssize_t		 frame_take(const void *, size_t, uint32_t, uint32_t *,
		     char **);
ssize_t		 frame_parse(const void *, size_t, struct frame *, char **);
int		 frame_counts(u_char);

/* array.c: an array job's indices, "0-15%4" (pure) */
#define ARRAY_MAX_INDEX	999999
struct array_range {
	u_int		 lo;
	u_int		 hi;		/* the last index the step reaches */
	u_int		 step;
};
struct array_spec {
	struct array_range *v;		/* ascending, not overlapping */
	u_int		 n;
	u_int		 count;		/* indices in all */
	u_int		 limit;		/* at most this many at once; 0: any */
};
int		 array_parse(const char *, struct array_spec *, char **);
void		 array_clear(struct array_spec *);
u_int		 array_index(const struct array_spec *, u_int);
int64_t		 array_position(const struct array_spec *, u_int);
char		*array_format(const struct array_spec *, u_int);

/* jobspec.c: a request's placement directives (docs/scheduling.md) */
#define JOBSPEC_NODES_MAX 32		/* a gang's members, at most */
enum jobspec_mode {
	JOBSPEC_SHARED,			/* a guaranteed share, memory fits */
	JOBSPEC_EXCLUSIVE,		/* whole cards */
	JOBSPEC_OVERCOMMIT,		/* on measured use; memory unreserved */
};
struct jobspec {
	char		*name;		/* --job-name; NULL: none */
	char		*gpu_type;	/* a vendor or model; NULL: any */
	u_int		 gpus;		/* --gpus N; 0: not asked */
	u_int		 cpus;		/* 0: not asked */
	uint64_t	 ram;		/* 0: not asked */
	uint64_t	 vram;		/* free memory on each card; 0: any */
	char		*server;	/* the member it must run on */
	enum jobspec_mode mode;
	int64_t		 time_ms;	/* stopped past this run time; 0: no */
	char		*output;	/* stdout to this file too */
	char		*error;		/* stderr to this file too */
	char		*partition;	/* a member's tag */
	char		*python;	/* a published interpreter's name */
	u_int		 nodes;		/* members at once (a gang); 1 */
	char		*array;		/* the array's indices; NULL: one job */
	json_t		*payloads;	/* element i reads payload i; NULL */
	/* An array's element (set by the daemon, saved, never asked for): */
	u_int		 array_of;	/* its array's id; 0: not an element */
	u_int		 array_index;
	u_int		 array_count;
	int		 stdin_file;	/* reads its directory's "stdin" */
	int64_t		 array_submit;	/* its array's submission: its age */
	char		*image;		/* --image: in a container; NULL */
	int		 workspace;	/* a workspace: lives until removed */
	char		**container_env; /* more names that go in (-e) */
	char		*in_workspace;	/* a shell in the owner's workspace
					   of that name; NULL */
	char		*template;	/* the template it was made from */
	json_t		*mounts;	/* a workspace's binds and volumes */
};
struct jobreq;
void		 jobspec_init(struct jobspec *);
void		 jobspec_clear(struct jobspec *);
int		 jobspec_field(const char *, json_t *, struct jobreq *,
		     char **);
int		 jobspec_finish(json_t *, struct jobreq *, char **);
void		 jobspec_to_json(const struct jobspec *, json_t *);
json_t		*jobspec_element_json(const struct jobspec *);
int		 jobspec_element_from_json(json_t *, struct jobspec *,
		     char **);
int		 jobspec_gpus(const char *, char **, u_int *, char **);
int		 jobspec_time(const char *, int64_t *, char **);
int		 jobspec_image_ok(const char *, char **);
int		 jobspec_workspace_name_ok(const char *, char **);
int		 jobspec_reads_as_job(const char *);

/* imageref.c: an image's name as a client may give it */
#define IMAGEREF_MAX	255
int		 imageref_check(const char *, char **);

/* jobreq.c: what a client asks for when it starts a job */
#define JOB_BURST	0x1
#define JOB_PREEMPTIBLE	0x2
#define JOB_REQUEUE	0x4
#define JOB_NOWAIT	0x8
#define JOB_PULL	0x10	/* the client will pull (a remote job) */
#define JOB_TASK_WORKER	0x20	/* a @mesh worker: reaches the broker */
#define JOB_TERM	0x40	/* a terminal: a tmux session (gmux shell) */
#define JOBREQ_PUBLISH_MAX 16
struct jobreq {
	char		**argv;
	char		**env;
	char		 *cwd;
	u_int		  seats;	/* 0..100 */
	uint64_t	  mem;		/* 0: share x card memory */
	int		  card;		/* -1: any */
	char		 *card_uuid;	/* pins by UUID when set */
	u_int		  ncards;	/* cards, default 1 (0 if seats 0) */
	u_int		  priority;	/* 0..9, default 5 */
	int		  flags;
	int64_t		  grace_ms;
	int64_t		  timeout_ms;	/* bound on queueing; 0: none */
	int		  umask;	/* the caller's; -1: the daemon's */
	struct fence	 *fence;	/* NULL: not fenced */
	char		 *manifest;	/* a synced tree to run in (remote) */
	int		  confined;	/* came over TCP: jailed (set by the
					   daemon, saved, never taken from a
					   request) */
	char		 *key;		/* idempotency_key: a retry's job is
					   the first's (per owner) */
	struct jobspec	  spec;		/* placement directives */
	u_int		  publish[JOBREQ_PUBLISH_MAX]; /* ports its owner
					   may reach (docs/terminals.md) */
	u_int		  npublish;
};
#define JOBREQ_KEY_MAX	64
#define JOBREQ_KEY_RULE	"1 to 64 letters, digits, '.', '_', ':' or '-'"
void		 jobreq_init(struct jobreq *);
void		 jobreq_clear(struct jobreq *);
const char	*jobreq_env(const struct jobreq *, const char *);
int		 jobreq_from_json(json_t *, struct jobreq *, char **);
int		 jobreq_patch_from_json(json_t *, struct jobreq *, char **);
json_t		*jobreq_to_json(const struct jobreq *);
int		 jobreq_key_ok(const char *);
int		 jobreq_from_saved(json_t *, struct jobreq *, char **);

/* term.c: a terminal job's side, published ports (docs/terminals.md) */
struct job;
struct jail_spec;
int		 term_publish_from_json(json_t *, u_int *, u_int *, char **);
void		 term_publish_to_json(json_t *, int, const u_int *, u_int);
int		 term_job_prepare(const struct job *, struct jail_spec *,
		     char ***, char **);

/* http.c: the client's HTTP/1.1 response parser */
struct http_resp {
	int		 state;
	int		 status;
	int64_t		 length;	/* Content-Length, -1 if none */
	int		 chunked;
	int		 close;		/* the server closes after this reply */
	uint64_t	 left;		/* body or chunk bytes to come */
	u_int		 nheaders;
	char		 line[8192];
	size_t		 linelen;
};
void		 http_resp_init(struct http_resp *);
int		 http_resp_feed(struct http_resp *, const char *, size_t,
		     void (*)(const char *, size_t, void *), void *, char **);
struct http_head {			/* a request's head, as it arrives */
	char		*buf;
	size_t		 len;
	size_t		 end;		/* its length once whole, else 0 */
};
int		 http_head_feed(struct http_head *, const char *, size_t,
		     size_t, size_t *);
char		*http_head_get(const struct http_head *, const char *);
void		 http_head_clear(struct http_head *);

/* manifest.c */
#define MENTRY_FILE	'f'
#define MENTRY_DIR	'd'
#define MENTRY_LINK	'l'
struct mentry {
	char		*path;
	char		*target;	/* links only */
	uint64_t	 size;
	u_int		 mode;		/* permission bits */
	char		 type;
	char		 digest[DIGEST_HEX];	/* files only */
};
struct manifest {
	struct mentry	*v;
	size_t		 n;
	size_t		 size;
	uint64_t	 bytes;		/* of all files */
};
void		 manifest_init(struct manifest *);
void		 manifest_clear(struct manifest *);
void		 manifest_copy(struct manifest *, const struct manifest *);
struct mentry	*manifest_add(struct manifest *, char, const char *, u_int,
		     uint64_t, const char *, const char *);
void		 manifest_sort(struct manifest *);
const struct mentry *manifest_find(const struct manifest *, const char *);
void		 manifest_escape_buf(struct evbuffer *, const char *);
ssize_t		 manifest_unescape_to(char *, const char *, size_t);
char		*manifest_format(const struct manifest *, size_t *);
int		 manifest_link_ok(const char *, const char *);
int		 manifest_parse(const char *, size_t, size_t, struct manifest *,
		     char **);

/* batch.c: many small blobs in one body */
struct batch {
	struct evbuffer	*buf;
	u_int		 n;		/* records */
};
typedef int (*batch_cb)(const char *, const void *, size_t, void *, char **);
void		 batch_init(struct batch *);
void		 batch_clear(struct batch *);
int		 batch_add_fd(struct batch *, const char *, int, size_t);
const char	*batch_data(struct batch *, size_t *);
size_t		 batch_len(const struct batch *);
int		 batch_parse(const void *, size_t, size_t, batch_cb, void *,
		     char **);

/* ---- Cards --------------------------------------------------------------- */

/* card.c: what the host has */
enum vendor {
	VENDOR_NONE,
	VENDOR_NVIDIA,
	VENDOR_AMD,
	VENDOR_INTEL,
};
struct card_enforce {
	/* "driver", "shim", "admission" or "none" */
	const char	*memory;
	/* "mps", "cu-mask", "pacer", "admission" */
	const char	*compute;
	int		 live_memory;	/* a resize applies at once */
	int		 live_compute;
	char		*why;		/* what is missing and why, or NULL */
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
	int		 util;		/* measured percent busy, -1 unknown */
	uint64_t	 mem_measured;	/* bytes in use, CARD_UNKNOWN unknown */
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
const char	*vendor_device_env(enum vendor);
void		 cards_free(struct cards *);
int		 cards_detect(struct cards *, const char *, char **);
struct card	*cards_find(struct cards *, const char *);
json_t		*card_to_json(const struct card *);
char		*card_device_id(const struct card *);

/* card-query.c: the processes on the cards and their use, while serving */
typedef void	(*cards_procs_cb)(struct card_procs *, const char *, void *);
typedef void	(*cards_usage_cb)(struct card_usages *, const char *, void *);
int		 cards_procs(const struct cards *, struct card_procs *,
		     char **);
int		 cards_procs_start(const struct cards *, cards_procs_cb, void *,
		     char **);
int		 cards_usage_start(const struct cards *, cards_usage_cb, void *,
		     char **);

/* card-fake.c */
int		 card_fake_parse(const char *, struct cards *, char **);

/* enforce.c: the one interface through which caps and ceilings change */
void		 enforce_init(struct cards *);
char		*enforce_find_shim(void);
char		*enforce_find_file(const char *, const char *);
void		 enforce_shutdown(void);
int		 enforce_job_env(u_int, const struct card *, u_int, u_int,
		     uint64_t, char ***, char **);
void		 enforce_set(u_int, const struct card *, u_int, u_int,
		     uint64_t);
void		 enforce_forget(u_int);
struct jail_spec;
void		 enforce_jail_paths(uint64_t, struct jail_spec *);
void		 enforce_tick(const struct cards *,
		     void (*)(const struct card_procs *, void *), void *);

/* region.c (the shim's shared region, daemon side) */
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

/* mps.c */
int		 mps_start(const struct card *, char **);
void		 mps_stop(const struct card *);
void		 mps_stop_all(void);
const char	*mps_pipe_dir(u_int);

/* cumask.c (AMD compute-unit masks) */
#define CUMASK_WORDS	8		/* 512 CUs at most */
struct cumask_geom {
	u_int		 cus;		/* active compute units */
	u_int		 xcds;		/* XCDs the mask interleaves over */
};
int		 cumask_geometry(const struct card *, struct cumask_geom *);
int		 cumask_pick(const struct cumask_geom *, const uint64_t *,
		     u_int, uint64_t *);
char		*cumask_format(const uint64_t *);
char		*cumask_take(u_int, const struct card *, u_int, char **);
void		 cumask_release(u_int);

/* audit.c (GPU processes the shim does not know) */
struct audit_job {
	u_int		 id;
	pid_t		 keeper;	/* every process of the job descends */
	uint64_t	 cap;		/* on all its cards together; 0: none */
	uint64_t	 cards;		/* bit i: card i */
	const uint64_t	*cmem;		/* cap per card index, or NULL */
};
struct audit_offender {
	u_int		 job;
	pid_t		 pid;		/* 0: the job as a whole */
	int		 card;		/* the card over its cap, or -1 */
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

/* ---- The scheduler ------------------------------------------------------- */

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
	uint64_t	 only;		/* the cards it may have; 0: any */
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
/* a job that may fit, as a pass sees it */
struct sched_cand {
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
	uint64_t	 dirty;		/* more queue room since a pass */
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
void		 sched_withhold(struct sched *, u_int, uint64_t, int);
char		*sched_refusal(const struct sched *, const struct sched_req *);
int		 sched_submit(struct sched *, const struct sched_req *, int64_t,
		     struct sched_out *);
int		 sched_end(struct sched *, u_int, int64_t, struct sched_out *);
int		 sched_resize(struct sched *, u_int, u_int, uint64_t, int64_t,
		     struct sched_out *, char **);
void		 sched_tick(struct sched *, int64_t, struct sched_out *);
int		 sched_restore(struct sched *, const struct sched_req *,
		     const struct sched_run *, char **);
void		 sched_pass(struct sched *, int64_t, struct sched_out *);
struct sched_job *sched_find(const struct sched *, u_int);
void		 sched_out_clear(struct sched_out *);
void		 sched_out_free(struct sched_out *);

/* sched-queue.c: the queue, in order and in classes of equal requests */
struct sched_class {
	struct sched_req shape;		/* seats, mem, ncards, pin, prio */
	uint64_t	 elig;		/* cards that could ever hold it */
	struct sched_jobs jobs;		/* by key */
	u_int		 n;
	u_int		 idx;		/* in its bucket */
	struct sched_class *hnext;
};
u_int		 sched_queue_position(const struct sched *,
		     const struct sched_job *);


/* sched-explain.c: reasons, in words */
char		*sched_explain(const struct sched *, u_int, int64_t);
char		*sched_explain_reason(const struct sched *,
		     const struct sched_job *);
char		*sched_explain_impossible(const struct sched *,
		     const struct sched_req *);

/* ---- Jobs ---------------------------------------------------------------- */

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
	char		 name[24];	/* "j12", an array's element "j12_3" */
	char		*owner;
	struct jobreq	 req;
	enum job_state	 state;
	char		*reason;	/* why queued or failed; NULL if none */
	int		 card;		/* its first card, -1: none */
	uint64_t	 cards;		/* bit i: card i */
	u_int		*ceil;		/* compute ceiling per card index */
	uint64_t	*cmem;		/* memory cap per card index */
	u_int		 seats;		/* guarantee on each of its cards */
	uint64_t	 mem;		/* memory cap on its first card */
	int64_t		 submit;	/* when it (re)entered the queue */
	u_int		 by;		/* being preempted for this job */
	int		 by_card;
	int		 exit_code;	/* -1 while not ended */
	int64_t		 created;	/* ms since the epoch */
	int64_t		 started;
	int64_t		 ended;
	pid_t		 keeper_pid;
	pid_t		 pgid;
	int		 ctl_fd;	/* link to the keeper, -1 if none */
	int64_t		 linked;	/* mono ms its link opened; 0 */
	char		*link_buf;	/* an unfinished line from the keeper */
	size_t		 link_len;
	struct event	*ctl_ev;
	int		 stopping;	/* a stop was asked for */
	int64_t		 stop_kill_at;	/* its keeper KILLs then; 0: none */
	int		 unplaced;	/* lost its place at a restart */
	int		 log_wd;	/* inotify watch on the log, or -1 */
	/* what enforcement found wrong, or NULL */
	char		*audit;
	uint64_t	 lost;		/* bytes its log could not take */
	TAILQ_HEAD(, follower) followers;
	TAILQ_ENTRY(job) entry;
};
TAILQ_HEAD(jobs, job);
extern struct jobs all_jobs;
struct job	*job_find(const char *);
struct job	*job_find_id(u_int);
struct job	*job_create(u_int, const char *, struct jobreq *);
void		 job_set_id(struct job *, u_int);
int		 job_start(struct job *, char **);
int		 job_stop(struct job *, int64_t, const char *);
int		 job_stop_cancel(struct job *);
void		 job_adopt(struct job *);
void		 job_start_tick(void);
void		 job_account(struct job *, int64_t);
void		 job_set_terms(struct job *, u_int, u_int, uint64_t);
void		 job_requeue(struct job *);
json_t		*job_to_json(const struct job *);
json_t		*job_info_json(const struct job *);
void		 job_free(struct job *);
void		 job_env_set(char ***, const char *, ...) printflike(2, 3);

/* job-state.c: the one place a job's state changes */
#define JOB_QUIET	0x1	/* its followers are told later (job_tell) */
const char	*job_state_name(enum job_state);
int		 job_state_from_name(const char *, enum job_state *);
int		 job_ended(const struct job *);
void		 job_set_state(struct job *, enum job_state, int);
void		 job_save(const struct job *);
void		 job_tell(struct job *);
void		 job_restore_state(struct job *, const char *);
extern void	(*job_state_hook)(struct job *, enum job_state);

/* devcontainer.c: what a workspace takes from a devcontainer.json */
struct devcontainer {
	char		 *image;
	char		 *dockerfile;	/* build.dockerfile, as written */
	char		 *context;	/* build.context; NULL: its dir */
	char		**mounts;	/* "source=A,target=B,type=T" */
	char		**env;		/* containerEnv, NAME=VALUE */
	u_int		 *ports;	/* forwardPorts */
	u_int		  nports;
	char		**post_create;	/* argv; NULL: none */
};
void		 devcontainer_init(struct devcontainer *);
void		 devcontainer_free(struct devcontainer *);
int		 devcontainer_parse(const char *, size_t, struct devcontainer *,
		     char **);

/* cmd-workspace-dev.c: gmux workspace create --devcontainer FILE */
char		**workspace_devcontainer(json_t *, const char *, const char *);

/* container.c: a containerized job's podman run (docs/containers.md) */
struct container_spec {
	const char	 *image;
	int		  deny_net;	/* --network none, else host */
	int		  fenced;	/* --allow: the fence goes inside */
	char		**devices;	/* --device: nodes or CDI names */
	char		**ro;		/* mounted read-only: the shim */
	char		**rw;		/* read-write: the region, MPS pipes */
	char *const	 *env;		/* more names for -e: containerEnv */
	char		 *env_file;	/* --env-file: a remote one's */
	int		  confined;	/* a remote job's: its tree, no host */
	char		 *tree;		/* -v of its tree at /work, confined */
	char		**volumes;	/* --mount specs: a workspace's */
};
struct keeper_spec;
struct overlay;
const char	*container_podman(char **);
json_t		*container_host_json(void);
char		*container_host_text(void);
char		*container_host_warning(void);
char		*container_name(u_int);
const char	*container_label(void);
char		**container_argv(const struct keeper_spec *, char *const *);
void		 container_remove(u_int);
void		 container_sweep(int (*)(u_int));
struct jobreq;
int		 container_check(const struct jobreq *, int *, char **);
void		 container_spec_make(uint64_t, const struct jobreq *,
		     struct container_spec *);
void		 container_spec_clear(struct container_spec *);
void		 container_spec_confine(struct container_spec *, u_int,
		     const struct overlay *);
char		**container_confined_env(char *const *);
/* container-env.c: a remote job's containerEnv, by an env file */
int		 container_env_check(const struct jobreq *, char **);
int		 container_env_file(struct container_spec *,
		     const struct jobreq *, const struct keeper_spec *,
		     char **);
void		 container_env_forget(u_int);
/* container-account.c: as the job's tenant account, rootless */
int		 container_account_cwd(struct keeper_spec *);
void		 container_account_env(const struct keeper_spec *, char ***);
void		 container_account_podman_env(char ***, const char *);
int		 container_account_load(const struct keeper_spec *,
		     char *const *, char **);
void		 container_account_remove(const struct keeper_spec *,
		     char *const *);
void		 container_account_sweep(int (*)(u_int));
char		**container_account_argv(uid_t, gid_t, const char *,
		     const char *const *, u_int);

/* workspace.c: a shell in a workspace, the daemon's side */
struct job	*workspace_find_live(const char *, const char *);
struct job	*workspace_shell_live(const char *, const char *);
int		 workspace_shell_check(const struct jobreq *, const char *,
		     int *, char **);
char		**workspace_shell_argv(const struct job *, char **);
void		 workspace_shell_unjail(const struct job *,
		     struct keeper_spec *);
void		 workspace_shell_account(const struct job *,
		     struct keeper_spec *);
void		 workspace_ended(struct job *);

/* workspace-mount.c: a workspace's home, cache and mounts */
int		 workspace_mounts_from_json(json_t *, json_t **, char **);
int		 workspace_mounts_check(const struct jobreq *, const char *,
		     char **);
int		 workspace_volumes(const struct job *, char ***, char **);

/* container-config.c: templates, the images' policy, pre-pulls */
int		 container_config_template(json_t *, char **);
int		 container_config_allowed(const struct jobreq *, char **);
void		 container_config_start(void);
json_t		*container_config_images(void);

/* image.c: images that travel, the host's side (docs/containers.md) */
struct cas;
const char	*image_state(const char *, int, const char **);
int		 image_load(struct cas *, const char *, const struct manifest *,
		     int *, char **);

/* image-shared.c: images across members with shared homes */
void		 image_shared_prepare(const char *);

/* keeper.c: the small process that owns one job */
struct keeper_spec {
	u_int		  id;
	char		 *dir;		/* the job's directory */
	char		**argv;
	char		**env;
	const char	 *cwd;
	int		  umask;	/* the caller's, -1: the daemon's */
	const struct fence *fence;	/* NULL: not fenced */
	const struct jail_spec *jail;	/* a remote job's; NULL: none */
	const struct overlay *overlay;	/* its tree's; NULL: none */
	const char	 *stdin_path;	/* NULL: /dev/null */
	const char	 *out_path;	/* stdout copied here too; NULL */
	const char	 *err_path;	/* stderr copied here too; NULL */
	int		  as_account;	/* runs as uid/gid (a tenant's) */
	char		**ro;		/* bound read-only for it; NULL */
	uid_t		  uid;
	gid_t		  gid;
	const struct container_spec *container; /* NULL: native */
	int64_t		  orphan_ms;	/* no daemon this long: stop; 0 */
	int64_t		  grace_ms;	/* ... TERM this long before */
};
pid_t		 keeper_spawn(const struct keeper_spec *, int *, char **);
int		 keeper_connect(u_int);
int		 keeper_send(int, const char *);
json_t		*keeper_status(u_int);

/* tenant*.c: tenants' accounts, quotas, homes (docs/tenants.md) */
int		 tenant_account(const char *, uid_t *, gid_t *, char **,
		     char **);
int		 tenant_owner_ok(const char *, char **);
int		 tenant_accounts_on(const char **);
int		 tenant_give(const char *, uid_t, gid_t, char **);
int		 tenant_python(const char *, char **, char **);
struct jail_spec;
int		 tenant_publish(const struct job *, char ***, char ***,
		     struct jail_spec *, char **);
char		**tenant_datasets(void);
int		 tenant_datasets_enter(char *const *, int, const char **);
int		 tenant_check(const struct job *, int *, char **);
int		 tenant_admit(struct job *, int *, char **);
void		 tenant_hold(struct job *);
int		 tenant_held(struct job *);
void		 tenant_tick(void);
int		 tenant_disk_quotas(void);
void		 tenant_accounts_each(int (*)(uid_t, gid_t, const char *,
		     void *), void *);
void		 tenant_swept(uid_t);

/* state.c: the daemon's records in SQLite */
int		 state_open(char **);
void		 state_close(void);
u_int		 state_next_id(void);
u_int		 state_peek_id(void);
void		 state_save_job(const struct job *);
void		 state_load_jobs(void);
void		 state_delete_job(u_int);
struct db	*state_database(void);

/* config.c: the daemon's settings, KEY=VALUE */
struct config_entry {
	char		*key;
	char		*value;
};
int		 config_parse(const char *, struct config_entry **, u_int *,
		     char **);
void		 config_free(struct config_entry *, u_int);
int		 config_load(char **);
const char	*config_get(const char *);
u_int		 config_uint(const char *, u_int, u_int, u_int);

/* retention.c: finished jobs are forgotten after JOB_RETENTION_DAYS */
void		 retention_tick(void);

/* follow.c: streaming a job's log to clients */
#define FOLLOW_LIVE	0x1	/* until the job ends */
#define FOLLOW_RAW	0x2	/* bare output, no frames (for curl) */
#define FOLLOW_WAIT	0x4	/* no stream: reply with the job when it ends */
struct evhttp_request;
struct evbuffer;
void		 follow_start(struct job *, struct evhttp_request *, uint64_t,
		     int, json_t *);
void		 follow_job_changed(struct job *);
void		 follow_job_ended(struct job *);
void		 follow_job_info(struct job *);
void		 follow_init(void);
void		 follow_heartbeat(int64_t);

/* ---- The books ----------------------------------------------------------- */

/* ledger.c */
/* The books: one row per job, card and span of unchanged terms. */
#define LEDGER_DAY_MS	86400000LL	/* days are UTC days */
#define LEDGER_LO_BITS	40	/* byte-ms sums are kept as hi << 40 | lo */
/* What one job holds on one card: the terms an interval records. */
struct ledger_use {
	u_int		 job;
	const char	*owner;
	u_int		 card;
	const char	*vendor;
	const char	*model;
	u_int		 seats;		/* the guarantee: what is billed */
	u_int		 ceiling;	/* burst ceiling; = seats if none */
	uint64_t	 mem;		/* the memory cap, bytes */
	const char	*fence;		/* "none", "deny-net", "allow:3" */
};
/* A closed interval as stored; strings are borrowed. */
struct ledger_row {
	int64_t		 seq;		/* its place in the chain, from 1 */
	struct ledger_use u;
	int64_t		 start;		/* ms since the epoch */
	int64_t		 end;		/* exclusive */
};
struct ledger;

/* All-time totals of one owner (never pruned: counters only grow). */
struct ledger_total {
	char		*owner;
	int64_t		 seat_ms;	/* seats x ms; 100000: 1 share-second */
	double		 mem_byte_seconds;
};
struct ledger	*ledger_open(const char *, char **);
void		 ledger_close(struct ledger *);
int		 ledger_tick(struct ledger *, int64_t, char **);
int64_t		 ledger_day(int64_t);
int64_t		 ledger_last_tick(struct ledger *);

/* ledger-interval.c: opening, continuing and closing intervals */
int		 ledger_set(struct ledger *, u_int, const struct ledger_use *,
		     u_int, int64_t, char **);
int		 ledger_end(struct ledger *, u_int, int64_t, char **);
u_int		 ledger_adopt(struct ledger *, u_int);

/* ledger-chain.c: the hash chain, verification and pruning */
int		 ledger_verify(struct ledger *, int64_t *, char **);
int		 ledger_prune(struct ledger *, int64_t, const char *, int64_t *,
		     char **);

/* usage and top */
enum usage_by {
	USAGE_OWNER,
	USAGE_JOB,
	USAGE_CARD,
	USAGE_VENDOR,
	USAGE_DAY,
};
enum usage_format {
	USAGE_TABLE,
	USAGE_JSON,
	USAGE_CSV,
};
struct usage_row {
	char		*key;		/* owner, "j12", "0", vendor, a day */
	u_int		 jobs;		/* distinct jobs with time in it */
	int64_t		 seat_ms;	/* guaranteed seats x ms */
	double		 mem_gib_hours;	/* memory cap x time */
	char		*host;		/* merged from several hosts, or NULL */
};
struct usage {
	enum usage_by	 by;
	int64_t		 since;		/* [since, until), ms */
	int64_t		 until;
	struct usage_row *rows;
	u_int		 nrows;
	struct usage_row total;		/* key "total"; jobs counted once */
};
const char	*usage_by_name(enum usage_by);
int		 usage_by_from_name(const char *, enum usage_by *, char **);
int		 usage_parse_time(const char *, int64_t, int64_t *, char **);
int		 usage_parse_window(const char *, const char *, int64_t,
		     int64_t *, int64_t *, char **);
void		 usage_format_day(int64_t, char *);
void		 usage_format_time(int64_t, char *);
void		 usage_free(struct usage *);
json_t		*usage_to_json(const struct usage *);
int		 usage_from_json(json_t *, struct usage *, char **);
void		 usage_print(const struct usage *, enum usage_format, FILE *);
void		 usage_csv_field(FILE *, const char *);

/* ledger-query.c: integrating the books over a window */
json_t		*ledger_usage_json(struct ledger *, const char *, const char *,
		     const char *, int64_t, char **);
int		 ledger_totals(struct ledger *, struct ledger_total **,
		     u_int *);
void		 ledger_totals_free(struct ledger_total *, u_int);

/* ledger-series.c: the books as a time series, for the dashboard's plots */
struct usage_series {
	enum usage_by	 by;		/* USAGE_OWNER or USAGE_CARD */
	int64_t		 since;		/* ms */
	int64_t		 step;		/* ms */
	u_int		 n;		/* steps */
	const char	*only;		/* this owner's use alone, or NULL */
	char		**keys;
	u_int		 nkeys;
	int64_t		*seat_ms;	/* nkeys rows of n */
};
int		 ledger_usage_series(struct ledger *, struct usage_series *,
		     char **);
void		 usage_series_free(struct usage_series *);

/* top.c: gmux top, one frame and the live loop */
typedef int (*top_fetch_cb)(void *, json_t **, json_t **, char **);
char		*top_render(json_t *, json_t *, u_int, u_int, int64_t);
int		 top_loop(top_fetch_cb, void *, int, char **);

/* metrics.c */
struct metrics_card {
	u_int		 index;
	const char	*vendor;
	const char	*model;
	const char	*uuid;		/* NULL if none */
	uint64_t	 memory;	/* bytes */
	u_int		 seats;		/* guaranteed seats allocated */
	u_int		 burst;		/* seats granted above guarantees */
	uint64_t	 mem_allocated;	/* sum of memory caps, bytes */
	u_int		 jobs;		/* running jobs on the card */
	double		 util;		/* measured, 0..1; < 0 if unknown */
};
struct metrics_state {
	const char	*state;		/* "queued", "running", ... */
	u_int		 jobs;
};
struct metrics_input {
	const char	*version;
	int64_t		 start_ms;	/* when the daemon started */
	const struct metrics_card *cards;
	u_int		 ncards;
	const struct metrics_state *states;
	u_int		 nstates;
	u_int		 queue_length;
	const struct ledger_total *owners;
	u_int		 nowners;
};
char		*metrics_render(const struct metrics_input *);

/* ---- The network fence and the jail -------------------------------------- */

/* fence.c: the network fence around one job */
#define FENCE_POLLFDS	2	/* descriptors the keeper polls for a fence */
struct fence;
struct fence_job;
struct pollfd;
struct jail;
struct fence_job *fence_job_create(const struct fence *, const char *,
		     const struct jail *, char **);
void		 fence_job_env(const struct fence_job *, char ***);
void		 fence_job_child(struct fence_job *);
void		 fence_job_inside(struct fence_job *);
/* fence-install.c: the filter and its listener (only system calls) */
struct sock_fprog;
int		 fence_install(const struct sock_fprog *);
void		 fence_job_child_pass(struct fence_job *, int);
int		 fence_job_start(struct fence_job *, char **);
u_int		 fence_job_pollfds(const struct fence_job *, struct pollfd *);
void		 fence_job_dispatch(struct fence_job *, const struct pollfd *,
		     u_int);
json_t		*fence_job_stats(const struct fence_job *);
char		*fence_job_loopback_news(struct fence_job *);
int		 fence_job_write_stats(struct fence_job *, const char *,
		     char **);
void		 fence_job_free(struct fence_job *);
void		 fence_prepare(const struct fence *, int);
void		 fence_job_release(struct fence_job *);
#define FENCE_SYS_FCHMODAT2 452	/* Linux 6.6, newer than some headers */
#define FENCE_NS_NET	0x1	/* the namespaces a job's child got */
#define FENCE_NS_IPC	0x2

/* landlock.c: Landlock's calls, for the fence and the jail */
#define LANDLOCK_FS	0x1	/* what a ruleset handles */
#define LANDLOCK_NET	0x2
#define LANDLOCK_SCOPE	0x4
#define LANDLOCK_READ	0x01	/* rights a rule grants: read files */
#define LANDLOCK_LIST	0x02	/* list directories */
#define LANDLOCK_EXEC	0x04
#define LANDLOCK_WRITE	0x08	/* write and truncate files */
#define LANDLOCK_CREATE	0x10	/* make, remove and move entries */
#define LANDLOCK_DEVICE	0x20	/* ioctl on devices */
int		 landlock_abi(void);
int		 landlock_ruleset(int, int);
int		 landlock_allow(int, int, const char *, u_int);
int		 landlock_enter(int);

/* jail.c: what a remote job may reach (docs/isolation.md) */
struct jail_spec {
	char		 *work;		/* its tree: read, write, run */
	char		 *tmp;		/* its TMPDIR and HOME: the same */
	char		**exec;		/* to read and run: the shim */
	char		**rw;		/* to read and write: the region */
	char		**sockets;	/* more dirs of its own: MPS's pipes */
	char		**devs;		/* devices to use: a terminal's */
	int		  loopback;	/* REMOTE_LOOPBACK: host loopback */
};
const char	*jail_path(void);
struct jail	*jail_create(const struct jail_spec *, char **);
int		 jail_ruleset(const struct jail *);
char *const	*jail_sockets(const struct jail *);
int		 jail_loopback(const struct jail *);
void		 jail_free(struct jail *);
void		 jail_spec_clear(struct jail_spec *);
int		 jail_ready(char **);
int		 jail_remote_job(int *, char **);
int		 jail_open_loopback(void);
void		 jail_serve_check(void);

/* fence-policy.c: --allow, --deny-net, --add-host */
#define FENCE_MAX_RULES	256
struct fence_rule {
	char		*name;		/* a host name, lower case; or NULL */
	int		 family;	/* AF_INET or AF_INET6 for an address */
	u_char		 addr[16];
	u_int		 prefix;	/* leading bits that must match */
	uint16_t	 port_lo;	/* 0: any port */
	uint16_t	 port_hi;
	char		*path;		/* unix:PATH (AF_UNIX), or NULL */
	char		*text;		/* the canonical spelling */
};
#define FENCE_UNIX_PATH_MAX	108	/* sun_path */
struct fence_pin {			/* --add-host NAME=ADDR */
	char		*name;
	int		 family;
	u_char		 addr[16];
};
struct fence {
	int		  deny_net;
	int		  open;		/* every address: a remote job's fence
					   when it asked for none (built by
					   the keeper, never sent or saved) */
	struct fence_rule *rules;
	u_int		  nrules;
	struct fence_pin *pins;
	u_int		  npins;
};
struct fence	*fence_create(void);
struct fence	*fence_open(void);
void		 fence_free(struct fence *);
int		 fence_allow(struct fence *, const char *, char **);
int		 fence_add_host(struct fence *, const char *, char **);
int		 fence_has_unix(const struct fence *);
int		 fence_from_json(json_t *, struct fence **, char **);
void		 fence_to_json(const struct fence *, json_t *);
char		*fence_text(const struct fence *);
char		**fence_loopback_rules(const struct fence *);

/* ---- Remote runs: trust, sync, the client's hosts ------------------------ */

/* tls.c */
struct tls_identity;
struct bufferevent;
struct tls_pin {
	char		 want[DIGEST_HEX];	/* the pinned key's SHA-256 */
	char		 seen[DIGEST_HEX];	/* what the host showed */
	int		 checked;	/* the check ran */
	int		 mismatch;	/* and failed */
};
struct tls_identity *tls_identity_load(const char *, int, char **);
int		 tls_identity_reissue(struct tls_identity *, char **);
void		 tls_identity_free(struct tls_identity *);
const char	*tls_identity_pin(const struct tls_identity *);
u_char		*tls_identity_spki(const struct tls_identity *, size_t *);
u_char		*tls_identity_sign(const struct tls_identity *, const void *,
		     size_t, size_t *);
int		 tls_spki_verify(const u_char *, size_t, const void *, size_t,
		     const u_char *, size_t, char *);
void		*tls_server_create(const struct tls_identity *, char **);
void		 tls_server_free(void *);
struct bufferevent *tls_server_bev(struct event_base *, void *, void *);
void		 tls_server_data_free(void (*)(void *));
struct tls_conn;
struct tls_conn	*tls_client_open(int, const char *, const char *, const char *,
		     char **);
int		 tls_handshake(struct tls_conn *, char **);
int		 tls_want(const struct tls_conn *);
size_t		 tls_pending(const struct tls_conn *);
ssize_t		 tls_read(struct tls_conn *, void *, size_t);
ssize_t		 tls_write(struct tls_conn *, const void *, size_t);
void		 tls_close(struct tls_conn *);
void		 tls_server_ask_certificates(void *);
int		 tls_bev_client_pin(struct bufferevent *, char *);
struct bufferevent *tls_peer_bev(struct event_base *,
		     const struct tls_identity *, const char *, const char *,
		     char **);
char		*tls_peer_pin_error(struct bufferevent *);

/* token.c */
struct token {
	char		*id;		/* "t1" */
	char		*owner;
	char		 hash[DIGEST_HEX];	/* SHA-256 of the token, hex */
	int64_t		 created;	/* ms */
	int		 revoked;
	int64_t		 expires;	/* ms; an invite (0: a token) */
	char		**clusters;	/* granted (token-grant.c) */
	u_int		 nclusters;
	int		 granted;	/* clusters is its list (0: none
					   written: its host's cluster) */
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
int		 tokens_invite(struct tokens *, const char *, char **, char **,
		     char **);
int		 tokens_join(struct tokens *, const struct token *, char **,
		     char **, char **);
int		 tokens_revoke(struct tokens *, const char *, char **);
int		 tokens_grant(struct tokens *, const char *, const char *, int,
		     const char *, char **);
json_t		*tokens_to_json(const struct tokens *, const char *);
const struct token *tokens_check(const struct tokens *, const char *);
int		 tokens_authorize(struct tokens *, struct ratelimit *,
		     const char *, const char *, int64_t, char **, int *,
		     char **);
/* token-grant.c: the clusters a token is granted (docs/cluster.md) */
int		 token_cluster_valid(const char *);
int		 token_grants_parse(json_t *, struct token *, char **);
void		 token_grants_json(const struct token *, json_t *);
void		 token_grants_copy(struct token *, const struct token *);
void		 token_grants_clear(struct token *);
int		 token_granted(const struct token *, const char *);
int		 token_grants_set(struct token *, const char *, int,
		     const char *, char **);

/* ratelimit.c */
struct ratelimit *ratelimit_create(u_int, int64_t, int64_t, u_int);
void		 ratelimit_free(struct ratelimit *);
u_int		 ratelimit_count(const struct ratelimit *);
int64_t		 ratelimit_check(struct ratelimit *, const char *, int64_t);
void		 ratelimit_fail(struct ratelimit *, const char *, int64_t);
void		 ratelimit_key(const char *, char *, size_t);

/* target.c */
#define TARGET_PORT	7070
struct target {
	char		*token;
	char		*host;		/* no brackets */
	u_int		 port;
	char		 pin[DIGEST_HEX];
};
int		 target_parse(const char *, struct target *, char **);
void		 target_clear(struct target *);
char		*target_format(const struct target *);
char		*target_hostport(const struct target *);

/* conn.c: a connection to the local daemon or a remote host */
struct conn;
struct conn	*conn_open_unix(const char *);
struct conn	*conn_open_tcp(const char *, u_int, const char *, char **);
int		 conn_advance(struct conn *, char **);
int		 conn_ready(const struct conn *);
int		 conn_fd(const struct conn *);
const char	*conn_name(const struct conn *);
int		 conn_events(const struct conn *, int);
size_t		 conn_pending(const struct conn *);
ssize_t		 conn_read(struct conn *, void *, size_t);
ssize_t		 conn_write(struct conn *, const void *, size_t);
void		 conn_close(struct conn *);

/* cas.c */
#define CAS_SIZE_UNKNOWN	UINT64_MAX
struct cas;
struct cas_writer;
struct cas	*cas_open(const char *, uint64_t, char **);
void		 cas_close(struct cas *);
uint64_t	 cas_generation(const struct cas *);
uint64_t	 cas_total(const struct cas *);
uint64_t	 cas_limit(const struct cas *);
int		 cas_room(const struct cas *, uint64_t, char **);
size_t		 cas_count(const struct cas *);
int		 cas_has(const struct cas *, const char *, uint64_t *);
int		 cas_check(struct cas *, const char *, uint64_t *);
void		 cas_touch(struct cas *, const char *);
int		 cas_open_blob(struct cas *, const char *, uint64_t *);
int		 cas_dup_dirfd(const struct cas *);
int		 cas_open_at(int, const char *);
int		 cas_pin(struct cas *, const char *);
void		 cas_unpin(struct cas *, const char *);
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

/* sync.c */
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

/* ignore.c: .gmuxignore */
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
void		 ignore_set_fast(int);

/* statcache.c */
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

/* remote.c: the client's side of a remote run's files */
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
int		 remote_pull_pattern(const char *, char **);

/* remote-host.c: the host's side of the sync routes */
int		 remote_host_manifest_post(struct cas *, const char *,
		     uint64_t, const void *, size_t, json_t **, char **);
int		 remote_host_load(struct cas *, const char *, struct manifest *,
		     char **);
int		 remote_host_manifest_get(struct cas *, const char *, uint64_t,
		     const char *, json_t **, char **);
int		 remote_host_blob_put(struct cas *, const char *, const char *,
		     const void *, size_t, char **);
int		 remote_host_blob_part(struct cas *, const char *,
		     const char *, uint64_t, uint64_t, const void *, size_t,
		     json_t **, char **);
int		 remote_host_take_begin(struct cas *, const char *,
		     const char *, uint64_t, struct cas_writer **, char **);
int		 remote_host_take_end(struct cas_writer *, const char *,
		     char **);
int		 remote_host_batch(struct cas *, const char *, const void *,
		     size_t, json_t **, char **);
int		 remote_host_tree(struct cas *, const char *, struct manifest *,
		     json_t **, char **);
int		 remote_host_prepare(struct cas *, const char *, const char *,
		     json_t **, char **);
int		 remote_host_pull(struct cas *, int, json_t *,
		     uint64_t, json_t **, char **);

/* remote-local.c: the sync routes in process */
struct remote_local {
	struct cas	*cas;
	uint64_t	 max_upload;
	const char	*jobdir;	/* what pull reads; NULL: no pull */
	void		(*tamper)(char *, size_t);	/* tests: spoil PUTs */
	u_int		 requests, batches, puts, gets;
};
void		 remote_local_io(struct remote_local *, struct remote_io *);

/* remote-net.c: the sync routes over the network, in the CLI */
#define REMOTE_NET_PARALLEL	4	/* large blobs sent at once */
struct remote_net_put {
	char		 digest[DIGEST_HEX];
	int		 fd;
	uint64_t	 size;
	uint64_t	 sent;
};
struct remote_net {
	const struct target *target;
	struct remote_net_put put[REMOTE_NET_PARALLEL];
	u_int		 nput;
	u_int		 requests;
};
void		 remote_net_io(struct remote_net *, struct remote_io *);

/* announce.c: serve --announce's datagram, made and checked */
#define ANNOUNCE_MAX		1024	/* bytes */
#define ANNOUNCE_NAME_MAX	64
#define ANNOUNCE_ADDRS_MAX	8
#define ANNOUNCE_PORT		7071
struct announce {
	char		 name[ANNOUNCE_NAME_MAX];
	uint16_t	 port;
	char		 addrs[ANNOUNCE_ADDRS_MAX][16];	/* dotted IPv4 */
	u_int		 naddrs;
	char		 pin[DIGEST_HEX];
	int64_t		 time;		/* the sender's, ms */
};
char		*announce_format(const struct announce *,
		     const struct tls_identity *, size_t *);
int		 announce_parse(const char *, size_t, struct announce *,
		     char **);

/* remotes.c: the client's hosts */
#define REMOTES_MAX	64
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

/* tree.c: the host's side of moving a tree */
int		 tree_pin(struct cas *, const struct manifest *, char **);
void		 tree_unpin(struct cas *, const struct manifest *, size_t);
int		 tree_materialize_at(int, int, const struct manifest *,
		     const char *, const _Atomic int *, char **);
void		 tree_collect(const char *, const char *);
int		 tree_materialize(struct cas *, const struct manifest *,
		     const char *, char **);

/* prepare.c: a remote job's tree, made by a helper thread */
#define PREPARE_REASON	"preparing its files"
struct prepare	*prepare_new(struct cas *, struct manifest *, const char *,
		     const char *, const char *, char **);
typedef void	(*prepare_cb)(int, const char *, void *);
void		 prepare_run(struct prepare *, prepare_cb, void *);
void		 prepare_discard(const char *);
void		 prepare_collect(const char *, const char *);
int		 prepare_submit(struct prepare *, struct job *, u_int, int *,
		     char **);
void		 prepare_restore(void);
void		 prepare_shutdown(void);
int		 tree_pull_at(struct cas *, int, char *const *, uint64_t,
		     struct manifest *, char **);

/* overlay.c: a job's tree as an overlay in its own namespaces */
struct overlay;
struct overlay	*overlay_create(const char *, const char *, const char *,
		     const char *);
void		 overlay_free(struct overlay *);
char		*overlay_podman_volume(const struct overlay *, const char *);
int		 overlay_enter(const struct overlay *, const char **);
int		 overlay_view(const char *, const char *, char **);
int		 overlay_ready(char **);

/* worktree.c: where a job with a synced tree runs, and for how long */
int		 worktree_reuse(u_int, const char *, char **);
int		 worktree_prepare(u_int, struct cas *, const char *,
		     struct manifest *, struct prepare **, char **);
void		 worktree_pull_pending(u_int);
void		 worktree_pulled(u_int);
int		 worktree_overlay(u_int, struct overlay **, char **);
int		 worktree_open(u_int, char **);
void		 worktree_remove(u_int);
void		 worktree_tick(void);

/* progress.c */
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

/* ---- The daemon ---------------------------------------------------------- */

/* server.c: the daemon */
struct event_base;
extern struct event_base *server_base;
extern struct cards server_cards;
extern int	 server_audit_report_only;
extern struct ledger *server_ledger;
extern int64_t	 server_started;
int		 server_main(const char *, int);

/* server-sched.c: the daemon's side of the scheduler */
extern struct sched *server_sched;
int		 server_sched_init(char **);
void		 server_sched_apply(struct sched_out *);
int		 server_sched_submit(struct job *, u_int, int *, char **);
int		 server_sched_check(struct job *, u_int, int *, char **);
int		 server_sched_enter(struct job *, int *, char **);
void		 server_sched_hold(struct job *, const char *);
void		 server_sched_refused(struct job *, const char *);
int		 server_sched_gone(struct job *);
int		 server_sched_release(struct job *, enum job_state,
		     struct sched_out *);
int		 server_sched_resize(struct job *, u_int, uint64_t, char **);
void		 server_sched_tick(void);
void		 server_sched_restore(void);
void		 server_sched_resume(void);
void		 server_sched_card(u_int, u_int *, uint64_t *, u_int *);

/* server-over.c: --mode overcommit on this host */
int		 server_over_is(const struct job *);
int		 server_over_check(const struct job *, int *, char **);
int		 server_over_admit(struct job *, char **);
void		 server_over_release(const struct job *);
void		 server_over_restore(const struct job *);
int		 server_sched_where(const struct job *, u_int *, char **);

/* jobspec-host.c: what this host makes of a job's directives */
int		 jobspec_host_check(struct job *, int *, char **);
uint64_t	 jobspec_host_cards(const struct jobspec *);
int		 jobspec_type_is(const char *, const char *, const char *);
int		 jobspec_tagged(const char *, const char *);
void		 jobspec_host_env(const struct job *, char ***);
int		 jobspec_host_paths(const struct job *, char **, char **,
		     char **);
void		 jobspec_host_tick(void);

/* job-array.c, job-array-store.c: arrays, one record until elements start */
struct job_array;
int		 job_array_create(struct jobreq *, const char *, json_t **,
		     int *, char **);
struct job_array *job_array_find(const char *);
void		 job_array_started(struct job *);
void		 job_array_ended(struct job *);
void		 job_array_load(void);
u_int		 job_array_prune(int64_t);

/* server-api.c: the route table and request helpers */
struct evhttp;
/*
 * Who a request is and how it came, resolved once where it is dispatched
 * and handed to every handler: the one place tenants and a cluster's
 * proxied requests read it from.
 */
enum api_transport {
	API_UNIX,		/* the daemon's socket */
	API_TCP,		/* another machine, with a token */
};
struct api_who {
	enum api_transport transport;
	const char	*owner;		/* whom it acts as; valid during it */
	int		 admin;		/* may act on every owner's jobs */
	int		 confined;	/* its paths and jobs are confined */
	int		 proxied;	/* relayed by a cluster peer (0 yet) */
	int		 ungranted;	/* its token lacks this member's
					   cluster (cluster-grant.c) */
};
void		 api_dispatch(struct evhttp_request *,
		     const struct api_who *);
const char	*api_me(void);
int		 api_may(const struct api_who *, const char *);
int		 api_may_job(const struct api_who *, const struct job *);
void		 api_setup(struct evhttp *);
json_t		*api_body(struct evhttp_request *, char **);
struct cas	*api_remote_cas(struct evhttp_request *);
uint64_t	 api_size_setting(const char *, uint64_t);
void		 api_send(struct evhttp_request *, int, struct evbuffer *);
void		 api_reply(struct evhttp_request *, int, json_t *);
void		 api_error(struct evhttp_request *, int, const char *, ...)
		     printflike(3, 4);
const char	*api_query(struct evhttp_request *, const char *);
int		 api_query_flag(struct evhttp_request *, const char *);

/* api-job.c, api-card.c: the handlers */
void		 api_jobs_list(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_jobs_create(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_job_get(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_job_stop(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_job_log(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_job_patch(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_job_explain(struct evhttp_request *, const char *,
		     const struct api_who *);
struct job	*api_job_lookup(struct evhttp_request *, const char *,
		     const struct api_who *);
int		 api_stop_body(struct evhttp_request *, int64_t *, int *,
		     json_t **);

/* api-workspace.c: a workspace's images (issue 17) */
void		 api_job_save(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_images_list(struct evhttp_request *, const char *,
		     const struct api_who *);
/* api-build.c: a devcontainer's build for a remote owner */
void		 api_builds_post(struct evhttp_request *, const char *,
		     const struct api_who *);
int		 api_build_body(json_t *, const char *, const char **,
		     char **, char **, char **, char **);
void		 api_build_restore(void);

/* api-array.c, api-queue.c: arrays, their elements' status, the queue */
int		 api_array_get(struct evhttp_request *, const char *,
		     const struct api_who *);
int		 api_array_stop(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_array_list(json_t *, int, const struct api_who *);
int		 api_array_mine(const char *, const struct api_who *);
void		 api_job_status(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_queue_list(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_cards_list(struct evhttp_request *, const char *,
		     const struct api_who *);
json_t		*api_cards_json(void);
double		 card_util(const struct card *, u_int);
void		 api_version(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_usage(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_usage_prune(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_usage_verify(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_metrics(struct evhttp_request *, const char *,
		     const struct api_who *);

/* api-tenant.c: the tenants' routes */
void		 api_tenants_list(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_tenant_quota(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_tenant_map(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_tenant_rm(struct evhttp_request *, const char *,
		     const struct api_who *);

/* cluster.c, api-cluster.c: a member of a cluster on etcd (cluster-int.h) */
int		 cluster_init(struct event_base *, char **);
int		 cluster_check(char **);
void		 cluster_shutdown(void);
void		 api_cluster_get(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_cluster_members(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_cluster_leader(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_cluster_queue(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_cluster_jobs(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_cluster_job(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_cluster_submit(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_cluster_stop(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_cluster_terminal(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_cluster_port(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_cluster_log(struct evhttp_request *, const char *,
		     const struct api_who *);

/* cluster-grant.c: a token's clusters, enforced (docs/cluster.md) */
const char	*cluster_grant_own(void);
int		 cluster_grant_ok(const struct token *);
int		 cluster_grant_refuse(struct evhttp_request *, const char *,
		     const struct api_who *);
int		 cluster_grant_runs_cluster_job(const struct job *);
int		 cluster_grant_hides(const struct api_who *,
		     const struct job *);

/* cluster-job.c: how long a job's keeper may be without a daemon */
int64_t		 cluster_job_orphan_ms(const struct job *);

/* cluster-peer.c: members calling members (docs/cluster.md) */
#define PEER_OWNER_HEADER	"X-Gmux-Peer-Owner"
#define PEER_ADMIN_HEADER	"X-Gmux-Peer-Admin"
const char	*cluster_peer_conn(struct bufferevent *);
int		 cluster_peer_owner_ok(const char *);
struct bufferevent *cluster_peer_bev(const char *, char **, u_int *,
		     char **);
const char	*cluster_peer_self(void);
/* term-peer.c: a cluster job's terminal or port, on another member */
#define TERM_UPGRADE	"gmux-term/1"	/* docs/terminals.md */
#define PORT_UPGRADE	"gmux-port/1"
void		 term_peer_relay(const char *, const char *,
		     const struct api_who *, struct evhttp_request *,
		     const char *);
/* cluster-job.c */
const char	*cluster_job_entry(u_int, const char **);
/* cluster-usage.c */
void		 cluster_usage(struct evhttp_request *, const struct api_who *);
int		 cluster_usage_merges(struct evhttp_request *,
		     const struct api_who *);
/* cluster-workers.c */
void		 cluster_workers(struct evhttp_request *,
		     const struct api_who *, json_t *);

/* server-tls.c: the TCP listener, TLS and tokens */
extern const char *server_tls_addr;
struct tokens	*server_tls_tokens(char **);
char		*server_tls_invite(const char *);
int		 server_tls_grant_own(const char *, char **);
int		 server_tls_start(char **);
int		 server_tls_where(char **, const char **);
void		 server_tls_stop(void);
u_int		 server_tls_port(void);
const char	*server_tls_host(void);
const struct tls_identity *server_tls_identity(void);

/* server-announce.c: serve --announce (docs/remote.md, "Discovery") */
extern int	 server_announce_on;
int		 server_announce_start(char **);
void		 server_announce_stop(void);

/* server-guard.c: a TCP connection's limits before its token */
void		 server_guard_init(void);
struct bufferevent *server_guard_bev(struct event_base *, void *);

/* api-remote.c, api-token.c: the routes of remote runs */
void		 api_remote_close(void);
struct cas	*api_remote_store(char **);
void		 api_remote_answer(struct evhttp_request *, int, json_t *,
		     char *);
void		 api_sync_manifest_get(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_sync_manifest_post(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_blobs_post(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_blob_put(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_blob_get(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_job_pull(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_image_get(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_images_post(struct evhttp_request *, const char *,
		     const struct api_who *);
struct prepare;
int		 api_remote_job(struct evhttp_request *, const struct api_who *,
		     struct jobreq *, u_int, struct prepare **);
int		 api_remote_cluster_tree(struct jobreq *, u_int,
		     struct prepare **, char **);
int		 api_remote_take_manifest(const char *, const void *, size_t,
		     json_t **, char **);
int		 api_remote_take_blob(const char *, const char *, const void *,
		     size_t, char **);
struct cas_writer;
int		 api_remote_take_begin(const char *, const char *, uint64_t,
		     struct cas_writer **, char **);
int		 api_remote_have_tree(const char *, json_t **, char **);
void		 api_remote_job_undo(u_int);
json_t		*api_remote_warnings(const struct jobreq *);
void		 api_tokens_list(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_tokens_add(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_token_revoke(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_token_grant(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_join(struct evhttp_request *, const char *,
		     const struct api_who *);

/* api-task.c: the task broker's routes (docs/tasks.md) */
void		 api_task_value_put(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_task_value_get(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_tasks_connect(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_workers_list(struct evhttp_request *, const char *,
		     const struct api_who *);
int		 task_worker_job(struct jobreq *, char **);
void		 api_tasks_peer_worker(struct evhttp_request *, const char *,
		     const struct api_who *);
/* api-term.c: terminals and ports (docs/terminals.md) */
void		 api_job_terminal(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_job_port(struct evhttp_request *, const char *,
		     const struct api_who *);

/* ui.c, ui-events.c, ui-usage.c: the dashboard's routes (docs/ui.md) */
extern int	 ui_on;
/* Set by the cluster's code: its members and leader (docs/ui.md), a new
 * reference, or NULL on a host that is not clustered. */
extern json_t	*(*ui_cluster_json)(void);
void		 ui_start(void);
int		 ui_tls_public(struct evhttp_request *);
int		 ui_tls_cookie(struct evhttp_request *, char **);
int		 ui_head_cookie_ok(const struct http_head *);
void		 ui_get(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 ui_login(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 ui_logout(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_session(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_events(struct evhttp_request *, const char *,
		     const struct api_who *);
void		 api_usage_series(struct evhttp_request *, const char *,
		     const struct api_who *);

/* ---- The client ---------------------------------------------------------- */

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
	/* the body's "error", or a transport error */
	char		*error;
	int		 lost;		/* connected, then no reply: the
					   request may have been acted on */
};
struct client_stream_cbs {
	int		 (*frame)(const struct frame *, void *);
	int		 (*interrupt)(void *);	/* Ctrl-C; nonzero ends it */
	void		*arg;
};
struct target;
struct client_req {			/* one of several requests at once */
	const struct target *target;	/* NULL: the local daemon */
	const char	*method;
	const char	*path;
	const char	*ctype;		/* of the body; NULL: JSON */
	const void	*body;
	size_t		 len;
	int		 bodyfd;	/* or the body is bodysize bytes of */
	uint64_t	 bodyoff;	/* this fd from bodyoff; -1: none */
	uint64_t	 bodysize;
	int		 sinkfd;	/* a 2xx body goes here, or -1 */
	const struct client_stream_cbs *cbs;	/* a 200 reply is frames */
	int		 connect_ms;	/* to connect, shake hands (0: 10s) */
	int		 answer_ms;	/* to the answer's first byte (0: -) */
	struct client_reply reply;
	int		 stopped;	/* a callback ended it */
	int		 late;		/* it failed for a deadline */
	int64_t		 took_us;	/* from its start to its end */
};
int		 client_daemon_running(void);
int		 client_call(const char *, const char *, json_t *,
		     struct client_reply *);
int		 client_call_at(const struct target *, const char *,
		     const char *, json_t *, struct client_reply *);
void		 client_reply_clear(struct client_reply *);
int		 client_stream(const char *, const char *, json_t *,
		     const struct client_stream_cbs *, struct client_reply *);
int		 client_stream_at(const struct target *, const char *,
		     const char *, json_t *, const struct client_stream_cbs *,
		     struct client_reply *);
void		 client_req_init(struct client_req *, const struct target *,
		     const char *, const char *);
void		 client_multi(struct client_req *, u_int, int);
int		 client_request(struct client_req *);
void		 client_catch_interrupts(void);
int		 client_take_interrupt(void);
int		 client_ok(struct client_reply *, const char *);
dead void	 client_die(struct client_reply *, const char *);

/* stream.c: a job's output on the terminal (run, logs, attach) */
#define STREAM_LOGS	0	/* Ctrl-C quits */
#define STREAM_RUN	1	/* Ctrl-C stops the job; again, detaches */
#define STREAM_ATTACH	2	/* Ctrl-C detaches */
struct stream {
	char		 job[128];	/* if empty, from the first frame */
	int		 mode;
	uint64_t	 offset;	/* output bytes shown so far */
	int		 ended;		/* the exit frame came */
	int		 exit_code;	/* -1 if the job has none */
	char		 state[16];
	int		 interrupts;
	int		 detached;
	int		 waited;	/* it was queued: say when it starts */
	int		 stop_pending;	/* Ctrl-C came before the job's id */
	int		 write_failed;	/* errno of a failed write of output */
	long		 refused;	/* the HTTP status that refused it */
	int		 cluster;	/* a cluster job: /v1/cluster/jobs */
	char		 gang[128];	/* job is this gang's part: a Ctrl-C
					   stops the gang */
};
void		 stream_init(struct stream *, const char *, int);
int		 stream_interrupt(void *);
int		 stream_run(struct stream *, const char *, const char *,
		     json_t *, int);

/* hosts.c: where a command goes, local or remote */
struct remote;
void		 hosts_choose(int, const char *);
int		 hosts_remote(void);
int		 hosts_names_remote(const char *);
u_int		 hosts_candidates(const struct remote **, u_int);
u_int		 hosts_configured(const struct remote **, u_int);
int		 hosts_fixed(void);
void		 hosts_skipped(const struct remote *,
		     const struct client_reply *);
int		 hosts_call(const char *, const char *, json_t *,
		     struct client_reply *);
int		 hosts_stream(const char *, const char *, json_t *,
		     const struct client_stream_cbs *, struct client_reply *);

/* hosts-slow.c: hosts that did not answer in time, asked last */
u_int		 hosts_slow_parse(char *, int64_t);
void		 hosts_slow_forget(void);
int		 hosts_slow(const struct remote *);
void		 hosts_slow_deadlines(const struct remote *,
		     struct client_req *);
char		*hosts_slow_note(const struct remote *);
void		 hosts_slow_heard(const struct remote *,
		     const struct client_req *);

/* remote-probe.c: what each host says of itself (remote ls, version) */
struct remote_probe {
	const struct remote *rm;
	char		*error;		/* NULL if it answered */
	json_t		*version;	/* GET /v1/version's body */
	json_t		*cards;		/* GET /v1/cards's body */
	int64_t		 rtt_us;	/* one request on its connection */
};
struct remote_free {
	u_int		 cards;
	double		 share_free;	/* summed over its cards */
	uint64_t	 mem_free;
	uint64_t	 memory;
	u_int		 jobs;		/* running on its cards */
};
void		 remote_probe(struct remote_probe *, u_int, int);
void		 remote_probe_free(const struct remote_probe *,
		     struct remote_free *);
void		 remote_probe_clear(struct remote_probe *, u_int);

/* run-remote.c: gmux run on remote hosts */
#define RUN_DETACH	0x1	/* run -d */
#define RUN_QUIET	0x2	/* run -q */
int		 run_remote(json_t *, int, char **);
int		 run_remote_start(const struct remote *, json_t *, const char *,
		     const char *, json_t **);
int		 run_remote_sync(const struct remote *, const char *, int,
		     const char *, char *);

/* run-cluster.c: gmux run from a client, as a cluster job */
int		 run_cluster_wanted(json_t *);
int		 run_cluster(json_t *, int, char **);

/* run-image.c: images that travel, the client's side */
int		 run_image(const struct remote *, json_t *);
void		 run_why(const struct stream *);	/* cmd-run.c */
int		 run_retry(const char *, struct client_reply *); /* cmd-run.c */
int		 run_refused(long);			/* cmd-run.c */
char		*run_post(json_t *, const char *, int *); /* cmd-run.c */
int		 run_detached(json_t *, const char *);	/* cmd-run.c */
json_t		*run_request(int, char **, int *, char ***); /* cmd-run.c */

/* ---- Commands ------------------------------------------------------------ */

/* cmd.c: the command table */
struct cmd_entry {
	const char	*name;
	const char	*args;		/* synopsis after the name */
	const char	*help;		/* one line */
	const char	*options;	/* option lines for --help */
	int		 (*exec)(int, char **);
	int		 hidden;
	int		 here;		/* this machine only: no --remote */
};
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
json_t		*cmd_call(const struct cmd_entry *, const char *, const char *,
		     json_t *);
json_t		*cmd_call_here(const struct cmd_entry *, const char *,
		     const char *, json_t *);
int		 cmd_cluster_id(const char *);	/* cmd-cluster.c */
int		 cmd_cluster_job_at(const struct target *, const char *);
int		 cmd_cluster_member(const struct cmd_entry *);
void		 cmd_cluster_ps_below(int);
int		 cmd_cluster_ended(json_t *);
void		 cmd_cluster_tree(json_t *);

/* cmd-*.c: one command each */
extern const struct cmd_entry cmd_serve_entry;
extern const struct cmd_entry cmd_run_entry;
extern const struct cmd_entry cmd_ps_entry;
extern const struct cmd_entry cmd_logs_entry;
extern const struct cmd_entry cmd_attach_entry;
extern const struct cmd_entry cmd_stop_entry;
extern const struct cmd_entry cmd_resize_entry;
extern const struct cmd_entry cmd_explain_entry;
extern const struct cmd_entry cmd_cards_entry;
extern const struct cmd_entry cmd_top_entry;
extern const struct cmd_entry cmd_usage_entry;
extern const struct cmd_entry cmd_version_entry;
extern const struct cmd_entry cmd_remote_entry;
extern const struct cmd_entry cmd_token_entry;
extern const struct cmd_entry cmd_tenant_entry;
extern const struct cmd_entry cmd_workspace_entry;
extern const struct cmd_entry cmd_cluster_entry;
extern const struct cmd_entry cmd_help_entry;
extern const struct cmd_entry cmd_submit_entry;
extern const struct cmd_entry cmd_status_entry;
extern const struct cmd_entry cmd_queue_entry;
extern const struct cmd_entry cmd_workers_entry;
extern const struct cmd_entry cmd_sync_entry;	/* cmd-sync.c */
extern const struct cmd_entry cmd_shell_entry;
extern const struct cmd_entry cmd_port_entry;
extern const struct cmd_entry cmd_ui_entry;
int		 cmd_cluster_queue(int);	/* gmux queue on a member */
extern const struct cmd_entry cmd_completion_entry;
extern const struct cmd_entry cmd_doctor_entry;
extern const struct cmd_entry cmd_setup_entry;

#endif /* GMUX_H */
