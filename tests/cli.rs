//! Issue 2: the command line as a user meets it — `list`, `--help`, and one-line errors with
//! exit status 2 for every kind of bad input, leaving nothing behind.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use common::Need::{Root, Tool};
use common::{fsynclab, leftovers};
use predicates::prelude::*;

common::tests! {
    list_shows_every_scenario_with_seed_and_parameters,
    list_json_gives_defaults_and_seed_values,
    help_teaches_with_examples,
    completion_scripts_offer_the_commands_and_scenario_names,
    manpages_writes_one_page_per_command,
    manpages_into_a_file_is_refused_in_one_line,
    manpages_into_a_read_only_directory_is_bad_input: [Root, Tool("mount")],
    a_guest_given_no_time_is_refused_as_the_option_is_read,
    install_refuses_a_prefix_it_cannot_write_before_building: [Root, Tool("mount")],
    unknown_scenario_names_the_valid_ones,
    unknown_parameter_names_the_valid_ones,
    malformed_size_and_duration_say_what_they_expect,
    bad_combinations_are_refused,
    missing_or_wrong_directory_is_refused,
    unknown_format_is_a_usage_error,
    free_space_preflight_refuses_with_numbers,
    scratch_only_options_need_scratch_even_with_an_explicit_dir,
    buffers_larger_than_memory_are_refused_before_anything_is_created,
}

fn list_shows_every_scenario_with_seed_and_parameters() {
    let out = fsynclab().arg("list").assert().success().get_output().stdout.clone();
    let text = String::from_utf8(out).unwrap();
    for needle in [
        "overwrite-fsync",
        "random-writeback",
        "seed 000",
        "seed 003",
        "write_size",
        "random_file_size  512M",
        "(seed: 8G)",
        "(seed: 60)",
    ] {
        assert!(text.contains(needle), "list lacks {needle:?}:\n{text}");
    }
}

fn list_json_gives_defaults_and_seed_values() {
    let v: serde_json::Value = common::success_json(fsynclab().args(["list", "--format", "json"]));
    let rw = v
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "random-writeback")
        .unwrap();
    let iterations = rw["params"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "iterations")
        .unwrap();
    assert_eq!(iterations["default"], "20");
    assert_eq!(iterations["seed"], "60");
}

fn help_teaches_with_examples() {
    fsynclab()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("Examples:").and(predicate::str::contains("fsynclab run overwrite-fsync")));
    fsynclab()
        .args(["run", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--set <KEY=VALUE>"));
}

/// Issue 27: `completions SHELL` for each shell clap knows; bash's and zsh's offer the
/// scenarios after `run` (clap's fish, elvish and powershell scripts complete no positional
/// values).
fn completion_scripts_offer_the_commands_and_scenario_names() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let text = common::success_stdout(fsynclab().args(["completions", shell]));
        assert!(text.contains("list-devices"), "{shell}: no subcommands in the script");
        if matches!(shell, "bash" | "zsh") {
            assert!(
                text.contains("overwrite-fsync"),
                "{shell}: no scenario names in the script"
            );
        }
    }
    fsynclab()
        .args(["completions", "tcsh"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "possible values: bash, elvish, fish, powershell, zsh",
        ));
}

/// Issue 27: `manpages DIR` writes fsynclab.1 and one page per command, nested ones too.
fn manpages_writes_one_page_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("man1");
    fsynclab()
        .arg("manpages")
        .arg(&man)
        .assert()
        .success()
        .stdout(predicate::str::contains("man pages in"));
    for page in [
        "fsynclab.1",
        "fsynclab-run.1",
        "fsynclab-exec.1",
        "fsynclab-store-copy.1",
    ] {
        let text = std::fs::read_to_string(man.join(page)).unwrap();
        assert!(
            text.starts_with(".ie") || text.contains(".TH"),
            "{page} is not a man page"
        );
    }
}

/// Issue 27: `manpages FILE` where FILE is a file, not a directory, is one line and exit 2,
/// and the file is left as it was.
fn manpages_into_a_file_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pages");
    std::fs::write(&file, "mine").unwrap();
    let assert = fsynclab().arg("manpages").arg(&file).assert().code(2);
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("name a directory"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
}

/// A read-only tmpfs mounted on a new directory of `parent`, unmounted when dropped.
struct ReadOnly(std::path::PathBuf);

impl ReadOnly {
    fn under(parent: &std::path::Path) -> ReadOnly {
        let dir = parent.join("read-only");
        std::fs::create_dir(&dir).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "ro", "fsynclab-test-ro"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(mounted.success());
        ReadOnly(dir)
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// Issue 64: `manpages DIR` where DIR cannot be written (on a read-only mount) is bad input,
/// exit 2 in one line, as an unwritable --output is (it was 1).
fn manpages_into_a_read_only_directory_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let read_only = ReadOnly::under(dir.path());
    for target in [read_only.0.clone(), read_only.0.join("man1")] {
        let out = fsynclab().arg("manpages").arg(&target).output().unwrap();
        let err = common::assert_refused_in_one_line(&out, "name a directory you can write");
        assert!(err.contains("read-only") || err.contains("Read-only"), "{err}");
    }
}

/// Issue 64: `--kernel-timeout 0` is refused as the command line is read (exit 2), as `watch
/// --duration 0` is, on every command that takes it; before, QEMU started and was ended at
/// once (exit 1).
fn a_guest_given_no_time_is_refused_as_the_option_is_read() {
    for args in [
        &["run", "overwrite-fsync", "--kernel-timeout", "0"][..],
        &["exec", "--kernel-timeout", "0s", "--", "true"][..],
        &["reproduce", "004", "--kernel-timeout", "0ms"][..],
    ] {
        let out = fsynclab().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("--kernel-timeout") && err.contains("more than 0s"),
            "{args:?}: {err}"
        );
    }
}

/// Issue 64: `scripts/install.sh --prefix DIR` where DIR cannot be written says so in one line
/// and exits 2 at once, before the build (it went straight to `cargo install`).
fn install_refuses_a_prefix_it_cannot_write_before_building() {
    let dir = tempfile::tempdir().unwrap();
    let read_only = ReadOnly::under(dir.path());
    let started = std::time::Instant::now();
    let out = std::process::Command::new("scripts/install.sh")
        .arg("--prefix")
        .arg(read_only.0.join("prefix"))
        .output()
        .unwrap();
    let err = common::assert_refused_in_one_line(&out, "cannot write into");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "{err}");
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
}

/// Runs fsynclab with `args` in an empty directory and checks: exit 2, one line on stderr
/// containing `needle`, and nothing created.
fn refused(args: &[&str], needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    let assert = fsynclab().current_dir(dir.path()).args(args).assert().code(2);
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "more than one line for {args:?}:\n{stderr}"
    );
    assert!(
        stderr.contains(needle),
        "stderr for {args:?} lacks {needle:?}: {stderr}"
    );
    assert!(leftovers(dir.path()).is_empty(), "files left behind by {args:?}");
}

fn unknown_scenario_names_the_valid_ones() {
    refused(
        &["run", "nosuch"],
        "unknown scenario 'nosuch'; valid: overwrite-fsync, random-writeback",
    );
}

fn unknown_parameter_names_the_valid_ones() {
    refused(
        &["run", "overwrite-fsync", "--set", "colour=red"],
        "--set colour: unknown parameter for overwrite-fsync; valid: write_size",
    );
}

fn malformed_size_and_duration_say_what_they_expect() {
    for (scenario, set, says) in [
        (
            "overwrite-fsync",
            "write_size=1Q",
            "--set write_size=1Q: expected a size like 4k, 1M or 8G",
        ),
        (
            "random-writeback",
            "sleep=abc",
            "--set sleep=abc: expected a duration like 1s, 250ms or 2m",
        ),
        (
            "overwrite-fsync",
            "sync=O_SYNC",
            "--set sync=O_SYNC: expected one of fsync, fdatasync",
        ),
        ("overwrite-fsync", "sleep", "expected KEY=VALUE"),
    ] {
        refused(&["run", scenario, "--set", set], says);
    }
}

fn bad_combinations_are_refused() {
    for (args, says) in [
        (
            &[
                "run",
                "overwrite-fsync",
                "--set",
                "sync=direct",
                "--set",
                "write_size=1000",
            ][..],
            "needs a multiple of 4k",
        ),
        (
            &["run", "overwrite-fsync", "--set", "write_size=0"],
            "at least one byte",
        ),
        (
            &["run", "overwrite-fsync", "--set", "write_size=9000000T"],
            "at most half the RAM",
        ),
        (&["load", "stream", "--set", "chunk=0"], "must be larger than 0"),
    ] {
        refused(args, says);
    }
}

fn missing_or_wrong_directory_is_refused() {
    refused(
        &["run", "overwrite-fsync", "--dir", "/nonexistent/fsynclab"],
        "--dir /nonexistent/fsynclab: no such directory",
    );
    refused(&["probe", "--dir", "/etc/hostname"], "not a directory");
}

fn unknown_format_is_a_usage_error() {
    fsynclab()
        .args(["run", "overwrite-fsync", "--format", "xml"])
        .assert()
        .code(2);
    fsynclab().args(["load", "sideways"]).assert().code(2);
}

fn free_space_preflight_refuses_with_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let assert = fsynclab()
        .args([
            "run",
            "random-writeback",
            "--quiet",
            "--set",
            "random_file_size=200T",
            "--dir",
        ])
        .arg(dir.path())
        .assert()
        .code(2);
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("not enough space in"), "{stderr}");
    assert!(stderr.contains("this run needs 204800.0 GiB plus a"), "{stderr}");
    assert!(stderr.contains("lower --set random_file_size"), "{stderr}");
    assert!(leftovers(dir.path()).is_empty());
}

fn scratch_only_options_need_scratch_even_with_an_explicit_dir() {
    // Regression: clap's `requires` did not fire with --dir given, and the scheduler was
    // silently left as it was.
    refused(
        &["probe", "--dir", ".", "--scheduler", "bfq"],
        "--scheduler applies to a scratch filesystem only",
    );
    refused(
        &["run", "overwrite-fsync", "--dir", ".", "--device", "hdd-5400"],
        "--device applies to a scratch filesystem only",
    );
}

fn buffers_larger_than_memory_are_refused_before_anything_is_created() {
    // Regression: an allocation this large aborted the process (exit 134) after the work
    // directory existed, and the abort skipped its removal.
    refused(
        &["load", "stream", "--set", "chunk=9000000T"],
        "--set chunk=9000000T: fsynclab holds one such write in memory",
    );
    refused(
        &["run", "small-files", "--set", "record=9000000T"],
        "at most half the RAM",
    );
    refused(
        &["run", "datasync", "--set", "write_size=9000000T"],
        "at most half the RAM",
    );
}
