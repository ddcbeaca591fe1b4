#!/usr/bin/env bash
# Builds fsynclab as a machine with only a Rust toolchain and a C compiler would: in a mount
# namespace of its own where clang and every file of libelf-dev, zlib1g-dev and libbpf-dev
# (headers, static archives, pkg-config files) are hidden under empty files, with the
# `vendored` feature (libelf and zlib built from the sources libbpf-sys bundles). Nothing
# hidden outlives the command: the namespace's mounts end with it.
#
#   scripts/build-without-dev.sh TARGET_DIR [CARGO_ARGS...]
#       e.g. scripts/build-without-dev.sh /tmp/nodev --release
#       then, as root: /tmp/nodev/release/fsynclab watch --duration 2s --no-store
#
# Needs root (mount namespaces), make, pkg-config, autoconf, automake, autopoint, flex, bison
# and gawk (libelf's build), which scripts/setup.sh installs. docs/install.md says what it showed.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "build-without-dev.sh: $*" >&2; exit 2; }
[ $# -ge 1 ] || die "usage: scripts/build-without-dev.sh TARGET_DIR [CARGO_ARGS...]"
[ "$(id -u)" -eq 0 ] || die "hiding the -dev packages takes a mount namespace: run it as root"
target=$1; shift
for tool in unshare make pkg-config autoreconf autopoint flex bison gawk; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found: run scripts/setup.sh (as root) first"
done
if [ -z "${FSYNCLAB_IN_NAMESPACE:-}" ]; then
  exec env FSYNCLAB_IN_NAMESPACE=1 unshare --mount --propagation private -- "$0" "$target" "$@"
fi
hidden=0
for pkg in libelf-dev zlib1g-dev libbpf-dev clang-14; do
  dpkg -s "$pkg" >/dev/null 2>&1 || continue
  while IFS= read -r file; do
    # Regular files only: a symbolic link (libz.so) points at a library the system runs on.
    if [ -f "$file" ] && [ ! -L "$file" ]; then
      mount --bind /dev/null "$file"
      hidden=$((hidden + 1))
    fi
  done < <(dpkg -L "$pkg")
done
echo "hidden: $hidden files of libelf-dev, zlib1g-dev, libbpf-dev and clang-14"
CARGO_TARGET_DIR=$target cargo build --locked --features vendored --bin fsynclab "$@"
