#!/usr/bin/env bash
# Builds fsynclab for a host with nothing installed: one static binary at OUTDIR/fsynclab
# (glibc, libbpf, libelf, zlib, SQLite and the BPF program of `fsynclab watch` inside it) and
# a Debian package of it at OUTDIR/fsynclab_VERSION_ARCH.deb (the binary, a man page per
# command, bash, zsh and fish completions). docs/install.md has the figures.
#
#   scripts/build-release.sh OUTDIR              the release build (cargo's release profile)
#   scripts/build-release.sh OUTDIR --debug      the same static binary unoptimized, reusing a
#                                                test build's dependencies (scripts/test.sh)
#   scripts/build-release.sh OUTDIR --vendored   libelf and zlib built from the sources
#                                                libbpf-sys bundles instead of libelf-dev's and
#                                                zlib1g-dev's archives (no -dev package needed)
#
# Static how: glibc's own static link (-C target-feature=+crt-static on the binary alone, so
# the dependencies a test build made are reused), libelf.a and libz.a through libbpf-sys's
# `static` feature (fsynclab's `static` and `vendored` features), SQLite bundled by rusqlite,
# the BPF object kept in the repository (build.rs). Needs what scripts/setup.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "build-release.sh: $*" >&2; exit 2; }
outdir=""
profile=(--release)
profile_dir=release
features=static
for arg in "$@"; do
  case "$arg" in
    --debug) profile=(); profile_dir=debug ;;
    --vendored) features=static,vendored ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $arg (try --help)" ;;
    *) [ -z "$outdir" ] || die "one OUTDIR only ($outdir, then $arg)"; outdir=$arg ;;
  esac
done
[ -n "$outdir" ] || die "usage: scripts/build-release.sh OUTDIR [--debug] [--vendored] (try --help)"

# Checked before the build, which takes minutes: each missing piece is one line.
[ ! -e "$outdir" ] || [ -d "$outdir" ] || die "$outdir exists and is not a directory: choose another OUTDIR"
for tool in cargo cc make pkg-config dpkg-deb dpkg gzip readelf objcopy; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found: run scripts/setup.sh (as root) first"
done
archive() { [ "$(cc -print-file-name="$1")" != "$1" ]; }
archive libc.a || die "no libc.a (glibc's static library): install libc6-dev"
if [ "$features" = static ]; then
  archive libelf.a || die "no libelf.a: install libelf-dev, or build with --vendored"
  archive libz.a || die "no libz.a: install zlib1g-dev, or build with --vendored"
else
  for tool in autoreconf autopoint flex bison gawk; do
    command -v "$tool" >/dev/null 2>&1 || die "--vendored needs $tool to build libelf: run scripts/setup.sh (as root) first"
  done
fi
made_outdir=0
[ -d "$outdir" ] || made_outdir=1
mkdir -p "$outdir" 2>/dev/null && [ -w "$outdir" ] || die "cannot write into $outdir: choose another OUTDIR"
outdir=$(cd "$outdir" && pwd)
stage=$(mktemp -d)
# Nothing half-made is left: the staging tree always goes, and OUTDIR's new files on failure.
cleanup() {
  status=$?
  rm -rf "$stage"
  if [ "$status" -ne 0 ]; then
    rm -f "$outdir/fsynclab" "$outdir"/fsynclab_*.deb
    [ "$made_outdir" -eq 0 ] || rmdir "$outdir" 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# libbpf-sys links libelf.a and libz.a into itself (its `static` feature) from the directories
# LIBBPF_SYS_LIBRARY_PATH names: the C compiler's own, where libelf-dev and zlib1g-dev put them.
if [ "$features" = static ]; then
  export LIBBPF_SYS_LIBRARY_PATH
  LIBBPF_SYS_LIBRARY_PATH=$(dirname "$(cc -print-file-name=libelf.a)"):$(dirname "$(cc -print-file-name=libz.a)")
fi
# The binary. --target is not given, so RUSTFLAGS would reach build scripts and proc macros
# too (which cannot be static): the flag is passed to the final link of fsynclab alone.
cargo rustc --locked ${profile[@]+"${profile[@]}"} --features "$features" --bin fsynclab -- -C target-feature=+crt-static
bin=${CARGO_TARGET_DIR:-target}/$profile_dir/fsynclab
if readelf -d "$bin" | grep -q NEEDED || readelf -l "$bin" | grep -q INTERP; then
  echo "build-release.sh: $bin still loads shared libraries:" >&2
  readelf -d "$bin" | grep NEEDED >&2 || true
  exit 1
fi
# Without its DWARF (the release profile keeps line tables: 90 MB), with its symbols, so that
# a panic's backtrace and perf on the host still name fsynclab's functions.
objcopy --strip-debug "$bin" "$outdir/fsynclab"
chmod 0755 "$outdir/fsynclab"

# The package: laid out under $stage as it installs, then built by dpkg-deb.
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
arch=$(dpkg --print-architecture)
root=$stage/root
install -d -m 0755 "$root/DEBIAN" "$root/usr/bin" "$root/usr/share/man/man1" \
  "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
  "$root/usr/share/fish/vendor_completions.d" "$root/usr/share/doc/fsynclab"
install -m 0755 "$outdir/fsynclab" "$root/usr/bin/fsynclab"
"$outdir/fsynclab" manpages "$root/usr/share/man/man1" >/dev/null
gzip -9n "$root"/usr/share/man/man1/*.1
"$outdir/fsynclab" completions bash >"$root/usr/share/bash-completion/completions/fsynclab"
"$outdir/fsynclab" completions zsh >"$root/usr/share/zsh/vendor-completions/_fsynclab"
"$outdir/fsynclab" completions fish >"$root/usr/share/fish/vendor_completions.d/fsynclab.fish"
cat >"$root/usr/share/doc/fsynclab/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: fsynclab

Files: *
License: MIT or Apache-2.0

Comment: /usr/bin/fsynclab is linked statically. Inside it are libbpf (LGPL-2.1 or
 BSD-2-Clause), elfutils' libelf (GPL-2+ or LGPL-3+), zlib (Zlib), SQLite (public domain),
 glibc (LGPL-2.1+), the Rust crates listed in fsynclab's Cargo.lock under their own
 licenses, and fsynclab's BPF program (GPL-2.0 or MIT).
EOF
chmod 0644 "$root"/usr/share/man/man1/* "$root"/usr/share/*/*/fsynclab* "$root"/usr/share/zsh/vendor-completions/_fsynclab \
  "$root"/usr/share/doc/fsynclab/copyright
cat >"$root/DEBIAN/control" <<EOF
Package: fsynclab
Version: $version
Architecture: $arch
Maintainer: fsynclab developers <fsynclab@invalid>
Installed-Size: $(du -sk "$root/usr" | cut -f1)
Section: admin
Priority: optional
Recommends: xfsprogs, btrfs-progs, fuse3
Suggests: qemu-system-x86, linux-image-amd64
Description: reproduce, measure and explain fsync latency on Linux
 fsynclab runs the experiments behind the fsync stalls Linux filesystem developers chased
 (a prober timing every write and sync call while a writer loads writeback), on scratch
 filesystems over emulated disks, and explains where each slow call's time went;
 fsynclab watch traces the slow sync calls of running programs with BPF.
 .
 One static binary: it needs no library. xfsprogs, btrfs-progs and fuse3 make the scratch
 filesystems and emulated disks; QEMU and a kernel image boot another kernel for --kernel.
EOF
(cd "$root" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"
deb=$outdir/fsynclab_${version}_${arch}.deb
rm -f "$outdir"/fsynclab_*.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "built $outdir/fsynclab ($(stat -c %s "$outdir/fsynclab") bytes, static) and $deb ($(stat -c %s "$deb") bytes)"
