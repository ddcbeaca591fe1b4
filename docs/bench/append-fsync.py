#!/usr/bin/env python3
"""Appends 200 bytes to ./log and fsyncs it, 60 times (each fsync commits ext4's journal,
since the file's size changes), and prints the fsyncs' median and 90th percentile with the
requests the current directory's disk received meanwhile (from /sys/block/DEV/stat).

Run it on a scratch filesystem, on the host and in a guest, to compare the two (from the
clone: exec runs the command in the scratch filesystem, so the script's path is absolute):
    fsynclab exec --scratch ext4 --device hdd-7200 --scratch-size 128M -- python3 "$PWD/docs/bench/append-fsync.py"
    fsynclab exec --kernel 6.1.0-56-amd64 --scratch ext4 --device hdd-7200 --scratch-size 128M -- python3 "$PWD/docs/bench/append-fsync.py"
"""
import os
import sys
import time

COUNT = 60


def disk_stat():
    """(writes completed, flushes completed) of the disk holding the current directory."""
    dev = os.stat(".").st_dev
    name = os.path.basename(os.path.realpath(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"))
    path = f"/sys/block/{name}/stat"
    if not os.path.exists(path):  # a partition: its disk's directory holds it
        path = os.path.realpath(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/../stat")
    fields = open(path).read().split()
    return name, int(fields[4]), int(fields[15]) if len(fields) > 15 else 0


name, writes0, flushes0 = disk_stat()
fd = os.open("log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
took = []
for _ in range(COUNT):
    os.write(fd, b"r" * 200)
    start = time.monotonic()
    os.fsync(fd)
    took.append(time.monotonic() - start)
os.close(fd)
_, writes1, flushes1 = disk_stat()
took.sort()
print(
    f"append+fsync x{COUNT}: p50 {took[COUNT // 2] * 1e3:.1f} ms, p90 {took[COUNT * 9 // 10] * 1e3:.1f} ms; "
    f"{name} received {writes1 - writes0} writes and {flushes1 - flushes0} flushes",
    file=sys.stderr,
)
