#!/usr/bin/env bash
# small-files (iozone mode) side by side with iozone itself, interleaved: the seed's
# `iozone -s KB -e -i 0 -f FILE` (write + rewrite, fsync included, 4 KiB records) against
# `fsynclab run small-files --set mode=iozone --set sizes=KBk --set runs=PER`, same directory.
# Each round runs iozone PER times and fsynclab once with runs=PER, and keeps each side's
# median pass: fsynclab works in a new directory per invocation (ext4 places it in a fresh
# block group, whose first allocations are cold) while iozone reuses one, so single passes
# compare a cold directory with a warm one.
# Usage: benches/small-files-iozone.sh [DIR] [ROUNDS] [PER]   (iozone: package iozone3, Debian non-free)
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-$PWD/target/bench-disk}
rounds=${2:-5}
per=${3:-5}
command -v iozone >/dev/null || { echo "iozone is missing: apt-get install iozone3 (Debian non-free)" >&2; exit 2; }
cargo build --release --quiet
bin=$PWD/target/release/fsynclab
mkdir -p "$base"
dir=$(mktemp -d "$base/fsynclab-iozone-XXXXXX")
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM
out=$dir/rows
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "iozone:   iozone -s KB -e -i 0 -f $dir/iozone.tmp   (reclen 4 KiB by default)"
echo "fsynclab: $bin run small-files --dir $dir --set mode=iozone --set sizes=KBk --set runs=$per --set record=4k --format json (median columns)"
for r in $(seq "$rounds"); do
  for kb in 64 1024 8192; do
    for who in $( ((r % 2)) && echo "iozone fsynclab" || echo "fsynclab iozone"); do
      if [ "$who" = iozone ]; then
        rows=$(for _ in $(seq "$per"); do (cd "$dir" && iozone -s "$kb" -e -i 0 -f "$dir/iozone.tmp" | awk -v kb="$kb" '$1==kb && $2==4 {print $3, $4}'); done)
        row="$(echo "$rows" | awk '{print $1}' | median) $(echo "$rows" | awk '{print $2}' | median)"
      else
        row=$("$bin" run small-files --quiet --dir "$dir" --set mode=iozone --set "sizes=${kb}k" --set "runs=$per" --set record=4k --format json | jq -r '.tables[0].rows[0][4:6] | map(tostring) | join(" ")')
      fi
      echo "$who $kb $row" >>"$out"
    done
  done
done
printf '%-7s %-9s %14s %14s %8s\n' "kB" "pass" "iozone KB/s" "fsynclab KB/s" "ratio"
for kb in 64 1024 8192; do
  for col in 3 4; do
    i=$(awk -v kb="$kb" -v c="$col" '$1=="iozone" && $2==kb {print $c}' "$out" | median)
    f=$(awk -v kb="$kb" -v c="$col" '$1=="fsynclab" && $2==kb {print $c}' "$out" | median)
    printf '%-7s %-9s %14.0f %14.0f %8.3f\n' "$kb" "$([ "$col" = 3 ] && echo write || echo rewrite)" "$i" "$f" "$(echo "$f / $i" | bc -l)"
  done
done
echo "(medians over $rounds interleaved rounds of each side's median of $per passes; ratio = fsynclab / iozone)"
