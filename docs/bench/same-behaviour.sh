#!/usr/bin/env bash
# Whether two fsynclab binaries behave the same where a restructuring must not change anything
# (issue 62): every command's --help, what the describing commands print, and what each reads
# back of the same stored runs (runs, show, explain, export, compare, and the HTML report, byte
# for byte), for runs the first binary made and for runs the second made.
#
#   docs/bench/same-behaviour.sh BASE NEW      as root (the runs make scratch filesystems)
#
# Prints a line per check and "N checks, M differ"; exits 1 when any differs, after showing the
# first lines of each difference. Nothing is left behind (a temporary directory of its own).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BASE NEW (two fsynclab binaries)" >&2; exit 2; }
base=$(readlink -f "$1"); new=$(readlink -f "$2")
for b in "$base" "$new"; do [ -x "$b" ] || { echo "$0: $b is not an executable" >&2; exit 2; }; done
[ "$(id -u)" -eq 0 ] || { echo "$0: the runs it stores need root" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
checks=0; differ=0

# same NAME ARGS...: runs ARGS with each binary (in the same directory, the same store) and
# compares stdout, stderr and the exit status.
same() {
  local name=$1; shift
  local out=$work/out; mkdir -p "$out"
  (cd "$work" && "$base" "$@" >"$out/base.stdout" 2>"$out/base.stderr"; echo $? >"$out/base.status") || true
  (cd "$work" && "$new" "$@" >"$out/new.stdout" 2>"$out/new.stderr"; echo $? >"$out/new.status") || true
  checks=$((checks + 1))
  local bad=""
  for part in stdout stderr status; do
    if ! cmp -s "$out/base.$part" "$out/new.$part"; then
      bad="$bad $part"
      diff "$out/base.$part" "$out/new.$part" | head -5 | sed 's/^/    /' || true
    fi
  done
  if [ -n "$bad" ]; then differ=$((differ + 1)); echo "DIFFERS $name:$bad"; else echo "same    $name"; fi
}

# Every command's --help, found by walking the "Commands:" lists of --help.
commands() {
  local prefix=("$@")
  "$base" "${prefix[@]}" --help 2>/dev/null | awk '/^Commands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{on=0}' |
    while read -r sub; do
      [ "$sub" = help ] && continue
      echo "${prefix[*]} $sub"
      commands "${prefix[@]}" "$sub"
    done
}
same "--help" --help
same "--version" --version
while read -r line; do
  # shellcheck disable=SC2086
  same "$line --help" $line --help
  # shellcheck disable=SC2086
  same "$line -h" $line -h
done < <(commands)

# What the describing commands print.
same "list" list
same "list --format json" list --format json
same "list-devices" list-devices
for shell in bash zsh fish elvish powershell; do same "completions $shell" completions "$shell"; done
"$base" manpages "$work/man-base" >/dev/null; "$new" manpages "$work/man-new" >/dev/null
checks=$((checks + 1))
if diff -r "$work/man-base" "$work/man-new" >/dev/null; then echo "same    manpages"; else differ=$((differ + 1)); echo "DIFFERS manpages"; fi

# Runs stored by each binary, read back by both.
tiny=(--set duration=1s --set sleep=100ms --set file_size=16M --set chunk=1M --set random_file_size=16M --quiet)
for maker in base new; do
  bin=$base; [ "$maker" = new ] && bin=$new
  store=$work/$maker.sqlite
  mkdir -p "$work/dir-$maker"
  "$bin" run overwrite-fsync --dir "$work/dir-$maker" "${tiny[@]}" --store "$store" >/dev/null 2>&1 || echo "        ($maker: a run exited $?)"
  "$bin" run overwrite-fsync --scratch ext4 --device hdd-7200 --backing "$work" --explain "${tiny[@]}" --store "$store" >/dev/null 2>&1 || echo "        ($maker: a run exited $?)"
  "$bin" probe --dir "$work/dir-$maker" --set iterations=20 --quiet --store "$store" >/dev/null 2>&1 || echo "        ($maker: a run exited $?)"
  "$bin" exec --dir "$work/dir-$maker" --explain --store "$store" -- sh -c 'for i in 1 2 3; do dd if=/dev/zero of=f bs=4k count=1 oflag=dsync status=none; done' >/dev/null 2>&1 || echo "        ($maker: a run exited $?)"
  "$bin" matrix overwrite-fsync --dir "$work/dir-$maker" --axis sync=fsync,fdatasync --repeat 1 "${tiny[@]}" --store "$store" >/dev/null 2>&1 || true
  "$bin" watch --duration 2s --store "$store" >/dev/null 2>&1 || true
  n=$("$bin" runs --store "$store" --format json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
  echo "        ($maker made $n runs)"
  same "runs ($maker's)" runs --store "$store"
  same "runs --format json ($maker's)" runs --store "$store" --format json
  for id in $(seq 1 "$n"); do
    same "show $id ($maker's)" show "$id" --store "$store"
    same "show $id -f json ($maker's)" show "$id" -f json --store "$store"
    same "explain $id ($maker's)" explain "$id" --store "$store"
    same "export $id ($maker's)" export "$id" --store "$store"
  done
  same "compare 1 3 ($maker's)" compare 1 3 --store "$store"
  (cd "$work" && "$base" report $(seq 1 "$n") --store "$store" -o "$work/base.html" >/dev/null 2>&1) || true
  (cd "$work" && "$new" report $(seq 1 "$n") --store "$store" -o "$work/new.html" >/dev/null 2>&1) || true
  checks=$((checks + 1))
  if cmp -s "$work/base.html" "$work/new.html"; then echo "same    report of $n runs ($maker's), $(wc -c <"$work/new.html") bytes"; else differ=$((differ + 1)); echo "DIFFERS report ($maker's)"; fi
done
echo "$checks checks, $differ differ"
[ "$differ" -eq 0 ]
