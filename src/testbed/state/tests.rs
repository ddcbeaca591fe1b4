//! The undo stack, its state file and cleanup, on a temporary state directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::file::{start_time, StateFile};
use super::undo::{last_words, undo_steps};
use super::*;

/// No process has this pid (pid_max is at most 2^22).
const DEAD: u32 = 4_000_000_001;

fn write_dead_state(dir: &Path, name: &str, steps: Vec<Step>) -> PathBuf {
    let file = dir.join(name);
    let state = StateFile {
        pid: DEAD,
        start_time: Some(1),
        steps,
    };
    std::fs::write(&file, serde_json::to_vec(&state).unwrap()).unwrap();
    file
}

#[test]
fn undoes_in_reverse_and_removes_state_file() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let outer = work.path().join("fsynclab-outer");
    let inner = outer.join("inner");
    let mut undo = Undo::in_dir(state.path());
    let file = undo.file.clone().unwrap();
    {
        undo.perform(Step::Directory { path: outer.clone() }, || {
            Ok(std::fs::create_dir(&outer)?)
        })
        .unwrap();
        undo.perform(Step::Directory { path: inner.clone() }, || {
            Ok(std::fs::create_dir(&inner)?)
        })
        .unwrap();
        let saved: StateFile = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(saved.steps.len(), 2);
    }
    drop(undo);
    assert!(!outer.exists());
    assert!(!file.exists());
    assert!(!teardown_failed());
}

#[test]
fn a_step_recorded_but_never_done_undoes_harmlessly() {
    let work = tempfile::tempdir().unwrap();
    let mut undo = Undo::unrecorded();
    undo.record(Step::Directory {
        path: work.path().join("never-made"),
    })
    .unwrap();
    assert!(undo.undo_all().is_complete());
}

#[test]
fn a_failed_container_keeps_the_ones_below_it() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let mut steps = vec![
        Step::Directory { path: dir.clone() },
        // No image recorded: this undo fails, and the directory must stay.
        Step::Loop {
            device: "/dev/loop99".into(),
            image: None,
        },
    ];
    let outcome = undo_steps(&mut steps, |_| None, |_| {});
    assert_eq!(outcome.failed.len(), 1, "{outcome:?}");
    assert_eq!(outcome.kept.len(), 1, "{outcome:?}");
    assert!(
        outcome.kept[0].contains("as loop device /dev/loop99 is still there"),
        "{outcome:?}"
    );
    assert_eq!(steps.len(), 2);
    assert!(dir.exists());
}

#[test]
/// Issue 8.
fn cleanup_undoes_dead_processes_only() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let dead = work.path().join(format!("fsynclab-scratch-{DEAD}-00000000"));
    std::fs::create_dir(&dead).unwrap();
    let file = write_dead_state(
        state.path(),
        &format!("{DEAD}.json"),
        vec![Step::Directory { path: dead.clone() }],
    );
    let mine = state.path().join(format!("{}.json", std::process::id()));
    std::fs::write(
        &mine,
        serde_json::to_vec(&StateFile {
            pid: std::process::id(),
            start_time: start_time(std::process::id()),
            steps: vec![],
        })
        .unwrap(),
    )
    .unwrap();
    let report = cleanup_leftovers(state.path()).unwrap();
    assert!(!dead.exists());
    assert!(!file.exists());
    assert!(mine.exists(), "a running process's state is left alone");
    assert_eq!(report.undone.len(), 1, "{report:?}");
    assert_eq!(report.running, [std::process::id()]);
}

#[test]
/// Issue 8.
fn cleanup_removes_only_paths_of_fsynclab_shape() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // A directory of someone else's, a directory of another pid's shape, and a path
    // that climbs out of a scratch directory: none may go.
    let precious = work.path().join("precious");
    let other_pid = work.path().join("fsynclab-scratch-12-00000000");
    let climbing = work.path().join(format!("fsynclab-scratch-{DEAD}-00000000"));
    for d in [&precious, &other_pid, &climbing] {
        std::fs::create_dir(d).unwrap();
    }
    let ours = work.path().join(format!("fsynclab-{DEAD}-0000abcd"));
    std::fs::create_dir(&ours).unwrap();
    let file = write_dead_state(
        state.path(),
        &format!("{DEAD}.json"),
        vec![
            Step::Directory { path: precious.clone() },
            Step::Directory {
                path: other_pid.clone(),
            },
            Step::Directory {
                path: climbing.join("..").join("precious"),
            },
            Step::Mount {
                mount_point: PathBuf::from("/proc"),
            },
            Step::Sysctl {
                name: "swappiness".into(),
                previous: 0,
            },
            Step::Directory { path: ours.clone() },
        ],
    );
    let report = cleanup_leftovers(state.path()).unwrap();
    assert!(precious.exists() && other_pid.exists() && climbing.exists());
    assert!(
        !ours.exists(),
        "the work directory of fsynclab's shape goes: {report:?}"
    );
    assert_eq!(report.failed.len(), 5, "{report:?}");
    assert!(report.failed.iter().all(|f| f.contains("left alone")), "{report:?}");
    assert!(file.exists(), "the state file stays while anything it records is left");
    assert_eq!(report.kept_files, std::slice::from_ref(&file));
    let left: StateFile = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(left.steps.len(), 5);
}

#[test]
/// Issue 8.
fn cleanup_reads_the_state_a_kill_left_half_written() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join(format!("fsynclab-scratch-{DEAD}-00000001"));
    std::fs::create_dir(&dir).unwrap();
    // Killed between writing the temporary file and renaming it: the temporary file
    // holds the newer state.
    let old = write_dead_state(state.path(), &format!("{DEAD}.json"), vec![]);
    let tmp = write_dead_state(
        state.path(),
        &format!("{DEAD}.json.tmp"),
        vec![Step::Directory { path: dir.clone() }],
    );
    let report = cleanup_leftovers(state.path()).unwrap();
    assert!(!dir.exists(), "{report:?}");
    assert!(!old.exists() && !tmp.exists());
    // Killed while writing the first temporary file: nothing was done yet.
    std::fs::write(state.path().join(format!("{DEAD}-1.json.tmp")), b"{\"pid\":").unwrap();
    cleanup_leftovers(state.path()).unwrap();
    assert_eq!(std::fs::read_dir(state.path()).unwrap().count(), 0);
}

#[test]
fn last_words_name_what_is_left_and_how_to_undo_it() {
    let mut live = BTreeMap::new();
    assert_eq!(
        last_words(&live),
        "fsynclab: second signal: exiting at once; nothing was left to undo\n"
    );
    live.insert(
        0,
        (
            Some(PathBuf::from("/run/fsynclab/1.json")),
            vec!["mount /x/mnt".to_string(), "loop device /dev/loop0".to_string()],
        ),
    );
    live.insert(1, (None, vec!["directory /d/fsynclab-1-00000000".to_string()]));
    assert_eq!(
        last_words(&live),
        "fsynclab: second signal: exiting at once, without undoing mount /x/mnt, loop device /dev/loop0; \
         `fsynclab cleanup` undoes them; remove by hand: directory /d/fsynclab-1-00000000\n"
    );
}

#[test]
/// Issue 15.
fn cleanup_undoes_a_processs_later_stacks_first() {
    // A scenario's scratch filesystems live in its run's work directory, recorded by an
    // earlier stack: the later stacks (numbered as made, 10 after 2) are undone first, so
    // that the work directory is empty of mounts when its turn comes.
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    for (file, stamp) in [
        (format!("{DEAD}.json"), "00000000"),
        (format!("{DEAD}-2.json"), "00000002"),
        (format!("{DEAD}-10.json"), "0000000a"),
    ] {
        let dir = work.path().join(format!("fsynclab-{DEAD}-{stamp}"));
        std::fs::create_dir(&dir).unwrap();
        write_dead_state(state.path(), &file, vec![Step::Directory { path: dir }]);
    }
    let report = cleanup_leftovers(state.path()).unwrap();
    let order: Vec<&str> = report.undone.iter().map(|line| &line[line.len() - 1..]).collect();
    assert_eq!(order, ["a", "2", "0"], "{report:?}");
}
