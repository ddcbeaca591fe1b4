#!/usr/bin/env bash
# Issue 16: `fsynclab exec --explain` on real programs, on a scratch ext4 over the
# emulated 7200 rpm disk: PostgreSQL's own benchmark (pgbench, Debian's postgresql-15, a
# cluster made for the run on the scratch filesystem) and SQLite (the sqlite3 shell, one
# transaction per INSERT). Each prints the command's slowest sync calls with their parts
# on stderr and records the run (`fsynclab runs`, `show`, `explain`, `report`).
#
# As root (tracefs, loop devices, FUSE); postgresql-15 and sqlite3 come from
# scripts/setup-bench.sh. Usage: docs/bench/exec-explain.sh [pgbench|sqlite]...
# FSYNCLAB=path/to/fsynclab (default: target/release/fsynclab), FSYNCLAB_STORE as usual.
set -euo pipefail
fsynclab=${FSYNCLAB:-target/release/fsynclab}
pgbin=/usr/lib/postgresql/15/bin

pgbench_demo() {
  # initdb and postgres refuse to run as root: the cluster belongs to the postgres user.
  # checkpoint_timeout=30s puts a checkpoint (the checkpointer's fsyncs of the data files)
  # inside the 40 s of pgbench; the shutdown checkpoint comes at the end.
  "$fsynclab" exec --scratch ext4 --device hdd-7200 --explain --tracer tracefs -- sh -c "
    chown postgres . &&
    runuser -u postgres -- $pgbin/initdb -D pg -A trust -U postgres >/dev/null &&
    runuser -u postgres -- $pgbin/pg_ctl -D pg -l pg/server.log -w \
      -o \"-k \$PWD -c listen_addresses= -c checkpoint_timeout=30s\" start >/dev/null &&
    runuser -u postgres -- $pgbin/pgbench -h \$PWD -i -s 5 -q postgres >/dev/null 2>&1 &&
    runuser -u postgres -- $pgbin/pgbench -h \$PWD -c 4 -j 2 -T 40 postgres;
    status=\$?;
    runuser -u postgres -- $pgbin/pg_ctl -D pg -m fast -w stop >/dev/null;
    exit \$status"
}

sqlite_demo() {
  # The default rollback journal: each INSERT is a transaction that syncs the journal,
  # the database and the directory.
  "$fsynclab" exec --scratch ext4 --device hdd-7200 --explain --tracer tracefs -- sh -c '
    sqlite3 t.db "CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT);" &&
    for i in $(seq 200); do echo "INSERT INTO t(v) VALUES (hex(randomblob(512)));"; done | sqlite3 t.db &&
    sqlite3 t.db "SELECT count(*) FROM t;"'
}

for demo in "${@:-pgbench sqlite}"; do
  for d in $demo; do
    echo "== $d"
    "${d}_demo"
  done
done
