//! Every scenario explained by each tracer: parts that add up, fs_mark's creates and closes
//! as well as sync calls, and fsync-tps's worker threads, a follower's commit named by the
//! leader's flush it waited for.

use serde_json::Value;

use crate::common::{self, one_at_a_time, ScratchRun};
use crate::parts::{assert_parts_add_up_leaving, explained, ns_of, parts};
use crate::runner::{run_json, temp};
use crate::tracefs::assert_no_instance_of;

/// Issue 25: the BPF tracer follows a run's calls on names and files too (open, close,
/// rename, truncate...), in its measuring threads: fs_mark's creates and closes, which
/// small-files times, are explained from the kernel's records of them, their parts adding
/// up, and none of the calls chosen lacks a record for want of a call the tracer follows.
pub fn the_bpf_tracer_explains_a_runs_creates_and_closes_as_well_as_its_sync_calls() {
    let _one = one_at_a_time();
    let backing = temp();
    let (result, text, pid) = run_json(
        "small-files",
        &ScratchRun::flags()
            .fs("ext4")
            .device("ram")
            .backing(backing.path())
            .set("mode", "fs_mark")
            .set("files", "20")
            .args(["--tracer", "bpf"])
            .into_args(),
    );
    for op in ["create", "close"] {
        let calls = explained(&result, op);
        assert!(!calls.is_empty(), "no {op} explained: {text}");
        for call in calls {
            // Calls of microseconds: entering and leaving the kernel, outside the system
            // call and said so, is a share of them that no tracer can shrink; the parts still
            // add up, and the kernel's record gave the time inside.
            assert_parts_add_up_leaving(call, 1.0);
            assert!(ns_of(call, "on_cpu") > 0, "{call:#}");
        }
    }
    let notes = result["explain"]["notes"].as_array().cloned().unwrap_or_default();
    assert!(
        !notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("of their own inside")),
        "{notes:#?}"
    );
    assert_no_instance_of(&[pid]);
}

/// Issue 16, item 1: fsync-tps makes its calls on worker threads, which `--explain` now
/// follows: each thread's slowest commits are explained, their parts add up, and a group
/// commit's follower's wait names the leader's flush it waited for (seed 002 on the
/// emulated 7200 rpm disk, where a flush takes a rotation).
pub fn fsync_tps_explains_each_threads_slowest_commits_and_the_leaders_flush() {
    leaders_flush_named_by("tracefs");
}

/// Issue 25: the same with the BPF tracer, which ties a follower's commit to the leader's
/// fdatasync by time (it does not follow the wait in user space), the follower's own write
/// recorded inside the commit taking its part.
pub fn the_bpf_tracer_ties_a_followers_commit_to_the_leaders_flush() {
    leaders_flush_named_by("bpf");
}

fn leaders_flush_named_by(tracer: &str) {
    let _one = one_at_a_time();
    let backing = temp();
    let (result, text, pid) = run_json(
        "fsync-tps",
        &ScratchRun::flags()
            .fs("ext4")
            .device("hdd-7200")
            .backing(backing.path())
            .size("1G")
            .args(["--explain", "--tracer", tracer])
            .set("threads", "4")
            .set("coordination", "wal,none")
            .set("duration", "2s")
            .set("file_size", "4M")
            .into_args(),
    );
    let commits = explained(&result, "commit");
    // Nine threads on two CPUs: a woken worker can wait milliseconds for a CPU, and when
    // the trace misses the switch that put it back on one (switches from the idle task at
    // times go unrecorded here), that stretch is honestly unattributed (3.2 ms of a 34.5 ms
    // commit, 9.4%, in one run): up to 10% is allowed, as for the throttled writes above.
    // The BPF tracer's writes (tens of microseconds) can have a short sleep it names only
    // by its waker (another worker holding the inode's lock) and time outside the system
    // call, which it does not follow (a thread preempted just before or after it: nine
    // threads on two CPUs): their parts add up, and only the commits, this test's subject,
    // are held to the share unattributed.
    // A commit the BPF tracer ties to the leaders' calls by time has, beside the leaders'
    // calls, the time between them: the next leader woken, waiting for a CPU, making its
    // write (under the threshold, so not sent), all outside any call of the follower's and
    // outside what the BPF tracer follows. It is said as "the rest of the commit" and is
    // not a want of trace: 3.24 of a 19.7 ms commit (16%) in one run, between two leaders'
    // fdatasyncs of 8.4 and 8.2 ms. It is held apart: the leaders' calls must still cover
    // most (at least half) of every commit tied to them.
    for call in result["explain"]["calls"].as_array().unwrap() {
        if tracer == "bpf" && call["op"] != "commit" {
            assert_parts_add_up_leaving(call, 1.0);
            continue;
        }
        let rest: u64 = parts(call)
            .iter()
            .filter(|p| {
                p["reason"]
                    .as_str()
                    .is_some_and(|r| r.starts_with("the rest of the commit"))
            })
            .map(|p| p["ns"].as_u64().unwrap())
            .sum();
        let latency = call["latency_ns"].as_u64().unwrap();
        assert!(2 * rest <= latency, "the leaders' calls cover less than half: {call:#}");
        let mut seen = call.clone();
        seen["parts"] = Value::Array(
            parts(call)
                .iter()
                .filter(|p| {
                    !p["reason"]
                        .as_str()
                        .is_some_and(|r| r.starts_with("the rest of the commit"))
                })
                .cloned()
                .collect(),
        );
        seen["latency_ns"] = (latency - rest).into();
        assert_parts_add_up_leaving(&seen, 0.10);
    }
    // Two steps of four workers: eight threads, each with its own slowest commits.
    let mut threads: Vec<u64> = commits.iter().map(|c| c["tid"].as_u64().unwrap()).collect();
    threads.sort_unstable();
    threads.dedup();
    assert_eq!(threads.len(), 8, "threads with commits explained: {threads:?}");
    // With `wal`, followers wait for the leader's fdatasync: named, with its own parts.
    let waits: Vec<&Value> = commits
        .iter()
        .flat_map(|c| parts(c))
        .filter(|p| p["cause"] == "waited_for_thread" && p["call"]["op"] == "fdatasync")
        .collect();
    assert!(
        !waits.is_empty(),
        "no follower waited for a leader's fdatasync: {commits:#?}"
    );
    for w in &waits {
        let leader = w["thread"].as_u64().unwrap();
        assert!(threads.contains(&leader), "{w:#}");
        let flush_parts = w["call"]["parts"].as_array().unwrap();
        assert!(
            flush_parts
                .iter()
                .any(|p| p["what"].as_str().unwrap().starts_with("device cache flush")),
            "the leader's flush should wait for the disk's cache flush: {w:#}"
        );
    }
    assert!(text.contains("slowest call of each thread (9 of them)"), "{text}");
    assert!(text.contains("waiting for thread "), "{text}");
    assert_no_instance_of(&[pid]);
}

/// Issue 25: on every scenario with measured calls, each tracer's explained calls have parts
/// that add up to them within 5% (scaled down, on a scratch ext4 on ram); each scenario has
/// calls explained by each tracer.
pub fn every_scenario_explained_by_each_tracer_has_parts_that_add_up() {
    let _one = one_at_a_time();
    let scenarios: [(&str, &[&str]); 6] = [
        (
            "overwrite-fsync",
            &["duration=1s", "sleep=100ms", "file_size=16M", "chunk=1M"],
        ),
        (
            "random-writeback",
            &["iterations=3", "sleep=100ms", "random_file_size=8M", "duration=2s"],
        ),
        ("small-files", &["sizes=4k,64k", "runs=1", "files=20"]),
        ("fsync-tps", &["threads=1,2", "duration=500ms", "file_size=1M"]),
        ("datasync", &["rounds=1", "duration=50ms", "file_size=256k"]),
        ("rndwr", &["files=8", "total_size=8M", "threads=4", "duration=1s"]),
    ];
    for (scenario, sets) in scenarios {
        for tracer in ["tracefs", "bpf"] {
            let backing = temp();
            let mut args: Vec<std::ffi::OsString> =
                ["--scratch", "ext4", "--device", "ram", "--explain", "--tracer", tracer]
                    .into_iter()
                    .map(Into::into)
                    .collect();
            args.extend(["--backing".into(), backing.path().into()]);
            for set in sets {
                args.extend(["--set".into(), (*set).into()]);
            }
            let (result, _, _) = run_json(scenario, &args);
            let calls = result["explain"]["calls"].as_array().unwrap();
            assert!(
                !calls.is_empty(),
                "{scenario} by {tracer}: nothing explained: {:#}",
                result["explain"]
            );
            for call in calls {
                let latency = call["latency_ns"].as_u64().unwrap() as f64;
                let total: u64 = parts(call).iter().map(|p| p["ns"].as_u64().unwrap()).sum();
                assert!(
                    (total as f64 - latency).abs() <= 0.05 * latency,
                    "{scenario} by {tracer}: parts {total} ns vs call {latency} ns: {call:#}"
                );
            }
            assert_eq!(common::leftovers(backing.path()), Vec::<String>::new());
        }
    }
}
