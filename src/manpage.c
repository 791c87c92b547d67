/*
 * manpage.c: gmux(1) in roff, made from the command table (gmux help
 * --man; make writes build/gmux.1 with it).
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "cmd-int.h"

/*
 * len bytes of s as roff text: backslashes and dashes escaped, and a line
 * that would start with a control character guarded.
 */
static void
man_text(FILE *f, const char *s, size_t len)
{
	size_t	 i;

	if (len > 0 && (s[0] == '.' || s[0] == '\''))
		fputs("\\&", f);
	for (i = 0; i < len; i++) {
		if (s[i] == '\\')
			fputs("\\e", f);
		else if (s[i] == '-')
			fputs("\\-", f);
		else
			fputc(s[i], f);
	}
}

static void
man_line(FILE *f, const char *s)
{
	man_text(f, s, strlen(s));
	fputc('\n', f);
}

/*
 * Free text (a command's notes): a paragraph for each block between blank
 * lines, an indented line kept as it is (an example).
 */
static void
man_notes(FILE *f, const char *s)
{
	const char	*e;
	int		 para = 1;

	for (; *s != '\0'; s = *e != '\0' ? e + 1 : e) {
		e = s + strcspn(s, "\n");
		if (e == s) {
			para = 1;
			continue;
		}
		if (para)
			fputs(".PP\n", f);
		else if (*s == ' ')
			fputs(".br\n", f);
		para = 0;
		while (*s == ' ' && s < e)
			s++;
		man_text(f, s, e - s);
		fputc('\n', f);
	}
}

/* The synopsis after the name, its wrapped lines joined again. */
static void
man_synopsis(FILE *f, const char *args)
{
	const char	*p;
	size_t		 len;

	fputc('\n', f);
	for (p = args + strspn(args, "\n "); *p != '\0'; p += len) {
		if (*p == '\n' || *p == ' ') {
			fputc(' ', f);
			len = strspn(p, "\n ");
			continue;
		}
		len = strcspn(p, "\n ");
		man_text(f, p, len);
	}
	fputc('\n', f);
}

/* A flag's names (those on one --help line) in bold, its value italic. */
static u_int
man_flag(FILE *f, const struct cmd_flag *fl, u_int n)
{
	u_int	 i = 0;

	fputs(".TP\n", f);
	do {
		fputs(i == 0 ? "\\fB" : ", \\fB", f);
		man_text(f, fl[i].name, strlen(fl[i].name));
		fputs("\\fR", f);
	} while (++i < n && fl[i].alias);
	if (fl[0].value != NULL) {
		fputs(" \\fI", f);
		man_text(f, fl[0].value, strlen(fl[0].value));
		fputs("\\fR", f);
	}
	fputc('\n', f);
	man_line(f, fl[0].text);
	return (i);
}

static void
man_command(FILE *f, const struct cmd_entry *c)
{
	struct cmd_flag	*fl;
	u_int		 n, i;

	fprintf(f, ".SS %s\n.B gmux %s", c->name, c->name);
	man_synopsis(f, c->args);
	fputs(".PP\n", f);
	man_line(f, c->help);
	n = cmd_flags(c, &fl);
	for (i = 0; i < n; )
		i += man_flag(f, fl + i, n - i);
	cmd_flags_free(fl, n);
	man_notes(f, cmd_notes(c));
}

void
manpage_write(FILE *f)
{
	const struct cmd_entry	*c;
	u_int			 i;

	fprintf(f, ".\\\" gmux(1), made by: gmux help --man\n"
	    ".TH GMUX 1 \"\" \"gmux %s\" \"User Commands\"\n"
	    ".nh\n.SH NAME\ngmux \\- share GPUs: every job gets a capped "
	    "share of a card\n"
	    ".SH SYNOPSIS\n.B gmux\n[\\-v] [\\-\\-local | \\-\\-remote NAME] "
	    "COMMAND [ARGS...]\n"
	    ".SH DESCRIPTION\n"
	    "A command goes to \\-\\-remote NAME, or with \\-\\-local, or when "
	    "a daemon runs here, to this machine's daemon; else to the hosts "
	    "of gmux remote ls.\n"
	    ".PP\nFiles live under $GMUX_HOME when it is set.\n"
	    ".SH COMMANDS\n", GMUX_VERSION);
	for (i = 0; (c = cmd_at(i)) != NULL; i++) {
		if (!c->hidden)
			man_command(f, c);
	}
	fputs(".SH SEE ALSO\nThe documents under docs/ in gmux's sources: "
	    "cli.md, api.md, isolation.md.\n", f);
}
