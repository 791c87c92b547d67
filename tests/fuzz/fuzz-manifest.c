/*
 * fuzz-manifest.c: a manifest as a client sends it (manifest_parse).  What
 * is accepted must hold only confined, strictly sorted paths, no entry
 * under a file or link, no link leading out, and format back to a text
 * that parses to the same entries.
 * seeds: tests/fuzz/seeds/manifest/
 */

#include "fuzz.h"

static void
check(const struct manifest *m)
{
	const struct mentry	*e;
	char			*cause = NULL;
	size_t			 i;

	for (i = 0; i < m->n; i++) {
		e = &m->v[i];
		FUZZ_ASSERT(confine_path_ok(e->path, &cause));
		FUZZ_ASSERT(i == 0 || strcmp(m->v[i - 1].path, e->path) < 0);
		FUZZ_ASSERT(e->mode <= 0777);
		if (e->type == MENTRY_FILE)
			FUZZ_ASSERT(digest_valid(e->digest));
		else if (e->type == MENTRY_LINK)
			FUZZ_ASSERT(manifest_link_ok(e->path, e->target));
		else
			FUZZ_ASSERT(e->type == MENTRY_DIR && e->size == 0);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct manifest	 m, m2;
	char		*cause = NULL, *text;
	size_t		 len, i;

	if (manifest_parse((const char *)data, size, 10000, &m, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL && m.n == 0);
		free(cause);
		return (0);
	}
	check(&m);
	text = manifest_format(&m, &len);
	FUZZ_ASSERT(manifest_parse(text, len, 10000, &m2, &cause) == 0);
	FUZZ_ASSERT(m2.n == m.n && m2.bytes == m.bytes);
	for (i = 0; i < m.n; i++) {
		FUZZ_ASSERT(strcmp(m.v[i].path, m2.v[i].path) == 0);
		FUZZ_ASSERT(m.v[i].type == m2.v[i].type);
		FUZZ_ASSERT(m.v[i].size == m2.v[i].size);
	}
	free(text);
	manifest_clear(&m);
	manifest_clear(&m2);
	return (0);
}
