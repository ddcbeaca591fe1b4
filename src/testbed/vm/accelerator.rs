//! How a guest's CPU is run: KVM where it works, TCG (QEMU's translator) otherwise, found by
//! asking QEMU to make a machine on KVM.

use std::process::{Command, Stdio};
use std::time::Duration;

use super::QEMU;
use crate::child::{Bounded, OnSignal};

/// How a guest's CPU is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accelerator {
    /// Hardware virtualisation: the guest's CPU runs at the host's speed.
    Kvm,
    /// QEMU's translator: every guest instruction emulated, several times slower.
    Tcg,
}

impl Accelerator {
    pub fn name(self) -> &'static str {
        match self {
            Accelerator::Kvm => "kvm",
            Accelerator::Tcg => "tcg",
        }
    }
}

/// KVM when the CPU has hardware virtualization, `/dev/kvm` opens and QEMU can set up a
/// virtual CPU on it, else TCG.
///
/// Hardware virtualization first (`vmx` or `svm` among /proc/cpuinfo's flags): a KVM
/// without it is a paravirtual one (`kvm_pvm` on the project's machines) that runs only
/// guest kernels built for it. Some of its hosts refuse QEMU's MSRs at once (below); others
/// set the machine up, and Debian's kernel then hung before its first console line, without
/// a word, until the guest's time limit (its console empty after 11 minutes, where TCG
/// boots it in 1-2).
///
/// Then QEMU: the check starts QEMU paused (`-S`) on KVM with its monitor on a pipe that asks `info status`, then
/// `quit`. QEMU answers only once its machine is made, the CPU's registers and MSRs set
/// through KVM included: where KVM cannot run a guest (a nested VM whose hypervisor refuses
/// an MSR, as on the project's CI machines) QEMU aborts before it answers. The answer, not
/// the time QEMU takes, decides: under load QEMU may take seconds to start or to fail (a
/// check that took "still running after a second" for a working KVM chose KVM on a busy CI
/// machine, and the guest then failed to boot).
pub fn accelerator() -> Accelerator {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if !hardware_virtualization(&cpuinfo) {
        return Accelerator::Tcg;
    }
    if std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_err()
    {
        return Accelerator::Tcg;
    }
    let Ok(monitor) = monitor_input(b"info status\nquit\n") else {
        return Accelerator::Tcg;
    };
    let mut cmd = Command::new(QEMU);
    cmd.args([
        "-accel",
        "kvm",
        "-cpu",
        "host",
        "-display",
        "none",
        "-nodefaults",
        "-S",
        "-m",
        "64",
    ])
    .args(["-monitor", "stdio", "-serial", "none"])
    .stdin(monitor)
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    let limit = Bounded {
        limit: Duration::from_secs(30),
        on_signal: OnSignal::Stop,
        say_after: None,
    };
    match limit.run(&mut cmd) {
        Ok(f) if answered_paused(&f.stdout) => Accelerator::Kvm,
        _ => Accelerator::Tcg,
    }
}

/// Whether /proc/cpuinfo's first CPU has VT-x or AMD-V among its flags.
fn hardware_virtualization(cpuinfo: &str) -> bool {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .and_then(|l| l.split_once(':'))
        .is_some_and(|(_, flags)| flags.split_whitespace().any(|f| f == "vmx" || f == "svm"))
}

/// A pipe holding `commands`, its write end closed: QEMU's monitor reads them, then the end.
fn monitor_input(commands: &[u8]) -> std::io::Result<Stdio> {
    let (read, write) = nix::unistd::pipe()?;
    let mut write = std::fs::File::from(write);
    std::io::Write::write_all(&mut write, commands)?;
    drop(write);
    Ok(Stdio::from(read))
}

/// Whether QEMU's monitor answered `info status` with its machine made and paused.
fn answered_paused(monitor_output: &[u8]) -> bool {
    String::from_utf8_lossy(monitor_output).contains("VM status: paused")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kvm_needs_vt_x_or_amd_v_among_the_cpus_flags() {
        let flags = |f: &str| format!("processor\t: 0\nflags\t\t: fpu vme {f} sse2\nbugs\t\t:\n");
        assert!(hardware_virtualization(&flags("vmx")));
        assert!(hardware_virtualization(&flags("svm")));
        // The project's machines: a hypervisor's guest with a paravirtual KVM.
        assert!(!hardware_virtualization(&flags("hypervisor")));
        assert!(!hardware_virtualization(&flags("vmxx")));
        assert!(!hardware_virtualization(""));
    }

    #[test]
    fn only_a_monitor_that_answered_with_its_machine_paused_means_kvm_works() {
        // What QEMU 7.2 printed here: KVM refusing an MSR aborts it after its prompt.
        let failed = b"QEMU 7.2.22 monitor - type 'help' for more information\n(qemu) ";
        let made = b"QEMU 7.2.22 monitor - type 'help' for more information\n(qemu) info status\nVM status: paused (prelaunch)\n(qemu) quit\n";
        assert!(!answered_paused(failed));
        assert!(!answered_paused(b""));
        assert!(answered_paused(made));
    }
}
