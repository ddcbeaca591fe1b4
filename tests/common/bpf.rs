//! The BPF programs a process holds, and the wait for the kernel to free them: what the tests
//! of `watch` and `--tracer bpf` check after a SIGKILL.

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
