//! The tests of the result: timestamps, buffered and atomic writes, typed cells and
//! findings read back, and what a later version adds kept.

use super::*;

#[test]
fn rfc3339_to_the_second() {
    let now = now_rfc3339();
    assert_eq!(now.len(), "2026-11-22T03:45:55Z".len(), "{now}");
    assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T', "{now}");
}

/// Write system calls this thread made so far (`syscw` of /proc/thread-self/io,
/// Documentation/filesystems/proc.rst, section 3.3).
fn write_calls() -> u64 {
    std::fs::read_to_string("/proc/thread-self/io")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("syscw: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Issue 8, item 6: a 7 MB result took 3,016,351 write(2) calls, and 12.9 s to exit
/// after SIGTERM. Buffered, a result of 100,000 samples takes a handful.
#[test]
/// Issue 8.
fn results_are_written_through_a_buffer() {
    let samples: Vec<crate::measure::Sample> = (0..100_000)
        .map(|i| crate::measure::Sample {
            t_ns: i * 1000,
            op: OpKind::Fsync,
            latency_ns: 123_456,
            bytes: 4096,
            error: None,
            process: None,
            tid: 0,
        })
        .collect();
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("r.json");
    let before = write_calls();
    write_json_atomically(&samples, &path).unwrap();
    let calls = write_calls() - before;
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 5_000_000, "{size}");
    // About one call per MiB of buffer.
    assert!(calls < 50, "{calls} write calls for {size} bytes");
}

/// Issue 14: table cells are typed, and stored as the JSON strings and numbers they
/// always were; what a result holds that is neither is kept as it was.
#[test]
/// Issue 14.
fn cells_are_stored_as_strings_and_numbers_and_read_back_typed() {
    let row: Vec<Cell> = vec![
        "wal".into(),
        4096u64.into(),
        812.5.into(),
        3.0.into(),
        f64::NAN.into(),
        Cell::Other(serde_json::json!(-3)),
    ];
    let text = serde_json::to_string(&row).unwrap();
    assert_eq!(text, r#"["wal",4096,812.5,3.0,null,-3]"#);
    let back: Vec<Cell> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, row);
    assert_eq!(back[3], Cell::Figure(3.0), "3.0 stays a figure, 4096 a count");
}

/// Issue 14: findings are stored as the lines they print; read back, the kinds this
/// version writes are those kinds again, and any other line is kept as its text.
#[test]
/// Issue 14.
fn findings_are_stored_as_lines_and_read_back_typed() {
    let findings = vec![
        Finding::Conclusion("floor: a durable 4 KiB overwrite costs 2.274ms at the median".into()),
        Finding::Device(DeviceFinding::Flushes {
            flushes: 9,
            per_sync_call: Some((1.5, 6)),
        }),
        Finding::SysctlsChanged(SysctlsChanged(vec![crate::environment::SysctlChange {
            name: "dirty_ratio".into(),
            was: 20,
            now: 5,
        }])),
    ];
    let text = serde_json::to_string(&findings).unwrap();
    assert_eq!(
        text,
        r#"["floor: a durable 4 KiB overwrite costs 2.274ms at the median","device: 9 cache flushes during the run, 1.50 per foreground sync call (6 calls; setup included)","sysctls: vm.dirty_ratio 20 -> 5 during the run (set by another process); the environment records the values at the start"]"#
    );
    let back: Vec<Finding> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, findings);
}

/// Issue 14: a later version's result — a key, a scenario's details this version does
/// not know — is read, and written again with them.
#[test]
/// Issue 14.
fn what_a_later_version_adds_is_kept() {
    let mut object = match serde_json::to_value(crate::result::tests_support::empty_result()).unwrap() {
        serde_json::Value::Object(o) => o,
        _ => unreachable!("a result is an object"),
    };
    object.insert("hints".into(), serde_json::json!([{"text": "later"}]));
    object.insert("details".into(), serde_json::json!({"new-scenario": {"rounds": 3}}));
    let result = RunResult::from_object(object.clone()).unwrap();
    assert_eq!(result.details, None);
    assert_eq!(result.extra.len(), 2, "{:?}", result.extra);
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        serde_json::Value::Object(object)
    );
}

#[test]
fn atomic_write_leaves_no_temp_file() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("r.json");
    write_json_atomically(&serde_json::json!({"a": 1}), &p).unwrap();
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    assert_eq!(v["a"], 1);
}
