//! Issue 2: short real runs of each scenario, `load` and `probe` in a temporary directory,
//! through the binary as a user runs them: every output format, the JSON result against
//! its schema, `--output`, `--keep`, and nothing left behind.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use common::{assert_matches_schema, fsynclab, leftovers, TINY};
use regex::Regex;
use serde_json::Value;

common::tests! {
    overwrite_fsync_json_result_matches_schema_and_records_every_call,
    overwrite_fsync_seed_format_prints_the_original_lines,
    random_writeback_seed_format_prints_the_original_lines,
    random_writeback_text_summary_has_percentiles_and_background,
    every_sync_method_runs_and_is_recorded_under_its_own_name,
    direct_sync_uses_o_direct_on_a_filesystem_that_has_it,
    append_placement_grows_the_file,
    output_file_is_written_whatever_the_format,
    load_random_reports_its_rate,
    load_stream_reports_its_rate,
    probe_measures_the_flush_floor,
}

fn run_json(args: &[&str], dir: &std::path::Path) -> Value {
    common::success_json(
        fsynclab()
            .args(args)
            .args(["--quiet", "--format", "json", "--dir"])
            .arg(dir),
    )
}

/// Fails unless `fsynclab ARGS --dir DIR` succeeds and prints what `pattern` matches.
fn assert_prints(args: &[&str], dir: &std::path::Path, pattern: &str) {
    let text = common::success_stdout(fsynclab().args(args).arg("--dir").arg(dir));
    assert!(Regex::new(pattern).unwrap().is_match(&text), "{text}");
}

/// What `fsynclab ARGS` made tiny ([`TINY`]) prints in the seed's format in `dir`, which must
/// succeed.
fn seed_lines(args: &[&str], dir: &std::path::Path) -> String {
    common::success_stdout(fsynclab().args(tiny(args)).args(["--format", "seed", "--dir"]).arg(dir))
}

fn tiny(args: &[&str]) -> Vec<String> {
    args.iter().chain(TINY).map(|s| s.to_string()).collect()
}

fn overwrite_fsync_json_result_matches_schema_and_records_every_call() {
    let dir = tempfile::tempdir().unwrap();
    let args = tiny(&["run", "overwrite-fsync"]);
    let out = fsynclab()
        .args(&args)
        .args(["--format", "json", "--dir"])
        .arg(dir.path())
        .assert()
        .success();
    let r: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_matches_schema(&r);
    assert_eq!(r["scenario"], "overwrite-fsync");
    assert_eq!(r["params"]["write_size"], "1M");
    assert_eq!(r["params"]["file_size"], "16M");
    let fsyncs = r["ops"]["fsync"]["count"].as_u64().unwrap();
    assert!(fsyncs >= 2, "a 1 s run with 100 ms sleeps did only {fsyncs} fsyncs");
    assert_eq!(r["ops"]["write"]["count"].as_u64().unwrap(), fsyncs);
    // One sample per call, write then fsync, in time order.
    let samples = r["samples"].as_array().unwrap();
    assert_eq!(samples.len() as u64, 2 * fsyncs);
    assert_eq!(samples[0]["op"], "write");
    assert_eq!(samples[1]["op"], "fsync");
    assert_eq!(samples[0]["bytes"], 1 << 20);
    let times: Vec<u64> = samples.iter().map(|s| s["t_ns"].as_u64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "samples not in time order");
    // The streaming writer ran and its throughput is reported per second.
    let bg = &r["background"];
    assert_eq!(bg["kind"], "stream");
    assert!(bg["bytes"].as_u64().unwrap() > 0);
    assert!(bg["mb_per_s"].as_f64().unwrap() > 0.0);
    assert!(!bg["per_second"].as_array().unwrap().is_empty());
    assert!(r["environment"]["kernel"].as_str().is_some_and(|k| !k.is_empty()));
    assert!(r["environment"]["filesystem"]["fstype"].is_string());
    assert!(leftovers(dir.path()).is_empty(), "work directory left behind");
}

fn overwrite_fsync_seed_format_prints_the_original_lines() {
    let dir = tempfile::tempdir().unwrap();
    let text = seed_lines(&["run", "overwrite-fsync"], dir.path());
    let lines: Vec<&str> = text.lines().collect();
    // printf("fsync time: %5.4f\n") per iteration, then overwrite.c's "%.3f GB written in %.2f (%d MB/s)".
    let fsync_line = Regex::new(r"^fsync time: \d+\.\d{4}$").unwrap();
    let final_line = Regex::new(r"^\d+\.\d{3} GB written in \d+\.\d{2} \(\d+ MB/s\)$").unwrap();
    assert!(lines.len() >= 3, "{text}");
    let (last, iterations) = lines.split_last().unwrap();
    assert!(iterations.iter().all(|l| fsync_line.is_match(l)), "{text}");
    assert!(final_line.is_match(last), "{text}");
}

fn random_writeback_seed_format_prints_the_original_lines() {
    let dir = tempfile::tempdir().unwrap();
    let text = seed_lines(
        &[
            "run",
            "random-writeback",
            "--set",
            "iterations=3",
            "--set",
            "sync=fdatasync",
        ],
        dir.path(),
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        &lines[..4],
        [
            "setting up random write file",
            "done setting up random write file",
            "starting fsync run",
            "starting random io!"
        ],
        "{text}"
    );
    // printf("write time: %5.4fs fsync time: %5.4fs\n"), named after the sync call made.
    let call = Regex::new(r"^write time: \d+\.\d{4}s fdatasync time: \d+\.\d{4}s$").unwrap();
    assert_eq!(lines[4..7].iter().filter(|l| call.is_match(l)).count(), 3, "{text}");
    assert_eq!(lines[7], "run done 3 fsyncs total, killing random writer");
    assert_eq!(lines.len(), 8, "{text}");
}

fn random_writeback_text_summary_has_percentiles_and_background() {
    let dir = tempfile::tempdir().unwrap();
    let out = fsynclab()
        .args(tiny(&["run", "random-writeback", "--set", "iterations=2"]))
        .arg("--dir")
        .arg(dir.path())
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let header = Regex::new(r"(?m)^op\s+count\s+errors\s+min\s+p50\s+p90\s+p99\s+p99\.9\s+max\s+mean$").unwrap();
    assert!(header.is_match(&text), "{text}");
    assert!(Regex::new(r"(?m)^fsync\s+2\s+0\s").unwrap().is_match(&text), "{text}");
    assert!(Regex::new(r"(?m)^write\s+2\s+0\s").unwrap().is_match(&text), "{text}");
    assert!(text.contains("background random:") && text.contains("MiB/s"), "{text}");
    // A 16 MiB file stays under any machine's dirty background threshold: the report says so.
    assert!(
        text.contains("note: the random writer's file (16.0 MiB) is smaller than the dirty background threshold"),
        "{text}"
    );
    assert!(leftovers(dir.path()).is_empty());
}

/// Two writes of `write_size` by overwrite-fsync in `dir`, each followed by sync `method`, with
/// no background load and no sleep: the result.
fn two_writes_synced(method: &str, write_size: &str, dir: &std::path::Path) -> Value {
    let sync = format!("sync={method}");
    let size = format!("write_size={write_size}");
    let run = ["run", "overwrite-fsync", "--set", &sync, "--set", &size];
    let alone = ["--set", "background=none", "--set", "iterations=2", "--set", "sleep=0"];
    run_json(&[&run[..], &alone].concat(), dir)
}

fn every_sync_method_runs_and_is_recorded_under_its_own_name() {
    let dir = tempfile::tempdir().unwrap();
    for (method, write_op, sync_op) in [
        ("fsync", "write", Some("fsync")),
        ("fdatasync", "write", Some("fdatasync")),
        ("sync_file_range", "write", Some("sync_file_range")),
        ("osync", "write_osync", None),
        ("odsync", "write_odsync", None),
        ("rwf_dsync", "write_rwf_dsync", None),
        ("none", "write", None),
    ] {
        let r = two_writes_synced(method, "64k", dir.path());
        assert_eq!(r["ops"][write_op]["count"], 2, "{method}: {}", r["ops"]);
        match sync_op {
            Some(op) => assert_eq!(r["ops"][op]["count"], 2, "{method}"),
            None => assert_eq!(r["ops"].as_object().unwrap().len(), 1, "{method}: {}", r["ops"]),
        }
        assert_eq!(r["background"], Value::Null);
    }
    assert!(leftovers(dir.path()).is_empty());
}

fn direct_sync_uses_o_direct_on_a_filesystem_that_has_it() {
    // tmpfs may refuse O_DIRECT; the work tree's filesystem is a real one.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let r = two_writes_synced("direct", "8k", dir.path());
    assert_eq!(r["ops"]["write_direct"]["count"], 2);
    assert_eq!(r["ops"]["fdatasync"]["count"], 2);
}

fn append_placement_grows_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = fsynclab()
        .args([
            "run",
            "overwrite-fsync",
            "--quiet",
            "--keep",
            "--set",
            "background=none",
            "--set",
            "iterations=3",
            "--set",
            "sleep=0",
        ])
        .args(["--set", "placement=append", "--set", "write_size=4k", "--dir"])
        .arg(dir.path())
        .assert()
        .success();
    drop(out);
    let work = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .expect("--keep kept the work directory")
        .unwrap();
    assert!(work.file_name().to_string_lossy().starts_with("fsynclab-"));
    let len = std::fs::metadata(work.path().join("fsync-tester.tst-file"))
        .unwrap()
        .len();
    assert_eq!(len, 3 * 4096);
}

fn output_file_is_written_whatever_the_format() {
    let dir = tempfile::tempdir().unwrap();
    let results = tempfile::tempdir().unwrap();
    let path = results.path().join("r.json");
    fsynclab()
        .args(tiny(&[
            "run",
            "overwrite-fsync",
            "--set",
            "background=none",
            "--set",
            "iterations=2",
            "--format",
            "seed",
        ]))
        .arg("--output")
        .arg(&path)
        .arg("--dir")
        .arg(dir.path())
        .assert()
        .success();
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_matches_schema(&r);
    assert_eq!(r["ops"]["fsync"]["count"], 2);
    assert_eq!(
        leftovers(results.path()),
        ["r.json"],
        "temporary file left beside the result"
    );
}

fn load_random_reports_its_rate() {
    let dir = tempfile::tempdir().unwrap();
    let random = ["load", "random", "--quiet", "--set", "duration=1s"];
    assert_prints(
        &[&random[..], &["--set", "random_file_size=16M"]].concat(),
        dir.path(),
        r"background random: .* = [\d.]+ MiB/s, \d+ writes/s",
    );
    let r = run_json(
        &[
            "load",
            "random",
            "--set",
            "duration=1s",
            "--set",
            "random_file_size=16M",
        ],
        dir.path(),
    );
    assert_matches_schema(&r);
    assert_eq!(r["scenario"], "load-random");
    let bg = &r["background"];
    assert!(bg["ops"].as_u64().unwrap() > 1000, "{bg}");
    assert!((bg["seconds"].as_f64().unwrap() - 1.0).abs() < 0.5, "{bg}");
    assert_eq!(bg["bytes"].as_u64().unwrap(), 4096 * bg["ops"].as_u64().unwrap());
    assert!(leftovers(dir.path()).is_empty());
}

fn load_stream_reports_its_rate() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_json(
        &[
            "load",
            "stream",
            "--set",
            "duration=1s",
            "--set",
            "file_size=16M",
            "--set",
            "chunk=256k",
        ],
        dir.path(),
    );
    assert_matches_schema(&r);
    assert_eq!(r["scenario"], "load-stream");
    assert_eq!(r["background"]["kind"], "stream");
    assert!(r["background"]["mb_per_s"].as_f64().unwrap() > 0.0);
    // In seed format, overwrite.c's final report.
    let stream = [
        "load",
        "stream",
        "--quiet",
        "--format",
        "seed",
        "--set",
        "duration=500ms",
    ];
    assert_prints(
        &[&stream[..], &["--set", "file_size=16M"]].concat(),
        dir.path(),
        r"^\d+\.\d{3} GB written in \d+\.\d{2} \(\d+ MB/s\)\n$",
    );
}

fn probe_measures_the_flush_floor() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let r = run_json(&["probe", "--set", "iterations=20"], dir.path());
    assert_matches_schema(&r);
    assert_eq!(r["ops"]["fdatasync"]["count"], 20);
    assert_eq!(r["ops"]["fsync_unchanged"]["count"], 20);
    assert!(r["findings"][0]
        .as_str()
        .unwrap()
        .starts_with("floor: a durable 4 KiB overwrite costs"));
    assert!(r["environment"]["sysctls"]["dirty_ratio"].is_u64());
    assert!(leftovers(dir.path()).is_empty());
}
