//! Issue 26, item 4: `fsynclab reproduce --kernel A,B` makes every group's runs on each
//! kernel (host, and an installed Debian 6.1 booted under QEMU), stores them in the
//! reproduction's matrices with `kernel=` in their axes, and prints each finding's verdict
//! and figure on each kernel with what changed; a kernel that is not there is refused in
//! one line before anything is made. Each guest boot takes about a minute under TCG: the
//! test runs seed 004's smoke configuration (three cells, so three boots).
//!
//! Part of kernel_vm's binary so that its three guests take turns with that file's guests,
//! two at a time ([`a_guests_turn`]), instead of one after another in a binary of their own.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::guest::{a_guests_turn, debian_kernel};
use crate::common::{backing, fsynclab, traces_under};

/// A kernel that is not installed: one line, exit 2, no store made (before the root check,
/// so it holds for anyone).
pub fn a_kernel_that_is_not_there_is_refused_before_anything_is_made() {
    let dir = backing();
    let store = dir.path().join("s.sqlite");
    let out = fsynclab()
        .args(["reproduce", "004", "--smoke", "--kernel", "host,0.0.0-none", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("reproduce --kernel 0.0.0-none: no /boot/vmlinuz-0.0.0-none"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    assert!(!store.exists(), "nothing is stored");
}

pub fn each_finding_is_measured_on_both_kernels_side_by_side_and_stored_with_its_kernel() {
    let _turn = a_guests_turn();
    let kernel = debian_kernel().unwrap();
    let dir = backing();
    let store = dir.path().join("s.sqlite");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let started = Instant::now();
    let out = fsynclab()
        .args(["reproduce", "004", "--smoke", "--format", "json", "--kernel"])
        .arg(format!("host,{kernel}"))
        .arg("--store")
        .arg(&store)
        .arg("--backing")
        .arg(&work)
        .timeout(Duration::from_secs(900))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    eprintln!("the reproduction took {:?}", started.elapsed());
    // Progress lines name each run's kernel, the kernels in turn cell by cell.
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(lines.len(), 6, "{err}");
    for (i, l) in lines.iter().enumerate() {
        let k = if i % 2 == 0 { "host" } else { kernel.as_str() };
        assert!(l.contains(&format!(" kernel={k} #1: run ")), "{err}");
    }

    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["kernels"], serde_json::json!(["host", kernel]), "{r}");
    let seed = &r["seeds"][0];
    let sides = seed["by_kernel"].as_array().unwrap();
    assert_eq!(sides.len(), 2, "{r}");
    let mut ids = Vec::new();
    for (side, k) in sides.iter().zip(["host", kernel.as_str()]) {
        assert_eq!(side["kernel"], k);
        let rows = side["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 3, "{side}");
        for row in rows {
            // Measured (a figure and its runs), and with one smoke run a configuration
            // undecided: a verdict needs runs enough to tell it from noise.
            assert_eq!(
                row["verdict"], "inconclusive",
                "every finding is measured on {k}: {row}"
            );
            assert!(!row["measured"].as_str().unwrap().is_empty(), "{row}");
            ids.extend(
                row["runs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|i| (k.to_string(), i.as_i64().unwrap())),
            );
        }
    }
    let changes = seed["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 3, "{seed}");
    for c in changes {
        assert_eq!(
            (c["reference"].as_str(), c["kernel"].as_str()),
            (Some("host"), Some(kernel.as_str()))
        );
        let same = c["same_verdict"].as_bool().unwrap();
        assert_eq!(c["verdicts"].as_str().unwrap().starts_with("the same: "), same, "{c}");
        assert!(
            c["figure"].as_str().is_some() && c["ratio"].as_f64().unwrap() > 0.0,
            "{c}"
        );
        // One run a side: no change is claimed.
        assert_eq!(
            c["confidence"], "one run a side: cannot tell a change from noise",
            "{c}"
        );
        assert_eq!(c["significant"], false);
    }

    // Stored in the reproduction's matrices, each run with its kernel in its axes; the
    // guest's runs with the guest's kernel.
    let listed = fsynclab()
        .args(["runs", "--grep", "reproduce1", "--format", "json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 6, "{listed:?}");
    for run in listed {
        let cell = run["matrix"]["cell"].as_array().unwrap();
        let k = cell
            .iter()
            .find(|pair| pair[0] == "kernel")
            .and_then(|pair| pair[1].as_str())
            .unwrap_or_else(|| panic!("no kernel axis: {run}"));
        if k == "host" {
            assert!(run["vm"].is_null(), "{run}");
        } else {
            assert_eq!(k, kernel);
            assert_eq!(run["vm"]["release"], kernel.as_str(), "{run}");
        }
        let id = run["id"].as_i64().unwrap();
        if let Some((row_kernel, _)) = ids.iter().find(|(_, i)| *i == id) {
            assert_eq!(row_kernel, k, "run {id} judged on the wrong kernel");
        }
    }

    // The same side by side again from the store, in markdown too.
    let shown = fsynclab()
        .args(["reproduce", "--show", "reproduce1", "--format", "json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["seeds"][0]["by_kernel"], seed["by_kernel"]);
    assert_eq!(shown["seeds"][0]["changes"], seed["changes"]);
    let md = fsynclab()
        .args(["reproduce", "--show", "reproduce1", "--format", "markdown", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let md = String::from_utf8(md.stdout).unwrap();
    assert!(
        md.contains(&format!(
            "| seed | claim | published | host | {kernel} | what changed |"
        )),
        "{md}"
    );
    assert_eq!(md.lines().filter(|l| l.starts_with("| 004 |")).count(), 3, "{md}");

    // compare takes the kernel as an axis of the stored matrix.
    let compared = fsynclab()
        .args(["compare", "reproduce1-004-datasync:kernel=host"])
        .arg(format!("reproduce1-004-datasync:kernel={kernel}"))
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&compared.stdout);
    assert!(
        compared.status.success(),
        "{}",
        String::from_utf8_lossy(&compared.stderr)
    );
    assert!(text.contains("differ in: kernel"), "{text}");
    assert_eq!(traces_under(&work), Vec::<String>::new(), "left behind");
}
