#!/usr/bin/env bash
# The project's test command (README): formatting, lints, then every test, ending with one
# line that totals them ("N passed, N failed, N skipped").
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --locked --no-fail-fast 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# The README's install step, into a throw-away prefix: the installed binary runs, `man`
# finds its pages through PATH, and bash completes `fsynclab run <TAB>` with the scenarios.
# A debug build, reusing the test build above (the README's release build takes minutes).
prefix=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$prefix"' EXIT
if scripts/install.sh --prefix "$prefix" --debug >"$log.install" 2>&1 && scripts/check-install.sh "$prefix"; then
  echo "install: ok ($("$prefix/bin/fsynclab" --version), man pages, bash completion)"
else
  cat "$log.install"; echo "install: FAILED"; status=1
fi
rm -f "$log.install"
awk '/^test result: / {p += $4; f += $6; i += $8} END {printf "%d passed, %d failed, %d skipped\n", p, f, i}' "$log"
exit "$status"
