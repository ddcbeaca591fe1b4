//! Issues 17 and 24: `matrix --engine k8s --emit`. An Indexed Job a host, as Kubernetes reads
//! it, and a manifest that cannot be written refused before the matrix is stored.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command as Process;

use serde_json::Value;

use crate::common;
use crate::setup::{stderr, Farm};

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

/// Issue 17: `k8s --emit` writes an indexed job per host.
pub fn k8s_emit_writes_an_indexed_job_per_host() {
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
pub fn k8s_emit_that_cannot_be_written_is_refused_before_the_matrix_is_stored() {
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
