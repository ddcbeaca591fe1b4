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

use super::{Kernel, DISK_SERIAL, GUEST_RESULTS_ENV};
use crate::child::{Bounded, OnSignal, Outcome};
use crate::environment::{VmInfo, HOST_ENV, VM_ENV};
use crate::error::Usage;
use crate::testbed::command::find_tool;

/// The QEMU binary virtme-ng runs.
const QEMU: &str = "qemu-system-x86_64";

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

/// KVM when `/dev/kvm` opens and QEMU can set up a virtual CPU on it, else TCG. The check
/// starts QEMU paused (`-S`) on KVM with its monitor on a pipe that asks `info status`, then
/// `quit`. QEMU answers only once its machine is made, the CPU's registers and MSRs set
/// through KVM included: where KVM cannot run a guest (a nested VM whose hypervisor refuses
/// an MSR, as on the project's CI machines) QEMU aborts before it answers. The answer, not
/// the time QEMU takes, decides: under load QEMU may take seconds to start or to fail (a
/// check that took "still running after a second" for a working KVM chose KVM on a busy CI
/// machine, and the guest then failed to boot).
pub fn accelerator() -> Accelerator {
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

/// How a guest ended.
#[derive(Debug)]
pub enum Ended {
    /// The command's exit status inside (virtme-ng passes it through).
    Exited(i32),
    /// Past its limit, the VM was ended.
    TimedOut,
    /// A signal to fsynclab ended the VM (its number).
    Interrupted(i32),
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
    cmd.arg("-r").arg(&l.kernel.image);
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
    for dir in &l.rw_dirs {
        cmd.arg("--rwdir").arg(dir);
    }
    // The command in a file the guest reads from the results directory (mounted before its
    // command runs), not on the kernel's command line, where virtme-ng puts `--exec`'s
    // script in base64: x86 keeps 2048 bytes of it (COMMAND_LINE_SIZE) and cuts the rest,
    // virtme-ng's `init=` last among them, and a guest whose line was cut hung at boot
    // until its time limit (kernel_vm's tracepoint test's script, with one line more, and
    // virtme-ng's options and these, made 2164 bytes).
    let script = l.results.join(GUEST_COMMAND_FILE);
    std::fs::write(&script, guest_script(l))?;
    cmd.arg("--exec")
        .arg(format!("exec sh {}", quote(script.as_os_str().as_bytes())));
    // Last: vng takes every word after --qemu-opts as QEMU's.
    let mut arg = OsString::from("--qemu-opts=");
    arg.push(qemu_opts(l.accelerator, l.console, l.disk, l.control));
    cmd.arg(arg);
    cmd.stdin(Stdio::null()).env("TMPDIR", l.tmp);
    let started = Instant::now();
    let outcome = Bounded {
        limit: l.limit,
        on_signal: OnSignal::Stop,
        say_after: None,
    }
    .run_relayed_lines(&mut cmd, |line: &[u8]| {
        use std::io::Write as _;
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(line).and_then(|_| err.write_all(b"\n"));
    })?;
    let ended = match outcome {
        Outcome::Exited(status) => Ended::Exited(status.code().unwrap_or(1)),
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
        let mut drive = OsString::from("-drive if=none,id=fsynclab,format=raw,cache=none,aio=threads,file=");
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

/// The guest's console its kernel's messages are written to: the virtio console
/// [`qemu_opts`] adds. It comes up when virtio_console does (a module in Debian's kernels,
/// loaded by virtme-ng's initramfs about 5 s into a TCG boot), and shows the kernel's
/// messages from then on.
const CONSOLE_PORT: &str = "hvc0";

/// Whether `line` is the kernel's console: stamped with the time since boot, `[   12.345678]`.
fn is_console(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(b"[") else {
        return false;
    };
    let stamp: Vec<u8> = rest.iter().copied().take_while(|&b| b != b']').collect();
    let digits = String::from_utf8_lossy(&stamp);
    let digits = digits.trim_start();
    stamp.len() < rest.len() && !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// What a guest's console said last that tells how it ended: its kernel's panic line (or a
/// BUG or Oops) when there is one, after what the oops that led to it said first (its BUG,
/// Oops or fault line, and where: its RIP), else its last line; without the time stamps.
pub fn console_last_words(log: &Path) -> Option<String> {
    let text = std::fs::read(log).ok()?;
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().filter(|l| is_console(l.as_bytes())).collect();
    let words = |line: &str| line.split_once(']').map_or(line, |(_, w)| w).trim().to_string();
    let telling = ["Kernel panic", "BUG:", "Oops", "general protection fault"];
    let Some(at) = lines.iter().rposition(|l| telling.iter().any(|t| l.contains(t))) else {
        return lines.last().map(|l| words(l));
    };
    let mut said = Vec::new();
    if lines[at].contains("Kernel panic") {
        // The oops a panic follows is printed just before it (with its registers and call
        // trace, some tens of lines).
        let oops = &lines[at.saturating_sub(80)..at];
        // Its first line: a BUG or fault names the cause, where an Oops line follows it.
        let says = |words: &[&str]| oops.iter().rposition(|l| words.iter().any(|t| l.contains(t)));
        let first = says(&["BUG:", "general protection fault"]).or_else(|| says(&["Oops"]));
        if let Some(first) = first {
            said.push(words(oops[first]));
            if let Some(rip) = oops[first..].iter().find(|l| l.contains("RIP:")) {
                said.push(words(rip));
            }
        }
    }
    said.push(words(lines[at]));
    Some(said.join(" | ").chars().take(400).collect())
}

/// The file in the results directory that holds [`guest_script`].
const GUEST_COMMAND_FILE: &str = "command.sh";

/// The shell line the guest runs: the facts and the results directory in the environment,
/// the host's `FSYNCLAB_*` variables passed on (but its state directory), then the command.
fn guest_script(l: &Launch) -> String {
    let mut words = vec!["exec".to_string(), "env".to_string()];
    words.push(quote(format!("{VM_ENV}={}", l.vm.to_env()).as_bytes()));
    let mut results = format!("{GUEST_RESULTS_ENV}=").into_bytes();
    results.extend_from_slice(l.results.as_os_str().as_bytes());
    words.push(quote(&results));
    // The run is this machine's, made in a VM: named as the host's runs are (the guest's
    // hostname is virtme-ng's), unless the farm names the host already (passed on below).
    if std::env::var_os(HOST_ENV).is_none() {
        words.push(quote(
            format!("{HOST_ENV}={}", crate::environment::this_host().name).as_bytes(),
        ));
    }
    for (k, v) in std::env::vars_os() {
        let name = k.to_string_lossy();
        // Not the state directory: the guest's steps are undone with the guest, and the
        // host's state files would be leftovers of dead runs to a guest that cannot see
        // their processes.
        if name.starts_with("FSYNCLAB_") && ![VM_ENV, GUEST_RESULTS_ENV, "FSYNCLAB_STATE_DIR"].contains(&&*name) {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            words.push(quote(&kv));
        }
    }
    words.extend(l.argv.iter().map(|a| quote(a.as_bytes())));
    if !l.stdout_shown {
        words.push(">/dev/null".into());
    }
    words.join(" ")
}

/// `word` for a POSIX shell: in single quotes, each single quote closed, escaped, reopened.
fn quote(word: &[u8]) -> String {
    let text = String::from_utf8_lossy(word);
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_monitor_that_answered_with_its_machine_paused_means_kvm_works() {
        // What QEMU 7.2 printed here: KVM refusing an MSR aborts it after its prompt.
        let failed = b"QEMU 7.2.22 monitor - type 'help' for more information\n(qemu) ";
        let made = b"QEMU 7.2.22 monitor - type 'help' for more information\n(qemu) info status\nVM status: paused (prelaunch)\n(qemu) quit\n";
        assert!(!answered_paused(failed));
        assert!(!answered_paused(b""));
        assert!(answered_paused(made));
    }

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
        let want = format!("-accel tcg,thread=single {serial} -drive if=none,id=fsynclab,format=raw,cache=none,aio=threads,file=/run/fsynclab/disk -device virtio-blk-pci,drive=fsynclab,serial={DISK_SERIAL}");
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
    fn the_consoles_panic_is_its_last_word() {
        assert!(is_console(b"[   19.874069] kvm: exiting hardware virtualization"));
        assert!(is_console(b"[12345.1] x"));
        assert!(!is_console(b"ERR"));
        assert!(!is_console(b"[1/20] reproduce1-004 #1: run 1"));
        assert!(!is_console(b"[ ] nothing"));
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("console.log");
        // As the guest's console writes it: lines ended by \r\n.
        std::fs::write(
            &log,
            "[    1.0] Linux version 6.12\r\n\
             [    9.5] Kernel panic - not syncing: Attempted to kill init!\r\n\
             [    9.6] Kernel Offset: disabled\r\n",
        )
        .unwrap();
        assert_eq!(
            console_last_words(&log).as_deref(),
            Some("Kernel panic - not syncing: Attempted to kill init!")
        );
        // A panic after an oops: what the oops said first, and where, then the panic.
        std::fs::write(
            &log,
            "[    5.0] BUG: kernel NULL pointer dereference, address: 0000000000000008\n\
             [    5.0] #PF: supervisor read access in kernel mode\n\
             [    5.0] Oops: 0000 [#1] PREEMPT SMP NOPTI\n\
             [    5.0] RIP: 0010:blk_mq_start_request+0x12/0x40\n\
             [    5.0] Call Trace:\n\
             [    5.1] Kernel panic - not syncing: Fatal exception in interrupt\n\
             [    5.1] Kernel Offset: disabled\n",
        )
        .unwrap();
        assert_eq!(
            console_last_words(&log).as_deref(),
            Some("BUG: kernel NULL pointer dereference, address: 0000000000000008 | RIP: 0010:blk_mq_start_request+0x12/0x40 | Kernel panic - not syncing: Fatal exception in interrupt")
        );
        std::fs::write(&log, "[    1.0] Linux version 6.12\n[    2.0] reboot: Power down\n").unwrap();
        assert_eq!(console_last_words(&log).as_deref(), Some("reboot: Power down"));
    }

    #[test]
    fn a_guest_that_crashed_is_told_apart_from_one_whose_run_failed() {
        assert!(why_no_result(GUEST_CRASHED).contains("kernel panicked"));
        assert!(why_no_result(1).contains("the run failed inside"));
    }

    #[test]
    fn a_word_with_quotes_and_spaces_is_one_shell_word() {
        assert_eq!(quote(b"it's a b"), r"'it'\''s a b'");
    }
}
