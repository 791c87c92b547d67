/* doctor-int.h: gmux doctor's checks and their findings. */

#ifndef DOCTOR_INT_H
#define DOCTOR_INT_H

enum doctor_level {
	DOCTOR_OK,
	DOCTOR_WARN,	/* works, but less than it could */
	DOCTOR_FAIL,	/* something the config asks for cannot work */
};

struct doctor_finding {
	char			*check;
	enum doctor_level	 level;
	char			*detail;
	char			*fix;		/* NULL when ok */
};

struct doctor {
	struct doctor_finding	*v;
	u_int			 n;
};

/* doctor.c */
void		 doctor_add(struct doctor *, const char *, enum doctor_level,
		     const char *, const char *, ...) printflike(5, 6);
void		 doctor_print(const struct doctor *, FILE *);
json_t		*doctor_json(const struct doctor *);
int		 doctor_failed(const struct doctor *);
void		 doctor_clear(struct doctor *);

/* doctor-host.c: what this host can enforce */
void		 doctor_host(struct doctor *);
int		 doctor_etcd_answer(const char *, char **);

/* doctor-remote.c: this client's remotes */
void		 doctor_remotes(struct doctor *);

#endif /* DOCTOR_INT_H */
