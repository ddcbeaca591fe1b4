//! A run's failures on its clock, as the text report and `fsynclab explain` print them beside
//! the timeline: which calls failed, when, with which error; when the background writer
//! stopped; and what failed below them — the emulated disk's injected faults, the state the
//! scratch filesystem was left in, what the kernel said about its device.

use std::collections::BTreeMap;

use crate::measure::{OpKind, Sample};
use crate::result::RunResult;
use crate::sys::Errno;

/// Times listed per kind of failure before the rest is summed up.
const TIMES_LISTED: usize = 8;

/// Words of the kernel's messages that say what became of a filesystem.
const STATE_WORDS: [&str; 6] = [
    "shut down",
    "read-only",
    "readonly",
    "aborting journal",
    "aborted",
    "error",
];

/// The lines, none when nothing failed.
pub(crate) fn lines(r: &RunResult) -> Vec<String> {
    let mut out = Vec::new();
    let failed = r.errors();
    if failed > 0 {
        let calls: u64 = r.ops.values().map(|o| o.count).sum();
        let groups = by_kind(&r.samples);
        if groups.is_empty() {
            out.push(format!(
                "failed calls: {failed} of {calls} (their times are with the run's samples, which this file leaves out)"
            ));
        } else {
            let listed: Vec<String> = groups
                .iter()
                .map(|((op, errno), starts)| format!("{op} {errno} x{} at {}", starts.len(), times(starts)))
                .collect();
            out.push(format!(
                "failed calls: {failed} of {calls}, on the run's clock: {}",
                listed.join("; ")
            ));
        }
    }
    if let Some(b) = r.background.as_ref().filter(|b| b.errors > 0) {
        let what = b.error.map_or_else(|| "a panic".to_string(), |e| e.name().into_owned());
        let at = b
            .error_at_ns
            .map(|t| format!(" at {:.3}s", t as f64 / 1e9))
            .unwrap_or_default();
        out.push(format!("background {} writer: stopped by {what}{at}", b.kind));
    }
    if let Some(line) = disk_line(r) {
        out.push(line);
    }
    if let Some(s) = &r.environment.scratch {
        if let Some(state) = &s.state_after_run {
            out.push(format!("the scratch {} was {state} after the run", s.fstype));
        }
        let said: Vec<&str> = s
            .kernel_messages
            .iter()
            .map(String::as_str)
            .filter(|m| STATE_WORDS.iter().any(|w| m.to_lowercase().contains(w)))
            .take(4)
            .collect();
        if !said.is_empty() && (!out.is_empty() || s.state_after_run.is_some()) {
            out.push(format!("the kernel said about {}: {}", s.loop_device, said.join(" | ")));
        }
    }
    out
}

/// Failed calls grouped by kind and error, each with the start times of its calls.
fn by_kind(samples: &[Sample]) -> BTreeMap<(OpKind, String), Vec<u64>> {
    let mut groups: BTreeMap<(OpKind, String), Vec<u64>> = BTreeMap::new();
    for s in samples {
        if let Some(e) = s.error {
            groups.entry((s.op, name(e))).or_default().push(s.t_ns);
        }
    }
    groups
}

fn name(e: Errno) -> String {
    e.name().into_owned()
}

/// `0.512s, 0.613s, 0.714s`, or the first few and the last.
fn times(starts: &[u64]) -> String {
    let s = |t: &u64| format!("{:.3}s", *t as f64 / 1e9);
    if starts.len() <= TIMES_LISTED {
        return starts.iter().map(s).collect::<Vec<_>>().join(", ");
    }
    let first: Vec<String> = starts[..TIMES_LISTED - 1].iter().map(s).collect();
    format!(
        "{}, ... the last at {}",
        first.join(", "),
        starts.last().map(s).unwrap_or_default()
    )
}

/// What the emulated disk failed on purpose, with the rules, when it failed anything.
fn disk_line(r: &RunResult) -> Option<String> {
    let profile = r.environment.device_profile.as_ref()?;
    let a = profile.activity.as_ref()?;
    let counts: Vec<String> = [
        (a.failed_writes, "write"),
        (a.failed_reads, "read"),
        (a.failed_flushes, "flush"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| {
        format!(
            "{n} {what}{}",
            if n == 1 {
                ""
            } else if what == "flush" {
                "es"
            } else {
                "s"
            }
        )
    })
    .collect();
    let mut parts = Vec::new();
    if !counts.is_empty() {
        let rules = profile.model.as_ref().map(|m| m.faults.join(",")).unwrap_or_default();
        let rules = if rules.is_empty() {
            String::new()
        } else {
            format!(" ({rules})")
        };
        parts.push(format!("failed {}{rules}", counts.join(", ")));
    }
    if a.refused_after_cut > 0 {
        parts.push(format!(
            "refused {} requests after its power was cut",
            a.refused_after_cut
        ));
    }
    (!parts.is_empty()).then(|| format!("below them: the emulated disk {}", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::environment::{DeviceActivity, DeviceProfileInfo, DiskModelInfo, ScratchInfo};
    use crate::measure::Recorder;

    fn eio() -> std::io::Result<()> {
        Err(std::io::Error::from_raw_os_error(libc::EIO))
    }

    fn result_with(samples: &[(OpKind, u64, bool)]) -> RunResult {
        let mut rec = Recorder::new();
        for &(op, t, failed) in samples {
            rec.record(op, t, 10, 4096, &if failed { eio() } else { Ok(()) });
        }
        let (ops, samples) = rec.into_parts();
        let mut r = crate::result::tests_support::empty_result();
        r.ops = ops;
        r.samples = samples;
        r
    }

    #[test]
    /// Issue 15.
    fn failed_calls_are_listed_by_kind_with_their_times_and_the_faults_below() {
        let mut r = result_with(&[
            (OpKind::Write, 100_000_000, false),
            (OpKind::Fsync, 512_000_000, true),
            (OpKind::Fsync, 613_000_000, true),
            (OpKind::Fsync, 714_000_000, false),
        ]);
        r.environment.device_profile = Some(DeviceProfileInfo {
            name: "nvme".into(),
            model: Some(DiskModelInfo {
                faults: vec!["fail=flush:after=6:times=2".into()],
                ..Default::default()
            }),
            activity: Some(DeviceActivity {
                failed_flushes: 2,
                ..Default::default()
            }),
            ..Default::default()
        });
        r.environment.scratch = Some(ScratchInfo {
            fstype: "ext4".into(),
            loop_device: "/dev/loop3".into(),
            state_after_run: Some("read-only".into()),
            kernel_messages: vec![
                "I/O error, dev loop3, sector 8 op 0x1:(WRITE)".into(),
                "EXT4-fs (loop3): Remounting filesystem read-only".into(),
            ],
            ..Default::default()
        });
        assert_eq!(
            lines(&r),
            [
                "failed calls: 2 of 4, on the run's clock: fsync EIO x2 at 0.512s, 0.613s",
                "below them: the emulated disk failed 2 flushes (fail=flush:after=6:times=2)",
                "the scratch ext4 was read-only after the run",
                "the kernel said about /dev/loop3: I/O error, dev loop3, sector 8 op 0x1:(WRITE) | EXT4-fs (loop3): Remounting filesystem read-only",
            ]
        );
    }

    #[test]
    fn a_run_without_failures_has_no_lines_and_many_times_are_cut() {
        assert!(lines(&result_with(&[(OpKind::Fsync, 1, false)])).is_empty());
        let many: Vec<(OpKind, u64, bool)> = (1..=20).map(|i| (OpKind::Fsync, i * 1_000_000_000, true)).collect();
        let line = &lines(&result_with(&many))[0];
        assert!(
            line.ends_with(
                "fsync EIO x20 at 1.000s, 2.000s, 3.000s, 4.000s, 5.000s, 6.000s, 7.000s, ... the last at 20.000s"
            ),
            "{line}"
        );
    }
}
