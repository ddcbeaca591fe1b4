//! The static binary on a host with nothing installed: a root directory holding only the
//! binary, entered with chroot in a mount namespace of its own (`unshare --mount`), with
//! /proc, /sys, /dev and /tmp mounted there as a host would have them, or one of them left
//! out. The namespace's mounts end with its last process, however the test ends, and each
//! test checks that none is left.

use std::path::Path;
use std::process::{Command, Output};

use super::release_binary;

/// What is mounted in the empty root before the binary runs, as sh lines; `$0` is the root.
const PROC: &str = r#"mount -t proc proc "$0/proc""#;
/// The host's /sys with what is mounted under it: tracefs, the BTF files, the cgroups.
const HOST_SYS: &str = r#"mount --rbind /sys "$0/sys""#;
/// A /sys of its own: the BTF files, nothing mounted under it.
const BARE_SYS: &str = r#"mount -t sysfs sysfs "$0/sys""#;
const DEV: &str = r#"mount --rbind /dev "$0/dev""#;
const TMP: &str = r#"mount -t tmpfs tmpfs "$0/tmp""#;

/// Runs `/fsynclab ARGS` chrooted into a root holding only the release binary, after
/// `mounts`; checks that nothing is left mounted under the root afterwards.
fn in_empty_root(mounts: &[&str], args: &[&str]) -> Output {
    let root = tempfile::tempdir().unwrap();
    std::fs::copy(release_binary(), root.path().join("fsynclab")).unwrap();
    for dir in ["proc", "sys", "dev", "tmp"] {
        std::fs::create_dir(root.path().join(dir)).unwrap();
    }
    let script = format!("set -e\n{}\nexec chroot \"$0\" /fsynclab \"$@\"", mounts.join("\n"));
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "--", "sh", "-c", &script])
        .arg(root.path())
        .args(args)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("FSYNCLAB_STORE", "off")
        .output()
        .unwrap();
    assert_nothing_mounted_under(root.path());
    out
}

fn assert_nothing_mounted_under(root: &Path) {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let root = root.to_string_lossy();
    let left: Vec<&str> = mountinfo.lines().filter(|l| l.contains(root.as_ref())).collect();
    assert!(left.is_empty(), "left mounted under {root}:\n{}", left.join("\n"));
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Issue 63: the release binary asks the dynamic loader for nothing: no PT_INTERP, no
/// DT_NEEDED (libbpf, libelf, zlib, SQLite and glibc are inside it).
pub fn the_static_binary_loads_no_shared_library() {
    let out = Command::new("readelf")
        .args(["--program-headers", "--dynamic"])
        .arg(release_binary())
        .output()
        .unwrap();
    let headers = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "readelf: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !headers.contains("INTERP"),
        "the binary names a dynamic loader:\n{headers}"
    );
    assert!(
        !headers.contains("(NEEDED)"),
        "the binary needs shared libraries:\n{headers}"
    );
}

/// Issue 63: in a root holding only the binary, with /proc, /sys, /dev and /tmp mounted,
/// `--version`, a two-second `watch` (BPF, its program inside the binary) and `probe`
/// run as on a host with everything installed.
pub fn the_static_binary_runs_watch_and_probe_in_an_empty_root() {
    let all = [PROC, HOST_SYS, DEV, TMP];
    let out = in_empty_root(&all, &["--version"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("fsynclab "),
        "{}",
        text(&out)
    );

    let out = in_empty_root(&all, &["watch", "--duration", "2s", "--no-store"]);
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("watching the sync calls"), "{}", text(&out));

    let out = in_empty_root(&all, &["probe", "--dir", "/tmp"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("fdatasync"),
        "{}",
        text(&out)
    );
}

/// Issue 63: without /proc, `watch` and `probe` say so in one line naming /proc, exit 2
/// (watch said "reading /proc/kallsyms: No such file or directory", exit 1; probe measured
/// and printed "Linux unknown, 0.0 GiB").
pub fn an_empty_root_without_proc_is_one_line_naming_it() {
    for args in [
        &["watch", "--duration", "2s", "--no-store"][..],
        &["probe", "--dir", "/tmp"],
    ] {
        let out = in_empty_root(&[BARE_SYS, DEV, TMP], args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {}", text(&out));
        assert!(err.contains("/proc"), "{args:?}: {}", text(&out));
    }
}

/// Issue 63: with /proc but no /sys, `watch` says in one line that /sys is not mounted and
/// that tracefs and the kernel's BTF are found there, exit 2 (it said "this kernel has no
/// BTF", and `run --explain` "this kernel has no tracefs"). With /sys mounted and tracefs
/// not, nothing is missing: fsynclab mounts tracefs itself when it traces with it.
pub fn an_empty_root_without_sys_is_one_line_naming_it() {
    let out = in_empty_root(&[PROC, DEV, TMP], &["watch", "--duration", "2s", "--no-store"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(err.trim().lines().count(), 1, "{}", text(&out));
    assert!(
        err.contains("/sys is not mounted") && err.contains("tracefs"),
        "{}",
        text(&out)
    );
}
