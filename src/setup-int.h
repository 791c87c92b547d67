/* setup-int.h: gmux setup, installing gmux as a service. */

#ifndef SETUP_INT_H
#define SETUP_INT_H

/* Where an install goes: under root (a temporary one in tests). */
struct setup {
	char		*root;		/* "" or a directory, no trailing / */
	int		 system;	/* a system unit, else a user one */
	char		*prefix;	/* /usr/local, or ~/.local */
	char		*unitdir;
	char		*home;		/* the service's GMUX_HOME, or NULL */
	char		*config;
	char		*manifest;	/* what it made, for uninstall */
	char	       **made;		/* "f PATH" and "d PATH" lines */
};

/* setup.c */
void		 setup_init(struct setup *, const char *, int);
void		 setup_clear(struct setup *);
int		 setup_install(struct setup *, char **);
int		 setup_uninstall(struct setup *, char **);
int		 setup_systemd_running(void);

#endif /* SETUP_INT_H */
