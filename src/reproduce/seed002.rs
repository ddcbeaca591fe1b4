//! Seed 002: Wong's fsync/flush coordination (September 2010). Across hosts, making the
//! first fsyncing thread wait for others so that one cache flush serves several paid off
//! only where a flush took more than about 8 ms; below, coordination cost throughput.
//!
//! Era: 2.6.36 ext4, many threads fsyncing; the flush time is what varies, so the emulated
//! disk's fixed flush cost is swept (`flush=0.5ms` ... `16ms`). `none` is the old behaviour
//! (each thread flushes alone); `wal` with `delay=avg-flush` is the seed's "use avg sync
//! time" (the leader waits the average flush time for followers, then one flush serves
//! the batch), and `wal` with `delay=0` a group commit that does not wait. The post's
//! thread count and transaction are not known: 8 threads, 4 KiB.
//!
//! Verdict rule ([`judge_crossover`]): coordination "wins" at a flush time when its tps is
//! more than 5% above none's and "loses" when more than 5% below. The crossover is the
//! smallest flush time from which it wins at every larger one. Within a factor 2 of 8 ms
//! with losses below it: reproduced; a crossover elsewhere, wins without losses below, or
//! losses at short flushes fading to even at long ones: partly; wins below and losses
//! above: reversed; otherwise not reproduced.

use super::confidence::{adjust, inconclusive, undecided, Estimate};
use super::experiment::{ids_text, Experiment, Group, Measured, Row, Size, Source};
use super::verdict::{Confidence, Judgement, Verdict};
use crate::result::RunResult;
use crate::scenario::fsync_tps::Coordination;
use crate::scenario::Details;
use crate::testbed::Key;

pub(crate) struct Seed002;

const FILE: &str = "002_88d9ce7873241268.txt";
const CLAIM: Source = Source {
    file: FILE,
    lines: "20-26",
};

/// The flush times swept, ms, as the device axis names them.
/// The seed's coordination: the first thread waits the average flush time for others.
const SEED_DELAY: &str = "avg-flush";

const FLUSH_MS: [(&str, f64); 6] = [
    ("flush=0.5ms", 0.5),
    ("flush=1ms", 1.0),
    ("flush=2ms", 2.0),
    ("flush=4ms", 4.0),
    ("flush=8ms", 8.0),
    ("flush=16ms", 16.0),
];

/// What changed since the post.
const HISTORY: &str = "no fsync coordination was merged in ext4; jbd2 already batches the fsyncs of concurrent threads into one commit, timed by its measured commit time (jbd2_journal_stop, as Dilger pointed out in the thread)";

impl Experiment for Seed002 {
    fn seed(&self) -> &'static str {
        "002"
    }

    fn title(&self) -> &'static str {
        "fsync/flush coordination (Wong, September 2010)"
    }

    fn era(&self, size: Size) -> String {
        format!(
            "fsync-tps on ext4, 8 threads each overwriting 4 KiB and calling fsync, {} each, none vs wal with delay=avg-flush (the seed's 'use avg sync time') and with delay=0, on a disk whose every flush costs 0.5, 1, 2, 4, 8 or 16 ms; {} runs a configuration",
            size.pick("1 s", "5 s"),
            match size {
                Size::Quick => 4,
                Size::Full => 3,
                Size::Smoke => 1,
            }
        )
    }

    fn groups(&self, size: Size) -> Vec<Group> {
        let devices: Vec<&str> = FLUSH_MS.iter().map(|(d, _)| *d).collect();
        vec![Group::new("fsync-tps")
            .on(Key::Scratch, "ext4")
            .set("threads=8")
            .set("coordination=none,wal")
            .set("sync=fsync")
            .set(format!("duration={}", size.pick("1s", "5s")))
            .quick_repeat(4)
            .axis("device", &devices)
            .axis("delay", &[SEED_DELAY, "0"])
            .figure("commit.tps")]
    }

    fn rows(&self, m: &Measured) -> Vec<Row> {
        vec![
            crossover(
                m,
                SEED_DELAY,
                "coordinating fsyncs (the first thread waits for others so one flush serves them) hurts below about 8 ms of flush time and helps above",
            ),
            crossover(
                m,
                "0",
                "the same crossover with group commit that does not wait (a leader flushes for whoever is queued)",
            ),
        ]
    }
}

/// The row of `delay`'s coordination against none, over the flush times.
fn crossover(m: &Measured, delay: &str, claim: &str) -> Row {
    let row = Row::new("002", claim)
        .published(
            "crossover at about 8 ms of average flush time: \"setups with low (< 8ms) flush times exhibit better performance when fsync coordination is not attempted\"",
            &[CLAIM],
        )
        .configuration(format!("fsync-tps, 8 threads, none vs wal with delay={delay}, flush 0.5-16 ms"));
    let mut points = Vec::new();
    let mut estimates = Vec::new();
    let mut ids = Vec::new();
    for (device, ms) in FLUSH_MS {
        let pick = [("device", device), ("delay", delay)];
        if let (Some((none, i)), Some((wal, _))) = (
            m.median("", &pick, tps(Coordination::None)),
            m.median("", &pick, tps(Coordination::Wal)),
        ) {
            let values = |c: Coordination| m.values("", &pick, tps(c));
            if let Some(e) = Estimate::of(&values(Coordination::None), &values(Coordination::Wal)) {
                points.push((ms, none, wal));
                estimates.push(e);
                ids.extend(i);
            }
        }
    }
    if points.is_empty() {
        return row.judged(Judgement::unmeasured(&m.missing()));
    }
    // The flush times' comparisons are made together: one family of p-values.
    adjust(&mut estimates);
    let shown: Vec<String> = points
        .iter()
        .zip(&estimates)
        .map(|((ms, none, wal), e)| {
            format!(
                "{ms} ms: {:.2}x [{:.2}, {:.2}] ({wal:.0}/{none:.0} tps)",
                e.ratio, e.low, e.high
            )
        })
        .collect();
    let ms: Vec<f64> = points.iter().map(|p| p.0).collect();
    let mut judgement = crossover_of_runs(&ms, &estimates);
    if judgement.verdict != Verdict::Reproduced && judgement.verdict.is_result() {
        judgement = judgement.and(HISTORY);
    }
    row.measured(format!("wal/none {} ({})", shown.join(", "), ids_text(&ids)), ids)
        .judged(judgement)
}

/// Where coordination wins, loses or neither, as [`judge_crossover`] reads a ratio.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Side {
    Loses,
    Neither,
    Wins,
}

impl Side {
    fn of(ratio: f64) -> Side {
        if ratio > 1.0 + CROSSOVER_BAND {
            Side::Wins
        } else if ratio < 1.0 - CROSSOVER_BAND {
            Side::Loses
        } else {
            Side::Neither
        }
    }

    /// A ratio [`judge_crossover`] reads as this side.
    fn ratio(self) -> f64 {
        match self {
            Side::Loses => 0.8,
            Side::Neither => 1.0,
            Side::Wins => 1.2,
        }
    }
}

/// The crossover rule on the runs: each flush time's wal/none ratio (`estimates`, at
/// `ms`) is on a side when its interval and p decide it ([`super::confidence`]), else on
/// any side its interval reaches (or neither, when only p is lacking). The verdict is
/// decided when every combination of the sides left open gives the same one.
fn crossover_of_runs(ms: &[f64], estimates: &[Estimate]) -> Judgement {
    let at_median = judge_crossover(&ms.iter().zip(estimates).map(|(m, e)| (*m, e.ratio)).collect::<Vec<_>>());
    let rule = |r: f64| {
        Judgement::new(
            match Side::of(r) {
                Side::Wins => Verdict::Reproduced,
                Side::Neither => Verdict::NotReproduced,
                Side::Loses => Verdict::Reversed,
            },
            "",
        )
    };
    let mut open = Vec::new();
    let sides: Vec<Vec<Side>> = ms
        .iter()
        .zip(estimates)
        .map(|(at, e)| match undecided(e, rule, CROSSOVER_BAND) {
            None => vec![Side::of(e.ratio)],
            Some(_) => {
                open.push(format!("{at} ms"));
                let (lo, hi) = if e.runs_a < 2 || e.runs_b < 2 {
                    (Side::Loses, Side::Wins)
                } else {
                    (Side::of(e.low).min(Side::Neither), Side::of(e.high).max(Side::Neither))
                };
                [Side::Loses, Side::Neither, Side::Wins]
                    .into_iter()
                    .filter(|s| (lo..=hi).contains(s))
                    .collect()
            }
        })
        .collect();
    let mut verdicts = Vec::new();
    let combinations: usize = sides.iter().map(Vec::len).product();
    for mut k in 0..combinations {
        let points: Vec<(f64, f64)> = ms
            .iter()
            .zip(&sides)
            .map(|(at, s)| {
                let side = s[k % s.len()];
                k /= s.len();
                (*at, side.ratio())
            })
            .collect();
        let v = judge_crossover(&points).verdict;
        if !verdicts.contains(&v) {
            verdicts.push(v);
        }
    }
    let runs = estimates.iter().map(|e| e.runs_a.min(e.runs_b)).min().unwrap_or(0);
    let family = estimates.iter().map(|e| e.family).max().unwrap_or(1);
    let mut shown = format!("{runs} runs a side at each of {} flush times", ms.len());
    if family > 1 {
        shown += &format!(", p adjusted over {family}");
    }
    if !open.is_empty() {
        shown += &format!("; undecided at {}", open.join(", "));
    }
    let judgement = if verdicts.len() > 1 {
        let could: Vec<String> = verdicts.iter().map(Verdict::to_string).collect();
        inconclusive(
            format!(
                "the runs cannot tell which side coordination is on at {}, and the verdict could be {}",
                open.join(", "),
                could.join(" or ")
            ),
            &at_median,
        )
    } else {
        at_median
    };
    judgement.with_confidence(Confidence {
        runs: vec![runs],
        shown,
        ..Default::default()
    })
}

/// The best tps of `coordination` in an fsync-tps run.
fn tps(coordination: Coordination) -> impl Fn(&RunResult) -> Option<f64> {
    move |r| match &r.details {
        Some(Details::FsyncTps(d)) => d
            .rows
            .iter()
            .filter(|row| row.coordination == coordination && row.errors == 0)
            .map(|row| row.tps)
            .reduce(f64::max),
        _ => None,
    }
}

/// How far from 1 a wal/none ratio must be to count as a win or a loss.
const CROSSOVER_BAND: f64 = 0.05;

/// The crossover rule over (flush ms, coordinated tps / uncoordinated tps), in flush order.
pub(crate) fn judge_crossover(points: &[(f64, f64)]) -> Judgement {
    const BAND: f64 = CROSSOVER_BAND;
    let wins = |r: f64| r > 1.0 + BAND;
    let loses = |r: f64| r < 1.0 - BAND;
    // The smallest flush time from which coordination wins at every larger one.
    let crossover = (0..points.len())
        .find(|&i| points[i..].iter().all(|p| wins(p.1)))
        .map(|i| points[i].0);
    let lost_below = |at: f64| points.iter().any(|p| p.0 < at && loses(p.1));
    let won_anywhere = points.iter().any(|p| wins(p.1));
    match crossover {
        Some(at) if lost_below(at) && (4.0..=16.0).contains(&at) => Judgement::new(
            Verdict::Reproduced,
            format!("coordination loses below {at} ms and wins from {at} ms on, against the published ~8 ms"),
        ),
        Some(at) if lost_below(at) => Judgement::new(
            Verdict::Partly,
            format!("coordination loses below {at} ms and wins from {at} ms on: a crossover, but not near the published ~8 ms"),
        ),
        Some(at) => Judgement::new(
            Verdict::Partly,
            format!("coordination wins from {at} ms on and never loses below: the gain holds, the cost at short flushes does not"),
        ),
        None if won_anywhere && points.iter().rev().take_while(|p| !wins(p.1)).any(|p| loses(p.1)) => Judgement::new(
            Verdict::Reversed,
            "coordination wins at short flush times and loses at the longest",
        ),
        // No win, but a cost at short flushes that fades to nothing at the long end: the
        // first half of the finding.
        None if points.first().is_some_and(|p| loses(p.1)) && points.last().is_some_and(|p| !loses(p.1)) => {
            let last_loss = points.iter().filter(|p| loses(p.1)).map(|p| p.0).fold(0.0, f64::max);
            Judgement::new(
                Verdict::Partly,
                format!("coordination loses up to {last_loss} ms and breaks even above, never winning: the cost at short flushes holds, the gain at long ones does not"),
            )
        }
        None => Judgement::new(
            Verdict::NotReproduced,
            "coordination does not win at the longest flush times measured",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 26, item 4: the crossover is decided when every flush time's side is, or when
    /// the sides left open could not change it; else inconclusive, naming where.
    #[test]
    fn the_crossover_on_runs_is_decided_only_where_the_runs_tell_the_sides() {
        let ms = [0.5, 2.0, 8.0, 16.0];
        let runs = |ratio: f64, n: usize| {
            let none: Vec<f64> = (0..n).map(|i| 1000.0 + i as f64).collect();
            let wal: Vec<f64> = none.iter().map(|v| v * ratio).collect();
            Estimate::of(&none, &wal).unwrap()
        };
        let mut four: Vec<Estimate> = [0.8, 0.85, 1.3, 1.9].iter().map(|r| runs(*r, 4)).collect();
        adjust(&mut four);
        let decided = crossover_of_runs(&ms, &four);
        assert_eq!(decided.verdict, Verdict::Reproduced, "{}", decided.why);
        assert_eq!(
            decided.confidence.unwrap().shown,
            "4 runs a side at each of 4 flush times, p adjusted over 4"
        );
        let one: Vec<Estimate> = [0.8, 0.85, 1.3, 1.9].iter().map(|r| runs(*r, 1)).collect();
        let open = crossover_of_runs(&ms, &one);
        super::super::confidence::assert_undecided(
            &open,
            "the runs cannot tell which side coordination is on at 0.5 ms, 2 ms, 8 ms, 16 ms",
            "reproduced",
        );
    }

    #[test]
    /// Issue 20.
    fn the_crossover_is_found_and_set_against_8_ms() {
        let at8 = judge_crossover(&[(0.5, 0.8), (2.0, 0.9), (4.0, 1.0), (8.0, 1.3), (16.0, 1.9)]);
        assert_eq!(at8.verdict, Verdict::Reproduced, "{}", at8.why);
        assert!(at8.why.contains("from 8 ms on"), "{}", at8.why);
        let early = judge_crossover(&[(0.5, 0.8), (1.0, 1.2), (2.0, 1.4), (16.0, 2.0)]);
        assert_eq!(early.verdict, Verdict::Partly, "{}", early.why);
        assert!(early.why.contains("not near"), "{}", early.why);
        let always = judge_crossover(&[(0.5, 1.3), (16.0, 2.0)]);
        assert_eq!(always.verdict, Verdict::Partly, "{}", always.why);
        assert!(always.why.contains("never loses"), "{}", always.why);
        let cost_only = judge_crossover(&[(0.5, 0.61), (2.0, 0.77), (4.0, 0.93), (8.0, 1.0), (16.0, 1.03)]);
        assert_eq!(cost_only.verdict, Verdict::Partly, "{}", cost_only.why);
        assert!(cost_only.why.contains("loses up to 4 ms"), "{}", cost_only.why);
        let never = judge_crossover(&[(0.5, 0.7), (16.0, 0.8)]);
        assert_eq!(never.verdict, Verdict::NotReproduced, "{}", never.why);
        let reversed = judge_crossover(&[(0.5, 1.5), (8.0, 1.0), (16.0, 0.8)]);
        assert_eq!(reversed.verdict, Verdict::Reversed, "{}", reversed.why);
    }
}
