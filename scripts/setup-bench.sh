#!/usr/bin/env bash
# Installs the independent tools the side-by-side benchmarks compare fsynclab with (benches/,
# docs/bench/): fio, sysbench, jq, bc, PostgreSQL's pg_test_fsync, and iozone3, which is in
# Debian's non-free component (enabled here for that one package); and the programs the
# `exec --explain` demonstrations trace (docs/bench/exec-explain.sh): PostgreSQL 15
# (initdb, pg_ctl, pgbench, in postgresql-15 with pg_test_fsync) and sqlite3. They are
# here, not in scripts/setup.sh, because no test needs them: the tests of exec --explain
# trace dd and sync from coreutils, and CI installs only what the tests use. Run as root,
# once.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "run as root: sudo $0" >&2; exit 2; }
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
policy=$(apt-cache policy iozone3 2>/dev/null || true)
if [[ "$policy" != *Candidate:* || "$policy" == *"Candidate: (none)"* ]]; then
  cat >/etc/apt/sources.list.d/fsynclab-nonfree.sources <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: $codename
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio sysbench jq bc postgresql-15 sqlite3 iozone3
