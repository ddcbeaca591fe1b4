//! The command line as typed (clap definitions), and its reading into the typed settings
//! the rest of the program takes: [`TargetArgs::request`] (the testbed), [`ExplainArgs::options`]
//! (the explanation); scenario parameters are read by their scenario's plan.
//!
//! `mod.rs` holds the command list and the options every measuring command shares (the
//! target, the run, the explanation); `store.rs` those of the results store's commands
//! (runs, show, export, compare, matrix, report); `exec.rs` and `watch.rs` those of `exec`
//! and `watch`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod exec;
mod store;
mod target;
mod watch;

/// The formats live beside what prints them (the exporters, the matrix table); the
/// command line names them.
pub use crate::matrix::table::TableFormat;
pub use crate::report::Format;
pub use exec::{ExecArgs, ExecExplainArgs};
pub use store::{
    CellArgs, CompareArgs, Engine, ExportArgs, ExportFormat, MatrixArgs, RecordArgs, ReportArgs, RunsArgs, StoreArg,
    StoreCommand,
};
use store::{COMPARE_HELP, EXPORT_HELP, MATRIX_HELP, REPORT_HELP, RUNS_HELP, SHOW_HELP};
pub use target::{ExplainArgs, TargetArgs, VerdictArgs};
pub use watch::WatchArgs;
pub(crate) use watch::WATCH_HELP;

const AFTER_HELP: &str = "\
Examples:
  fsynclab suite --dir /mnt/test                  every scenario, scaled, with a summary (start here)
  fsynclab list                                   scenarios, their seeds and parameters
  fsynclab run overwrite-fsync --dir /mnt/test    seed 000: fsync behind a streaming writer
  fsynclab run random-writeback --set sleep=4s --format seed
  fsynclab run overwrite-fsync --set sync=fdatasync --set background=none
  fsynclab load random --dir /mnt/test --set duration=2m   (load for another tool)
  fsynclab probe --dir /mnt/test                  the cost of a bare flush there
  fsynclab run random-writeback -o r.json && fsynclab show r.json --format seed
  fsynclab run overwrite-fsync --scratch ext3:data=writeback --device hdd-5400   (as root)
  fsynclab probe --scratch ext4:nobarrier --device flush=20ms
  fsynclab exec --scratch ext4 --device hdd-5400 -- fio job.fio   (any program on the testbed)
  fsynclab exec --dir /var/lib/db --explain -- ./my-service       (its slowest syncs, explained)
  fsynclab list-devices                           emulated disks, their figures and sources
  fsynclab cleanup                                leftovers of a run killed with SIGKILL
  fsynclab runs --last 5                          what the results store holds
  fsynclab compare 3-7 8-12                       two sets of runs: faster, slower, or no difference
  fsynclab matrix fsync-tps --axis device=ram,hdd-7200 --axis coordination=none,wal   (as root)
  fsynclab matrix ... --engine slurm --store postgres://USER@HOST/DB   (a farm: see matrix --help)
  fsynclab reproduce                              does each seed's finding still hold here? (as root)
  fsynclab completions bash                       shell completion (manpages DIR: the man pages)

Sizes take 4k, 1M, 8G (binary); durations 250ms, 1s, 2m. Exit status: 0 success,
1 failure (including failed sync calls, which are reported), 2 bad input,
128+N stopped by signal N, e.g. 130 Ctrl-C, 143 SIGTERM (the partial result is still
printed, everything undone; `fsynclab cleanup` after a SIGKILL).

Scratch targets (--scratch, root): image file -> loop device -> mkfs -> mount, all under
BACKING/fsynclab-scratch-PID-*/, undone in reverse when the run ends (also on error,
Ctrl-C, SIGTERM); /run/fsynclab/PID.json (or $FSYNCLAB_STATE_DIR/PID.json) records what
is in place for `fsynclab cleanup`.
Device profiles: `fsynclab list-devices`.

Every run is recorded in the results store (~/.local/share/fsynclab/results.sqlite, or
--store PATH, or FSYNCLAB_STORE; --no-store or FSYNCLAB_STORE=off records nothing). A
store may be a PostgreSQL database, postgres://USER@HOST/DB (the password in the address or
in PGPASSWORD), which many hosts share; `fsynclab store copy FROM TO` moves runs between
stores.";

#[derive(Debug, Parser)]
#[command(
    name = "fsynclab",
    version,
    about = "Reproduce, measure and explain fsync latency on Linux",
    long_about = "Reproduce, measure and explain fsync latency on Linux.\n\n\
fsynclab runs the experiments of five Linux mailing-list threads (2007-2011) as named \
scenarios: a foreground prober times every write and sync call while a background writer \
loads writeback, and the report puts latency percentiles beside the writer's throughput.",
    after_help = AFTER_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every scenario with scaled defaults (under 3 minutes) and print a one-screen summary
    Suite(SuiteArgs),
    /// List every scenario: purpose, seed, parameters with defaults and the seed's values
    List {
        /// Show only this scenario
        scenario: Option<String>,
        /// Output format
        #[arg(long, value_enum, default_value_t = ListFormat::Text)]
        format: ListFormat,
    },
    /// Run a scenario and report every sync call
    Run {
        /// The scenario (see `fsynclab list`)
        scenario: String,
        #[command(flatten)]
        common: RunArgs,
    },
    /// Run only a background writer for `duration`, to load writeback under another program
    Load {
        /// Which writer: random (4 KiB random buffered writes) or stream (sequential overwrite)
        #[arg(value_enum)]
        kind: LoadKind,
        #[command(flatten)]
        common: RunArgs,
    },
    /// Fingerprint the environment and measure the cost of a bare flush there
    Probe {
        #[command(flatten)]
        common: RunArgs,
    },
    /// Run COMMAND on the testbed (working directory: the scratch filesystem), pass its exit
    /// status through, undo everything afterwards
    Exec(ExecArgs),
    /// Every emulated disk profile with its figures and where each comes from
    ListDevices,
    /// Print a run again, in any format: a stored run's id, or a result file
    #[command(after_help = SHOW_HELP)]
    Show {
        /// A run id as `fsynclab runs` lists it, or a JSON result file (`--output`, a suite's)
        #[arg(value_name = "RUN|FILE")]
        result: PathBuf,
        /// What to print on stdout
        #[arg(long, short = 'f', value_enum, default_value_t = Format::Text)]
        format: Format,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Print the slowest calls of a run with where their time went, and its writeback
    /// timeline: a stored run's id, or a result file
    Explain {
        /// A run id as `fsynclab runs` lists it, or a JSON result file (`--output`)
        #[arg(value_name = "RUN|FILE")]
        result: PathBuf,
        #[command(flatten)]
        store: StoreArg,
    },
    /// List the runs in the results store, oldest first
    #[command(after_help = RUNS_HELP)]
    Runs(RunsArgs),
    /// Write a stored run as its JSON result (schema-valid) or its samples as CSV
    #[command(after_help = EXPORT_HELP)]
    Export(ExportArgs),
    /// Compare two sets of runs figure by figure: medians, their ratio with a 95% interval,
    /// a p-value and a verdict (faster, slower, no difference)
    #[command(after_help = COMPARE_HELP)]
    Compare(CompareArgs),
    /// Run a scenario in every combination of configurations, repeated, and print seed 002's
    /// table: the best per row in bold, significant differences marked
    #[command(after_help = MATRIX_HELP)]
    Matrix(Box<MatrixArgs>),
    /// Run every seed's experiment on the configuration of its era and say, finding by
    /// finding, whether it still holds: published figure, measured figure, verdict and why
    /// (root)
    #[command(after_help = REPRODUCE_HELP)]
    Reproduce(ReproduceArgs),
    /// Write a self-contained HTML report (latency over time, CDFs, the matrix table)
    #[command(after_help = REPORT_HELP)]
    Report(ReportArgs),
    /// Commands on whole results stores: `store copy FROM TO`
    Store {
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// Remove what runs killed with SIGKILL left behind: mounts, loop devices, images, sysctls, work directories
    Cleanup,
    /// Print the shell completion script for SHELL on stdout
    #[command(after_help = "Examples:\n  \
fsynclab completions bash > /usr/share/bash-completion/completions/fsynclab\n  \
fsynclab completions zsh > ~/.zfunc/_fsynclab\n  \
fsynclab completions fish > ~/.config/fish/completions/fsynclab.fish\n\n\
scripts/install.sh installs the binary, the man pages and the bash completion in one step.")]
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write one man page per command into DIR (fsynclab.1, fsynclab-run.1, ...)
    #[command(after_help = "Examples:\n  \
fsynclab manpages /usr/local/share/man/man1 && man fsynclab-run\n  \
fsynclab manpages /tmp/man && man -l /tmp/man/fsynclab-exec.1")]
    Manpages {
        /// Where to write them (made if missing)
        dir: PathBuf,
    },
    /// Make one run of a stored matrix, the one at INDEX of its plan's order, into the store:
    /// what a farm scheduler's task runs (`matrix --engine slurm` and `k8s` start it)
    #[command(hide = true)]
    Cell(CellArgs),
    /// Print each slow sync call of running processes (or of the whole machine) with where
    /// its time went, as it happens, traced in the kernel with BPF (root)
    #[command(after_help = WATCH_HELP)]
    Watch(WatchArgs),
}

const REPRODUCE_HELP: &str = "\
Each seed's runs are stored as matrices of the results store named reproduceN-SEED (every
run of one reproduction: `fsynclab runs --grep reproduceN`); `fsynclab report --matrix
reproduceN-000 -o r.html` draws one, `fsynclab explain RUN` shows where a stall's time went.
--quick (the default) takes about 12 minutes and 2 to 4 runs a configuration; --full uses
the posts' sizes and durations where the machine allows, four runs a configuration, and
says first how long it takes and how much memory its emulated disks need. Every verdict
shows what it rests on (runs a side, the ratio's 95% interval, p) and is \"inconclusive\"
when the runs cannot decide it; the tally names those.
--kernel A,B makes every run on each kernel in turn (host is this one; any other is booted
under QEMU for each run, about a minute under TCG) and prints each finding's verdict and
figure on each side by side, with what changed: the verdicts, the main figure's ratio B/A,
and whether the runs can tell that from noise (Mann-Whitney, at least 3 runs a side). The
runs are stored with kernel= in their axes: `fsynclab compare
reproduceN-004-datasync:kernel=host reproduceN-004-datasync:kernel=6.1.0-56-amd64`.

Examples:
  fsynclab reproduce                          all five seeds, quick
  fsynclab reproduce 003 --format markdown    seed 003, as a table for a mailing list
  fsynclab reproduce --full --format json > reproduce.json
  fsynclab reproduce --show reproduce3 --format markdown   a stored one again, as a table
  fsynclab reproduce 000 004 --kernel 6.1.0-56-amd64,host   the findings on 6.1 and on this kernel";

/// `fsynclab reproduce [SEED...] [--quick|--full] [--format text|markdown|json]`
#[derive(Debug, Args)]
pub struct ReproduceArgs {
    /// The seeds to reproduce: 000 001 002 003 004 (or 0-4) [default: all]; SEED:GROUP
    /// makes one group of a seed's runs only (004:datasync)
    #[arg(value_name = "SEED")]
    pub seeds: Vec<String>,
    /// Runs of every configuration, instead of --quick's 2 to 4 or --full's 4 (5 a side is
    /// the fewest a change can be called from at p < 0.01)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100), conflicts_with = "show")]
    pub runs: Option<u32>,
    /// Scaled down to minutes (about 12 on a 2-core VM): 2 to 4 runs a configuration, as
    /// many as its verdicts need where runs are short (the default)
    #[arg(long, conflicts_with = "full")]
    pub quick: bool,
    /// The posts' sizes and durations where the machine allows, four runs a configuration
    #[arg(long)]
    pub full: bool,
    /// Seconds a configuration, every row produced: the tests' short configuration
    #[arg(long, hide = true, conflicts_with_all = ["quick", "full"])]
    pub smoke: bool,
    /// Print the rows of stored reproduction ID again (reproduce3), judged on its stored
    /// runs, in any --format; runs nothing
    #[arg(long, value_name = "ID", conflicts_with_all = ["quick", "full", "smoke"])]
    pub show: Option<String>,
    /// What to print on stdout
    #[arg(long, short = 'f', value_enum, default_value_t = ReproduceFormat::Text)]
    pub format: ReproduceFormat,
    /// Directory that holds the scratch directories [default: .]
    #[arg(long, value_name = "DIR")]
    pub backing: Option<PathBuf>,
    /// Make every run on each of these kernels, cell by cell in turn, and print each finding
    /// side by side with what changed: host (this one, no VM), an installed release or a
    /// bzImage path, as run's --kernel takes them (host,6.1.0-56-amd64); one value runs the
    /// whole reproduction on it
    #[arg(long, value_name = "K1,K2", conflicts_with = "show", help_heading = "Kernel")]
    pub kernel: Option<String>,
    /// End a --kernel guest that has not finished after this long, boot included [default:
    /// 5m plus 4 times its run's expected length, at most 30m]
    #[arg(long, value_name = "DURATION", value_parser = target::guest_time_limit, help_heading = "Kernel")]
    pub kernel_timeout: Option<String>,
    /// No progress lines on stderr
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Debug, Args)]
pub struct SuiteArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub record: RecordArgs,
    /// Write every scenario's JSON result and summary.json here [default: a new
    /// fsynclab-results-<timestamp> directory in the current directory]
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,
    /// Run the seeds' original sizes and durations (says how long and how much space first)
    #[arg(long)]
    pub full: bool,
    /// Set a parameter of one scenario, e.g. --set datasync.rounds=5, or of every scenario
    /// that has it, e.g. --set duration=5s (repeatable)
    #[arg(long = "set", short = 's', value_name = "[SCENARIO.]KEY=VALUE")]
    pub sets: Vec<String>,
    /// No progress display on stderr
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Make the exit status a verdict on the scenarios' figures, as `compare` names them:
    /// 'overwrite-fsync.fsync.p99<50ms' judges one scenario, 'fsync.p99<50ms' every
    /// scenario that has the figure (repeatable, all must hold). Exit status 0 met, 1 not
    /// met or a scenario did not end clean, 125 when a figure is missing or the --kernel did
    /// not boot, as `git bisect run` reads it
    #[arg(long, value_name = "[SCENARIO.]EXPR", help_heading = "Verdict")]
    pub expect: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub record: RecordArgs,
    /// Set a parameter, e.g. --set sleep=250ms --set sync=fdatasync (repeatable)
    #[arg(long = "set", short = 's', value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// What to print on stdout
    #[arg(long, short = 'f', value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Also write the JSON result to FILE (atomically), whatever --format is
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Keep the work directory and its files afterwards
    #[arg(long)]
    pub keep: bool,
    /// No progress display on stderr
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub explain: ExplainArgs,
    #[command(flatten)]
    pub verdict: VerdictArgs,
}

/// The forms of `fsynclab reproduce`'s table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReproduceFormat {
    /// A block per finding: claim, published figure and source, measured figure, verdict
    Text,
    /// One markdown table row per finding, ready for a mailing list
    Markdown,
    /// Every field of every row, with the runs behind it
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LoadKind {
    Random,
    Stream,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    Text,
    Json,
}

/// Every testbed flag of [`TargetArgs`] is a testbed `Key`, and the reverse: the matrix
/// takes every option `run` takes (issue 14).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::testbed::Key;
    use clap::CommandFactory;

    #[test]
    /// Issue 14.
    fn every_target_flag_is_a_testbed_key() {
        let cmd = Cli::command();
        let run = cmd.find_subcommand("exec").expect("exec");
        let flags: Vec<String> = run
            .get_arguments()
            .filter_map(|a| a.get_long())
            .filter(|l| {
                ![
                    "output",
                    "cut",
                    "check",
                    "check-timeout",
                    "help",
                    "explain",
                    "explain-over",
                    "explain-slowest",
                    "timeline-interval",
                    "tracer",
                    "store",
                    "no-store",
                    // The kernel is where the testbed runs, not a part of it (a matrix axis of its own).
                    "kernel",
                    "kernel-timeout",
                    // A verdict on the run, not a part of its testbed.
                    "expect",
                ]
                .contains(l)
            })
            .map(str::to_string)
            .collect();
        let keys: Vec<String> = Key::ALL.map(|k| k.name().to_string()).to_vec();
        assert_eq!(flags, keys);
    }
}
