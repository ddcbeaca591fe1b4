//! The options of `fsynclab exec`: the testbed, a power cut and its check, the explanation
//! of the command's sync calls, the results store and the verdict on them.

use std::path::PathBuf;

use clap::Args;

use super::{ExplainArgs, RecordArgs, TargetArgs, VerdictArgs};
use crate::error::Usage;
use crate::explain::run::ExplainOptions;

/// `fsynclab exec [TARGET OPTIONS] -- COMMAND ARGS...`
#[derive(Debug, Args)]
pub struct ExecArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Also write the command's exit status and the environment, with what the emulated
    /// disk did, as JSON to FILE
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Cut the emulated disk's power while the command runs: after=DURATION, flushes=N,
    /// writes=N, random=DURATION or now; then keep=none|prefix|any|torn and seed=N (e.g.
    /// after=5s,keep=prefix). The command is stopped, the filesystem recovers from what the
    /// drive kept, and --check runs on it
    #[arg(long, value_name = "PLAN", help_heading = "Power cut")]
    pub cut: Option<String>,
    /// After the cut, run this shell command on the recovered filesystem (its working
    /// directory): its exit status is fsynclab's, its verdict on what survived
    // Needs --cut: said by `exec` in one line (clap would print its usage block).
    #[arg(long, value_name = "COMMAND", help_heading = "Power cut")]
    pub check: Option<String>,
    /// How long --check may run (default 10m): past it, it and what it started are stopped
    /// and fsynclab exits 124, as timeout(1) does
    #[arg(long, value_name = "DURATION", help_heading = "Power cut")]
    pub check_timeout: Option<String>,
    #[command(flatten)]
    pub explain: ExecExplainArgs,
    #[command(flatten)]
    pub record: RecordArgs,
    /// With --explain: the exit status is the verdict on the figures of the command's traced
    /// sync calls, e.g. 'fdatasync.p99<10ms' (etcd's rule for its WAL)
    #[command(flatten)]
    pub verdict: VerdictArgs,
    /// The command and its arguments, after `--`; it runs in the scratch filesystem with
    /// FSYNCLAB_DIR and FSYNCLAB_LOOP_DEVICE set
    // Required, but checked by `exec::run`, which says so in one line (clap would print
    // its usage block).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

/// `exec --explain`: the command's sync calls traced and explained, the run recorded.
#[derive(Debug, Default, Args)]
pub struct ExecExplainArgs {
    /// Trace the sync calls of the command and of every process and thread it starts (root;
    /// tracefs, or BPF with --tracer bpf), explain the slowest once it exits (report on
    /// stderr), and record the run in the results store as scenario `exec`
    #[arg(long, help_heading = "Explain")]
    pub explain: bool,
    /// With --explain: explain every call at least this slow [default: 100ms]
    #[arg(long, value_name = "DURATION", help_heading = "Explain")]
    pub explain_over: Option<String>,
    /// ...and the slowest PERCENT of each kind of call of each thread [default: 1%]
    #[arg(long, value_name = "PERCENT", help_heading = "Explain")]
    pub explain_slowest: Option<String>,
    /// With --explain: sample the writeback timeline this often [default: 100ms]
    #[arg(long, value_name = "DURATION", help_heading = "Explain")]
    pub timeline_interval: Option<String>,
    /// With --explain: what traces the command: bpf (its sync calls and durable writes,
    /// timed and split in the kernel, at a fraction of the cost), or tracefs (every system
    /// call of its processes read in user space) [default: bpf where it can run, else
    /// tracefs]
    #[arg(long, value_name = "TRACER", help_heading = "Explain")]
    pub tracer: Option<String>,
}

impl ExecExplainArgs {
    /// The explanation asked for, checked (an --explain that cannot work here, and an
    /// explain option without --explain, are refused in one line); `None` without --explain.
    pub(crate) fn options(&self) -> Result<Option<ExplainOptions>, Usage> {
        if !self.explain {
            let given = [
                ("--explain-over", &self.explain_over),
                ("--explain-slowest", &self.explain_slowest),
                ("--timeline-interval", &self.timeline_interval),
                ("--tracer", &self.tracer),
            ]
            .into_iter()
            .find(|(_, value)| value.is_some());
            return match given {
                Some((flag, _)) => Err(Usage(format!(
                    "exec {flag}: only with --explain, which traces the command's sync calls; add --explain"
                ))),
                None => Ok(None),
            };
        }
        let or = |value: &Option<String>, default: &str| value.clone().unwrap_or_else(|| default.to_string());
        let args = ExplainArgs {
            explain: true,
            no_explain: false,
            explain_over: or(&self.explain_over, "100ms"),
            explain_slowest: or(&self.explain_slowest, "1%"),
            timeline_interval: or(&self.timeline_interval, "100ms"),
            tracer: self.tracer.clone(),
        };
        args.options().map(|(options, _)| Some(options))
    }
}
