//! Issue 11: the HTML report as a user sees it. A report of two compared runs and a matrix
//! table is rendered by headless Chromium (Debian's `chromium`, which scripts/setup.sh
//! installs); the screenshot must show the pictures (not a blank page) and the page must log
//! nothing to its console.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fsynclab::compare::table::{self, MatrixCell, TableSpec};
use fsynclab::compare::{Figure, Metric, RunFigures, Settings};
use fsynclab::html::{self, Page, PageRun};
use fsynclab::store::SampleColumns;

use common::Need::That;

common::tests! {
    issue11_html_report_renders_in_chromium_without_errors: [That("chromium (scripts/setup.sh installs it)", || chromium().is_some())],
    issue11_chromium_console_errors_are_caught: [That("chromium (scripts/setup.sh installs it)", || chromium().is_some())],
}

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file())
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
    PageRun {
        label: label.into(),
        scenario: "fsync-tps".into(),
        started_at: "2026-11-22T08:00:00Z".into(),
        duration_s: seconds as f64,
        params: [("coordination".to_string(), "none".to_string())].into_iter().collect(),
        figures: Some(figures),
        samples: SampleColumns::from_records(&samples),
        background: (0..seconds).map(|s| (s, (40 + (s * 37) % 60) << 20)).collect(),
        background_kind: Some("stream".into()),
    }
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
    let shot = dir.join("shot.png");
    let profile = dir.join("profile");
    let mut child = Command::new(chromium)
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
            "--window-size=1100,2400",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = reader.join().expect("stderr reader");
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

fn issue11_html_report_renders_in_chromium_without_errors() {
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

    // Nothing to fetch when opened: no URL but the SVG namespace, no script, no stylesheet link.
    assert_eq!(
        html.matches("http").count(),
        html.matches("http://www.w3.org/2000/svg").count()
    );
    for needle in ["<script", "<link", "src=", "href=", "url(", "@import"] {
        assert!(!html.contains(needle), "the report contains {needle}");
    }

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

/// The console check above must be able to fail: a page that logs an error, and one that
/// throws, are caught.
fn issue11_chromium_console_errors_are_caught() {
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
