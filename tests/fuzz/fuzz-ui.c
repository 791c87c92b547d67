/*
 * fuzz-ui.c: what the dashboard parses from a browser: a Cookie header's
 * values (ui_cookie_get, on the daemon and in gmux ui's forwarder) and the
 * forwarder's request line (ui_fwd_request_line).
 * seeds: tests/fuzz/seeds/ui/
 */

#include "fuzz.h"
#include "ui-int.h"

static void
fuzz_cookie(const char *text, const char *name)
{
	char	 out[64];

	if (ui_cookie_get(text, name, out, sizeof out) == 0) {
		FUZZ_ASSERT(strlen(out) < sizeof out);
		FUZZ_ASSERT(strchr(out, ';') == NULL);
		FUZZ_ASSERT(strstr(text, out) != NULL);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ui_fwd_req	 rq;
	char			*text = fuzz_text(data, size);

	fuzz_cookie(text, UI_COOKIE);
	fuzz_cookie(text, UI_FWD_COOKIE);
	if (ui_fwd_request_line((const char *)data, size, &rq) == 0) {
		FUZZ_ASSERT(rq.method[0] != '\0' && rq.path[0] == '/');
		FUZZ_ASSERT(strcspn(rq.path, " \r\n") == strlen(rq.path));
		FUZZ_ASSERT(rq.minor == 0 || rq.minor == 1);
	}
	free(text);
	return (0);
}
