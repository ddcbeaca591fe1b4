use super::*;

/// Issue 19, item 10: ranges are never expanded, and any number of ids and ranges is
/// read in groups under SQLite's limit of variables, merged in order, limit last.
#[test]
/// Issue 19.
fn ranges_and_long_lists_of_ids_are_read_in_groups() {
    let mut store = Store::open_in_memory().unwrap();
    for i in 0..1200 {
        let r = serde_json::json!({"scenario": "probe", "started_at": format!("2026-01-01T00:{:02}:{:02}Z", i / 60 % 60, i % 60), "duration_s": 1.0});
        store
            .record_run(&r, &[] as &[(u64, &str, u64, u64, Option<&str>)], None)
            .unwrap();
    }
    let ids = |f: &RunFilter| store.runs(f).unwrap().iter().map(|r| r.id.0).collect::<Vec<_>>();
    let whole = RunFilter {
        ranges: vec![(RunId(1), RunId(i64::MAX))],
        ..Default::default()
    };
    assert_eq!(ids(&whole), (1..=1200).collect::<Vec<_>>());
    // 1,000 single ids and 700 ranges, overlapping: more than one query each.
    let many = RunFilter {
        ids: (1..=1000).rev().map(RunId).collect(),
        ranges: (0..700).map(|i| (RunId(500 + i), RunId(501 + i))).collect(),
        limit: Some(3),
        ..Default::default()
    };
    assert_eq!(ids(&many), [1198, 1199, 1200]);
}

/// Issue 20: a reproduction's matrices share its id as a prefix; the next id is past
/// every one of them, and `--grep` finds their runs by the matrix id.
#[test]
/// Issue 20.
fn prefixed_ids_count_past_the_groups_and_grep_finds_their_runs() {
    let mut store = Store::open_in_memory().unwrap();
    assert_eq!(store.next_prefixed_id("reproduce").unwrap(), "reproduce1");
    for id in ["reproduce1-000", "reproduce2-003-bdi", "m1", "reproduce10x"] {
        store
            .create_matrix(&MatrixRecord {
                id: id.into(),
                scenario: "probe".into(),
                created_at: "2026-01-01T00:00:00Z".into(),
                plan: serde_json::json!({}),
            })
            .unwrap();
    }
    assert_eq!(store.next_prefixed_id("reproduce").unwrap(), "reproduce11");
    let ids: Vec<String> = store
        .matrices_with_prefix("reproduce1-")
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(ids, ["reproduce1-000"]);
    let r = serde_json::json!({"scenario": "probe", "started_at": "2026-01-01T00:00:00Z", "duration_s": 1.0});
    let none: &[(u64, &str, u64, u64, Option<&str>)] = &[];
    store.record_run(&r, none, None).unwrap();
    let place = MatrixPlace {
        matrix_id: "reproduce2-003-bdi".into(),
        axes: vec![("scratch".into(), "ext2".into())],
        repetition: 0,
    };
    let id = store.record_run(&r, none, Some(&place)).unwrap();
    let found = store
        .runs(&RunFilter {
            contains: vec!["reproduce2".into()],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(found.iter().map(|r| r.id).collect::<Vec<_>>(), [id]);
}

#[test]
fn like_patterns_escape_wildcards() {
    assert_eq!(like_anywhere("50%_a\\b"), "%50\\%\\_a\\\\b%");
}

/// A figure stored as JSON reads back as the very same number: a reproduction shown from
/// the store compares equal to the one printed as it ran (serde_json's default parser could
/// read a number back one unit in the last place off: a ratio 0.29777581128801206 printed
/// live was 0.2977758112880121 from the store in one CI run).
#[test]
fn a_stored_number_reads_back_bit_for_bit() {
    let mut bits: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..200_000 {
        bits ^= bits << 13;
        bits ^= bits >> 7;
        bits ^= bits << 17;
        // Ratios and rates as runs make them: a quotient of two figures.
        let x = (bits >> 11) as f64 / ((bits & 0xf_ffff) as f64 + 1.0);
        let text = serde_json::to_string(&serde_json::json!({ "ratio": x })).unwrap();
        let back = json_col(Some(text.clone()))["ratio"].as_f64().unwrap();
        assert_eq!(back.to_bits(), x.to_bits(), "{text} read back as {back}");
    }
}
