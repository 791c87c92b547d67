/* test-ui.c: what the dashboard parses: cookies, request lines, CSRF. */

#include "gmux.h"
#include "ui-int.h"
#include "unit.h"

static void
test_cookie(void)
{
	char	 v[16];

	CHECK(ui_cookie_get("gmux_token=abc", UI_COOKIE, v, sizeof v) == 0);
	CHECK_STR(v, "abc");
	CHECK(ui_cookie_get("a=1; gmux_token=xyz ;b=2", UI_COOKIE, v,
	    sizeof v) == 0);
	CHECK_STR(v, "xyz");
	/* A name that only ends or starts like it is another cookie. */
	CHECK(ui_cookie_get("xgmux_token=1; gmux_tokenx=2", UI_COOKIE, v,
	    sizeof v) == -1);
	CHECK(ui_cookie_get("gmux_token", UI_COOKIE, v, sizeof v) == -1);
	CHECK(ui_cookie_get("", UI_COOKIE, v, sizeof v) == -1);
	CHECK(ui_cookie_get("gmux_token=", UI_COOKIE, v, sizeof v) == 0);
	CHECK_STR(v, "");
	/* Too long for the buffer: not there, never cut short. */
	CHECK(ui_cookie_get("gmux_token=0123456789abcdef", UI_COOKIE, v,
	    sizeof v) == -1);
	CHECK(ui_cookie_get("gmux_fwd=1;gmux_token=2", UI_FWD_COOKIE, v,
	    sizeof v) == 0);
	CHECK_STR(v, "1");
}

static void
test_request_line(void)
{
	struct ui_fwd_req	 rq;
	const char		*ok;

	ok = "GET /ui/open?secret=ab HTTP/1.1\r\nHost: x\r\n\r\n";
	CHECK(ui_fwd_request_line(ok, strlen(ok), &rq) == 0);
	CHECK_STR(rq.method, "GET");
	CHECK_STR(rq.path, "/ui/open?secret=ab");
	CHECK(rq.minor == 1);
	CHECK(ui_fwd_request_line("POST /x HTTP/1.0\n", 17, &rq) == 0);
	CHECK(rq.minor == 0);
	CHECK(ui_fwd_request_line("get /x HTTP/1.1\n", 16, &rq) == -1);
	CHECK(ui_fwd_request_line("GET x HTTP/1.1\n", 15, &rq) == -1);
	CHECK(ui_fwd_request_line("GET /x HTTP/2.0\n", 16, &rq) == -1);
	CHECK(ui_fwd_request_line("GET /x HTTP/1.1", 15, &rq) == -1);
	CHECK(ui_fwd_request_line("GET /a b HTTP/1.1\n", 18, &rq) == -1);
	CHECK(ui_fwd_request_line("GET /a\\b HTTP/1.1\n", 18, &rq) == -1);
	CHECK(ui_fwd_request_line("GET /\0b HTTP/1.1\n", 17, &rq) == -1);
}

static void
test_csrf(void)
{
	char	 a[UI_CSRF_LEN + 1], b[UI_CSRF_LEN + 1];

	ui_csrf_of("token-one-0123456789", a);
	ui_csrf_of("token-two-0123456789", b);
	CHECK(strlen(a) == UI_CSRF_LEN && strcmp(a, b) != 0);
	CHECK(strstr(a, "token") == NULL);
	ui_csrf_of("token-one-0123456789", b);
	CHECK_STR(a, b);
}

static void
test_assets(void)
{
	CHECK(ui_asset_find("index.html") != NULL);
	CHECK(ui_asset_find("app.js") != NULL);
	CHECK(ui_asset_find("login.html") != NULL);
	CHECK(ui_asset_find("../gmux.h") == NULL);
	CHECK(ui_asset_find("embed.c") == NULL);
	CHECK_STR(ui_asset_type("app.js"), "text/javascript; charset=utf-8");
	CHECK_STR(ui_asset_type("x"), "application/octet-stream");
}

int
main(void)
{
	RUN(test_cookie);
	RUN(test_request_line);
	RUN(test_csrf);
	RUN(test_assets);
	UNIT_EXIT();
}
