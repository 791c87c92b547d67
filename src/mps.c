/*
 * mps.c: one MPS control daemon per real NVIDIA card, run as gmux's own
 * user with private pipe and log directories under $GMUX_HOME (never the
 * system-wide /tmp/nvidia-mps, which another user's daemon may own), and
 * told to quit when gmux stops.  A job reaches its card's daemon through
 * CUDA_MPS_PIPE_DIRECTORY; CUDA_MPS_ACTIVE_THREAD_PERCENTAGE is its SM
 * ceiling, fixed for the client's life.
 */

#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define MPS_CONTROL	"nvidia-cuda-mps-control"
#define MPS_MAX_CARDS	64
#define MPS_TIMEOUT_MS	10000
#define MPS_SUN_PATH	100	/* room for "/control" in a sockaddr_un */

static struct {
	char	*pipe;		/* NULL: not running */
	char	*log;
	char	*uuid;
} mps[MPS_MAX_CARDS];

/*
 * Runs the control program for card i with its environment, input on its
 * standard input (NULL for none) and args; returns its exit status, -1 if
 * it could not run or ran past the time limit.
 */
static int
mps_run(u_int i, const char *arg, const char *input)
{
	int	 p[2], ws, fd;
	pid_t	 pid;
	int64_t	 deadline = clock_mono_ms() + MPS_TIMEOUT_MS;

	if (pipe2(p, O_CLOEXEC) == -1)
		return (-1);
	if ((pid = fork_quiet()) == -1) {
		close(p[0]);
		close(p[1]);
		return (-1);
	}
	if (pid == 0) {
		dup2(p[0], 0);
		if ((fd = open("/dev/null", O_WRONLY)) != -1) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		closefrom(3);
		setenv("CUDA_VISIBLE_DEVICES", mps[i].uuid, 1);
		setenv("CUDA_MPS_PIPE_DIRECTORY", mps[i].pipe, 1);
		setenv("CUDA_MPS_LOG_DIRECTORY", mps[i].log, 1);
		execlp(MPS_CONTROL, MPS_CONTROL, arg, (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	if (input != NULL)
		write_all(p[1], input, strlen(input));
	close(p[1]);
	while (waitpid(pid, &ws, WNOHANG) == 0) {
		if (clock_mono_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &ws, 0);
			return (-1);
		}
		usleep(10000);
	}
	return (WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
}

static void
mps_clear(u_int i)
{
	free(mps[i].pipe);
	free(mps[i].log);
	free(mps[i].uuid);
	mps[i].pipe = mps[i].log = mps[i].uuid = NULL;
}

/* Waits for the control daemon's socket in its pipe directory. */
static int
mps_wait_control(u_int i)
{
	char	*ctl;
	int	 n, found = 0;

	xasprintf(&ctl, "%s/control", mps[i].pipe);
	for (n = 0; n < 200 && !(found = access(ctl, F_OK) == 0); n++)
		usleep(10000);
	free(ctl);
	return (found);
}

/*
 * Starts the MPS control daemon of card c.  Returns -1 with *cause saying
 * why when it cannot: the program is missing, the directories cannot be
 * made, or it does not come up.
 */
int
mps_start(const struct card *c, char **cause)
{
	u_int	 i = c->index;
	int	 rc;

	if (i >= MPS_MAX_CARDS || c->uuid == NULL) {
		xasprintf(cause, "MPS: card %u cannot be named", i);
		return (-1);
	}
	if (mps[i].pipe != NULL)
		return (0);
	if (!have_program(MPS_CONTROL)) {
		xasprintf(cause, "MPS: %s not found in PATH", MPS_CONTROL);
		return (-1);
	}
	xasprintf(&mps[i].pipe, "%s/mps/%u/pipe", path_home(), i);
	xasprintf(&mps[i].log, "%s/mps/%u/log", path_home(), i);
	mps[i].uuid = xstrdup(c->uuid);
	if (strlen(mps[i].pipe) > MPS_SUN_PATH - strlen("/control")) {
		xasprintf(cause, "MPS: %s is too long for a socket path",
		    mps[i].pipe);
		goto fail;
	}
	if (mkdir_p(mps[i].pipe, 0700) != 0 || mkdir_p(mps[i].log, 0700) != 0 ||
	    chmod(mps[i].pipe, 0700) != 0) {
		xasprintf(cause, "MPS: %s: %s", mps[i].pipe, strerror(errno));
		goto fail;
	}
	if ((rc = mps_run(i, "-d", NULL)) != 0) {
		xasprintf(cause, "MPS: %s -d failed (%s %d); see %s",
		    MPS_CONTROL, rc == -1 ? "status" : "exit", rc, mps[i].log);
		goto fail;
	}
	if (!mps_wait_control(i)) {
		xasprintf(cause, "MPS: no control socket in %s", mps[i].pipe);
		mps_run(i, NULL, "quit\n");
		goto fail;
	}
	log_info("MPS: card %u control daemon in %s", i, mps[i].pipe);
	return (0);
fail:
	mps_clear(i);
	return (-1);
}

/* Tells card c's control daemon to quit (its servers go with it). */
void
mps_stop(const struct card *c)
{
	u_int	 i = c->index;

	if (i >= MPS_MAX_CARDS || mps[i].pipe == NULL)
		return;
	if (mps_run(i, NULL, "quit\n") != 0)
		log_warnx("MPS: card %u: quit was not acknowledged", i);
	log_debug("%s: card %u", __func__, i);
	mps_clear(i);
}

void
mps_stop_all(void)
{
	struct card	 c;
	u_int		 i;

	memset(&c, 0, sizeof c);
	for (i = 0; i < MPS_MAX_CARDS; i++) {
		c.index = i;
		mps_stop(&c);
	}
}

/* The pipe directory of card i's daemon, or NULL if none runs. */
const char *
mps_pipe_dir(u_int i)
{
	return (i < MPS_MAX_CARDS ? mps[i].pipe : NULL);
}
