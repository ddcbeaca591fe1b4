//! Issue 10: explaining slow calls. Each privileged test makes a small scratch filesystem,
//! runs a prober (write + fsync, timed on the run clock) on this test's thread against a
//! background writer in another, traces the kernel meanwhile, and checks that the slow
//! calls are explained by what really delayed them, with parts that add up to each call.
//! They need root, loop devices, FUSE (the emulated 5400 rpm disk) and tracefs.
//!
//! `FSYNCLAB_SAVE_TRACE=DIR` saves each run's trace (with its calls as markers) in DIR,
//! which is how the fixtures in tests/fixtures/trace-*.txt were captured.

#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::io::BufRead as _;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{require, require_root};
use fsynclab::explain::{
    attribute, current_tid, Attribution, Call, Cause, Threshold, Trace, TraceConfig, TracedFs, Tracer, Watch,
};
use fsynclab::measure::RunClock;
use fsynclab::testbed::state::{cleanup_leftovers, Undo};

/// One scratch filesystem, sysctl change and trace at a time: they share the machine's
/// writeback and the tests measure it.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn tracefs_in_kernel() -> bool {
    Path::new("/sys/kernel/tracing").is_dir()
}

fn privileged() -> bool {
    require_root()
        && require("/dev/fuse", Path::new("/dev/fuse").exists())
        && require("tracefs (CONFIG_TRACING)", tracefs_in_kernel())
}

fn backing() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("fsynclab-test-")
        .tempdir()
        .expect("temp dir")
}

/// The fsynclab instances present in tracefs now (none when tracefs is not mounted).
fn our_instances() -> Vec<String> {
    let Some(root) = fsynclab::explain::tracefs::find_mount() else {
        return Vec::new();
    };
    std::fs::read_dir(root.join("instances"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with(&format!("fsynclab-{}", std::process::id())))
                .collect()
        })
        .unwrap_or_default()
}

/// A scratch filesystem on the emulated 5400 rpm disk (20 ms per cache flush, 80 MiB/s).
fn scratch(
    spec: &str,
    backing: &Path,
    dirty_ratio: Option<u64>,
    dirty_background_ratio: Option<u64>,
) -> fsynclab::testbed::Prepared {
    let args = fsynclab::cli::TargetArgs {
        scratch: Some(spec.into()),
        device: Some("hdd-5400".into()),
        scratch_size: Some("1G".into()),
        backing: Some(backing.to_path_buf()),
        dirty_ratio,
        dirty_background_ratio,
        ..Default::default()
    };
    fsynclab::testbed::prepare(&args).expect("scratch filesystem on hdd-5400")
}

#[derive(Clone, Copy)]
enum Background {
    /// Sequential 1 MiB writes to a new file up to `bytes`, then over it again.
    Stream { bytes: u64 },
    /// 4 KiB writes at random aligned offsets in a file of `bytes`.
    Random { bytes: u64 },
}

fn background_writer(dir: &Path, kind: Background, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    let path = dir.join("background");
    std::thread::Builder::new()
        .name("bg-writer".into())
        .spawn(move || {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .open(&path)
                .expect("background file");
            let mut written = 0u64;
            let mut rng = 0x9e3779b97f4a7c15u64;
            while !stop.load(Ordering::Relaxed) {
                let (buf, offset): (&[u8], u64) = match kind {
                    Background::Stream { bytes } => (&[b's'; 1 << 20], written % bytes),
                    Background::Random { bytes } => {
                        // xorshift64: a fixed-seed sequence of aligned offsets.
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        (&[b'r'; 4096], (rng % (bytes / 4096)) * 4096)
                    }
                };
                file.write_all_at(buf, offset).expect("background write");
                written += buf.len() as u64;
            }
            written
        })
        .expect("spawn background writer")
}

/// The prober: `iterations` × (write `write_size` at offset 0, or appended, then fsync
/// unless told not to, then sleep), each call timed on the run clock and written into the
/// trace as a marker.
struct Probe {
    iterations: usize,
    write_size: usize,
    sleep: Duration,
    fsync: bool,
    append: bool,
}

impl Probe {
    /// Seed 000's prober: 1 MiB at offset 0, fsync, a short pause.
    fn fsync_tester() -> Probe {
        Probe {
            iterations: 3,
            write_size: 1 << 20,
            sleep: Duration::from_millis(100),
            fsync: true,
            append: false,
        }
    }
}

struct TracedRun {
    trace: Trace,
    calls: Vec<Call>,
}

/// When the prober starts, once the background writer runs.
#[derive(Clone, Copy)]
enum Start {
    After(Duration),
    /// Once dirty memory is past the point where the kernel starts throttling writers:
    /// halfway between the background and the dirty thresholds ("freerun",
    /// mm/page-writeback.c), read with the timeline's parsers.
    WhenThrottling,
}

fn dirty_past_freerun() -> bool {
    use fsynclab::explain::timeline::{Meminfo, Vmstat};
    let mem: Option<Meminfo> = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| t.parse().ok());
    let vm: Option<Vmstat> = std::fs::read_to_string("/proc/vmstat")
        .ok()
        .and_then(|t| t.parse().ok());
    let (Some(mem), Some(vm)) = (mem, vm) else { return false };
    let freerun_bytes = (vm.dirty_threshold_pages + vm.dirty_background_threshold_pages) / 2 * 4096;
    mem.dirty_bytes + mem.writeback_bytes > freerun_bytes
}

fn wait_for(start: Start) {
    match start {
        Start::After(d) => std::thread::sleep(d),
        Start::WhenThrottling => {
            let deadline = Instant::now() + Duration::from_secs(20);
            while !dirty_past_freerun() {
                assert!(
                    Instant::now() < deadline,
                    "dirty memory never reached the throttling point"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

fn traced_run(dir: &Path, background: Background, start: Start, probe: Probe, name: &str) -> TracedRun {
    let clock = RunClock::start();
    let tid = current_tid();
    let mut config = TraceConfig::new(
        Watch::threads(&[tid]),
        TracedFs::of_path(dir),
        clock.origin_monotonic_ns(),
    );
    let save = std::env::var_os("FSYNCLAB_SAVE_TRACE").map(PathBuf::from);
    config.keep_text = save.is_some();
    let tracer = Tracer::start(config).expect("start tracing");
    let stop = Arc::new(AtomicBool::new(false));
    let writer = background_writer(dir, background, Arc::clone(&stop));
    wait_for(start);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("probe"))
        .expect("probe file");
    let data = vec![b'p'; probe.write_size];
    let mut calls = Vec::new();
    for i in 0..probe.iterations {
        let marked = calls.len();
        let offset = if probe.append { (i * probe.write_size) as u64 } else { 0 };
        let (r, start_ns, latency_ns) = clock.time(|| fsynclab::sys::pwrite_all(&file, &data, offset, false));
        r.expect("write");
        calls.push(Call {
            tid,
            op: "write".into(),
            start_ns,
            latency_ns,
        });
        if probe.fsync {
            let (r, start_ns, latency_ns) = clock.time(|| fsynclab::sys::fsync(&file));
            r.expect("fsync");
            calls.push(Call {
                tid,
                op: "fsync".into(),
                start_ns,
                latency_ns,
            });
        }
        for c in &calls[marked..] {
            tracer.mark(&c.marker()).expect("trace marker");
        }
        std::thread::sleep(probe.sleep);
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().expect("background writer");
    let trace = tracer.stop().expect("stop tracing");
    if let Some(dir) = save {
        let text = trace.to_saved_text().expect("kept text");
        std::fs::write(dir.join(format!("trace-{name}.txt")), text).expect("save trace");
    }
    TracedRun { trace, calls }
}

/// Every attribution's parts add up to its call, within 5%, and explain all but 5%.
fn assert_parts_add_up(attributions: &[Attribution]) {
    for a in attributions {
        let total = a.total_ns() as f64;
        let latency = a.latency_ns as f64;
        assert!(
            (total - latency).abs() <= 0.05 * latency,
            "parts {total} ns vs call {latency} ns: {a:#?}"
        );
        let unattributed = a.ns_of(|c| matches!(c, Cause::Unattributed { .. })) as f64;
        assert!(unattributed <= 0.05 * latency, "{} unattributed: {a:#?}", a.summary(9));
    }
}

fn print(attributions: &[Attribution], trace: &Trace) {
    eprintln!(
        "{} events, {} lost, missing {:?}, reader CPU {} ms",
        trace.events.len(),
        trace.lost_events,
        trace.missing_events,
        trace.reader_cpu_ns / 1_000_000
    );
    for a in attributions {
        eprintln!("{}", a.summary(4));
    }
}

fn is_journal(c: &Cause) -> bool {
    matches!(c, Cause::JournalCommit { .. })
}

fn is_writeback(c: &Cause) -> bool {
    matches!(c, Cause::DataWriteback { .. })
}

/// The commits named in an attribution's journal parts.
fn commits(a: &Attribution) -> Vec<&fsynclab::explain::Commit> {
    a.parts
        .iter()
        .filter_map(|p| match &p.cause {
            Cause::JournalCommit { commits, .. } => Some(commits.iter()),
            _ => None,
        })
        .flatten()
        .collect()
}

#[test]
fn issue10_slow_fsyncs_on_ext4_wait_for_the_journal_commit_and_data_writeback() {
    if !privileged() {
        return;
    }
    let _serial = serial();
    let dir = backing();
    // Background writeback from the first 1% of memory on: the stream's data is on its way
    // to the 80 MiB/s disk from the start, as in seed 000 once its 4 GB file filled memory.
    let target = scratch("ext4", dir.path(), None, Some(1));
    // The fingerprint says why fsync costs a commit here and not on the VM's own root.
    let journal = fsynclab::environment::fingerprint(target.dir())
        .journal
        .expect("journal facts");
    assert_eq!(
        (
            journal.kind.as_str(),
            journal.data_mode.as_deref(),
            journal.commit_interval_s
        ),
        ("jbd2", Some("ordered"), Some(5)),
        "{journal:?}"
    );
    let run = traced_run(
        target.dir(),
        Background::Stream { bytes: 600 << 20 },
        Start::After(Duration::from_secs(1)),
        Probe::fsync_tester(),
        "ext4-stream",
    );
    let fsyncs: Vec<Call> = run.calls.iter().filter(|c| c.op == "fsync").cloned().collect();
    let all = fsynclab::explain::attribute_all(&run.trace, &fsyncs);
    print(&all, &run.trace);
    assert_eq!(run.trace.lost_events, 0, "the reader kept up");
    assert_parts_add_up(&all);
    let worst = all.iter().max_by_key(|a| a.latency_ns).expect("fsyncs");
    assert!(
        worst.latency_ns > 100_000_000,
        "the stream should slow some fsync past 100 ms: {}",
        worst.summary(5)
    );
    // The slow fsync waited for a named jbd2 commit, whose duration the trace knows...
    let journal_ns = worst.ns_of(is_journal);
    assert!(journal_ns > 0, "no journal wait in {}", worst.summary(9));
    let named = commits(worst);
    assert!(
        named
            .iter()
            .any(|c| c.name.starts_with("jbd2 transaction ") && c.duration_ns.is_some()),
        "{named:#?}"
    );
    // ...and for data writeback: its own file's, or the ordered data the commit waited for.
    let own_writeback = worst.ns_of(is_writeback);
    let commit_writeback: u64 = named
        .iter()
        .flat_map(|c| c.waited_for.iter())
        .filter(|s| s.what.contains("data writeback"))
        .map(|s| s.ns)
        .sum();
    assert!(
        own_writeback + commit_writeback > 0,
        "no data writeback in {}",
        worst.summary(9)
    );
    // Together they are most of the call.
    assert!(
        (journal_ns + own_writeback) as f64 >= 0.5 * worst.latency_ns as f64,
        "{}",
        worst.summary(9)
    );
    assert!(our_instances().is_empty(), "instance left: {:?}", our_instances());
}

#[test]
fn issue10_slow_fsyncs_on_xfs_wait_for_the_log_force() {
    if !privileged() || !require("mkfs.xfs", fsynclab::testbed::command::find_tool("mkfs.xfs").is_some()) {
        return;
    }
    let _serial = serial();
    let dir = backing();
    let target = scratch("xfs", dir.path(), None, Some(1));
    let journal = fsynclab::environment::fingerprint(target.dir())
        .journal
        .expect("journal facts");
    assert_eq!(journal.kind, "xfs log");
    assert!(journal.log_buffers.is_some_and(|n| n > 0), "{journal:?}");
    let run = traced_run(
        target.dir(),
        Background::Stream { bytes: 600 << 20 },
        Start::After(Duration::from_secs(1)),
        Probe::fsync_tester(),
        "xfs-stream",
    );
    let fsyncs: Vec<Call> = run.calls.iter().filter(|c| c.op == "fsync").cloned().collect();
    let all = fsynclab::explain::attribute_all(&run.trace, &fsyncs);
    print(&all, &run.trace);
    assert_parts_add_up(&all);
    // Every fsync of new data on xfs forces the log: each waits for it, named by the log
    // force the thread made.
    for a in &all {
        let named = commits(a);
        assert!(
            a.ns_of(is_journal) > 0 && named.iter().any(|c| c.name.starts_with("xfs log force")),
            "{}",
            a.summary(9)
        );
    }
    assert!(our_instances().is_empty(), "instance left: {:?}", our_instances());
}

#[test]
fn issue10_slow_writes_under_low_dirty_limits_are_dirty_throttling() {
    if !privileged() {
        return;
    }
    let _serial = serial();
    let dir = backing();
    // vm.dirty_ratio=1: about 1% of memory may be dirty before writers are throttled; the
    // prober starts once the random writer has got there. It appends 8 MiB at a time, back
    // to back: since Linux 3.2 a task is paused in proportion to the pages it dirtied minus
    // the time it spent elsewhere ("think time", mm/page-writeback.c), so a 1 MiB write
    // after an fsync and a sleep is seldom paused while dirty memory stays under the limit.
    let target = scratch("ext4", dir.path(), Some(1), Some(0));
    let run = traced_run(
        target.dir(),
        Background::Random { bytes: 768 << 20 },
        Start::WhenThrottling,
        Probe {
            iterations: 8,
            write_size: 8 << 20,
            sleep: Duration::ZERO,
            fsync: false,
            append: true,
        },
        "ext4-random-throttled",
    );
    let writes: Vec<Call> = run.calls.iter().filter(|c| c.op == "write").cloned().collect();
    let all = attribute(&run.trace, &writes, &Threshold::default());
    print(&all, &run.trace);
    assert_parts_add_up(&all);
    let worst = all.iter().max_by_key(|a| a.latency_ns).expect("writes");
    let throttled = worst.ns_of(|c| matches!(c, Cause::DirtyThrottle { .. }));
    assert!(
        worst.latency_ns > 10_000_000 && throttled as f64 >= 0.5 * worst.latency_ns as f64,
        "{}",
        worst.summary(9)
    );
    assert!(our_instances().is_empty(), "instance left: {:?}", our_instances());
}

#[test]
fn issue10_trace_clock_is_the_run_clock() {
    if !require_root() || !require("tracefs (CONFIG_TRACING)", tracefs_in_kernel()) {
        return;
    }
    let _serial = serial();
    let clock = RunClock::start();
    let dir = backing();
    let config = TraceConfig::new(
        Watch::threads(&[current_tid()]),
        TracedFs::of_path(dir.path()),
        clock.origin_monotonic_ns(),
    );
    let tracer = Tracer::start(config).expect("start tracing");
    let mut windows = Vec::new();
    for i in 0..20 {
        let before = clock.now_ns();
        tracer.mark(&format!("clock-check {i}")).expect("marker");
        windows.push((before, clock.now_ns()));
    }
    let trace = tracer.stop().expect("stop");
    let marks: Vec<u64> = trace
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            fsynclab::explain::events::EventKind::Marker { text } if text.starts_with("clock-check") => {
                Some(e.ts_ns - trace.origin_ns)
            }
            _ => None,
        })
        .collect();
    assert_eq!(marks.len(), windows.len());
    for (t, (before, after)) in marks.iter().zip(&windows) {
        // The text trace has microsecond resolution: the event lies within the window
        // widened by one microsecond on each side.
        assert!(
            *t + 1_000 >= *before && *t <= after + 1_000,
            "marker at {t} ns outside [{before}, {after}]"
        );
    }
    assert!(our_instances().is_empty(), "instance left: {:?}", our_instances());
}

#[test]
fn issue10_a_dropped_tracer_removes_its_instance() {
    if !require_root() || !require("tracefs (CONFIG_TRACING)", tracefs_in_kernel()) {
        return;
    }
    let _serial = serial();
    let dir = backing();
    let state = tempfile::tempdir().unwrap();
    let config = TraceConfig::new(Watch::threads(&[current_tid()]), TracedFs::of_path(dir.path()), 0);
    let tracer = Tracer::start_with(config, Undo::in_dir(state.path())).expect("start tracing");
    let name = tracer.instance_name().to_string();
    assert!(our_instances().contains(&name));
    drop(tracer);
    assert!(!our_instances().contains(&name), "{name} left behind");
    assert_eq!(common::leftovers(state.path()), Vec::<String>::new(), "state file left");
}

/// Environment variable that makes [`issue10_helper_hold_a_trace_instance`] hold a tracer.
const HOLDER_STATE: &str = "FSYNCLAB_TEST_TRACE_HOLDER_STATE";

/// Not a test: the process that [`issue10_cleanup_removes_the_instance_of_a_sigkilled_run`]
/// starts and kills. It starts tracing, prints its instance's name and waits.
#[test]
#[ignore = "helper process of issue10_cleanup_removes_the_instance_of_a_sigkilled_run"]
fn issue10_helper_hold_a_trace_instance() {
    let Some(state) = std::env::var_os(HOLDER_STATE) else {
        return;
    };
    let config = TraceConfig::new(Watch::threads(&[current_tid()]), TracedFs::of_path(Path::new(".")), 0);
    let tracer = Tracer::start_with(config, Undo::in_dir(Path::new(&state))).expect("start tracing");
    println!("instance {}", tracer.instance_name());
    std::thread::sleep(Duration::from_secs(120));
}

#[test]
fn issue10_cleanup_removes_the_instance_of_a_sigkilled_run() {
    if !require_root() || !require("tracefs (CONFIG_TRACING)", tracefs_in_kernel()) {
        return;
    }
    let _serial = serial();
    let state = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "issue10_helper_hold_a_trace_instance",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(HOLDER_STATE, state.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the holder");
    let stdout = child.stdout.take().expect("stdout");
    let deadline = Instant::now() + Duration::from_secs(30);
    let name = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("instance ").map(str::to_string))
        .expect("the holder names its instance");
    assert!(Instant::now() < deadline);
    let root = fsynclab::explain::tracefs::find_mount().expect("tracefs mounted while tracing");
    let instance = root.join("instances").join(&name);
    assert!(instance.is_dir(), "{} missing", instance.display());
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    assert!(instance.is_dir(), "a SIGKILLed tracer cannot remove its instance");
    let report = cleanup_leftovers(state.path()).expect("cleanup");
    assert!(
        report
            .undone
            .iter()
            .any(|u| u.contains(&format!("trace instance {name}"))),
        "{report:?}"
    );
    assert!(report.failed.is_empty(), "{report:?}");
    let still = fsynclab::explain::tracefs::find_mount().map(|r| r.join("instances").join(&name));
    assert!(!still.is_some_and(|p| p.exists()), "{name} left behind");
    assert_eq!(common::leftovers(state.path()), Vec::<String>::new(), "state file left");
}
