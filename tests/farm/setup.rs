//! The farm a test brings up (scripts/farm-up.sh) and takes down however the test ends, and
//! what the farm tests read back from its stores: runs by uid, exports, a matrix's runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command as Process;

use serde_json::Value;

use crate::common;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A farm brought up for one test, and taken down when the test ends however it ends.
pub struct Farm {
    pub dir: tempfile::TempDir,
    pub env: BTreeMap<String, String>,
}

impl Farm {
    /// `scripts/farm-up.sh DIR ARGS`.
    pub fn up(args: &[&str]) -> Farm {
        let dir = Farm::new_dir();
        let out = Farm::up_command(&dir, args).output().unwrap();
        Farm::came_up(dir, args, out)
    }

    pub fn new_dir() -> tempfile::TempDir {
        tempfile::Builder::new().prefix("fsynclab-farm-").tempdir().unwrap()
    }

    pub fn up_command(dir: &tempfile::TempDir, args: &[&str]) -> Process {
        let mut up = Process::new(repo().join("scripts/farm-up.sh"));
        up.arg(dir.path()).args(args);
        up
    }

    /// The farm that `farm-up.sh DIR ARGS` printed `out` for.
    pub fn came_up(dir: tempfile::TempDir, args: &[&str], out: std::process::Output) -> Farm {
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
    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// A new, empty database of the farm's server, and its address.
    pub fn database(&self, name: &str) -> String {
        let url = &self.env["FARM_STORE"];
        let mut admin = postgres::Client::connect(url, postgres::NoTls).unwrap();
        admin.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        let (server, _) = url.rsplit_once('/').unwrap();
        format!("{server}/{name}")
    }

    /// fsynclab in the farm's working directory, with its Slurm configuration.
    pub fn fsynclab(&self) -> assert_cmd::Command {
        let mut cmd = common::fsynclab();
        cmd.current_dir(self.work());
        if let Some(conf) = self.env.get("SLURM_CONF") {
            cmd.env("SLURM_CONF", conf);
        }
        cmd
    }

    /// `fsynclab matrix fsync-tps` over two record sizes, each repeated `repeat` times, with
    /// runs that take well under a second ([`TINY_TPS`]), in the farm's working directory.
    pub fn tiny_matrix(&self, repeat: u32) -> assert_cmd::Command {
        let mut cmd = self.fsynclab();
        cmd.args(["matrix", "fsync-tps", "--axis", "record_size=4k,8k", "--repeat"])
            .arg(repeat.to_string())
            .args(["--dir", "."])
            .args(TINY_TPS);
        cmd
    }

    /// A Slurm client command of the farm's cluster.
    pub fn slurm(&self, program: &str) -> Process {
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
pub const TINY_TPS: &[&str] = &[
    "--set",
    "threads=1",
    "--set",
    "duration=200ms",
    "--set",
    "coordination=none",
];

/// The top-level keys whose values differ between two results (a whole result is too long
/// to print in a failure).
pub fn differing_keys(a: &Value, b: &Value) -> Vec<String> {
    let (a, b) = (a.as_object().unwrap(), b.as_object().unwrap());
    a.keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| k.to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

pub fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `fsynclab runs --format json` of a store, by uid, without the numbers the store gave.
pub fn runs_by_uid(farm: &Farm, store: &str) -> BTreeMap<String, Value> {
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
pub fn exports_by_uid(farm: &Farm, store: &str) -> BTreeMap<String, String> {
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
pub fn matrix_runs(farm: &Farm, store: &str, id: &str) -> Vec<Value> {
    let out = farm
        .fsynclab()
        .args(["runs", "--matrix", id, "--format", "json", "--store", store])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `[["record_size","4k"]] #1` of a listed run.
pub fn place(run: &Value) -> String {
    format!("{} #{}", run["matrix"]["cell"], run["matrix"]["repetition"])
}

pub fn cell_value<'a>(run: &'a Value, axis: &str) -> Option<&'a str> {
    run["matrix"]["cell"]
        .as_array()?
        .iter()
        .find(|pair| pair[0] == axis)
        .and_then(|pair| pair[1].as_str())
}

/// A child process killed and reaped when dropped.
pub struct Ended(pub std::process::Child);

impl Drop for Ended {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
