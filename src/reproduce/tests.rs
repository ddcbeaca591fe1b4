//! The seeds named on the command line, and every group planned as a matrix.

use super::*;

#[test]
/// Issue 20.
fn seeds_are_named_by_number_and_unknown_ones_refused_in_one_line() {
    let seeds = |s: &[&str]| {
        select(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>())
            .map(|v| v.iter().map(|e| e.seed()).collect::<Vec<_>>())
    };
    assert_eq!(seeds(&[]).unwrap(), ["000", "001", "002", "003", "004"]);
    assert_eq!(seeds(&["3", "001", "seed003"]).unwrap(), ["001", "003"]);
    let err = seeds(&["7"]).unwrap_err().to_string();
    assert_eq!(err, "reproduce: unknown seed '7'; valid: 000, 001, 002, 003, 004");
    assert!(seeds(&["abc"]).is_err());
}

#[test]
/// Issue 60: `004:datasync` runs one group of a seed; an unknown group is one line.
fn one_group_of_a_seed_is_named_seed_colon_group() {
    let named = |s: &[&str]| groups_named(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>(), Size::Quick);
    assert_eq!(named(&["004:datasync"]).unwrap(), [("004", "datasync".to_string())]);
    assert_eq!(
        named(&["004:datasync", "4"]).unwrap(),
        Vec::<(&str, String)>::new(),
        "the seed named alone too: all of its groups"
    );
    let err = named(&["004:nothing"]).unwrap_err().to_string();
    assert_eq!(
        err,
        "reproduce 004:nothing: seed 004 has no group 'nothing'; its groups: datasync, rndwr"
    );
    assert_eq!(
        select(&["004:rndwr".to_string()])
            .unwrap()
            .iter()
            .map(|e| e.seed())
            .collect::<Vec<_>>(),
        ["004"]
    );
    let choice = Choice {
        only: named(&["004:datasync"]).unwrap(),
        runs: Some(5),
    };
    let groups = plan_groups(&all()[4..], Size::Quick, "reproduce1", None, &choice).unwrap();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].matrix_id, "reproduce1-004-datasync");
    assert_eq!(groups[0].plan.repeat, 5);
}

#[test]
/// Issue 20.
fn every_group_of_every_seed_plans_as_a_matrix_would_run_it() {
    for size in [Size::Quick, Size::Full, Size::Smoke] {
        let groups = plan_groups(&all(), size, "reproduce1", None, &Choice::default()).unwrap();
        assert!(groups.len() >= 5, "{}", groups.len());
        for g in &groups {
            assert!(crate::matrix::is_matrix_id(&g.matrix_id), "{}", g.matrix_id);
            assert!(!g.plan.cells().is_empty());
        }
    }
}
