/*
 * xmalloc.c: allocation that cannot fail (the daemon dies on the
 * impossible).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

void *
xmalloc(size_t size)
{
	void	*p;

	if (size == 0)
		size = 1;
	if ((p = malloc(size)) == NULL)
		fatal("xmalloc: %zu bytes", size);
	return (p);
}

void *
xcalloc(size_t n, size_t size)
{
	void	*p;

	if (n == 0 || size == 0)
		n = size = 1;
	if ((p = calloc(n, size)) == NULL)
		fatal("xcalloc: %zu x %zu bytes", n, size);
	return (p);
}

void *
xrealloc(void *old, size_t size)
{
	return (xreallocarray(old, 1, size));
}

void *
xreallocarray(void *old, size_t n, size_t size)
{
	void	*p;

	if (n == 0 || size == 0)
		n = size = 1;
	if (size != 0 && n > SIZE_MAX / size)
		fatalx("xreallocarray: %zu x %zu overflows", n, size);
	if ((p = realloc(old, n * size)) == NULL)
		fatal("xreallocarray: %zu x %zu bytes", n, size);
	return (p);
}

char *
xstrdup(const char *s)
{
	char	*p;

	if ((p = strdup(s)) == NULL)
		fatal("xstrdup");
	return (p);
}

char *
xstrndup(const char *s, size_t n)
{
	char	*p;

	if ((p = strndup(s, n)) == NULL)
		fatal("xstrndup");
	return (p);
}

int
xasprintf(char **ret, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	va_start(ap, fmt);
	n = xvasprintf(ret, fmt, ap);
	va_end(ap);
	return (n);
}

int
xvasprintf(char **ret, const char *fmt, va_list ap)
{
	int	 n;

	if ((n = vasprintf(ret, fmt, ap)) == -1)
		fatal("xvasprintf");
	return (n);
}
