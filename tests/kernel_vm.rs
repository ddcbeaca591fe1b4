//! Issue 26: the same experiment on another kernel. `--kernel K` boots K under QEMU with
//! virtme-ng, runs the same command inside on a disk the host serves, and records the result
//! in the host's store with the kernel it ran on. Asserted: a short run comes back into the
//! store with its kernel, accelerator, CPUs and memory; a kernel that is not there is a
//! one-line refusal that makes nothing; a guest killed mid-run, a guest past its time limit
//! and a Ctrl-C each leave nothing behind (no QEMU, no scratch directory, no state file),
//! and a SIGKILL of fsynclab leaves no QEMU and nothing `fsynclab cleanup` does not undo;
//! a guest whose kernel panics is said to have, with the console's panic line;
//! a matrix's `kernel=host,K` axis records a run of each cell on its kernel, and a kernel
//! axis naming a kernel that is not there is refused before any cell runs; the BPF tracer
//! in a guest names a wakeup an interrupt made as the interrupt's; a run that cuts its
//! disk's power (`run powercut`, `exec --cut`) does so in the guest, on a disk the guest
//! emulates, and the guest's kernel recovers the filesystem; `fsync-errors` fails disks
//! the guest emulates and records what the guest's kernel returned; every line the command
//! writes to stderr arrives whole while the guest's kernel prints; a command longer than the
//! guest kernel's command line runs as written; `reproduce --kernel A,B` measures each
//! finding on both kernels (tests/kernel_vm/reproduce.rs).
//! Each boot takes tens of seconds under TCG, so the tests that boot keep their commands
//! short and boot two guests at a time (`GuestRun`, in tests/common/guest.rs), each a run of
//! its own beside the other, as two users' runs may be.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;
#[path = "kernel_vm/host_paths.rs"]
mod host_paths;
#[path = "kernel_vm/reproduce.rs"]
mod reproduce;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use common::guest::{debian_kernel, guests_under, vm_ready, GuestRun, VM};
use common::Need::{Fuse, Root, That, Tool};
use common::{fsynclab, leftovers, send, wait_at_most, ScratchRun, StderrLines, TINY};
use host_paths::{
    a_guest_runs_fsynclab_from_var_tmp_with_spaces_and_commas_in_every_path,
    a_host_disk_that_fills_under_a_guest_is_its_io_error_and_is_said,
    a_read_only_output_directory_is_refused_before_the_guest_boots,
    exec_in_a_guest_writes_output_to_stdout_and_finds_a_script_under_var_tmp,
};
use reproduce::{
    a_kernel_that_is_not_there_is_refused_before_anything_is_made,
    each_finding_is_measured_on_both_kernels_side_by_side_and_stored_with_its_kernel,
};

common::tests! {
    // First: its three guests boot one after another, the longest of these tests (184.5 s
    // in kernel_vm's run of 30 Nov, BENCHMARKS.md), so the others share the second slot
    // meanwhile.
    each_finding_is_measured_on_both_kernels_side_by_side_and_stored_with_its_kernel:
        [Root, Fuse, Tool("mkfs.ext3"), That(VM, vm_ready)],
    a_kernel_that_is_not_there_is_refused_before_anything_is_made,
    a_kernel_that_is_not_there_is_refused_in_one_line_and_makes_nothing,
    a_read_only_output_directory_is_refused_before_the_guest_boots: [Root, That(VM, vm_ready)],
    a_guest_runs_fsynclab_from_var_tmp_with_spaces_and_commas_in_every_path:
        [Root, Fuse, Tool("mkfs.ext4"), That(VM, vm_ready)],
    exec_in_a_guest_writes_output_to_stdout_and_finds_a_script_under_var_tmp:
        [Root, Fuse, Tool("mkfs.ext4"), Tool("python3"), That(VM, vm_ready)],
    a_host_disk_that_fills_under_a_guest_is_its_io_error_and_is_said:
        [Root, Fuse, Tool("mkfs.ext4"), That(VM, vm_ready)],
    a_short_run_in_a_guest_comes_back_into_the_store_with_its_kernel:
        [Root, Fuse, Tool("mkfs.ext4"), That(VM, vm_ready)],
    a_failed_command_in_a_guest_misses_its_expectation_with_its_exit_status:
        [Root, Fuse, Tool("mkfs.ext4"), That(VM, vm_ready)],
    a_guest_killed_mid_run_leaves_nothing: [Root, Fuse, Tool("mkfs.ext4"), That(VM, vm_ready)],
    a_guest_whose_kernel_panics_says_its_panic_line_and_leaves_nothing:
        [Root, Fuse, Tool("mkfs.ext4"), That(VM, vm_ready)],
    a_guest_past_its_time_limit_is_ended_and_leaves_nothing:
        [Root, Fuse, Tool("mkfs.ext4"), That(VM, vm_ready)],
    ctrl_c_stops_the_guest_and_leaves_nothing: [Root, Fuse, Tool("mkfs.ext4"), That(VM, vm_ready)],
    sigkill_of_fsynclab_ends_the_guest_and_cleanup_leaves_nothing:
        [Root, Fuse, Tool("mkfs.ext4"), That(VM, vm_ready)],
    a_kernel_axis_with_a_kernel_that_is_not_there_is_refused_before_any_cell,
    a_kernel_axis_runs_each_cell_on_its_kernel_and_the_table_shows_both:
        [Root, Fuse, Tool("mkfs.ext4"), That(VM, vm_ready)],
    a_kernel_axis_guest_past_its_time_limit_stops_the_matrix_and_leaves_nothing:
        [Root, Fuse, Tool("mkfs.ext4"), That(VM, vm_ready)],
    the_bpf_tracer_in_a_guest_names_an_interrupts_wakeup_not_the_task_it_interrupted:
        [Root, Fuse, Tool("mkfs.ext4"), Tool("python3"), That(VM, vm_ready)],
    a_watch_in_a_guest_hooks_the_sync_calls_by_function_and_splits_them_as_at_raw_syscalls:
        [Root, Fuse, Tool("mkfs.ext4"), Tool("python3"), That(VM, vm_ready)],
    a_guest_survives_tracepoints_turned_on_and_off_while_its_disk_writes:
        [Root, Fuse, Tool("mkfs.ext4"), That(VM, vm_ready)],
    every_stderr_line_of_a_guests_command_arrives_whole_while_its_kernel_prints:
        [Root, Fuse, Tool("mkfs.ext4"), That(VM, vm_ready)],
    a_guests_command_longer_than_the_kernels_command_line_runs_as_written:
        [Root, Fuse, Tool("mkfs.ext4"), That(VM, vm_ready)],
    a_power_cut_in_a_guest_cuts_the_disk_the_host_emulates_and_its_kernel_recovers:
        [Root, Fuse, Tool("mkfs.ext4"), Tool("e2fsck"), That(VM, vm_ready)],
    exec_cut_in_a_guest_stops_the_command_and_checks_what_the_guests_kernel_recovered:
        [Root, Fuse, Tool("mkfs.ext4"), Tool("e2fsck"), That(VM, vm_ready)],
    fsync_errors_in_a_guest_fails_a_disk_the_guest_emulates_and_says_what_its_kernel_returned:
        [Root, Fuse, Tool("mkfs.ext4"), That(VM, vm_ready)],
}

/// Run 1 of the results store `store`, as `show -f json` prints it, checked against the
/// result schema.
fn stored_run_1(store: &Path) -> Value {
    let shown = fsynclab()
        .args(["show", "1", "-f", "json", "--store"])
        .arg(store)
        .output()
        .unwrap();
    let result: Value = serde_json::from_slice(&shown.stdout).unwrap();
    common::assert_matches_schema(&result);
    result
}

/// The runs `store` holds, as `runs --format json` lists them (newest first).
pub(crate) fn runs_listed(store: &Path) -> Vec<Value> {
    let listed = fsynclab()
        .args(["runs", "--format", "json", "--store"])
        .arg(store)
        .output()
        .unwrap();
    serde_json::from_slice(&listed.stdout).unwrap()
}

/// A kernel release with no /boot/vmlinuz, and a bzImage path that is not there: exit 2, one
/// line saying what to do, nothing made.
fn a_kernel_that_is_not_there_is_refused_in_one_line_and_makes_nothing() {
    let backing = common::backing();
    for (kernel, says) in [
        ("0.0.0-none", "--kernel 0.0.0-none: no /boot/vmlinuz-0.0.0-none"),
        (
            "/nonexistent/bzImage",
            "--kernel /nonexistent/bzImage: no such kernel image",
        ),
    ] {
        let out = ScratchRun::run("overwrite-fsync")
            .kernel(kernel)
            .fs("ext4")
            .backing(backing.path())
            .command()
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
    }
    // Another kernel's run needs a filesystem of that kernel's own: --dir is refused.
    let out = ScratchRun::run("overwrite-fsync")
        .kernel("0.0.0-none")
        .arg("--dir")
        .arg(backing.path())
        .args(TINY)
        .command()
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    // `host` is the host's own kernel: an ordinary run, no VM.
    let out = ScratchRun::run("overwrite-fsync")
        .kernel("host")
        .arg("--dir")
        .arg(backing.path())
        .args(TINY)
        .command()
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(String::from_utf8(out.stdout).unwrap().contains("fsync"));
    assert_eq!(leftovers(backing.path()), Vec::<String>::new());
}

/// A 1-second overwrite-fsync in a guest booting the Debian 6.1 kernel: stored in the host's
/// store, which `runs` and `show` read with the kernel, the accelerator, CPUs and memory,
/// and the host's name. Without `--kernel-timeout` the guest's limit is derived from the
/// run's length: 5 minutes plus 4 times 1 s (it was 30 minutes for any run before).
fn a_short_run_in_a_guest_comes_back_into_the_store_with_its_kernel() {
    let guest = GuestRun::new();
    let kernel = debian_kernel().unwrap();
    let store = guest.store();
    let started = Instant::now();
    let tail = [&["--no-explain", "--store", store.to_str().unwrap()], TINY].concat();
    let (code, err) = guest.run_within(ScratchRun::run("overwrite-fsync"), &tail);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("stored as run 1 in"), "{err}");
    assert!(err.contains("the guest is ended after 304s"), "{err}");
    eprintln!("the guest's run took {:?}", started.elapsed());

    let runs = runs_listed(&store);
    let run = &runs[0];
    assert!(
        run["kernel"].as_str().unwrap().starts_with(&format!("{kernel} vm/")),
        "{run}"
    );
    let table = fsynclab().args(["runs", "--store"]).arg(&store).output().unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(table.lines().next().unwrap().contains("kernel"), "{table}");
    assert!(table.contains(&kernel), "{table}");

    let result = stored_run_1(&store);
    let env = &result["environment"];
    assert_eq!(env["kernel"], kernel.as_str());
    let vm = &env["vm"];
    assert_eq!(vm["release"], kernel.as_str());
    assert!(
        vm["version"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Linux version {kernel}")),
        "{vm}"
    );
    assert!(["kvm", "tcg"].contains(&vm["accelerator"].as_str().unwrap()), "{vm}");
    assert!(
        vm["cpus"].as_u64().unwrap() >= 1 && vm["memory_bytes"].as_u64().unwrap() > 0,
        "{vm}"
    );
    assert_eq!(vm["disk"], "hdd-7200");
    assert_eq!(env["device_profile"]["name"], "hdd-7200");
    assert_eq!(
        env["host"]["name"],
        fsynclab::environment::this_host().name.as_str(),
        "a guest's run is the host's, by name (not virtme-ng's hostname)"
    );
    assert!(result["ops"]["fsync"]["count"].as_u64().unwrap() > 0, "{result}");
    let text = fsynclab().args(["show", "1", "--store"]).arg(&store).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains(&format!("Linux {kernel} in a VM (")), "{text}");

    guest.assert_nothing_left();
}

/// Issue 26 item 5: `exec --kernel K --explain --expect` of a command that fsyncs and then
/// exits 3 is judged on the host as exec judges it: the expectation's line with its figure
/// from the guest's traced calls, then exit 1 because the command failed, saying so (not
/// that calls failed: none did).
fn a_failed_command_in_a_guest_misses_its_expectation_with_its_exit_status() {
    let guest = GuestRun::new();
    let script = "for i in 1 2 3; do dd if=/dev/zero of=f bs=4k count=1 conv=fsync 2>/dev/null; done; exit 3";
    let tail = [
        "--explain",
        "--no-store",
        "--expect",
        "fsync.p99<1h",
        "--",
        "sh",
        "-c",
        script,
    ];
    let (code, err) = guest.run(ScratchRun::exec(), &tail);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("expect fsync.p99<1h: measured ") && l.ends_with(", met")),
        "{err}"
    );
    assert!(err.contains("the command exited with status 3"), "{err}");
    assert!(!err.contains("calls failed"), "{err}");
    guest.assert_nothing_left();
}

/// QEMU killed while the command runs inside: fsynclab says the guest ended, undoes the
/// disk it served, and exits non-zero.
fn a_guest_killed_mid_run_leaves_nothing() {
    let guest = GuestRun::new();
    let (mut child, mut lines) = guest.start("5m", "echo started >&2; sleep 600");
    lines.wait_for("started", &mut child, Duration::from_secs(300));
    let guests = guests_under(guest.backing.path());
    assert_eq!(guests.len(), 1, "one QEMU: {guests:?}");
    // SAFETY: kill has no memory preconditions; the pid is a QEMU this test's run started.
    assert_eq!(unsafe { libc::kill(guests[0] as i32, libc::SIGKILL) }, 0);
    let status = wait_at_most(&mut child, Duration::from_secs(60));
    let err = lines.all();
    assert!(!status.success(), "{err}");
    // Said for what it is (issue 64), not "its kernel panicked or QEMU failed" with an
    // unrelated console line.
    assert!(
        err.contains("QEMU was killed by signal 9 (SIGKILL) from outside fsynclab"),
        "{err}"
    );
    assert!(!err.contains("kernel panicked"), "{err}");
    guest.assert_nothing_left();
}

/// The guest's kernel crashing while the command runs inside (sysrq's crash, as root in the
/// guest): fsynclab says the guest ended without its command's status and quotes the
/// console's panic line, exits non-zero, and leaves nothing.
fn a_guest_whose_kernel_panics_says_its_panic_line_and_leaves_nothing() {
    let guest = GuestRun::new();
    // Started in /tmp, which the guest then shares read-write with the host: the guest's
    // mount point, never undone when its kernel dies, must not be there.
    let mut cmd = guest.exec(
        "5m",
        "echo \"mounted at $FSYNCLAB_DIR\" >&2; echo c > /proc/sysrq-trigger",
    );
    let mut child = cmd.current_dir("/tmp").spawn().unwrap();
    let lines = StderrLines::of(&mut child);
    let status = wait_at_most(&mut child, Duration::from_secs(360));
    let err = lines.all();
    assert!(!status.success(), "{err}");
    assert!(
        err.contains("the console's last words: Kernel panic - not syncing: sysrq triggered crash"),
        "{err}"
    );
    let mounted = err
        .lines()
        .find_map(|l| l.trim().strip_prefix("mounted at "))
        .unwrap_or_else(|| panic!("the guest's command did not run: {err}"));
    let scratch_dir = Path::new(mounted).parent().unwrap();
    assert!(
        scratch_dir.starts_with("/") && scratch_dir.components().count() > 1,
        "{mounted}"
    );
    assert!(
        !scratch_dir.exists(),
        "the guest's mount point is left on the host: {mounted}"
    );
    guest.assert_nothing_left();
}

/// A guest that does not finish within --kernel-timeout (here it is still booting) is
/// ended: exit 1, one line saying so, nothing left.
fn a_guest_past_its_time_limit_is_ended_and_leaves_nothing() {
    let guest = GuestRun::new();
    let (status, err) = guest.exec_to_end("3s", "sleep 600", Duration::from_secs(60));
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("had not finished after 3s (--kernel-timeout); it was ended"),
        "{err}"
    );
    guest.assert_nothing_left();
}

/// Issue 26: turning a tracepoint on or off rewrites the guest kernel's code while its other
/// CPU may run it, as a tracer does at its start and end. Under multi-threaded TCG (QEMU's
/// default) flipping the block tracepoints during the served disk's writes hung Debian's
/// 6.1 guests (3 of 3) and crashed 6.12's (5 of 5, "Oops: int3"); fsynclab runs TCG on one
/// host thread, and the guest lives through 300 flips.
fn a_guest_survives_tracepoints_turned_on_and_off_while_its_disk_writes() {
    let guest = GuestRun::new();
    let script = r#"T=/sys/kernel/tracing; [ -d $T/events ] || mount -t tracefs none $T || exit 3
E=$T/events/block
( while :; do dd if=/dev/zero of="$FSYNCLAB_DIR/f" bs=64k count=64 oflag=direct conv=fsync 2>/dev/null; done ) &
i=0
while [ $i -lt 300 ]; do
  for v in 1 0; do echo $v > $E/block_rq_issue/enable; echo $v > $E/block_rq_complete/enable; done
  i=$((i+1))
done
kill $!; wait
echo "flipped $i times" >&2"#;
    let (status, err) = guest.exec_to_end("3m", script, Duration::from_secs(240));
    assert!(
        status.success() && err.contains("flipped 300 times"),
        "{status:?}: {err}"
    );
    guest.assert_nothing_left();
}

/// The guest's kernel printing to its console while the command writes to stderr (200 kernel
/// lines through /dev/kmsg, each followed by a line of the command's): every one of the
/// command's lines reaches fsynclab's stderr whole and in order, and none of the kernel's
/// does. The console once shared QEMU's stderr with the command's, byte by byte, and a line
/// written while the kernel printed could run into one of its lines and be lost with them.
fn every_stderr_line_of_a_guests_command_arrives_whole_while_its_kernel_prints() {
    let guest = GuestRun::new();
    // /dev/kmsg lets 10 lines through every 5 s unless printk_devkmsg is on.
    let script = r#"echo on > /proc/sys/kernel/printk_devkmsg || exit 3
i=1
while [ $i -le 200 ]; do
  echo "<3>fsynclab kernel burst $i: a long line from the guest's kernel, printed on its console while the command writes its own" > /dev/kmsg
  echo "the command's line $i of 200" >&2
  i=$((i+1))
done"#;
    let (status, err) = guest.exec_to_end("5m", script, Duration::from_secs(360));
    assert!(status.success(), "{status:?}: {err}");
    let ours: Vec<&str> = err.lines().filter(|l| l.contains("the command's line")).collect();
    let expected: Vec<String> = (1..=200).map(|i| format!("the command's line {i} of 200")).collect();
    assert_eq!(ours, expected, "{err}");
    assert!(!err.contains("fsynclab kernel burst"), "{err}");
    guest.assert_nothing_left();
}

/// A command of 4,200 bytes, single quotes among them: more than the 2048 bytes of the
/// guest kernel's command line, where virtme-ng carries `--exec`'s script. The guest runs it
/// as written. When the command went there, a line past 2048 bytes was cut, virtme-ng's
/// `init=` with it, and the guest hung at boot until its time limit.
fn a_guests_command_longer_than_the_kernels_command_line_runs_as_written() {
    let guest = GuestRun::new();
    let text = "the guest's command, longer than its kernel's command line; ".repeat(70);
    assert!(text.len() > 4000, "{}", text.len());
    let script = format!("cat >&2 <<'END'\n{text}\nEND");
    let (status, err) = guest.exec_to_end("5m", &script, Duration::from_secs(360));
    assert!(status.success(), "{status:?}: {err}");
    assert!(err.lines().any(|l| l == text), "{err}");
    guest.assert_nothing_left();
}

/// Ctrl-C (SIGINT to fsynclab) while the command runs inside: the VM is ended at once, the
/// disk undone, exit 130.
fn ctrl_c_stops_the_guest_and_leaves_nothing() {
    let guest = GuestRun::new();
    let (mut child, mut lines) = guest.start("5m", "echo started >&2; sleep 600");
    lines.wait_for("started", &mut child, Duration::from_secs(300));
    send(&child, libc::SIGINT);
    let status = wait_at_most(&mut child, Duration::from_secs(60));
    let err = lines.all();
    assert_eq!(status.code(), Some(130), "{err}");
    guest.assert_nothing_left();
}

/// SIGKILL to fsynclab while the command runs inside: QEMU goes with it (the guest runs in a
/// PID namespace whose first process dies with fsynclab), and `fsynclab cleanup` undoes the
/// disk the host served.
fn sigkill_of_fsynclab_ends_the_guest_and_cleanup_leaves_nothing() {
    let guest = GuestRun::new();
    let (mut child, mut lines) = guest.start("5m", "echo started >&2; sleep 600");
    lines.wait_for("started", &mut child, Duration::from_secs(300));
    send(&child, libc::SIGKILL);
    wait_at_most(&mut child, Duration::from_secs(10));
    guest.state.cleanup();
    guest.assert_nothing_left();
}

/// `matrix --axis kernel=host,0.0.0-none`: one line, exit status 2, and no cell run (the
/// store has no run, and no matrix was made in it).
fn a_kernel_axis_with_a_kernel_that_is_not_there_is_refused_before_any_cell() {
    let store_dir = common::backing();
    let store = store_dir.path().join("store.sqlite");
    let out = fsynclab()
        .args([
            "matrix",
            "overwrite-fsync",
            "--axis",
            "kernel=host,0.0.0-none",
            "--repeat",
            "1",
        ])
        .args(TINY)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("--axis kernel=0.0.0-none: no /boot/vmlinuz-0.0.0-none"),
        "{err}"
    );
    assert!(!err.contains("run 1"), "no cell ran: {err}");
}

/// Issue 26: `matrix --axis kernel=host,K` with one tiny cell each on a scratch ext4 over
/// hdd-7200: both runs recorded at their places, the host's without a VM and K's with the
/// guest's release in `environment.vm`; the table has a column for each kernel; the matrix
/// says the host's cells and the guest's differ by how they were booted, and so does compare.
fn a_kernel_axis_runs_each_cell_on_its_kernel_and_the_table_shows_both() {
    let guest = GuestRun::new();
    let kernel = debian_kernel().unwrap();
    let store = guest.store();
    let started = Instant::now();
    let out = guest
        .fsynclab()
        .args(["matrix", "overwrite-fsync", "--repeat", "1", "--device", "hdd-7200"])
        .arg("--axis")
        .arg(format!("kernel=host,{kernel}"))
        .arg("--backing")
        .arg(guest.backing.path())
        .args(TINY)
        .arg("--store")
        .arg(&store)
        .timeout(Duration::from_secs(360))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    eprintln!("the matrix took {:?}", started.elapsed());
    assert!(
        err.contains("kernel=host runs on this machine, the other kernels in a VM under "),
        "{err}"
    );
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("kernel=host"), "{table}");
    assert!(table.contains(&format!("kernel={kernel}")), "{table}");

    let runs = runs_listed(&store);
    assert_eq!(runs.len(), 2, "{runs:?}");
    let cell_of = |r: &Value| r["matrix"]["cell"][0][1].as_str().unwrap().to_string();
    let host = runs.iter().find(|r| cell_of(r) == "host").unwrap();
    let in_vm = runs.iter().find(|r| cell_of(r) == kernel).unwrap();
    assert!(host["vm"].is_null(), "{host}");
    assert_eq!(in_vm["vm"]["release"], kernel.as_str(), "{in_vm}");
    assert!(
        in_vm["kernel"].as_str().unwrap().starts_with(&format!("{kernel} vm/")),
        "{in_vm}"
    );
    assert!(host["calls"].as_u64().unwrap() > 0 && in_vm["calls"].as_u64().unwrap() > 0);
    let compared = fsynclab()
        .args(["compare", "m1:kernel=host", &format!("m1:kernel={kernel}"), "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let compared = String::from_utf8_lossy(&compared.stdout);
    assert!(
        compared.contains("caution: A ran on the host, B ran in a VM under "),
        "{compared}"
    );
    guest.assert_nothing_left();
}

/// A kernel axis's guest past `--kernel-timeout`: ended, the matrix stopped with exit 1
/// saying so, no run recorded, nothing left.
fn a_kernel_axis_guest_past_its_time_limit_stops_the_matrix_and_leaves_nothing() {
    let guest = GuestRun::new();
    let out = guest
        .fsynclab()
        .args(["matrix", "overwrite-fsync", "--repeat", "1", "--kernel-timeout", "2s"])
        .arg("--axis")
        .arg(format!("kernel={}", debian_kernel().unwrap()))
        .arg("--backing")
        .arg(guest.backing.path())
        .args(TINY)
        .arg("--store")
        .arg(guest.store())
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("had not finished after 2s; it was ended"), "{err}");
    assert!(!err.contains(": run 1"), "no run recorded: {err}");
    guest.assert_nothing_left();
}

/// Issue 25: a sleep a device's completion ends is woken in an interrupt, on whatever CPU
/// took it, in the context of whatever task ran there. Beside two CPU burners (`sh` loops,
/// which wake nothing themselves), an overwrite-in-place fdatasync loop in a guest booting
/// the Debian kernel (whose /proc/kallsyms lists the per-CPU preemption count, which the
/// host's may not): the BPF tracer names no burner as a waker; the interrupts' wakeups are
/// told (before the change this test failed with "a burner named as a waker: [sh 262 x6]").
fn the_bpf_tracer_in_a_guest_names_an_interrupts_wakeup_not_the_task_it_interrupted() {
    let guest = GuestRun::new();
    let store = guest.store();
    let script = common::bpf::BESIDE_BURNERS;
    // The slowest 20% of the 300 fdatasyncs, not the default 1%: beside the burners the
    // slowest few are the ones preempted longest, and the 3 or 4 calls of 1% may hold no
    // flush wait (a CI run's four slowest were 27-86 ms, mostly waiting for a CPU).
    let tail = [
        "--explain",
        "--tracer",
        "bpf",
        "--explain-slowest",
        "20%",
        "--store",
        store.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        script,
    ];
    let (code, err) = guest.run(ScratchRun::exec(), &tail);
    assert_eq!(code, Some(0), "{err}");
    guest.assert_nothing_left();

    let result = stored_run_1(&store);
    let explain = &result["explain"];
    assert_eq!(explain["bpf"]["interrupt_wakers"], true, "{explain:#}");
    assert_eq!(explain["bpf"]["interrupt_wakers_by"], "preemption count");
    // Debian's 6.1 allows fentry: the sync calls by their functions (issue 61).
    assert_eq!(explain["bpf"]["hooks"]["sync_calls"], "functions", "{explain:#}");
    let calls = explain["calls"].as_array().unwrap();
    assert!(!calls.is_empty(), "{explain:#}");
    let named = common::bpf::wakers_named(explain);
    assert!(
        !named.iter().any(|w| w.starts_with("sh ")),
        "a burner named as a waker: {named:?}\n{explain:#}"
    );
    // The cache flushes fdatasync waits for end in the disk's interrupt.
    let flush_waits = calls
        .iter()
        .filter(|c| {
            c["parts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["cause"] == "device_flush")
        })
        .count();
    eprintln!(
        "{flush_waits} of {} explained calls waited for a cache flush",
        calls.len()
    );
    assert!(flush_waits > 0, "no call waited for a cache flush: {explain:#}");
}

/// In one guest, a watch with the sync calls hooked by their functions and one at the
/// raw_syscalls trace points (FSYNCLAB_BPF_HOOKS), each of the same 12 fsyncs and 4
/// O_DSYNC writes, to files made anew for each (a write that allocates its block waits for
/// a journal commit, one over a block already written only for a cache flush). Each watch is stopped by SIGTERM: a background job of a shell without job
/// control starts with SIGINT ignored, and fsynclab leaves an ignored signal alone
/// (src/signals.rs).
const WATCH_BOTH_WAYS: &str = r#"f=/run/fsynclab-bin/fsynclab
for hooks in functions raw_syscalls; do
  rm -f f g
  FSYNCLAB_BPF_HOOKS=$hooks "$f" watch --comm python3 --threshold 0 --no-store >out 2>err &
  w=$!
  until grep -q '^hooks:' err; do kill -0 $w || { cat err >&2; exit 1; }; sleep 0.2; done
  python3 -c "import os
fd = os.open('f', os.O_WRONLY | os.O_CREAT)
for _ in range(12):
    os.pwrite(fd, b'x' * 4096, 0); os.fsync(fd)
g = os.open('g', os.O_WRONLY | os.O_CREAT | os.O_DSYNC)
for _ in range(4):
    os.write(g, b'y' * 4096)"
  kill -TERM $w; wait $w || exit 1
  echo "== $hooks" >&2; cat err out >&2
done"#;

/// Issue 61: in Debian's 6.1, which allows fentry, a watch hooks the sync calls by their
/// own functions (and the durable writes by ext4's write function), says so, and prints
/// the same calls split into parts that add up to each, of the same kinds of part, as a
/// watch made to take the raw_syscalls trace points in the same guest.
fn a_watch_in_a_guest_hooks_the_sync_calls_by_function_and_splits_them_as_at_raw_syscalls() {
    let guest = GuestRun::new();
    let (status, err) = guest.exec_to_end("6m", WATCH_BOTH_WAYS, Duration::from_secs(400));
    assert!(status.success(), "{err}");
    guest.assert_nothing_left();
    let section = |hooks: &str| -> Vec<String> {
        let start = err
            .find(&format!("== {hooks}"))
            .unwrap_or_else(|| panic!("no {hooks} watch:\n{err}"));
        let lines: Vec<String> = err[start..]
            .lines()
            .skip(1)
            .take_while(|l| !l.starts_with("== "))
            .map(String::from)
            .collect();
        lines
    };
    let mut kinds_of_parts = Vec::new();
    for (hooks, says) in [
        ("functions", "hooks: the sync calls by fentry/fexit on __x64_sys_fsync"),
        (
            "raw_syscalls",
            "hooks: the sync calls at the trace points sys_enter, sys_exit",
        ),
    ] {
        let lines = section(hooks);
        assert!(
            lines.iter().any(|l| l.starts_with(says)),
            "{hooks}:\n{}",
            lines.join("\n")
        );
        if hooks == "functions" {
            assert!(lines
                .iter()
                .any(|l| l.starts_with(says) && l.contains("ext4_file_write_iter")));
        }
        let calls: Vec<&String> = lines
            .iter()
            .filter(|l| l.contains(" fsync(fd ") || l.contains(" write_odsync(fd "))
            .collect();
        assert_eq!(
            calls.iter().filter(|l| l.contains(" fsync(fd ")).count(),
            12,
            "{hooks}:\n{}",
            lines.join("\n")
        );
        assert_eq!(
            calls.iter().filter(|l| l.contains(" write_odsync(fd ")).count(),
            4,
            "{hooks}:\n{}",
            lines.join("\n")
        );
        let mut kinds: Vec<&str> = [
            "on CPU",
            "waiting for a journal commit",
            "device cache flush",
            "waiting for a CPU",
        ]
        .into_iter()
        .filter(|k| calls.iter().any(|c| c.contains(k)))
        .collect();
        kinds.sort_unstable();
        assert!(kinds.contains(&"on CPU"), "{hooks}: {calls:?}");
        kinds_of_parts.push(kinds);
    }
    eprintln!("kinds of parts: {kinds_of_parts:?}");
    let (functions, raw) = (&kinds_of_parts[0], &kinds_of_parts[1]);
    assert!(
        functions.contains(&"waiting for a journal commit") || functions.contains(&"device cache flush"),
        "the functions path split no fsync into the journal's or the disk's parts: {functions:?}"
    );
    // The journal's and the disk's parts are the same on both paths (waiting for a CPU
    // comes and goes with the guest's load, so it is not compared).
    for part in ["waiting for a journal commit", "device cache flush"] {
        assert_eq!(
            functions.contains(&part),
            raw.contains(&part),
            "{part}: functions {functions:?}, raw_syscalls {raw:?}"
        );
    }
}

/// Issue 26: a `powercut` run in a guest booting the Debian 6.1 kernel cuts the power of the
/// disk the host emulates and serves it (through the control port), so the disk keeps the
/// host's timing. In each of two cycles the guest's ext4 replays its journal after the cut
/// and its check is clean, with no acknowledged record lost; the second cycle's filesystem
/// is the one the host made afresh on the media. The result, stored on the host, says the
/// disk was not emulated inside.
fn a_power_cut_in_a_guest_cuts_the_disk_the_host_emulates_and_its_kernel_recovers() {
    let command = ScratchRun::run("powercut")
        .size("128M")
        .set("cuts", "2")
        .set("max_size", "8M")
        .set("cut_after", "1s");
    let (result, shown, kernel_label) = stored_from_guest(command);
    let vm = &result["environment"]["vm"];
    assert_eq!(vm["release"], debian_kernel().unwrap().as_str());
    // Written only when true.
    assert_eq!(vm.get("disk_in_guest"), None, "{vm}");
    let cycles = result["details"]["powercut"]["cycles"].as_array().unwrap();
    assert_eq!(cycles.len(), 2, "{cycles:#?}");
    for cycle in cycles {
        assert!(cycle["cut"].is_object(), "the drive's cut is recorded: {cycle}");
        assert_eq!(cycle["recovery"]["mounted"], true, "{cycle}");
        assert_eq!(cycle["check"]["clean"], true, "{cycle}");
        let verdict = &cycle["verdict"];
        assert!(verdict["acked"].as_u64().unwrap() > 0, "{verdict}");
        assert_eq!(verdict["acked_lost"], 0, "{verdict}");
    }
    assert!(cycles[1]["fresh_ms"].as_f64().is_some(), "{:#}", cycles[1]);
    assert!(!shown.contains("its disk emulated inside"), "{shown}");
    assert!(!kernel_label.ends_with("+guest-disk"), "{kernel_label}");
}

/// `command` (a run that drives its disk) in a guest booting the Debian 6.1 kernel, as
/// [`in_guest`] runs it, recorded in a store of its own: it succeeds and leaves nothing;
/// its stored result, `show`'s text of it, and its kernel as `runs` labels it.
fn stored_from_guest(command: ScratchRun) -> (Value, String, String) {
    let guest = GuestRun::new();
    let store = guest.store();
    let tail = ["--no-explain", "--store", store.to_str().unwrap()];
    let (code, err) = guest.run(command, &tail);
    assert_eq!(code, Some(0), "{err}");
    guest.assert_nothing_left();
    let shown = fsynclab().args(["show", "1", "--store"]).arg(&store).output().unwrap();
    let kernel_label = runs_listed(&store)[0]["kernel"].as_str().unwrap().to_string();
    (
        stored_run_1(&store),
        String::from_utf8(shown.stdout).unwrap(),
        kernel_label,
    )
}

/// `exec --cut --kernel K --check`: the power of the disk the host emulates is cut while
/// the command appends and syncs, the command is stopped, the guest's ext4 recovers, and the
/// check, run on the recovered filesystem in the guest, decides the exit status (a check
/// that finds the log missing would exit 1).
fn exec_cut_in_a_guest_stops_the_command_and_checks_what_the_guests_kernel_recovered() {
    let guest = GuestRun::new();
    let command =
        ScratchRun::exec()
            .size("64M")
            .args(["--cut", "after=1s", "--check", "test -s log && test -d lost+found"]);
    let script = "while :; do echo line >> log; sync log; done";
    let (code, err) = guest.run(command, &["--", "sh", "-c", script]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("the power is cut at"), "{err}");
    assert!(err.contains("the filesystem mounted again after the cut"), "{err}");
    assert!(err.contains("finds the filesystem clean"), "{err}");

    guest.assert_nothing_left();
}

/// `run fsync-errors --kernel K --set fs=ext4`: its row's filesystem is made on a failing
/// disk the guest emulates (not the disk the host serves, which it cannot fail), and the
/// row is measured: the first fsync after the failed writeback returned EIO, with the
/// guest kernel's own I/O error lines.
fn fsync_errors_in_a_guest_fails_a_disk_the_guest_emulates_and_says_what_its_kernel_returned() {
    let (result, ..) = stored_from_guest(ScratchRun::run("fsync-errors").size("128M").set("fs", "ext4"));
    assert_eq!(result["environment"]["vm"]["disk_in_guest"], true);
    let row = &result["details"]["fsync-errors"]["rows"][0];
    assert_eq!(row["outcome"], "measured", "{row}");
    assert_eq!(row["first_fsync"]["error"], "EIO", "{row}");
    let kernel: Vec<&str> = row["kernel"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(kernel.iter().any(|l| l.contains("I/O error")), "{kernel:?}");
}
