//! The BPF tracer ties a call to its own filesystem's journal commits and disk, however fast
//! commits follow one another and whatever else the machine syncs meanwhile
//! (`exec --explain --tracer bpf` on a scratch ext4 in RAM).

use std::path::Path;

use serde_json::Value;

use crate::common::{self, one_at_a_time, ScratchRun};
use crate::parts::result_calls;
use crate::runner::{exec_explained, exported, temp, Run};
use crate::tracefs::assert_no_instance_of;

/// Appends 4 KiB and fsyncs, 20,000 times: every fsync commits a transaction, some 5000
/// commits a second.
const APPEND_FSYNC_LOOP: &str = "python3 -c \"import os
fd = os.open('f', os.O_WRONLY | os.O_CREAT | os.O_APPEND)
for _ in range(20000):
    os.write(fd, b'x' * 4096)
    os.fsync(fd)\"";

/// `exec --explain --tracer bpf` of the script `script(backing)` makes, on a scratch ext4
/// over the emulated disk in RAM: its stored result and stderr, once it has succeeded and
/// left nothing behind.
fn bpf_explained_on_a_ram_scratch(script: impl FnOnce(&Path) -> String) -> (Value, String) {
    let _one = one_at_a_time();
    let backing = temp();
    let store = temp();
    let db = store.path().join("runs.sqlite");
    let mut target = ScratchRun::flags()
        .fs("ext4")
        .device("ram")
        .backing(backing.path())
        .into_args();
    target.extend(["--tracer".into(), "bpf".into()]);
    let Run { pid, out } = exec_explained(&db, &target, &script(backing.path()));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert_no_instance_of(&[pid]);
    assert_eq!(common::leftovers(backing.path()), Vec::<String>::new());
    (exported(&db, "1"), stderr)
}

/// Issue 25: a journal commit a slow call waited for is named with where its own time went,
/// however fast commits follow one another. At thousands of commits a second the kernel's
/// map of the latest commits keeps each for milliseconds, so the commit's record travels
/// with the call instead (before this, 13-14 of some 30 commits named came without parts).
pub fn a_bpf_explained_fsync_loop_names_each_commits_own_parts() {
    let (result, stderr) = bpf_explained_on_a_ram_scratch(|_| APPEND_FSYNC_LOOP.to_string());
    let mut named = Vec::new();
    for call in result["explain"]["calls"].as_array().unwrap() {
        for part in call["parts"].as_array().unwrap() {
            for commit in part["commits"].as_array().into_iter().flatten() {
                if commit["duration_ns"].is_u64() {
                    named.push(commit.clone());
                }
            }
        }
    }
    assert!(named.len() >= 5, "too few commits named to judge: {named:#?}\n{stderr}");
    let bare: Vec<&Value> = named
        .iter()
        .filter(|c| c["waited_for"].as_array().is_none_or(Vec::is_empty))
        .collect();
    assert!(
        bare.is_empty(),
        "{} of {} commits without their parts: {bare:#?}",
        bare.len(),
        named.len()
    );
}

/// Issue 25: a call is tied to the journal commits of the filesystem it syncs, not to
/// whichever commit ended last on the machine. The command appends and fsyncs on the
/// scratch ext4 (thousands of commits a second) while a process of its own fsyncs a file on
/// the host's filesystem, where the backing directory is: the host's calls must not be said
/// to wait for the scratch's commits (before the fix they named hundreds of them), nor for
/// its journal thread (hundreds of their short sleeps were said to be, before); and what
/// completed meanwhile is each call's own disk's (the scratch's flushes and commits were
/// counted in every host call's, before).
pub fn a_bpf_explained_call_names_only_its_own_filesystems_commits() {
    let (result, stderr) = bpf_explained_on_a_ram_scratch(|backing| {
        let (host, stop) = (backing.join("host-fsyncs"), backing.join("stop"));
        format!(
            "(while [ ! -e {stop} ]; do dd if=/dev/zero of={host} bs=4k count=1 conv=fsync 2>/dev/null; done) &
{APPEND_FSYNC_LOOP}
touch {stop}; wait; rm -f {host} {stop}",
            stop = stop.display(),
            host = host.display()
        )
    });
    // The scratch filesystem is on a loop device (major 7); the host's is not.
    let on_scratch = |name: &str| name.contains(" on 7:");
    let mut by = std::collections::BTreeMap::<(String, bool), usize>::new();
    let mut host_calls = 0;
    let mut scratch_commits_meanwhile = 0;
    for call in result_calls(&result) {
        let process = call["process"].as_str().unwrap_or("").to_string();
        host_calls += usize::from(process == "dd");
        for note in call["notes"].as_array().into_iter().flatten() {
            let note = note.as_str().unwrap();
            let Some(place) = note.strip_prefix("meanwhile on ") else {
                continue;
            };
            // The scratch is on a loop device, the host's filesystem is not.
            assert_eq!(place.starts_with("loop"), process == "python3", "{call:#}");
            assert!(!place.starts_with("the machine"), "{call:#}");
            scratch_commits_meanwhile += usize::from(process == "python3" && note.contains("jbd2 commit"));
        }
        for part in call["parts"].as_array().unwrap() {
            for commit in part["commits"].as_array().into_iter().flatten() {
                let name = commit["name"].as_str().unwrap();
                *by.entry((process.clone(), on_scratch(name))).or_default() += 1;
            }
            // Nor is a wakeup by the scratch's journal thread (an interrupt that found it
            // on the CPU) a wait for a journal commit of the host's.
            let journal = part["journal"].as_str().unwrap_or("");
            assert!(
                !(process == "dd" && journal.starts_with("jbd2/loop")),
                "{part:#}\n{stderr}"
            );
        }
    }
    assert!(
        host_calls > 0,
        "no call on the host's filesystem explained: {by:?}\n{stderr}"
    );
    assert!(
        by.get(&("python3".into(), true)).is_some_and(|&n| n >= 5),
        "{by:?}\n{stderr}"
    );
    assert_eq!(by.get(&("python3".into(), false)), None, "{by:?}");
    assert_eq!(by.get(&("dd".into(), true)), None, "{by:?}");
    assert!(scratch_commits_meanwhile >= 5, "{scratch_commits_meanwhile}\n{stderr}");
}

/// Issue 25: the BPF tracer remembers a task's last file and what it read of it (its
/// filesystem and disk) from call to call; a call on another file reads them anew. One
/// process alternates an fsync of a file on the scratch ext4 with an fdatasync of a file on
/// the host's filesystem: each fsync is said to be on the scratch's loop device and each
/// fdatasync not (a cache that kept the first file's devices would put every call on one).
pub fn a_bpf_explained_task_alternating_two_filesystems_names_each_calls_own() {
    let (result, stderr) = bpf_explained_on_a_ram_scratch(|backing| {
        let host = backing.join("host-file");
        format!(
            "python3 -c \"import os
s = os.open('f', os.O_WRONLY | os.O_CREAT)
h = os.open('{host}', os.O_WRONLY | os.O_CREAT)
for _ in range(3000):
    os.pwrite(s, b'x' * 4096, 0)
    os.fsync(s)
    os.pwrite(h, b'x' * 4096, 0)
    os.fdatasync(h)
os.unlink('{host}')\"",
            host = host.display()
        )
    });
    let mut places = std::collections::BTreeMap::<(String, bool), usize>::new();
    for call in result_calls(&result) {
        let op = call["op"].as_str().unwrap().to_string();
        for note in call["notes"].as_array().into_iter().flatten() {
            if let Some(place) = note.as_str().unwrap().strip_prefix("meanwhile on ") {
                *places.entry((op.clone(), place.starts_with("loop"))).or_default() += 1;
            }
        }
    }
    assert_eq!(places.get(&("fsync".into(), false)), None, "{places:?}\n{stderr}");
    assert_eq!(places.get(&("fdatasync".into(), true)), None, "{places:?}\n{stderr}");
    assert!(places.contains_key(&("fsync".into(), true)), "{places:?}\n{stderr}");
    assert!(
        places.contains_key(&("fdatasync".into(), false)),
        "{places:?}\n{stderr}"
    );
}
