# The four workloads of watch-tax.sh and watch-program-share.sh (issue 61), sourced by both:
#   dd        dd if=/dev/zero of=/dev/null bs=1 count=$DD_COUNT: reads and writes only
#   pingpong  pingpong.c, $PINGPONG round trips over two pipes: switches, wakeups
#   fsync     fsync-loop.c, $FSYNCS 4 KiB writes + fsyncs of a file in $FSYNC_DIR
#   irq       dd of $IRQ_READS 4 KiB O_DIRECT reads of a 64 MiB file in $IRQ_DIR, in turn:
#             a disk read and its interrupt each
# The sourcing script sets $tmp (its scratch directory, for the two programs) and $name (the
# prefix of its files in $FSYNC_DIR and $IRQ_DIR), and removes workload_files in its exit
# trap. FSYNC_DIR and IRQ_DIR default to the working directory (exec's scratch filesystem).
dd_count=${DD_COUNT:-3000000}
pingpong_rounds=${PINGPONG:-200000}
fsyncs=${FSYNCS:-2000}
irq_reads=${IRQ_READS:-5000}
workload_files=("${FSYNC_DIR:-$PWD}/$name.file" "${IRQ_DIR:-$PWD}/$name.irq")

# Builds the two programs and writes the file the reads read (once: it is kept between rounds),
# unless the workloads named in "$@" leave out irq.
prepare_workloads() {
  local src
  src=$(dirname "${BASH_SOURCE[0]}")
  cc -O2 -o "$tmp/pingpong" "$src/pingpong.c"
  cc -O2 -o "$tmp/fsync-loop" "$src/fsync-loop.c"
  [[ " ${*:-irq} " == *" irq "* ]] || return 0
  [ -s "${workload_files[1]}" ] ||
    dd if=/dev/urandom of="${workload_files[1]}" bs=1M count=64 status=none conv=fsync
}

# Runs the workload named $1, its output discarded.
workload() {
  case $1 in
    dd) dd if=/dev/zero of=/dev/null bs=1 count="$dd_count" status=none ;;
    pingpong) "$tmp/pingpong" "$pingpong_rounds" >/dev/null ;;
    fsync) "$tmp/fsync-loop" "${workload_files[0]}" "$fsyncs" >/dev/null ;;
    irq) dd if="${workload_files[1]}" of=/dev/null bs=4k count="$irq_reads" iflag=direct status=none ;;
    *) echo "$name: unknown workload $1 (dd, pingpong, fsync, irq)" >&2; return 2 ;;
  esac
}

# The seconds "$@" took, to 0.1 ms.
seconds() {
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null
  t1=$(date +%s%N)
  echo "scale=4; ($t1 - $t0) / 1000000000" | bc
}
