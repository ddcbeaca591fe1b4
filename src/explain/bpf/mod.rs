//! The tracer in the kernel: a BPF program (watch.bpf.c, compiled by build.rs, loaded with
//! libbpf) that splits each slow sync call of the traced tasks into parts as it happens, for
//! `fsynclab watch`.
//!
//! [`BpfTracer::start`] loads the program, tells it which tasks to follow ([`Filter`]) and
//! its thresholds, and attaches it: BTF trace points on system calls' entry and exit (the
//! program keeps the sync calls by number), on the scheduler (switch, wakeup),
//! the block layer (request issue, completion) and jbd2 (commit start, end). Each attachment
//! is a BPF link whose file descriptor this process owns, never pinned: when the process ends,
//! however it ends (SIGKILL included), the kernel closes them and detaches the program.
//! [`BpfTracer::follow`] hands each slow call to the caller as it comes
//! ([`record::SlowCall`]); [`BpfTracer::latencies`] reads the in-kernel histograms of every
//! call's latency, per process and kind; [`BpfTracer::run_time`] what the programs cost the
//! kernel, counted only when [`Settings::run_time_stats`] asks for it (the kernel then times
//! every run of every program, which the traced calls pay for).
//!
//! Why libbpf (libbpf-rs) and a C program: libbpf is maintained with the kernel's BPF tree
//! and is the reference CO-RE loader; aya's BPF-side crates need a nightly toolchain, which
//! this project cannot assume. The parts: `record` (the record of a slow call), `attribute`
//! (that record as the explanation results carry), `symbols`
//! (kernel addresses to names), `histogram` (the latency histograms' buckets), `cost` (the
//! programs' own run time), `run` (the tracer behind a run's and a command's `--explain`), `tie` (their chosen calls tied to its records).

use std::collections::{BTreeMap, HashMap};
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _, Result};
use libbpf_rs::{Link, MapCore as _, MapFlags, Object, ObjectBuilder, PrintLevel, RingBufferBuilder};

pub(crate) mod attribute;
mod cost;
pub(crate) mod histogram;
mod kind;
#[cfg(test)]
mod layout;
pub(crate) mod plug;
pub(crate) mod record;
pub(crate) mod run;
mod settings;
pub(crate) mod symbols;
pub(crate) mod tie;

use histogram::LatencyKey;
use record::{CallLatency, SlowCall, SyncKind};
pub(crate) use settings::{Filter, Settings, Writes};
use symbols::KernelSymbols;

/// The commits' own records kept for the calls that follow them in the ring (a call's
/// commit record comes just before it; the whole set is dropped when it reaches this).
const COMMITS_KEPT: usize = 1024;

/// Where the kernel gives its BTF and each loaded module's.
const MODULES_BTF: &str = "/sys/kernel/btf";

/// The BPF object build.rs compiled (empty when clang was missing at build time).
static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/watch.bpf.o"));

/// Setting it (to anything) makes the tracer refuse as if the kernel had no BPF: how a test
/// checks the refusal on a machine that has it.
pub(crate) const DISABLE_ENV: &str = "FSYNCLAB_NO_BPF";

/// The program loaded and attached; dropping it detaches everything.
pub(crate) struct BpfTracer {
    object: Object,
    _links: Vec<Link>,
    /// While held, the kernel counts the programs' runs and run time (`bpf_enable_stats`,
    /// reference-counted by the kernel: no sysctl is written, and it ends with the process).
    _stats: Option<OwnedFd>,
    /// The settings asked for the run-time statistics.
    stats_asked: bool,
    /// The settings asked for every call's latency.
    every_call: bool,
}

/// What the programs cost the kernel: how often they ran and for how long in all (0 where
/// they were not asked for, or the kernel could not count).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct RunTime {
    /// The run-time statistics were asked for ([`Settings::run_time_stats`]).
    pub(crate) asked: bool,
    pub(crate) runs: u64,
    pub(crate) ns: u64,
}

/// What the kernel side could not keep: calls not followed (no task storage for the task),
/// records not sent (ring buffer full), histogram entries not made (histogram map full),
/// latencies not sent (their ring full), processes of a command not followed (the map of
/// processes full).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Lost {
    pub(crate) calls: u64,
    pub(crate) records: u64,
    pub(crate) histogram: u64,
    pub(crate) latencies: u64,
    pub(crate) processes: u64,
}

impl Lost {
    /// Everything lost, summed.
    pub(crate) fn total(&self) -> u64 {
        self.calls + self.records + self.histogram + self.latencies + self.processes
    }
}

/// Why the tracer cannot run here, in one line saying what to do; `None` when it can try.
pub(crate) fn unavailable() -> Option<String> {
    if std::env::var_os(DISABLE_ENV).is_some() {
        return Some(format!(
            "the BPF tracer is turned off ({DISABLE_ENV} is set): unset it to trace"
        ));
    }
    if OBJECT.is_empty() {
        return Some(
            "this fsynclab was built without its BPF program (no clang): run scripts/setup.sh and rebuild".into(),
        );
    }
    // SAFETY: geteuid cannot fail and touches no memory of ours.
    if unsafe { libc::geteuid() } != 0 {
        return Some("tracing with BPF needs root: run it with sudo".into());
    }
    if !Path::new(MODULES_BTF).join("vmlinux").exists() {
        return Some(
            "this kernel has no BTF (/sys/kernel/btf/vmlinux; CONFIG_DEBUG_INFO_BTF): BPF tracing needs it".into(),
        );
    }
    None
}

/// libbpf's warnings while loading, kept to explain a failure (it prints nothing itself).
static LIBBPF_LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn keep_libbpf_line(_level: PrintLevel, line: String) {
    let mut log = LIBBPF_LOG.lock().unwrap_or_else(|p| p.into_inner());
    if std::env::var_os("FSYNCLAB_BPF_DEBUG").is_some() {
        note!("{}", line.trim_end());
    }
    if log.len() >= 64 {
        log.remove(0);
    }
    log.push(line.trim_end().to_string());
}

/// The program that reads `writeback:balance_dirty_pages` on the running kernel, by the
/// tracepoint's arguments in its BTF (`btf_trace_balance_dirty_pages`, a pointer to a
/// function whose first argument is the tracepoint's data): eight, the throttle control
/// second (6.18), or twelve, its figures (6.1, 6.12); None for any other form.
fn throttle_program() -> Option<&'static str> {
    use libbpf_rs::btf::{types, Btf, BtfKind, BtfType};
    use libbpf_rs::ReferencesType as _;
    let btf = Btf::from_vmlinux().ok()?;
    let typedef: types::Typedef = btf.type_by_name("btf_trace_balance_dirty_pages")?;
    let proto = types::FuncProto::try_from(typedef.referenced_type().next_type()?).ok()?;
    let second_is_pointer = || {
        let param = proto.iter().nth(2)?;
        let ty = btf.type_by_id::<BtfType>(param.ty)?;
        Some(ty.kind() == BtfKind::Ptr)
    };
    match proto.len() {
        9 if second_is_pointer() == Some(true) => Some("on_throttle"),
        13 => Some("on_throttle_figures"),
        _ => None,
    }
}

fn libbpf_said() -> String {
    let log = LIBBPF_LOG.lock().unwrap_or_else(|p| p.into_inner());
    log.iter().rev().find(|l| !l.is_empty()).cloned().unwrap_or_default()
}

impl BpfTracer {
    /// Loads, configures and attaches the program; `symbols` say whether jbd2's events
    /// exist (not where its module is not loaded).
    pub(crate) fn start(settings: &Settings, symbols: &KernelSymbols) -> Result<BpfTracer> {
        if let Some(why) = unavailable() {
            bail!(why);
        }
        libbpf_rs::set_print(Some((PrintLevel::Debug, keep_libbpf_line)));
        let mut open = ObjectBuilder::default()
            .open_memory(OBJECT)
            .map_err(|e| anyhow!("opening the BPF program: {e}"))?;
        let throttle = throttle_program();
        let btf_dir = Path::new(MODULES_BTF);
        for mut prog in open.progs_mut() {
            let name = prog.name().to_string_lossy().into_owned();
            if name.starts_with("on_commit") && !symbols.tracepoint_loadable("jbd2_start_commit", btf_dir) {
                prog.set_autoload(false);
            }
            // One of the two wakeup programs: the one that tells interrupts by the
            // preemption count where the kernel lets it read it, else the one that tells
            // them by the stack the wakeup runs on.
            let told = symbols.has_preempt_count();
            if (name == "on_wakeup" && !told) || ((name == "on_wakeup_counted" || name.starts_with("on_irq_")) && told)
            {
                prog.set_autoload(false);
            }
            // The interrupt counters, for the tracepoints this kernel has (x86's IPIs,
            // local timer and irq_work are its own); xfs's and btrfs's, where the kernel has
            // them (built in, or their module loaded with its BTF).
            if name.starts_with("on_irq_") || name == "on_xfs_log_force" || name == "on_btrfs_commit" {
                let section = prog.section().to_string_lossy().into_owned();
                let tracepoint = section.trim_start_matches("tp_btf/");
                if !symbols.tracepoint_loadable(tracepoint, btf_dir) {
                    prog.set_autoload(false);
                }
            }
            // One of the two dirty-throttling programs, for the kernel's tracepoint arguments
            // (neither where they are neither form).
            if name.starts_with("on_throttle") && throttle != Some(name.as_str()) {
                prog.set_autoload(false);
            }
            // Every fork and exit of the machine would pass them: only for a command.
            if (name == "on_fork" || name == "on_process_exit") && settings.follow_forks_of.is_none() {
                prog.set_autoload(false);
            }
        }
        let object = open.load().map_err(|e| {
            if e.kind() == libbpf_rs::ErrorKind::PermissionDenied {
                // Root without the capabilities (a container's), or a kernel lockdown:
                // libbpf's own line then blames the kernel's BPF support or RLIMIT_MEMLOCK.
                return anyhow!(
                    "the kernel refused the BPF program (EPERM): it needs root with CAP_BPF, \
                     CAP_PERFMON and CAP_SYS_ADMIN (a container may drop them), and no kernel lockdown"
                );
            }
            anyhow!(
                "loading the BPF program into the kernel: {e} (libbpf: {})",
                libbpf_said()
            )
        })?;
        let tracer = BpfTracer {
            object,
            _links: Vec::new(),
            _stats: settings.run_time_stats.then(cost::enable_stats).flatten(),
            stats_asked: settings.run_time_stats,
            every_call: settings.every_call,
        };
        tracer.configure(settings)?;
        tracer.attach()
    }

    fn configure(&self, settings: &Settings) -> Result<()> {
        self.write_config(settings)?;
        if let Filter::Cgroup(dir) = &settings.filter {
            // The map takes a reference to the cgroup itself: the descriptor may close after.
            let cgroup = std::fs::File::open(dir).with_context(|| format!("opening the cgroup {}", dir.display()))?;
            let fd = u32::try_from(cgroup.as_raw_fd()).context("a cgroup descriptor")?;
            self.map("cgroups")?
                .update(&0u32.to_ne_bytes(), &fd.to_ne_bytes(), MapFlags::ANY)
                .with_context(|| format!("adding the cgroup {} to the BPF filter", dir.display()))?;
        }
        if let Filter::Processes(pids) = &settings.filter {
            let processes = self.map("processes")?;
            for pid in pids {
                processes
                    .update(&pid.to_ne_bytes(), &[1u8], MapFlags::ANY)
                    .with_context(|| format!("adding process {pid} to the BPF filter"))?;
            }
        }
        Ok(())
    }

    /// Sends the calls of `kind` of thread `tid` only when at least `over` slow (or over
    /// the threshold of every thread, if higher): how a run's tracer raises a thread's once
    /// it holds enough of its slowest calls of that kind.
    pub(crate) fn set_thread_threshold(&self, tid: u32, kind: SyncKind, over: Duration) -> Result<()> {
        let key = (kind as u64) << 32 | u64::from(tid);
        self.map("thread_thresholds")?
            .update(&key.to_ne_bytes(), &nanos(over).to_ne_bytes(), MapFlags::ANY)
            .with_context(|| format!("setting thread {tid}'s report threshold for {kind}"))
    }

    fn write_config(&self, settings: &Settings) -> Result<()> {
        self.map("config")?
            .update(&0u32.to_ne_bytes(), &settings.config_bytes(), MapFlags::ANY)
            .context("configuring the BPF program")
    }

    fn attach(mut self) -> Result<BpfTracer> {
        let mut links = Vec::new();
        for prog in self.object.progs_mut() {
            if !prog.autoload() {
                continue;
            }
            let name = prog.name().to_string_lossy().into_owned();
            links.push(prog.attach().map_err(|e| anyhow!("attaching {name}: {e}"))?);
        }
        self._links = links;
        Ok(self)
    }

    fn map(&self, name: &str) -> Result<libbpf_rs::Map<'_>> {
        self.object
            .maps()
            .find(|m| m.name() == name)
            .ok_or_else(|| anyhow!("the BPF program has no map {name}"))
    }

    /// Hands each slow call to `on_call` as the kernel sends it, until `go_on` says no
    /// (asked every `tick`). A record that does not parse is an error.
    pub(crate) fn follow(
        &self,
        tick: Duration,
        go_on: impl FnMut() -> bool,
        on_call: impl FnMut(SlowCall),
    ) -> Result<()> {
        self.follow_every(tick, go_on, on_call, |_| {})
    }

    /// [`BpfTracer::follow`], and each call's latency to `on_latency` as well when the
    /// settings asked for every call ([`Settings::every_call`]).
    pub(crate) fn follow_every(
        &self,
        tick: Duration,
        mut go_on: impl FnMut() -> bool,
        mut on_call: impl FnMut(SlowCall),
        mut on_latency: impl FnMut(CallLatency),
    ) -> Result<()> {
        let events = self.map("events")?;
        let every = self.map("every")?;
        let bad: std::cell::RefCell<Option<String>> = std::cell::RefCell::new(None);
        // The commits' records the kernel sent ahead of the calls that waited for them.
        let mut commits: HashMap<u64, SlowCall> = HashMap::new();
        let mut builder = RingBufferBuilder::new();
        builder
            .add(&events, |bytes: &[u8]| match SlowCall::parse(bytes) {
                Ok(commit) if commit.is_commit() => {
                    if commits.len() >= COMMITS_KEPT {
                        commits.clear();
                    }
                    let c = commit.last_commit.as_ref().expect("a commit's record names it");
                    commits.insert(u64::from(c.dev) << 32 | u64::from(c.tid), commit);
                    0
                }
                Ok(mut call) => {
                    if let Some(c) = &call.last_commit {
                        let dev_tid = u64::from(c.dev) << 32 | u64::from(c.tid);
                        call.commit = commits
                            .get(&dev_tid)
                            .cloned()
                            .or_else(|| self.commit_detail(dev_tid))
                            .map(Box::new);
                    }
                    on_call(call);
                    0
                }
                Err(e) => {
                    *bad.borrow_mut() = Some(e);
                    -1
                }
            })
            .context("reading the BPF ring buffer")?;
        if self.every_call {
            builder
                .add(&every, |bytes: &[u8]| match CallLatency::parse(bytes) {
                    Ok(call) => {
                        on_latency(call);
                        0
                    }
                    Err(e) => {
                        *bad.borrow_mut() = Some(e);
                        -1
                    }
                })
                .context("reading the BPF ring buffer of latencies")?;
        }
        let ring = builder.build().context("reading the BPF ring buffer")?;
        while go_on() {
            // An interrupted poll (EINTR, a signal) only means: look at go_on again. The
            // program wakes this poll only when its ring is half full; the records of a
            // quieter tick are taken when the poll times out.
            if let Err(e) = ring.poll(tick) {
                if e.kind() != libbpf_rs::ErrorKind::Interrupted {
                    return Err(anyhow!("reading the BPF ring buffer: {e}"));
                }
            }
            ring.consume().context("reading the BPF ring buffer")?;
        }
        ring.consume().context("reading the BPF ring buffer")?;
        drop(ring);
        match bad.into_inner() {
            Some(e) => bail!(e),
            None => Ok(()),
        }
    }

    /// Every call's latency so far, per process and kind, from the in-kernel histograms.
    pub(crate) fn latencies(&self) -> Result<HashMap<(u32, SyncKind), histogram::Buckets>> {
        let map = self.map("latency")?;
        let mut out: HashMap<(u32, SyncKind), histogram::Buckets> = HashMap::new();
        for key in map.keys() {
            let Some(value) = map.lookup(&key, MapFlags::ANY).context("reading a latency histogram")? else {
                continue;
            };
            let (Some(k), Ok(count)) = (LatencyKey::parse(&key), <[u8; 8]>::try_from(value.as_slice())) else {
                continue;
            };
            if let Some(kind) = SyncKind::from_number(k.kind) {
                out.entry((k.pid, kind))
                    .or_default()
                    .add(k.bucket, u64::from_ne_bytes(count));
            }
        }
        Ok(out)
    }

    /// The histograms of the processes `alive` says have ended, taken out of the kernel's map
    /// with their names, so that a long watch of short-lived processes (a shell loop's `dd`,
    /// git, dpkg) keeps room in both maps for the processes that come after them: per
    /// process, its name (None if the kernel did not keep it) and its histogram of each kind.
    /// A process that has ended makes no more calls, so nothing counted is lost between the
    /// read and the removal. The processes go into `taken`, also those taken before an
    /// error: they are out of the kernel's map.
    pub(crate) fn take_ended(&self, alive: impl Fn(u32) -> bool, taken: &mut Vec<EndedProcess>) -> Result<()> {
        let map = self.map("latency")?;
        let mut by_pid: BTreeMap<u32, EndedProcess> = BTreeMap::new();
        // A process has a key per kind and bucket: asked once each.
        let mut living: HashMap<u32, bool> = HashMap::new();
        // A histogram that could not be read or removed ends the pass: it stays in the
        // kernel's map, with its process's name, to be taken the next time.
        let mut failed: Option<(u32, anyhow::Error)> = None;
        for key in map.keys() {
            let Some(k) = LatencyKey::parse(&key) else { continue };
            if *living.entry(k.pid).or_insert_with(|| alive(k.pid)) {
                continue;
            }
            let value = match map.lookup(&key, MapFlags::ANY) {
                Ok(Some(value)) => value,
                Ok(None) => continue,
                Err(e) => {
                    failed = Some((k.pid, anyhow::Error::from(e).context("reading a latency histogram")));
                    break;
                }
            };
            if let Err(e) = map.delete(&key) {
                failed = Some((
                    k.pid,
                    anyhow::Error::from(e).context("removing an ended process's latency histogram"),
                ));
                break;
            }
            let (Some(kind), Ok(count)) = (SyncKind::from_number(k.kind), <[u8; 8]>::try_from(value.as_slice())) else {
                continue;
            };
            let ended = by_pid.entry(k.pid).or_insert_with(|| EndedProcess {
                pid: k.pid,
                name: None,
                latencies: BTreeMap::new(),
            });
            ended
                .latencies
                .entry(kind)
                .or_default()
                .add(k.bucket, u64::from_ne_bytes(count));
        }
        let names = self.map("process_names")?;
        for ended in by_pid.values_mut() {
            let key = ended.pid.to_ne_bytes();
            if let Some(name) = names.lookup(&key, MapFlags::ANY).ok().flatten() {
                ended.name = Some(comm(&name));
                // Gone already if the kernel never kept it: not an error.
                if failed.as_ref().is_none_or(|(pid, _)| *pid != ended.pid) {
                    let _ = names.delete(&key);
                }
            }
        }
        taken.extend(by_pid.into_values());
        failed.map_or(Ok(()), |(_, e)| Err(e))
    }

    /// Where the time of journal commit `dev_tid` (device << 32 | transaction) went, if the
    /// kernel still keeps it (the latest 256 commits of the machine).
    pub(crate) fn commit_detail(&self, dev_tid: u64) -> Option<SlowCall> {
        let value = self
            .map("commit_detail")
            .ok()?
            .lookup(&dev_tid.to_ne_bytes(), MapFlags::ANY)
            .ok()??;
        SlowCall::parse(&value).ok()
    }

    /// The name of each process seen making a sync call.
    pub(crate) fn process_names(&self) -> Result<HashMap<u32, String>> {
        let map = self.map("process_names")?;
        let mut out = HashMap::new();
        for key in map.keys() {
            let (Ok(pid), Some(name)) = (
                <[u8; 4]>::try_from(key.as_slice()),
                map.lookup(&key, MapFlags::ANY).ok().flatten(),
            ) else {
                continue;
            };
            out.insert(u32::from_ne_bytes(pid), comm(&name));
        }
        Ok(out)
    }

    /// How many process names the kernel has kept since the program started (each new
    /// process making a sync call, while there is room).
    pub(crate) fn names_given(&self) -> Result<u64> {
        let value = self
            .map("names_given")?
            .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
            .context("reading the count of process names")?;
        Ok(value
            .and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
            .map(u64::from_ne_bytes)
            .unwrap_or(0))
    }

    /// What the kernel side could not keep.
    pub(crate) fn lost(&self) -> Result<Lost> {
        let map = self.map("lost")?;
        let read = |i: u32| -> Result<u64> {
            let v = map
                .lookup(&i.to_ne_bytes(), MapFlags::ANY)
                .context("reading the BPF loss counters")?;
            Ok(v.and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
                .map(u64::from_ne_bytes)
                .unwrap_or(0))
        };
        Ok(Lost {
            calls: read(0)?,
            records: read(1)?,
            histogram: read(2)?,
            latencies: read(3)?,
            processes: read(4)?,
        })
    }
}

/// A process that ended, as [`BpfTracer::take_ended`] took it out of the kernel's maps.
#[derive(Debug)]
pub(crate) struct EndedProcess {
    pub(crate) pid: u32,
    pub(crate) name: Option<String>,
    pub(crate) latencies: BTreeMap<SyncKind, histogram::Buckets>,
}

/// A task's command name as the kernel keeps it (up to a NUL).
fn comm(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

pub(super) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
