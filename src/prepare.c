/*
 * prepare.c: a remote job's copy of its tree, made off the daemon's loop.
 * Copying ten thousand files takes seconds, and the loop must not stop
 * for them (DESIGN.md decision 1: a helper thread only for blocking work
 * that returns a message to the loop).  POST /v1/jobs checks the tree
 * (cheap: every blob is there) and creates the job at once, queued,
 * "preparing its files"; one helper thread makes the copy; when it is
 * done it says so through an eventfd that the loop watches, and the loop
 * submits the job to the scheduler, or fails it with the reason.  A job
 * stopped meanwhile is not submitted, and its copy goes.
 *
 * What the two share, and how.  The loop pins the tree's blobs before the
 * copy and unpins them when it hears it is over: the store's index and
 * eviction queue (cas.c) are the loop's alone, and a pinned blob's file
 * stays in place.  The thread reads blobs through its own dup of the
 * store's directory fd, from its own copy of the manifest, into the job's
 * work directory, which nothing else writes until the job starts.  The
 * two queues between them are under one mutex; nothing else is shared.
 */

#include <sys/eventfd.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "gmux.h"

enum prepare_kind {
	PREPARE_MAKE,		/* make the tree */
	PREPARE_REMOVE,		/* remove it (a job that will not run) */
	PREPARE_COLLECT,	/* remove stored trees' unused objects */
};

struct prepare {
	enum prepare_kind	 kind;
	u_int			 id;		/* the job's */
	struct cas		*cas;		/* the loop's: to unpin */
	struct manifest		 m;
	char			*workdir;
	char			*final;		/* a stored tree: renamed to */
	char			*objects;	/* its objects' directory */
	char			*blobs;		/* a collect's: the store */
	int			 blobfd;	/* the thread's own */
	int			 rc;
	char			*cause;
	prepare_cb		 done;		/* no job's: told instead */
	void			*arg;
	TAILQ_ENTRY(prepare)	 entry;
};
TAILQ_HEAD(prepares, prepare);

static pthread_t	 prepare_thread;
static int		 prepare_started;
static pthread_mutex_t	 prepare_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	 prepare_cond = PTHREAD_COND_INITIALIZER;
static struct prepares	 prepare_todo = TAILQ_HEAD_INITIALIZER(prepare_todo);
static struct prepares	 prepare_done = TAILQ_HEAD_INITIALIZER(prepare_done);
static _Atomic int	 prepare_stop;
static int		 prepare_efd = -1;
static struct event	*prepare_ev;

static void	prepare_queue(struct prepare *);

/* Frees p; a tree's pins go too (in the loop only). */
static void
prepare_free(struct prepare *p)
{
	if (p->kind == PREPARE_MAKE && p->cas != NULL)
		tree_unpin(p->cas, &p->m, p->m.n);
	manifest_clear(&p->m);
	if (p->blobfd != -1)
		close(p->blobfd);
	free(p->workdir);
	free(p->final);
	free(p->objects);
	free(p->blobs);
	free(p->cause);
	free(p);
}

/*
 * Makes a stored tree (shared by every job over it): in a directory of
 * its own, renamed into place whole, unless an earlier item made it.
 * Unlike a job's copy it outlives the run, and later runs trust it: its
 * files (and the blobs it was made from) are flushed before it is put in
 * place, so a stored tree is whole after a crash, and objects that were
 * not (a tree left in tmp/) are dropped at the next start (worktree.c).
 */
static void
prepare_stored(struct prepare *p)
{
	int	 objfd;

	if (access(p->final, F_OK) == 0)
		return;
	if ((objfd = open(p->objects, O_RDONLY|O_DIRECTORY|O_CLOEXEC)) == -1)
		log_warn("%s: %s", __func__, p->objects);
	p->rc = tree_materialize_at(p->blobfd, objfd, &p->m, p->workdir,
	    &prepare_stop, &p->cause);
	if (p->rc == 0 && syncfs(objfd != -1 ? objfd : p->blobfd) != 0) {
		xasprintf(&p->cause, "syncfs: %s", strerror(errno));
		p->rc = -1;
	}
	if (objfd != -1)
		close(objfd);
	if (p->rc == 0 && rename(p->workdir, p->final) != 0) {
		xasprintf(&p->cause, "%s: %s", p->final, strerror(errno));
		p->rc = -1;
	}
	if (p->rc != 0)
		confine_remove(p->workdir);
}

/* The thread's work on one item: it touches p and the disk only. */
static void
prepare_work(struct prepare *p)
{
	if (p->kind == PREPARE_MAKE && p->final != NULL)
		prepare_stored(p);
	else if (p->kind == PREPARE_MAKE) {
		p->rc = tree_materialize_at(p->blobfd, -1, &p->m, p->workdir,
		    &prepare_stop, &p->cause);
		if (p->rc != 0)
			confine_remove(p->workdir);
	} else if (p->kind == PREPARE_COLLECT)
		tree_collect(p->workdir, p->blobs);
	else
		confine_remove(p->workdir);
}

static void *
prepare_main(void *arg)
{
	struct prepare	*p;
	uint64_t	 one = 1;

	for (;;) {
		/* idle while it waits: a keeper may be forked (threads.c) */
		thread_idle();
		pthread_mutex_lock(&prepare_lock);
		while (TAILQ_EMPTY(&prepare_todo) &&
		    !atomic_load(&prepare_stop))
			pthread_cond_wait(&prepare_cond, &prepare_lock);
		p = atomic_load(&prepare_stop) ? NULL :
		    TAILQ_FIRST(&prepare_todo);
		if (p != NULL)
			TAILQ_REMOVE(&prepare_todo, p, entry);
		pthread_mutex_unlock(&prepare_lock);
		thread_busy();
		if (p == NULL)
			break;
		prepare_work(p);
		pthread_mutex_lock(&prepare_lock);
		TAILQ_INSERT_TAIL(&prepare_done, p, entry);
		if (write(prepare_efd, &one, sizeof one) == -1 &&
		    errno != EAGAIN)
			fatal("eventfd");
		pthread_mutex_unlock(&prepare_lock);
	}
	return (NULL);
}

/* Is j a job whose tree is on its way (it has no other life yet)? */
static int
prepare_waiting(const struct job *j)
{
	return (j->state == JOB_QUEUED && j->reason != NULL &&
	    strcmp(j->reason, PREPARE_REASON) == 0);
}

/* Its tree is there: the job goes to the scheduler.  -1 if refused. */
static int
prepare_ready(struct job *j)
{
	char	*cause = NULL;
	int	 code;

	free(j->reason);
	j->reason = NULL;
	log_debug("%s: %s: its files are ready", __func__, j->name);
	if (server_sched_submit(j, j->id, &code, &cause) == 0)
		return (0);
	server_sched_refused(j, cause);
	free(cause);
	return (-1);
}

/* In the loop: what the thread finished. */
static void
prepare_finish(struct prepare *p)
{
	struct job	*j;
	char		*why;

	if (p->kind != PREPARE_MAKE) {
		prepare_free(p);
		return;
	}
	tree_unpin(p->cas, &p->m, p->m.n);
	p->cas = NULL;
	manifest_clear(&p->m);
	if (p->done != NULL) {
		p->done(p->rc, p->cause, p->arg);
		prepare_free(p);
		return;
	}
	if ((j = job_find_id(p->id)) == NULL || !prepare_waiting(j))
		log_debug("%s: j%u was stopped while its files were prepared",
		    __func__, p->id);
	else if (p->rc != 0) {
		xasprintf(&why, "its files could not be prepared: %s",
		    p->cause);
		log_warnx("%s: %s: %s", __func__, j->name, why);
		server_sched_refused(j, why);
		free(why);
	} else if (prepare_ready(j) == 0) {
		prepare_free(p);
		return;
	}
	/*
	 * It will not run in its tree: the tree goes (a failed one is gone;
	 * a stored one stays for others, until nothing needs it, and the
	 * job's own layers over it go).
	 */
	if (p->final != NULL)
		worktree_remove(p->id);
	if (p->rc != 0 || p->final != NULL) {
		prepare_free(p);
		return;
	}
	p->kind = PREPARE_REMOVE;
	prepare_queue(p);
}

static void
prepare_done_cb(evutil_socket_t fd, short events, void *arg)
{
	struct prepares	 done = TAILQ_HEAD_INITIALIZER(done);
	struct prepare	*p;
	uint64_t	 n;

	if (read(fd, &n, sizeof n) == -1 && errno != EAGAIN)
		log_warn("%s: eventfd", __func__);
	pthread_mutex_lock(&prepare_lock);
	TAILQ_CONCAT(&done, &prepare_done, entry);
	pthread_mutex_unlock(&prepare_lock);
	while ((p = TAILQ_FIRST(&done)) != NULL) {
		TAILQ_REMOVE(&done, p, entry);
		prepare_finish(p);
	}
}

/* Starts the thread and the loop's end of its eventfd, once. */
static void
prepare_init(void)
{
	int		 e;

	if (prepare_started)
		return;
	if ((prepare_efd = eventfd(0, EFD_NONBLOCK|EFD_CLOEXEC)) == -1)
		fatal("eventfd");
	prepare_ev = event_new(server_base, prepare_efd, EV_READ|EV_PERSIST,
	    prepare_done_cb, NULL);
	if (prepare_ev == NULL || event_add(prepare_ev, NULL) != 0)
		fatalx("%s: event_new", __func__);
	if ((e = thread_start(&prepare_thread, prepare_main, NULL)) != 0) {
		errno = e;
		fatal("pthread_create");
	}
	prepare_started = 1;
}

static void
prepare_queue(struct prepare *p)
{
	prepare_init();
	pthread_mutex_lock(&prepare_lock);
	TAILQ_INSERT_TAIL(&prepare_todo, p, entry);
	pthread_cond_signal(&prepare_cond);
	pthread_mutex_unlock(&prepare_lock);
}

/* Hands the thread work on path that returns nothing to the loop. */
static struct prepare *
prepare_chore(enum prepare_kind kind, const char *path)
{
	struct prepare	*p;

	p = xcalloc(1, sizeof *p);
	p->kind = kind;
	p->blobfd = -1;
	p->workdir = xstrdup(path);
	return (p);
}

/* Removes path (a tree nothing else may write) off the loop. */
void
prepare_discard(const char *path)
{
	prepare_queue(prepare_chore(PREPARE_REMOVE, path));
}

/*
 * Removes the stored trees' objects (in objects; the blob store in
 * blobs) that no tree links to, off the loop, after what was queued
 * before (trees removed).
 */
void
prepare_collect(const char *objects, const char *blobs)
{
	struct prepare	*p;

	p = prepare_chore(PREPARE_COLLECT, objects);
	p->blobs = xstrdup(blobs);
	prepare_queue(p);
}

/*
 * Makes the job's tree: m (taken: it is left empty) from the store c into
 * workdir, and renames it to final if that is not NULL (a stored tree,
 * whose files are links to the objects in objects: tree_materialize_at;
 * if one is there already, nothing is made).  Its blobs are pinned at
 * once.  Returns the work to hand to prepare_submit, or NULL with *cause.
 */
struct prepare *
prepare_new(struct cas *c, struct manifest *m, const char *workdir,
    const char *final, const char *objects, char **cause)
{
	struct prepare	*p;

	if (tree_pin(c, m, cause) != 0)
		return (NULL);
	p = xcalloc(1, sizeof *p);
	p->kind = PREPARE_MAKE;
	p->cas = c;
	p->m = *m;
	manifest_init(m);
	p->workdir = xstrdup(workdir);
	if (final != NULL) {
		p->final = xstrdup(final);
		p->objects = xstrdup(objects);
	}
	if ((p->blobfd = cas_dup_dirfd(c)) == -1) {
		xasprintf(cause, "the blob store: %s", strerror(errno));
		prepare_free(p);
		return (NULL);
	}
	return (p);
}

/*
 * Keeps the new job j as job id, queued while its tree is made, and hands
 * p (always taken) to the thread; the job is submitted to the scheduler
 * when the tree is there.  What the scheduler would refuse now is refused
 * now: -1 with *code (422, 409) and *cause, and j is not kept.
 */
int
prepare_submit(struct prepare *p, struct job *j, u_int id, int *code,
    char **cause)
{
	if (server_sched_check(j, id, code, cause) != 0) {
		prepare_free(p);
		return (-1);
	}
	job_set_id(j, id);
	free(j->reason);
	j->reason = xstrdup(PREPARE_REASON);
	job_save(j);
	p->id = id;
	log_debug("%s: %s: %zu entries, %llu bytes", __func__, j->name,
	    p->m.n, (unsigned long long)p->m.bytes);
	prepare_queue(p);
	return (0);
}

/*
 * Hands p (always taken) to the thread for a tree that is no job's (a
 * build's, api-build.c): done(rc, cause, arg) is called in the loop once
 * it is made (0) or could not be (-1, cause, which done does not keep).
 * At the daemon's end it may never be called.
 */
void
prepare_run(struct prepare *p, prepare_cb done, void *arg)
{
	p->done = done;
	p->arg = arg;
	prepare_queue(p);
}

/*
 * At start: a job whose tree was being made when the daemon stopped fails
 * (its copy may be partial), and what was made of it goes.
 */
void
prepare_restore(void)
{
	struct job	*j;

	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (!prepare_waiting(j))
			continue;
		log_info("%s: %s: the daemon stopped while it was preparing "
		    "its files", __func__, j->name);
		server_sched_refused(j, "the host stopped while it was "
		    "preparing its files; run it again");
		worktree_remove(j->id);
	}
}

/*
 * At the daemon's orderly end: the thread stops (a tree being made stops
 * after its current file) and is joined; what was left undone is dropped
 * (its job fails at the next start, prepare_restore).
 */
void
prepare_shutdown(void)
{
	struct prepare	*p;

	if (!prepare_started)
		return;
	pthread_mutex_lock(&prepare_lock);
	atomic_store(&prepare_stop, 1);
	pthread_cond_broadcast(&prepare_cond);
	pthread_mutex_unlock(&prepare_lock);
	pthread_join(prepare_thread, NULL);
	TAILQ_CONCAT(&prepare_todo, &prepare_done, entry);
	while ((p = TAILQ_FIRST(&prepare_todo)) != NULL) {
		TAILQ_REMOVE(&prepare_todo, p, entry);
		prepare_free(p);
	}
	event_free(prepare_ev);
	prepare_ev = NULL;
	close(prepare_efd);
	prepare_efd = -1;
	prepare_started = 0;
	atomic_store(&prepare_stop, 0);
}
