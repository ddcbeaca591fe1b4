//! Slow fsyncs that wait for their filesystem's journal (seed 000 scaled down on ext4, xfs
//! and btrfs over the emulated 5400 rpm disk): the commit or log force is named, with its
//! own time, by tracefs and by the BPF tracer.

use serde_json::Value;

use crate::common::{one_at_a_time, ScratchRun};
use crate::parts::{assert_parts_add_up, assert_parts_add_up_leaving, commits, explained, ns_of, parts};
use crate::runner::{run_json, temp};
use crate::tracefs::assert_no_instance_of;

/// Seed 000 scaled down: a 1 MiB overwrite + fsync every second (so that each write changes
/// the inode's mtime, which the fsync commits) for 6 s against a stream that overwrites
/// 512 MiB, on ext4 or xfs over the emulated 5400 rpm laptop disk.
fn seed000(fs: &str) -> (Value, String, u32) {
    seed000_with(fs, &[])
}

/// [`seed000`] with more flags.
fn seed000_with(fs: &str, flags: &[&str]) -> (Value, String, u32) {
    let backing = temp();
    let mut run = ScratchRun::flags()
        .fs(fs)
        .device("hdd-5400")
        .backing(backing.path())
        .size("1G")
        .set("file_size", "512M")
        .set("duration", "6s");
    for flag in flags {
        run = run.arg(flag);
    }
    run_json("overwrite-fsync", &run.into_args())
}

/// Issue 25: `--tracer bpf` explains a run's slow fsyncs from the BPF program, with no
/// tracefs instance: parts that add up to what the run measured, the worst one's wait for
/// a named jbd2 commit, and the result saying the tracer in the kernel ran. The program
/// keeps the stacks of a call's four longest sleeps; a call with more (a 4.5 s fsync slept
/// five times in one CI run, the fifth 0.33 s) has the rest counted and said as such ("more
/// long sleeps, beyond the longest the kernel keeps per call"), which is by design, not
/// time the tracer could not account for: at most 5% of each call is unattributed for any
/// other reason.
pub fn the_bpf_tracer_explains_a_runs_slow_fsyncs_with_parts_that_add_up() {
    let _one = one_at_a_time();
    let (result, text, pid) = seed000_with("ext4", &["--explain", "--tracer", "bpf"]);
    let bpf = &result["explain"]["bpf"];
    // It keeps at least as many of each thread's slowest as a run explains (50).
    assert!(bpf["slowest_kept"].as_u64().unwrap() >= 50, "{:#}", result["explain"]);
    assert_eq!(bpf["records_not_sent"], 0, "{bpf}");
    let fsyncs = explained(&result, "fsync");
    let worst = fsyncs.first().expect("an fsync explained");
    assert!(
        worst["latency_ns"].as_u64().unwrap() > 100_000_000,
        "the stream should slow an fsync past 100 ms: {worst:#}"
    );
    for call in &fsyncs {
        let latency = call["latency_ns"].as_u64().unwrap();
        let total: u64 = parts(call).iter().map(|p| p["ns"].as_u64().unwrap()).sum();
        assert_eq!(total, latency, "the parts add up exactly: {call:#}");
        // A wait for data writeback is for the synced file's pages: named by its inode.
        for p in parts(call).iter().filter(|p| p["cause"] == "data_writeback") {
            assert!(
                p["inodes"].as_array().is_some_and(|i| i.len() == 1),
                "the synced file's inode: {call:#}"
            );
        }
        assert_parts_add_up_leaving(call, 0.05);
    }
    let journal_ns = ns_of(worst, "journal_commit");
    assert!(
        journal_ns > 0
            && commits(worst)
                .iter()
                .any(|c| c["name"].as_str().unwrap().starts_with("jbd2 transaction ")),
        "{worst:#}"
    );
    // The commit's own time, from the journal thread followed through it.
    assert!(
        commits(worst)
            .iter()
            .any(|c| c["waited_for"].as_array().is_some_and(|w| w
                .iter()
                .any(|s| s["what"] == "cache flushes" || s["what"] == "journal writes"))),
        "{worst:#}"
    );
    let latency = worst["latency_ns"].as_u64().unwrap() as f64;
    assert!(
        (journal_ns + ns_of(worst, "data_writeback")) as f64 >= 0.5 * latency,
        "{worst:#}"
    );
    // The writes the run chose are explained too (the tracer follows the measuring thread's
    // writes), their parts adding up as the fsyncs' do.
    let writes = explained(&result, "write");
    assert!(!writes.is_empty(), "{:#}", result["explain"]);
    for call in &writes {
        let total: u64 = parts(call).iter().map(|p| p["ns"].as_u64().unwrap()).sum();
        assert_eq!(total, call["latency_ns"].as_u64().unwrap(), "{call:#}");
    }
    let notes = result["explain"]["notes"].as_array().cloned().unwrap_or_default();
    assert!(
        !notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("chosen but not explained")),
        "{notes:?}"
    );
    let section = text.split("slowest calls").nth(1).expect("a slowest calls section");
    assert!(
        section.contains("waiting for a journal commit: jbd2 transaction"),
        "{text}"
    );
    assert_no_instance_of(&[pid]);
}

/// Issue 10: slow fsyncs on ext4 name the journal commit and the data writeback.
pub fn slow_fsyncs_on_ext4_name_the_journal_commit_and_the_data_writeback() {
    let _one = one_at_a_time();
    let (result, text, pid) = seed000("ext4");
    // The fingerprint says why fsync costs a commit here and not on the VM's own root.
    let journal = &result["environment"]["journal"];
    assert_eq!(journal["kind"], "jbd2", "{journal}");
    assert_eq!(journal["data_mode"], "ordered", "{journal}");
    let fsyncs = explained(&result, "fsync");
    let worst = fsyncs.first().expect("an fsync explained");
    let latency = worst["latency_ns"].as_u64().unwrap();
    assert!(
        latency > 100_000_000,
        "the stream should slow an fsync past 100 ms: {worst:#}"
    );
    for call in &fsyncs {
        assert_parts_add_up(call);
    }
    // The worst fsync waited for a named jbd2 commit, whose duration the trace knows...
    let journal_ns = ns_of(worst, "journal_commit");
    let named = commits(worst);
    assert!(
        journal_ns > 0
            && named
                .iter()
                .any(|c| c["name"].as_str().unwrap().starts_with("jbd2 transaction ") && c["duration_ns"].is_u64()),
        "{worst:#}"
    );
    // ...and for data writeback: its own file's, or the ordered data the commit wrote first.
    let own_writeback = ns_of(worst, "data_writeback");
    let commit_writeback: u64 = named
        .iter()
        .flat_map(|c| c["waited_for"].as_array().unwrap())
        .filter(|s| s["what"].as_str().unwrap().contains("data writeback"))
        .map(|s| s["ns"].as_u64().unwrap())
        .sum();
    assert!(own_writeback + commit_writeback > 0, "{worst:#}");
    assert!((journal_ns + own_writeback) as f64 >= 0.5 * latency as f64, "{worst:#}");
    // The text report says it in words, in its slowest-calls section.
    let section = text.split("slowest calls").nth(1).expect("a slowest calls section");
    assert!(
        section.contains("waiting for a journal commit: jbd2 transaction"),
        "{text}"
    );
    assert!(section.contains("waiting for data writeback"), "{text}");
    // The timeline covered the run on the scratch filesystem's device.
    let timeline = &result["timeline"];
    assert!(timeline["points"].as_array().unwrap().len() >= 20, "{timeline}");
    assert!(timeline["device"].as_str().unwrap().starts_with("loop"), "{timeline}");
    assert_no_instance_of(&[pid]);
}

/// Issue 10: slow fsyncs on xfs name the log force.
pub fn slow_fsyncs_on_xfs_name_the_log_force() {
    xfs_log_force_named(&[]);
}

/// Issue 25: the BPF tracer, which does not follow xfs's log (written from shared
/// workqueues), names the wait for it as tracefs does without the log force's event:
/// the log force, its time split into the cache flushes completed meanwhile and the log
/// and data writes (before, "waiting for a journal commit", unnamed and unsplit).
pub fn the_bpf_tracer_names_the_xfs_log_force_with_its_flushes() {
    let (result, text) = xfs_log_force_named(&["--explain", "--tracer", "bpf"]);
    assert!(result["explain"]["bpf"].is_object(), "{:#}", result["explain"]);
    for call in explained(&result, "fsync") {
        let shares: Vec<&str> = commits(call)
            .iter()
            .flat_map(|c| c["waited_for"].as_array().unwrap())
            .map(|s| s["what"].as_str().unwrap())
            .collect();
        // Every fsync of new data flushes the drive's cache with its log write.
        assert!(shares.contains(&"cache flushes"), "{call:#}");
    }
    // The log force's own event, traced in the call's task, tells its checkpoint sequence
    // (issue 25: before, the BPF tracer named the force without it).
    assert!(
        text.contains("waiting for an xfs log force: xfs log force (checkpoint sequence "),
        "{text}"
    );
}

/// Issue 25: the BPF tracer names a btrfs fsync's wait for a transaction commit with the
/// transaction it committed, which the commit's event (in the call's task, or in the
/// filesystem's btrfs-transaction thread during the call) told; before, the commit was
/// named without a number. The streaming writer's slow fsyncs wait for full commits. (A
/// wait for a transaction that had not finished committing when the call's wait ended,
/// `wait_current_trans`, is named without one: it is not asserted that every name has it.)
pub fn the_bpf_tracer_names_a_btrfs_commit_by_the_transaction_it_committed() {
    let _one = one_at_a_time();
    let (result, text, pid) = seed000_with("btrfs", &["--explain", "--tracer", "bpf"]);
    let mut names: Vec<String> = Vec::new();
    for call in explained(&result, "fsync") {
        assert_parts_add_up(call);
        for commit in commits(call) {
            names.push(commit["name"].as_str().unwrap().to_string());
        }
    }
    let numbered: Vec<u64> = names
        .iter()
        .filter_map(|n| n.strip_prefix("btrfs transaction commit (transaction "))
        .map(|n| n.strip_suffix(')').and_then(|n| n.parse().ok()).expect(n))
        .collect();
    assert!(
        !numbered.is_empty() && numbered.iter().all(|&n| n > 0),
        "commits named: {names:?}\n{text}"
    );
    assert_no_instance_of(&[pid]);
}

fn xfs_log_force_named(flags: &[&str]) -> (Value, String) {
    let _one = one_at_a_time();
    let (result, text, pid) = seed000_with("xfs", flags);
    assert_eq!(result["environment"]["journal"]["kind"], "xfs log");
    let fsyncs = explained(&result, "fsync");
    assert!(!fsyncs.is_empty());
    // Every fsync of new data on xfs forces the log: each explained one waits for it.
    for call in &fsyncs {
        assert_parts_add_up(call);
        let named = commits(call);
        assert!(
            ns_of(call, "journal_commit") > 0
                && named
                    .iter()
                    .any(|c| c["name"].as_str().unwrap().starts_with("xfs log force")),
            "{call:#}"
        );
    }
    assert_no_instance_of(&[pid]);
    (result, text)
}
