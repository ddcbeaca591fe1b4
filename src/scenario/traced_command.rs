//! What `fsynclab exec --explain -- COMMAND` measured, typed: not a scenario of ours but a
//! program's own sync calls, traced in the kernel (`explain::syscalls`). A result of
//! scenario `exec` holds the command line among its params, every sync call as a sample
//! with its kind and the name of the process that made it, and these details: the
//! command, how it ended, and the latency percentiles of each kind of call per process
//! name (`postgres` fdatasync, `pgbench`...), from which its table and findings are made.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub(crate) use super::process_calls::{self, ProcessCalls};
use super::{Measured, Table, Views};
use crate::measure::{LatencyHistogram, OpKind, OpStats, Sample};

/// The scenario name results of `exec --explain` carry.
pub(crate) const SCENARIO: &str = "exec";

/// A traced command's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Details {
    /// The command and its arguments, as given.
    pub(crate) command: Vec<String>,
    /// Its exit status, passed through (128 + N when signal N ended it).
    pub(crate) exit_status: i32,
    /// Each kind of sync call of each process name, by name then kind.
    pub(crate) by_process: Vec<ProcessCalls>,
}

impl Details {
    /// The details of `command`, ended with `exit_status`, from its traced calls.
    pub(crate) fn new(command: Vec<String>, exit_status: i32, samples: &[Sample]) -> Details {
        #[derive(Default)]
        struct Acc {
            latency: LatencyHistogram,
            errors: u64,
            bytes: u64,
        }
        let mut groups: BTreeMap<(String, OpKind), Acc> = BTreeMap::new();
        for s in samples {
            let name = s.process.map_or("?", |p| p.as_str()).to_string();
            let acc = groups.entry((name, s.op)).or_default();
            acc.latency.record(s.latency_ns);
            match s.error {
                Some(_) => acc.errors += 1,
                None => acc.bytes += s.bytes,
            }
        }
        let by_process = groups
            .into_iter()
            .map(|((process, op), acc)| ProcessCalls {
                process,
                op,
                stats: OpStats {
                    count: acc.latency.count(),
                    errors: acc.errors,
                    bytes: acc.bytes,
                    latency_ns: acc.latency.summary(),
                },
            })
            .collect();
        Details {
            command,
            exit_status,
            by_process,
        }
    }
}

impl Views for Details {
    fn tables(&self) -> Vec<Table> {
        vec![Table::of("sync calls by process".into(), &self.by_process)]
    }

    fn findings(&self) -> Vec<String> {
        let calls: u64 = self.by_process.iter().map(|p| p.stats.count).sum();
        let mut names: Vec<&str> = self.by_process.iter().map(|p| p.process.as_str()).collect();
        names.dedup();
        let mut out = vec![format!(
            "`{}` exited with status {}; {calls} sync calls traced in {} process name{}",
            self.command.join(" "),
            self.exit_status,
            names.len(),
            if names.len() == 1 { "" } else { "s" }
        )];
        out.extend(process_calls::slowest(&self.by_process));
        out
    }

    fn headline(&self, run: &Measured<'_>) -> String {
        format!("{} (exit {})", super::default_headline(run), self.exit_status)
    }

    /// A command has no seed to print like.
    fn seed_lines(&self, _: &Measured<'_>) -> Vec<String> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::TaskName;

    #[test]
    /// Issue 16.
    fn calls_are_grouped_by_process_name_and_kind() {
        let call = |process: &str, op: OpKind, latency_ns: u64| Sample {
            t_ns: 0,
            op,
            latency_ns,
            bytes: 0,
            error: None,
            process: Some(TaskName::new(process)),
            tid: 1,
        };
        let samples = [
            call("postgres", OpKind::Fdatasync, 8_000_000),
            call("postgres", OpKind::Fdatasync, 9_000_000),
            call("postgres", OpKind::Fsync, 30_000_000),
            call("pgbench", OpKind::Fsync, 1_000_000),
        ];
        let d = Details::new(vec!["pgbench".into(), "-c".into(), "4".into()], 0, &samples);
        let rows: Vec<(&str, OpKind, u64)> = d
            .by_process
            .iter()
            .map(|p| (p.process.as_str(), p.op, p.stats.count))
            .collect();
        assert_eq!(
            rows,
            [
                ("pgbench", OpKind::Fsync, 1),
                ("postgres", OpKind::Fdatasync, 2),
                ("postgres", OpKind::Fsync, 1)
            ]
        );
        let findings = d.findings();
        assert!(
            findings[0].starts_with("`pgbench -c 4` exited with status 0; 4 sync calls traced in 2 process names"),
            "{findings:?}"
        );
        assert!(
            findings[1].contains("a fsync of postgres took 30.000ms"),
            "{findings:?}"
        );
        let table = &d.tables()[0];
        assert_eq!(table.columns[0], "process");
        assert_eq!(table.rows.len(), 3);
    }
}
