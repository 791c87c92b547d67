/*
 * worktree.c: where a job with a synced tree runs, and how long that
 * stays.  Where this kernel lets a job mount an overlay in its own user
 * and mount namespace (overlay.c), the job runs over a stored tree,
 * $GMUX_HOME/trees/DIGEST, made once per manifest and shared by every run
 * of it: a re-run copies nothing, and the host's disk grows by what the
 * job writes (its upper directory).  The stored trees' files are links to
 * trees/objects/DIGEST.MODE, one inode per content and mode (often the
 * blob store's own), so a tree with one file changed costs that file and
 * its directories (tree.c).  Elsewhere the job gets a copy of its own
 * (tree.c: reflinks where the filesystem has them).  A job's directory
 * then holds:
 *
 *	work/	where it runs (over an overlay, the empty mount point)
 *	upper/	what it wrote, ovl/ overlayfs's scratch (overlay only)
 *	tree	the stored tree's digest (overlay only)
 *	pull	a pull is pending (the client asked for one)
 *
 * An ended job's work tree goes REMOTE_WORK_RETENTION (24 h) after it
 * ended, unless a pull is pending; a stored tree goes when no job's work
 * tree needs it any more.
 */

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define WORKTREE_RETENTION	(24 * 3600 * 1000LL)
#define WORKTREE_EVERY_MS	(60 * 1000)	/* the longest between sweeps */

static const char *const worktree_parts[] = {
	"work", "upper", "ovl", "tree", "pull"
};

static char	*worktree_trees;	/* $GMUX_HOME/trees */
static char	*worktree_objects;	/* trees/objects: their files */
static char	*worktree_blobs;	/* the blob store (api-remote.c's) */
static int64_t	 worktree_last;		/* the last sweep */
static u_int	 worktree_gone;		/* names trees on their way out */

/* The stored trees' directory, made (and its leftovers cleared) once. */
static const char *
worktree_dir(void)
{
	char	*tmp;

	if (worktree_trees != NULL)
		return (worktree_trees);
	xasprintf(&worktree_trees, "%s/trees", path_home());
	if (mkdir(worktree_trees, 0700) != 0 && errno != EEXIST)
		log_warn("%s: %s", __func__, worktree_trees);
	/* What a stopped daemon was making or removing. */
	xasprintf(&tmp, "%s/tmp", worktree_trees);
	confine_remove(tmp);
	if (mkdir(tmp, 0700) != 0)
		log_warn("%s: %s", __func__, tmp);
	free(tmp);
	xasprintf(&worktree_objects, "%s/objects", worktree_trees);
	xasprintf(&worktree_blobs, "%s/blobs", path_home());
	if (mkdir(worktree_objects, 0700) != 0 && errno != EEXIST)
		log_warn("%s: %s", __func__, worktree_objects);
	/*
	 * Objects only a tree in tmp/ linked to may not have reached the
	 * disk: they go before any tree is made (the thread's first item).
	 */
	prepare_collect(worktree_objects, worktree_blobs);
	return (worktree_trees);
}

/* The stored tree of manifest digest d; the caller frees it. */
static char *
worktree_stored(const char *d)
{
	char	*s;

	xasprintf(&s, "%s/%s", worktree_dir(), d);
	return (s);
}

/* The digest of the stored tree job id runs over, in d; -1 if none. */
static int
worktree_digest(u_int id, char d[DIGEST_HEX])
{
	char	*path;
	ssize_t	 n;
	int	 fd;

	path = path_job_file(id, "tree");
	fd = open(path, O_RDONLY|O_NOFOLLOW|O_CLOEXEC);
	free(path);
	if (fd == -1)
		return (-1);
	n = read(fd, d, DIGEST_HEX - 1);
	close(fd);
	if (n != DIGEST_HEX - 1)
		return (-1);
	d[n] = '\0';
	return (digest_valid(d) ? 0 : -1);
}

/* Makes the job's directory part name (0700). */
static int
worktree_mkdir(u_int id, const char *name, char **cause)
{
	char	*path;
	int	 rc;

	path = path_job_file(id, name);
	if ((rc = mkdir(path, 0700)) != 0)
		xasprintf(cause, "%s: %s", path, strerror(errno));
	free(path);
	return (rc);
}

/* Writes the job's small file name (0600) holding s. */
static int
worktree_note(u_int id, const char *name, const char *s, char **cause)
{
	char	*path;
	int	 rc;

	path = path_job_file(id, name);
	rc = write_file_replace(path, s, strlen(s), 0600, cause);
	free(path);
	return (rc);
}

/* Whether the stored tree of manifest d is there (made whole). */
static int
worktree_have(const char *d)
{
	struct stat	 st;
	char		*stored;
	int		 have;

	stored = worktree_stored(d);
	have = lstat(stored, &st) == 0 && S_ISDIR(st.st_mode);
	free(stored);
	return (have);
}

/* Job id's directories over the stored tree of d (not made yet: *prep). */
static int
worktree_layers(u_int id, const char *d, char **cause)
{
	worktree_remove(id);	/* left by a refused job with this id */
	if (worktree_mkdir(id, "work", cause) != 0 ||
	    worktree_mkdir(id, "upper", cause) != 0 ||
	    worktree_mkdir(id, "ovl", cause) != 0 ||
	    worktree_note(id, "tree", d, cause) != 0)
		return (-1);
	return (0);
}

/*
 * An unchanged re-run: if the stored tree of manifest d is there, sets up
 * job id over it, with no need of the manifest (nor of its blobs): 1.
 * 0 if the tree must be made first (worktree_prepare), -1 with *cause.
 */
int
worktree_reuse(u_int id, const char *d, char **cause)
{
	if (!overlay_ready(NULL) || !worktree_have(d))
		return (0);
	return (worktree_layers(id, d, cause) == 0 ? 1 : -1);
}

/*
 * Sets up job id's work tree from manifest m (digest d) of the store c:
 * over the stored tree, made first if it is not there yet, or in a copy
 * of its own.  Returns 0 with *prep the work for the helper thread (NULL
 * if there is none: the stored tree is there), or -1 with *cause.
 */
int
worktree_prepare(u_int id, struct cas *c, const char *d,
    struct manifest *m, struct prepare **prep, char **cause)
{
	char	*stored, *tmp, *work;

	*prep = NULL;
	if (!overlay_ready(NULL)) {
		work = path_job_file(id, "work");
		*prep = prepare_new(c, m, work, NULL, NULL, cause);
		free(work);
		return (*prep == NULL ? -1 : 0);
	}
	if (worktree_layers(id, d, cause) != 0)
		return (-1);
	if (worktree_have(d))
		return (0);
	stored = worktree_stored(d);
	xasprintf(&tmp, "%s/tmp/%s.%u", worktree_dir(), d, id);
	*prep = prepare_new(c, m, tmp, stored, worktree_objects, cause);
	free(tmp);
	free(stored);
	return (*prep == NULL ? -1 : 0);
}

/* Notes that the client of job id will pull its results. */
void
worktree_pull_pending(u_int id)
{
	char	*cause = NULL;

	if (worktree_note(id, "pull", "1\n", &cause) != 0) {
		log_warnx("%s: j%u: %s", __func__, id, cause);
		free(cause);
	}
}

/* A pull of job id was answered: its work tree may go in time. */
void
worktree_pulled(u_int id)
{
	char	*path;

	path = path_job_file(id, "pull");
	unlink(path);
	free(path);
}

/*
 * What job id's child needs to run over its stored tree: *o (NULL if the
 * job has a tree of its own).  -1 with *cause if it cannot.
 */
int
worktree_overlay(u_int id, struct overlay **o, char **cause)
{
	char	 d[DIGEST_HEX], *stored, *upper, *ovl, *work;
	int	 rc = 0;

	*o = NULL;
	if (worktree_digest(id, d) != 0)
		return (0);
	if (!overlay_ready(cause))
		return (-1);
	stored = worktree_stored(d);
	upper = path_job_file(id, "upper");
	ovl = path_job_file(id, "ovl");
	work = path_job_file(id, "work");
	if (access(stored, F_OK) != 0) {
		xasprintf(cause, "its stored tree %.16s is gone", d);
		rc = -1;
	} else
		*o = overlay_create(stored, upper, ovl, work);
	free(stored);
	free(upper);
	free(ovl);
	free(work);
	return (rc);
}

/*
 * A directory fd of the tree job id left (for a pull): the merged view of
 * its overlay, or its own copy.  -1 with *cause (ENOENT in errno if it
 * has none).
 */
int
worktree_open(u_int id, char **cause)
{
	struct stat	 st;
	char		 d[DIGEST_HEX], *stored, *upper, *work;
	int		 fd;

	work = path_job_file(id, "work");
	if (lstat(work, &st) != 0 || !S_ISDIR(st.st_mode)) {
		free(work);
		xasprintf(cause, "no synced tree to pull from");
		errno = ENOENT;
		return (-1);
	}
	if (worktree_digest(id, d) != 0) {
		fd = open(work, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC);
		if (fd == -1)
			xasprintf(cause, "%s: %s", work, strerror(errno));
		free(work);
		return (fd);
	}
	free(work);
	stored = worktree_stored(d);
	upper = path_job_file(id, "upper");
	fd = overlay_view(stored, upper, cause);
	free(stored);
	free(upper);
	errno = 0;
	return (fd);
}

/*
 * Takes path out of the way at once (into trees/tmp) and removes it off
 * the loop, where it may be big; in the loop if it cannot be moved.
 */
static void
worktree_discard(const char *path)
{
	struct stat	 st;
	char		*to;

	if (lstat(path, &st) != 0)
		return;
	xasprintf(&to, "%s/tmp/gone.%u", worktree_dir(), worktree_gone++);
	if (rename(path, to) == 0)
		prepare_discard(to);
	else
		confine_remove(path);
	free(to);
}

/* Removes job id's work tree and what goes with it. */
void
worktree_remove(u_int id)
{
	char	*path;
	u_int	 i;

	for (i = 0; i < nitems(worktree_parts); i++) {
		path = path_job_file(id, worktree_parts[i]);
		if (i < 3)
			worktree_discard(path);
		else
			unlink(path);
		free(path);
	}
}

/* Whether the ended job j's work tree is due to go at now. */
static int
worktree_due(const struct job *j, int64_t now, int64_t keep)
{
	struct stat	 st;
	char		*path;
	int		 due;

	if (!job_ended(j) || j->ended > now - keep)
		return (0);
	path = path_job_file(j->id, "pull");
	due = lstat(path, &st) != 0;
	free(path);
	if (!due)
		return (0);
	path = path_job_file(j->id, "work");
	due = lstat(path, &st) == 0;
	free(path);
	return (due);
}

/* Whether some job's work tree still runs over the stored tree d. */
static int
worktree_used(const char *d)
{
	struct job	*j;
	char		 jd[DIGEST_HEX];

	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (worktree_digest(j->id, jd) == 0 && strcmp(jd, d) == 0)
			return (1);
	}
	return (0);
}

/* Stored trees no job needs go: out of the way at once, off the loop. */
static void
worktree_collect(void)
{
	struct dirent	*de;
	char		*path;
	DIR		*dir;
	u_int		 n = 0;

	if ((dir = opendir(worktree_dir())) == NULL)
		return;
	while ((de = readdir(dir)) != NULL) {
		if (!digest_valid(de->d_name) || worktree_used(de->d_name))
			continue;
		log_debug("%s: %.16s", __func__, de->d_name);
		xasprintf(&path, "%s/%s", worktree_trees, de->d_name);
		worktree_discard(path);
		free(path);
		n++;
	}
	closedir(dir);
	/* Their files that no other tree links to, once they are gone. */
	if (n != 0)
		prepare_collect(worktree_objects, worktree_blobs);
}

/* The setting, in ms; 0 keeps work trees as long as their jobs. */
static int64_t
worktree_keep(void)
{
	const char	*v = config_get("REMOTE_WORK_RETENTION");
	char		*cause = NULL;
	int64_t		 ms;

	if (v == NULL)
		return (WORKTREE_RETENTION);
	if (parse_duration(v, &ms, &cause) != 0) {
		log_warnx("REMOTE_WORK_RETENTION: %s; using 24h", cause);
		free(cause);
		return (WORKTREE_RETENTION);
	}
	return (ms);
}

/*
 * Each second, from the daemon's tick: now and then (a quarter of the
 * retention, a minute at most) removes the work trees that are due, then
 * the stored trees nothing needs.
 */
void
worktree_tick(void)
{
	struct job	*j;
	int64_t		 now = clock_ms(), keep = worktree_keep(), every;

	every = keep / 4 < WORKTREE_EVERY_MS ? keep / 4 : WORKTREE_EVERY_MS;
	if (keep == 0 || (now - worktree_last < every && now >= worktree_last))
		return;
	worktree_last = now;
	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (!worktree_due(j, now, keep))
			continue;
		log_debug("%s: %s: its work tree goes", __func__, j->name);
		worktree_remove(j->id);
	}
	worktree_collect();
}
