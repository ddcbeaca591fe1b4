#!/bin/sh
# The reproducer behind docs/kernels.md's "Found and fixed" table, with virtme-ng and QEMU
# only (no fsynclab): a guest writes to a virtio-blk disk (a raw ext4 image, cache=none, as
# fsynclab serves its disk) with O_DIRECT + fsync in a loop, while a shell turns the block
# tracepoints on and off FLIPS times through the guest's tracefs. Under multi-threaded TCG
# Debian's 6.12 crashed ("Oops: int3 ... blk_update_request") and 6.1 hung; on one host
# thread (what fsynclab gives QEMU under TCG) both ended well.
#
#   docs/bench/tcg-flip-loop.sh KERNEL_IMAGE single|multi [RUNS]
#   e.g. docs/bench/tcg-flip-loop.sh /boot/vmlinuz-6.12.117+deb12-amd64 multi 5
#
# Each guest prints one line: ok (all flips done), or CRASH/HUNG with the console's first
# Oops line. A guest is ended after LIMIT seconds (default 300). Needs root, vng
# (virtme-ng), qemu-system-x86 and mkfs.ext4; leaves nothing behind.
set -eu
kernel=${1:?kernel image, e.g. /boot/vmlinuz-6.1.0-56-amd64}
mode=${2:?single or multi}
runs=${3:-1}
flips=${FLIPS:-300}
limit=${LIMIT:-300}
case $mode in
single) accel="-accel tcg,thread=single" ;;
multi) accel="" ;;
*) echo "mode: single or multi, not $mode" >&2; exit 2 ;;
esac
# Where the guest sees it: its /tmp lies over the host's (readable by all: the guest reads it through 9p).
work=$(mktemp -d /tmp/tcg-flip-loop.XXXXXX)
chmod 755 "$work"
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
truncate -s 256M "$work/disk.img"
mkfs.ext4 -q "$work/disk.img"
cat > "$work/guest.sh" <<GUEST
#!/bin/sh
mkdir -p /tmp/m && mount /dev/vda /tmp/m || { echo "MOUNT FAILED"; exit 3; }
T=/sys/kernel/tracing; [ -d \$T/events ] || mount -t tracefs none \$T
( while :; do dd if=/dev/zero of=/tmp/m/f bs=64k count=64 oflag=direct conv=fsync 2>/dev/null; done ) &
W=\$!
i=0
while [ \$i -lt $flips ]; do
  echo 1 > \$T/events/block/block_rq_complete/enable
  echo 1 > \$T/events/block/block_rq_issue/enable
  echo 0 > \$T/events/block/block_rq_complete/enable
  echo 0 > \$T/events/block/block_rq_issue/enable
  i=\$((i+1))
done
kill \$W; wait
umount /tmp/m
echo "FLIPS DONE \$i"
GUEST
chmod +x "$work/guest.sh"
n=1
while [ "$n" -le "$runs" ]; do
  start=$(date +%s)
  rc=0
  timeout "$limit" vng -r "$kernel" --cpus 2 --memory 1G --disable-kvm --verbose \
    --exec "$work/guest.sh" \
    --qemu-opts="-drive if=none,id=d,format=raw,cache=none,aio=threads,file=$work/disk.img -device virtio-blk-pci,drive=d $accel" \
    > "$work/console.log" 2>&1 || rc=$?
  took=$(($(date +%s) - start))
  if grep -q "FLIPS DONE" "$work/console.log"; then said=ok
  elif grep -q -E "Oops|BUG:|Kernel panic" "$work/console.log"; then said=CRASH
  else said=HUNG; fi
  echo "$mode run $n: $said after ${took}s (exit $rc) $(grep -m1 -E 'Oops|BUG:|Kernel panic' "$work/console.log" | cut -c1-120)"
  n=$((n + 1))
done
