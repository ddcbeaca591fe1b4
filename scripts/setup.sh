#!/usr/bin/env bash
# Installs what fsynclab needs on a Debian machine: the Rust toolchain is expected; the
# Debian packages are only installed when missing and when we are root. mkfs.* for the
# scratch filesystems, fuse3 for emulated disks, mount for losetup, chromium for the test that
# renders the HTML report headless (tests/html_report.rs); slurm-wlm, munge and postgresql for
# the testing farm's test (tests/farm.rs), which brings up its own Slurm cluster and
# PostgreSQL server with scripts/farm-up.sh (no daemon of these packages is used or started),
# python3-yaml, with which that test reads the Kubernetes manifest back; bash-completion and
# man-db, with which scripts/test.sh checks what scripts/install.sh installs. The BPF tracer
# (`fsynclab watch`, src/explain/bpf/) is built with clang (build.rs compiles its C program to a
# BPF object) against libbpf-dev's headers and library (found with pkg-config; libbpf needs
# libelf and zlib); bpftool is only for the test that checks no BPF program is left behind.
set -euo pipefail
need=()
for pkg in e2fsprogs xfsprogs btrfs-progs fuse3 mount bash-completion man-db chromium slurm-wlm munge postgresql python3-yaml \
  clang libbpf-dev libelf-dev zlib1g-dev pkg-config bpftool; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
  else
    echo "missing Debian packages: ${need[*]} (run: sudo apt-get install ${need[*]})" >&2
  fi
fi
