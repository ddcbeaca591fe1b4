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
awk '/^test result: / {p += $4; f += $6; i += $8} END {printf "%d passed, %d failed, %d skipped\n", p, f, i}' "$log"
exit "$status"
