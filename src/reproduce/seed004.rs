//! Seed 004: Hifumi's "fdatasync should skip metadata writeout" (2007-2008). On ext3,
//! fdatasync committed the journal like fsync even when an overwrite changed only mtime;
//! skipping that commit when I_DIRTY_DATASYNC is clear made an 8 KiB overwrite +
//! fdatasync loop 264 s -> 253 s and sysbench rndwr 775 -> 1051 requests/s. A size change
//! or a block allocation must still be synced.
//!
//! Era: ext3 (data=ordered, now mounted by the ext4 driver) on a 7200 rpm drive
//! (`hdd-7200`; the post's Maxtor 6L160M0 was a 7200 rpm drive). The unpatched kernel's
//! fdatasync did what fsync does, so fsync stands for the "before" and fdatasync for the
//! "after": `datasync` measures both on overwrite and on append, and `rndwr` runs sysbench's
//! rndwr with fdatasync sweeps and with fsync sweeps.
//!
//! Verdict rules: the overwrite and sysbench gains by [`effect`] against the published
//! ratios; the append case holds when fdatasync gains nothing there (within 15% of fsync).

use super::confidence::{decide, Estimate};
use super::experiment::{ids_text, Experiment, Group, Measured, Row, Size, Source};
use super::verdict::{effect, Judgement, Verdict, NOISE};
use crate::result::RunResult;
use crate::scenario::datasync::Case;
use crate::scenario::Details;
use crate::sync::SyncMethod;
use crate::testbed::Key;

pub(crate) struct Seed004;

const FILE: &str = "004_dcb41300bb3f1839.txt";
const LOOP: Source = Source {
    file: FILE,
    lines: "187-195",
};
const METADATA: Source = Source {
    file: FILE,
    lines: "210-213",
};
const SYSBENCH: Source = Source {
    file: FILE,
    lines: "241, 261",
};

/// What changed since the post.
const HISTORY: &str = "fdatasync has skipped the journal commit when only timestamps changed since the patch of this thread was merged (2008); an overwrite in place is what it saves on";

impl Experiment for Seed004 {
    fn seed(&self) -> &'static str {
        "004"
    }

    fn title(&self) -> &'static str {
        "fdatasync should skip metadata writeout (Hifumi et al., 2007-2008)"
    }

    fn era(&self, size: Size) -> String {
        format!(
            "ext3 on hdd-7200: datasync (8 KiB write + fsync or fdatasync, overwrite and append, {} rounds of {}), and rndwr (sysbench fileio rndwr, 128 files, {} in all, {} threads, a sync sweep every 100 requests, {}) with fsync sweeps against fdatasync sweeps",
            size.pick(2, 5),
            size.pick("1 s", "3 s"),
            size.pick("256 MiB", "4 GiB (the post's 128 GB would not fit the emulated disk's memory)"),
            size.pick(16, 128),
            size.pick("10 s", "60 s")
        )
    }

    fn groups(&self, size: Size) -> Vec<Group> {
        let datasync = Group::new("datasync")
            .named("datasync")
            .on(Key::Scratch, "ext3")
            .on(Key::Device, "hdd-7200")
            .set("methods=fsync,fdatasync")
            .set("cases=overwrite,append")
            .set("write_size=8k")
            .set(format!("file_size={}", size.pick("8M", "64M")))
            .set(format!("rounds={}", size.pick(2, 5)))
            .set(format!("duration={}", size.pick("1s", "3s")))
            .quick_repeat(4)
            .figure("fdatasync.ops/s");
        let rndwr = Group::new("rndwr")
            .named("rndwr")
            .on(Key::Scratch, "ext3")
            .on(Key::Device, "hdd-7200")
            .set("files=128")
            .set(format!("total_size={}", size.pick("256M", "4G")))
            .set(format!("threads={}", size.pick(16, 128)))
            .set("fsync_freq=100")
            .set(format!("duration={}", size.pick("10s", "60s")))
            .quick_repeat(3)
            .axis("fsync_mode", &["fsync", "fdatasync"]);
        vec![datasync, rndwr]
    }

    fn rows(&self, m: &Measured) -> Vec<Row> {
        vec![overwrite(m), append(m), sysbench(m)]
    }
}

/// ops/s of `method` on `case` in a datasync run.
fn rate(case: Case, method: SyncMethod) -> impl Fn(&RunResult) -> Option<f64> {
    move |r| match &r.details {
        Some(Details::Datasync(d)) => d
            .cells
            .iter()
            .find(|c| c.case == case && c.method == method && c.elapsed_ns > 0)
            .map(|c| c.ops.saturating_sub(c.errors) as f64 / (c.elapsed_ns as f64 / 1e9)),
        _ => None,
    }
}

/// fdatasync's and fsync's median rates of `case`, the runs', and fdatasync against fsync
/// with its interval and p.
fn gain(m: &Measured, case: Case) -> Option<(f64, f64, Vec<i64>, Estimate)> {
    let (fdatasync, ids) = m.median("datasync", &[], rate(case, SyncMethod::Fdatasync))?;
    let (fsync, _) = m.median("datasync", &[], rate(case, SyncMethod::Fsync))?;
    let estimate = Estimate::of(
        &m.values("datasync", &[], rate(case, SyncMethod::Fsync)),
        &m.values("datasync", &[], rate(case, SyncMethod::Fdatasync)),
    )?;
    Some((fdatasync, fsync, ids, estimate))
}

fn overwrite(m: &Measured) -> Row {
    let row = Row::new(
        "004",
        "fdatasync of an overwrite in place skips the journal commit, so it beats fsync",
    )
    .published(
        "8 KiB write + fdatasync over a 8 GiB file: 264 s before, 253 s with the patch (1.04x)",
        &[LOOP],
    )
    .configuration("datasync overwrite on ext3, hdd-7200");
    judged_gain(m, row, Case::Overwrite, "overwrite fdatasync.ops/s", |estimate| {
        decide(estimate, |r| effect(264.0 / 253.0, r, NOISE), NOISE).and(HISTORY)
    })
}

fn append(m: &Measured) -> Row {
    let row = Row::new(
        "004",
        "a size change must still be synced: on append fdatasync costs what fsync does",
    )
    .published(
        "\"important metadata such as i_size, block-bitmap etc should be synched even if fdatasync is issued\" (no figure)",
        &[METADATA],
    )
    .configuration("datasync append on ext3, hdd-7200");
    // No gain is a claim of no difference (within 15%): a rate beyond that needs p.
    judged_gain(m, row, Case::Append, "append fdatasync.ops/s", |estimate| {
        decide(estimate, judge_no_gain, NO_GAIN_BAND)
    })
}

/// `row` measured on `case`: fdatasync's and fsync's median rates and their runs, the gain
/// of fdatasync over fsync as `judge` reads it, and fdatasync's rate in each run as
/// `figure`.
fn judged_gain(m: &Measured, row: Row, case: Case, figure: &str, judge: impl FnOnce(&Estimate) -> Judgement) -> Row {
    let Some((fdatasync, fsync, ids, estimate)) = gain(m, case) else {
        return row.judged(Judgement::unmeasured(&m.missing()));
    };
    row.measured(
        format!(
            "fdatasync {fdatasync:.0} ops/s, fsync {fsync:.0} ops/s ({})",
            ids_text(&ids)
        ),
        ids,
    )
    .judged(judge(&estimate))
    .figure(
        figure,
        "ops/s",
        m.values("datasync", &[], rate(case, SyncMethod::Fdatasync)),
    )
}

/// How close to fsync's rate fdatasync's must be on append to cost what fsync does.
const NO_GAIN_BAND: f64 = 0.15;

/// Whether fdatasync gains nothing over fsync (`ratio` = fdatasync / fsync): it must sync
/// the same metadata.
pub(crate) fn judge_no_gain(ratio: f64) -> Judgement {
    if !ratio.is_finite() {
        return Judgement::unmeasured("the ratio is not a number");
    }
    if (1.0 - NO_GAIN_BAND..=1.0 + NO_GAIN_BAND).contains(&ratio) {
        Judgement::new(
            Verdict::Reproduced,
            format!("fdatasync at {ratio:.2}x fsync's rate: it syncs the size and the new blocks as fsync does"),
        )
    } else if ratio > 1.0 + NO_GAIN_BAND {
        Judgement::new(
            Verdict::NotReproduced,
            format!(
                "fdatasync at {ratio:.2}x fsync's rate on append: it skips work fsync does even when the size changes"
            ),
        )
    } else {
        Judgement::new(
            Verdict::Reversed,
            format!("fdatasync at {ratio:.2}x fsync's rate: slower than fsync"),
        )
    }
}

fn sysbench(m: &Measured) -> Row {
    let row = Row::new(
        "004",
        "sysbench rndwr with fdatasync sweeps runs faster once fdatasync skips the journal",
    )
    .published("775.45 -> 1050.83 requests/s (1.36x)", &[SYSBENCH])
    .configuration("rndwr on ext3, hdd-7200, fdatasync sweeps vs fsync sweeps");
    let rps = |r: &RunResult| match &r.details {
        Some(Details::Rndwr(d)) => Some(d.summary.requests_per_s),
        _ => None,
    };
    let (Some((with_fdatasync, mut ids)), Some((with_fsync, more))) = (
        m.median("rndwr", &[("fsync_mode", "fdatasync")], rps),
        m.median("rndwr", &[("fsync_mode", "fsync")], rps),
    ) else {
        return row.judged(Judgement::unmeasured(&m.missing()));
    };
    ids.extend(more);
    // What one sync call of a sweep cost, the figure sysbench cannot show.
    let per_call = |mode: &str| {
        m.median("rndwr", &[("fsync_mode", mode)], |r| match &r.details {
            Some(Details::Rndwr(d)) if d.syncs.count > 0 => Some(d.syncs.latency_ns.p50 as f64),
            _ => None,
        })
        .map(|(ns, _)| crate::units::format_latency_ns(ns as u64))
    };
    let calls = match (per_call("fsync"), per_call("fdatasync")) {
        (Some(f), Some(d)) => format!("; a sweep's sync call took {f} (fsync) and {d} (fdatasync) at the median"),
        _ => String::new(),
    };
    let judgement = match Estimate::of(
        &m.values("rndwr", &[("fsync_mode", "fsync")], rps),
        &m.values("rndwr", &[("fsync_mode", "fdatasync")], rps),
    ) {
        Some(e) => decide(&e, |r| effect(1050.83 / 775.45, r, NOISE), NOISE),
        None => effect(1050.83 / 775.45, with_fdatasync / with_fsync.max(1e-9), NOISE),
    }
    .and(HISTORY);
    row.measured(
        format!(
            "fdatasync sweeps {with_fdatasync:.0} requests/s, fsync sweeps {with_fsync:.0}{calls} ({})",
            ids_text(&ids)
        ),
        ids,
    )
    .judged(judgement)
    .figure(
        "requests/s (fsync_mode=fdatasync)",
        "requests/s",
        m.values("rndwr", &[("fsync_mode", "fdatasync")], rps),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    /// Issue 20.
    fn on_append_fdatasync_must_gain_nothing() {
        assert_eq!(judge_no_gain(1.02).verdict, Verdict::Reproduced);
        assert_eq!(judge_no_gain(1.6).verdict, Verdict::NotReproduced);
        assert_eq!(judge_no_gain(0.5).verdict, Verdict::Reversed);
        assert_eq!(judge_no_gain(f64::NAN).verdict, Verdict::NotMeasured);
    }
}
