#!/usr/bin/env bash
# The project's test command (README): formatting, lints, the static binary and its package
# (scripts/build-release.sh --debug, for tests/install.rs), then every test, ending with one
# line that totals them ("N passed, N failed, N skipped").
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
log=$(mktemp)
release=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$release"' EXIT
trap 'exit 130' INT TERM
# The static binary and its package (scripts/build-release.sh), unoptimized so that the test
# build's dependencies serve it too (only libbpf-sys, libbpf-rs and fsynclab are built again):
# tests/install.rs runs it in an empty root and installs, upgrades and removes the package.
release_status=0
started=$SECONDS
if scripts/build-release.sh "$release" --debug >"$log.release" 2>&1; then
  export FSYNCLAB_RELEASE_DIR=$release
  echo "release build: $(tail -n 1 "$log.release") in $((SECONDS - started)) s"
else
  cat "$log.release"; echo "release build: FAILED"; release_status=1
fi
rm -f "$log.release"
# The vm sysctls are machine-wide, one run at a time: a test's run that sets them waits for
# another fsynclab's (another clone's tests beside) instead of being refused.
export FSYNCLAB_SYSCTL_WAIT=${FSYNCLAB_SYSCTL_WAIT:-900}
set +e
cargo test --locked --no-fail-fast 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
[ "$release_status" -eq 0 ] || status=1
# The README's install step, into a throw-away prefix: the installed binary runs, `man`
# finds its pages through PATH, and bash completes `fsynclab run <TAB>` with the scenarios.
# A debug build, reusing the test build above (the README's release build takes minutes).
prefix=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$prefix" "$release"' EXIT
if scripts/install.sh --prefix "$prefix" --debug >"$log.install" 2>&1 && scripts/check-install.sh "$prefix"; then
  echo "install: ok ($("$prefix/bin/fsynclab" --version), man pages, bash completion)"
else
  cat "$log.install"; echo "install: FAILED"; status=1
fi
rm -f "$log.install"
awk '/^test result: / {p += $4; f += $6; i += $8} END {printf "%d passed, %d failed, %d skipped\n", p, f, i}' "$log"
exit "$status"
