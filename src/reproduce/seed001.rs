//! Seed 001: Moyer and Goyal's CFQ yield for fsync (April 2010). iozone on small files with
//! fsync in the timing ran about 5x faster under deadline than under CFQ on 64 KB files and
//! about 10% faster on 8 MB ones, because the fsyncing process kept its CFQ time slice
//! (idling for its next request) while the journal thread waited to commit.
//!
//! Era: CFQ is gone; BFQ descends from it and idles the same way by default (`slice_idle`
//! 8 ms, `low_latency` on, as CFQ had them). So the rows set mq-deadline (deadline's
//! successor) against bfq, with `none` beside them and bfq with idling off
//! (`slice_idle=0`) to tell whether idling is what costs. Disks: a 7200 rpm SATA drive
//! (`hdd-7200`) and the seed's SAN (`san`); ext4.
//!
//! Verdict rules: the ratio deadline / bfq against the published deadline / CFQ ratio
//! ([`effect`]); the mechanism holds when turning BFQ's idling off speeds the fsyncing task
//! up as deadline did.

use super::causes;
use super::confidence::{adjust, decide, Estimate};
use super::experiment::{ids_text, Experiment, Group, Measured, Row, Size, Source};
use super::verdict::{effect, Judgement, Verdict, NOISE};
use crate::measure::stats::mean;
use crate::result::RunResult;
use crate::scenario::Details;
use crate::testbed::Key;
use crate::units::Bytes;

pub(crate) struct Seed001;

const FILE: &str = "001_6bda45e68733fee7.txt";
const CLAIM: Source = Source {
    file: FILE,
    lines: "11-17",
};
/// The cover letters' table, checked in SEEDS.md.
const TABLE: &str = "SEEDS.md, seed 001 (the v3/v4 cover letters' table)";

const DEADLINE: &str = "mq-deadline";
const BFQ: &str = "bfq";
const BFQ_NO_IDLE: &str = "bfq:slice_idle=0";

/// What changed since the post: BFQ's waker detection and injection.
const HISTORY: &str = "BFQ, CFQ's successor, detects the thread that wakes the fsyncing task (the journal) and injects its I/O while idling: commit c5089591c3ba, \"block, bfq: detect wakers and unconditionally inject their I/O\" (2019), made more robust by 71217df39dc6 (2021)";

impl Experiment for Seed001 {
    fn seed(&self) -> &'static str {
        "001"
    }

    fn title(&self) -> &'static str {
        "CFQ yield for fsync (Moyer/Goyal, April 2010)"
    }

    fn era(&self, size: Size) -> String {
        format!(
            "small-files in iozone mode (-e -i 0: write and rewrite with fsync, 4 KiB records) on ext4, 64 KiB and 8 MiB files, {} passes averaged a run, on hdd-7200 (SATA) and san; schedulers mq-deadline, bfq (slice_idle 8 ms and low_latency on, as CFQ had them), bfq:slice_idle=0, none",
            size.pick(3, 5)
        )
    }

    fn groups(&self, size: Size) -> Vec<Group> {
        vec![Group::new("small-files")
            .on(Key::Scratch, "ext4")
            .set("mode=iozone")
            .set("sizes=64k,8M")
            .set(format!("runs={}", size.pick(3, 5)))
            .set("record=4k")
            .quick_repeat(4)
            .axis("device", &["hdd-7200", "san"])
            .axis("scheduler", &[DEADLINE, BFQ, BFQ_NO_IDLE, "none"])]
    }

    fn rows(&self, m: &Measured) -> Vec<Row> {
        vec![
            versus(
                m,
                "hdd-7200",
                64 * Bytes::KIB,
                "deadline writes 64 KiB files with fsync faster than CFQ (SATA)",
                "SATA: deadline 1452 KB/s, CFQ 1323 KB/s (1.10x)",
                1452.0 / 1323.0,
                Some(TABLE),
            ),
            versus(
                m,
                "san",
                64 * Bytes::KIB,
                "deadline writes 64 KiB files with fsync about 5x faster than CFQ (SAN)",
                "SAN: deadline 35611 KB/s, CFQ 6725 KB/s (5.30x); \"a factor of about 5 for 64KB files\"",
                35611.0 / 6725.0,
                Some(TABLE),
            ),
            versus(
                m,
                "hdd-7200",
                8 * Bytes::MIB,
                "on 8 MiB files the gap shrinks to about 10%",
                "\"by about 10% for 8MB files\"",
                1.10,
                None,
            ),
            idling(m),
        ]
    }
}

/// iozone's write KB/s of `size` files in a run: the mean of its runs.
fn write_kbs(size: u64) -> impl Fn(&RunResult) -> Option<f64> {
    move |r| match &r.details {
        Some(Details::SmallFiles(d)) => d
            .iozone
            .iter()
            .find(|row| row.size == size)
            .filter(|row| !row.write_kbs.is_empty())
            .map(|row| mean(&row.write_kbs)),
        _ => None,
    }
}

/// deadline against bfq on `device` at `size`.
fn versus(m: &Measured, device: &str, size: u64, claim: &str, published: &str, ratio: f64, table: Option<&str>) -> Row {
    let row = match table {
        Some(t) => Row::new("001", claim).published_elsewhere(published, &format!("{t}; seeds/{CLAIM}")),
        None => Row::new("001", claim).published(published, &[CLAIM]),
    }
    .configuration(format!("iozone {} files on {device}, {DEADLINE} vs {BFQ}", size / 1024));
    let kbs = write_kbs(size);
    let (Some((d, mut ids)), Some((b, bfq_ids))) = (
        m.median("", &[("device", device), ("scheduler", DEADLINE)], &kbs),
        m.median("", &[("device", device), ("scheduler", BFQ)], &kbs),
    ) else {
        return row.judged(Judgement::unmeasured(&m.missing()));
    };
    ids.extend(bfq_ids);
    let none = m
        .median("", &[("device", device), ("scheduler", "none")], &kbs)
        .map(|(n, _)| format!(", none {n:.0}"))
        .unwrap_or_default();
    let why = m
        .runs("", &[("device", device), ("scheduler", BFQ)])
        .first()
        .and_then(|r| causes::summary(&r.result, "fsync"))
        .map(|s| format!("under bfq {s}"))
        .unwrap_or_default();
    let estimate = Estimate::of(
        &m.values("", &[("device", device), ("scheduler", BFQ)], &kbs),
        &m.values("", &[("device", device), ("scheduler", DEADLINE)], &kbs),
    );
    let mut judgement = match estimate {
        Some(e) => decide(&e, |r| effect(ratio, r, NOISE), NOISE),
        None => effect(ratio, d / b.max(1e-9), NOISE),
    }
    .and(&why);
    if judgement.verdict != Verdict::Reproduced && judgement.verdict.is_result() {
        judgement = judgement.and(HISTORY);
    }
    row.measured(
        format!("{DEADLINE} {d:.0} KB/s, {BFQ} {b:.0} KB/s{none} ({})", ids_text(&ids)),
        ids,
    )
    .judged(judgement)
}

/// Whether BFQ's idling is what costs the fsyncing task: bfq with slice_idle=0 against bfq.
fn idling(m: &Measured) -> Row {
    let row = Row::new(
        "001",
        "the cost is the fsyncing task's idle slice, which keeps the journal thread from committing",
    )
    .published(
        "\"iozone will issue an fsync() call, and will have to wait until it's CFQ timeslice has expired before the journal thread can run\"; yielding the slice brought CFQ in line with deadline (SAN: patched CFQ 35555 KB/s)",
        &[CLAIM],
    )
    .configuration(format!("iozone 64 KiB files on san and hdd-7200, {BFQ_NO_IDLE} vs {BFQ}"));
    let kbs = write_kbs(64 * Bytes::KIB);
    let mut parts = Vec::new();
    let mut ids = Vec::new();
    let mut estimates = Vec::new();
    for device in ["san", "hdd-7200"] {
        if let (Some((off, i1)), Some((on, i2))) = (
            m.median("", &[("device", device), ("scheduler", BFQ_NO_IDLE)], &kbs),
            m.median("", &[("device", device), ("scheduler", BFQ)], &kbs),
        ) {
            parts.push(format!("{device}: idling off {off:.0} KB/s, on {on:.0} KB/s"));
            let values = |scheduler: &str| m.values("", &[("device", device), ("scheduler", scheduler)], &kbs);
            estimates.extend(Estimate::of(&values(BFQ), &values(BFQ_NO_IDLE)));
            ids.extend(i1);
            ids.extend(i2);
        }
    }
    // The two disks' comparisons are made together: their p-values adjusted as one family.
    adjust(&mut estimates);
    let Some(largest) = estimates.iter().max_by(|a, b| a.ratio.total_cmp(&b.ratio)) else {
        return row.judged(Judgement::unmeasured(&m.missing()));
    };
    // The published effect of yielding the slice on the SAN: patched CFQ against CFQ.
    let mut judgement = decide(largest, |r| effect(35555.0 / 6725.0, r, NOISE), NOISE);
    judgement.why = format!("turning idling off: {}", judgement.why);
    if judgement.verdict != Verdict::Reproduced && judgement.verdict.is_result() {
        judgement = judgement.and(HISTORY);
    }
    row.measured(format!("{} ({})", parts.join("; "), ids_text(&ids)), ids)
        .judged(judgement)
}
