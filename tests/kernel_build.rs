//! Issue 60: the cheap parts of building kernels from source, which CI can afford
//! (scripts/build-kernel.sh's long build, the A/B, A/A and bisect runs live in
//! scripts/kernel-calibration.sh): the patches under kernels/patches/ apply to the installed
//! linux-source-6.1, the config fragment survives `make olddefconfig` option by option, and
//! the script refuses bad input (no source package, a patch that does not apply, an OUTDIR it
//! cannot write, too little disk, Ctrl-C) in one line, leaving nothing behind.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::Need::{self, Root, Tool};

common::tests! {
    a_missing_source_package_is_refused_in_one_line_and_nothing_is_made,
    an_outdir_that_cannot_be_written_is_refused_in_one_line,
    a_patch_that_does_not_apply_is_refused_in_one_line_and_nothing_is_made: [SOURCE],
    every_patch_applies_to_the_installed_source_and_cites_its_seed: [SOURCE],
    every_option_of_the_fragment_survives_olddefconfig: [SOURCE, Tool("make"), Tool("gcc"), Tool("bison"), Tool("flex"), Tool("pahole")],
    a_kernel_config_lacking_what_guests_need_is_named_option_by_option,
    too_little_free_disk_is_refused_before_anything_is_made: [SOURCE, Root],
    a_disk_that_fills_while_extracting_is_said_in_one_line_and_nothing_is_left: [SOURCE, Root],
    ctrl_c_while_extracting_leaves_no_tree_behind: [SOURCE],
}

/// Debian's kernel source package, which scripts/setup.sh installs.
const TARBALL: &str = "/usr/src/linux-source-6.1.tar.xz";
const SOURCE: Need = Need::That("the linux-source-6.1 package (scripts/setup.sh installs it)", || {
    Path::new(TARBALL).is_file()
});

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// scripts/build-kernel.sh with `TMPDIR` set to `tmp`, so a test can see what it leaves there.
fn build_kernel(tmp: &Path) -> Command {
    let mut cmd = Command::new(repo().join("scripts/build-kernel.sh"));
    cmd.env("TMPDIR", tmp).stdin(Stdio::null());
    cmd
}

/// A fresh directory's entries, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// A refusal: exit status 2 and exactly one line on stderr, which starts with `starts`.
fn assert_refused_in_one_line(out: &Output, starts: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with(starts), "{err}");
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
}

/// No source package: refused before anything, OUTDIR not made, nothing left in TMPDIR.
fn a_missing_source_package_is_refused_in_one_line_and_nothing_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let outdir = dir.path().join("out");
    let out = build_kernel(&tmp)
        .args(["--tarball", "/nonexistent/linux-source-6.1.tar.xz"])
        .arg(&outdir)
        .output()
        .unwrap();
    assert_refused_in_one_line(&out, "build-kernel.sh: no kernel source package: /nonexistent/linux-source-6.1.tar.xz is missing (run scripts/setup.sh as root");
    assert!(!outdir.exists());
    assert_eq!(entries(&tmp), Vec::<String>::new());
}

/// An OUTDIR that cannot be made, an existing one that cannot be written (procfs refuses new
/// files to root too), a file, and a missing patch: each one line, nothing made.
fn an_outdir_that_cannot_be_written_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // The source package is not needed for these: a stand-in passes its check.
    let tarball = dir.path().join("linux-source.tar.xz");
    std::fs::write(&tarball, b"").unwrap();
    let refused = |outdir: &Path, starts: &str| {
        let out = build_kernel(&tmp)
            .arg("--tarball")
            .arg(&tarball)
            .arg(outdir)
            .output()
            .unwrap();
        assert_refused_in_one_line(&out, starts);
    };
    refused(
        Path::new("/proc/fsynclab-kernel-out"),
        "build-kernel.sh: OUTDIR /proc/fsynclab-kernel-out: cannot create it",
    );
    assert!(!Path::new("/proc/fsynclab-kernel-out").exists());
    refused(
        Path::new("/proc/sys"),
        "build-kernel.sh: OUTDIR /proc/sys is not writable",
    );
    refused(
        &dir.path().join("no/such/out"),
        &format!(
            "build-kernel.sh: OUTDIR {}: its parent {} does not exist",
            dir.path().join("no/such/out").display(),
            dir.path().join("no/such").display()
        ),
    );
    refused(
        &tarball,
        &format!("build-kernel.sh: OUTDIR {} is not a directory", tarball.display()),
    );
    let out = build_kernel(&tmp)
        .arg("--tarball")
        .arg(&tarball)
        .arg(dir.path().join("out"))
        .arg(dir.path().join("missing.patch"))
        .output()
        .unwrap();
    assert_refused_in_one_line(&out, "build-kernel.sh: no such patch: ");
    assert!(!dir.path().join("out").exists());
    assert_eq!(entries(&tmp), Vec::<String>::new());
}

/// A patch whose context is not in fs/ext4/fsync.c: refused after the dry run, before the
/// source is extracted, naming the patch; OUTDIR not made, nothing left in TMPDIR.
fn a_patch_that_does_not_apply_is_refused_in_one_line_and_nothing_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let patch = dir.path().join("stale.patch");
    std::fs::write(
        &patch,
        "a patch for another kernel\n--- a/fs/ext4/fsync.c\n+++ b/fs/ext4/fsync.c\n@@ -10,3 +10,3 @@\n a line that is not there\n-nor is this one\n+so this cannot apply\n and a last one\n",
    )
    .unwrap();
    let outdir = dir.path().join("out");
    let out = build_kernel(&tmp).arg(&outdir).arg(&patch).output().unwrap();
    assert_refused_in_one_line(
        &out,
        &format!(
            "build-kernel.sh: {} does not apply to linux-source-6.1 (after 0 earlier patches): ",
            patch.display()
        ),
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("FAILED"));
    assert!(!outdir.exists());
    assert_eq!(entries(&tmp), Vec::<String>::new());
}

/// The files a patch changes (its `+++ b/PATH` lines).
fn patched_files(patch: &str) -> Vec<String> {
    patch
        .lines()
        .filter_map(|l| l.strip_prefix("+++ "))
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|p| p.split_once('/').map(|(_, rest)| rest.to_string()))
        .collect()
}

/// Each patch under kernels/patches/ applies (`patch --dry-run`) to the files of the installed
/// source package, and its header says which seed it restores.
fn every_patch_applies_to_the_installed_source_and_cites_its_seed() {
    let mut patches: Vec<PathBuf> = std::fs::read_dir(repo().join("kernels/patches"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "patch"))
        .collect();
    patches.sort();
    assert!(patches.len() >= 2, "seed 004's and seed 002's patches: {patches:?}");
    let texts: Vec<String> = patches.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect();
    let dir = tempfile::tempdir().unwrap();
    let mut members: Vec<String> = texts
        .iter()
        .flat_map(|t| patched_files(t))
        .map(|f| format!("linux-source-6.1/{f}"))
        .collect();
    members.sort();
    members.dedup();
    let status = Command::new("tar")
        .args(["-xJf", TARBALL, "--strip-components=1", "-C"])
        .arg(dir.path())
        .args(&members)
        .status()
        .unwrap();
    assert!(status.success(), "tar could not extract {members:?} from {TARBALL}");
    for (path, text) in patches.iter().zip(&texts) {
        let name = path.file_name().unwrap().to_string_lossy();
        let seed = &name[..7];
        assert!(seed.starts_with("seed"), "{name}: named for its seed (seedNNN-...)");
        let head = &text[..text.find("\n--- ").unwrap()];
        assert!(
            head.contains(&format!("seeds/{}_", &seed[4..])),
            "{name}: its header cites the seed's file: {head}"
        );
        assert!(head.contains("What it restores:"), "{name}: {head}");
        let out = Command::new("patch")
            .args(["-p1", "--dry-run", "-d"])
            .arg(dir.path())
            .arg("-i")
            .arg(path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name} does not apply to {TARBALL}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The fragment's options as name -> value ("n" for "is not set").
fn fragment() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(repo().join("kernels/fsynclab.config")).unwrap();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ").and_then(|l| l.strip_suffix(" is not set")) {
            if rest.starts_with("CONFIG_") {
                out.insert(rest.to_string(), "n".to_string());
            }
        } else if let Some((name, value)) = line.split_once('=') {
            if name.starts_with("CONFIG_") {
                out.insert(name.to_string(), value.to_string());
            }
        }
    }
    out
}

/// A .config's options as name -> value ("n" for "is not set" and for absent ones).
fn config_value(config: &str, name: &str) -> String {
    config
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}=")))
        .unwrap_or("n")
        .to_string()
}

/// `--config-only`: defconfig, the fragment, olddefconfig in a throw-away tree; the config it
/// writes has every option of the fragment as the fragment says (checked here apart from the
/// script's own check), and its release is 6.1.N-fsynclab.
fn every_option_of_the_fragment_survives_olddefconfig() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let outdir = dir.path().join("out");
    let started = Instant::now();
    let out = build_kernel(&tmp)
        .arg("--config-only")
        .arg("--tree")
        .arg(dir.path().join("tree"))
        .arg(&outdir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let config_path = PathBuf::from(stdout.lines().last().unwrap());
    let name = config_path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("config-6.1.") && name.ends_with("-fsynclab"), "{name}");
    assert_eq!(config_path.parent(), Some(outdir.as_path()));
    let config = std::fs::read_to_string(&config_path).unwrap();
    let fragment = fragment();
    assert!(fragment.len() >= 40, "{} options", fragment.len());
    let lost: Vec<String> = fragment
        .iter()
        .filter(|(name, want)| config_value(&config, name) != **want)
        .map(|(name, want)| format!("{name}: fragment {want}, config {}", config_value(&config, name)))
        .collect();
    assert_eq!(
        lost,
        Vec::<String>::new(),
        "olddefconfig dropped options of the fragment"
    );
    // The config it wrote passes the users' check too.
    let check = build_kernel(&tmp)
        .arg("--check-config")
        .arg(&config_path)
        .output()
        .unwrap();
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    assert_eq!(entries(&tmp), Vec::<String>::new());
    eprintln!("--config-only took {:.1} s", started.elapsed().as_secs_f64());
}

/// `--check-config`: a kernel configuration without 9p and with virtio-blk as a module: the
/// missing option named with what the fragment wants, the module accepted; exit status 1.
fn a_kernel_config_lacking_what_guests_need_is_named_option_by_option() {
    let dir = tempfile::tempdir().unwrap();
    let needed: Vec<(String, String)> = fragment().into_iter().filter(|(_, v)| v == "y").collect();
    let mut config: String = needed
        .iter()
        .filter(|(name, _)| name != "CONFIG_9P_FS")
        .map(|(name, value)| format!("{name}={value}\n"))
        .collect();
    config = config.replace("CONFIG_VIRTIO_BLK=y\n", "CONFIG_VIRTIO_BLK=m\n");
    config.push_str("# CONFIG_9P_FS is not set\n");
    let path = dir.path().join("config");
    std::fs::write(&path, &config).unwrap();
    let out = build_kernel(dir.path())
        .arg("--check-config")
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let named: Vec<&str> = stdout.lines().skip(1).map(str::trim).collect();
    assert_eq!(named, ["CONFIG_9P_FS (fragment: y, config: not set)"], "{stdout}");
    std::fs::write(&path, config.replace("# CONFIG_9P_FS is not set\n", "CONFIG_9P_FS=y\n")).unwrap();
    let out = build_kernel(dir.path())
        .arg("--check-config")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
}

/// A 64 MiB tmpfs at `dir/small`, unmounted when the guard goes.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(dir: &Path) -> SmallDisk {
        let small = dir.join("small");
        std::fs::create_dir(&small).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64m", "fsynclab-test"])
            .arg(&small)
            .status()
            .unwrap();
        assert!(mounted.success());
        SmallDisk(small)
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A 64 MiB tmpfs as the tree: the free-disk check refuses it before anything is extracted
/// (one line, with the figures), and the tmpfs is unmounted afterwards.
fn too_little_free_disk_is_refused_before_anything_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let disk = SmallDisk::mount(dir.path());
    let small = disk.0.clone();
    let out = build_kernel(&tmp)
        .arg("--tree")
        .arg(small.join("tree"))
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_refused_in_one_line(
        &out,
        &format!("build-kernel.sh: not enough free disk in {}: ", small.display()),
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("MiB free, a build needs"));
    assert_eq!(entries(&small), Vec::<String>::new());
    assert!(!dir.path().join("out").exists());
    assert_eq!(entries(&tmp), Vec::<String>::new());
}

/// Ctrl-C (SIGINT to the script's process group, as a terminal sends it) while the source is
/// being extracted: exit status 130, one line, and neither the half-extracted tree nor the
/// OUTDIR it made is left.
fn ctrl_c_while_extracting_leaves_no_tree_behind() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let outdir = dir.path().join("out");
    let mut child = build_kernel(&tmp)
        .arg("--config-only")
        .arg(&outdir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    // Until the extraction has written part of the tree.
    let partial = outdir.join(".tree/src.partial");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(partial.is_dir() && entries(&partial).len() > 3) {
        assert!(Instant::now() < deadline, "the extraction did not start");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the script ended before the extraction"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let pgid = nix::unistd::Pid::from_raw(-(child.id() as i32));
    nix::sys::signal::kill(pgid, nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    let last: Vec<&str> = err.lines().filter(|l| !l.contains(": extracting ")).collect();
    assert_eq!(last.len(), 1, "{err}");
    assert!(
        last[0].starts_with("build-kernel.sh: interrupted: no bzImage was written"),
        "{err}"
    );
    assert!(!outdir.exists(), "left: {:?}", entries(dir.path()));
    assert_eq!(entries(&tmp), Vec::<String>::new());
}

/// The same 64 MiB tmpfs with the free-disk check lowered (`--min-free 1`): the extraction
/// fills it, and the script says so in one line (exit 1), leaving neither the half-extracted
/// tree nor the OUTDIR it made.
fn a_disk_that_fills_while_extracting_is_said_in_one_line_and_nothing_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let disk = SmallDisk::mount(dir.path());
    let outdir = dir.path().join("out");
    let out = build_kernel(&tmp)
        .args(["--min-free", "1", "--config-only", "--tree"])
        .arg(disk.0.join("tree"))
        .arg(&outdir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| !l.contains(": extracting ")).collect();
    assert_eq!(
        said,
        [format!(
            "build-kernel.sh: cannot extract {TARBALL} into {}: no space left on device",
            disk.0.join("tree").display()
        )
        .as_str()],
        "{err}"
    );
    assert_eq!(entries(&disk.0), Vec::<String>::new());
    assert!(!outdir.exists());
    assert_eq!(entries(&tmp), Vec::<String>::new());
}
