//! What the BPF programs cost the kernel: the kernel's run-time statistics of BPF programs,
//! turned on for as long as a tracer asks for them, and the programs' runs and run time read
//! back from `bpf_prog_info`.

use std::os::fd::{AsFd as _, AsRawFd as _, FromRawFd as _, OwnedFd};

use super::{BpfTracer, RunTime};

/// Turns on the kernel's run-time statistics of BPF programs for as long as the returned
/// descriptor lives (the BPF_ENABLE_STATS command of bpf(2); `kernel.bpf_stats_enabled` is the
/// machine-wide switch, this the per-holder one).
pub(super) fn enable_stats() -> Option<OwnedFd> {
    // SAFETY: bpf_enable_stats takes a plain enum and returns a new descriptor or -errno.
    let fd = unsafe { libbpf_rs::libbpf_sys::bpf_enable_stats(libbpf_rs::libbpf_sys::BPF_STATS_RUN_TIME) };
    // SAFETY: a non-negative return is a descriptor just made for us, owned by no one else.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

impl BpfTracer {
    /// The programs' runs and run time so far, summed; nothing read unless asked for (the
    /// kernel may count them for another holder, but then not over the whole watch).
    pub(crate) fn run_time(&self) -> RunTime {
        let mut total = RunTime {
            asked: self.stats_asked,
            ..RunTime::default()
        };
        if !self.stats_asked {
            return total;
        }
        for prog in self.object.progs() {
            let mut info = libbpf_rs::libbpf_sys::bpf_prog_info::default();
            let mut len = std::mem::size_of_val(&info) as u32;
            // SAFETY: info is a bpf_prog_info of `len` bytes that the call fills; the
            // descriptor is the loaded program's, alive as long as `self`.
            let ret = unsafe {
                libbpf_rs::libbpf_sys::bpf_prog_get_info_by_fd(
                    prog.as_fd().as_raw_fd(),
                    std::ptr::from_mut(&mut info),
                    &mut len,
                )
            };
            if ret == 0 {
                total.runs += info.run_cnt;
                total.ns += info.run_time_ns;
            }
        }
        total
    }
}
