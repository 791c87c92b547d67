/* log.c: one line per event, off by default; -v turns debug on. */

#include <errno.h>
#include <fcntl.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gmux.h"

static FILE	*log_file;
static int	 log_lvl;	/* 0 warnings only, 1 info, 2 debug */

static void	log_close(void);

void
log_open(int level, const char *path)
{
	int	 fd;

	log_lvl = level;
	if (path == NULL)
		return;
	log_close();
	if ((fd = open(path, O_WRONLY|O_CREAT|O_APPEND|O_CLOEXEC, 0600)) == -1)
		return;
	if ((log_file = fdopen(fd, "a")) == NULL) {
		close(fd);
		return;
	}
	setvbuf(log_file, NULL, _IOLBF, 0);
}

static void
log_close(void)
{
	if (log_file != NULL)
		fclose(log_file);
	log_file = NULL;
}

/*
 * In a forked child that closes every descriptor above 2 and goes on
 * logging (a keeper): the log file, if any, becomes its stderr, where it
 * logs from then on.  Kept as it was, the FILE would name a closed
 * descriptor whose number the child gives to something else (the job's
 * log, its link to the daemon), and a log line would land there.  What
 * the parent had buffered is dropped, not written twice.
 */
void
log_child(void)
{
	if (log_file == NULL)
		return;
	__fpurge(log_file);
	dup2(fileno(log_file), STDERR_FILENO);
	fclose(log_file);
	log_file = NULL;
}

int
log_level(void)
{
	return (log_lvl);
}

static void
log_vwrite(const char *prefix, const char *fmt, va_list ap, const char *err)
{
	FILE		*f = log_file != NULL ? log_file : stderr;
	struct timespec	 ts;
	struct tm	 tm;
	char		 when[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof when, "%H:%M:%S", &tm);
	fprintf(f, "%s.%03ld gmux[%ld] %s", when, ts.tv_nsec / 1000000L,
	    (long)getpid(), prefix);
	vfprintf(f, fmt, ap);
	if (err != NULL)
		fprintf(f, ": %s", err);
	fputc('\n', f);
}

void
log_debug(const char *fmt, ...)
{
	va_list	 ap;

	if (log_lvl < 2)
		return;
	va_start(ap, fmt);
	log_vwrite("", fmt, ap, NULL);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list	 ap;

	if (log_lvl < 1)
		return;
	va_start(ap, fmt);
	log_vwrite("", fmt, ap, NULL);
	va_end(ap);
}

void
log_warn(const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	va_start(ap, fmt);
	log_vwrite("warning: ", fmt, ap, strerror(saved));
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	log_vwrite("warning: ", fmt, ap, NULL);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	va_start(ap, fmt);
	log_vwrite("fatal: ", fmt, ap, strerror(saved));
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	log_vwrite("fatal: ", fmt, ap, NULL);
	va_end(ap);
	exit(1);
}
