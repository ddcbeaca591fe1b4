#!/usr/bin/env bash
# The project's test command (README): formatting, lints, then every test.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
cargo test --locked
