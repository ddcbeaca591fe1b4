//! The tests of named files: links followed, devices written into, special files and the store refused.

#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job
use super::*;

fn text(path: &Path, s: &str) -> Result<()> {
    write(path, None, |out| Ok(out.write_all(s.as_bytes())?))
}

/// Issue 8, item 9: a bad --output is refused before anything runs.
#[test]
/// Issue 8.
fn output_paths_are_checked_first() {
    let d = tempfile::tempdir().unwrap();
    let err = check(d.path(), None).unwrap_err().to_string();
    assert!(err.contains("is a directory"), "{err}");
    let err = check(Path::new("/nonexistent/x.json"), None).unwrap_err().to_string();
    assert!(err.contains("does not exist"), "{err}");
    assert!(check(&d.path().join("r.json"), None).is_ok());
}

#[test]
fn a_file_is_replaced_whole_and_keeps_its_mode_and_no_temp_file() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("r.json");
    text(&p, "first").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
    text(&p, "second").unwrap();
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "second");
    assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o640);
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
}

/// Issue 19, item 1: a link is followed (cp and tee follow it), the link stays a link;
/// one that leads nowhere is refused.
#[test]
/// Issue 19.
fn a_link_is_followed_and_a_dangling_one_refused() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("real.json");
    std::fs::write(&file, "old").unwrap();
    let link = d.path().join("link.json");
    std::os::unix::fs::symlink("real.json", &link).unwrap();
    text(&link, "new").unwrap();
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");

    let dangling = d.path().join("dangling.json");
    std::os::unix::fs::symlink("nowhere/x.json", &dangling).unwrap();
    let err = check(&dangling, None).unwrap_err().to_string();
    assert!(
        err.contains("symbolic link to nowhere/x.json, which does not exist"),
        "{err}"
    );
    assert!(text(&dangling, "x").is_err());
    assert!(!d.path().join("nowhere").exists());
}

/// Issue 19, item 2: the store, its -wal and -shm files, by any name, are refused.
#[test]
/// Issue 19.
fn the_store_in_use_is_never_written_over() {
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("S.sqlite");
    for f in ["S.sqlite", "S.sqlite-wal", "S.sqlite-shm"] {
        std::fs::write(d.path().join(f), "runs").unwrap();
    }
    std::fs::hard_link(&store, d.path().join("hard")).unwrap();
    std::os::unix::fs::symlink("S.sqlite-wal", d.path().join("soft")).unwrap();
    for name in ["S.sqlite", "hard", "soft", "S.sqlite-shm"] {
        let p = d.path().join(name);
        let err = check(&p, Some(&store)).unwrap_err().to_string();
        assert!(err.contains("results store"), "{name}: {err}");
        assert!(text_with_store(&p, &store).is_err(), "{name}");
    }
    for f in ["S.sqlite", "S.sqlite-wal", "S.sqlite-shm"] {
        assert_eq!(std::fs::read_to_string(d.path().join(f)).unwrap(), "runs");
    }
}

fn text_with_store(path: &Path, store: &Path) -> Result<()> {
    write(path, Some(store), |out| Ok(out.write_all(b"x")?))
}

#[test]
fn a_fifo_nobody_reads_is_refused_at_once_and_stays_a_fifo() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("p");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    assert!(check(&fifo, None).is_ok(), "checked without opening it");
    let err = format!("{:#}", text(&fifo, "x").unwrap_err());
    assert!(err.contains("no process reads"), "{err}");
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
}

/// Issue 24, item 5: `--emit /dev/full` failed only when written, after the matrix was
/// stored. A device that takes no writes is refused by the check, named by its option;
/// one that takes them passes.
#[test]
fn a_device_that_takes_no_writes_is_refused_before_anything_runs() {
    let err = check_option("--emit", Path::new("/dev/full"), None)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("--emit /dev/full: takes no writes (") && err.ends_with("); name a file"),
        "{err}"
    );
    assert!(err.contains("No space left on device"), "{err}");
    let err = check(Path::new("/nonexistent/m.yaml"), None).unwrap_err().to_string();
    assert!(err.starts_with("--output /nonexistent/m.yaml: "), "{err}");
    assert!(check_option("--emit", Path::new("/dev/null"), None).is_ok());
}

#[test]
fn dev_null_is_written_into() {
    text(Path::new("/dev/null"), "x").unwrap();
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
}
