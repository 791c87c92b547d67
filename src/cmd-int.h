/*
 * cmd-int.h: what the commands that describe the command table share
 * (completion scripts and the manual page are made from it).
 */

#ifndef CMD_INT_H
#define CMD_INT_H

/* One option of a command, as its --help lists it. */
struct cmd_flag {
	char	*name;		/* "--share" or "-d" */
	char	*value;		/* "F", or NULL if it takes none */
	char	*text;		/* what it does, one line */
	int	 alias;		/* another name of the one before */
};

/* cmd.c */
const struct cmd_entry *cmd_at(u_int);

/* cmd-flags.c */
u_int		 cmd_flags(const struct cmd_entry *, struct cmd_flag **);
void		 cmd_flags_free(struct cmd_flag *, u_int);
u_int		 cmd_subcommands(const struct cmd_entry *, char ***);
void		 cmd_words_free(char **, u_int);
const char	*cmd_notes(const struct cmd_entry *);

/* cmd-completion.c */
int		 completion_write(FILE *, const char *);

/* cmd-remote.c */
int		 remote_add_text(const char *, const char *, int, int);
char		*remote_read_target(void);

/* cmd-discover.c: gmux remote discover */
struct discover {
	int64_t		 wait_ms;
	int		 first;
	const char	*add;		/* --add NAME */
	const char	*host;		/* --host HOST */
};
int		 discover_option(struct discover *, int, const char *);
int		 remote_discover(const struct discover *, int);

/* manpage.c */
void		 manpage_write(FILE *);

#endif /* CMD_INT_H */
