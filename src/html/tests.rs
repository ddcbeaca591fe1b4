use super::*;

fn run(label: &str, n: usize, scale: u64) -> PageRun {
    let samples: Vec<(u64, &str, u64, u64, Option<&str>)> = (0..n as u64)
        .map(|i| {
            let op = if i % 2 == 0 { "write" } else { "fsync" };
            (i * 50_000, op, (10_000 + (i * 7919) % 90_000) * scale, 4096, None)
        })
        .collect();
    PageRun {
        label: label.into(),
        scenario: "fsync-tps".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        duration_s: n as f64 * 50e-6,
        samples: SampleColumns::from_records(&samples),
        calls: n as u64,
        background: (0..5).map(|s| (s, ((s + 1) * 10) << 20)).collect(),
        background_kind: Some("stream".into()),
        ..PageRun::default()
    }
}

#[test]
fn a_page_is_self_contained_and_escapes_text() {
    let mut r = run("<a&b>", 2000, 1);
    r.params.insert("note".into(), "\"quoted\"".into());
    let page = render(&Page {
        title: "t <1>".into(),
        runs: vec![r, run("b", 2000, 3)],
        matrix: None,
    });
    assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
    assert!(page.contains("&lt;a&amp;b&gt;") && !page.contains("<a&b>"));
    assert!(page.contains("&quot;quoted&quot;"));
    // Nothing to fetch: no URL but the SVG namespace.
    let urls = page.matches("http").count();
    assert_eq!(
        urls,
        page.matches("http://www.w3.org/2000/svg").count(),
        "only the SVG namespace"
    );
    assert!(!page.contains("<script"));
    // Two runs, two kinds each: two CDFs and four timelines.
    assert_eq!(page.matches("class=\"cdf\"").count(), 2);
    assert_eq!(page.matches("class=\"timeline\"").count(), 4);
}

fn with_traits(label: &str, traits: &[(&str, &str)]) -> PageRun {
    PageRun {
        label: label.into(),
        scenario: "fsync-tps".into(),
        traits: traits.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..PageRun::default()
    }
}

#[test]
fn runs_are_named_by_what_differs_between_them_and_only_that() {
    let mut runs = vec![
        with_traits(
            "run 1",
            &[("filesystem", "ext4"), ("device", "hdd-5400"), ("threads", "threads=1")],
        ),
        with_traits(
            "run 2",
            &[("filesystem", "xfs"), ("device", "hdd-5400"), ("threads", "threads=1")],
        ),
    ];
    name_apart(&mut runs);
    assert_eq!(runs[0].label, "run 1 (ext4)");
    assert_eq!(runs[1].label, "run 2 (xfs)");

    let mut runs = vec![
        with_traits(
            "a",
            &[("filesystem", "ext4"), ("kernel", "6.1.0"), ("sync", "sync=fsync")],
        ),
        with_traits(
            "b",
            &[("filesystem", "ext4"), ("kernel", "6.18.4"), ("sync", "sync=fdatasync")],
        ),
        with_traits("c", &[("filesystem", "ext4"), ("kernel", "6.18.4")]),
    ];
    name_apart(&mut runs);
    assert_eq!(runs[0].label, "a (kernel 6.1.0, sync=fsync)");
    assert_eq!(runs[1].label, "b (kernel 6.18.4, sync=fdatasync)");
    assert_eq!(runs[2].label, "c (kernel 6.18.4, no sync)");

    let mut same = vec![
        with_traits("x", &[("filesystem", "ext4")]),
        with_traits("y", &[("filesystem", "ext4")]),
    ];
    name_apart(&mut same);
    assert_eq!((same[0].label.as_str(), same[1].label.as_str()), ("x", "y"));
}
