/*
 * test-jail.c: a remote job's jail, entered by a child: its own
 * directories read and written, the system's read, the rest of the host's
 * files and every process outside it out of reach.
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
#include "unit.h"
#include "tmpdir.h"

/* Opens path with flags; 0 if it opened, else the errno. */
static int
try_open(const char *path, int flags)
{
	int	 fd;

	if ((fd = open(path, flags|O_CLOEXEC, 0600)) == -1)
		return (errno);
	close(fd);
	return (0);
}

/* In the jailed child: bit i of the exit code is check i failing. */
static dead void
child(struct jail *j, const char *work, const char *outside)
{
	char	*in, *out;
	int	 bad = 0;

	xasprintf(&in, "%s/made", work);
	xasprintf(&out, "%s/secret", outside);
	if (landlock_enter(jail_ruleset(j)) != 0)
		_exit(255);
	if (try_open(in, O_WRONLY|O_CREAT) != 0)
		bad |= 1;
	if (try_open("/etc/passwd", O_RDONLY) != 0)
		bad |= 2;
	if (try_open(out, O_RDONLY) != EACCES)
		bad |= 4;
	if (try_open("/etc/gmux-jail-test", O_WRONLY|O_CREAT) != EACCES)
		bad |= 8;
	if (kill(getppid(), 0) == 0 || errno != EPERM)
		bad |= 16;
	if (try_open("/dev/null", O_WRONLY) != 0)
		bad |= 32;
	_exit(bad);
}

static void
test_jail_files_and_signals(void)
{
	struct jail_spec	 s;
	struct jail		*j;
	char			*cause = NULL, *outside, *secret;
	int			 ws = -1;
	pid_t			 pid;

	if (landlock_abi() < 6) {
		printf("test-jail: skipped: Landlock ABI %d\n", landlock_abi());
		return;
	}
	memset(&s, 0, sizeof s);
	s.work = tpath("work");
	s.tmp = tpath("tmp");
	outside = tpath("outside");
	CHECK(mkdir(s.work, 0700) == 0 && mkdir(s.tmp, 0700) == 0 &&
	    mkdir(outside, 0700) == 0);
	xasprintf(&secret, "%s/secret", outside);
	CHECK(try_open(secret, O_WRONLY|O_CREAT) == 0);
	j = jail_create(&s, &cause);
	CHECK(j != NULL);
	if (j != NULL && (pid = fork()) == 0)
		child(j, s.work, outside);
	if (j != NULL)
		waitpid(pid, &ws, 0);
	CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
		printf("test-jail: child status %#x\n", ws);
	CHECK(jail_sockets(j) != NULL && strv_len(jail_sockets(j)) == 2);
	jail_free(j);
	jail_spec_clear(&s);
	free(outside);
	free(secret);
}

/* A kernel too old for the scopes: no jail, said why. */
static void
test_jail_too_old(void)
{
	struct jail_spec	 s;
	char			*cause = NULL;

	memset(&s, 0, sizeof s);
	setenv("GMUX_TEST_LANDLOCK_ABI", "5", 1);
	CHECK(jail_create(&s, &cause) == NULL);
	CHECK(cause != NULL && strstr(cause, "ABI 5") != NULL);
	free(cause);
	unsetenv("GMUX_TEST_LANDLOCK_ABI");
}

int
main(void)
{
	if (tmpdir_init("jail") != 0)
		return (1);
	RUN(test_jail_files_and_signals);
	RUN(test_jail_too_old);
	tmpdir_cleanup();
	UNIT_EXIT();
}
