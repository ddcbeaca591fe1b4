//! The two ways the BPF program can find the sync calls (by their system calls' functions,
//! or at the raw_syscalls trace points every system call passes), and which to try in
//! which order: what hooks.rs plans with and settings.rs tells the program.

use anyhow::{bail, Result};

/// Names the ways of hooking the sync calls to try, comma-separated, in order
/// (`functions`, `raw_syscalls`): how a test or a benchmark runs one path on a kernel that
/// allows both, or checks the refusal of one this kernel refuses.
pub(crate) const HOOKS_ENV: &str = "FSYNCLAB_BPF_HOOKS";

/// How the program finds the sync calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SyncHooks {
    /// fentry/fexit on the sync system calls' functions, and for the durable writes on the
    /// filesystems' write functions: a call of another kind runs nothing of ours.
    Functions,
    /// The raw_syscalls trace points, sys_enter and sys_exit, which every system call of the
    /// machine passes (the program compares its number first).
    RawSyscalls,
}

impl SyncHooks {
    /// As a result records it and [`HOOKS_ENV`] takes it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SyncHooks::Functions => "functions",
            SyncHooks::RawSyscalls => "raw_syscalls",
        }
    }

    /// The kind of hook, as a line names it.
    pub(crate) fn hook_kind(self) -> &'static str {
        match self {
            SyncHooks::Functions => "fentry/fexit",
            SyncHooks::RawSyscalls => "raw_syscalls",
        }
    }

    /// Its value in the program's `struct config` (watch_records.h: HOOKS_RAW_SYSCALLS,
    /// HOOKS_FUNCTIONS).
    pub(crate) fn config_value(self) -> u32 {
        match self {
            SyncHooks::RawSyscalls => 0,
            SyncHooks::Functions => 1,
        }
    }

    /// The ways to try, in order: [`HOOKS_ENV`]'s, or functions then raw_syscalls.
    pub(crate) fn to_try() -> Result<Vec<SyncHooks>> {
        let Some(asked) = std::env::var_os(HOOKS_ENV) else {
            return Ok(vec![SyncHooks::Functions, SyncHooks::RawSyscalls]);
        };
        let asked = asked.to_string_lossy().into_owned();
        let mut tries = Vec::new();
        for name in asked.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match [SyncHooks::Functions, SyncHooks::RawSyscalls]
                .into_iter()
                .find(|h| h.name() == name)
            {
                Some(h) => tries.push(h),
                None => bail!("{HOOKS_ENV}={asked}: expected functions, raw_syscalls or both, comma-separated"),
            }
        }
        if tries.is_empty() {
            bail!("{HOOKS_ENV} is empty: name functions, raw_syscalls or both, comma-separated");
        }
        Ok(tries)
    }
}
