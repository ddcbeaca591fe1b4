//! The reproduction as a person reads it: text (a block per finding), a markdown table ready
//! for a mailing list, or JSON (the rows with every field).

use std::fmt::Write as _;

use anyhow::Result;

use super::experiment::{Row, Size};
use super::verdict::Verdict;
use super::Reproduction;
use crate::units::clock;

pub(crate) fn render(r: &Reproduction, format: ReproduceFormat) -> Result<String> {
    Ok(match format {
        ReproduceFormat::Text => text(r),
        ReproduceFormat::Markdown => markdown(r),
        ReproduceFormat::Json => serde_json::to_string_pretty(r)? + "\n",
    })
}

/// The forms of `fsynclab reproduce`'s table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReproduceFormat {
    /// A block per finding: claim, published figure and source, measured figure, verdict
    Text,
    /// One markdown table row per finding, ready for a mailing list
    Markdown,
    /// Every field of every row, with the runs behind it
    Json,
}

/// What `--quick` runs (each seed's `quick_repeat`).
pub(crate) const QUICK_RUNS: &str =
    "quick, 2 to 4 runs a configuration (2 for seeds 000 and 003, 4 for 001, 002 and 004's datasync, 3 for 004's rndwr)";

/// `quick, 2 to 4 runs a configuration ...`; of a reproduction shown from the store, the
/// runs it has.
fn size_words(size: Size, stored: Option<(usize, usize)>) -> String {
    let runs = |n: usize| {
        if n == 1 {
            "1 run".to_string()
        } else {
            format!("{n} runs")
        }
    };
    match (size, stored) {
        (Size::Smoke, Some(_)) => {}
        (_, Some((lo, hi))) if lo == hi => return format!("{}, {} a configuration", size.name(), runs(hi)),
        (_, Some((lo, hi))) => return format!("{}, {lo} to {hi} runs a configuration", size.name()),
        _ => {}
    }
    match size {
        Size::Quick => QUICK_RUNS.into(),
        Size::Full => format!("full, {} runs a configuration", size.repeat()),
        Size::Smoke => "smoke, 1 short run a configuration (its figures mean little)".into(),
    }
}

/// `4 reproduced, 3 partly, 2 not reproduced, 1 reversed, 2 inconclusive`, then `; 6 not
/// measured` when findings were left without a figure (those are no result, and counted
/// apart).
fn tally(r: &Reproduction) -> String {
    let rows: Vec<Verdict> = r
        .seeds
        .iter()
        .flat_map(|s| &s.rows)
        .map(|row| row.judgement.verdict)
        .collect();
    tally_of(&rows)
}

/// The tally of `verdicts`, as [`tally`] words it (and each kernel's in a side-by-side table).
pub(super) fn tally_of(verdicts: &[Verdict]) -> String {
    [
        Verdict::Reproduced,
        Verdict::Partly,
        Verdict::NotReproduced,
        Verdict::Reversed,
        Verdict::Inconclusive,
    ]
    .iter()
    .map(|v| format!("{} {v}", verdicts.iter().filter(|x| *x == v).count()))
    .collect::<Vec<_>>()
    .join(", ")
        + &match verdicts.iter().filter(|v| !v.is_result()).count() {
            0 => String::new(),
            n => format!("; {n} {}", Verdict::NotMeasured),
        }
}

/// The findings the runs could not decide (`000 #2`, the seed and the row's place), and
/// what more runs would take; None when every measured finding is decided.
fn undecided(r: &Reproduction) -> Option<String> {
    let open: Vec<String> = r
        .seeds
        .iter()
        .flat_map(|s| {
            s.rows
                .iter()
                .enumerate()
                .filter(|(_, row)| row.judgement.verdict == Verdict::Inconclusive)
                .map(move |(i, _)| format!("{} #{}", s.seed, i + 1))
        })
        .collect();
    if open.is_empty() {
        return None;
    }
    let more = match r.size {
        Size::Smoke => "`--quick` makes 2 to 4 runs a configuration, `--full` 4",
        Size::Quick => "`--full` makes 4 runs of every configuration at the posts' sizes (enough for p < 0.05 where the runs agree)",
        Size::Full => "4 runs a side did not decide them: `fsynclab matrix` with more --repeat can",
    };
    Some(format!(
        "inconclusive: {} (the runs cannot decide them: each row says why); {more}",
        open.join(", ")
    ))
}

/// `REPRODUCED (4 runs a side, 2.41x [2.30, 2.52], p=0.029)`: the verdict with what it
/// rests on.
fn verdict_with_confidence(row: &Row, verdict: String) -> String {
    match &row.judgement.confidence {
        Some(c) => format!("{verdict} ({})", c.shown),
        None => verdict,
    }
}

/// The markdown table's footer: a line for each seed, its era and the matrices its runs are
/// stored in.
pub(super) fn seeds_footer(out: &mut String, r: &Reproduction) {
    out.push('\n');
    for s in &r.seeds {
        let _ = writeln!(
            out,
            "- seed {} ({}): {}; runs in {}",
            s.seed,
            cell(s.title),
            cell(&s.era),
            s.matrices.join(", ")
        );
    }
}

pub(super) fn heading(r: &Reproduction) -> String {
    let took = match r.duration_s {
        Some(s) => format!(" in {}", clock(std::time::Duration::from_secs_f64(s.max(0.0)))),
        None => format!(" (stored, made from {})", r.started_at),
    };
    format!(
        "fsynclab reproduce {}: {}; {}; {} runs{took}{}",
        r.id,
        size_words(r.size, r.stored_runs_a_configuration),
        r.machine,
        r.runs,
        if r.interrupted { " (interrupted)" } else { "" }
    )
}

fn text(r: &Reproduction) -> String {
    let mut out = format!("{}\n", heading(r));
    for s in &r.seeds {
        let _ = writeln!(out, "\nseed {}  {}", s.seed, s.title);
        let _ = writeln!(out, "  era        {}", s.era);
        let _ = writeln!(out, "  stored as  {}", s.matrices.join(", "));
        for row in &s.rows {
            let _ = writeln!(out, "\n  claim      {}", row.claim);
            let _ = writeln!(out, "  published  {} [{}]", row.published, row.sources.join("; "));
            if !row.configuration.is_empty() {
                let _ = writeln!(out, "  measured   {} [{}]", or_dash(&row.measured), row.configuration);
            } else {
                let _ = writeln!(out, "  measured   {}", or_dash(&row.measured));
            }
            let _ = writeln!(
                out,
                "  verdict    {}: {}",
                verdict_with_confidence(row, row.judgement.verdict.to_string().to_uppercase()),
                row.judgement.why
            );
        }
    }
    let _ = writeln!(out, "\nverdicts: {}", tally(r));
    if let Some(open) = undecided(r) {
        let _ = writeln!(out, "{open}");
    }
    out
}

/// One row of a markdown table: `cells`, then `more`, between bars.
pub(super) fn table_row(
    out: &mut String,
    cells: impl IntoIterator<Item = String>,
    more: impl IntoIterator<Item = String>,
) {
    let cells: Vec<String> = cells.into_iter().chain(more).collect();
    let _ = writeln!(out, "| {} |", cells.join(" | "));
}

pub(super) fn or_dash(text: &str) -> &str {
    if text.is_empty() {
        "-"
    } else {
        text
    }
}

/// A markdown cell: pipes escaped, line breaks flattened.
pub(super) fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn markdown(r: &Reproduction) -> String {
    let mut out = format!("**{}**\n\n", cell(&heading(r)));
    out.push_str("| seed | claim | published | measured | verdict | why |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for s in &r.seeds {
        for row in &s.rows {
            let published = format!("{} ({})", cell(&row.published), cell(&row.sources.join("; ")));
            let verdict = cell(&verdict_with_confidence(row, format!("**{}**", row.judgement.verdict)));
            table_row(
                &mut out,
                [s.seed.to_string(), cell(&row.claim), published],
                [cell(or_dash(&row.measured)), verdict, cell(&row.judgement.why)],
            );
        }
    }
    seeds_footer(&mut out, r);
    let _ = writeln!(out, "\nVerdicts: {}.", tally(r));
    if let Some(open) = undecided(r) {
        let _ = writeln!(out, "\n{}{}.", open[..1].to_uppercase(), &open[1..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::experiment::Row;
    use super::super::verdict::Judgement;
    use super::super::SeedReport;
    use super::*;

    fn reproduction() -> Reproduction {
        let row = Row::new("000", "a | claim")
            .published(
                "6.2 s",
                &[super::super::experiment::Source {
                    file: "000_x.txt",
                    lines: "72",
                }],
            )
            .configuration("ext3")
            .measured("6.3 s (run 4)", vec![4])
            .judged(Judgement::new(
                Verdict::Reproduced,
                "worst fsync 6.30 s is at least 1.00 s",
            ));
        Reproduction {
            id: "reproduce1".into(),
            size: Size::Quick,
            machine: "Linux 6.18, 2 CPUs".into(),
            store: "s.sqlite".into(),
            started_at: "2026-11-23T00:00:00Z".into(),
            duration_s: Some(125.0),
            runs: 3,
            stored_runs_a_configuration: None,
            interrupted: false,
            seeds: vec![SeedReport {
                seed: "000",
                title: "ext3 latency fixes",
                era: "hdd-5400".into(),
                matrices: vec!["reproduce1-000".into()],
                rows: vec![row, Row::new("000", "unmeasured")],
                by_kernel: Vec::new(),
                changes: Vec::new(),
            }],
            kernels: Vec::new(),
        }
    }

    #[test]
    /// A reproduction shown from the store says the runs a configuration it has, not what
    /// `--quick` makes today.
    fn a_stored_reproductions_heading_gives_the_runs_it_has() {
        let mut r = reproduction();
        assert!(heading(&r).contains(QUICK_RUNS), "{}", heading(&r));
        r.duration_s = None;
        r.stored_runs_a_configuration = Some((1, 1));
        let h = heading(&r);
        assert!(h.contains("quick, 1 run a configuration;"), "{h}");
        assert!(!h.contains(QUICK_RUNS), "{h}");
        r.stored_runs_a_configuration = Some((2, 4));
        assert!(heading(&r).contains("quick, 2 to 4 runs a configuration;"));
    }

    #[test]
    /// Issue 20.
    fn text_shows_every_row_with_its_source_and_verdict() {
        let t = render(&reproduction(), ReproduceFormat::Text).unwrap();
        assert!(
            t.starts_with(&format!(
                "fsynclab reproduce reproduce1: {QUICK_RUNS}; Linux 6.18, 2 CPUs; 3 runs in 2m05s\n"
            )),
            "{t}"
        );
        assert!(t.contains("  published  6.2 s [seeds/000_x.txt:72]"), "{t}");
        assert!(
            t.contains("  verdict    REPRODUCED: worst fsync 6.30 s is at least 1.00 s"),
            "{t}"
        );
        assert!(t.contains("  verdict    NOT MEASURED: no run"), "{t}");
        assert!(
            t.ends_with(
                "verdicts: 1 reproduced, 0 partly, 0 not reproduced, 0 reversed, 0 inconclusive; 1 not measured\n"
            ),
            "{t}"
        );
    }

    /// Issue 24, item 7: an interrupted reproduction's unmeasured row said "NOT REPRODUCED:
    /// not measured" and the tally counted it as not reproduced. It is shown as not measured
    /// in every format and counted apart; with every row measured, the tally is as before.
    #[test]
    fn an_unmeasured_finding_is_not_counted_as_not_reproduced() {
        let mut r = reproduction();
        let measured_no = Row::new("000", "no effect").judged(Judgement::new(Verdict::NotReproduced, "1.02x"));
        r.seeds[0].rows.push(measured_no);
        r.interrupted = true;
        let t = render(&r, ReproduceFormat::Text).unwrap();
        assert!(!t.contains("NOT REPRODUCED: not measured"), "{t}");
        assert!(t.contains("  verdict    NOT REPRODUCED: 1.02x"), "{t}");
        assert!(
            t.ends_with(
                "verdicts: 1 reproduced, 0 partly, 1 not reproduced, 0 reversed, 0 inconclusive; 1 not measured\n"
            ),
            "{t}"
        );
        let md = render(&r, ReproduceFormat::Markdown).unwrap();
        assert!(md.contains("| **not measured** | no run |"), "{md}");
        assert!(
            md.ends_with(
                "Verdicts: 1 reproduced, 0 partly, 1 not reproduced, 0 reversed, 0 inconclusive; 1 not measured.\n"
            ),
            "{md}"
        );
        let json: serde_json::Value = serde_json::from_str(&render(&r, ReproduceFormat::Json).unwrap()).unwrap();
        assert_eq!(json["seeds"][0]["rows"][1]["verdict"], "not-measured");

        r.seeds[0].rows.remove(1);
        let t = render(&r, ReproduceFormat::Text).unwrap();
        assert!(
            t.ends_with("verdicts: 1 reproduced, 0 partly, 1 not reproduced, 0 reversed, 0 inconclusive\n"),
            "{t}"
        );
    }

    /// Issue 26, item 4: every verdict shows what it rests on beside it, inconclusive is
    /// counted apart, and the findings the runs could not decide are named with what more
    /// runs would take.
    #[test]
    fn verdicts_show_their_confidence_and_inconclusive_ones_are_named() {
        use super::super::verdict::Confidence;
        let mut r = reproduction();
        let sure = Confidence {
            shown: "4 runs a side, 2.41x [2.30, 2.52], p=0.029".into(),
            ..Default::default()
        };
        r.seeds[0].rows[0].judgement = Judgement::new(Verdict::Reproduced, "2.41x").with_confidence(sure);
        let open = Judgement::new(
            Verdict::Inconclusive,
            "the interval [0.80, 1.90] spans reversed and reproduced",
        )
        .with_confidence(Confidence {
            shown: "2 runs a side, 1.30x [0.80, 1.90]".into(),
            ..Default::default()
        });
        r.seeds[0].rows.push(Row::new("000", "open").judged(open));
        let t = render(&r, ReproduceFormat::Text).unwrap();
        assert!(
            t.contains("  verdict    REPRODUCED (4 runs a side, 2.41x [2.30, 2.52], p=0.029): 2.41x\n"),
            "{t}"
        );
        assert!(
            t.contains("  verdict    INCONCLUSIVE (2 runs a side, 1.30x [0.80, 1.90]): the interval"),
            "{t}"
        );
        assert!(
            t.contains("verdicts: 1 reproduced, 0 partly, 0 not reproduced, 0 reversed, 1 inconclusive; 1 not measured\ninconclusive: 000 #3 (the runs cannot decide them: each row says why); `--full` makes 4 runs"),
            "{t}"
        );
        let md = render(&r, ReproduceFormat::Markdown).unwrap();
        assert!(
            md.contains("| **reproduced** (4 runs a side, 2.41x [2.30, 2.52], p=0.029) | 2.41x |"),
            "{md}"
        );
        assert!(md.contains("\nInconclusive: 000 #3 (the runs"), "{md}");
        let json: serde_json::Value = serde_json::from_str(&render(&r, ReproduceFormat::Json).unwrap()).unwrap();
        let row = &json["seeds"][0]["rows"][2];
        assert_eq!(row["verdict"], "inconclusive", "{row}");
        assert_eq!(row["confidence"]["shown"], "2 runs a side, 1.30x [0.80, 1.90]", "{row}");
    }

    #[test]
    /// Issue 20.
    fn markdown_is_one_table_row_per_finding() {
        let md = render(&reproduction(), ReproduceFormat::Markdown).unwrap();
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| 000 |")).collect();
        assert_eq!(rows.len(), 2, "{md}");
        assert!(
            rows[0].contains("a \\| claim") && rows[0].contains("**reproduced**"),
            "{md}"
        );
        for l in md.lines().filter(|l| l.starts_with('|')) {
            assert_eq!(l.replace("\\|", "").matches('|').count(), 7, "six columns: {l}");
        }
        let json: serde_json::Value =
            serde_json::from_str(&render(&reproduction(), ReproduceFormat::Json).unwrap()).unwrap();
        assert_eq!(json["seeds"][0]["rows"][0]["verdict"], "reproduced");
        assert_eq!(json["seeds"][0]["rows"][0]["runs"], serde_json::json!([4]));
    }
}
