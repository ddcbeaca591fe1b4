//! The farm's options and unreachable stores are one-line errors, and farm-up.sh picks its
//! ports only while no other farm is binding its own.

use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use crate::setup::{stderr, stdout, Ended, Farm};

/// Issue 17: farm options and unreachable stores are one-line errors.
pub fn farm_options_and_unreachable_stores_are_one_line_errors() {
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
pub fn a_farm_picks_its_ports_only_while_no_other_farm_is_binding_its_own() {
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
