#!/usr/bin/env bash
# Installs fsynclab from this clone: the binary (`cargo install --locked --path .`), one man
# page per command (`man fsynclab-run`) and the bash completion (`fsynclab run <TAB>`).
#
#   scripts/install.sh                  as root: /usr/local; otherwise ~/.local
#   scripts/install.sh --prefix DIR     DIR/bin, DIR/share/man/man1, DIR/share/bash-completion
#   scripts/install.sh --debug          a debug build (faster to build; the tests use it)
#
# zsh and fish completions: `fsynclab completions zsh|fish` prints them.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=""
profile=()
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || { echo "install.sh: --prefix needs a directory" >&2; exit 2; }; prefix=$2; shift 2 ;;
    --debug) profile=(--debug); shift ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$prefix" ]; then
  if [ "$(id -u)" -eq 0 ]; then prefix=/usr/local; else prefix=$HOME/.local; fi
fi
# Checked before the build, which takes minutes: a prefix that cannot be written is one line.
if ! mkdir -p "$prefix" 2>/dev/null || [ ! -w "$prefix" ] || [ ! -x "$prefix" ]; then
  echo "install.sh: cannot write into $prefix (read-only, or not yours): choose another --prefix" >&2
  exit 2
fi
prefix=$(cd "$prefix" && pwd)
cargo install --locked --path . --root "$prefix" --force ${profile[@]+"${profile[@]}"}
bin=$prefix/bin/fsynclab
man_dir=$prefix/share/man/man1
completion_dir=$prefix/share/bash-completion/completions
mkdir -p "$man_dir" "$completion_dir"
"$bin" manpages "$man_dir" >/dev/null
"$bin" completions bash > "$completion_dir/fsynclab"
echo "installed $("$bin" --version): $bin, man pages in $man_dir, bash completion in $completion_dir"
case "$prefix" in
  /usr/local|"$HOME/.local") ;;
  *) echo "note: bash finds the completion when $prefix/share is in XDG_DATA_DIRS (export XDG_DATA_DIRS=$prefix/share:\${XDG_DATA_DIRS:-/usr/local/share:/usr/share})" ;;
esac
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "note: $prefix/bin is not on your PATH; add it (man finds the pages through PATH too)" ;;
esac
