//! What `fsynclab watch` costs the calls it traces, through the binary as a user runs it:
//! the median fsync of the bare prober (`fsynclab run overwrite-fsync --no-explain --set
//! background=none --set sleep=0`, a write and an fsync back to back) on a scratch ext4 whose
//! loop image lies in RAM (`--backing` on /dev/shm), with a watch following it (`fsynclab
//! watch --comm fsynclab`, started before the run, so that every one of the run's calls is
//! traced: the sync calls, the scheduler events of the thread inside them, its stacks over
//! the threshold) and without, in runs interleaved round by round (the order alternating),
//! on a quiet machine and beside two CPU-burning processes (one per CPU of the project's VM).
//!
//! Needs root (BPF, loop devices). Run, alone on the machine:
//! `flock /tmp/fsynclab-bench.lock cargo bench --bench watch_overhead`
//! (`FSYNCLAB_BENCH_ROUNDS=N` the rounds, default 5; `FSYNCLAB_BENCH_WRITE_SIZE` the prober's
//! write size, default 4k; `FSYNCLAB_BENCH_WATCH` the watch's filter, default `--comm
//! fsynclab`: `--pid 1` leaves the runs untraced, and measures what the hooks cost alone).

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

mod common;
use common::{interleaved, median, CONDITIONS};

/// fsyncs per run.
const ITERATIONS: u32 = 400;

/// A watch of every task named fsynclab, attached when it returns, ended (SIGTERM) on drop.
struct Watch(Child);

impl Watch {
    fn start() -> Watch {
        let args = std::env::var("FSYNCLAB_BENCH_WATCH").unwrap_or_else(|_| "--comm fsynclab".into());
        let mut child = Command::new(env!("CARGO_BIN_EXE_fsynclab"))
            .env("FSYNCLAB_STORE", "off")
            .arg("watch")
            .args(args.split_whitespace())
            .args(["--threshold", "10ms"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start fsynclab watch");
        let mut line = String::new();
        BufReader::new(child.stderr.take().expect("stderr"))
            .read_line(&mut line)
            .expect("watch's first line");
        assert!(line.starts_with("watching"), "watch did not start: {line}");
        Watch(child)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // SAFETY: kill has no memory preconditions; the pid is our child, not yet reaped.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

/// One run of the prober; its fsync latencies, µs.
fn run(backing: &str, write_size: &str, watched: bool) -> Vec<f64> {
    let _watch = watched.then(Watch::start);
    let out = Command::new(env!("CARGO_BIN_EXE_fsynclab"))
        .env("FSYNCLAB_STORE", "off")
        .args(["run", "overwrite-fsync", "--quiet", "--format", "json", "--no-explain"])
        .args(["--scratch", "ext4", "--backing", backing])
        .args(["--set", "background=none", "--set", "sleep=0", "--set", "duration=0"])
        .args(["--set", &format!("write_size={write_size}")])
        .args(["--set", &format!("iterations={ITERATIONS}")])
        .output()
        .expect("run fsynclab");
    assert!(
        out.status.success(),
        "fsynclab run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("JSON result");
    r["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .filter(|s| s["op"] == "fsync")
        .map(|s| s["latency_ns"].as_f64().unwrap_or(f64::NAN) / 1e3)
        .collect()
}

fn main() {
    let rounds = common::rounds(5);
    let write_size = std::env::var("FSYNCLAB_BENCH_WRITE_SIZE").unwrap_or_else(|_| "4k".into());
    let backing = tempfile::Builder::new()
        .prefix("fsynclab-watch-bench-")
        .tempdir_in("/dev/shm")
        .expect("a directory in /dev/shm");
    let backing = backing.path().to_str().expect("UTF-8 path").to_string();
    run(&backing, &write_size, false); // warm-up
                                       // [condition][unwatched, watched]: all fsyncs, and each run's median.
    let mut all: [[Vec<f64>; 2]; 2] = Default::default();
    let mut run_medians: [[Vec<f64>; 2]; 2] = Default::default();
    interleaved(rounds, 2, |c, side| {
        let mut f = run(&backing, &write_size, side == 1);
        run_medians[c][side].push(median(&mut f));
        all[c][side].extend(f);
    });
    for (c, condition) in CONDITIONS.iter().enumerate() {
        let off = median(&mut all[c][0]);
        let on = median(&mut all[c][1]);
        println!(
            "scratch ext4 on RAM, write {write_size}, {condition}: median fsync {off:.1} us unwatched, {on:.1} us watched ({:+.1}%); median of run medians {:.1} / {:.1} us; {} fsyncs per side in {rounds} rounds",
            (on / off - 1.0) * 100.0,
            median(&mut run_medians[c][0]),
            median(&mut run_medians[c][1]),
            all[c][0].len()
        );
    }
}
