//! A matrix as planned: the scenario, what every cell shares (parameters, testbed options),
//! the axes with their values, the repetitions, and where the cells run (this host, or a
//! scheduler's nodes: [`Placement`]). The plan is checked whole before anything runs — every
//! cell's parameters and testbed options — and stored with the matrix (as JSON) so that
//! `--resume` and a scheduler's tasks (`fsynclab cell`) run the same thing.
//!
//! `kernel` is an axis too: each cell on its kernel, another one booted for it ([`kernel`]).
//! `host` is an axis like the others: a cell with `host=n2` runs on the host of that name
//! only (as [`crate::environment::HostInfo::name`] names it), so that one configuration on
//! two hosts is two cells; `--per-host` makes the axis of every node.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::error::Usage;
use crate::scenario::planned::Planned;
use crate::scenario::{self, Scenario};
use crate::testbed::device::DeviceProfile;
use crate::testbed::scratch::ScratchSpec;
use crate::testbed::{Key, Spelling, TestbedRequest};
use crate::units::{parse_duration, parse_size};

/// The filesystem a device, scheduler or mkfs axis runs on when none is named: seed 002's
/// hosts ran ext4, and a newcomer's one command should just work.
pub(crate) const IMPLIED_SCRATCH: &str = "ext4";

/// The most runs a matrix plans without `--yes`: at a few seconds a run, a day of measuring.
pub(crate) const RUNS_WITHOUT_YES: u64 = 10_000;

/// The most runs a matrix plans at all: its cells and run order are built in memory.
pub(crate) const MAX_RUNS: u64 = 1_000_000;

/// Repetitions when none are asked for: with 5 runs a side the smallest two-sided p-value of
/// the rank test is 2/252 = 0.008, so a clear difference can be significant at 0.05; with
/// 3 it is 0.1 and nothing ever is.
pub(crate) const DEFAULT_REPEAT: u32 = 5;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Axis {
    pub(crate) key: String,
    pub(crate) values: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Plan {
    pub(crate) scenario: String,
    /// `--set` assignments every cell shares.
    pub(crate) sets: Vec<String>,
    /// Testbed options every cell shares, by [`Key`] name.
    pub(crate) target: Vec<(String, String)>,
    pub(crate) axes: Vec<Axis>,
    pub(crate) repeat: u32,
    /// The figures of the tables (none: the scenario's main figure).
    #[serde(default)]
    pub(crate) figures: Vec<String>,
    /// The axis of the table's columns (none: the last axis).
    #[serde(default)]
    pub(crate) columns: Option<String>,
    /// Whether `scratch` was added because a scratch-only axis or option needed it.
    #[serde(default)]
    pub(crate) implied_scratch: bool,
    /// Where the cells run (none: this host, one after another).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) placement: Option<Placement>,
    /// How long a guest of the kernel axis may take, boot included (`--kernel-timeout`;
    /// none: [`kernel::derived_guest_limit`] of the cell's run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) kernel_timeout: Option<String>,
    /// What made the matrix when `fsynclab matrix` did not: `fsynclab reproduce --quick`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) origin: Option<String>,
}

/// One cell: a value of every axis, in axis order.
pub(crate) type Cell = Vec<(String, String)>;

/// The axis of hosts: neither a testbed option nor a parameter, but where the cell runs.
pub(crate) const HOST_AXIS: &str = "host";

/// The axis of kernels: the kernel a cell runs on ([`kernel`]).
pub(crate) const KERNEL_AXIS: &str = "kernel";

/// Where a matrix's cells run, as its plan keeps it for `--resume`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Placement {
    /// `local`, `slurm` or `k8s`.
    pub(crate) engine: String,
    /// The Slurm partition, when one was named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) partition: Option<String>,
    /// The nodes the cells may run on (none: any of the partition's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) nodes: Vec<String>,
    /// Whether every node runs the whole matrix (the host axis is then the nodes).
    #[serde(default)]
    pub(crate) per_host: bool,
    /// The most cells running at once (Slurm's `%K`, a Job's parallelism).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) parallel: Option<u32>,
    /// The container image of a Kubernetes Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) image: Option<String>,
}

impl CellPlace for Cell {
    fn host(&self) -> Option<&str> {
        self.iter().find(|(k, _)| k == HOST_AXIS).map(|(_, v)| v.as_str())
    }
}

/// What a cell says about where it runs.
pub(crate) trait CellPlace {
    /// The host the cell must run on, when the matrix has a host axis.
    fn host(&self) -> Option<&str>;
}

/// A testbed option's name as [`Key::name`] spells it (`dirty_ratio` and `dirty-ratio` are
/// the same option); a parameter's name as given.
pub(crate) fn normalize_key(key: &str) -> String {
    Key::from_name(key).map_or_else(|| key.trim().to_string(), |k| k.name().to_string())
}

/// Splits an axis's values at commas, keeping together what belongs to one value: a
/// device's `KEY=VALUE` settings (`flush=5ms,write=80M`, `hdd-7200,flush=ignore`; a key the
/// value already has starts the next one: `flush=5ms,flush=20ms` is two devices), a scratch
/// filesystem's mount options (`ext4:data=writeback,nobarrier`) and a `bdi` value's knobs
/// (likewise: `max_bytes=4M,strict_limit=1,max_bytes=1M` is two values).
pub(crate) fn split_values(key: &str, text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for piece in text.split(',') {
        let joins_previous = match key {
            "device" => match (piece.trim().split_once('='), out.last()) {
                // `host` and `ram` take no settings: what follows them is the next device.
                (Some((k, _)), Some(last)) if !["host", "ram"].contains(&last.trim()) => !last
                    .split(',')
                    .any(|setting| setting.trim().split_once('=').is_some_and(|(had, _)| had == k)),
                _ => false,
            },
            "scratch" => ScratchSpec::parse(piece).is_err(),
            // A value of per-device limits ends where a knob comes again.
            "bdi" => out.last().is_some_and(|last| {
                let knob = |p: &str| p.split('=').next().unwrap_or("").trim().to_string();
                !last.split(',').any(|p| knob(p) == knob(piece))
            }),
            _ => false,
        };
        match out.last_mut() {
            Some(last) if joins_previous => {
                last.push(',');
                last.push_str(piece);
            }
            _ => out.push(piece.to_string()),
        }
    }
    out.into_iter().map(|v| v.trim().to_string()).collect()
}

impl Plan {
    pub(crate) fn scenario(&self) -> Result<&'static Scenario, Usage> {
        scenario::find(&self.scenario).ok_or_else(|| {
            Usage(format!(
                "unknown scenario '{}'; valid: {}",
                self.scenario,
                scenario::names()
            ))
        })
    }

    /// The runs the plan makes, counted without building its cells; `None` past `u64`.
    pub(crate) fn run_count(&self) -> Option<u64> {
        self.axes
            .iter()
            .try_fold(u64::from(self.repeat), |n, a| n.checked_mul(a.values.len() as u64))
    }

    /// Refuses, before its cells are built, a plan larger than [`RUNS_WITHOUT_YES`] unless
    /// `yes`, and one larger than [`MAX_RUNS`] in any case (issue 19: a 100×100×100 plan
    /// with `--repeat 1000 --dry-run` printed nothing for 10 minutes and took 16 GB).
    pub(crate) fn check_size(&self, yes: bool) -> Result<(), Usage> {
        let sizes: Vec<String> = self.axes.iter().map(|a| a.values.len().to_string()).collect();
        let what = format!(
            "{} cells x {} repetitions",
            if sizes.is_empty() {
                "1".to_string()
            } else {
                sizes.join(" x ")
            },
            self.repeat
        );
        let runs = self.run_count();
        let shown = runs.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string());
        match runs {
            Some(n) if n <= RUNS_WITHOUT_YES => Ok(()),
            Some(n) if n <= MAX_RUNS && yes => Ok(()),
            Some(n) if n <= MAX_RUNS => Err(Usage(format!(
                "matrix {}: {shown} runs ({what}), more than the {RUNS_WITHOUT_YES} a matrix makes unasked; give --yes to plan them, or fewer values",
                self.scenario
            ))),
            _ => Err(Usage(format!(
                "matrix {}: {shown} runs ({what}), more than the {MAX_RUNS} a matrix can plan; give fewer values or repetitions",
                self.scenario
            ))),
        }
    }

    /// Every combination of the axes' values, the first axis changing slowest.
    pub(crate) fn cells(&self) -> Vec<Cell> {
        let mut cells: Vec<Cell> = vec![Vec::new()];
        for axis in &self.axes {
            cells = cells
                .into_iter()
                .flat_map(|c| {
                    axis.values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.push((axis.key.clone(), v.clone()));
                        c
                    })
                })
                .collect();
        }
        cells
    }

    /// The runs in the order they are made: every cell once (repetition 0), then every
    /// cell again, and so on — round-robin, so drift of the machine hits all cells alike.
    ///
    /// On a farm where each run goes to any node, repetition R starts at cell R (mod the
    /// cells): a scheduler hands the runs to its idle nodes in this order, and with as many
    /// nodes as cells the same order every repetition kept each cell on one node (measured
    /// on a two-node cluster: all of one cell's runs on n1, all of the other's on n2), so
    /// that the table compared the nodes rather than the cells.
    pub(crate) fn order(&self) -> Vec<(u32, usize)> {
        let n = self.cells().len();
        let rotate = self.placement.as_ref().is_some_and(|p| p.engine != "local")
            && !self.axes.iter().any(|a| a.key == HOST_AXIS);
        (0..self.repeat)
            .flat_map(|rep| {
                let start = if rotate && n > 0 { rep as usize % n } else { 0 };
                (0..n).map(move |c| (rep, (start + c) % n))
            })
            .collect()
    }

    fn is_testbed(key: &str) -> bool {
        Key::from_name(key).is_some()
    }

    /// The `--set` assignments of a cell: the shared ones, then the cell's parameters.
    pub(crate) fn sets_for(&self, cell: &Cell) -> Vec<String> {
        let mut sets = self.sets.clone();
        sets.extend(
            cell.iter()
                .filter(|(k, _)| !Plan::is_testbed(k) && k != HOST_AXIS && k != KERNEL_AXIS)
                .map(|(k, v)| format!("{k}={v}")),
        );
        sets
    }

    /// The testbed of a cell: the shared options, then the cell's, read as `fsynclab run`
    /// reads its flags.
    pub(crate) fn target_for(&self, cell: &Cell) -> Result<TestbedRequest, Usage> {
        let mut options = Vec::new();
        for (k, v) in self.target.iter().chain(cell.iter()) {
            if let Some(key) = Key::from_name(k) {
                options.push((key, v.clone()));
            }
        }
        TestbedRequest::from_options(&options, Spelling::Assignment)
    }

    pub(crate) fn planned_for(&self, cell: &Cell) -> Result<Planned> {
        Planned::new(self.scenario()?, &self.sets_for(cell))
    }

    /// Checks the plan whole, and adds the implied scratch filesystem where a scratch-only
    /// option needs one. Every cell's parameters and testbed options are read as a run
    /// would read them, so a bad value stops the matrix before its first run.
    pub(crate) fn check(&mut self) -> Result<()> {
        let s = self.scenario()?;
        if self.axes.is_empty() {
            return Err(
                Usage("a matrix needs at least one --axis KEY=V1,V2 (see fsynclab matrix --help)".into()).into(),
            );
        }
        let params: Vec<&'static str> = s.params().iter().map(|p| p.name).collect();
        for (i, axis) in self.axes.iter().enumerate() {
            let place = [HOST_AXIS, KERNEL_AXIS].contains(&axis.key.as_str());
            if !Plan::is_testbed(&axis.key) && !params.contains(&axis.key.as_str()) && !place {
                return Err(Usage(format!(
                    "--axis {}: not a testbed option ({}), a parameter of {} ({}), host nor kernel",
                    axis.key,
                    Key::names(),
                    s.name(),
                    params.join(", ")
                ))
                .into());
            }
            if self.axes[..i].iter().any(|a| a.key == axis.key) {
                return Err(Usage(format!("--axis {}: the axis is given twice", axis.key)).into());
            }
            if axis.values.is_empty() || axis.values.iter().any(String::is_empty) {
                return Err(Usage(format!("--axis {}: an empty value", axis.key)).into());
            }
            same_value_twice(&axis.key, &axis.values, &s.params())?;
            if self.target.iter().any(|(k, _)| *k == axis.key)
                || self.sets.iter().any(|a| a.split('=').next() == Some(&axis.key))
            {
                return Err(Usage(format!(
                    "{}: both an axis and a setting of every cell; give it once",
                    axis.key
                ))
                .into());
            }
        }
        let keys: Vec<&str> = self
            .target
            .iter()
            .map(|(k, _)| k.as_str())
            .chain(self.axes.iter().map(|a| a.key.as_str()))
            .collect();
        let has = |k: &str| keys.contains(&k);
        self.check_kernels()?;
        let scratch_only = Key::ALL
            .into_iter()
            .find(|k| k.scratch_only() && has(k.name()))
            .map(Key::name)
            .or(self.boots_kernels().then_some(KERNEL_AXIS));
        if let (false, Some(key)) = (has("scratch"), scratch_only) {
            if has("dir") {
                return Err(Usage(format!(
                    "{key} needs a scratch filesystem, and dir names a directory: give --scratch FS instead of --dir"
                ))
                .into());
            }
            self.target.push(("scratch".into(), IMPLIED_SCRATCH.into()));
            self.implied_scratch = true;
        } else if has("scratch") && has("dir") {
            return Err(Usage(
                "dir and scratch exclude each other: a cell runs in a directory or on a scratch filesystem".into(),
            )
            .into());
        }
        for cell in self.cells() {
            let request = self.target_for(&cell)?;
            self.planned_for(&cell)?.check_testbed(&request)?;
        }
        Ok(())
    }

    /// Whether the cells make scratch filesystems or set sysctls, which needs root.
    pub(crate) fn needs_root(&self) -> bool {
        let keys = self
            .target
            .iter()
            .map(|(k, _)| k.as_str())
            .chain(self.axes.iter().map(|a| a.key.as_str()));
        keys.into_iter()
            .filter_map(Key::from_name)
            .any(|k| k == Key::Scratch || k.sysctl().is_some())
    }

    /// The first axis that implies the scratch filesystem, when one was implied.
    pub(crate) fn implying_axis(&self) -> Option<&str> {
        self.axes
            .iter()
            .find(|a| Key::from_name(&a.key).is_some_and(Key::scratch_only) || a.key == KERNEL_AXIS)
            .map(|a| a.key.as_str())
    }
}

/// What a value of axis `key` means, so that spellings of one value compare equal: `0`,
/// `0s` and `0ms` of a duration, `1G` and `1024M` of a size, a device profile however its
/// figures are written. Parsed as the parameter or testbed option takes it (exactly: the
/// parsed value's debug form, never a rounded display); text that does not parse stays text,
/// for [`Plan::check`] to refuse as the run would.
fn meaning(key: &str, value: &str, params: &[crate::params::ParamSpec]) -> String {
    let v = value.trim();
    let parsed = match Key::from_name(key) {
        Some(Key::ScratchSize) => parse_size(v).ok().map(|b| format!("{b:?}")),
        Some(Key::DirtyExpire) => parse_duration(v).ok().map(|d| format!("{d:?}")),
        Some(Key::DirtyRatio | Key::DirtyBackgroundRatio) => v.parse::<u64>().ok().map(|n| n.to_string()),
        // A profile by its figures: its name is how it was spelled.
        Some(Key::Device) => DeviceProfile::parse(v).ok().map(|d| match d {
            DeviceProfile::Emulated(p) => format!("{:?}", p.figures),
            other => format!("{other:?}"),
        }),
        Some(Key::Scratch) => ScratchSpec::parse(v).ok().map(|d| format!("{d:?}")),
        Some(_) => None,
        None => params
            .iter()
            .find(|p| p.name == key)
            .and_then(|p| crate::params::parse_value(&p.kind, v).ok())
            .map(|x| format!("{x:?}")),
    };
    parsed.unwrap_or_else(|| v.to_string())
}

/// Refuses an axis that names one value twice, however spelled (issue 19: `sleep=0,0s,0ms`
/// and `1G,1024M` became separate cells, the same configuration measured as if different).
fn same_value_twice(key: &str, values: &[String], params: &[crate::params::ParamSpec]) -> Result<(), Usage> {
    let mut seen: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
    for v in values {
        if let Some(first) = seen.insert(meaning(key, v, params), v) {
            let why = if first == v {
                format!("{v} is given twice")
            } else {
                format!("{first} and {v} are the same value")
            };
            return Err(Usage(format!("--axis {key}: {why}; give each value once")));
        }
    }
    Ok(())
}

mod kernel;
pub(crate) use kernel::{derived_guest_limit, DERIVED_LIMIT_TEXT};
#[cfg(test)]
mod tests;
