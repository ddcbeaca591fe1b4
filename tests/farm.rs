//! The testing farm (issue 17): a PostgreSQL results store, runs that know their host, and
//! matrices made by Slurm job arrays, tested on a real PostgreSQL server and a real Slurm
//! cluster (one node, then two: `slurmd -N n1`, `-N n2` on this machine) that
//! scripts/farm-up.sh brings up under a temporary directory, without systemd and beside any
//! PostgreSQL or Slurm already here, and scripts/farm-down.sh takes down on every way out of
//! a test (a [`Farm`] is dropped on a panic too). Debian's postgresql, slurm-wlm and munge,
//! which scripts/setup.sh installs, and root (the daemons run as their own users) are needed.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use common::Need::{Root, That};
use serde_json::Value;

const POSTGRES: common::Need = That("PostgreSQL's server (Debian's postgresql)", has_postgres);
const SLURM: common::Need = That("Slurm and MUNGE (Debian's slurm-wlm and munge)", has_slurm);
const PYYAML: common::Need = That(
    "python3 with PyYAML (Debian's python3-yaml), to read the manifest",
    has_pyyaml,
);

common::tests! {
    // First: the longest (about 90 s, most of it waiting for Slurm), beside the others.
    a_task_on_a_dead_node_is_given_up_with_its_node_and_how_to_resume_elsewhere: [Root, SLURM],
    farm_options_and_unreachable_stores_are_one_line_errors,
    a_farm_picks_its_ports_only_while_no_other_farm_is_binding_its_own: [Root, POSTGRES],
    a_run_stored_in_postgres_reads_back_identical: [Root, POSTGRES],
    store_copy_round_trip_sqlite_postgres_sqlite_keeps_every_run: [Root, POSTGRES],
    eight_runs_write_one_new_postgres_store_at_once: [Root, POSTGRES],
    k8s_emit_writes_an_indexed_job_per_host: [Root, POSTGRES, PYYAML],
    k8s_emit_that_cannot_be_written_is_refused_before_the_matrix_is_stored: [Root, POSTGRES],
    a_matrix_on_slurm_prints_its_table_and_stores_runs_that_know_their_node: [Root, POSTGRES, SLURM],
    two_nodes_each_run_records_its_node: [Root, POSTGRES, SLURM],
    a_failed_task_is_reported_with_its_slurm_job_and_log_and_resume_submits_it_alone: [Root, POSTGRES, SLURM],
}

fn has_postgres() -> bool {
    std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .any(|v| v.path().join("bin/initdb").exists())
}

fn has_slurm() -> bool {
    ["slurmctld", "slurmd", "sbatch", "munged"].iter().all(|tool| {
        std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
            .any(|d| d.join(tool).exists())
    })
}

fn has_pyyaml() -> bool {
    Process::new("python3")
        .args(["-c", "import yaml"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The documents of a YAML file, as JSON (through PyYAML's safe loader).
fn yaml_documents(path: &std::path::Path) -> Vec<Value> {
    let out = Process::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; json.dump([d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None], sys.stdout)",
        ])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "not YAML: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The Jobs of a manifest that `--engine k8s --emit` wrote: a JSON `List` of them, which a
/// YAML reader (as `kubectl` has) reads as the same one document.
fn manifest_jobs(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let list: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"));
    assert_eq!(
        yaml_documents(path),
        std::slice::from_ref(&list),
        "YAML reads it otherwise"
    );
    assert_eq!(list["apiVersion"], "v1", "{list}");
    assert_eq!(list["kind"], "List", "{list}");
    list["items"].as_array().unwrap().clone()
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A farm brought up for one test, and taken down when the test ends however it ends.
struct Farm {
    dir: tempfile::TempDir,
    env: BTreeMap<String, String>,
}

impl Farm {
    /// `scripts/farm-up.sh DIR ARGS`.
    fn up(args: &[&str]) -> Farm {
        let dir = Farm::new_dir();
        let out = Farm::up_command(&dir, args).output().unwrap();
        Farm::came_up(dir, args, out)
    }

    fn new_dir() -> tempfile::TempDir {
        tempfile::Builder::new().prefix("fsynclab-farm-").tempdir().unwrap()
    }

    fn up_command(dir: &tempfile::TempDir, args: &[&str]) -> Process {
        let mut up = Process::new(repo().join("scripts/farm-up.sh"));
        up.arg(dir.path()).args(args);
        up
    }

    /// The farm that `farm-up.sh DIR ARGS` printed `out` for.
    fn came_up(dir: tempfile::TempDir, args: &[&str], out: std::process::Output) -> Farm {
        let mut farm = Farm {
            dir,
            env: BTreeMap::new(),
        };
        assert!(
            out.status.success(),
            "farm-up.sh {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        farm.env = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        std::fs::create_dir(farm.work()).unwrap();
        farm
    }

    /// The working directory of the test's commands (and so of the Slurm jobs).
    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// A new, empty database of the farm's server, and its address.
    fn database(&self, name: &str) -> String {
        let url = &self.env["FARM_STORE"];
        let mut admin = postgres::Client::connect(url, postgres::NoTls).unwrap();
        admin.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        let (server, _) = url.rsplit_once('/').unwrap();
        format!("{server}/{name}")
    }

    /// fsynclab in the farm's working directory, with its Slurm configuration.
    fn fsynclab(&self) -> assert_cmd::Command {
        let mut cmd = common::fsynclab();
        cmd.current_dir(self.work());
        if let Some(conf) = self.env.get("SLURM_CONF") {
            cmd.env("SLURM_CONF", conf);
        }
        cmd
    }

    /// `fsynclab matrix fsync-tps` over two record sizes, each repeated `repeat` times, with
    /// runs that take well under a second ([`TINY_TPS`]), in the farm's working directory.
    fn tiny_matrix(&self, repeat: u32) -> assert_cmd::Command {
        let mut cmd = self.fsynclab();
        cmd.args(["matrix", "fsync-tps", "--axis", "record_size=4k,8k", "--repeat"])
            .arg(repeat.to_string())
            .args(["--dir", "."])
            .args(TINY_TPS);
        cmd
    }

    /// A Slurm client command of the farm's cluster.
    fn slurm(&self, program: &str) -> Process {
        let mut cmd = Process::new(program);
        cmd.env("SLURM_CONF", &self.env["SLURM_CONF"]);
        cmd
    }
}

impl Drop for Farm {
    fn drop(&mut self) {
        let down = Process::new(repo().join("scripts/farm-down.sh"))
            .arg(self.dir.path())
            .status();
        // Nothing of the farm may be left running (its daemons name the directory).
        let left = Process::new("pgrep")
            .args(["-f", &format!("{}/", self.dir.path().display())])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        if !std::thread::panicking() {
            assert!(down.is_ok_and(|s| s.success()), "farm-down.sh failed");
            assert!(left.is_empty(), "processes of the farm left running: {left}");
        }
    }
}

/// The parameters of a run of fsync-tps that takes well under a second.
const TINY_TPS: &[&str] = &[
    "--set",
    "threads=1",
    "--set",
    "duration=200ms",
    "--set",
    "coordination=none",
];

/// The top-level keys whose values differ between two results (a whole result is too long
/// to print in a failure).
fn differing_keys(a: &Value, b: &Value) -> Vec<String> {
    let (a, b) = (a.as_object().unwrap(), b.as_object().unwrap());
    a.keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| k.to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `fsynclab runs --format json` of a store, by uid, without the numbers the store gave.
fn runs_by_uid(farm: &Farm, store: &str) -> BTreeMap<String, Value> {
    let out = farm
        .fsynclab()
        .args(["runs", "--format", "json", "--store", store])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let runs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    runs.into_iter()
        .map(|mut r| {
            let uid = r["uid"].as_str().unwrap().to_string();
            r.as_object_mut().unwrap().remove("id");
            (uid, r)
        })
        .collect()
}

/// Every run of a store, by uid, as `export` writes it (its samples included).
fn exports_by_uid(farm: &Farm, store: &str) -> BTreeMap<String, String> {
    let out = farm
        .fsynclab()
        .args(["runs", "--format", "json", "--store", store])
        .output()
        .unwrap();
    let runs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    runs.iter()
        .map(|r| {
            let id = r["id"].as_i64().unwrap().to_string();
            let out = farm
                .fsynclab()
                .args(["export", &id, "--store", store])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
            (r["uid"].as_str().unwrap().to_string(), stdout(&out))
        })
        .collect()
}

/// The runs of matrix `id` as `runs --matrix ID --format json` lists them.
fn matrix_runs(farm: &Farm, store: &str, id: &str) -> Vec<Value> {
    let out = farm
        .fsynclab()
        .args(["runs", "--matrix", id, "--format", "json", "--store", store])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `[["record_size","4k"]] #1` of a listed run.
fn place(run: &Value) -> String {
    format!("{} #{}", run["matrix"]["cell"], run["matrix"]["repetition"])
}

fn cell_value<'a>(run: &'a Value, axis: &str) -> Option<&'a str> {
    run["matrix"]["cell"]
        .as_array()?
        .iter()
        .find(|pair| pair[0] == axis)
        .and_then(|pair| pair[1].as_str())
}

/// Issue 17: farm options and unreachable stores are one-line errors.
fn farm_options_and_unreachable_stores_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let one_line = |args: &[&str], says: &str| {
        let mut cmd = common::fsynclab();
        cmd.current_dir(dir.path()).args(args);
        let out = cmd.assert().code(2).get_output().clone();
        let err = stderr(&out);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        err
    };
    let m = ["matrix", "fsync-tps", "--axis", "coordination=none,wal", "--dry-run"];
    one_line(
        &[&m[..], &["--partition", "lab"]].concat(),
        "--partition is for --engine slurm",
    );
    let k8s = [
        "matrix",
        "fsync-tps",
        "--axis",
        "coordination=none,wal",
        "--engine",
        "k8s",
    ];
    one_line(&k8s, "--engine k8s writes a manifest for kubectl: give --emit FILE");
    one_line(
        &[&k8s[..], &["--emit", "m.json"]].concat(),
        "--engine k8s: give --image IMAGE",
    );
    one_line(
        &[&m[..], &["--stuck-limit", "10s"]].concat(),
        "--stuck-limit is for --engine slurm",
    );
    for (limit, says) in [
        ("soon", "--stuck-limit soon: "),
        ("0s", "--stuck-limit 0s: expected more than 0s"),
    ] {
        one_line(&[&m[..], &["--engine", "slurm", "--stuck-limit", limit]].concat(), says);
    }
    one_line(&["cell", "m1", "--store", "x.sqlite"], "expected ID:INDEX");
    one_line(
        &[&k8s[..], &["--image", "i", "--emit", "m.json", "--store", "x.sqlite"]].concat(),
        "which pods cannot share",
    );
    // Slurm's commands missing: said before anything is stored or submitted.
    let mut cmd = common::fsynclab();
    cmd.current_dir(dir.path())
        .env("PATH", dir.path())
        .args([
            "matrix",
            "fsync-tps",
            "--axis",
            "coordination=none,wal",
            "--engine",
            "slurm",
        ])
        .args(["--store", "farm.sqlite"]);
    let err = stderr(cmd.assert().code(2).get_output());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("--engine slurm: sbatch is not on the PATH"), "{err}");
    assert_eq!(common::leftovers(dir.path()), Vec::<String>::new(), "nothing stored");
    // A server that does not answer: said in one line, the password never shown.
    let err = one_line(
        &["runs", "--store", "postgres://farm:s3cret@127.0.0.1:1/fsynclab"],
        "results store postgres://farm@127.0.0.1:1/fsynclab",
    );
    assert!(err.contains("check that PostgreSQL runs there"), "{err}");
    assert!(!err.contains("s3cret"), "{err}");
    // The dry run says where the cells go.
    let out = common::fsynclab()
        .current_dir(dir.path())
        .args(["matrix", "fsync-tps", "--axis", "coordination=none,wal", "--dry-run"])
        .args(["--engine", "slurm", "--nodes", "n1,n2", "--partition", "lab"])
        .output()
        .unwrap();
    assert!(
        stdout(&out).contains("placement slurm: each run on any of n1,n2, partition lab"),
        "{}",
        stdout(&out)
    );
}

/// Two farms coming up at once (two of these tests at a time) must not both pick a port that
/// neither listens on yet: farm-up.sh holds a machine-wide lock from picking its ports until
/// its daemons listen. Held here, the farm's PostgreSQL does not start until it is released.
fn a_farm_picks_its_ports_only_while_no_other_farm_is_binding_its_own() {
    let lock = "/run/lock/fsynclab-farm-ports.lock";
    // Another farm-up, as far as this one can tell: a process holding the lock, killed
    // however the test ends (the other farm tests wait for it).
    // One process (flock(1) with a command would leave the command holding it when killed).
    let hold = format!("exec 9>>{lock}; flock 9; exec sleep 600");
    let holder = Ended(Process::new("bash").args(["-c", &hold]).spawn().unwrap());
    let held = || {
        !Process::new("flock")
            .args(["-n", lock, "true"])
            .status()
            .unwrap()
            .success()
    };
    let since = Instant::now();
    while !held() {
        assert!(since.elapsed() < Duration::from_secs(10), "flock did not take {lock}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let dir = Farm::new_dir();
    let mut up = Farm::up_command(&dir, &["--postgres"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // initdb runs before the ports are picked; then farm-up.sh waits in flock(1).
    let pid = up.id().to_string();
    let waiting = || {
        Process::new("pgrep")
            .args(["-P", &pid, "-x", "flock"])
            .status()
            .unwrap()
            .success()
    };
    let since = Instant::now();
    while !waiting() && since.elapsed() < Duration::from_secs(60) && up.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_millis(50));
    }
    let was_waiting = waiting();
    std::thread::sleep(Duration::from_secs(1));
    let started = dir.path().join("pg/data/postmaster.pid").exists();
    let still_up = up.try_wait().unwrap().is_none();
    drop(holder);
    let out = up.wait_with_output().unwrap();
    let farm = Farm::came_up(dir, &["--postgres"], out);
    assert!(was_waiting, "farm-up.sh did not wait for the ports' lock");
    assert!(!started, "PostgreSQL started while another farm held the ports' lock");
    assert!(still_up, "farm-up.sh ended while another farm held the ports' lock");
    // Released, it comes up as usual, listening on the port it wrote to farm.env.
    let url = &farm.env["FARM_STORE"];
    let port = url.rsplit_once(':').unwrap().1.split('/').next().unwrap();
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let listens: String = client.query_one("SHOW port", &[]).unwrap().get(0);
    assert_eq!(listens, port);
}

/// A child process killed and reaped when dropped.
struct Ended(std::process::Child);

impl Drop for Ended {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Issue 17: a run stored in PostgreSQL reads back identical.
fn a_run_stored_in_postgres_reads_back_identical() {
    let farm = Farm::up(&["--postgres"]);
    let pg = farm.database("readback");
    let out = farm
        .fsynclab()
        .args(["run", "fsync-tps", "--dir", "."])
        .args(TINY_TPS)
        .args(["--output", "made.json", "--store", &pg])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("stored as run 1"), "{}", stderr(&out));
    let printed = stdout(&out);
    let made: Value = serde_json::from_slice(&std::fs::read(farm.work().join("made.json")).unwrap()).unwrap();
    let read = |args: &[&str]| {
        let out = farm.fsynclab().args(args).args(["--store", &pg]).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    // The whole result, every call's sample included, as the run wrote it (the file also
    // says where it was stored).
    let mut made = made;
    let stored = made.as_object_mut().unwrap().remove("stored").unwrap();
    assert_eq!(stored["run"], 1);
    assert!(made["samples"].as_array().is_some_and(|s| !s.is_empty()));
    for args in [&["show", "1", "--format", "json"][..], &["export", "1"]] {
        let back: Value = serde_json::from_str(&read(args)).unwrap();
        assert_eq!(differing_keys(&made, &back), Vec::<String>::new(), "{args:?}");
    }
    // The summary as the run printed it.
    assert_eq!(read(&["show", "1"]), printed);
    // Listed with the host that made it, and found by it.
    let host = made["environment"]["host"]["name"].as_str().unwrap();
    let listed: Vec<Value> = serde_json::from_str(&read(&["runs", "--format", "json"])).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["host"], host);
    assert_eq!(listed[0]["uid"], stored["uid"]);
    let by_host: Vec<Value> = serde_json::from_str(&read(&["runs", "--host", host, "--format", "json"])).unwrap();
    assert_eq!(by_host.len(), 1);
    let elsewhere: Vec<Value> =
        serde_json::from_str(&read(&["runs", "--host", "no-such-host", "--format", "json"])).unwrap();
    assert!(elsewhere.is_empty(), "{elsewhere:?}");
}

/// Issue 17: store copy round trip SQLite, PostgreSQL, SQLite keeps every run.
fn store_copy_round_trip_sqlite_postgres_sqlite_keeps_every_run() {
    let farm = Farm::up(&["--postgres"]);
    let work = farm.work();
    let a = work.join("laptop.sqlite").display().to_string();
    let c = work.join("back.sqlite").display().to_string();
    for _ in 0..2 {
        farm.fsynclab()
            .args(["run", "fsync-tps", "--quiet", "--dir", "."])
            .args(TINY_TPS)
            .args(["--store", &a])
            .assert()
            .success();
    }
    farm.tiny_matrix(1).args(["--quiet", "--store", &a]).assert().success();
    let pg = farm.database("roundtrip");
    let copy = |from: &str, to: &str| {
        let out = farm.fsynclab().args(["store", "copy", from, to]).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let said = copy(&a, &pg);
    assert!(said.contains("copied 4 runs and 1 matrix"), "{said}");
    assert!(!said.contains(&farm.env["FARM_STORE"]), "the password is shown: {said}");
    // Copying again copies nothing twice.
    assert!(copy(&a, &pg).contains("copied 0 runs and 0 matrices"));
    assert!(copy(&pg, &c).contains("copied 4 runs and 1 matrix"));
    // Every run, figure, host and place in the matrix, and every sample, is the same.
    let before = runs_by_uid(&farm, &a);
    assert_eq!(before.len(), 4);
    assert_eq!(before, runs_by_uid(&farm, &pg));
    assert_eq!(before, runs_by_uid(&farm, &c));
    let exported = exports_by_uid(&farm, &a);
    for other in [&pg, &c] {
        let theirs = exports_by_uid(&farm, other);
        assert_eq!(exported.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>());
        for (uid, text) in &exported {
            let (mine, back): (Value, Value) = (
                serde_json::from_str(text).unwrap(),
                serde_json::from_str(&theirs[uid]).unwrap(),
            );
            assert_eq!(
                differing_keys(&mine, &back),
                Vec::<String>::new(),
                "run {uid} in {other}"
            );
            assert!(*text == theirs[uid], "run {uid} in {other}: exported differently");
        }
    }
    for text in exported.values() {
        let run: Value = serde_json::from_str(text).unwrap();
        assert!(run["samples"].as_array().is_some_and(|s| !s.is_empty()));
        assert!(
            run["environment"]["host"]["name"].is_string(),
            "the run records its host"
        );
    }
    let table = |store: &str| {
        let out = farm
            .fsynclab()
            .args([
                "matrix", "--resume", "m1", "--format", "json", "--quiet", "--store", store,
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    assert_eq!(table(&a), table(&c));
    assert_eq!(table(&a), table(&pg));
}

/// Issue 17: eight runs write one new postgres store at once.
fn eight_runs_write_one_new_postgres_store_at_once() {
    let farm = Farm::up(&["--postgres"]);
    // A database without a store yet: the first runs also make its schema, at once.
    let pg = farm.database("eight");
    let children: Vec<_> = (0..8)
        .map(|_| {
            Process::new(common::bin())
                .current_dir(farm.work())
                .args(["run", "fsync-tps", "--quiet", "--dir", "."])
                .args(TINY_TPS)
                .args(["--store", &pg])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut said = BTreeSet::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert!(out.status.success(), "{err}");
        said.insert(
            err.lines()
                .find(|l| l.starts_with("stored as run "))
                .unwrap_or_else(|| panic!("{err}"))
                .to_string(),
        );
    }
    assert_eq!(said.len(), 8, "each run stored under its own id: {said:?}");
    let runs = runs_by_uid(&farm, &pg);
    assert_eq!(runs.len(), 8, "every run is stored");
    let out = farm
        .fsynclab()
        .args(["runs", "--format", "json", "--store", &pg])
        .output()
        .unwrap();
    let ids: BTreeSet<i64> = serde_json::from_slice::<Vec<Value>>(&out.stdout)
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, (1..=8).collect(), "ids from the database, none used up");
    // Four copies of those runs into another new store at once: each succeeds, and each
    // run is stored once.
    let file = farm.work().join("eight.sqlite").display().to_string();
    farm.fsynclab().args(["store", "copy", &pg, &file]).assert().success();
    let again = farm.database("copies");
    let copies: Vec<_> = (0..4)
        .map(|_| {
            Process::new(common::bin())
                .current_dir(farm.work())
                .args(["store", "copy", &file, &again])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in copies {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert_eq!(runs_by_uid(&farm, &again), runs);
}

/// Issue 17: `k8s --emit` writes an indexed job per host.
fn k8s_emit_writes_an_indexed_job_per_host() {
    let farm = Farm::up(&["--postgres"]);
    let pg = farm.database("k8s");
    let out = farm
        .fsynclab()
        .args([
            "matrix",
            "fsync-tps",
            "--axis",
            "coordination=none,wal",
            "--repeat",
            "2",
        ])
        .args([
            "--dir",
            "/var/tmp/fsynclab",
            "--engine",
            "k8s",
            "--per-host",
            "--nodes",
            "node-a,node-b",
        ])
        .args([
            "--image",
            "registry.example/fsynclab:1",
            "--emit",
            "m.json",
            "--store",
            &pg,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("8 runs as an Indexed Job in m.json"),
        "{}",
        stderr(&out)
    );
    // As Kubernetes reads it: a Job per host, one completion per run of that host, each pod
    // making its run with `fsynclab cell`.
    let text = std::fs::read_to_string(farm.work().join("m.json")).unwrap();
    let jobs = manifest_jobs(&farm.work().join("m.json"));
    assert_eq!(jobs.len(), 2, "a Job per host:\n{text}");
    let mut hosts = BTreeSet::new();
    for job in &jobs {
        assert_eq!(job["kind"], "Job");
        assert_eq!(job["apiVersion"], "batch/v1");
        assert_eq!(job["spec"]["completionMode"], "Indexed");
        assert_eq!(job["spec"]["completions"], 4, "2 cells x 2 repeats: {job}");
        let pod = &job["spec"]["template"]["spec"];
        hosts.insert(
            pod["nodeSelector"]["kubernetes.io/hostname"]
                .as_str()
                .unwrap()
                .to_string(),
        );
        assert_eq!(
            pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"],
            "kubernetes.io/hostname",
            "{job}"
        );
        let container = &pod["containers"][0];
        assert_eq!(container["image"], "registry.example/fsynclab:1");
        assert_eq!(container["securityContext"]["privileged"], true);
        let env = container["env"].as_array().unwrap();
        let env_of = |name: &str| {
            env.iter()
                .find(|e| e["name"] == name)
                .unwrap_or_else(|| panic!("no {name}: {job}"))
        };
        assert_eq!(env_of("FSYNCLAB_STORE")["valueFrom"]["secretKeyRef"]["key"], "url");
        assert_eq!(
            env_of("FSYNCLAB_HOST")["valueFrom"]["fieldRef"]["fieldPath"],
            "spec.nodeName"
        );
        let command = container["command"].as_array().unwrap();
        assert!(
            command.last().unwrap().as_str().unwrap().contains("fsynclab cell m1:"),
            "{command:?}"
        );
    }
    assert_eq!(hosts, BTreeSet::from(["node-a".to_string(), "node-b".to_string()]));
    let password = farm.env["FARM_STORE"]
        .split(':')
        .nth(2)
        .unwrap()
        .split('@')
        .next()
        .unwrap();
    assert!(!text.contains(password), "the store's password is in the manifest");
    // Resumed without --emit: what is stored, and how to make the rest.
    let out = farm
        .fsynclab()
        .args(["matrix", "--resume", "m1", "--store", &pg])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("8 of 8 runs are not stored yet"),
        "{}",
        stderr(&out)
    );
}

/// Issue 17: a matrix on Slurm prints its table and stores runs that know their node.
fn a_matrix_on_slurm_prints_its_table_and_stores_runs_that_know_their_node() {
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
fn two_nodes_each_run_records_its_node() {
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
fn a_failed_task_is_reported_with_its_slurm_job_and_log_and_resume_submits_it_alone() {
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
fn a_task_on_a_dead_node_is_given_up_with_its_node_and_how_to_resume_elsewhere() {
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

/// A tmpfs mounted for a test, unmounted however the test ends.
struct TinyTmpfs(PathBuf);

impl TinyTmpfs {
    /// A tmpfs of one page at `dir`, filled: a new file can be made there, not written.
    fn full(dir: PathBuf) -> TinyTmpfs {
        std::fs::create_dir(&dir).unwrap();
        let status = Process::new("mount")
            .args(["-t", "tmpfs", "-o", "size=4k", "fsynclab-test-full"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(status.success(), "mount tmpfs");
        let mounted = TinyTmpfs(dir);
        let filler = std::fs::write(mounted.0.join("filler"), vec![b'x'; 64 * 1024]);
        assert!(filler.is_err(), "the tmpfs took 64 KiB");
        mounted
    }
}

impl Drop for TinyTmpfs {
    fn drop(&mut self) {
        let _ = Process::new("umount").arg(&self.0).status();
    }
}

/// Issue 24, item 5: `--engine k8s --emit /dev/full` (or a file in a missing directory)
/// failed with exit status 1 only after the matrix was stored; mistakes are exit status 2,
/// in one line, before anything is stored. A write that fails after the matrix is stored
/// (the disk fills) leaves no part of the file.
fn k8s_emit_that_cannot_be_written_is_refused_before_the_matrix_is_stored() {
    let farm = Farm::up(&["--postgres"]);
    let pg = farm.database("emit");
    let emit = |file: &str| {
        farm.fsynclab()
            .args(["matrix", "fsync-tps", "--axis", "coordination=none,wal"])
            .args(["--engine", "k8s", "--image", "registry.example/fsynclab:1"])
            .args(["--emit", file, "--store", &pg])
            .output()
            .unwrap()
    };
    for (file, says) in [
        ("/dev/full", "--emit /dev/full: takes no writes ("),
        (
            "missing/m.json",
            "--emit missing/m.json: the directory missing does not exist",
        ),
    ] {
        let out = emit(file);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{file}: {err}");
        assert!(err.contains(says), "{file}: {err}");
    }
    assert!(!farm.work().join("missing").exists());
    // Nothing was stored: the first matrix stored is m1.
    let out = emit("m.json");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("fsynclab matrix m1: "), "{}", stderr(&out));
    assert!(std::fs::read_to_string(farm.work().join("m.json"))
        .unwrap()
        .contains(r#""kind": "Job""#));
    // The check passes (a file can be made there), the write fails once m2 is stored.
    let full = TinyTmpfs::full(farm.work().join("full"));
    let out = emit("full/m.json");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot write full/m.json"), "{}", stderr(&out));
    assert_eq!(
        common::leftovers(&full.0),
        vec!["filler".to_string()],
        "a part of the manifest is left"
    );
}
