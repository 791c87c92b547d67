/*
 * container-int.h: what the container family (container*.c) shares only
 * among itself; gmux.h keeps what crosses families.
 */

#ifndef CONTAINER_INT_H
#define CONTAINER_INT_H

/* container.c: argv building (a command line repeats its flags) */
void		 container_push(char ***, const char *);
void		 container_addf(char ***, const char *, ...) printflike(2, 3);

#endif
