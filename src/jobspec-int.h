/*
 * jobspec-int.h: what the files of job files, directives and arrays share
 * among themselves (jobspec*.c, job-array.c, api-array.c, jobfile.c,
 * runopt.c and their commands); what crosses to other families is in
 * gmux.h.
 */

#ifndef JOBSPEC_INT_H
#define JOBSPEC_INT_H

enum {
	ELEM_NONE,		/* not made yet */
	ELEM_QUEUED,
	ELEM_RUNNING,
	ELEM_ENDED,
	ELEM_SKIPPED,		/* stopped before it was made */
};

struct job_array {
	u_int		 id;
	char		 name[16];
	char		*owner;
	struct jobreq	 req;		/* every element's, and the payloads */
	struct array_spec set;
	u_int		 next;		/* positions made (or skipped) so far */
	u_char		*st;		/* by position: ELEM_* */
	u_int		*ids;		/* by position: the element's job id */
	u_int		 nqueued;
	u_int		 nrunning;
	u_int		 nended;
	u_int		 nfailed;	/* ended not with exit code 0 */
	u_int		 nskipped;
	int		 max_exit;
	int		 cancelled;	/* stopped: no more elements */
	int		 dirty;		/* may make elements */
	int64_t		 created;
	int64_t		 ended;
	TAILQ_ENTRY(job_array) entry;
};
TAILQ_HEAD(job_arrays, job_array);
extern struct job_arrays all_arrays;

/* jobspec-host.c */
const char	*jobspec_host_name(void);

/* job-array.c */
struct job_array *job_array_new(u_int, const char *, struct jobreq *,
		     char **);
void		 job_array_kick(struct job_array *);
void		 job_array_env(const struct job *, char ***);
void		 job_array_count_end(struct job_array *, u_int,
		     const struct job *);
int		 job_array_stop(struct job_array *, int64_t);
int		 job_array_cancel(const char *, const char *, int *, char **);

/* cmd-run.c */
struct cmd_entry;
void		 run_request_here(const struct cmd_entry *, json_t *, int,
		     char **);

/* cmd-status.c */
int		 status_wait(const char *);

/* runopt.c: gmux run's request flags, for run and job files */
#define RUNOPT_BASE	0x1000	/* getopt's val of flag 0 */
struct option;
const struct option *runopt_options(struct option *, u_int,
		     const struct option *, u_int);
int		 runopt_find(const char *);
int		 runopt_has_arg(int);
int		 runopt_apply(json_t *, int, const char *, char **);
/* The directives' help lines (gmux run and gmux submit show them). */
#define RUNOPT_HELP \
    "  --gpus [TYPE:]N      N cards of a vendor or model (nvidia:1, " \
    "rtx4090:2);\n" \
    "                       whole cards unless --share is given\n" \
    "  --cpus N             CPUs it needs (a host checks, a cluster " \
    "reserves)\n" \
    "  --ram SIZE           RAM it needs (a host checks, a cluster " \
    "reserves)\n" \
    "  --vram SIZE          free memory it needs on each card\n" \
    "  --mode MODE          exclusive (whole cards), shared (the default)" \
    "\n                       or overcommit (on measured use, nothing " \
    "reserved)\n" \
    "  --server NAME        on this member only\n" \
    "  --partition TAG      on a member with this tag (TAGS in its " \
    "config)\n" \
    "  --nodes N            on N members at once (a cluster's gang)\n" \
    "  --job-name NAME      a name for it (gmux ps, %x in --output)\n" \
    "  --time LIMIT         stopped once it has run this long (30m, 2h, " \
    "1:30:00)\n" \
    "  --output FILE        stdout to FILE too (%j job, %A array, %a " \
    "index, %x name)\n" \
    "  --error FILE         stderr to FILE too (the same patterns)\n" \
    "  --chdir DIR          run in DIR instead of this directory\n" \
    "  --array SPEC         an array: 0-15%4, 1-9:2, 1,3,5 (% at most N " \
    "at once)\n" \
    "  --publish PORT       the owner may reach this port (gmux port; " \
    "repeatable)\n" \
    "  --image IMAGE        in a container of this local image (podman; " \
    "docs/\n" \
    "                       containers.md)\n" \
    "  --container IMAGE    the same (a job file's #GMUX --container)\n"

/* jobfile.c: a job file's #GMUX and #SBATCH directives */
struct jobfile_dir {
	u_int		 line;
	char		*name;		/* gmux run's flag, without -- */
	char		*value;		/* NULL: a flag without one */
	const char	*sbatch;	/* the #SBATCH flag it came from */
};
struct jobfile {
	struct jobfile_dir *v;
	u_int		 n;
	char		**errors;	/* "line 3: ...", one a bad line */
};
void		 jobfile_init(struct jobfile *);
void		 jobfile_free(struct jobfile *);
int		 jobfile_parse(const char *, size_t, struct jobfile *);
int		 jobfile_apply(struct jobfile *, json_t *);

/* api-array.c */
json_t		*api_array_json(const struct job_array *);

/* job-array-store.c: arrays in the daemon's records */
void		 job_array_save(struct job_array *, int);

#endif
