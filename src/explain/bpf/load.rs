//! Loading the BPF program: the programs this kernel can run chosen (jbd2's, xfs's and
//! btrfs's events where the kernel has them, one of two wakeup programs and one of two
//! dirty-throttling programs for the kernel's forms), the object loaded, configured with
//! the settings and the filter, and each program attached through a link this process owns.

use std::os::fd::AsRawFd as _;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _, Result};
use libbpf_rs::{MapCore as _, MapFlags, ObjectBuilder, PrintLevel};

use super::record::SyncKind;
use super::symbols::KernelSymbols;
use super::{cost, nanos, unavailable, BpfTracer, Filter, Settings, MODULES_BTF, OBJECT};

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

    /// Attaches every loaded program, the interrupt counters' exits before their entries: an
    /// entry attached first would count the interrupts that begin before their exit is
    /// attached and never leave them (attaching a trace point itself sends IPIs), and each
    /// one left makes the CPU's wakeups look like an interrupt's. An exit seen first only
    /// stops at 0.
    fn attach(mut self) -> Result<BpfTracer> {
        let mut links = Vec::new();
        let mut progs: Vec<_> = self.object.progs_mut().filter(|p| p.autoload()).collect();
        progs.sort_by_key(|p| !p.name().to_string_lossy().starts_with("on_irq_leave"));
        for prog in progs {
            let name = prog.name().to_string_lossy().into_owned();
            links.push(prog.attach().map_err(|e| anyhow!("attaching {name}: {e}"))?);
        }
        self._links = links;
        Ok(self)
    }

    pub(super) fn map(&self, name: &str) -> Result<libbpf_rs::Map<'_>> {
        self.object
            .maps()
            .find(|m| m.name() == name)
            .ok_or_else(|| anyhow!("the BPF program has no map {name}"))
    }
}
