/*
 * container-int.h: what the container family (container*.c) shares only
 * among itself; gmux.h keeps what crosses families.
 */

#ifndef CONTAINER_INT_H
#define CONTAINER_INT_H

/* container.c: argv building (a command line repeats its flags) */
void		 container_push(char ***, const char *);
void		 container_addf(char ***, const char *, ...) printflike(2, 3);

/* container.c: one of gmux's own variables (NAME=VALUE) */
int		 container_var(const char *);

/* container-env.c: NAME's value in a NAME=VALUE vector */
const char	*container_getenv(char *const *, const char *);

/* container.c: gmux's containers and their jobs, in podman ps -a */
#define CONTAINER_PS_FORMAT	"{{.ID}} {{index .Labels \"gmux.job\"}}"
void		 container_orphans(char *, int (*)(u_int),
		     void (*)(u_int, void *), void *);

#endif
