//! The BPF programs a process holds, and the wait for the kernel to free them: what the tests
//! of `watch` and `--tracer bpf` check after a SIGKILL. And the command and checks of the
//! tests that wakeups made in an interrupt are the interrupt's.

use std::process::Command;
use std::time::{Duration, Instant};

/// The ids of the BPF programs process `pid` holds (its link and program descriptors'
/// `prog_id`, Documentation/filesystems/proc.rst's fdinfo).
pub fn programs_of(pid: u32) -> Vec<u32> {
    let mut ids: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/fdinfo"))
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("prog_id:"))
                .map(|v| v.trim().parse().unwrap())
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Whether bpftool sees program `id` loaded.
pub fn loaded(id: u32) -> bool {
    Command::new("bpftool")
        .args(["prog", "show", "id", &id.to_string()])
        .output()
        .unwrap()
        .status
        .success()
}

/// Waits up to 10 s for the kernel to free every program of `ids` (it frees a program once
/// its last reference is gone, which may take a moment); fails naming one still loaded.
pub fn assert_freed(ids: &[u32], holder: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    for &id in ids {
        while loaded(id) {
            assert!(
                Instant::now() < deadline,
                "program {id} still loaded after {holder} was killed"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A shell script for `exec --explain --tracer bpf`: beside two CPU burners (`sh` loops,
/// which wake nothing themselves), 300 4 KiB overwrites in place of a 4 MiB file, each
/// followed by fdatasync, whose waits end in the disk's interrupts.
pub const BESIDE_BURNERS: &str = "python3 -c \"import os
fd = os.open('f', os.O_WRONLY | os.O_CREAT)
os.write(fd, b'y' * (1 << 22)); os.fsync(fd)\"
( while :; do :; done ) & b1=$!
( while :; do :; done ) & b2=$!
python3 -c \"import os
fd = os.open('f', os.O_WRONLY)
for i in range(300):
    os.pwrite(fd, b'x' * 4096, (i * 7919 % 1024) * 4096)
    os.fdatasync(fd)\"
kill $b1 $b2";

/// Every waker an explanation names ("... ended by WAKER"), from its calls' parts' reasons
/// and notes.
pub fn wakers_named(explain: &serde_json::Value) -> Vec<String> {
    let mut named = Vec::new();
    for call in explain["calls"].as_array().unwrap() {
        let reasons = call["parts"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["reason"].as_str());
        let notes = call["notes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n.as_str());
        for text in reasons.chain(notes) {
            if let Some((_, waker)) = text.rsplit_once(" ended by ") {
                named.push(waker.to_string());
            }
        }
    }
    named
}

/// How the BPF programs can tell a wakeup made in an interrupt on this kernel: by the
/// preemption count where /proc/kallsyms lists the per-CPU variable that holds it, else by
/// counting interrupts at their tracepoints.
pub fn interrupt_wakers_by_here() -> &'static str {
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let listed = kallsyms.lines().any(|l| {
        let mut f = l.split_whitespace();
        let addr = f.next().unwrap_or("0");
        let name = f.nth(1).unwrap_or("");
        ["__preempt_count", "pcpu_hot"].contains(&name) && !addr.trim_start_matches('0').is_empty()
    });
    if listed {
        "preemption count"
    } else {
        "interrupt tracepoints"
    }
}
