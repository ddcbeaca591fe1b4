//! Booting the guest with virtme-ng and running one command in it: the accelerator chosen
//! (KVM where it works, TCG otherwise), the command line of `vng` built, the VM run as a
//! bounded child in a process group and a PID namespace of its own ([`crate::child`]), so
//! that a guest past its limit, a Ctrl-C, or fsynclab's death (SIGKILL included) ends QEMU
//! and everything it started.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::accelerator::Accelerator;
use super::console::CONSOLE_PORT;
use super::qemu_end::QemuEnd;
use super::script::{self, Script};
use super::share::Shares;
use super::{Kernel, DISK_SERIAL, QEMU};
use crate::child::{Bounded, OnSignal, Outcome};
use crate::environment::VmInfo;
use crate::error::Usage;
use crate::testbed::command::find_tool;

/// The tools `--kernel` needs, or the one-line error saying how to get them.
pub fn check_tools() -> Result<PathBuf, Usage> {
    if find_tool(QEMU).is_none() {
        return Err(Usage(format!(
            "--kernel needs QEMU and {QEMU} is not installed: apt-get install qemu-system-x86 (scripts/setup.sh installs it)"
        )));
    }
    find_tool("vng").ok_or_else(|| {
        Usage("--kernel boots kernels with virtme-ng and vng is not installed: pip3 install virtme-ng (scripts/setup.sh installs it)".into())
    })
}

/// One guest to boot: the kernel, the machine, the disk the host serves, the command.
pub struct Launch<'a> {
    pub kernel: &'a Kernel,
    pub vm: &'a VmInfo,
    pub accelerator: Accelerator,
    /// The file served as the guest's virtio-blk disk (the scratch image or the emulated
    /// disk's FUSE file), if the run has a scratch filesystem.
    pub disk: Option<&'a Path>,
    /// The UNIX socket the host answers the guest's requests on its disk at ([`super::control`]),
    /// given to the guest as the virtio-serial port [`super::control::PORT_NAME`]: for a run
    /// that drives its disk.
    pub control: Option<&'a Path>,
    /// Directories the guest writes into on the host (the results directory, the current
    /// directory); the rest of the host's root is read-only inside.
    pub rw_dirs: Vec<PathBuf>,
    /// Directories the guest reads at their own paths although they are its own there
    /// ([`super::share::hidden_in_guest`]): those of the files a command names.
    pub read_dirs: Vec<PathBuf>,
    /// Where the guest writes the results it would record.
    pub results: &'a Path,
    /// The command run inside, with its arguments.
    pub argv: Vec<OsString>,
    /// How long the guest may run, boot included.
    pub limit: Duration,
    /// Whether the command's stdout is shown (a matrix cell's is not: its table is).
    pub stdout_shown: bool,
    /// Where the guest kernel's console is written (by QEMU, from the guest's virtio console
    /// [`CONSOLE_PORT`]), kept apart from the command's stderr, so that a guest that crashed
    /// can say how ([`console_last_words`]).
    pub console: &'a Path,
    /// virtme-ng's TMPDIR, a directory the run removes: what virtme-ng leaves there when
    /// it is killed (its exit-status file) goes with it.
    pub tmp: &'a Path,
}

/// The status virtme-ng exits with when the guest ended without its command's status: the
/// guest's kernel panicked (it boots with `panic=-1`, and QEMU with `-no-reboot`), or QEMU
/// itself failed.
pub const GUEST_CRASHED: i32 = 255;

/// Why a guest that brought no result back ended so, from its exit status: the words that
/// follow "exited with status N".
pub fn why_no_result(code: i32) -> &'static str {
    if code == GUEST_CRASHED {
        "virtme-ng's status for a guest that ended without its command's: its kernel panicked or QEMU failed"
    } else {
        "it did not boot, or the run failed inside"
    }
}

/// `QEMU was killed by signal 9 (SIGKILL) from outside fsynclab`.
pub fn qemu_killed(sig: i32) -> String {
    let name = nix::sys::signal::Signal::try_from(sig).map_or("", |s| s.as_str());
    format!("QEMU was killed by signal {sig} ({name}) from outside fsynclab")
}

/// How a guest ended.
#[derive(Debug)]
pub enum Ended {
    /// The command's exit status inside (virtme-ng passes it through).
    Exited(i32),
    /// Past its limit, the VM was ended.
    TimedOut,
    /// A signal to fsynclab ended the VM (its number).
    Interrupted(i32),
    /// A signal from elsewhere ended QEMU before the guest ended (its number).
    QemuKilled(i32),
}

/// Boots the guest and runs the command in it; stdout and stderr are the command's, live.
pub fn launch(vng: &Path, l: &Launch) -> std::io::Result<(Ended, Duration)> {
    // In a PID namespace of its own whose first process is virtme-ng, itself killed when
    // `unshare` is (`--kill-child`), which is killed when fsynclab dies (PDEATHSIG): the
    // kernel then kills everything left in the namespace, QEMU included, however fsynclab
    // ended (SIGKILL too). PDEATHSIG alone reaches only the first program started.
    let mut cmd = match find_tool("unshare") {
        Some(unshare) => {
            let mut cmd = Command::new(unshare);
            cmd.args(["--pid", "--fork", "--kill-child", "--"]).arg(vng);
            cmd
        }
        None => Command::new(vng),
    };
    // Every host path virtme-ng or QEMU is given, plain ([`share`]).
    let mut shares = Shares::new(l.tmp);
    cmd.arg("-r").arg(shares.plain(&l.kernel.image)?);
    cmd.args(["--cpus", &l.vm.cpus.to_string()]);
    cmd.args(["--memory", &format!("{}M", l.vm.memory_bytes >> 20)]);
    if l.accelerator == Accelerator::Tcg {
        cmd.arg("--disable-kvm");
    }
    // The host's root over 9p, on every machine. virtme-ng otherwise tries virtiofs first:
    // with QEMU's own C virtiofsd (Debian's qemu packages) each try fails after 3.1 s, one
    // for the root and one for each --rwdir, before it falls back to 9p anyway; and with the
    // Rust virtiofsd and KVM it boots a "microvm" machine, which has no PCI bus for the
    // virtio-blk-pci disk and virtio-serial-pci port qemu_opts adds.
    cmd.arg("--force-9p");
    // The kernel's console on a virtio console of its own, written by QEMU to `l.console`
    // (qemu_opts), at the kernel's default log level (virtme-ng's own console, ttyS0, goes
    // to /dev/null with `quiet loglevel=0`; these come after its options and win). Not
    // virtme-ng's --verbose, which has QEMU write ttyS0 to the same stderr as the command's,
    // byte by byte: a line the command wrote while the kernel was writing one (an I/O error
    // at a power cut) could run into the kernel's and be sorted away with it. Not a second
    // serial port: the serial driver is one console, taken by virtme-ng's console=ttyS0.
    cmd.args(["--append", &format!("console={CONSOLE_PORT}"), "--append", "loglevel=7"]);
    cmd.args(["--append", &not_loaded_at_boot()]);
    // The results directory first: the script is read from it (mounted before the command
    // runs), in a file rather than on the kernel's command line ([`script`]).
    let results_in_guest = shares.directory(l.results, true)?;
    for dir in l.rw_dirs.iter().filter(|d| *d != l.results) {
        shares.directory(dir, true)?;
    }
    for dir in l.read_dirs.iter().filter(|d| !l.rw_dirs.contains(d)) {
        shares.directory(dir, false)?;
    }
    let mut argv = l.argv.clone();
    if let Some(binary) = argv.first_mut() {
        *binary = shares.binary(Path::new(binary))?.into_os_string();
    }
    let cwd = std::env::current_dir()?;
    let guest_script = Script {
        vm: l.vm,
        results: l.results,
        binds: shares.binds(),
        cwd: &cwd,
        argv: &argv,
        stdout_shown: l.stdout_shown,
    };
    std::fs::write(l.results.join(script::FILE), guest_script.text())?;
    cmd.args(shares.args());
    cmd.arg("--exec").arg(format!(
        "exec sh {}",
        script::quote(results_in_guest.join(script::FILE).as_os_str().as_bytes())
    ));
    // Last: vng takes every word after --qemu-opts as QEMU's.
    let mut arg = OsString::from("--qemu-opts=");
    let disk = l.disk.map(|d| shares.plain(d)).transpose()?;
    let control = l.control.map(|c| shares.plain(c)).transpose()?;
    // QEMU makes the console's file; made here first, so that a link to it leads somewhere.
    std::fs::File::create(l.console)?;
    let console = shares.plain(l.console)?;
    arg.push(qemu_opts(l.accelerator, &console, disk.as_deref(), control.as_deref()));
    cmd.arg(arg);
    // From /, whatever the current directory's path holds: virtme-ng would put it on the
    // kernel's command line; the script enters it.
    cmd.current_dir("/");
    let qemu = find_tool(QEMU).ok_or_else(|| std::io::Error::other(format!("{QEMU} is not installed")))?;
    let qemu_end = QemuEnd::prepare(l.tmp, &qemu)?;
    cmd.env("PATH", qemu_end.path());
    cmd.stdin(Stdio::null()).env("TMPDIR", l.tmp);
    let started = Instant::now();
    let outcome = Bounded {
        limit: l.limit,
        on_signal: OnSignal::Stop,
        say_after: None,
    }
    .run_relayed_lines(&mut cmd, {
        let hear = qemu_end.ear();
        move |line: &[u8]| {
            use std::io::Write as _;
            hear(line);
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(line).and_then(|_| err.write_all(b"\n"));
        }
    })?;
    let ended = match outcome {
        Outcome::Exited(status) => match (status.code().unwrap_or(1), qemu_end.signal()) {
            (GUEST_CRASHED, Some(sig)) => Ended::QemuKilled(sig),
            (code, _) => Ended::Exited(code),
        },
        Outcome::TimedOut => Ended::TimedOut,
        Outcome::Interrupted(sig) => Ended::Interrupted(sig),
    };
    Ok((ended, started.elapsed()))
}

/// Modules the guest's udev is not to load at boot: drivers for the devices of QEMU's q35
/// machine and for features of TCG's `max` CPU that no run uses. Under TCG, loading them
/// (the crypto ones run their self-tests) was most of the time between the kernel starting
/// its init and the command: an exec's wall time, boot included, was 46.1-49.5 s with them
/// and 29.1-31.8 s without (BENCHMARKS.md, "A guest's boot"). A name on the kernel's
/// `modprobe.blacklist` is not loaded for a device or a feature (an alias), as udev loads
/// drivers; `modprobe NAME` still loads it. crc32c_intel stays, for ext4's, xfs's and
/// btrfs's metadata checksums.
const NOT_LOADED_AT_BOOT: [&str; 7] = [
    // Nested virtualization.
    "kvm,kvm_amd,kvm_intel,irqbypass,ccp",
    // The q35 machine's SATA controller and its CD-ROM: the run's disk is virtio-blk.
    "ahci,libahci,libata,scsi_mod,sr_mod,cdrom,sg",
    // Crypto drivers for the CPU's AES, SHA, CLMUL and AVX features.
    "aesni_intel,crypto_simd,cryptd,ghash_clmulni_intel,crct10dif_pclmul,crc32_pclmul",
    "sha1_ssse3,sha256_ssse3,sha512_ssse3",
    // Watchdogs; the chipset's LPC, SMBus and firmware configuration.
    "i6300esb,iTCO_wdt,iTCO_vendor_support,intel_pmc_bxt,lpc_ich,i2c_i801,i2c_smbus,qemu_fw_cfg",
    // Input, the power button, the PC speaker.
    "button,evdev,psmouse,serio_raw,pcspkr",
    // CPU frequency drivers, which find nothing to drive in a guest.
    "powernow_k8,acpi_cpufreq",
];

/// The kernel's option that keeps [`NOT_LOADED_AT_BOOT`] from being loaded at boot.
fn not_loaded_at_boot() -> String {
    format!("modprobe.blacklist={}", NOT_LOADED_AT_BOOT.join(","))
}

/// QEMU's own options beside virtme-ng's: TCG on one host thread, the kernel's console
/// written to `console` (the guest's [`CONSOLE_PORT`]), and the disk the host serves.
/// Multi-threaded TCG (QEMU's default, a host thread per virtual CPU) breaks the guest's
/// kernel when it rewrites its own code while the other CPU runs it, as it does
/// whenever a tracepoint is turned on or off (a tracer's start and end): flipping the
/// block tracepoints during writes on the served disk crashed Debian's 6.12 in 5 guests of
/// 5 within seconds ("Oops: int3" in blk_update_request, in an interrupt) and hung 6.1's in
/// 3 of 3; on one thread, 6.12 ended well in 8 of 8 and 6.1 in 1 of 1 with the same 300 flips
/// (docs/kernels.md; docs/bench/tcg-flip-loop.sh).
fn qemu_opts(accelerator: Accelerator, console: &Path, disk: Option<&Path>, control: Option<&Path>) -> OsString {
    let mut opts = Vec::new();
    if accelerator == Accelerator::Tcg {
        opts.push(OsString::from("-accel tcg,thread=single"));
    }
    // A virtio-serial bus of fsynclab's own, whatever virtio-serial devices virtme-ng adds,
    // its first port the guest kernel's console (virtme-ng adds none in script mode).
    let mut serial =
        OsString::from("-device virtio-serial-pci,id=fsynclabserial -chardev file,id=fsynclabconsole,path=");
    serial.push(console);
    serial.push(" -device virtconsole,bus=fsynclabserial.0,chardev=fsynclabconsole");
    opts.push(serial);
    if let Some(disk) = disk {
        // An error of the host's file (its disk full) is the guest's I/O error, as a disk
        // reports one (werror=report): QEMU's default pauses the VM on ENOSPC, and the guest
        // hung silently until its time limit.
        let mut drive = OsString::from(
            "-drive if=none,id=fsynclab,format=raw,cache=none,aio=threads,werror=report,rerror=report,file=",
        );
        drive.push(disk);
        drive.push(format!(" -device virtio-blk-pci,drive=fsynclab,serial={DISK_SERIAL}"));
        opts.push(drive);
    }
    if let Some(socket) = control {
        // On fsynclab's bus, beside the console.
        let mut port = OsString::from("-chardev socket,id=fsynclabctl,path=");
        port.push(socket);
        port.push(format!(
            " -device virtserialport,bus=fsynclabserial.0,chardev=fsynclabctl,name={}",
            super::control::PORT_NAME
        ));
        opts.push(port);
    }
    opts.join(std::ffi::OsStr::new(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guest_skips_qemus_drivers_but_never_what_a_run_needs() {
        let option = not_loaded_at_boot();
        let names: Vec<&str> = option.strip_prefix("modprobe.blacklist=").unwrap().split(',').collect();
        // One word on the kernel's command line: a space would end the option there.
        assert!(
            names
                .iter()
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')),
            "{option}"
        );
        for skipped in ["kvm", "ahci", "sr_mod", "aesni_intel", "iTCO_wdt", "psmouse", "pcspkr"] {
            assert!(names.contains(&skipped), "{skipped} is not on {option}");
        }
        // What a run's testbed and its tracer use in the guest: the root and results over
        // 9p, the served disk, the filesystems with their metadata checksums, the scratch
        // filesystem's FUSE disk and loop device, the console, the control port.
        let needed = [
            "9p",
            "9pnet",
            "9pnet_virtio",
            "netfs",
            "fscache",
            "overlay",
            "virtio",
            "virtio_ring",
            "virtio_pci",
            "virtio_blk",
            "virtio_console",
            "ext4",
            "jbd2",
            "mbcache",
            "xfs",
            "btrfs",
            "libcrc32c",
            "crc32c_intel",
            "crc32c_generic",
            "crc16",
            "fuse",
            "loop",
        ];
        for name in needed {
            assert!(!names.contains(&name), "{name}, which runs need, is on {option}");
        }
    }

    #[test]
    fn tcg_runs_the_guest_on_one_host_thread_beside_the_served_disk() {
        let disk = Path::new("/run/fsynclab/disk");
        let console = Path::new("/run/fsynclab/console.log");
        let tcg = qemu_opts(Accelerator::Tcg, console, Some(disk), None);
        let serial = "-device virtio-serial-pci,id=fsynclabserial -chardev file,id=fsynclabconsole,path=/run/fsynclab/console.log -device virtconsole,bus=fsynclabserial.0,chardev=fsynclabconsole";
        let want = format!("-accel tcg,thread=single {serial} -drive if=none,id=fsynclab,format=raw,cache=none,aio=threads,werror=report,rerror=report,file=/run/fsynclab/disk -device virtio-blk-pci,drive=fsynclab,serial={DISK_SERIAL}");
        assert_eq!(tcg.to_string_lossy(), want);
        assert_eq!(
            qemu_opts(Accelerator::Tcg, console, None, None),
            format!("-accel tcg,thread=single {serial}").as_str()
        );
        let kvm = qemu_opts(Accelerator::Kvm, console, Some(disk), None);
        assert!(!kvm.to_string_lossy().contains("-accel"), "{kvm:?}");
        assert_eq!(qemu_opts(Accelerator::Kvm, console, None, None), serial);
    }

    #[test]
    fn a_run_that_drives_its_disk_gets_the_control_port_on_fsynclabs_bus_beside_the_console() {
        let disk = Path::new("/run/fsynclab/disk");
        let opts = qemu_opts(
            Accelerator::Kvm,
            Path::new("/run/fsynclab/console.log"),
            Some(disk),
            Some(Path::new("/run/fsynclab/control.sock")),
        );
        let opts = opts.to_string_lossy();
        assert!(
            opts.starts_with("-device virtio-serial-pci,id=fsynclabserial -chardev file,id=fsynclabconsole,path=/run/fsynclab/console.log -device virtconsole,bus=fsynclabserial.0,chardev=fsynclabconsole "),
            "{opts}"
        );
        assert!(
            opts.ends_with(" -chardev socket,id=fsynclabctl,path=/run/fsynclab/control.sock -device virtserialport,bus=fsynclabserial.0,chardev=fsynclabctl,name=fsynclab.control"),
            "{opts}"
        );
        assert_eq!(opts.matches("virtio-serial-pci").count(), 1, "{opts}");
    }

    #[test]
    fn a_guest_that_crashed_is_told_apart_from_one_whose_run_failed() {
        assert!(why_no_result(GUEST_CRASHED).contains("kernel panicked"));
        assert!(why_no_result(1).contains("the run failed inside"));
    }
}
