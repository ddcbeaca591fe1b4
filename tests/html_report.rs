//! Issue 11: the HTML report as a user sees it. A report of two compared runs and a matrix
//! table is rendered by headless Chromium (Debian's `chromium`, which scripts/setup.sh
//! installs); the screenshot must show the pictures (not a blank page) and the page must log
//! nothing to its console. Issue 16: the report of two real explained runs draws each run's
//! kernel timeline and the trade-off plot (seen in the screenshot, and laid out with a size
//! in the DOM Chromium rendered), and a slow call's link leads to its parts.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fsynclab::compare::table::{self, MatrixCell, TableSpec};
use fsynclab::compare::{Figure, Metric, RunFigures, Settings};
use fsynclab::html::{self, Page, PageRun};
use fsynclab::store::SampleColumns;

use common::Need::{Fuse, Root, Tool, Tracefs};

common::tests! {
    html_report_renders_in_chromium_without_errors: [Tool("chromium")],
    chromium_console_errors_are_caught: [Tool("chromium")],
    the_report_draws_the_kernel_timeline_the_tradeoff_and_links_slow_calls_to_their_parts: [Root, Tracefs, Tool("chromium")],
    a_report_of_an_ext4_and_an_xfs_run_names_each_by_its_filesystem: [Root, Fuse, Tool("mkfs.xfs"), Tool("chromium")],
}

/// Debian's `chromium` (scripts/setup.sh installs it), found as the harness's `Tool` need
/// finds it.
fn chromium() -> Option<PathBuf> {
    fsynclab::testbed::command::find_tool("chromium")
}

/// A run like fsync-tps's: alternating 4 KiB writes and fsyncs, a fsync tail, and a
/// background writer whose throughput dips while the fsyncs stall.
fn run(label: &str, calls: u64, flush_scale: u64) -> PageRun {
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ flush_scale;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let samples: Vec<(u64, &str, u64, u64, Option<&str>)> = (0..calls)
        .map(|i| {
            let t = i * 200_000;
            if i % 2 == 0 {
                (t, "write", 3_000 + next() % 20_000, 4096, None)
            } else {
                let tail = if next() % 200 == 0 { 40 } else { 1 };
                (
                    t,
                    "fsync",
                    (1_000_000 + next() % 4_000_000) * flush_scale * tail,
                    0,
                    None,
                )
            }
        })
        .collect();
    let seconds = calls * 200_000 / 1_000_000_000;
    let figures = RunFigures {
        run: label.into(),
        values: [(Figure::new("fsync", Metric::OpsPerSec), 2500.0 / flush_scale as f64)]
            .into_iter()
            .collect(),
    };
    // Assigned field by field: a page run has fields of fsynclab's own besides these.
    let mut run = PageRun::default();
    run.label = label.into();
    run.scenario = "fsync-tps".into();
    run.started_at = "2026-11-22T08:00:00Z".into();
    run.duration_s = seconds as f64;
    run.params = [("coordination".to_string(), "none".to_string())].into_iter().collect();
    run.figures = Some(figures);
    run.samples = SampleColumns::from_records(&samples);
    run.background = (0..seconds).map(|s| (s, (40 + (s * 37) % 60) << 20)).collect();
    run.background_kind = Some("stream".into());
    run
}

fn matrix() -> table::MatrixTable {
    let cell = |device: &str, coordination: &str, base: f64| MatrixCell {
        axes: vec![
            ("device".into(), device.into()),
            ("coordination".into(), coordination.into()),
        ],
        runs: [base, base * 1.02, base * 0.98, base * 1.01, base * 0.99]
            .iter()
            .map(|&v| RunFigures {
                run: String::new(),
                values: [(Figure::new("fsync", Metric::OpsPerSec), v)].into_iter().collect(),
            })
            .collect(),
    };
    let cells = vec![
        cell("ram", "none", 5200.0),
        cell("ram", "wal", 3100.0),
        cell("hdd-7200", "none", 61.0),
        cell("hdd-7200", "wal", 142.0),
    ];
    table::build(
        &cells,
        &TableSpec {
            column_axis: "coordination".into(),
            figure: Figure::new("fsync", Metric::OpsPerSec),
            reference: None,
            settings: Settings::default(),
        },
    )
    .expect("table")
}

/// Renders `page` in headless Chromium: the screenshot (RGBA, width, height) and every
/// console line the page logged.
fn render_in_chromium(chromium: &Path, page: &Path, dir: &Path) -> (Vec<u8>, u32, u32, Vec<String>) {
    render_url(chromium, &format!("file://{}", page.display()), dir, (1100, 2400))
}

/// Renders `url` (a page, or a place in it: `file:///page.html#anchor`) in a window of
/// `size`.
fn render_url(chromium: &Path, url: &str, dir: &Path, size: (u32, u32)) -> (Vec<u8>, u32, u32, Vec<String>) {
    let shot = dir.join("shot.png");
    let profile = dir.join("profile");
    let child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--hide-scrollbars",
        ])
        .arg(format!("--window-size={},{}", size.0, size.1))
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let (_, log) = finish(child);
    // Chromium logs what the page writes to its console, and uncaught exceptions, as
    // `INFO:CONSOLE(line)] "message", source: URL (line)`.
    let console: Vec<String> = log
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&shot).expect("screenshot written"),
    ));
    let mut reader = decoder.read_info().expect("PNG header");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("PNG frame");
    let rgba: Vec<u8> = match info.color_type {
        png::ColorType::Rgba => buf[..info.buffer_size()].to_vec(),
        png::ColorType::Rgb => buf[..info.buffer_size()]
            .chunks(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect(),
        other => panic!("unexpected screenshot colour type {other:?}"),
    };
    (rgba, info.width, info.height, console)
}

/// Waits for Chromium (at most 120 s) and returns what it wrote on stdout and stderr.
fn finish(mut child: std::process::Child) -> (String, String) {
    let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            pipe.map(|p| std::io::read_to_string(p).unwrap_or_default())
                .unwrap_or_default()
        })
    };
    let stdout = read(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let stderr = read(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    (
        stdout.join().expect("stdout reader"),
        stderr.join().expect("stderr reader"),
    )
}

/// Runs `body` (JavaScript that pushes one string a line onto `out`) at the end of a copy of
/// `page` in headless Chromium, in a window 1100 pixels wide, and returns the lines it
/// pushed: the script writes them into an element of its own and Chromium's `--dump-dom`
/// prints the document after it ran. `name` keeps each caller's copy and profile apart.
fn rendered_lines(chromium: &Path, page: &Path, dir: &Path, name: &str, body: &str) -> Vec<String> {
    let html = std::fs::read_to_string(page).unwrap();
    let script = format!(
        "<script>(function(){{var out=[];{body}var pre=document.createElement('pre');pre.id='fsynclab-rendered';pre.textContent=out.join(String.fromCharCode(10));document.body.appendChild(pre);}})();</script>"
    );
    let at = html.rfind("</body>").unwrap_or(html.len());
    let copy = dir.join(format!("{name}.html"));
    std::fs::write(&copy, format!("{}{script}{}", &html[..at], &html[at..])).unwrap();
    let child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1100,2400",
            "--dump-dom",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.join(format!("profile-{name}")).display()
        ))
        .arg(format!("file://{}", copy.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let (dom, log) = finish(child);
    let lines = dom
        .split("<pre id=\"fsynclab-rendered\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| panic!("the script left nothing in the rendered DOM; chromium said:\n{log}"));
    lines.lines().map(str::to_string).collect()
}

/// The text Chromium rendered for each element that `selector` matches on `page` (its
/// `textContent` after layout: SVG `<text>` included), one string an element.
fn rendered_texts(chromium: &Path, page: &Path, dir: &Path, selector: &str) -> Vec<String> {
    let body = format!(
        "document.querySelectorAll({selector:?}).forEach(function(e){{out.push(e.textContent.replace(/\\s+/g,' '));}});"
    );
    rendered_lines(chromium, page, dir, "texts", &body)
}

/// What Chromium laid out: the size (width, height in CSS pixels) of each element that
/// each of `selectors` matches on `page` (`getBoundingClientRect`): an element hidden,
/// collapsed or left out of the layout measures 0.
fn rendered_sizes(chromium: &Path, page: &Path, dir: &Path, selectors: &[&str]) -> Vec<(String, f64, f64)> {
    let list: Vec<String> = selectors.iter().map(|s| format!("{s:?}")).collect();
    let body = format!(
        "[{}].forEach(function(s){{document.querySelectorAll(s).forEach(function(e){{var r=e.getBoundingClientRect();out.push(s+'|'+r.width.toFixed(1)+'|'+r.height.toFixed(1));}});}});",
        list.join(",")
    );
    rendered_lines(chromium, page, dir, "measured", &body)
        .iter()
        .map(|l| {
            let mut f = l.split('|');
            let (s, w, h) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
            (s.to_string(), w.parse().unwrap(), h.parse().unwrap())
        })
        .collect()
}

/// Issue 11: the HTML report renders in Chromium without errors.
fn html_report_renders_in_chromium_without_errors() {
    let chromium = chromium().expect("found before the test began");
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let content = Page {
        title: "fsynclab report: flush 2 ms against 4 ms".into(),
        runs: vec![run("run 1 (flush=2ms)", 20_000, 1), run("run 2 (flush=4ms)", 20_000, 2)],
        matrix: Some(matrix()),
    };
    let html = html::render(&content);
    std::fs::write(&page, &html).unwrap();

    assert_self_contained(&html);

    let (rgba, width, height, console) = render_in_chromium(&chromium, &page, dir.path());
    assert!(console.is_empty(), "the page logged:\n{}", console.join("\n"));
    let pixels = (width * height) as usize;
    let not_white = rgba
        .chunks(4)
        .filter(|p| p[0] < 240 || p[1] < 240 || p[2] < 240)
        .count();
    // Heat-map colours (viridis: dark purple to yellow) and the red slow-call points.
    let purple = rgba.chunks(4).filter(|p| p[0] < 120 && p[1] < 90 && p[2] > 100).count();
    let red = rgba.chunks(4).filter(|p| p[0] > 190 && p[1] < 70 && p[2] < 70).count();
    let share = not_white as f64 / pixels as f64;
    if let Some(keep) = std::env::var_os("FSYNCLAB_KEEP_SCREENSHOT") {
        std::fs::copy(dir.path().join("shot.png"), keep).unwrap();
    }
    assert!(
        share > 0.05,
        "the screenshot is almost blank: {:.1}% of its pixels are not white",
        share * 100.0
    );
    assert!(purple > 2_000, "no heat map to be seen ({purple} dark purple pixels)");
    assert!(red > 200, "no slow calls to be seen ({red} red pixels)");
}

/// Issue 11: the console check above must be able to fail: a page that logs an error, and one that
/// throws, are caught.
fn chromium_console_errors_are_caught() {
    let chromium = chromium().expect("found before the test began");
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bad.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><p>x</p><script>console.error('boom'); notAFunction();</script></body></html>",
    )
    .unwrap();
    let (_, _, _, console) = render_in_chromium(&chromium, &page, dir.path());
    assert!(console.iter().any(|l| l.contains("boom")), "{console:?}");
    assert!(console.iter().any(|l| l.contains("notAFunction")), "{console:?}");
}

/// Nothing to fetch when opened: no URL but the SVG namespace, no script, no stylesheet
/// link; its only links are to its own parts (`href="#..."`).
fn assert_self_contained(html: &str) {
    assert_eq!(
        html.matches("http").count(),
        html.matches("http://www.w3.org/2000/svg").count()
    );
    for needle in ["<script", "<link", "src=", "url(", "@import"] {
        assert!(!html.contains(needle), "the report contains {needle}");
    }
    assert_eq!(
        html.matches("href=").count(),
        html.matches("href=\"#").count(),
        "a link out of the page"
    );
}

/// The box (x0, y0, x1, y1) around the pixels of colour `hex` in an image `width` wide.
fn bounding_box(rgba: &[u8], width: u32, hex: &str) -> Option<(usize, usize, usize, usize)> {
    let w = width as usize;
    let mut b: Option<(usize, usize, usize, usize)> = None;
    for (i, p) in rgba.chunks(4).enumerate() {
        if pixels_of(p, hex) == 1 {
            let (x, y) = (i % w, i / w);
            b = Some(b.map_or((x, y, x, y), |(x0, y0, x1, y1)| {
                (x0.min(x), y0.min(y), x1.max(x), y1.max(y))
            }));
        }
    }
    b
}

/// The pixels of an image `width` wide within `area`.
fn crop(rgba: &[u8], width: u32, area: (usize, usize, usize, usize)) -> Vec<u8> {
    let w = width as usize;
    let (x0, y0, x1, y1) = area;
    (y0..=y1)
        .flat_map(|y| rgba[(y * w + x0) * 4..(y * w + x1 + 1) * 4].iter().copied())
        .collect()
}

/// Pixels of `rgba` within 12 of colour `hex` (`#rrggbb`) in every channel.
fn pixels_of(rgba: &[u8], hex: &str) -> usize {
    let c = |i: usize| i64::from_str_radix(&hex[i..i + 2], 16).unwrap();
    let (r, g, b) = (c(1), c(3), c(5));
    rgba.chunks(4)
        .filter(|p| {
            (i64::from(p[0]) - r).abs() <= 12 && (i64::from(p[1]) - g).abs() <= 12 && (i64::from(p[2]) - b).abs() <= 12
        })
        .count()
}

/// Issue 16, item 3: two real runs of seed 000 (a prober behind a streaming writer, the
/// writer's chunk 64 KiB in one and 1 MiB in the other), explained, and their report:
/// rendered, the page shows the trade-off plot at its top (the runs' worst and p99 fsync
/// against the writer's MB/s, in each run's colour), each run's kernel timeline (dirty
/// memory and writeback, requests in flight, cache flushes, in colours nothing else on the
/// page uses), and a slow call's link leads to the row of its parts, which the page
/// highlights when it is the link's target.
fn the_report_draws_the_kernel_timeline_the_tradeoff_and_links_slow_calls_to_their_parts() {
    let chromium = chromium().expect("found before the test began");
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let state = common::PrivateState::new();
    let mut files = Vec::new();
    for chunk in ["64k", "1M"] {
        let file = dir.path().join(format!("chunk-{chunk}.json"));
        let out = common::fsynclab()
            .env(state.env().0, state.env().1)
            .args(["run", "overwrite-fsync", "--quiet", "--explain", "--dir"])
            .arg(&work)
            .args([
                "--set",
                "duration=3s",
                "--set",
                "sleep=200ms",
                "--set",
                "file_size=256M",
            ])
            .args(["--set", &format!("chunk={chunk}"), "--output"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        files.push(file);
    }
    let page = dir.path().join("report.html");
    let out = common::fsynclab()
        .arg("report")
        .args(&files)
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);

    use fsynclab::html::kernel_colours::{DIRTY, FLUSHES, IN_FLIGHT, TRADEOFF_FRAME, WRITEBACK};
    let (whole, width, _, console) = render_url(
        &chromium,
        &format!("file://{}", page.display()),
        dir.path(),
        (1100, 8000),
    );
    assert!(console.is_empty(), "the page logged:\n{}", console.join("\n"));
    // The trade-off plot, found by its background: each run a dot (worst) and a ring (p99)
    // in its colour inside it.
    let frame = bounding_box(&whole, width, TRADEOFF_FRAME).expect("no trade-off plot on the page");
    let inside = crop(&whole, width, frame);
    for colour in ["#1f77b4", "#ff7f0e"] {
        let n = pixels_of(&inside, colour);
        assert!(n > 60, "no trade-off point of colour {colour} in the plot ({n} pixels)");
    }
    // Both runs' kernel timelines.
    for (what, colour, least) in [
        ("dirty memory", DIRTY, 400),
        ("writeback", WRITEBACK, 400),
        ("requests in flight", IN_FLIGHT, 400),
        ("cache flushes", FLUSHES, 100),
    ] {
        let n = pixels_of(&whole, colour);
        assert!(
            n > least,
            "the kernel timeline shows no {what} ({n} pixels of {colour})"
        );
    }
    // Each kernel timeline ends with the slow calls explained, as bars.
    assert_eq!(html.matches("class=\"machine\"").count(), 2);
    assert!(html.matches("class=\"slow-call\"").count() >= 2, "no slow calls drawn");

    // The rendered DOM: Chromium laid out both kernel timelines and the trade-off plot
    // with a size, their lines, dots and slow-call bars inside them with one too.
    let sizes = rendered_sizes(
        &chromium,
        &page,
        dir.path(),
        &[
            "svg.machine",
            "svg.tradeoff",
            "svg.machine path[stroke]",
            "svg.machine rect.slow-call",
            "svg.tradeoff circle.tradeoff-worst",
        ],
    );
    let laid_out = |selector: &str| -> Vec<(f64, f64)> {
        sizes
            .iter()
            .filter(|(s, _, _)| s == selector)
            .map(|(_, w, h)| (*w, *h))
            .collect()
    };
    let machines = laid_out("svg.machine");
    assert_eq!(machines.len(), 2, "{sizes:?}");
    assert!(
        machines.iter().all(|&(w, h)| w > 300.0 && h > 100.0),
        "kernel timelines rendered as {machines:?}"
    );
    let tradeoff = laid_out("svg.tradeoff");
    assert_eq!(tradeoff.len(), 1, "{sizes:?}");
    assert!(
        tradeoff[0].0 > 300.0 && tradeoff[0].1 > 100.0,
        "trade-off plot rendered as {tradeoff:?}"
    );
    // A series line spans the run's clock: wider than a few pixels.
    let lines = laid_out("svg.machine path[stroke]");
    assert!(
        lines.iter().filter(|&&(w, _)| w > 100.0).count() >= 2 * 3,
        "too few kernel timeline lines drawn across the clock: {lines:?}"
    );
    let bars = laid_out("svg.machine rect.slow-call");
    assert!(
        bars.len() >= 2 && bars.iter().all(|&(w, h)| w > 0.0 && h > 0.0),
        "slow-call bars rendered as {bars:?}"
    );
    let dots = laid_out("svg.tradeoff circle.tradeoff-worst");
    assert!(
        dots.len() == 2 && dots.iter().all(|&(w, h)| w > 0.0 && h > 0.0),
        "trade-off dots rendered as {dots:?}"
    );

    // A slow call's link leads to its parts: opened at the link's target, the page shows
    // that row highlighted (tr:target). The window holds the whole page: headless Chromium
    // paints nothing when a screenshot has to scroll to a fragment.
    let target = html
        .split("<a href=\"#")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a slow call's link")
        .to_string();
    assert!(html.contains(&format!("<tr id=\"{target}\">")), "{target}");
    let (at, _, _, _) = render_url(
        &chromium,
        &format!("file://{}#{target}", page.display()),
        dir.path(),
        (1100, 8000),
    );
    let highlighted = pixels_of(&at, "#fff3bf");
    assert!(
        highlighted > 2_000,
        "the linked call's row is not shown highlighted ({highlighted} pixels)"
    );
    assert_eq!(common::leftovers(&work), Vec::<String>::new());
}

/// Issue 27: two runs that differ only in their filesystem are told apart on the page by
/// it: the runs table has a testbed column, and every run's name (in the tables, the CDF
/// legends, the headings) carries "ext4" or "xfs", as Chromium renders them.
fn a_report_of_an_ext4_and_an_xfs_run_names_each_by_its_filesystem() {
    let chromium = chromium().expect("found before the test began");
    let dir = tempfile::tempdir().unwrap();
    let backing = common::backing();
    let state = common::PrivateState::new();
    let store = dir.path().join("runs.sqlite");
    for fs in ["ext4", "xfs"] {
        let out = common::ScratchRun::run("fsync-tps")
            .quiet()
            .set("threads", "1")
            .set("coordination", "none")
            .set("duration", "1s")
            .fs(fs)
            .size("320M")
            .device("hdd-5400")
            .backing(backing.path())
            .arg("--no-explain")
            .arg("--store")
            .arg(&store)
            .command()
            .env(state.env().0, state.env().1)
            .output()
            .unwrap();
        assert!(out.status.success(), "{fs}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let page = dir.path().join("report.html");
    let out = common::fsynclab()
        .args(["report", "1", "2", "--store"])
        .arg(&store)
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let rows = rendered_texts(&chromium, &page, dir.path(), "table:first-of-type tr");
    assert_eq!(rows.len(), 3, "a header and two runs: {rows:?}");
    assert!(rows[0].contains("testbed"), "no testbed column: {}", rows[0]);
    for (row, fs) in rows[1..].iter().zip(["ext4", "xfs"]) {
        assert!(
            row.contains(&format!("run {} ({fs})", if fs == "ext4" { 1 } else { 2 })),
            "{row}"
        );
        assert!(row.contains(&format!("{fs} hdd-5400")), "the testbed cell: {row}");
    }
    let legends = rendered_texts(&chromium, &page, dir.path(), "svg.cdf text");
    for fs in ["ext4", "xfs"] {
        let name = format!("run {} ({fs})", if fs == "ext4" { 1 } else { 2 });
        assert!(
            legends.iter().any(|l| l.starts_with(&name)),
            "no CDF legend names {name}: {legends:?}"
        );
    }
    let headings = rendered_texts(&chromium, &page, dir.path(), "h2");
    assert!(headings.iter().any(|h| h.starts_with("run 1 (ext4)")), "{headings:?}");
    assert!(headings.iter().any(|h| h.starts_with("run 2 (xfs)")), "{headings:?}");
    assert!(common::leftovers(backing.path()).is_empty());
}
