# Runs a whole-machine `fsynclab watch` around a workload and stops it whatever happens, for
# the scripts that source this file (commit-programs.sh, watch-program-share.sh). The
# sourcing script sets $tmp (its scratch directory) and $name (its name, for messages),
# checks for ps (procps), and calls stop_watch_at_exit from its EXIT trap.

# Whether process $1 still runs: kill -0 also succeeds on a zombie, and a watch orphaned by
# its subshell (Ctrl-C) is reaped by fsynclab exec only once the script has ended.
running() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $state != Z* ]]
}

# Starts the watch command "$@" in the background, its output in $tmp/watch.out, and waits
# for its hooks line. Callers run in $(...) subshells, out of the EXIT trap's reach: the
# watch's pid is kept in $tmp/watcher, so that Ctrl-C or an error mid-round still stops it.
start_watch() {
  "$@" >"$tmp/watch.out" 2>&1 &
  local watcher=$!
  echo "$watcher" >"$tmp/watcher"
  until grep -q '^hooks:' "$tmp/watch.out"; do
    kill -0 "$watcher" 2>/dev/null || { echo "$name: watch did not start:" >&2; cat "$tmp/watch.out" >&2; exit 1; }
    sleep 0.1
  done
}

# Ends the watch start_watch started (in the same shell) and waits for it: its summary is
# then complete in $tmp/watch.out.
stop_watch() {
  local watcher
  watcher=$(cat "$tmp/watcher")
  kill -TERM "$watcher"
  wait "$watcher" || true
  rm -f "$tmp/watcher"
}

# From the EXIT trap: ends a watch still running (Ctrl-C or an error mid-round) and waits
# until it has exited, so that it leaves no BPF program behind.
stop_watch_at_exit() {
  local watcher
  watcher=$(cat "$tmp/watcher" 2>/dev/null || true)
  if [ -n "$watcher" ]; then
    kill -TERM "$watcher" 2>/dev/null || true
    while running "$watcher"; do sleep 0.1; done
  fi
}
