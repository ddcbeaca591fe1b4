//! Loading the BPF program: the programs chosen for this kernel and these settings
//! ([`hooks::Plan`]: the sync calls by their functions or at raw_syscalls, the groups the
//! detail asks for, jbd2's, xfs's and btrfs's events where the kernel has them, one of two
//! wakeup programs and one of two dirty-throttling programs for the kernel's forms), the
//! object loaded, configured with the settings and the filter, and each program attached
//! through a link this process owns; the next way of hooking the sync calls tried where the
//! kernel refuses one.

use std::os::fd::AsRawFd as _;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _, Result};
use libbpf_rs::{MapCore as _, MapFlags, ObjectBuilder, PrintLevel};

use super::hooks::{self, Plan, SyncHooks};
use super::record::SyncKind;
use super::symbols::KernelSymbols;
use super::{cost, nanos, unavailable, BpfTracer, Filter, Settings, OBJECT};

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

/// Why one try of hooks failed: the kernel refused them (another may do), or something
/// else did (no other try would do better).
enum Failed {
    Hooks(anyhow::Error),
    Other(anyhow::Error),
}

impl BpfTracer {
    /// Loads, configures and attaches the program; `symbols` say whether jbd2's events
    /// exist (not where its module is not loaded). The sync calls are hooked by their
    /// functions where the kernel allows it, else at the raw_syscalls trace points
    /// ([`SyncHooks::to_try`]); where it refuses every way, one line names what was tried.
    pub(crate) fn start(settings: &Settings, symbols: &KernelSymbols) -> Result<BpfTracer> {
        if let Some(why) = unavailable() {
            bail!(why);
        }
        libbpf_rs::set_print(Some((PrintLevel::Debug, keep_libbpf_line)));
        // What each way refused was, for the error if every way is refused, and for the
        // hooks' record if one is taken after.
        let (mut refused, mut refused_why) = (Vec::new(), Vec::new());
        for sync in SyncHooks::to_try()? {
            let plan = match Plan::new(sync, settings) {
                Ok(plan) => plan,
                Err(e) => {
                    refused.push(format!("{e:#}"));
                    refused_why.push(format!("{e:#}"));
                    continue;
                }
            };
            let before = (!refused_why.is_empty()).then(|| refused_why.join("; "));
            match BpfTracer::start_with(&plan, settings, symbols, before) {
                Ok(tracer) => return Ok(tracer),
                Err(Failed::Hooks(e)) => {
                    refused.push(format!("{} ({e:#})", plan.tried()));
                    refused_why.push(format!("{} refused ({e:#})", plan.sync.hook_kind()));
                }
                Err(Failed::Other(e)) => return Err(e),
            }
        }
        bail!("the kernel refused every hook tried: {}", refused.join("; "))
    }

    /// One try: the programs of `plan` loaded, configured and attached.
    fn start_with(
        plan: &Plan,
        settings: &Settings,
        symbols: &KernelSymbols,
        refused: Option<String>,
    ) -> Result<BpfTracer, Failed> {
        let mut open = ObjectBuilder::default()
            .open_memory(OBJECT)
            .map_err(|e| Failed::Other(anyhow!("opening the BPF program: {e}")))?;
        let throttle = throttle_program();
        for mut prog in open.progs_mut() {
            let name = prog.name().to_string_lossy().into_owned();
            let section = prog.section().to_string_lossy().into_owned();
            if !plan.loads(&name, &section, settings, symbols, throttle) {
                prog.set_autoload(false);
            } else if let Some(target) = plan.target(&name) {
                prog.set_attach_target(0, Some(target.to_string()))
                    .map_err(|e| Failed::Hooks(anyhow!("{name} on {target}: {e}")))?;
            }
        }
        let object = open.load().map_err(|e| {
            if e.kind() == libbpf_rs::ErrorKind::PermissionDenied && plan.sync == SyncHooks::Functions {
                // The kernel refuses fentry (this project's VM), or lockdown does.
                return Failed::Hooks(anyhow!("EPERM"));
            }
            if e.kind() == libbpf_rs::ErrorKind::PermissionDenied {
                // Root without the capabilities (a container's), a kernel lockdown, or a
                // kernel that refuses this kind of hook: libbpf's own line then blames the
                // kernel's BPF support or RLIMIT_MEMLOCK.
                return Failed::Hooks(anyhow!(
                    "EPERM: it needs root with CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN (a container \
                     may drop them), and no kernel lockdown"
                ));
            }
            Failed::Hooks(anyhow!("loading the BPF program: {e} (libbpf: {})", libbpf_said()))
        })?;
        let mut tracer = BpfTracer {
            object,
            _links: Vec::new(),
            _stats: settings.run_time_stats.then(cost::enable_stats).flatten(),
            stats_asked: settings.run_time_stats,
            every_call: settings.every_call,
            hooks: hooks::attached(plan, settings.detail, Vec::new(), refused),
        };
        tracer.configure(settings, plan.sync).map_err(Failed::Other)?;
        tracer.attach(plan, settings.detail).map_err(Failed::Hooks)?;
        Ok(tracer)
    }

    fn configure(&self, settings: &Settings, sync: SyncHooks) -> Result<()> {
        self.write_config(settings, sync)?;
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

    fn write_config(&self, settings: &Settings, sync: SyncHooks) -> Result<()> {
        self.map("config")?
            .update(&0u32.to_ne_bytes(), &settings.config_bytes(sync), MapFlags::ANY)
            .context("configuring the BPF program")
    }

    /// Attaches every loaded program, each through a link this process owns, the interrupt
    /// counters' exits before their entries: an entry attached first would count the
    /// interrupts that begin before their exit is attached and never leave them (attaching a
    /// trace point itself sends IPIs), and each one left makes the CPU's wakeups look like
    /// an interrupt's (an exit seen first only stops at 0). What was attached is kept for
    /// [`BpfTracer::hooks`]. A link made before a failure is closed with the tracer.
    fn attach(&mut self, plan: &Plan, detail: super::Detail) -> Result<()> {
        let mut attached = Vec::new();
        let mut progs: Vec<_> = self.object.progs_mut().filter(|p| p.autoload()).collect();
        progs.sort_by_key(|p| !p.name().to_string_lossy().starts_with("on_irq_leave"));
        for prog in progs {
            let name = prog.name().to_string_lossy().into_owned();
            let link = prog.attach().map_err(|e| anyhow!("attaching {name}: {e}"))?;
            self._links.push(link);
            attached.push(match plan.target(&name) {
                Some(function) => function.to_string(),
                None => prog.section().to_string_lossy().into_owned(),
            });
        }
        self.hooks = hooks::attached(plan, detail, attached, self.hooks.refused.take());
        Ok(())
    }

    /// The kernel hooks attached.
    pub(crate) fn hooks(&self) -> &crate::explain::bpf::hooks::BpfHooks {
        &self.hooks
    }

    pub(super) fn map(&self, name: &str) -> Result<libbpf_rs::Map<'_>> {
        self.object
            .maps()
            .find(|m| m.name() == name)
            .ok_or_else(|| anyhow!("the BPF program has no map {name}"))
    }
}
