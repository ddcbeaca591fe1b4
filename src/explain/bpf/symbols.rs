//! Kernel addresses to function names, from `/proc/kallsyms` (read once, as root: without
//! it the kernel prints every address as 0, `kptr_restrict`, Documentation/admin-guide/
//! sysctl/kernel.rst). Only text symbols (`t`/`T`) are kept, sorted by address; an address
//! belongs to the last symbol at or below it. Module symbols (`[ext4]`) are kept by name.
//! Of the data symbols, only whether the per-CPU preemption count is listed: a kernel
//! without CONFIG_KALLSYMS_ALL lists none, and BPF cannot then read a per-CPU variable.
//! Of the tracepoints (`__traceiter_NAME`), also the module each is in, if any: a program
//! on a module's tracepoint needs that module's BTF (/sys/kernel/btf/MODULE) to load.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use anyhow::{bail, Context as _, Result};

pub(crate) struct KernelSymbols {
    /// (address, name), sorted by address.
    symbols: Vec<(u64, String)>,
    /// Whether /proc/kallsyms lists the per-CPU preemption count (x86's `__preempt_count`,
    /// or from 6.2 to 6.14 `pcpu_hot`, which holds it).
    preempt_count: bool,
    /// The tracepoints the kernel has, each with the module it is in (None: built in).
    tracepoints: HashMap<String, Option<String>>,
}

/// The data symbols that hold x86's per-CPU preemption count, by kernel version.
const PREEMPT_COUNT: [&str; 2] = ["__preempt_count", "pcpu_hot"];

impl KernelSymbols {
    pub(crate) fn load() -> Result<KernelSymbols> {
        let text = fs::read_to_string("/proc/kallsyms").context("reading /proc/kallsyms")?;
        let symbols = KernelSymbols::parse(&text);
        if symbols.symbols.is_empty() {
            bail!("/proc/kallsyms lists no addresses (kptr_restrict): run as root");
        }
        Ok(symbols)
    }

    /// No symbol at all: every address reads as `?` (for tests).
    #[cfg(test)]
    pub(crate) fn empty() -> KernelSymbols {
        KernelSymbols {
            symbols: Vec::new(),
            preempt_count: false,
            tracepoints: HashMap::new(),
        }
    }

    /// The symbols of a /proc/kallsyms text (for tests).
    #[cfg(test)]
    pub(crate) fn from_kallsyms(text: &str) -> KernelSymbols {
        KernelSymbols::parse(text)
    }

    fn parse(text: &str) -> KernelSymbols {
        let mut preempt_count = false;
        let mut tracepoints = HashMap::new();
        let mut symbols: Vec<(u64, String)> = text
            .lines()
            .filter_map(|line| {
                let mut f = line.split_whitespace();
                let addr = u64::from_str_radix(f.next()?, 16).ok()?;
                let kind = f.next()?;
                let name = f.next()?;
                preempt_count |= addr != 0 && PREEMPT_COUNT.contains(&name);
                if let Some(tracepoint) = name.strip_prefix("__traceiter_").filter(|_| addr != 0) {
                    let module = f.next().map(|m| m.trim_matches(|c| c == '[' || c == ']').to_string());
                    tracepoints.insert(tracepoint.to_string(), module);
                }
                (addr != 0 && (kind == "t" || kind == "T")).then(|| (addr, name.to_string()))
            })
            .collect();
        symbols.sort_unstable();
        KernelSymbols {
            symbols,
            preempt_count,
            tracepoints,
        }
    }

    /// Whether a program can be loaded on `tracepoint` (`tp_btf`): the kernel has it (built
    /// in, or its module loaded) and, for a module's, the module's BTF is in `btf_dir`
    /// (/sys/kernel/btf): libbpf finds the tracepoint's type there, and without it the
    /// whole object would fail to load (a module built without CONFIG_DEBUG_INFO_BTF_MODULES).
    pub(crate) fn tracepoint_loadable(&self, tracepoint: &str, btf_dir: &Path) -> bool {
        match self.tracepoints.get(tracepoint) {
            None => false,
            Some(None) => true,
            Some(Some(module)) => btf_dir.join(module).exists(),
        }
    }

    /// Whether a BPF program can read the CPU's preemption count (whether it runs in an
    /// interrupt): the kernel resolves a per-CPU variable's address from kallsyms.
    pub(crate) fn has_preempt_count(&self) -> bool {
        self.preempt_count
    }

    /// The function an address is in (`?` when it is below every symbol).
    pub(crate) fn name(&self, addr: u64) -> &str {
        match self.symbols.partition_point(|(a, _)| *a <= addr) {
            0 => "?",
            i => &self.symbols[i - 1].1,
        }
    }

    /// A stack's frames as names, innermost first, as `stacks::classify` reads them.
    pub(crate) fn frames(&self, stack: &[u64]) -> Vec<String> {
        stack.iter().map(|&a| self.name(a).to_string()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_belongs_to_the_symbol_at_or_below_it() {
        let s = KernelSymbols::parse(
            "ffffffff81000000 T _stext\nffffffff81000100 t jbd2_log_wait_commit\nffffffff81000200 D some_data\nffffffff81000300 T ext4_sync_file\t[ext4]\n",
        );
        assert_eq!(s.name(0xffff_ffff_8100_0150), "jbd2_log_wait_commit");
        assert_eq!(s.name(0xffff_ffff_8100_0250), "jbd2_log_wait_commit"); // data is skipped
        assert_eq!(s.name(0xffff_ffff_8100_0300), "ext4_sync_file");
        assert_eq!(s.name(0x10), "?");
    }

    #[test]
    fn a_modules_tracepoint_is_loadable_only_where_the_module_has_its_btf() {
        let s = KernelSymbols::parse(
            "ffffffff81000000 T __traceiter_sched_switch\nffffffffc0000100 T __traceiter_jbd2_start_commit\t[jbd2]\nffffffffc0000200 T __traceiter_xfs_log_force\t[xfs]\n",
        );
        let btf = tempfile::tempdir().unwrap();
        std::fs::write(btf.path().join("vmlinux"), b"").unwrap();
        std::fs::write(btf.path().join("jbd2"), b"").unwrap();
        assert!(s.tracepoint_loadable("sched_switch", btf.path()), "built in");
        assert!(
            s.tracepoint_loadable("jbd2_start_commit", btf.path()),
            "its module's BTF is there"
        );
        assert!(
            !s.tracepoint_loadable("xfs_log_force", btf.path()),
            "xfs has no BTF here"
        );
        assert!(
            !s.tracepoint_loadable("btrfs_transaction_commit", btf.path()),
            "not in the kernel"
        );
    }
}
