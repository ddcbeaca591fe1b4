//! Which kernel hooks the BPF program attaches to, on this kernel and for these settings:
//! the sync calls by their system calls' functions (fentry/fexit), which no other call of
//! the machine passes, where the kernel allows it, or by the raw_syscalls trace points,
//! which every system call passes, where it refuses (load.rs tries them in that order); the
//! groups of hooks a [`Detail`] level adds; and what was attached, as `watch` says it in a
//! line and a result records it ([`BpfHooks`]).

use std::collections::HashMap;
use std::path::Path;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use super::settings::{Detail, Settings, Writes};
use super::symbols::KernelSymbols;
pub(crate) use super::sync_hooks::SyncHooks;
use super::MODULES_BTF;

/// The system calls' functions' prefix on this architecture (`__x64_sys_fsync`).
const SYSCALL_PREFIX: &str = if cfg!(target_arch = "aarch64") {
    "__arm64_sys_"
} else {
    "__x64_sys_"
};

/// The sync calls' programs (`on_enter_NAME`, `on_exit_NAME`), each the system call NAME.
const SYNC_CALLS: [&str; 6] = ["fsync", "fdatasync", "sync_file_range", "msync", "syncfs", "sync"];

/// The filesystems' write functions a durable write is followed at on the functions path,
/// one `on_enter_write_iter_N`/`on_exit_write_iter_N` pair each (watch.bpf.c's WRITE_ITER
/// slots, as many): those this kernel has, built in or in a module loaded with its BTF.
const WRITE_FUNCTIONS: [&str; 8] = [
    "ext4_file_write_iter",
    "xfs_file_write_iter",
    "btrfs_file_write_iter",
    "f2fs_file_write_iter",
    "blkdev_write_iter",
    "generic_file_write_iter",
    "shmem_file_write_iter",
    "fuse_file_write_iter",
];

/// One try: the sync calls' way, and the function each fentry/fexit program attaches to.
pub(super) struct Plan {
    pub(super) sync: SyncHooks,
    targets: HashMap<String, String>,
}

impl Plan {
    /// The plan for `sync`; an error where this kernel has none of its functions.
    pub(super) fn new(sync: SyncHooks, settings: &Settings) -> Result<Plan> {
        let mut targets = HashMap::new();
        if sync == SyncHooks::Functions {
            let btf =
                libbpf_rs::btf::Btf::from_vmlinux().map_err(|e| anyhow::anyhow!("reading the kernel's BTF: {e}"))?;
            let has = |f: &str| btf.type_by_name::<libbpf_rs::btf::types::Func>(f).is_some();
            for call in SYNC_CALLS {
                // sync's function may be an alias the BTF names by its body (hooks of
                // watch.bpf.c's on_enter_sync read no argument, so either will do).
                let names = match call {
                    "sync" => vec![
                        format!("{SYSCALL_PREFIX}sync"),
                        "__do_sys_sync".into(),
                        "ksys_sync".into(),
                    ],
                    _ => vec![format!("{SYSCALL_PREFIX}{call}")],
                };
                let Some(function) = names.iter().find(|f| has(f)) else {
                    bail!("fentry/fexit on {}: not in this kernel's BTF", names.join(" or "));
                };
                targets.insert(format!("on_enter_{call}"), function.clone());
                targets.insert(format!("on_exit_{call}"), function.clone());
            }
            // A run's writes are every write of its threads: at raw_syscalls (Plan::loads).
            if settings.writes == Writes::Durable {
                let modules = modules_of(&WRITE_FUNCTIONS);
                let present = WRITE_FUNCTIONS.iter().filter(|f| {
                    has(f)
                        || modules
                            .get(**f)
                            .is_some_and(|m| Path::new(MODULES_BTF).join(m).exists())
                });
                for (slot, function) in present.enumerate() {
                    targets.insert(format!("on_enter_write_iter_{slot}"), function.to_string());
                    targets.insert(format!("on_exit_write_iter_{slot}"), function.to_string());
                }
            }
        }
        Ok(Plan { sync, targets })
    }

    /// The function program `name` attaches to, if it is one of this plan's.
    pub(super) fn target(&self, name: &str) -> Option<&str> {
        self.targets.get(name).map(String::as_str)
    }

    /// What this plan attaches the sync calls to, as an error names what was tried.
    pub(super) fn tried(&self) -> String {
        match self.sync {
            SyncHooks::Functions => format!(
                "fentry/fexit on {}",
                SYNC_CALLS
                    .map(|c| self.target(&format!("on_enter_{c}")).unwrap_or(c))
                    .join(", ")
            ),
            SyncHooks::RawSyscalls => "the trace points raw_syscalls:sys_enter and sys_exit".into(),
        }
    }

    /// Whether program `name` (in `section`) is loaded: its group is this plan's and the
    /// settings' detail asks for it, and this kernel has its hook (`throttle`: the one of
    /// the dirty-throttling programs that reads this kernel's form of the trace point).
    pub(super) fn loads(
        &self,
        name: &str,
        section: &str,
        settings: &Settings,
        symbols: &KernelSymbols,
        throttle: Option<&str>,
    ) -> bool {
        let tracepoint = section.trim_start_matches("tp_btf/");
        let has_tracepoint = || symbols.tracepoint_loadable(tracepoint, Path::new(MODULES_BTF));
        // The wakeup program that tells interrupts by the preemption count where the kernel
        // lets it read it; else the one that tells them by the interrupt counters.
        let told = symbols.has_preempt_count();
        match name {
            _ if name.starts_with("on_enter_") || name.starts_with("on_exit_") => self.target(name).is_some(),
            // On the functions path, only for a run's writes and calls on names.
            "on_sys_enter" | "on_sys_exit" => {
                self.sync == SyncHooks::RawSyscalls || matches!(settings.writes, Writes::All { .. })
            }
            "on_switch" => settings.detail >= Detail::Sleeps,
            "on_wakeup" => settings.detail >= Detail::Sleeps && told,
            "on_wakeup_counted" => settings.detail >= Detail::Sleeps && !told,
            _ if name.starts_with("on_irq_") => settings.detail >= Detail::Sleeps && !told && has_tracepoint(),
            "on_rq_issue" | "on_rq_complete" => settings.detail >= Detail::Disk,
            _ if name.starts_with("on_commit") => {
                symbols.tracepoint_loadable("jbd2_start_commit", Path::new(MODULES_BTF))
            }
            "on_xfs_log_force" | "on_btrfs_commit" => has_tracepoint(),
            _ if name.starts_with("on_throttle") => throttle == Some(name),
            // Every fork and exit of the machine would pass them: only for a command.
            "on_fork" | "on_process_exit" => settings.follow_forks_of.is_some(),
            _ => true,
        }
    }
}

/// The module each of `functions` is in, for those /proc/kallsyms lists in a module.
fn modules_of(functions: &[&str]) -> HashMap<String, String> {
    let Ok(text) = std::fs::read_to_string("/proc/kallsyms") else {
        return HashMap::new();
    };
    text.lines()
        .filter(|l| l.ends_with(']'))
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let name = f.nth(2)?;
            let module = f.next()?.trim_matches(|c| c == '[' || c == ']');
            functions
                .contains(&name)
                .then(|| (name.to_string(), module.to_string()))
        })
        .collect()
}

/// The kernel hooks the BPF tracer attached to, as a result records them
/// ([`crate::explain::explanation::BpfTracing`]'s `hooks`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct BpfHooks {
    /// How the sync calls were found: `functions` (fentry/fexit on their system calls'
    /// functions, which no other call passes) or `raw_syscalls` (the trace points every
    /// system call passes, where the kernel refuses fentry).
    pub(crate) sync_calls: String,
    /// The detail asked for (`latency`, `sleeps`, `disk`): which groups of hooks beside the
    /// sync calls' were attached.
    pub(crate) detail: String,
    /// Every hook, once: a function by its name, a trace point as `tp_btf/NAME`.
    pub(crate) attached: Vec<String>,
    /// Why the ways tried before were not taken (the kernel's refusal of fentry), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refused: Option<String>,
}

/// What was attached: the sync calls' way, the detail, and each hook once, in the order
/// attached (a function by its name, a trace point as its program's section,
/// `tp_btf/sched_switch`).
pub(super) fn attached(plan: &Plan, detail: Detail, hooks: Vec<String>, refused: Option<String>) -> BpfHooks {
    let mut attached: Vec<String> = Vec::new();
    for h in hooks {
        if !attached.contains(&h) {
            attached.push(h);
        }
    }
    BpfHooks {
        sync_calls: plan.sync.name().to_string(),
        detail: detail.name().to_string(),
        attached,
        refused,
    }
}

/// The line `watch` prints once attached: `hooks: the sync calls by fentry/fexit on
/// __x64_sys_fsync, ...; trace points sched_switch, ... (--detail disk)`, or `hooks: the
/// sync calls at the trace points sys_enter, sys_exit (every system call passes them;
/// fentry/fexit refused: ...); ...`.
pub(crate) fn line(hooks: &BpfHooks) -> String {
    let (functions, tracepoints): (Vec<&str>, Vec<&str>) = hooks
        .attached
        .iter()
        .map(String::as_str)
        .partition(|h| !h.starts_with("tp_btf/"));
    let mut points: Vec<&str> = tracepoints.iter().map(|t| t.trim_start_matches("tp_btf/")).collect();
    let sync = if hooks.sync_calls == SyncHooks::Functions.name() {
        format!("the sync calls by fentry/fexit on {}", functions.join(", "))
    } else {
        points.retain(|p| !matches!(*p, "sys_enter" | "sys_exit"));
        let why = hooks.refused.as_deref().map(|r| format!("; {r}")).unwrap_or_default();
        format!("the sync calls at the trace points sys_enter, sys_exit (every system call passes them{why})")
    };
    format!(
        "hooks: {sync}; trace points {} (--detail {})",
        points.join(", "),
        hooks.detail
    )
}
