#!/usr/bin/env bash
# Installs what fsynclab needs on a Debian machine: the Rust toolchain is expected; the
# Debian packages are only installed when missing and when we are root. mkfs.* for the
# scratch filesystems, fuse3 for emulated disks, mount for losetup, chromium for the test that
# renders the HTML report headless (tests/html_report.rs); slurm-wlm, munge and postgresql for
# the testing farm's test (tests/farm.rs), which brings up its own Slurm cluster and
# PostgreSQL server with scripts/farm-up.sh (no daemon of these packages is used or started),
# python3-yaml, with which that test reads the Kubernetes manifest back; bash-completion and
# man-db, with which scripts/test.sh checks what scripts/install.sh installs. The BPF tracer
# (`fsynclab watch`, src/explain/bpf/): its C program's object is kept in the repository, and
# clang with libbpf-dev's headers remake it (scripts/build-bpf.sh) and check it (tests/install.rs);
# libbpf, which libbpf-sys builds from its own copy with make and pkg-config, needs libelf-dev and
# zlib1g-dev; bpftool is only for the test that checks no BPF program is left behind.
# scripts/build-release.sh links the binary statically with libc6-dev's libc.a, libelf-dev's
# libelf.a and zlib1g-dev's libz.a, strips and checks it with binutils, and packs it with
# dpkg-deb; its --vendored (and scripts/build-without-dev.sh) builds libelf from source with
# autoconf, automake, autopoint, flex, bison and gawk instead.
# qemu-system-x86 and one Debian 6.1 kernel (the newest linux-image-6.1.0-NN-amd64 the
# configured sources have, unless one is installed) for `--kernel` and its tests
# (tests/kernel_vm.rs), which boot it with virtme-ng (a pip package, installed with the
# machine's configured pip; its initramfs for a modular kernel needs busybox-static);
# qemu-utils with them, so that qemu-img stays (apt replaces a newer one from elsewhere by
# the one that matches qemu-system-x86).
# linux-source-6.1 (Debian's kernel source, /usr/src/linux-source-6.1.tar.xz) with what a
# kernel build needs (make, gcc, bc, bison, flex, libssl-dev; dwarves' pahole for the kernel's
# BTF; libelf-dev is above) for scripts/build-kernel.sh, which builds the kernels fsynclab
# compares (docs/kernels.md); CI's tests/kernel_build.rs checks the patches and the config
# fragment against that source.
# `scripts/setup.sh --second-kernel` also installs Debian's newest 6.12 kernel
# (linux-image-6.12.NN+deb12-amd64), so that two kernels can be compared booted the same
# way, under the same accelerator (docs/kernels.md); no test needs it.
set -euo pipefail
second_kernel=0
for arg in "$@"; do
  case "$arg" in
    --second-kernel) second_kernel=1 ;;
    -h|--help) echo "usage: scripts/setup.sh [--second-kernel]   (as root: installs what fsynclab and its tests need)"; exit 0 ;;
    *) echo "scripts/setup.sh: unknown argument $arg (try --help)" >&2; exit 2 ;;
  esac
done
need=()
for pkg in e2fsprogs xfsprogs btrfs-progs fuse3 mount bash-completion man-db chromium slurm-wlm munge postgresql python3-yaml \
  clang libbpf-dev libelf-dev zlib1g-dev pkg-config make libc6-dev binutils \
  autoconf automake autopoint flex bison gawk bpftool qemu-system-x86 qemu-utils busybox-static \
  linux-source-6.1 gcc bc libssl-dev dwarves; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
  else
    echo "missing Debian packages: ${need[*]} (run: sudo apt-get install ${need[*]})" >&2
  fi
fi
if [ "$(id -u)" -eq 0 ]; then
  if ! compgen -G '/boot/vmlinuz-6.1.0-*-amd64' >/dev/null; then
    [ "${#need[@]}" -gt 0 ] || apt-get update -qq
    kernel=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' | cut -d' ' -f1 | sort -V | tail -n 1)
    if [ -n "$kernel" ]; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$kernel"
    else
      echo "no linux-image-6.1.0-NN-amd64 in the configured apt sources: --kernel's tests will skip" >&2
    fi
  fi
  if [ "$second_kernel" -eq 1 ] && ! compgen -G '/boot/vmlinuz-6.12.*-amd64' >/dev/null; then
    apt-get update -qq
    kernel=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb[0-9]+-amd64$' | cut -d' ' -f1 | sort -V | tail -n 1)
    if [ -n "$kernel" ]; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$kernel"
    else
      echo "no linux-image-6.12.NN+debNN-amd64 in the configured apt sources (bookworm's or bookworm-backports')" >&2
      exit 1
    fi
  fi
else
  compgen -G '/boot/vmlinuz-6.1.0-*-amd64' >/dev/null ||
    echo "no Debian 6.1 kernel in /boot (run as root: scripts/setup.sh)" >&2
  [ "$second_kernel" -eq 0 ] || { echo "--second-kernel installs a kernel: run as root" >&2; exit 1; }
fi
if ! command -v vng >/dev/null 2>&1; then
  if command -v pip3 >/dev/null 2>&1; then
    pip3 install -q virtme-ng || echo "pip3 install virtme-ng failed: --kernel needs virtme-ng (vng)" >&2
  else
    echo "pip3 not found: --kernel needs virtme-ng (pip3 install virtme-ng)" >&2
  fi
fi
# pip puts vng beside its Python's scripts, which a shell without that Python's shims (a CI
# job, sudo) may not have on its PATH: as root, link it where every PATH looks.
if ! command -v vng >/dev/null 2>&1 || [ "$(id -u)" -eq 0 ]; then
  scripts=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))' 2>/dev/null || true)
  if [ -x "$scripts/vng" ] && [ "$(id -u)" -eq 0 ] && [ ! -e /usr/local/bin/vng ]; then
    ln -s "$scripts/vng" /usr/local/bin/vng
  fi
fi
