//! What explaining costs the measurement: the median fsync of a bare prober (write 4 KiB at
//! offset 0 + fsync, no background writer, no sleep) untraced, traced, and traced without
//! kernel stacks, interleaved in blocks (the order rotating every round) so that drift of
//! the machine hits all alike; on the host directory and on a scratch ext4 (loop device
//! over a file on the host disk). Then the CPU the timeline sampler (100 ms interval) uses
//! per second, and the trace reader's.
//!
//! Needs root (tracefs, loop devices). Run, alone on the machine:
//! `flock /tmp/fsynclab-machine.lock cargo bench --bench explain_overhead`
//! (`FSYNCLAB_BENCH_DIR=DIR` chooses the host directory; default: the current one).

use std::path::Path;
use std::time::{Duration, Instant};

use fsynclab::explain::{current_tid, Timeline, TraceConfig, TracedFs, Tracer, Watch};
use fsynclab::measure::RunClock;

/// Blocks per mode, and fsyncs per block.
const ROUNDS: usize = 40;
const PER_BLOCK: usize = 100;

fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn p90(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[v.len() * 9 / 10]
}

/// One block of `PER_BLOCK` write + fsync pairs; the fsync latencies, ns.
fn block(file: &std::fs::File, clock: &RunClock) -> Vec<u64> {
    let data = [b'x'; 4096];
    (0..PER_BLOCK)
        .map(|_| {
            fsynclab::sys::pwrite_all(file, &data, 0, false).expect("write");
            let (r, _, ns) = clock.time(|| fsynclab::sys::fsync(file));
            r.expect("fsync");
            ns
        })
        .collect()
}

#[derive(Default)]
struct Overhead {
    off: Vec<u64>,
    on: Vec<u64>,
    no_stacks: Vec<u64>,
    reader_cpu_ns: u64,
    traced_s: f64,
}

fn measure(dir: &Path) -> Overhead {
    let path = dir.join("fsynclab-explain-bench");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)
        .expect("bench file");
    let clock = RunClock::start();
    let fs = TracedFs::of_path(dir);
    let mut out = Overhead::default();
    // Warm-up: the file's blocks allocated, the journal past its first commit.
    block(&file, &clock);
    for round in 0..ROUNDS {
        // Rotate the order, so that no mode always follows the same other.
        for k in 0..3 {
            let mode = (round + k) % 3;
            if mode == 0 {
                out.off.extend(block(&file, &clock));
                continue;
            }
            let mut config = TraceConfig::new(
                Watch::threads(&[current_tid()]),
                fs.clone(),
                clock.origin_monotonic_ns(),
            );
            config.stacks = mode == 1;
            let tracer = Tracer::start(config).expect("start tracing (root?)");
            let t = Instant::now();
            let latencies = block(&file, &clock);
            let elapsed = t.elapsed().as_secs_f64();
            let trace = tracer.stop().expect("stop tracing");
            assert_eq!(trace.lost_events, 0, "events lost");
            if mode == 1 {
                out.on.extend(latencies);
                out.reader_cpu_ns += trace.reader_cpu_ns;
                out.traced_s += elapsed;
            } else {
                out.no_stacks.extend(latencies);
            }
        }
    }
    let _ = std::fs::remove_file(&path);
    out
}

fn report(name: &str, mut o: Overhead) {
    let m_off = median(&mut o.off);
    let pct = |m: u64| (m as f64 / m_off as f64 - 1.0) * 100.0;
    let (m_on, m_ns) = (median(&mut o.on), median(&mut o.no_stacks));
    println!(
        "{name}: fsync median {:.1} us untraced, {:.1} us traced ({:+.1}%), {:.1} us traced without stacks ({:+.1}%); p90 {:.1} / {:.1} / {:.1} us; {} fsyncs each; trace reader {:.1} ms CPU per s of tracing",
        m_off as f64 / 1e3,
        m_on as f64 / 1e3,
        pct(m_on),
        m_ns as f64 / 1e3,
        pct(m_ns),
        p90(&mut o.off) as f64 / 1e3,
        p90(&mut o.on) as f64 / 1e3,
        p90(&mut o.no_stacks) as f64 / 1e3,
        o.off.len(),
        o.reader_cpu_ns as f64 / 1e6 / o.traced_s
    );
}

fn main() {
    if !fsynclab::sys::is_root() {
        println!("skipped: explain_overhead needs root (tracefs, loop devices)");
        return;
    }
    let host = std::env::var_os("FSYNCLAB_BENCH_DIR").unwrap_or_else(|| ".".into());
    let host = tempfile::Builder::new()
        .prefix("fsynclab-bench-")
        .tempdir_in(&host)
        .expect("bench directory");
    report(
        &format!("host directory ({})", host.path().display()),
        measure(host.path()),
    );

    let args = fsynclab::cli::TargetArgs {
        scratch: Some("ext4".into()),
        scratch_size: Some("256M".into()),
        backing: Some(host.path().to_path_buf()),
        ..Default::default()
    };
    let target = fsynclab::testbed::prepare(&args).expect("scratch ext4");
    report("scratch ext4 (device host)", measure(target.dir()));
    drop(target);

    // The timeline sampler over 10 s, beside nothing: its own cost.
    let device = TracedFs::of_path(host.path()).dev_name;
    let timeline = Timeline::start(RunClock::start(), Duration::from_millis(100), device.as_deref()).expect("timeline");
    std::thread::sleep(Duration::from_secs(10));
    let rec = timeline.stop();
    println!(
        "timeline sampler: {} points in 10 s at 100 ms, {:.3} ms CPU in total = {:.1} us CPU per second",
        rec.points.len(),
        rec.sampler_cpu_ns as f64 / 1e6,
        rec.sampler_cpu_ns_per_s as f64 / 1e3
    );
}
