/*
 * cmd-completion.c: gmux completion bash|zsh|fish, a shell's completion
 * script made from the command table (so it cannot fall behind it).
 */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "cmd-int.h"

static int	cmd_completion_exec(int, char **);

const struct cmd_entry cmd_completion_entry = {
	.name = "completion",
	.args = "bash | zsh | fish",
	.help = "print a shell's completion script",
	.options =
	    "\nbash: eval \"$(gmux completion bash)\" in ~/.bashrc, or save "
	    "it as\n/usr/share/bash-completion/completions/gmux.  zsh: save "
	    "it as _gmux in a\ndirectory of $fpath.  fish: save it as\n"
	    "~/.config/fish/completions/gmux.fish.\n",
	.exec = cmd_completion_exec,
	.here = 1,
};

static const struct option completion_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* The global options gmux takes before its command. */
#define COMPLETION_GLOBAL "-v --verbose -V --version -h --help --remote --local"

/* Each command's name, separated by spaces. */
static void
completion_names(FILE *f)
{
	const struct cmd_entry	*c;
	u_int			 i;

	for (i = 0; (c = cmd_at(i)) != NULL; i++) {
		if (!c->hidden)
			fprintf(f, "%s%s", i == 0 ? "" : " ", c->name);
	}
}

/* What the word after c's name may be: its subcommands, or commands. */
static void
completion_words(FILE *f, const struct cmd_entry *c)
{
	char	**words;
	u_int	  n, i;

	if (c == &cmd_help_entry) {
		completion_names(f);
		return;
	}
	n = cmd_subcommands(c, &words);
	for (i = 0; i < n; i++)
		fprintf(f, "%s%s", i == 0 ? "" : " ", words[i]);
	cmd_words_free(words, n);
}

/* c's flags, separated by spaces. */
static void
completion_flags(FILE *f, const struct cmd_entry *c)
{
	struct cmd_flag	*fl;
	u_int		 n, i;

	n = cmd_flags(c, &fl);
	for (i = 0; i < n; i++)
		fprintf(f, "%s%s", i == 0 ? "" : " ", fl[i].name);
	cmd_flags_free(fl, n);
}

/*
 * A case statement that completes nothing (the shell's default, files)
 * after a flag of c's that takes a value.
 */
static void
completion_values(FILE *f, const struct cmd_entry *c)
{
	struct cmd_flag	*fl;
	u_int		 n, i, k = 0;

	n = cmd_flags(c, &fl);
	for (i = 0; i < n; i++) {
		if (fl[i].value == NULL)
			continue;
		fprintf(f, "%s%s", k++ == 0 ? "\t\tcase $prev in\n\t\t" :
		    "|", fl[i].name);
	}
	if (k > 0)
		fprintf(f, ") return ;;\n\t\tesac\n");
	cmd_flags_free(fl, n);
}

static void
completion_bash_case(FILE *f, const struct cmd_entry *c)
{
	fprintf(f, "\t%s)\n\t\topts='", c->name);
	completion_flags(f, c);
	fprintf(f, "'\n\t\twords='");
	completion_words(f, c);
	fprintf(f, "'\n");
	completion_values(f, c);
	fprintf(f, "\t\t;;\n");
}

static const char completion_bash_head[] =
    "# gmux's completion for bash, made by: gmux completion bash\n"
    "_gmux()\n"
    "{\n"
    "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
    "\tlocal i cmd= at=0 opts= words=\n"
    "\tCOMPREPLY=()\n"
    "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
    "\t\tcase ${COMP_WORDS[i]} in\n"
    "\t\t--remote) ((i++)) ;;\n"
    "\t\t-*) ;;\n"
    "\t\t*) cmd=${COMP_WORDS[i]}; at=$i; break ;;\n"
    "\t\tesac\n"
    "\tdone\n"
    "\tif [[ -z $cmd ]]; then\n"
    "\t\t[[ $prev == --remote ]] && return\n"
    "\t\tif [[ $cur == -* ]]; then\n"
    "\t\t\tCOMPREPLY=($(compgen -W '" COMPLETION_GLOBAL "' -- \"$cur\"))\n"
    "\t\telse\n"
    "\t\t\tCOMPREPLY=($(compgen -W '";

static const char completion_bash_tail[] =
    "\t*) return ;;\n"
    "\tesac\n"
    "\tif [[ $cur == -* ]]; then\n"
    "\t\tCOMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
    "\telif [[ -n $words ]] && ((COMP_CWORD == at + 1)); then\n"
    "\t\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
    "\tfi\n"
    "}\n"
    "complete -o bashdefault -o default -F _gmux gmux\n";

static void
completion_bash(FILE *f)
{
	const struct cmd_entry	*c;
	u_int			 i;

	fputs(completion_bash_head, f);
	completion_names(f);
	fprintf(f, "' -- \"$cur\"))\n\t\tfi\n\t\treturn\n\tfi\n"
	    "\tcase $cmd in\n");
	for (i = 0; (c = cmd_at(i)) != NULL; i++)
		completion_bash_case(f, c);
	fputs(completion_bash_tail, f);
}

/* s in single quotes, for the shells (fish escapes as sh does). */
static void
completion_quote(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s != '\0'; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else if (*s == '\\')
			fputs("\\\\", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

static void
completion_fish_cmd(FILE *f, const struct cmd_entry *c)
{
	struct cmd_flag	*fl;
	u_int		 n, i;

	fprintf(f, "complete -c gmux -n __fish_use_subcommand -a %s -d ",
	    c->name);
	completion_quote(f, c->help);
	fprintf(f, "\ncomplete -c gmux -n '__fish_seen_subcommand_from %s' "
	    "-f -a '", c->name);
	completion_words(f, c);
	fputs("'\n", f);
	n = cmd_flags(c, &fl);
	for (i = 0; i < n; i++) {
		fprintf(f, "complete -c gmux -n '__fish_seen_subcommand_from "
		    "%s' %s %s%s -d ", c->name, fl[i].name[1] == '-' ? "-l" :
		    "-s", fl[i].name + strspn(fl[i].name, "-"),
		    fl[i].value != NULL ? " -r" : "");
		completion_quote(f, fl[i].text);
		fputc('\n', f);
	}
	cmd_flags_free(fl, n);
}

static void
completion_fish(FILE *f)
{
	const struct cmd_entry	*c;
	u_int			 i;

	fputs("# gmux's completion for fish, made by: gmux completion fish\n"
	    "complete -c gmux -n __fish_use_subcommand -s v -l verbose\n"
	    "complete -c gmux -n __fish_use_subcommand -l remote -r\n"
	    "complete -c gmux -n __fish_use_subcommand -l local\n", f);
	for (i = 0; (c = cmd_at(i)) != NULL; i++) {
		if (!c->hidden)
			completion_fish_cmd(f, c);
	}
}

/*
 * zsh runs the bash script through its bashcompinit (one script to keep
 * right, and tests drive it in bash).
 */
static void
completion_zsh(FILE *f)
{
	fputs("#compdef gmux\n"
	    "# gmux's completion for zsh, made by: gmux completion zsh\n"
	    "autoload -U +X bashcompinit && bashcompinit\n", f);
	completion_bash(f);
}

/* The completion script for shell (bash, zsh, fish); -1 if none. */
int
completion_write(FILE *f, const char *shell)
{
	if (strcmp(shell, "bash") == 0)
		completion_bash(f);
	else if (strcmp(shell, "zsh") == 0)
		completion_zsh(f);
	else if (strcmp(shell, "fish") == 0)
		completion_fish(f);
	else
		return (-1);
	return (0);
}

static int
cmd_completion_exec(int argc, char **argv)
{
	while (cmd_getopt(&cmd_completion_entry, argc, argv, "h",
	    completion_opts) != -1)
		;
	if (optind + 1 != argc)
		cmd_usage_error(&cmd_completion_entry, "shell: give one of "
		    "bash, zsh, fish");
	if (completion_write(stdout, argv[optind]) != 0)
		cmd_usage_error(&cmd_completion_entry, "shell: '%s' is not "
		    "bash, zsh or fish", argv[optind]);
	return (0);
}
