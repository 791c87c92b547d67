/*
 * remote-int.h: what the remote-* files share only among themselves (the
 * host's sync routes and the uploads they let in).
 */

#ifndef REMOTE_INT_H
#define REMOTE_INT_H

/* remote-want.c */
void		 remote_want_add(const char *, const char *, uint64_t);
int		 remote_want_check(const char *, const char *, uint64_t,
		     char **);
void		 remote_want_done(const char *);

#endif
