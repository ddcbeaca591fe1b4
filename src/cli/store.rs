//! The options of the results store's commands: where the store is, and `runs`, `show`,
//! `export`, `compare`, `matrix` and `report`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{ListFormat, TargetArgs};

/// `--store PATH` for the commands that record runs, and `--no-store`.
#[derive(Debug, Default, Args)]
pub struct RecordArgs {
    /// Record the run in this results store [default: $FSYNCLAB_STORE, else
    /// ~/.local/share/fsynclab/results.sqlite]
    #[arg(long, value_name = "PATH", help_heading = "Results store")]
    pub store: Option<PathBuf>,
    /// Do not record the run (FSYNCLAB_STORE=off does the same)
    #[arg(long, conflicts_with = "store", help_heading = "Results store")]
    pub no_store: bool,
}

/// `--store PATH` for the commands that read the store.
#[derive(Debug, Default, Args)]
pub struct StoreArg {
    /// The results store [default: $FSYNCLAB_STORE, else ~/.local/share/fsynclab/results.sqlite]
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
}

pub(super) const SHOW_HELP: &str = "\
Examples:
  fsynclab show 42                       run 42 of the results store, as `run` printed it
  fsynclab show 42 --format seed         the lines the seed's own program printed
  fsynclab show r.json --format json     a result file (--output, a suite's results directory)";

pub(super) const RUNS_HELP: &str = "\
Examples:
  fsynclab runs                          every stored run
  fsynclab runs --scenario fsync-tps --since 2026-11-01
  fsynclab runs --matrix m3              the runs of a matrix, with their cells
  fsynclab runs --param coordination=wal --grep hdd-7200 --last 10
  fsynclab runs --format json | jq '.[].id'";

#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Runs of this scenario only
    #[arg(long)]
    pub scenario: Option<String>,
    /// Runs started on or after this date or time (2026-11-22, 2026-11-22T08:00:00Z)
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Runs of this matrix only
    #[arg(long, value_name = "ID")]
    pub matrix: Option<String>,
    /// Runs with this parameter value (repeatable: all must hold)
    #[arg(long, value_name = "KEY=VALUE")]
    pub param: Vec<String>,
    /// Runs whose parameters, environment or matrix id contain this text, any case (repeatable):
    /// `--grep reproduce3` finds the runs of one `fsynclab reproduce`
    #[arg(long, value_name = "TEXT")]
    pub grep: Vec<String>,
    /// Only the newest N
    #[arg(long, value_name = "N")]
    pub last: Option<usize>,
    #[arg(long, short = 'f', value_enum, default_value_t = ListFormat::Text)]
    pub format: ListFormat,
    #[command(flatten)]
    pub store: StoreArg,
}

pub(super) const EXPORT_HELP: &str = "\
Examples:
  fsynclab export 42 -o run42.json        the whole result, samples included (schema/result-v1)
  fsynclab export 42 --format csv -o run42.csv   one line per call: t_ns,op,latency_ns,bytes,error";

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A run id as `fsynclab runs` lists it
    pub run: String,
    #[arg(long, short = 'f', value_enum, default_value_t = ExportFormat::Json)]
    pub format: ExportFormat,
    /// Write to FILE (atomically) instead of stdout
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// The result JSON, as `run --output` writes it
    Json,
    /// The samples, one call a line
    Csv,
}

pub(super) const COMPARE_HELP: &str = "\
A and B are each a set of runs, A the reference:
  42             one stored run (a single run a side gives figures, but no verdict)
  3-7            stored runs 3 to 7;   3,5,9-11   a list
  m3:device=ram  the runs of one cell of stored matrix m3 (name as many axes as it takes to
                 pick out one cell: m3:device=ram,coordination=wal)
  a.json,b.json  result files
A run is the unit: calls of one run share journal commits and writeback, so the runs'
figures (ops/s, p50, p99, max of each kind, background MB/s, fsync-tps's commit.tps) are
compared, never the calls. Verdicts need at least 3 runs a side; 5 can reach p < 0.05.

Examples:
  fsynclab compare 3-7 8-12
  fsynclab compare m3:device=flush=5ms m3:device=flush=10ms --figure fdatasync.p50";

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The reference set of runs
    #[arg(value_name = "A")]
    pub a: String,
    /// The set compared with it
    #[arg(value_name = "B")]
    pub b: String,
    /// Only this figure, e.g. fsync.p99, write.ops/s, commit.tps (repeatable)
    #[arg(long, value_name = "FIGURE")]
    pub figure: Vec<String>,
    /// Compare runs of different scenarios (refused otherwise: they measure different work)
    #[arg(long)]
    pub across_scenarios: bool,
    #[arg(long, short = 'f', value_enum, default_value_t = ListFormat::Text)]
    pub format: ListFormat,
    #[command(flatten)]
    pub store: StoreArg,
}

pub(super) const MATRIX_HELP: &str = "\
Axes: any testbed option (scratch, device, scheduler, mkfs-opts, scratch-size, dirty-ratio,
dirty-background-ratio, dirty-expire) and any parameter of the scenario. Values are split at
commas, except that a device's `write=RATE` and a scratch filesystem's mount options stay
with their value; repeat --axis KEY=VALUE to add a value with other commas. A device,
scheduler or mkfs axis runs on a scratch ext4 unless --scratch says otherwise (root).

Every repetition runs on a freshly made testbed; repetitions go round-robin over the cells
(cell 1, 2, ..., then again) so that drift of the machine hits every cell alike. Each run is
recorded in the results store as it ends, so an interrupted matrix loses nothing: `fsynclab
matrix --resume ID` runs what is left. The default of 5 repetitions is the fewest at which a
rank test can call a difference significant (p < 0.05); with 3 it never can. A plan of more
than 10000 runs needs --yes; 1000000 is the most. Values of an axis are compared as the
option or parameter reads them: `sleep=0,0s` names one value twice, and is refused.

A matrix file (TOML) holds the same:
  scenario = \"fsync-tps\"
  repeat = 5
  [set]
  threads = \"4\"
  [target]
  scratch = \"ext4\"
  [axes]
  device = [\"ram\", \"hdd-7200\"]
  coordination = [\"none\", \"wal\"]

Examples:
  fsynclab matrix fsync-tps --axis device=ram,hdd-7200 --axis coordination=none,wal --dry-run
  fsynclab matrix fsync-tps --axis device=ram,hdd-7200 --axis coordination=none,wal
  fsynclab matrix overwrite-fsync --scratch ext4 --axis scheduler=mq-deadline,bfq --repeat 7
  fsynclab matrix --file seed002.toml
  fsynclab matrix --resume m3";

#[derive(Debug, Args)]
pub struct MatrixArgs {
    /// The scenario (see `fsynclab list`)
    #[arg(required_unless_present_any = ["resume", "file"])]
    pub scenario: Option<String>,
    /// An axis and its values, e.g. --axis device=ram,hdd-7200 (repeatable)
    #[arg(long, value_name = "KEY=V1,V2,...")]
    pub axis: Vec<String>,
    /// Read the scenario, axes, settings and repetitions from a TOML file
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Runs of each cell [default: 5, the fewest that can show a significant difference]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: Option<u32>,
    /// Print the plan (cells, runs, time and space) and run nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Plan a matrix of more than 10000 runs (up to 1000000)
    #[arg(long)]
    pub yes: bool,
    /// Continue a stored matrix that was interrupted (or print its table when complete)
    #[arg(long, value_name = "ID", conflicts_with_all = ["scenario", "axis", "file", "repeat", "sets"])]
    pub resume: Option<String>,
    /// Set a parameter for every cell, e.g. --set threads=4 (repeatable)
    #[arg(long = "set", short = 's', value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    #[command(flatten)]
    pub target: TargetArgs,
    /// The figure of the table, e.g. commit.tps, fsync.p99 [default: the scenario's own,
    /// else the p99 of its main sync call] (repeatable: one table each)
    #[arg(long, value_name = "FIGURE")]
    pub figure: Vec<String>,
    /// The axis whose values are the table's columns [default: the last axis]
    #[arg(long, value_name = "AXIS")]
    pub columns: Option<String>,
    #[arg(long, short = 'f', value_enum, default_value_t = TableFormat::Text)]
    pub format: TableFormat,
    /// No progress display on stderr
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TableFormat {
    /// Aligned text, the best of a row in bold on a terminal and in [brackets] elsewhere
    Text,
    /// A GitHub markdown table, the best of a row in **bold**
    Markdown,
    /// The table's cells with their medians, run counts and comparisons
    Json,
}

pub(super) const REPORT_HELP: &str = "\
Examples:
  fsynclab report 42 43 -o flush.html     two runs: their timelines, and their CDFs overlaid
  fsynclab report 3-7,8-12 -o report.html
  fsynclab report --matrix m3 -o seed002.html   the table, and one run per cell (its median)
The page is one file with no scripts and nothing to fetch: it opens offline.";

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Runs: ids, ranges (3-7), lists (3,5,9) or result files
    #[arg(value_name = "RUN", required_unless_present = "matrix")]
    pub runs: Vec<String>,
    /// A stored matrix: its table, and the run of each cell with the median figure
    #[arg(long, value_name = "ID", conflicts_with = "runs")]
    pub matrix: Option<String>,
    /// The figure of the matrix table (as `fsynclab matrix --figure`)
    #[arg(long, value_name = "FIGURE", requires = "matrix")]
    pub figure: Option<String>,
    /// The HTML file to write
    #[arg(long, short = 'o', value_name = "FILE", default_value = "fsynclab-report.html")]
    pub output: PathBuf,
    #[command(flatten)]
    pub store: StoreArg,
}
