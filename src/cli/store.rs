//! The options of the results store's commands: where the store is, and `runs`, `show`,
//! `export`, `compare`, `matrix`, `report` and `store copy`.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::{ListFormat, TableFormat, TargetArgs};

/// `--store PATH` for the commands that record runs, and `--no-store`.
#[derive(Debug, Default, Args)]
pub struct RecordArgs {
    /// Record the run in this results store, a file or postgres://USER@HOST/DB [default:
    /// $FSYNCLAB_STORE, else ~/.local/share/fsynclab/results.sqlite]
    #[arg(long, value_name = "PATH", help_heading = "Results store")]
    pub store: Option<PathBuf>,
    /// Do not record the run (FSYNCLAB_STORE=off does the same)
    #[arg(long, conflicts_with = "store", help_heading = "Results store")]
    pub no_store: bool,
}

/// `--store PATH` for the commands that read the store.
#[derive(Debug, Default, Args)]
pub struct StoreArg {
    /// The results store, a file or postgres://USER@HOST/DB [default: $FSYNCLAB_STORE, else
    /// ~/.local/share/fsynclab/results.sqlite]
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
  fsynclab runs --host n2 --store postgres://farm@db/fsynclab   the runs one host of a farm made
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
    /// Runs made on this host only (its name as `fsynclab runs` shows it)
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
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
                 pick out one cell: m3:device=ram,coordination=wal; host=NAME picks the runs
                 one host made, whether or not host is an axis of the matrix)
  a.json,b.json  result files
A run is the unit: calls of one run share journal commits and writeback, so the runs'
figures (ops/s, p50, p99, max of each kind, background MB/s, fsync-tps's commit.tps) are
compared, never the calls. Verdicts need at least 3 runs a side; 5 can reach p < 0.05.

Examples:
  fsynclab compare 3-7 8-12
  fsynclab compare m3:device=flush=5ms m3:device=flush=10ms --figure fdatasync.p50
  fsynclab compare m3:host=n1 m3:host=n2         one matrix on two hosts of a farm";

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
    /// Only the runs of both sets that this host made
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
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
`kernel=host,6.1.0-56-amd64` runs each cell on its kernel: host is this one, any other (an
installed release or a bzImage path, as --kernel takes them) is booted under QEMU for each
of its runs, on a scratch filesystem (ext4 unless --scratch says otherwise), and ended
after --kernel-timeout.

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
  fsynclab matrix overwrite-fsync --device hdd-7200 --axis kernel=host,6.1.0-56-amd64 --axis scratch=ext4,xfs
  fsynclab matrix --file seed002.toml
  fsynclab matrix --resume m3

On a farm (one PostgreSQL store for every host: --store postgres://USER@HOST/DB):
  fsynclab matrix fsync-tps --axis coordination=none,wal --engine slurm --partition lab
      one Slurm job array, a task per run (`fsynclab cell ID:INDEX` on its node,
      --exclusive), followed with a progress bar; the table when the array ends
  fsynclab matrix ... --engine slurm --per-host      the whole matrix on every node: host is
      an axis (the table's rows), one array per node
  fsynclab matrix --resume m3 --engine slurm        submits only the runs still missing
  fsynclab matrix ... --engine k8s --image REGISTRY/fsynclab --emit m.json
      a Kubernetes Indexed Job (privileged pods, one completion per run) for kubectl apply
A task that fails is reported with its Slurm job id and log. The cells get root from the
scheduler (jobs run as the submitting user), never from fsynclab.";

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
    /// Where the cells run: local (this host, one after another), slurm (a job array), k8s
    /// (an Indexed Job manifest, with --emit) [default: local, or the stored matrix's]
    #[arg(long, value_enum, help_heading = "Farm")]
    pub engine: Option<Engine>,
    /// The Slurm partition the array goes to
    #[arg(long, value_name = "P", help_heading = "Farm")]
    pub partition: Option<String>,
    /// The nodes the cells may run on (a comma-separated list) [default: any node of the
    /// partition]
    #[arg(long, value_name = "N1,N2,...", value_delimiter = ',', help_heading = "Farm")]
    pub nodes: Vec<String>,
    /// Run the whole matrix on every node: host becomes an axis (default: each run on any node)
    #[arg(long, help_heading = "Farm")]
    pub per_host: bool,
    /// The most runs at once (Slurm's --array=...%K; a Job's parallelism) [default: the
    /// number of nodes]
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..), help_heading = "Farm")]
    pub parallel: Option<u32>,
    /// --engine slurm: give up a task that looks stuck (its node does not respond, it has
    /// been COMPLETING for 30 s, Slurm holds it, or it waits for a node that is down) after
    /// this long more; the matrix then says how to make its run elsewhere [default: 60s]
    #[arg(long, value_name = "DURATION", help_heading = "Farm")]
    pub stuck_limit: Option<String>,
    /// Where the Slurm tasks' logs go [default: ./fsynclab-logs]
    #[arg(long, value_name = "DIR", help_heading = "Farm")]
    pub log_dir: Option<PathBuf>,
    /// --engine k8s: write the Indexed Job manifest to FILE
    #[arg(long, value_name = "FILE", help_heading = "Farm")]
    pub emit: Option<PathBuf>,
    /// --engine k8s: the container image with fsynclab in it
    #[arg(long, value_name = "IMAGE", help_heading = "Farm")]
    pub image: Option<String>,
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

/// `fsynclab cell ID:INDEX`, hidden: what a farm scheduler's task runs (Slurm's job script,
/// a Kubernetes Job's pods), not a command for users.
#[derive(Debug, Args)]
pub struct CellArgs {
    /// The stored matrix's id and the run's index in its plan's order (m3:5)
    #[arg(value_name = "ID:INDEX")]
    pub cell: String,
    /// No progress display on stderr
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub store: StoreArg,
}

/// Where a matrix's cells run (the farm's `Engine`, as `--engine` spells it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    /// This host, one run after another
    Local,
    /// A Slurm job array, a task per run
    Slurm,
    /// A Kubernetes Indexed Job, a completion per run (written with --emit)
    K8s,
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
    /// Only the runs this host made
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// The HTML file to write
    #[arg(long, short = 'o', value_name = "FILE", default_value = "fsynclab-report.html")]
    pub output: PathBuf,
    #[command(flatten)]
    pub store: StoreArg,
}

pub(super) const STORE_COPY_HELP: &str = "\
Every run keeps its unique id, when it was recorded, its result, its host, its place in a
matrix and its samples (their stored blocks, byte for byte); its number is TO's own. A run
TO has already is left alone, so copying twice copies once; each run goes in one
transaction. A matrix whose id TO uses for another matrix gets TO's next id.

Examples:
  fsynclab store copy ~/.local/share/fsynclab/results.sqlite postgres://me@farm-db/fsynclab
  fsynclab store copy postgres://me@farm-db/fsynclab farm.sqlite   (the farm's runs, offline)";

/// `fsynclab store ...`: commands on whole stores.
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Copy every run and matrix of store FROM into store TO (files or postgres:// addresses)
    #[command(after_help = STORE_COPY_HELP)]
    Copy {
        /// The store to copy from
        #[arg(value_name = "FROM")]
        from: PathBuf,
        /// The store to copy into (made if it does not exist)
        #[arg(value_name = "TO")]
        to: PathBuf,
    },
}
