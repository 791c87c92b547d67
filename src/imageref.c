/*
 * imageref.c: an image's name as a client may give it (docs/containers.md,
 * "Image names"): a plain reference, [DOMAIN[:PORT]/]PATH[:TAG][@DIGEST],
 * never a podman option, a transport (dir:, oci-archive:, docker://) or a
 * path, since podman would read such a name from the host's files.
 */

#include <ctype.h>
#include <string.h>

#include "gmux.h"

/* Podman's transports: a name that is one could be read as "T:PATH". */
static const char *const imageref_transports[] = {
	"containers-storage", "dir", "docker", "docker-archive",
	"docker-daemon", "oci", "oci-archive", "ostree", "sif", "tarball",
};

/* [a-z0-9] */
static int
imageref_alnum(int c)
{
	return ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'));
}

/*
 * A path component: lower-case letters and digits, with one '.', one or
 * two '_', or any run of '-' between them.
 */
static int
imageref_component(const char *s, size_t n)
{
	size_t	 i, run;

	if (n == 0 || !imageref_alnum((u_char)s[0]) ||
	    !imageref_alnum((u_char)s[n - 1]))
		return (0);
	for (i = 0; i < n; i += run) {
		if (imageref_alnum((u_char)s[i])) {
			run = 1;
			continue;
		}
		run = strspn(s + i, s[i] == '-' ? "-" : s[i] == '_' ? "_" :
		    ".");
		if (run > n - i)
			run = n - i;
		if ((s[i] == '.' && run > 1) || (s[i] == '_' && run > 2) ||
		    strchr("-_.", s[i]) == NULL)
			return (0);
	}
	return (1);
}

/* A domain: letters, digits, '-' and '.', then an optional :PORT. */
static int
imageref_domain(const char *s, size_t n)
{
	const char	*colon = memchr(s, ':', n);
	size_t		 host = colon != NULL ? (size_t)(colon - s) : n, i;

	if (host == 0 || !isalnum((u_char)s[0]) ||
	    !isalnum((u_char)s[host - 1]))
		return (0);
	for (i = 0; i < host; i++) {
		if (!isalnum((u_char)s[i]) && s[i] != '-' && s[i] != '.')
			return (0);
		if (s[i] == '.' && s[i + 1] == '.')
			return (0);
	}
	if (colon == NULL)
		return (1);
	for (i = host + 1; i < n; i++) {
		if (!isdigit((u_char)s[i]))
			return (0);
	}
	return (n - host - 1 >= 1 && n - host - 1 <= 5);
}

/* :TAG, [A-Za-z0-9_][A-Za-z0-9_.-]{0,127} */
static int
imageref_tag(const char *s)
{
	size_t	 n = strlen(s), i;

	if (n == 0 || n > 128 || (!isalnum((u_char)*s) && *s != '_'))
		return (0);
	for (i = 0; i < n; i++) {
		if (!isalnum((u_char)s[i]) && strchr("_.-", s[i]) == NULL)
			return (0);
	}
	return (1);
}

/* The name before :TAG and @DIGEST: [DOMAIN/]COMPONENT[/COMPONENT...]. */
static int
imageref_name(const char *s, size_t n)
{
	const char	*slash = memchr(s, '/', n), *p, *end = s + n;
	size_t		 first = slash != NULL ? (size_t)(slash - s) : n, i;

	for (i = 0; i < nitems(imageref_transports); i++) {
		if (strlen(imageref_transports[i]) == first &&
		    strncmp(s, imageref_transports[i], first) == 0)
			return (0);
	}
	p = s;
	if (slash != NULL && (memchr(s, '.', first) != NULL ||
	    memchr(s, ':', first) != NULL || (first == 9 &&
	    strncmp(s, "localhost", 9) == 0))) {
		if (!imageref_domain(s, first))
			return (0);
		p = slash + 1;
	}
	while (p <= end) {
		slash = memchr(p, '/', (size_t)(end - p));
		if (slash == NULL)
			slash = end;
		if (!imageref_component(p, (size_t)(slash - p)))
			return (0);
		p = slash + 1;
	}
	return (1);
}

/*
 * Whether image is a plain reference: 0, or -1 with *cause naming the
 * field.  A digest is sha256 in 64 lower-case hex digits.
 */
int
imageref_check(const char *image, char **cause)
{
	const char	*at, *tag, *slash;
	size_t		 n = strlen(image), name;

	if (n == 0 || n > IMAGEREF_MAX)
		goto bad;
	name = n;
	if ((at = strchr(image, '@')) != NULL) {
		if (strncmp(at, "@sha256:", 8) != 0 || strlen(at + 8) != 64 ||
		    strspn(at + 8, "0123456789abcdef") != 64)
			goto bad;
		name = (size_t)(at - image);
	}
	slash = memrchr(image, '/', name);
	tag = memrchr(slash != NULL ? slash : image, ':', name -
	    (size_t)((slash != NULL ? slash : image) - image));
	if (tag != NULL) {
		char	 t[130];

		if (name - (size_t)(tag - image) - 1 >= sizeof t)
			goto bad;
		memcpy(t, tag + 1, name - (size_t)(tag - image) - 1);
		t[name - (size_t)(tag - image) - 1] = '\0';
		if (!imageref_tag(t))
			goto bad;
		name = (size_t)(tag - image);
	}
	if (imageref_name(image, name))
		return (0);
bad:
	xasprintf(cause, "image: '%.64s' is not an image's name (a plain "
	    "reference, [DOMAIN/]NAME[:TAG][@sha256:DIGEST], lower case, up "
	    "to %d; no option, transport or path)", image, IMAGEREF_MAX);
	return (-1);
}
