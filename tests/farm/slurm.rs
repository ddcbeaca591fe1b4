//! Issues 17 and 24: matrices on Slurm, one node then two. The table printed and runs that
//! know their node, a failed task reported and resumed alone, and a task on a dead node
//! given up with its node.

use std::collections::BTreeSet;
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common;
use crate::setup::{cell_value, matrix_runs, place, stderr, stdout, Farm};

/// Issue 17: a matrix on Slurm prints its table and stores runs that know their node.
pub fn a_matrix_on_slurm_prints_its_table_and_stores_runs_that_know_their_node() {
    let farm = Farm::up(&["--postgres", "--slurm", "1"]);
    let pg = farm.database("slurm1");
    let t0 = Instant::now();
    let out = farm
        .tiny_matrix(2)
        .args(["--engine", "slurm", "--partition", "farm", "--store", &pg])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "{err}");
    eprintln!("matrix on Slurm in {:.1} s:\n{text}", t0.elapsed().as_secs_f64());
    assert!(err.contains("Slurm job"), "{err}");
    assert!(err.contains("[4/4]"), "a line per run stored: {err}");
    assert!(text.contains("matrix m1: fsync-tps"), "{text}");
    assert!(
        text.contains("record_size=4k") && text.contains("record_size=8k"),
        "{text}"
    );
    assert!(text.contains('[') && text.contains("median of 2 runs a cell"), "{text}");
    let runs = matrix_runs(&farm, &pg, "m1");
    assert_eq!(runs.len(), 4, "{runs:?}");
    let places: BTreeSet<String> = runs.iter().map(place).collect();
    assert_eq!(places.len(), 4, "each run once: {places:?}");
    for r in &runs {
        assert_eq!(r["host"], "n1", "{r}");
    }
    // The run knows the Slurm job and node that made it.
    let id = runs[0]["id"].as_i64().unwrap().to_string();
    let exported = farm.fsynclab().args(["export", &id, "--store", &pg]).output().unwrap();
    let run: Value = serde_json::from_slice(&exported.stdout).unwrap();
    common::assert_matches_schema(&run);
    assert_eq!(run["environment"]["host"]["name"], "n1");
    assert!(
        run["environment"]["host"]["job"]
            .as_str()
            .is_some_and(|j| j.starts_with("slurm:")),
        "{}",
        run["environment"]["host"]
    );
    // Each task left its log.
    let logs = common::leftovers(&farm.work().join("fsynclab-logs"));
    assert_eq!(logs.len(), 4, "{logs:?}");
    // Resumed when complete: nothing submitted, the table printed.
    let out = farm
        .fsynclab()
        .args(["matrix", "--resume", "m1", "--store", &pg])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(stderr(&out).contains("every run is made"), "{}", stderr(&out));
    assert!(stdout(&out).contains("record_size=8k"));
}

/// Issue 17: two nodes each run records its node.
pub fn two_nodes_each_run_records_its_node() {
    let farm = Farm::up(&["--postgres", "--slurm", "2"]);
    let pg = farm.database("slurm2");
    // Each run on any node: both nodes take runs, and each run says which.
    let out = farm
        .tiny_matrix(2)
        .args(["--engine", "slurm", "--store", &pg])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = matrix_runs(&farm, &pg, "m1");
    assert_eq!(runs.len(), 4);
    let hosts: BTreeSet<&str> = runs.iter().map(|r| r["host"].as_str().unwrap()).collect();
    assert_eq!(hosts, BTreeSet::from(["n1", "n2"]), "the cells ran on both nodes");
    // The whole matrix on every node: host is an axis, the table has a row per host, and
    // every run was made on the host of its cell.
    let out = farm
        .tiny_matrix(1)
        .args(["--engine", "slurm", "--per-host", "--store", &pg])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    eprintln!("{text}");
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("n1 ") || l.starts_with("n2 "))
        .collect();
    assert_eq!(rows.len(), 2, "a row per host:\n{text}");
    let runs = matrix_runs(&farm, &pg, "m2");
    assert_eq!(runs.len(), 4);
    for r in &runs {
        assert_eq!(r["host"].as_str(), cell_value(r, "host"), "{r}");
    }
    // One host's runs, by filter.
    let out = farm
        .fsynclab()
        .args([
            "runs", "--host", "n2", "--matrix", "m2", "--format", "json", "--store", &pg,
        ])
        .output()
        .unwrap();
    let n2: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(n2.len(), 2);
}

/// Issue 17: a failed task is reported with its Slurm job and log and resume submits it alone.
pub fn a_failed_task_is_reported_with_its_slurm_job_and_log_and_resume_submits_it_alone() {
    let farm = Farm::up(&["--postgres", "--slurm", "1"]);
    let pg = farm.database("failing");
    // Two cells: index 0 takes 200 ms, index 1 6 s; the second task is cancelled as it runs.
    let mut child = Process::new(common::bin())
        .current_dir(farm.work())
        .env("SLURM_CONF", &farm.env["SLURM_CONF"])
        .args([
            "matrix",
            "fsync-tps",
            "--axis",
            "duration=200ms,6s",
            "--repeat",
            "1",
            "--dir",
            ".",
        ])
        .args(["--set", "threads=1", "--set", "coordination=none"])
        .args(["--engine", "slurm", "--store", &pg])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = common::StderrLines::of(&mut child);
    let submitted = lines.wait_for_containing("runs 2 of its runs", &mut child, Duration::from_secs(60));
    let job = submitted
        .split("Slurm job ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_string();
    let task = format!("{job}_1");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let state = farm
            .slurm("squeue")
            .args(["-h", "-j", &task, "-o", "%T"])
            .output()
            .unwrap();
        if stdout(&state).trim() == "RUNNING" {
            break;
        }
        assert!(Instant::now() < deadline, "task {task} never ran");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(farm.slurm("scancel").arg(&task).status().unwrap().success());
    let status = common::wait_at_most(&mut child, Duration::from_secs(60));
    let err = lines.all();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut text).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    let said = format!("duration=6s #1 made no run: Slurm job {task} on n1 CANCELLED");
    assert!(err.contains(&said), "{said}:\n{err}");
    let log = farm.work().join(format!("fsynclab-logs/m1-{task}.log"));
    assert!(err.contains(&format!("log {}", log.display())), "{err}");
    assert!(log.exists());
    assert!(err.contains("--resume m1"), "{err}");
    // The table shows the run that was made.
    assert!(text.contains("duration=200ms"), "{text}");
    assert_eq!(matrix_runs(&farm, &pg, "m1").len(), 1);
    // Resumed: only the missing run is submitted, and the table is whole.
    let out = farm
        .fsynclab()
        .args(["matrix", "--resume", "m1", "--store", &pg])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "{err}");
    assert!(err.contains("1 of 2 runs left"), "{err}");
    assert!(err.contains("runs 1 of its runs"), "{err}");
    assert!(
        text.contains("duration=200ms") && text.contains("duration=6s"),
        "{text}"
    );
    let runs = matrix_runs(&farm, &pg, "m1");
    assert_eq!(runs.len(), 2);
    assert_eq!(
        runs.iter().map(place).collect::<BTreeSet<_>>().len(),
        2,
        "each run once"
    );
}

/// Issue 24: with one of two slurmd killed, a task sat COMPLETING on the dead node and the
/// matrix printed nothing for minutes. Now the task is named with its node as soon as it
/// looks stuck, given up after a stated bound (`--stuck-limit`, 10 s here, against 60 s by
/// default), and the user told how to make its run on another node; a task waiting behind
/// it in the array is given up with it, not a minute later.
pub fn a_task_on_a_dead_node_is_given_up_with_its_node_and_how_to_resume_elsewhere() {
    let farm = Farm::up(&["--slurm", "2"]);
    let pid = std::fs::read_to_string(farm.dir.path().join("slurm/slurmd-n2.pid")).unwrap();
    assert!(Process::new("kill")
        .args(["-KILL", pid.trim()])
        .status()
        .unwrap()
        .success());
    let store = farm.work().join("runs.sqlite");
    let started = Instant::now();
    let out = farm
        .tiny_matrix(1)
        .args(["--nodes", "n2"])
        .arg("--store")
        .arg(&store)
        .args(["--engine", "slurm", "--stuck-limit", "10s"])
        .timeout(Duration::from_secs(240))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("looks stuck") && err.contains("on n2"), "{err}");
    assert!(err.contains("fsynclab waits up to 10 s more for it"), "{err}");
    // Both cells: the one on the dead node, given up on its own account, and the one that
    // waited for it (behind it in the array, or for the node itself, as Slurm says), given up
    // with it.
    let line = |cell: &str| {
        err.lines()
            .find(|l| l.contains(&format!("{cell} made no run: Slurm task")))
            .unwrap_or_else(|| panic!("{cell} is not reported:\n{err}"))
    };
    let task = |line: &str| {
        line.split("Slurm task ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .to_string()
    };
    let (first, second) = (line("record_size=4k #1"), line("record_size=8k #1"));
    let (first, second) = if first.contains("given up after") {
        (first, second)
    } else {
        (second, first)
    };
    assert!(first.contains("given up after 10 s"), "{err}");
    assert!(second.contains(&format!("given up with {}.", task(first))), "{err}");
    for line in [first, second] {
        assert!(
            line.contains("`fsynclab matrix --resume m1 --nodes n1` makes it elsewhere"),
            "{line}"
        );
    }
    // The first task is found stuck within about 20 s (14-19 s seen) and given up
    // --stuck-limit later. The second, behind it in the array, is given up with it: once it
    // got a clock of its own, from when Slurm says it waits for the dead node (about 60 s
    // in), and the matrix took 120 s with the default 60 s limit, at least 70 s with this one.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?} to give up:\n{err}",
        started.elapsed()
    );
}
