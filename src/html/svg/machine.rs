//! A run's kernel timeline under its calls, on the same clock: dirty memory and writeback
//! against the dirty limits, requests in flight on the device, cache flushes (and, on an
//! emulated disk, its cache occupancy), and the explained slow calls as bars, each a link
//! to its parts further down the page.

use std::fmt::Write as _;

use super::{begin, run_seconds, trim_float, x_axis, LEFT, PLOT_W, SVG_W, TOP};
use crate::explain::attribution::Attribution;
use crate::explain::timeline::TimelinePoint;
use crate::html::{escape, PageRun};
use crate::units::{format_latency_ns, human_size};

/// Height of one panel.
const PANEL_H: f64 = 64.0;
/// Space between panels (for the next one's title).
const GAP: f64 = 22.0;

// Colours of their own, used nowhere else on the page (tests/html_report.rs finds them).
pub const DIRTY: &str = "#e6550d";
pub const WRITEBACK: &str = "#3182bd";
pub const LIMIT: &str = "#a50f15";
pub const BACKGROUND_LIMIT: &str = "#6a51a3";
pub const IN_FLIGHT: &str = "#8c6d31";
pub const FLUSHES: &str = "#31a354";
pub const CACHE: &str = "#e7ba52";

/// The colour of a slow call's bar: its largest part's cause.
pub(crate) fn cause_colour(cause_key: &str) -> &'static str {
    match cause_key {
        "journal_commit" => "#e377c2",
        "data_writeback" => "#2ca02c",
        "device_flush" => "#17becf",
        "device_read" => "#bcbd22",
        "dirty_throttle" => "#ff7f0e",
        "waited_for_thread" => "#9467bd",
        "on_cpu" | "runnable" | "woken" => "#7f7f7f",
        k if k.starts_with("unattributed") => "#c7c7c7",
        _ => "#8c564b",
    }
}

/// The anchor of slow call `i` of run `run`, which its bar links to.
pub(crate) fn call_anchor(run: usize, i: usize) -> String {
    format!("run{run}-call{i}")
}

/// A panel's frame and title at `top`; returns the y of its bottom.
fn panel(svg: &mut String, top: f64, title: &str) -> f64 {
    let _ = write!(
        svg,
        "<text x=\"{LEFT}\" y=\"{:.0}\">{}</text><rect x=\"{LEFT}\" y=\"{top:.0}\" width=\"{PLOT_W}\" height=\"{PANEL_H}\" fill=\"#f7f7f7\" stroke=\"#bbb\"/>",
        top - 5.0,
        escape(title)
    );
    top + PANEL_H
}

/// A line through `points` (seconds, value) scaled to `max` in the panel at `top`.
fn line(svg: &mut String, points: &[(f64, f64)], seconds: f64, max: f64, top: f64, colour: &str, dashed: bool) {
    if points.is_empty() || max <= 0.0 {
        return;
    }
    let mut d = String::new();
    for (i, (t, v)) in points.iter().enumerate() {
        let x = LEFT + (t / seconds).clamp(0.0, 1.0) * PLOT_W;
        let y = top + PANEL_H - (v / max).clamp(0.0, 1.0) * PANEL_H;
        let _ = write!(d, "{}{x:.1} {y:.1}", if i == 0 { "M" } else { "L" });
    }
    let _ = write!(
        svg,
        "<path fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"{} d=\"{d}\"/>",
        if dashed { " stroke-dasharray=\"6 4\"" } else { "" }
    );
}

/// `max` written at the top left of the panel at `top`.
fn scale(svg: &mut String, top: f64, text: &str) {
    let _ = write!(
        svg,
        "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{}</text><text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">0</text>",
        LEFT - 6.0,
        top + 10.0,
        escape(text),
        LEFT - 6.0,
        top + PANEL_H
    );
}

fn series(points: &[TimelinePoint], f: impl Fn(&TimelinePoint) -> Option<u64>) -> Vec<(f64, f64)> {
    points
        .iter()
        .filter_map(|p| Some((p.t_ns as f64 / 1e9, f(p)? as f64)))
        .collect()
}

fn mib(bytes: f64) -> f64 {
    bytes / f64::from(1u32 << 20)
}

/// The kernel timeline of `run` (the `index`-th on the page), or nothing when it has none.
pub(crate) fn machine(run: &PageRun, index: usize) -> String {
    let Some(t) = &run.timeline else {
        return String::new();
    };
    let seconds = run_seconds(run);
    let calls = &run.slow_calls;
    let has_cache = !run.cache_occupancy.is_empty();
    let panels = 3 + usize::from(!calls.is_empty());
    let height = TOP + GAP + panels as f64 * (PANEL_H + GAP) + 8.0;
    let mut svg = begin("machine", SVG_W, height, "kernel timeline");
    let mut top = TOP + GAP;

    // Dirty memory and writeback against the dirty limits.
    let dirty = series(&t.points, |p| p.dirty_bytes);
    let writeback = series(&t.points, |p| p.writeback_bytes);
    let limit = series(&t.points, |p| p.dirty_threshold_bytes);
    let bg_limit = series(&t.points, |p| p.dirty_background_threshold_bytes);
    let peak = dirty.iter().chain(&writeback).map(|p| p.1).fold(0.0, f64::max);
    // The limits are drawn when they are near what was dirty; far above, they are named.
    let limit_peak = limit.iter().chain(&bg_limit).map(|p| p.1).fold(0.0, f64::max);
    let show_limits = limit_peak > 0.0 && limit_peak <= 4.0 * peak.max(1.0);
    let max = if show_limits { peak.max(limit_peak) } else { peak } * 1.1;
    let limits_text = match limit.last() {
        Some((_, l)) if !show_limits => format!("; dirty limit {} (far above)", human_size(*l as u64)),
        _ => String::new(),
    };
    let bottom = panel(
        &mut svg,
        top,
        &format!("dirty (orange) and writeback (blue) memory, dirty limit (red) and background limit (purple) dashed{limits_text}"),
    );
    if show_limits {
        line(&mut svg, &limit, seconds, max, top, LIMIT, true);
        line(&mut svg, &bg_limit, seconds, max, top, BACKGROUND_LIMIT, true);
    }
    line(&mut svg, &writeback, seconds, max, top, WRITEBACK, false);
    line(&mut svg, &dirty, seconds, max, top, DIRTY, false);
    scale(&mut svg, top, &format!("{:.0} MiB", mib(max)));
    top = bottom + GAP;

    // Requests in flight on the device.
    let in_flight = series(&t.points, |p| p.device_in_flight);
    let max = in_flight.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.1;
    let device = t.device.as_deref().unwrap_or("the device");
    let bottom = panel(&mut svg, top, &format!("requests in flight on {device}"));
    line(&mut svg, &in_flight, seconds, max, top, IN_FLIGHT, false);
    scale(&mut svg, top, &trim_float(max.round()));
    top = bottom + GAP;

    // Cache flushes completed per sample interval, and the emulated disk's cache.
    let flushes: Vec<(f64, f64)> = t
        .points
        .windows(2)
        .filter_map(|w| {
            let n = w[1]
                .device_flushes_completed?
                .checked_sub(w[0].device_flushes_completed?)?;
            Some((w[0].t_ns as f64 / 1e9, n as f64))
        })
        .collect();
    let max_flushes = flushes.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0);
    let cache: Vec<(f64, f64)> = run.cache_occupancy.iter().map(|[s, b]| (*s, *b)).collect();
    let max_cache = cache.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.1;
    let title = if has_cache {
        format!(
            "cache flushes per interval (green bars), the emulated disk's cache occupancy (gold line, top {:.1} MiB)",
            mib(max_cache)
        )
    } else {
        "cache flushes per interval".to_string()
    };
    let bottom = panel(&mut svg, top, &title);
    let interval_s = t.interval_ns as f64 / 1e9;
    let bar_w = (interval_s / seconds * PLOT_W).max(1.0);
    let mut d = String::new();
    for (at, n) in &flushes {
        let h = n / max_flushes * PANEL_H;
        if h > 0.0 {
            let x = LEFT + (at / seconds).clamp(0.0, 1.0) * PLOT_W;
            let _ = write!(d, "M{x:.1} {:.1}h{bar_w:.1}v{h:.1}h-{bar_w:.1}z", top + PANEL_H - h);
        }
    }
    let _ = write!(svg, "<path fill=\"{FLUSHES}\" d=\"{d}\"/>");
    if has_cache {
        line(&mut svg, &cache, seconds, max_cache, top, CACHE, false);
    }
    scale(&mut svg, top, &format!("{max_flushes:.0}"));
    top = bottom + GAP;

    // The explained calls: a bar each, from start to end, coloured by its largest part.
    if !calls.is_empty() {
        let bottom = panel(
            &mut svg,
            top,
            "slow calls explained (colour: largest cause; click for the parts)",
        );
        let rows = calls.len().min(8);
        let row_h = PANEL_H / rows as f64;
        for (i, a) in calls.iter().enumerate() {
            let x0 = LEFT + (a.start_ns as f64 / 1e9 / seconds).clamp(0.0, 1.0) * PLOT_W;
            let x1 = LEFT + ((a.start_ns + a.latency_ns) as f64 / 1e9 / seconds).clamp(0.0, 1.0) * PLOT_W;
            let y = top + (i % rows) as f64 * row_h;
            let colour = a.parts.first().map_or("#7f7f7f", |p| cause_colour(&p.cause.key()));
            let main = a
                .parts
                .first()
                .map(|p| format!(": {} {}", format_latency_ns(p.ns), p.cause))
                .unwrap_or_default();
            let _ = write!(
                svg,
                "<a href=\"#{}\"><rect class=\"slow-call\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{colour}\"><title>{} at {:.3} s took {}{}</title></rect></a>",
                call_anchor(index, i),
                y + 1.0,
                (x1 - x0).max(3.0),
                (row_h - 2.0).max(2.0),
                escape(&a.op),
                a.start_ns as f64 / 1e9,
                format_latency_ns(a.latency_ns),
                escape(&main)
            );
        }
        top = bottom + GAP;
    }
    x_axis(&mut svg, seconds, top - GAP);
    svg.push_str("</svg>\n");
    svg
}

/// The explained calls as a list whose items the bars link to: each call with every part.
pub(crate) fn call_list(run: &PageRun, index: usize) -> String {
    let mut h = String::new();
    if run.slow_calls.is_empty() {
        return h;
    }
    h.push_str(
        "<table class=\"calls\"><tr><th>at</th><th>call</th><th>latency</th><th>where the time went</th></tr>\n",
    );
    for (i, a) in run.slow_calls.iter().enumerate() {
        let parts: Vec<String> = a
            .parts
            .iter()
            .map(|p| {
                format!(
                    "<span style=\"color:{}\">&#9632;</span> {} {}",
                    cause_colour(&p.cause.key()),
                    format_latency_ns(p.ns),
                    escape(&p.cause.to_string())
                )
            })
            .collect();
        let who = a
            .process
            .as_ref()
            .map(|p| format!(" ({} {})", escape(p), a.tid))
            .unwrap_or_else(|| format!(" (thread {})", a.tid));
        let _ = writeln!(
            h,
            "<tr id=\"{}\"><td class=\"n\">{:.3} s</td><td>{}{who}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            call_anchor(index, i),
            a.start_ns as f64 / 1e9,
            escape(&a.op),
            format_latency_ns(a.latency_ns),
            parts.join("<br>")
        );
    }
    h.push_str("</table>\n");
    h
}

/// Slow calls a page shows of a run: the slowest.
pub(crate) const PAGE_CALLS: usize = 20;

/// The slowest `PAGE_CALLS` of `calls`, slowest first.
pub(crate) fn page_calls(calls: &[Attribution]) -> Vec<Attribution> {
    let mut v = calls.to_vec();
    v.sort_by_key(|a| std::cmp::Reverse(a.latency_ns));
    v.truncate(PAGE_CALLS);
    v
}
