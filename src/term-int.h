/*
 * term-int.h: what the terminal family (term-*.c, api-term.c, cmd-shell.c,
 * cmd-port.c) shares inside itself.  docs/terminals.md is the contract.
 */

#ifndef TERM_INT_H
#define TERM_INT_H

#include <stdint.h>

struct bufferevent;
struct evhttp_request;
struct conn;
struct job;
struct target;

/* Frame types on a terminal connection (docs/terminals.md). */
#define TERM_DATA	'd'
#define TERM_WINDOW	'w'
#define TERM_EXIT	'x'
#define TERM_FRAME_MAX	65536
#define TERM_SIZE_MAX	10000
#define TERM_DEFAULT	"xterm-256color"

struct term_frame {
	u_char		 type;
	uint32_t	 len;
	const u_char	*data;
};

/* term-wire.c */
ssize_t		 term_frame_parse(const void *, size_t, struct term_frame *,
		     char **);
int		 term_window_parse(const struct term_frame *, u_int *,
		     u_int *, char **);
void		 term_window_encode(u_char *, u_int, u_int);
int		 term_name_ok(const char *);

/* term.c */
char		*term_dir(u_int);

/* term-relay.c */
void		 term_relay_start(struct bufferevent *, void *, struct job *,
		     u_int, u_int, const char *);

/* term-port.c */
int		 term_port_open(u_int, char **);
void		 term_port_start(struct bufferevent *, void *, int);
void		 term_splice_start(struct bufferevent *, void *,
		     struct bufferevent *, const char *);

/* term-netns.c */
int		 term_netns_start(pid_t, u_int, char **);
int		 term_netns_answer(int, char **);

/* term-dial.c */
void		 term_dial(struct evhttp_request *, const char *, int, pid_t,
		     u_int);

/* term-client.c */
struct conn	*term_upgrade(const struct target *, const char *,
		     const char *, long *, char **);
int		 term_relay(struct conn *, int, int, char **);
int		 term_splice(struct conn *, int);
const struct target *term_target(void);

#endif
