//! The testing farm (issue 17): a PostgreSQL results store, runs that know their host, and
//! matrices made by Slurm job arrays, tested on a real PostgreSQL server and a real Slurm
//! cluster (one node, then two: `slurmd -N n1`, `-N n2` on this machine) that
//! scripts/farm-up.sh brings up under a temporary directory, without systemd and beside any
//! PostgreSQL or Slurm already here, and scripts/farm-down.sh takes down on every way out of
//! a test (a [`Farm`] is dropped on a panic too). Debian's postgresql, slurm-wlm and munge,
//! which scripts/setup.sh installs, and root (the daemons run as their own users) are needed.
//!
//! One binary, its tests in modules under tests/farm/ by what they check: one-line errors and
//! farm-up.sh's ports (`options`), the PostgreSQL store (`postgres`), the Kubernetes manifest
//! (`k8s`) and matrices on Slurm (`slurm`); the farm they bring up is in `setup`.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;
#[path = "farm/k8s.rs"]
mod k8s;
#[path = "farm/options.rs"]
mod options;
#[path = "farm/postgres.rs"]
mod postgres;
#[path = "farm/setup.rs"]
mod setup;
#[path = "farm/slurm.rs"]
mod slurm;

use std::path::PathBuf;
use std::process::{Command as Process, Stdio};

use common::Need::{Root, That};

const POSTGRES: common::Need = That("PostgreSQL's server (Debian's postgresql)", has_postgres);
const SLURM: common::Need = That("Slurm and MUNGE (Debian's slurm-wlm and munge)", has_slurm);
const PYYAML: common::Need = That(
    "python3 with PyYAML (Debian's python3-yaml), to read the manifest",
    has_pyyaml,
);

common::tests! {
    // First: the longest (about 90 s, most of it waiting for Slurm), beside the others.
    slurm::a_task_on_a_dead_node_is_given_up_with_its_node_and_how_to_resume_elsewhere: [Root, SLURM],
    options::farm_options_and_unreachable_stores_are_one_line_errors,
    options::a_farm_picks_its_ports_only_while_no_other_farm_is_binding_its_own: [Root, POSTGRES],
    postgres::a_run_stored_in_postgres_reads_back_identical: [Root, POSTGRES],
    postgres::store_copy_round_trip_sqlite_postgres_sqlite_keeps_every_run: [Root, POSTGRES],
    postgres::eight_runs_write_one_new_postgres_store_at_once: [Root, POSTGRES],
    k8s::k8s_emit_writes_an_indexed_job_per_host: [Root, POSTGRES, PYYAML],
    k8s::k8s_emit_that_cannot_be_written_is_refused_before_the_matrix_is_stored: [Root, POSTGRES],
    slurm::a_matrix_on_slurm_prints_its_table_and_stores_runs_that_know_their_node: [Root, POSTGRES, SLURM],
    slurm::two_nodes_each_run_records_its_node: [Root, POSTGRES, SLURM],
    slurm::a_failed_task_is_reported_with_its_slurm_job_and_log_and_resume_submits_it_alone: [Root, POSTGRES, SLURM],
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
