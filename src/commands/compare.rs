//! `fsynclab compare A B`: two sets of runs, figure by figure, with the verdicts of
//! [`crate::compare`] (run-level figures; medians, a bootstrap interval of their ratio,
//! Mann–Whitney U adjusted by Benjamini–Hochberg over the figures; ±5% band), what the two
//! sets differ in, and one line that sums it up.

use std::collections::BTreeMap;

use anyhow::Result;
use serde_json::{json, Value};

use super::select::{fold, only_host, pick, shared, Picked};
use crate::cli::{CompareArgs, ListFormat};
use crate::compare::{compare_sets, render_comparison, Figure, FigureComparison, RunFigures, Settings, Verdict};
use crate::error::Usage;
use crate::recording;

pub(crate) fn compare(args: &CompareArgs) -> Result<i32> {
    let wanted: Vec<Figure> = args
        .figure
        .iter()
        .map(|f| {
            Figure::parse(f).ok_or_else(|| {
                Usage(format!(
                    "--figure {f}: expected KIND.METRIC, e.g. fsync.p99, write.ops/s, fsync.max, background.mb/s, commit.tps"
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    // Opened only when a side names stored runs: two result files need no store.
    let mut store = || recording::open_for_reading(args.store.store.as_deref()).map(|(s, _)| s);
    let host = args.host.as_deref();
    let (a, folded_a) = fold(only_host(pick(&args.a, &mut store)?, host, &format!("A ({})", args.a))?)?;
    let (b, folded_b) = fold(only_host(pick(&args.b, &mut store)?, host, &format!("B ({})", args.b))?)?;
    let scenarios = scenarios_of(&a, &b)?;
    // Figures of two scenarios measure different work: a verdict between them would read
    // as a regression or a gain that is neither (issue 19), so it takes a flag.
    if let Some(s) = scenarios.as_ref().filter(|_| !args.across_scenarios) {
        return Err(Usage(format!(
            "compare: {s}: runs of different scenarios measure different work; compare runs of one scenario, or give --across-scenarios to compare them anyway"
        ))
        .into());
    }
    let in_both = shared(&a, &b)?;
    let figures = |set: &[Picked]| -> Result<Vec<RunFigures>> {
        set.iter()
            .map(|p| {
                let mut f = p.figures()?;
                if !wanted.is_empty() {
                    f.values.retain(|k, _| wanted.contains(k));
                }
                Ok(f)
            })
            .collect()
    };
    let (fa, fb) = (figures(&a)?, figures(&b)?);
    let comparisons = compare_sets(&fa, &fb, &Settings::default());
    if comparisons.is_empty() {
        return Err(Usage(match wanted.is_empty() {
            true => "the two sets have no figure in common (no calls measured?)".to_string(),
            false => format!("neither set has {}", args.figure.join(", ")),
        })
        .into());
    }
    let differ = differences(&a, &b)?;
    let caution = booted_differently(&a, &b)?;
    let out = match args.format {
        ListFormat::Text => {
            let mut out = String::new();
            if let Some(s) = &scenarios {
                out.push_str(&format!("scenarios differ: {s}\n"));
            }
            out.push_str(&format!(
                "A: {} ({}{})\nB: {} ({}{})\n",
                args.a,
                runs_word(a.len()),
                folded_word(folded_a),
                args.b,
                runs_word(b.len()),
                folded_word(folded_b)
            ));
            if !in_both.is_empty() {
                out.push_str(&format!(
                    "in both sets: {} (the test takes the sets as independent)\n",
                    in_both.join(", ")
                ));
            }
            if !differ.is_empty() {
                out.push_str(&format!("differ in: {}\n", differ.join("; ")));
            }
            if let Some(c) = &caution {
                out.push_str(&format!("caution: {c}\n"));
            }
            out.push('\n');
            out.push_str(&render_comparison(&args.a, &args.b, &comparisons));
            out.push_str(&conclusion(&comparisons));
            out
        }
        ListFormat::Json => {
            serde_json::to_string_pretty(&json!({
                "a": {"runs": labels(&a), "spec": args.a, "folded": folded_a},
                "b": {"runs": labels(&b), "spec": args.b, "folded": folded_b},
                "scenarios_differ": scenarios,
                "in_both": in_both,
                "differ_in": differ,
                "caution": caution,
                "figures": comparisons.iter().map(comparison_json).collect::<Vec<_>>(),
            }))? + "\n"
        }
    };
    crate::report::print(&out)
}

/// `; 4 named again, counted once` when runs were named more than once.
fn folded_word(n: usize) -> String {
    match n {
        0 => String::new(),
        n => format!("; {n} named again, counted once"),
    }
}

/// `A is overwrite-fsync, B is fsync-tps` when the runs are not all of one scenario.
fn scenarios_of(a: &[Picked], b: &[Picked]) -> Result<Option<String>> {
    let names = |set: &[Picked]| -> Result<Vec<String>> {
        let mut v: Vec<String> = set.iter().map(Picked::scenario).collect::<Result<_>>()?;
        v.sort();
        v.dedup();
        Ok(v)
    };
    let (na, nb) = (names(a)?, names(b)?);
    if na.len() == 1 && na == nb {
        return Ok(None);
    }
    Ok(Some(format!("A is {}, B is {}", na.join(" and "), nb.join(" and "))))
}

fn runs_word(n: usize) -> String {
    if n == 1 {
        "1 run".into()
    } else {
        format!("{n} runs")
    }
}

fn labels(set: &[Picked]) -> Vec<String> {
    set.iter().map(Picked::label).collect()
}

/// The parameters whose values differ between the sets, as `device: flush=5ms vs flush=10ms`,
/// the testbed and the kernel among them (`kernel: 6.1.0-56-amd64 vm/tcg vs 6.12.48+deb13-amd64`).
fn differences(a: &[Picked], b: &[Picked]) -> Result<Vec<String>> {
    let values = |set: &[Picked]| -> Result<BTreeMap<String, Vec<String>>> {
        let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for p in set {
            let bed = m.entry("testbed".to_string()).or_default();
            let t = p.testbed()?;
            if !bed.contains(&t) {
                bed.push(t);
            }
            let kernels = m.entry("kernel".to_string()).or_default();
            let k = p.kernel()?;
            if !kernels.contains(&k) {
                kernels.push(k);
            }
            for (k, v) in p.params()? {
                let e = m.entry(k).or_default();
                if !e.contains(&v) {
                    e.push(v);
                }
            }
        }
        Ok(m)
    };
    let (va, vb) = (values(a)?, values(b)?);
    let mut keys: Vec<&String> = va.keys().chain(vb.keys()).collect();
    keys.sort();
    keys.dedup();
    Ok(keys
        .into_iter()
        .filter(|k| va.get(*k) != vb.get(*k))
        .map(|k| {
            let side = |m: &BTreeMap<String, Vec<String>>| m.get(k).map_or("-".to_string(), |v| v.join("|"));
            format!("{k}: {} vs {}", side(&va), side(&vb))
        })
        .collect())
}

/// How a set's runs ran: `on the host`, `in a VM under tcg`, or `in a VM under tcg, its disk
/// emulated inside` (from the kernel as `runs` shows it, `6.1.0-56-amd64 vm/tcg`).
fn ran_how(set: &[Picked]) -> Result<Vec<String>> {
    let mut how = Vec::new();
    for p in set {
        let k = p.kernel()?;
        let h = match k.rsplit_once(" vm/") {
            Some((_, accel)) => match accel.strip_suffix(super::runs::GUEST_DISK) {
                Some(accel) => format!("in a VM under {accel}, its disk emulated inside"),
                None => format!("in a VM under {accel}"),
            },
            None => "on the host".to_string(),
        };
        if !how.contains(&h) {
            how.push(h);
        }
    }
    Ok(how)
}

/// A warning when the sets ran differently (on the host against in a VM, or under two
/// accelerators): their figures then differ by how they ran as well as by their kernel,
/// since under TCG every guest instruction is emulated (issue 26).
fn booted_differently(a: &[Picked], b: &[Picked]) -> Result<Option<String>> {
    let (ha, hb) = (ran_how(a)?, ran_how(b)?);
    if ha == hb && ha.len() == 1 {
        return Ok(None);
    }
    Ok(Some(format!(
        "{}, {}: the figures differ by how the runs were booted as well as by anything else (a guest under tcg emulates every instruction, several times slower, and a disk emulated inside it is timed by its CPU); to compare kernels, boot both the same way (docs/kernels.md)",
        how_set_ran("A", &ha),
        how_set_ran("B", &hb)
    )))
}

/// "A ran on the host", or for a set whose runs ran in several ways, "A mixes runs on the
/// host with runs in a VM under tcg".
fn how_set_ran(set: &str, how: &[String]) -> String {
    match how {
        [one] => format!("{set} ran {one}"),
        many => format!("{set} mixes runs {}", many.join(" with runs ")),
    }
}

/// One line: how many figures went which way, the significant ones by name.
pub(crate) fn conclusion(c: &[FigureComparison]) -> String {
    let named = |want: &Verdict| -> Vec<String> {
        c.iter()
            .filter(|x| std::mem::discriminant(&x.verdict) == std::mem::discriminant(want))
            .map(|x| match x.ratio {
                Some(r) => format!("{} {:.2}x", x.figure, r.ratio),
                None => x.figure.to_string(),
            })
            .collect()
    };
    let mut parts = Vec::new();
    for (verdict, word) in [(Verdict::Slower, "B is slower on"), (Verdict::Faster, "B is faster on")] {
        let n = named(&verdict);
        if !n.is_empty() {
            parts.push(format!("{word} {} ({})", figures_word(n.len()), n.join(", ")));
        }
    }
    for (verdict, word) in [
        (Verdict::NoDifference, "no difference on"),
        (Verdict::Inconclusive(String::new()), "inconclusive on"),
        (Verdict::NoVerdict(String::new()), "no verdict possible on"),
    ] {
        let n = named(&verdict).len();
        if n > 0 {
            parts.push(format!("{word} {}", figures_word(n)));
        }
    }
    let mut line = format!("verdict: {}\n", parts.join("; "));
    if let Some(Verdict::NoVerdict(why)) = c
        .iter()
        .map(|x| &x.verdict)
        .find(|v| matches!(v, Verdict::NoVerdict(_)))
    {
        line.push_str(&format!("no verdict possible: {why}\n"));
    }
    line
}

fn figures_word(n: usize) -> String {
    if n == 1 {
        "1 figure".into()
    } else {
        format!("{n} figures")
    }
}

fn comparison_json(c: &FigureComparison) -> Value {
    let (verdict, reason) = match &c.verdict {
        Verdict::Faster => ("faster", None),
        Verdict::Slower => ("slower", None),
        Verdict::NoDifference => ("no difference", None),
        Verdict::Inconclusive(why) => ("inconclusive", Some(why.clone())),
        Verdict::NoVerdict(why) => ("no verdict", Some(why.clone())),
    };
    json!({
        "figure": c.figure.to_string(),
        "unit": c.figure.unit(),
        "runs_a": c.runs_a,
        "runs_b": c.runs_b,
        "median_a": c.median_a.map(|v| c.figure.in_unit(v)),
        "median_b": c.median_b.map(|v| c.figure.in_unit(v)),
        "stddev_a": c.spread_a,
        "stddev_b": c.spread_b,
        "change_percent": c.change_percent(),
        "ratio": c.ratio.map(|r| json!({"ratio": r.ratio, "low": r.low, "high": r.high})),
        "p": c.test.map(|t| t.p_value),
        "p_adjusted": c.p_adjusted,
        "verdict": verdict,
        "reason": reason,
    })
}

#[cfg(test)]
mod tests {
    use super::how_set_ran;

    #[test]
    fn a_set_that_ran_one_way_says_it_and_a_mixed_set_says_it_mixes() {
        let host = "on the host".to_string();
        let tcg = "in a VM under tcg".to_string();
        assert_eq!(how_set_ran("A", std::slice::from_ref(&host)), "A ran on the host");
        assert_eq!(
            how_set_ran("B", &[host, tcg]),
            "B mixes runs on the host with runs in a VM under tcg"
        );
    }
}
