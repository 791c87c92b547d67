/*
 * fuzz-ignore.c: .gmuxignore rules and the wildmatch behind them.  The
 * first line is a path, the rest a .gmuxignore; matching must end (git's
 * early aborts bound the backtracking) and a pattern without special
 * characters must match itself.
 * seeds: tests/fuzz/seeds/ignore/
 */

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ignore	*ig;
	char		*s = fuzz_text(data, size), *nl;
	const char	*rules = "";
	int		 isdir, slow;

	if ((nl = strchr(s, '\n')) != NULL) {
		*nl = '\0';
		rules = nl + 1;
	}
	ig = ignore_create();
	ignore_defaults(ig);
	ignore_parse(ig, "", rules, strlen(rules));
	ignore_parse(ig, "sub", rules, strlen(rules));
	/* The plain and star-suffix rules' fast paths agree with the NFA. */
	for (isdir = 0; isdir < 2; isdir++) {
		ignore_set_fast(0);
		slow = ignore_match(ig, s, isdir);
		ignore_set_fast(1);
		FUZZ_ASSERT(ignore_match(ig, s, isdir) == slow);
	}
	ignore_free(ig);
	ignore_wildmatch(rules, s);
	if (strpbrk(s, "*?[\\") == NULL)
		FUZZ_ASSERT(ignore_wildmatch(s, s));
	free(s);
	return (0);
}
