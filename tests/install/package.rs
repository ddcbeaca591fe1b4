//! The Debian package of `scripts/build-release.sh`, installed on this machine with dpkg as a
//! user would: what it puts where, a run from it, and that removing it takes all of it and
//! leaves the user's results store alone. The runs' store is the default one of a HOME made
//! for the test (`~/.local/share/fsynclab/results.sqlite`), never the user's own.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};

use super::release_deb;

/// What these tests need, in words: they install the package and remove it.
pub const NOT_INSTALLED: &str = "no fsynclab installed system-wide (the test installs its package, then removes it)";

/// Whether no fsynclab is installed but this file's own: its two tests take turns (the need
/// is checked before a test waits for its turn, while the other may hold the package).
pub fn not_installed() -> bool {
    OURS.load(Ordering::SeqCst) || (!Path::new("/usr/bin/fsynclab").exists() && package_state().is_empty())
}

/// Set while a test of this file has the package installed.
static OURS: AtomicBool = AtomicBool::new(false);

/// dpkg's state of the package (`ii `, `rc `...), empty when dpkg does not know it.
fn package_state() -> String {
    Command::new("dpkg-query")
        .args(["--show", "--showformat=${db:Status-Abbrev}", "fsynclab"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: exit {:?}\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn dpkg(args: &[&str]) -> Output {
    run(Command::new("dpkg").args(args).env("DEBIAN_FRONTEND", "noninteractive"))
}

/// Removes the package (purged) however the test ends, so that a failure leaves no install.
struct PurgeOnDrop;

impl PurgeOnDrop {
    fn new() -> PurgeOnDrop {
        OURS.store(true, Ordering::SeqCst);
        PurgeOnDrop
    }
}

impl Drop for PurgeOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("dpkg").args(["--purge", "fsynclab"]).output();
        OURS.store(false, Ordering::SeqCst);
    }
}

/// The installed fsynclab with HOME at `home`, so that its default store is `home`'s.
fn installed_fsynclab(home: &Path) -> Command {
    let mut cmd = Command::new("/usr/bin/fsynclab");
    cmd.env("HOME", home)
        .env_remove("FSYNCLAB_STORE")
        .env_remove("XDG_DATA_HOME");
    cmd
}

/// The default store of `home`.
fn store_of(home: &Path) -> PathBuf {
    home.join(".local/share/fsynclab/results.sqlite")
}

/// The files the package holds, as paths on this machine.
fn files_of(deb: &Path) -> Vec<PathBuf> {
    let out = run(Command::new("dpkg-deb").arg("--contents").arg(deb));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with('-'))
        .filter_map(|l| l.split_whitespace().last())
        .map(|p| PathBuf::from(p.trim_start_matches('.')))
        .collect()
}

/// A quick run from the installed binary, recorded in `home`'s default store.
fn quick_run(home: &Path, dir: &Path) {
    let dir = dir.to_str().unwrap();
    run(installed_fsynclab(home).args([
        "run",
        "overwrite-fsync",
        "--dir",
        dir,
        "--set",
        "duration=1s",
        "--quiet",
    ]));
}

/// Issue 63: `dpkg -i` puts the static binary on the PATH, a man page per command that `man`
/// finds, and bash, zsh and fish completions; `fsynclab run overwrite-fsync --dir /tmp/x
/// --set duration=1s` runs from it; `dpkg -r` takes every file of it away and dpkg forgets
/// it (it has no configuration files).
pub fn the_package_installs_runs_and_is_removed_without_a_trace() {
    let _turn = crate::common::one_at_a_time();
    let deb = release_deb();
    let _purge = PurgeOnDrop::new();
    dpkg(&["--install", deb.to_str().unwrap()]);
    assert_eq!(package_state(), "ii", "dpkg does not show it installed");

    let page = run(Command::new("man").args(["-w", "fsynclab-run"]));
    assert_eq!(
        String::from_utf8_lossy(&page.stdout).trim(),
        "/usr/share/man/man1/fsynclab-run.1.gz"
    );
    // bash completes `fsynclab run <TAB>` with the scenarios, as scripts/install.sh's does.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    run(Command::new(root.join("scripts/check-install.sh")).arg("/usr"));
    let zsh = std::fs::read_to_string("/usr/share/zsh/vendor-completions/_fsynclab").unwrap();
    assert!(zsh.starts_with("#compdef fsynclab"), "{}", &zsh[..zsh.len().min(200)]);
    let fish = std::fs::read_to_string("/usr/share/fish/vendor_completions.d/fsynclab.fish").unwrap();
    assert!(
        fish.contains("complete -c fsynclab"),
        "{}",
        &fish[..fish.len().min(200)]
    );

    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let x = work.path().join("x");
    std::fs::create_dir(&x).unwrap();
    quick_run(home.path(), &x);
    assert!(
        store_of(home.path()).is_file(),
        "the run was not stored in the default store"
    );

    dpkg(&["--remove", "fsynclab"]);
    assert_eq!(
        package_state(),
        "",
        "dpkg still knows the package after -r (no configuration files to keep)"
    );
    let left: Vec<PathBuf> = files_of(&deb).into_iter().filter(|p| p.exists()).collect();
    assert!(left.is_empty(), "left by dpkg -r: {left:?}");
    assert!(
        !Path::new("/usr/share/doc/fsynclab").exists(),
        "/usr/share/doc/fsynclab left"
    );
}

/// Issue 63: a results store made before the package is installed is the same file, byte for
/// byte, after installing an older version, upgrading over it, removing and purging it; the
/// upgraded binary lists the run the older one stored.
pub fn the_results_store_survives_upgrade_removal_and_purge() {
    let _turn = crate::common::one_at_a_time();
    let deb = release_deb();
    let _purge = PurgeOnDrop::new();
    let work = tempfile::tempdir().unwrap();
    // The older version: the same package with a lower version number.
    let tree = work.path().join("older");
    run(Command::new("dpkg-deb").arg("--raw-extract").arg(&deb).arg(&tree));
    let control = tree.join("DEBIAN/control");
    let text = std::fs::read_to_string(&control).unwrap();
    let text: String = text
        .lines()
        .map(|l| {
            if l.starts_with("Version: ") {
                "Version: 0.0.1".to_string()
            } else {
                l.to_string()
            }
        })
        .map(|l| l + "\n")
        .collect();
    std::fs::write(&control, text).unwrap();
    let older = work.path().join("fsynclab_0.0.1.deb");
    run(Command::new("dpkg-deb")
        .args(["--root-owner-group", "-Znone", "--build"])
        .arg(&tree)
        .arg(&older));

    // A store made before any install, by the release binary itself.
    let home = work.path().join("home");
    let x = work.path().join("x");
    std::fs::create_dir_all(&x).unwrap();
    let store = store_of(&home);
    run(Command::new(super::release_binary())
        .env("HOME", &home)
        .env_remove("FSYNCLAB_STORE")
        .env_remove("XDG_DATA_HOME")
        .args([
            "run",
            "overwrite-fsync",
            "--dir",
            x.to_str().unwrap(),
            "--set",
            "duration=1s",
            "--quiet",
        ]));
    let before = std::fs::read(&store).unwrap();

    dpkg(&["--install", older.to_str().unwrap()]);
    assert_eq!(std::fs::read(&store).unwrap(), before, "installing changed the store");
    dpkg(&["--install", deb.to_str().unwrap()]);
    assert_eq!(std::fs::read(&store).unwrap(), before, "upgrading changed the store");
    let runs = run(installed_fsynclab(&home).args(["runs", "--format", "json"]));
    assert!(
        String::from_utf8_lossy(&runs.stdout).contains("overwrite-fsync"),
        "the upgraded binary lists no run"
    );
    let before = std::fs::read(&store).unwrap();
    dpkg(&["--remove", "fsynclab"]);
    assert_eq!(std::fs::read(&store).unwrap(), before, "removing changed the store");
    dpkg(&["--purge", "fsynclab"]);
    assert_eq!(std::fs::read(&store).unwrap(), before, "purging changed the store");
}
