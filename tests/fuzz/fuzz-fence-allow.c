/*
 * fuzz-fence-allow: the fence's policy parsers, --allow, --add-host and
 * the job request's fence fields.  A value that parses must print in a
 * form that parses again to the same form.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "fence-int.h"

int	LLVMFuzzerTestOneInput(const unsigned char *, size_t);

static void
allow_roundtrip(const char *s)
{
	struct fence_rule	 r, r2;
	char			*cause = NULL;

	if (fence_parse_allow(s, &r, &cause) != 0) {
		free(cause);
		return;
	}
	if (fence_parse_allow(r.text, &r2, &cause) != 0 ||
	    strcmp(r.text, r2.text) != 0)
		abort();
	free(r.name);
	free(r.path);
	free(r.text);
	free(r2.name);
	free(r2.path);
	free(r2.text);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct fence	*f = fence_create(), *g = NULL;
	char		*s, *cause = NULL, *t;
	json_t		*j;

	s = xmalloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	allow_roundtrip(s);
	if (fence_add_host(f, s, &cause) != 0)
		free(cause);
	cause = NULL;
	t = fence_text(f);
	free(t);
	fence_free(f);
	if ((j = json_loadb((const char *)data, size, 0, NULL)) != NULL) {
		if (fence_from_json(j, &g, &cause) != 0)
			free(cause);
		t = fence_text(g);
		free(t);
		fence_free(g);
		json_decref(j);
	}
	free(s);
	return (0);
}
