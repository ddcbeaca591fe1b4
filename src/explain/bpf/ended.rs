//! The processes a watch saw end. The kernel keeps each process's histograms and name in maps
//! of a fixed size (16,384 histogram buckets, 4,096 names): a watch of a machine whose sync
//! calls come from short-lived processes (a shell loop's `dd`, git, dpkg) would fill them
//! and stop counting the processes after. Every [`TAKE_EVERY`], whenever
//! [`NEW_NAMES_TAKEN_AT`] new processes have come, and at the end, the watch
//! takes the ended processes out of the kernel's maps and folds their calls by name here: a
//! row per name and kind (`dd (93 exited)`), at most [`NAMES_KEPT`] names (the rest under
//! one row), so memory stays bounded however long it watches.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::histogram::Buckets;
use super::record::SyncKind;
use super::{BpfTracer, EndedProcess};

/// How often the watch takes the ended processes out of the kernel's maps.
pub(crate) const TAKE_EVERY: Duration = Duration::from_secs(5);

/// The environment variable that sets [`TAKE_EVERY`], in seconds: for a test that must see
/// the takings [`NEW_NAMES_TAKEN_AT`] brings on, whatever the speed of the machine.
const TAKE_EVERY_VARIABLE: &str = "FSYNCLAB_TEST_TAKE_EVERY";

/// [`TAKE_EVERY`], or what [`TAKE_EVERY_VARIABLE`] says.
fn take_every() -> Duration {
    static EVERY: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *EVERY.get_or_init(|| {
        std::env::var(TAKE_EVERY_VARIABLE)
            .ok()
            .and_then(|s| s.parse().ok())
            .map_or(TAKE_EVERY, Duration::from_secs)
    })
}

/// New process names the kernel may keep before the ended processes are taken out without
/// waiting for [`TAKE_EVERY`]: a quarter of its 4,096, so that a burst of short-lived
/// processes (a python loop forking 825 a second was seen) is taken out well before the
/// names fill.
const NEW_NAMES_TAKEN_AT: u64 = 1024;

/// Names of ended processes kept apart; those after are folded under [`OTHER_NAMES`].
const NAMES_KEPT: usize = 1024;
const OTHER_NAMES: &str = "(other names)";

/// The calls of the processes of one name that ended.
#[derive(Debug, Default)]
pub(crate) struct Folded {
    pub(crate) processes: u32,
    pub(crate) latencies: BTreeMap<SyncKind, Buckets>,
}

/// The ended processes' calls, by name.
#[derive(Debug, Default)]
pub(crate) struct Ended {
    pub(crate) by_name: BTreeMap<String, Folded>,
    last_taken: Option<Instant>,
    /// [`BpfTracer::names_given`] at the last taking.
    names_at_last_take: u64,
}

impl Ended {
    /// Takes the processes that ended out of the tracer's maps, if [`TAKE_EVERY`] has passed
    /// since the last time, or [`NEW_NAMES_TAKEN_AT`] new processes have come (or
    /// `now_anyway`).
    pub(crate) fn take(&mut self, tracer: &BpfTracer, now_anyway: bool) -> Result<()> {
        let names = tracer.names_given()?;
        let due = now_anyway
            || self.last_taken.is_none_or(|t| t.elapsed() >= take_every())
            || names - self.names_at_last_take >= NEW_NAMES_TAKEN_AT;
        if !due {
            return Ok(());
        }
        self.last_taken = Some(Instant::now());
        self.names_at_last_take = names;
        // A pid the kernel gives is one of the machine's first pid namespace: /proc says
        // whether it lives only when this process sees that namespace.
        if !in_the_first_pid_namespace() {
            return Ok(());
        }
        let mut taken = Vec::new();
        // What was taken before an error is counted: it is out of the kernel's maps.
        let result = tracer.take_ended(alive, &mut taken);
        for process in taken {
            self.add(process);
        }
        result
    }

    fn add(&mut self, process: EndedProcess) {
        let name = process.name.unwrap_or_else(|| "?".into());
        let name = if self.by_name.contains_key(&name) || self.by_name.len() < NAMES_KEPT {
            name
        } else {
            OTHER_NAMES.into()
        };
        let folded = self.by_name.entry(name).or_default();
        folded.processes += 1;
        for (kind, b) in &process.latencies {
            folded.latencies.entry(*kind).or_default().merge(b);
        }
    }

    /// The row label of the processes of `name`: `dd (93 exited)`.
    pub(crate) fn label(name: &str, folded: &Folded) -> String {
        format!("{name} ({} exited)", folded.processes)
    }
}

/// Whether process `pid` lives: one of its threads is in /proc and not a zombie. A process
/// whose main thread has ended while others go on still makes calls: its main thread is a
/// zombie until the last ends. One that has ended and waits for its parent to read its
/// status makes no more calls.
pub(crate) fn alive(pid: u32) -> bool {
    let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    threads
        .flatten()
        .any(|thread| std::fs::read_to_string(thread.path().join("stat")).is_ok_and(|stat| not_a_zombie(&stat)))
}

/// Whether a task's /proc stat line, `PID (COMM) STATE ...` (COMM may hold spaces and
/// parentheses), shows a state other than zombie.
fn not_a_zombie(stat: &str) -> bool {
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next())
        .is_some_and(|state| state != 'Z')
}

/// Whether this process sees pids as the kernel gives them: its NSpid line in
/// /proc/self/status has one pid (more when it runs in a pid namespace of its own, a
/// container's).
fn in_the_first_pid_namespace() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("NSpid:"))
            .is_some_and(|pids| pids.split_whitespace().count() == 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(pid: u32, name: &str, kind: SyncKind, bucket: u16) -> EndedProcess {
        let mut b = Buckets::default();
        b.add(bucket, 1);
        EndedProcess {
            pid,
            name: Some(name.into()),
            latencies: BTreeMap::from([(kind, b)]),
        }
    }

    #[test]
    fn ended_processes_fold_by_name_and_count_each_process_once() {
        let mut e = Ended::default();
        e.add(ended(10, "dd", SyncKind::Fsync, 100));
        e.add(ended(11, "dd", SyncKind::Fsync, 200));
        e.add(ended(12, "git", SyncKind::Fdatasync, 100));
        let dd = &e.by_name["dd"];
        assert_eq!(dd.processes, 2);
        assert_eq!(dd.latencies[&SyncKind::Fsync].count(), 2);
        assert_eq!(e.by_name["git"].processes, 1);
        assert_eq!(Ended::label("dd", dd), "dd (2 exited)");
    }

    #[test]
    fn a_zombie_has_ended_and_a_running_process_has_not() {
        assert!(alive(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Exited, not yet waited for: a zombie, still in /proc.
        let since = Instant::now();
        while alive(pid) {
            assert!(since.elapsed() < Duration::from_secs(10), "true did not end");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
        child.wait().unwrap();
        assert!(!alive(pid));
    }

    #[test]
    fn a_task_state_is_read_after_the_last_parenthesis_of_its_name() {
        assert!(not_a_zombie("812 (a) Z (b) S 1 812"));
        assert!(!not_a_zombie("812 (a) S (b) Z 1 812"));
        assert!(!not_a_zombie("812 (no end"));
    }

    #[test]
    fn names_past_the_kept_ones_fold_under_one_row() {
        let mut e = Ended::default();
        for pid in 0..NAMES_KEPT as u32 + 3 {
            e.add(ended(pid, &format!("p{pid}"), SyncKind::Fsync, 100));
        }
        assert_eq!(e.by_name.len(), NAMES_KEPT + 1);
        assert_eq!(e.by_name[OTHER_NAMES].processes, 3);
        // A name kept already stays its own.
        e.add(ended(1, "p0", SyncKind::Fsync, 100));
        assert_eq!(e.by_name["p0"].processes, 2);
    }
}
