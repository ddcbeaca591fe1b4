//! The options every measuring command shares: where the I/O goes ([`TargetArgs`], read
//! into a typed [`TestbedRequest`]), whether to explain the slow calls ([`ExplainArgs`]),
//! and what the run is expected to measure ([`VerdictArgs`]).

use std::path::PathBuf;

use clap::Args;

use crate::error::Usage;
use crate::explain::attribution::Threshold;
use crate::explain::run::{ExplainOptions, TraceWish};
use crate::explain::tracer::TracerKind;
use crate::testbed::{Key, Spelling, TestbedRequest};
use crate::units::parse_duration;

/// Where the run's I/O goes: `--dir`, or a scratch filesystem made for the run.
#[derive(Debug, Default, Args)]
pub struct TargetArgs {
    /// Directory on the filesystem under test; fsynclab works in a new subdirectory of it
    #[arg(long, short = 'd', value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// Run on a scratch filesystem made for the run on a loop device (root): ext2, ext3,
    /// ext4, xfs, btrfs, with mount options after a colon (ext3:data=writeback, ext4:nobarrier)
    #[arg(
        long,
        value_name = "FS[:OPTS]",
        conflicts_with = "dir",
        help_heading = "Scratch target"
    )]
    pub scratch: Option<String>,
    /// Extra mkfs options for --scratch, e.g. "-b 1024" or "-J size=64"
    #[arg(
        long,
        value_name = "OPTS",
        allow_hyphen_values = true,
        help_heading = "Scratch target"
    )]
    pub mkfs_opts: Option<String>,
    /// Size of the scratch image [default: what the scenario needs plus a margin, at least 1G]
    #[arg(long, value_name = "SIZE", help_heading = "Scratch target")]
    pub scratch_size: Option<String>,
    /// Directory that holds the scratch image and mount point [default: .]
    #[arg(long, value_name = "DIR", help_heading = "Scratch target")]
    pub backing: Option<PathBuf>,
    /// I/O scheduler of the scratch loop device (none, mq-deadline, bfq, kyber), with
    /// tunables after a colon: bfq:slice_idle=8,low_latency=0
    #[arg(long, value_name = "NAME[:TUNABLE=VALUE,...]", help_heading = "Scratch target")]
    pub scheduler: Option<String>,
    /// Disk behind the scratch filesystem: host (default), ram, hdd-5400, hdd-7200, ssd-sata,
    /// nvme, san, nvme-consumer, nvme-plp, apple-m1, PROFILE,KEY=VALUE... (`fsynclab list-devices` shows their figures)
    #[arg(
        long,
        value_name = "PROFILE",
        long_help = crate::testbed::device::PROFILES_HELP,
        help_heading = "Scratch target"
    )]
    pub device: Option<String>,
    /// Per-device dirty limits of the scratch loop device, restored afterwards:
    /// strict_limit=0|1, max_bytes=SIZE, max_ratio=PERCENT, min_bytes=SIZE, min_ratio=PERCENT
    /// (/sys/class/bdi/MAJ:MIN/), e.g. strict_limit=1,max_bytes=4M
    #[arg(long, value_name = "KNOB=VALUE,...", help_heading = "Scratch target")]
    pub bdi: Option<String>,
    /// vm.dirty_ratio for the run (restored afterwards; root)
    #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u64).range(0..=100), help_heading = "Writeback sysctls")]
    pub dirty_ratio: Option<u64>,
    /// vm.dirty_background_ratio for the run (restored afterwards; root)
    #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u64).range(0..=100), help_heading = "Writeback sysctls")]
    pub dirty_background_ratio: Option<u64>,
    /// vm.dirty_expire_centisecs for the run, as a duration like 30s (restored afterwards; root)
    #[arg(long, value_name = "DURATION", help_heading = "Writeback sysctls")]
    pub dirty_expire: Option<String>,
    /// Run on this kernel, booted under QEMU with virtme-ng over the host's root: host (the
    /// default, no VM), an installed release (/boot/vmlinuz-K, /lib/modules/K), or a bzImage
    /// path; needs --scratch, whose disk the host serves to the guest
    #[arg(long, value_name = "K", help_heading = "Kernel")]
    pub kernel: Option<String>,
    /// End a --kernel guest that has not finished after this long, boot included [default:
    /// 5m plus 4 times the run's expected length, at most 30m; 30m where the length is not
    /// known (exec, a run as long as its device takes)]
    #[arg(long, value_name = "DURATION", value_parser = guest_time_limit, help_heading = "Kernel")]
    pub kernel_timeout: Option<String>,
}

impl TargetArgs {
    /// The testbed options given, as their text (`--dir .` is the default and left out).
    pub fn options(&self) -> Vec<(Key, String)> {
        let mut out = Vec::new();
        let mut put = |k: Key, v: Option<String>| {
            if let Some(v) = v {
                out.push((k, v));
            }
        };
        put(
            Key::Dir,
            (self.dir != std::path::Path::new(".") && !self.dir.as_os_str().is_empty())
                .then(|| self.dir.display().to_string()),
        );
        put(Key::Scratch, self.scratch.clone());
        put(Key::MkfsOpts, self.mkfs_opts.clone());
        put(Key::ScratchSize, self.scratch_size.clone());
        put(Key::Backing, self.backing.as_ref().map(|p| p.display().to_string()));
        put(Key::Scheduler, self.scheduler.clone());
        put(Key::Device, self.device.clone());
        put(Key::Bdi, self.bdi.clone());
        put(Key::DirtyRatio, self.dirty_ratio.map(|v| v.to_string()));
        put(
            Key::DirtyBackgroundRatio,
            self.dirty_background_ratio.map(|v| v.to_string()),
        );
        put(Key::DirtyExpire, self.dirty_expire.clone());
        out
    }

    /// The testbed these flags ask for, checked.
    pub fn request(&self) -> Result<TestbedRequest, Usage> {
        TestbedRequest::from_options(&self.options(), Spelling::Flag)
    }
}

/// `--expect`: the exit status as a verdict on the run's figures.
#[derive(Debug, Default, Args)]
pub struct VerdictArgs {
    /// Make the exit status a verdict on a figure of the run, as `compare` names it:
    /// 'fsync.p99<50ms', 'fsync.ops/s>=100', 'commit.tps>500' (repeatable, all must hold).
    /// Exit status 0 met, 1 not met, 125 when the run could not be made or the --kernel
    /// did not boot, as `git bisect run` reads it
    #[arg(long, value_name = "EXPR", help_heading = "Verdict")]
    pub expect: Vec<String>,
}

/// `--explain` and the timeline: what a run records to explain its slow calls.
#[derive(Debug, Default, Args)]
pub struct ExplainArgs {
    /// Trace the kernel and split each slow call into causes [default: on as root with
    /// tracefs]
    #[arg(long, overrides_with = "no_explain", help_heading = "Explain")]
    pub explain: bool,
    /// Do not trace the kernel (the timeline is still sampled)
    #[arg(long, overrides_with = "explain", help_heading = "Explain")]
    pub no_explain: bool,
    /// Explain every call at least this slow
    #[arg(long, value_name = "DURATION", default_value = "100ms", help_heading = "Explain")]
    pub explain_over: String,
    /// ...and the slowest PERCENT of each kind of call
    #[arg(long, value_name = "PERCENT", default_value = "1%", help_heading = "Explain")]
    pub explain_slowest: String,
    /// Sample the writeback timeline (dirty memory, PSI, the device's queue) this often
    #[arg(long, value_name = "DURATION", default_value = "100ms", help_heading = "Explain")]
    pub timeline_interval: String,
    /// What traces the kernel: bpf (sync calls, writes, and opens, closes, renames and
    /// truncates, split in the kernel as `fsynclab watch` does: far fewer events cross to
    /// user space), or tracefs (every kind of call, its events read in user space, the raw
    /// trace kept with FSYNCLAB_SAVE_TRACE) [default: bpf where it can run, else tracefs]
    #[arg(long, value_name = "TRACER", help_heading = "Explain")]
    pub tracer: Option<String>,
}

impl ExplainArgs {
    /// The explanation these flags ask for, and the line to print when tracing was left to
    /// its default and cannot work here.
    pub(crate) fn options(&self) -> Result<(ExplainOptions, Option<String>), Usage> {
        let duration =
            |flag: &str, text: &str| parse_duration(text).map_err(|e| Usage(format!("--{flag} {text}: {e}")));
        let over = duration("explain-over", &self.explain_over)?;
        let percent: f64 = self
            .explain_slowest
            .trim()
            .trim_end_matches('%')
            .parse()
            .ok()
            .filter(|p: &f64| (0.0..=100.0).contains(p))
            .ok_or_else(|| {
                Usage(format!(
                    "--explain-slowest {}: expected a percentage from 0 to 100, like 1%",
                    self.explain_slowest
                ))
            })?;
        let interval = duration("timeline-interval", &self.timeline_interval)?;
        if interval < std::time::Duration::from_millis(1) {
            return Err(Usage(format!(
                "--timeline-interval {}: at least 1ms",
                self.timeline_interval
            )));
        }
        let wish = match (self.explain, self.no_explain) {
            (_, true) => TraceWish::Declined,
            (true, false) => TraceWish::Asked,
            (false, false) => TraceWish::Default,
        };
        let threshold = Threshold {
            slowest_fraction: percent / 100.0,
            over_ns: over.as_nanos() as u64,
        };
        let tracer = match self.tracer.as_deref() {
            None => TracerKind::here(),
            Some("tracefs") => TracerKind::Tracefs,
            Some("bpf") => TracerKind::Bpf,
            Some(other) => return Err(Usage(format!("--tracer {other}: expected tracefs or bpf"))),
        };
        if let (Some(named), TraceWish::Declined) = (&self.tracer, wish) {
            return Err(Usage(format!(
                "--tracer {named} with --no-explain: nothing is traced; leave one of them out"
            )));
        }
        ExplainOptions::decide(wish, threshold, interval, tracer)
    }
}

/// `--kernel-timeout`'s value, checked as it is parsed: a duration longer than none (a
/// guest given no time would be ended as QEMU starts).
pub(crate) fn guest_time_limit(text: &str) -> Result<String, String> {
    match parse_duration(text) {
        Ok(d) if d.is_zero() => Err("expected more than 0s: the guest's boot alone takes tens of seconds".into()),
        Ok(_) => Ok(text.to_string()),
        Err(e) => Err(e.to_string()),
    }
}
