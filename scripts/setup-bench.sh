#!/usr/bin/env bash
# Installs the independent tools the side-by-side benchmarks compare fsynclab with (benches/,
# docs/bench/): fio, sysbench, jq, bc, PostgreSQL's pg_test_fsync, and iozone3, which is in
# Debian's non-free component (added here, for that one package, to the archive the machine's
# own apt sources name); and the programs the
# `exec --explain` demonstrations trace (docs/bench/exec-explain.sh): PostgreSQL 15
# (initdb, pg_ctl, pgbench, in postgresql-15 with pg_test_fsync) and sqlite3; and bpftrace,
# the anchor docs/bench/watch-tax.sh measures `fsynclab watch` against. They are
# here, not in scripts/setup.sh, because no test needs them: the tests of exec --explain
# trace dd and sync from coreutils, and CI installs only what the tests use. Run as root,
# once.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "run as root: sudo $0" >&2; exit 2; }
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
policy=$(apt-cache policy iozone3 2>/dev/null || true)
if [[ "$policy" != *Candidate:* || "$policy" == *"Candidate: (none)"* ]]; then
  # The machine's own Debian archive (the address its sources already use for $codename),
  # with the non-free component added: no address of ours.
  uri=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -e "$f" ] || continue
    uri=$(awk -v c="$codename" '
      /^URIs:/ {u = $2} /^Suites:/ {for (i = 2; i <= NF; i++) if ($i == c) s = 1}
      /^$/ {if (s && u) {print u; exit} u = ""; s = 0}
      END {if (s && u) print u}' "$f" | head -n1)
    [ -n "$uri" ] && break
  done
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    uri=$(awk -v c="$codename" '$1 == "deb" && $3 == c {print $2; exit}' /etc/apt/sources.list)
  fi
  [ -n "$uri" ] || { echo "no Debian source for $codename among the machine's apt sources: add its non-free component by hand" >&2; exit 1; }
  cat >/etc/apt/sources.list.d/fsynclab-nonfree.sources <<SRC
Types: deb
URIs: $uri
Suites: $codename
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio sysbench jq bc postgresql-15 sqlite3 iozone3 bpftrace
