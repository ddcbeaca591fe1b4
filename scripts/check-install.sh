#!/usr/bin/env bash
# Checks an installation made by scripts/install.sh under PREFIX as a user would find it:
# the binary runs `--version`, `man fsynclab-run` finds its page through PATH, and bash (with
# the bash-completion package) completes `fsynclab run <TAB>` with the scenario names.
#   scripts/check-install.sh PREFIX
set -euo pipefail
prefix=${1:?usage: scripts/check-install.sh PREFIX}
export PATH=$prefix/bin:$PATH
fail() { echo "check-install: $*" >&2; exit 1; }
fsynclab --version | grep -q '^fsynclab ' || fail "fsynclab --version did not run from $prefix/bin"
page=$(man -w fsynclab-run 2>/dev/null) || fail "man does not find fsynclab-run (MANPATH or PATH?)"
case "$page" in "$prefix"/*) ;; *) fail "man found $page, not the page installed in $prefix" ;; esac
loader=/usr/share/bash-completion/bash_completion
[ -r "$loader" ] || fail "bash-completion is not installed (apt-get install bash-completion; scripts/setup.sh does)"
# bash-completion looks in /usr/local/share and ~/.local/share (the default prefixes) and in
# XDG_DATA_DIRS: a throw-away prefix is named there.
words=$(XDG_DATA_DIRS=$prefix/share:/usr/local/share:/usr/share bash -c "source $loader; _completion_loader fsynclab
  COMP_WORDS=(fsynclab run ''); COMP_CWORD=2; COMP_LINE='fsynclab run '; COMP_POINT=\${#COMP_LINE}
  \$(complete -p fsynclab | sed -E 's/.*-F ([^ ]+).*/\1/') fsynclab '' run; printf '%s\n' \"\${COMPREPLY[@]}\"")
grep -qx overwrite-fsync <<<"$words" || fail "bash does not complete 'fsynclab run <TAB>' with the scenarios: got $(echo $words | head -c 200)"
