//! What explaining costs the measurement, through the binary as a user runs it: the median
//! fsync of the bare prober (`fsynclab run overwrite-fsync --set background=none --set
//! sleep=0`) with `--explain`, with `--explain` but no kernel stacks
//! (`FSYNCLAB_TRACE_STACKS=0`, to tell their cost from the rest of the trace's) and with
//! `--no-explain`, in runs interleaved round by round (in a balanced order, so that drift of
//! the machine hits every side alike), on a quiet machine and with two CPU-burning
//! processes beside it (`sh -c 'while :; do :; done'`, one per CPU of the project's VM),
//! on the host directory and on a scratch ext4 (loop device over a file on the host disk).
//! Then the CPU the timeline sampler and the trace reader used, per second, and the events
//! the kernel dropped, as each run records them.
//!
//! Needs root (tracefs, loop devices). Run, alone on the machine:
//! `flock /tmp/fsynclab-machine.lock cargo bench --bench explain_overhead`
//! (`FSYNCLAB_BENCH_DIR=DIR` chooses the host directory, default the current one;
//! `FSYNCLAB_BENCH_ROUNDS=N` the rounds, default 6; `FSYNCLAB_BENCH_WRITE_SIZES=4k,1M` the
//! prober's write sizes on the host directory, default both; `FSYNCLAB_BENCH_TARGETS` which
//! targets, default `host,scratch`: `scratch-sizes` is the scratch ext4 at each write size,
//! which with `FSYNCLAB_BENCH_DIR=/dev/shm/...` is the "scratch ext4 on ram").
//! The fourth side, `--explain --tracer bpf`, is the tracer in the kernel.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod common;
use common::{interleaved, median, CONDITIONS};

/// fsyncs per run.
const ITERATIONS: u32 = 400;

/// How a run traces.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Off,
    On,
    NoStacks,
    Bpf,
}

impl Side {
    const ALL: [Side; 4] = [Side::Off, Side::On, Side::NoStacks, Side::Bpf];

    fn name(self) -> &'static str {
        match self {
            Side::Off => "--no-explain",
            Side::On => "--explain --tracer tracefs",
            Side::NoStacks => "--explain, no stacks",
            Side::Bpf => "--explain --tracer bpf",
        }
    }
}

/// One run; its result.
fn run(target: &[&str], write_size: &str, side: Side) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fsynclab"));
    cmd.env("FSYNCLAB_STORE", "off")
        .args(["run", "overwrite-fsync", "--quiet", "--format", "json"])
        .arg(if side == Side::Off { "--no-explain" } else { "--explain" })
        .args(target)
        .args(["--set", "background=none", "--set", "sleep=0", "--set", "duration=0"])
        .args(["--set", &format!("write_size={write_size}")])
        .args(["--set", &format!("iterations={ITERATIONS}")]);
    if side == Side::Bpf {
        cmd.args(["--tracer", "bpf"]);
    } else if side != Side::Off {
        // tracefs by name: the BPF tracer is the default where it can run.
        cmd.args(["--tracer", "tracefs"]);
    }
    if side == Side::NoStacks {
        cmd.env("FSYNCLAB_TRACE_STACKS", "0");
    }
    let out = cmd.output().expect("run fsynclab");
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
struct Figures {
    fsync_us: Vec<f64>,
    run_medians_us: Vec<f64>,
    sampler_us_per_s: Vec<f64>,
    reader_ms_per_s: Vec<f64>,
    events_per_s: Vec<f64>,
    /// Events the kernel dropped, and runs whose trace reached its budget, over all runs.
    lost_events: u64,
    events: u64,
    cut_runs: usize,
}

impl Figures {
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
            self.events_per_s
                .push(r["explain"]["events"].as_f64().unwrap_or(f64::NAN) / s);
            self.events += r["explain"]["events"].as_u64().unwrap_or(0);
            self.lost_events += r["explain"]["lost_events"].as_u64().unwrap_or(0);
            self.cut_runs += usize::from(!r["explain"]["trace_cut_at_ns"].is_null());
        }
    }
}

fn measure(name: &str, target: &[&str], write_size: &str, rounds: usize) {
    // Warm-up: the first run of a directory pays for allocating the file.
    run(target, write_size, Side::Off);
    let mut figures: Vec<[Figures; 4]> = vec![Default::default(), Default::default()];
    interleaved(rounds, Side::ALL.len(), |c, i| {
        figures[c][i].add(&run(target, write_size, Side::ALL[i]));
    });
    for (c, condition) in CONDITIONS.iter().enumerate() {
        let f = &mut figures[c];
        let off = median(&mut f[0].fsync_us.clone());
        for (side, figures) in Side::ALL.iter().zip(f.iter_mut()) {
            let m = median(&mut figures.fsync_us.clone());
            let runs = median(&mut figures.run_medians_us);
            println!(
                "{name}, write {write_size}, {condition}: {}: fsync median {m:.1} us ({:+.1}% vs --no-explain), median of run medians {runs:.1} us; {} fsyncs in {rounds} runs",
                side.name(),
                (m / off - 1.0) * 100.0,
                figures.fsync_us.len()
            );
        }
        println!(
            "{name}, write {write_size}, {condition}: timeline sampler {:.1} us CPU/s; trace reader {:.2} ms CPU/s with stacks, {:.2} without; {:.0} / {:.0} events/s",
            median(&mut f[0].sampler_us_per_s),
            median(&mut f[1].reader_ms_per_s),
            median(&mut f[2].reader_ms_per_s),
            median(&mut f[1].events_per_s),
            median(&mut f[2].events_per_s),
        );
        println!(
            "{name}, write {write_size}, {condition}: events lost {} of {} with stacks, {} of {} without; traces cut at their budget: {} runs, {}",
            f[1].lost_events,
            f[1].events,
            f[2].lost_events,
            f[2].events,
            f[1].cut_runs,
            f[2].cut_runs,
        );
        println!(
            "{name}, write {write_size}, {condition}: BPF tracer: reader {:.2} ms CPU/s, {:.1} records/s, {} lost of {}",
            median(&mut f[3].reader_ms_per_s),
            median(&mut f[3].events_per_s),
            f[3].lost_events,
            f[3].events,
        );
    }
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: explain_overhead needs root (tracefs, loop devices)");
        return;
    }
    let rounds = common::rounds(6);
    let sizes = std::env::var("FSYNCLAB_BENCH_WRITE_SIZES").unwrap_or_else(|_| "4k,1M".into());
    let base = std::env::var_os("FSYNCLAB_BENCH_DIR").unwrap_or_else(|| ".".into());
    let dir = tempfile::Builder::new()
        .prefix("fsynclab-bench-")
        .tempdir_in(Path::new(&base))
        .expect("bench directory");
    let d = dir.path().to_str().expect("a UTF-8 path");
    let targets = std::env::var("FSYNCLAB_BENCH_TARGETS").unwrap_or_else(|_| "host,scratch".into());
    let scratch = ["--scratch", "ext4", "--scratch-size", "1G", "--backing", d];
    for target in targets.split(',') {
        match target {
            "host" => {
                for size in sizes.split(',') {
                    measure(&format!("host directory ({d})"), &["--dir", d], size, rounds);
                }
            }
            "scratch" => measure("scratch ext4 (device host)", &scratch, "4k", rounds),
            "scratch-sizes" => {
                for size in sizes.split(',') {
                    measure(&format!("scratch ext4 backed in {d}"), &scratch, size, rounds);
                }
            }
            other => panic!("FSYNCLAB_BENCH_TARGETS: {other}: expected host, scratch or scratch-sizes"),
        }
    }
}
