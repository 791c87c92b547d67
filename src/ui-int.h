/*
 * ui-int.h: what the dashboard's files (ui*.c, cmd-ui.c) share among
 * themselves; docs/ui.md is the contract.
 */

#ifndef UI_INT_H
#define UI_INT_H

#include <sys/types.h>

#include <stddef.h>

#include <jansson.h>

struct evhttp_request;
struct target;

/* An asset of the page, built into the program from ui/ (ui/embed.c). */
struct ui_asset {
	const char		*name;		/* "app.js" */
	const unsigned char	*data;
	size_t			 len;
};

#define UI_COOKIE	"gmux_token"	/* the daemon's: the token itself */
#define UI_FWD_COOKIE	"gmux_fwd"	/* gmux ui's forwarder: a session */
#define UI_CSRF_HEADER	"X-Gmux-Csrf"
#define UI_CSRF_LEN	32		/* hex digits */

/* ui.c */
const struct ui_asset *ui_asset_find(const char *);
const char	*ui_asset_type(const char *);
int		 ui_cookie_get(const char *, const char *, char *, size_t);
void		 ui_csrf_of(const char *, char *);
json_t		*ui_cluster(void);

/* ui-events.c */
void		 ui_events_start(void);

/* ui-forward.c: gmux ui's loopback forwarder */
struct ui_fwd_req {
	char		 method[16];
	char		 path[2048];
	int		 minor;		/* HTTP/1.x */
};
int		 ui_fwd_request_line(const char *, size_t, struct ui_fwd_req *);
int		 ui_fwd_serve(const struct target *, int, int, char **);

#endif
