/*
 * fixture.h: recorded tool output for the card tests, read from
 * tests/fixtures (the tests run from the top of the tree).
 */

#ifndef FIXTURE_H
#define FIXTURE_H

#include <sys/stat.h>

#define FIXTURES "tests/fixtures/"

/* Returns a fixture's text (the caller frees it); fails if it is absent. */
static __attribute__((unused)) char *
fixture(const char *name)
{
	char	*path, *text, *cause = NULL;

	xasprintf(&path, "%s%s", FIXTURES, name);
	text = read_file(path, 1 << 20, NULL, &cause);
	if (text == NULL) {
		fprintf(stderr, "fixture %s: %s\n", name, cause);
		unit_failed_checks++;
		free(cause);
		text = xstrdup("");
	}
	free(path);
	return (text);
}

/* Parses a fixture with a card parser into a new list; fails if it fails. */
static __attribute__((unused)) struct cards
fixture_cards(const char *name, int (*parse)(const char *, struct cards *,
    char **))
{
	struct cards	 cs = { NULL, 0 };
	char		*text = fixture(name), *cause = NULL;

	if (parse(text, &cs, &cause) != 0) {
		fprintf(stderr, "%s: %s\n", name, cause);
		unit_failed_checks++;
		free(cause);
	}
	free(text);
	return (cs);
}

/* Writes dir/name, a shell script standing in for a vendor's tool. */
static __attribute__((unused)) void
fixture_tool(const char *dir, const char *name, const char *script)
{
	char	*path, *text, *cause = NULL;

	xasprintf(&path, "%s/%s", dir, name);
	xasprintf(&text, "#!/bin/sh\n%s\n", script);
	if (write_file_atomic(path, text, strlen(text), 0755, &cause) != 0) {
		fprintf(stderr, "%s\n", cause);
		unit_failed_checks++;
		free(cause);
	}
	chmod(path, 0755);
	free(text);
	free(path);
}

/* Checks that a call failed with a cause containing want, and frees it. */
#define CHECK_FAILS(call, cause, want) do {				\
	(cause) = NULL;							\
	CHECK((call) == -1);						\
	CHECK((cause) != NULL && strstr((cause), (want)) != NULL);	\
	if ((cause) != NULL && strstr((cause), (want)) == NULL)		\
		fprintf(stderr, "  cause: %s\n", (cause));		\
	free(cause);							\
	(cause) = NULL;							\
} while (0)

#endif
