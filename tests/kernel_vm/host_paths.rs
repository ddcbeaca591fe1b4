//! What a guest sees of the host, whatever the host's paths are (issue 64): fsynclab run
//! from a copy under /var/tmp, which the guest hides behind its own memory; a working
//! directory, `--backing` and `--output` directory whose names hold a space and a comma;
//! `--output /dev/stdout`; a script under /var/tmp named on exec's command line; a host disk
//! that fills behind the guest; a read-only `--output` directory refused before the boot.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::runs_listed;
use crate::common::guest::{debian_kernel, GuestRun};
use crate::common::{self, bin, fsynclab, leftovers, ScratchRun, TINY};

/// A copy of the binary under test in a directory of /var/tmp whose name holds a space and
/// a comma, removed with the returned directory.
fn binary_under_var_tmp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("fsynclab bin,")
        .tempdir_in("/var/tmp")
        .unwrap();
    let copy = dir.path().join("fsynclab");
    std::fs::copy(bin(), &copy).unwrap();
    (dir, copy)
}

/// Issue 64: the guest runs the same binary wherever it lives (a clean clone built under
/// /var/tmp failed every guest with `env: '/var/tmp/.../fsynclab': No such file or
/// directory`, exit 127), and every host path works whatever it holds: the working
/// directory, `--backing` and `--output`'s directory, each named with a space and a comma
/// (virtme-ng printed its usage text, or "invalid --rwdir parameter"). The run comes back
/// into the store, its --output is written where it was asked, and nothing is left.
pub fn a_guest_runs_fsynclab_from_var_tmp_with_spaces_and_commas_in_every_path() {
    let guest = GuestRun::new();
    let (_bin_dir, binary) = binary_under_var_tmp();
    let root = guest.backing.path();
    let backing = root.join("back ing,1");
    let cwd = root.join("my runs,1");
    let out_dir = root.join("out put,1");
    for dir in [&backing, &cwd, &out_dir] {
        std::fs::create_dir(dir).unwrap();
    }
    let args = ScratchRun::run("overwrite-fsync")
        .kernel(debian_kernel().unwrap())
        .kernel_timeout("5m")
        .fs("ext4")
        .device("hdd-7200")
        .backing(&backing)
        .args(TINY)
        .arg("--output")
        .arg(out_dir.join("the run.json"))
        .arg("--store")
        .arg(guest.store())
        .into_args();
    // TMPDIR with a space and a comma too: what virtme-ng is given falls back to /tmp.
    let out = std::process::Command::new(&binary)
        .args(&args)
        .current_dir(&cwd)
        .env(guest.state.env().0, guest.state.env().1)
        .env("TMPDIR", &backing)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("the run.json")).unwrap()).unwrap();
    assert_eq!(written["scenario"], "overwrite-fsync", "{written}");
    let listed = runs_listed(&guest.store());
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(
        listed[0]["vm"]["release"],
        debian_kernel().unwrap().as_str(),
        "{listed:?}"
    );
    // Nothing else in the three directories: each is removed empty.
    std::fs::remove_file(out_dir.join("the run.json")).unwrap();
    for dir in [&backing, &cwd, &out_dir] {
        assert_eq!(leftovers(dir), Vec::<String>::new(), "left in {}", dir.display());
        std::fs::remove_dir(dir).unwrap();
    }
    guest.assert_nothing_left();
}

/// Issue 64: `--output /dev/stdout` under `--kernel` writes the record on stdout, as on the
/// host, whether stdout is a pipe or a file (it exited 255 with no output, QEMU saying "9p:
/// broken or compromised client": the host's /dev was shared with the guest); and a script
/// under /var/tmp that exec names is found inside (python's "No such file" before).
pub fn exec_in_a_guest_writes_output_to_stdout_and_finds_a_script_under_var_tmp() {
    let guest = GuestRun::new();
    let scripts = tempfile::Builder::new()
        .prefix("fsynclab-script-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let script = scripts.path().join("says.py");
    std::fs::write(&script, "import sys\nprint('the script ran', file=sys.stderr)\n").unwrap();
    let out = ScratchRun::exec()
        .kernel(debian_kernel().unwrap())
        .kernel_timeout("5m")
        .fs("ext4")
        .backing(guest.backing.path())
        .args(["--output", "/dev/stdout", "--", "python3"])
        .arg(&script)
        .command()
        .env(guest.state.env().0, guest.state.env().1)
        .env("TMPDIR", guest.backing.path())
        .timeout(Duration::from_secs(360))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("the script ran"), "{err}");
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(record["exit_status"], 0, "{record}");
    assert_eq!(record["command"][0], "python3", "{record}");
    // The same with fsynclab's stdout a regular file (`> run.json`): that shared the host's
    // /dev with the guest, which then exited 255 ("9p: broken or compromised client") or
    // replaced the host's /dev/stdout link with its record.
    let file = scripts.path().join("run.json");
    let out = std::process::Command::new(bin())
        .env("FSYNCLAB_STORE", "off")
        .env(guest.state.env().0, guest.state.env().1)
        .env("TMPDIR", guest.backing.path())
        .args(["exec", "--scratch", "ext4", "--kernel-timeout", "5m", "--kernel"])
        .arg(debian_kernel().unwrap())
        .arg("--backing")
        .arg(guest.backing.path())
        .args(["--output", "/dev/stdout", "--", "python3"])
        .arg(&script)
        .stdout(std::fs::File::create(&file).unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let record: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(record["exit_status"], 0, "{record}");
    let dev_stdout = std::fs::symlink_metadata("/dev/stdout").unwrap();
    assert!(
        dev_stdout.file_type().is_symlink(),
        "the host's /dev/stdout: {dev_stdout:?}"
    );
    guest.assert_nothing_left();
}

/// Issue 64: a host disk that fills under the guest's disk (a 200 MiB tmpfs as --backing,
/// filled by another writer while the guest writes) is an I/O error in the guest, as a disk
/// reports one, within seconds, and fsynclab says the host's disk is full; QEMU's default
/// paused the VM instead, and the guest hung silently until its time limit.
pub fn a_host_disk_that_fills_under_a_guest_is_its_io_error_and_is_said() {
    let guest = GuestRun::new();
    let backing = guest.backing.path().join("small");
    std::fs::create_dir(&backing).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=200m", "fsynclab-test-full"])
        .arg(&backing)
        .status()
        .unwrap();
    assert!(mounted.success());
    let unmount = Unmount(backing.clone());
    // The host's disk is filled while the guest boots (the fill takes well under a second,
    // the boot tens of seconds); then the guest writes past what is left.
    let filler = backing.join("filler");
    let script = "dd if=/dev/zero of=big bs=1M count=100 oflag=direct; echo dd=$? >&2";
    let started = Instant::now();
    let mut child = ScratchRun::exec()
        .kernel(debian_kernel().unwrap())
        .kernel_timeout("5m")
        .fs("ext4")
        .size("128M")
        .backing(&backing)
        .args(["--", "sh", "-c", script])
        .process();
    child
        .env(guest.state.env().0, guest.state.env().1)
        .env("TMPDIR", guest.backing.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = child.spawn().unwrap();
    let mut lines = common::StderrLines::of(&mut child);
    lines.wait_for_containing("fsynclab: booting", &mut child, Duration::from_secs(60));
    let fill = std::process::Command::new("dd")
        .args(["if=/dev/zero", "bs=1M", "count=400", "status=none"])
        .arg(format!("of={}", filler.display()))
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(!fill.success(), "the filler should have met a full disk");
    let status = common::wait_at_most(&mut child, Duration::from_secs(300));
    let err = lines.all();
    assert!(
        started.elapsed() < Duration::from_secs(240),
        "took {:?}: {err}",
        started.elapsed()
    );
    assert!(!err.contains("had not finished"), "{err}");
    assert!(err.contains("Input/output error") && err.contains("dd=1"), "{err}");
    assert!(err.contains("the host's disk under --backing"), "{err}");
    assert!(err.contains("is full"), "{err}");
    assert_eq!(status.code(), Some(0), "exec passes the script's own status: {err}");
    std::fs::remove_file(&filler).unwrap();
    assert_eq!(leftovers(&backing), Vec::<String>::new(), "left in the full disk");
    drop(unmount);
    std::fs::remove_dir(&backing).unwrap();
    guest.assert_nothing_left();
}

/// Unmounts a test's tmpfs when dropped, also when the test fails (lazily: a run the failed
/// test leaves may still hold it for a moment).
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Issue 64: a read-only `--output` directory is refused before the guest boots (it was
/// refused by the guest after a 37 s boot), in one line with exit status 2; and a refused
/// run leaves no results store behind (the store was opened first).
pub fn a_read_only_output_directory_is_refused_before_the_guest_boots() {
    let root = common::backing();
    let read_only = root.path().join("ro");
    std::fs::create_dir(&read_only).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "ro", "fsynclab-test-ro"])
        .arg(&read_only)
        .status()
        .unwrap();
    assert!(mounted.success());
    let _unmount = Unmount(read_only.clone());
    let store = root.path().join("s.sqlite");
    let started = Instant::now();
    let out = ScratchRun::probe()
        .kernel(debian_kernel().unwrap())
        .fs("ext4")
        .backing(root.path())
        .arg("--output")
        .arg(read_only.join("x.json"))
        .arg("--store")
        .arg(&store)
        .command()
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("read-only"), "{err}");
    assert!(!store.exists(), "a refused run made the store {}", store.display());
    // --kernel without --scratch: refused, and no store either.
    let out = fsynclab()
        .args(["probe", "--kernel", &debian_kernel().unwrap(), "--store"])
        .arg(&store)
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--kernel needs --scratch"));
    assert!(!store.exists(), "a refused run made the store {}", store.display());
    drop(_unmount);
    assert_eq!(
        leftovers(root.path()),
        ["ro".to_string()],
        "{:?}",
        leftovers(root.path())
    );
}
