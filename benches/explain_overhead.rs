//! What explaining costs the measurement, through the binary as a user runs it: the median
//! fsync of the bare prober (`fsynclab run overwrite-fsync --set background=none --set
//! sleep=0`) with `--explain` and with `--no-explain`, in runs interleaved round by round
//! (the order alternating, so that drift of the machine hits both alike), on the host
//! directory and on a scratch ext4 (loop device over a file on the host disk). Then the
//! CPU the timeline sampler and the trace reader used, per second, as each run records it.
//!
//! Needs root (tracefs, loop devices). Run, alone on the machine:
//! `flock /tmp/fsynclab-machine.lock cargo bench --bench explain_overhead`
//! (`FSYNCLAB_BENCH_DIR=DIR` chooses the host directory, default the current one;
//! `FSYNCLAB_BENCH_ROUNDS=N` the rounds, default 8).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// fsyncs per run.
const ITERATIONS: u32 = 400;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    v[v.len() / 2]
}

/// One run; its result.
fn run(target: &[&str], explain: bool) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_fsynclab"))
        .env("FSYNCLAB_STORE", "off")
        .args(["run", "overwrite-fsync", "--quiet", "--format", "json"])
        .arg(if explain { "--explain" } else { "--no-explain" })
        .args(target)
        .args(["--set", "background=none", "--set", "sleep=0", "--set", "duration=0"])
        .args(["--set", &format!("iterations={ITERATIONS}")])
        .output()
        .expect("run fsynclab");
    assert!(
        out.status.success(),
        "fsynclab {target:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON result")
}

/// The fsync latencies of a result, µs.
fn fsyncs_us(r: &Value) -> Vec<f64> {
    r["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .filter(|s| s["op"] == "fsync")
        .map(|s| s["latency_ns"].as_f64().unwrap_or(f64::NAN) / 1e3)
        .collect()
}

#[derive(Default)]
struct Side {
    fsync_us: Vec<f64>,
    run_medians_us: Vec<f64>,
    sampler_us_per_s: Vec<f64>,
    reader_ms_per_s: Vec<f64>,
}

impl Side {
    fn add(&mut self, r: &Value) {
        let mut f = fsyncs_us(r);
        self.run_medians_us.push(median(&mut f));
        self.fsync_us.extend(f);
        let t = &r["timeline"];
        self.sampler_us_per_s
            .push(t["sampler_cpu_ns_per_s"].as_f64().unwrap_or(f64::NAN) / 1e3);
        if let Some(ns) = r["explain"]["reader_cpu_ns"].as_f64() {
            let s = r["duration_s"].as_f64().unwrap_or(f64::NAN);
            self.reader_ms_per_s.push(ns / 1e6 / s);
        }
    }
}

fn measure(name: &str, target: &[&str], rounds: usize) {
    // Warm-up: the first run of a directory pays for allocating the file.
    run(target, false);
    let (mut off, mut on) = (Side::default(), Side::default());
    for round in 0..rounds {
        for explain in [round % 2 == 0, round % 2 == 1] {
            let r = run(target, explain);
            if explain {
                on.add(&r);
            } else {
                off.add(&r);
            }
        }
    }
    let (m_off, m_on) = (median(&mut off.fsync_us), median(&mut on.fsync_us));
    let (r_off, r_on) = (median(&mut off.run_medians_us), median(&mut on.run_medians_us));
    println!(
        "{name}: fsync median {m_off:.1} us without --explain, {m_on:.1} us with ({:+.1}%); median of run medians {r_off:.1} / {r_on:.1} us ({:+.1}%); {} fsyncs per side in {rounds} runs each",
        (m_on / m_off - 1.0) * 100.0,
        (r_on / r_off - 1.0) * 100.0,
        off.fsync_us.len(),
    );
    let mut sampler: Vec<f64> = off
        .sampler_us_per_s
        .iter()
        .chain(&on.sampler_us_per_s)
        .copied()
        .collect();
    println!(
        "{name}: timeline sampler (100 ms) {:.1} us CPU per second (median of {} runs); trace reader {:.2} ms CPU per second traced",
        median(&mut sampler),
        sampler.len(),
        median(&mut on.reader_ms_per_s)
    );
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: explain_overhead needs root (tracefs, loop devices)");
        return;
    }
    let rounds = std::env::var("FSYNCLAB_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(8);
    let base = std::env::var_os("FSYNCLAB_BENCH_DIR").unwrap_or_else(|| ".".into());
    let dir = tempfile::Builder::new()
        .prefix("fsynclab-bench-")
        .tempdir_in(Path::new(&base))
        .expect("bench directory");
    let d = dir.path().to_str().expect("a UTF-8 path");
    measure(&format!("host directory ({d})"), &["--dir", d], rounds);
    measure(
        "scratch ext4 (device host)",
        &["--scratch", "ext4", "--scratch-size", "1G", "--backing", d],
        rounds,
    );
}
