/*
 * cmd-flags.c: a command's options and subcommands read back from its
 * table entry (the --help text is the one description of them), for the
 * completion scripts and the manual page.
 */

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "cmd-int.h"

static void
flag_add(struct cmd_flag **fl, u_int *n, const char *name, size_t len,
    const char *value, const char *text)
{
	struct cmd_flag	*f;

	*fl = xreallocarray(*fl, *n + 1, sizeof **fl);
	f = &(*fl)[(*n)++];
	f->name = xstrndup(name, len);
	f->value = value != NULL ? xstrdup(value) : NULL;
	f->text = xstrdup(text);
	f->alias = 0;
}

/*
 * One option line: "  -d, --detach         text" or "  --share F   text".
 * Each name separated by ", " becomes a flag with the line's value.
 */
static void
flag_line(struct cmd_flag **fl, u_int *n, const char *line, size_t len)
{
	char	*part, *text, *value, *name, *next;
	char	*end;

	part = xstrndup(line + 2, len - 2);
	text = strstr(part, "  ");
	if (text != NULL) {
		*text = '\0';
		for (text += 2; *text == ' '; text++)
			;
	} else
		text = part + strlen(part);
	value = strrchr(part, ' ');
	if (value != NULL && value[1] != '-')
		*value++ = '\0';
	else
		value = NULL;
	for (name = part; name != NULL; name = next) {
		if ((next = strstr(name, ", ")) != NULL)
			*next = '\0', next += 2;
		end = name + strcspn(name, " ");
		flag_add(fl, n, name, end - name, value, text);
		(*fl)[*n - 1].alias = name != part;
	}
	free(part);
}

/* A continuation line: more of the previous option's text. */
static void
flag_more(struct cmd_flag *f, const char *line, size_t len)
{
	char	*s;

	while (len > 0 && *line == ' ')
		line++, len--;
	xasprintf(&s, "%s %.*s", f->text, (int)len, line);
	free(f->text);
	f->text = s;
}

/*
 * The options of c, those every command takes last.  The caller frees
 * the array with cmd_flags_free.
 */
u_int
cmd_flags(const struct cmd_entry *c, struct cmd_flag **fl)
{
	const char	*p = c->options != NULL ? c->options : "", *e;
	u_int		 n = 0;

	*fl = NULL;
	for (; *p != '\0' && *p != '\n'; p = *e != '\0' ? e + 1 : e) {
		e = p + strcspn(p, "\n");
		if (strncmp(p, "  -", 3) == 0)
			flag_line(fl, &n, p, e - p);
		else if (n > 0)
			flag_more(&(*fl)[n - 1], p, e - p);
	}
	if (!c->here) {
		flag_add(fl, &n, "--remote", 8, "NAME", "on remote host NAME "
		    "(gmux remote)");
		flag_add(fl, &n, "--local", 7, NULL, "on this machine's "
		    "daemon");
	}
	flag_add(fl, &n, "-h", 2, NULL, "show this help");
	flag_add(fl, &n, "--help", 6, NULL, "show this help");
	(*fl)[n - 1].alias = 1;
	return (n);
}

void
cmd_flags_free(struct cmd_flag *fl, u_int n)
{
	u_int	 i;

	for (i = 0; i < n; i++) {
		free(fl[i].name);
		free(fl[i].value);
		free(fl[i].text);
	}
	free(fl);
}

/* Whether s (len bytes) is a subcommand's name: lower case words. */
static int
is_word(const char *s, size_t len)
{
	size_t	 i;

	if (len == 0 || !islower((u_char)s[0]))
		return (0);
	for (i = 0; i < len; i++) {
		if (!islower((u_char)s[i]) && s[i] != '-')
			return (0);
	}
	return (1);
}

/*
 * The subcommands in c's synopsis: the first word of each alternative of
 * "[add NAME | ls [--json] | rm NAME]".  The caller frees the array with
 * cmd_words_free.
 */
u_int
cmd_subcommands(const struct cmd_entry *c, char ***words)
{
	const char	*p = c->args;
	size_t		 len;
	u_int		 n = 0;

	*words = NULL;
	while (p != NULL) {
		while (*p == ' ' || *p == '[' || *p == '|')
			p++;
		len = strcspn(p, " ]");
		if (is_word(p, len)) {
			*words = xreallocarray(*words, n + 1, sizeof **words);
			(*words)[n++] = xstrndup(p, len);
		}
		if ((p = strstr(p, " | ")) != NULL)
			p += 3;
	}
	return (n);
}

void
cmd_words_free(char **words, u_int n)
{
	u_int	 i;

	for (i = 0; i < n; i++)
		free(words[i]);
	free(words);
}

/* What follows c's options in its --help: notes, or "". */
const char *
cmd_notes(const struct cmd_entry *c)
{
	const char	*notes;

	if (c->options == NULL)
		return ("");
	if ((notes = strstr(c->options, "\n\n")) == NULL)
		return ("");
	return (notes + 2);
}
