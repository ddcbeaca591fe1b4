#!/usr/bin/env bash
# What the modules a guest's udev loads at boot cost: `fsynclab exec --kernel` as it is,
# with its `modprobe.blacklist=` (src/testbed/vm/launch.rs, NOT_LOADED_AT_BOOT), against
# the same binary through a vng wrapper that drops that option, interleaved round by round,
# in guests booting Debian's 6.1 under the machine's accelerator. Prints each run's wall
# time, the guest's uptime when the command ran, and how many modules were loaded then.
# As root, after scripts/setup.sh, from the repository:
#   docs/bench/guest-boot.sh [ROUNDS]
set -uo pipefail
rounds=${1:-3}
bin=$(realpath "${FSYNCLAB:-target/release/fsynclab}")
k=$(ls /boot/vmlinuz-6.1.0-*-amd64 | sort -V | tail -n 1 | sed 's|/boot/vmlinuz-||')
vng=$(command -v vng)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
mkdir "$work/all"
cat > "$work/all/vng" <<WRAP
#!/usr/bin/env bash
args=()
skip=0
for a in "\$@"; do
  if [ "\$skip" = 1 ]; then skip=0; [[ "\$a" == modprobe.blacklist=* ]] && { unset 'args[-1]'; continue; }; fi
  [ "\$a" = --append ] && skip=1
  args+=("\$a")
done
exec "$vng" "\${args[@]}"
WRAP
chmod +x "$work/all/vng"
path() { if [ "$1" = all ]; then echo "$work/all:$PATH"; else echo "$PATH"; fi; }
for round in $(seq "$rounds"); do
  for mode in blacklist all; do
    start=$(date +%s.%N)
    (cd "$work" && PATH=$(path $mode) flock /tmp/fsynclab-bench.lock "$bin" exec --kernel "$k" \
      --scratch ext4 --device hdd-7200 --scratch-size 128M -- \
      sh -c 'cut -d" " -f1 /proc/uptime; grep -c . /proc/modules' >"$work/out" 2>"$work/err") ||
      { echo "round $round $mode: failed"; tail -n 3 "$work/err"; continue; }
    end=$(date +%s.%N)
    echo "round $round $mode: $(awk "BEGIN {printf \"%.1f\", $end - $start}") s wall, uptime $(sed -n 1p "$work/out") s at the command, $(sed -n 2p "$work/out") modules"
  done
done
