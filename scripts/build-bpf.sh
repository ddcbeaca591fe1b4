#!/usr/bin/env bash
# Remakes the BPF object of `fsynclab watch` kept in the repository, after an edit of its C
# program (src/explain/bpf/watch.bpf.c or a header beside it), and the record of what it was
# built from, watch.bpf.o.sources. Commit both: build.rs embeds the object without clang, and
# tests/install.rs fails while the record does not match the sources.
#
#   scripts/build-bpf.sh            remake src/explain/bpf/watch.bpf.o and watch.bpf.o.sources
#   scripts/build-bpf.sh --check    compile into a temporary file and compare: exit 1 if the
#                                   committed object differs, 3 if this clang is not the one
#                                   the record names (its output is then not comparable)
#
# Needs clang (scripts/setup.sh installs Debian 12's, 14.0.6, the one CI compares with) and
# libbpf's headers (libbpf-dev). The object is the same wherever the clone is
# (-fdebug-compilation-dir=.), so any machine with the recorded clang makes it byte for byte.
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "build-bpf.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
esac
clang=${CLANG:-clang}
dir=src/explain/bpf
object=$dir/watch.bpf.o
record=$dir/watch.bpf.o.sources
flags=(-g -O2 -target bpf -Wall -Werror -D__TARGET_ARCH_x86 -fdebug-compilation-dir=.)
command -v "$clang" >/dev/null 2>&1 ||
  { echo "build-bpf.sh: $clang not found: install clang and libbpf-dev (scripts/setup.sh)" >&2; exit 2; }
version=$("$clang" --version | head -n 1)
sources=("$dir/watch.bpf.c")
for header in "$dir"/*.h; do sources+=("$header"); done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
trap 'exit 130' INT TERM
"$clang" "${flags[@]}" -c "$dir/watch.bpf.c" -o "$out"
if [ "$check" -eq 1 ]; then
  recorded=$(sed -n 's/^clang: //p' "$record")
  if [ "$version" != "$recorded" ]; then
    echo "build-bpf.sh: this clang is '$version', the object was built with '$recorded': not comparable" >&2
    exit 3
  fi
  if cmp -s "$out" "$object"; then
    echo "$object is what $version makes of its sources"
    exit 0
  fi
  echo "$object differs from what $version makes of $dir/watch.bpf.c: run scripts/build-bpf.sh and commit both files" >&2
  exit 1
fi
cp "$out" "$object"
{
  echo "# What watch.bpf.o was built from, written by scripts/build-bpf.sh: after editing the C"
  echo "# program, run it and commit both files (build.rs and tests/install.rs read this one)."
  echo "clang: $version"
  echo "flags: ${flags[*]}"
  sha256sum "${sources[@]}" "$object"
} >"$record"
echo "remade $object ($(stat -c %s "$object") bytes) with $version; commit it with $record"
