"""gmux completion and gmux(1): made from the command table, so every
command and every option it lists completes in a real bash, and the manual
page renders in man without a warning."""

import os
import re
import subprocess

import pytest

from conftest import GMUX

pytestmark = pytest.mark.once      # no daemon: nothing for its ASan pass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


def out(*args):
    return subprocess.run([GMUX] + list(args), capture_output=True,
                          text=True, check=True).stdout


def commands():
    top = out("help").split("commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in top.splitlines()]


def options(cmd):
    """The flags of cmd as its --help lists them (read here, not by gmux)."""
    text = out(cmd, "--help").split("options:\n", 1)[1].split("\n\n")[0]
    flags = []
    for line in text.splitlines():
        if line.startswith("  -"):
            names = re.split(r"\s{2,}", line.strip())[0]
            flags += [n.split()[0] for n in names.split(", ")]
    return flags


def saved(tmp_path_factory, shell, name):
    """gmux completion SHELL, saved as a file named name."""
    path = tmp_path_factory.mktemp(shell) / name
    path.write_text(out("completion", shell))
    return str(path)


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    return saved(tmp_path_factory, "bash", "gmux.bash")


def complete(script, words):
    """What bash's completion of `words` (the last one being typed) offers,
    calling the function that `complete -p gmux` names, as bash would."""
    prog = ("source %s\n"
            "spec=$(complete -p gmux) || exit 3\n"
            "fn=${spec#*-F }; fn=${fn%% *}\n"
            "COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1))\n"
            "COMP_LINE=\"$*\"; COMP_POINT=${#COMP_LINE}\n"
            "$fn gmux \"${COMP_WORDS[COMP_CWORD]}\" "
            "\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
            "printf '%%s\\n' \"${COMPREPLY[@]}\"\n") % script
    r = subprocess.run(["bash", "--norc", "-c", prog, "bash"] + words,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return [w for w in r.stdout.splitlines() if w]


def test_every_command_completes(script):
    cmds = commands()
    assert "completion" in cmds and "remote" in cmds
    assert set(complete(script, ["gmux", ""])) == set(cmds)
    for c in cmds:
        assert c in complete(script, ["gmux", c[:2]]), c
        # after the global flags too
        assert c in complete(script, ["gmux", "--remote", "gpu1", c[:3]])


def test_every_option_completes(script):
    for c in commands():
        flags = options(c)
        assert "--help" in flags
        offered = complete(script, ["gmux", c, "-"])
        for f in flags:
            assert f in offered, (c, f)
            assert f in complete(script, ["gmux", "-v", c, f]), (c, f)


def test_subcommands_complete(script):
    assert complete(script, ["gmux", "remote", ""]) == \
        ["add", "ls", "default", "rm"]
    assert complete(script, ["gmux", "token", "re"]) == ["revoke"]
    assert complete(script, ["gmux", "completion", "f"]) == ["fish"]
    assert "serve" in complete(script, ["gmux", "help", "s"])
    # a flag's value is left to the shell's default (files)
    assert complete(script, ["gmux", "run", "--share", ""]) == []


def test_zsh_and_fish_scripts():
    assert out("completion", "zsh").startswith("#compdef gmux\n")
    fish = out("completion", "fish")
    assert "__fish_seen_subcommand_from run' -l share -r" in fish
    r = subprocess.run([GMUX, "completion", "tcsh"], capture_output=True,
                       text=True)
    assert r.returncode == 2 and "shell" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


# zsh runs the bash function through its own bashcompinit (as the script
# says); zsh's compadd, which keeps the words that begin with what is being
# typed, is the one piece stood in for: it works only inside a widget.
# compinit costs a second or more, so one zsh answers every query: each
# line of its input is one (the words split by tabs), each answered in a
# subshell of its own (nothing one leaves behind reaches the next) and
# followed by a line holding only ASCII RS.
ZSH_DRIVER = r"""
autoload -U compinit && compinit -u -D
source "$1"; shift
compadd() {
	local a
	while (( $# )); do
		case $1 in
		-a) shift; for a in ${(P)1}; [[ $a == ${words[CURRENT]}* ]] &&
			print -r -- $a ;;
		-S|-V|-J|-X) shift ;;
		-) shift; for a in "$@"; [[ $a == ${words[CURRENT]}* ]] &&
			print -r -- $a; return 0 ;;
		esac
		shift
	done
}
_default() { return 1 }
compset() { return 1 }
while IFS= read -r line; do
	(
		words=("${(@ps:\t:)line}")
		CURRENT=${#words}
		eval "${_comps[gmux]}"
	)
	print -r -- $'\x1e'
done
"""


@pytest.fixture(scope="module")
def zsh_script(tmp_path_factory):
    return saved(tmp_path_factory, "zsh", "_gmux")


def zsh_complete_all(script, queries):
    """What zsh offers for each list of words in queries (in their order),
    gmux's zsh completion loaded."""
    assert all("\t" not in w and "\n" not in w for q in queries for w in q)
    text = "".join("\t".join(q) + "\n" for q in queries)
    r = subprocess.run(["zsh", "-f", "-c", ZSH_DRIVER, "zsh", script],
                       input=text, capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", r
    answers = r.stdout.split("\x1e\n")
    assert len(answers) == len(queries) + 1 and answers[-1] == "", r
    return [[w for w in a.splitlines() if w] for a in answers[:-1]]


def fish_complete(script, line):
    """What fish's own `complete -C` offers for the command line."""
    r = subprocess.run(["fish", "--no-config", "-c",
                        "source $argv[1]; complete -C $argv[2]",
                        script, line], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", r
    return [w.split("\t")[0] for w in r.stdout.splitlines() if w]


@pytest.fixture(scope="module")
def fish_script(tmp_path_factory):
    return saved(tmp_path_factory, "fish", "gmux.fish")


def test_zsh_completes_commands_options_and_subcommands(zsh_script):
    cmds = commands()
    queries = [["gmux", ""], ["gmux", "remote", ""], ["gmux", "run", "--sh"]]
    for c in cmds:
        queries += [["gmux", c[:2]], ["gmux", c, "-"]]
    got = zsh_complete_all(zsh_script, queries)
    assert set(got[0]) == set(cmds)
    assert got[1] == ["add", "ls", "default", "rm"]
    assert got[2] == ["--share"]
    for i, c in enumerate(cmds):
        assert c in got[3 + 2 * i], c
        offered = got[4 + 2 * i]
        for f in options(c):
            assert f in offered, (c, f)


def test_fish_completes_commands_options_and_subcommands(fish_script):
    cmds = commands()
    assert set(fish_complete(fish_script, "gmux ")) >= set(cmds)
    for c in cmds:
        assert c in fish_complete(fish_script, "gmux " + c[:2]), c
        offered = fish_complete(fish_script, "gmux %s -" % c)
        for f in options(c):
            assert f in offered, (c, f)
    assert fish_complete(fish_script, "gmux run --sh") == ["--share"]
    assert set(fish_complete(fish_script, "gmux remote ")) >= \
        {"add", "ls", "default", "rm"}


def test_man_page_renders(tmp_path):
    page = tmp_path / "gmux.1"
    page.write_text(out("help", "--man"))
    built = os.path.join(os.path.dirname(GMUX), "gmux.1")
    if os.path.exists(built):
        assert open(built).read() == page.read_text()
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
    r = subprocess.run(["man", "--warnings", "-l", str(page)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    text = r.stdout
    for c in commands():
        assert re.search(r"^   %s$" % c, text, re.M), c
    assert "--share F" in text and "-d, --detach" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_make_install_puts_man_and_completions(tmp_path):
    build = os.path.dirname(GMUX)
    r = subprocess.run(["make", "-s", "install", "O=" + build,
                        "DESTDIR=" + str(tmp_path), "PREFIX=/usr"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    share = tmp_path / "usr/share"
    assert (share / "man/man1/gmux.1").read_text() == out("help", "--man")
    assert (share / "bash-completion/completions/gmux").read_text() == \
        out("completion", "bash")
    assert (share / "zsh/site-functions/_gmux").exists()
    assert (share / "fish/vendor_completions.d/gmux.fish").exists()
