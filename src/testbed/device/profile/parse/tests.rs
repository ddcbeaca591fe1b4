//! The tests of the profile parser: named profiles, KEY=VALUE overrides, faults and the ranges refused.

use super::super::super::model::Spindle;
use super::*;

#[test]
fn keys_adjust_a_named_profile() {
    let p = parse("hdd-5400,cache=0").unwrap();
    assert_eq!(p.figures.cache_bytes, 0);
    assert!(p.rotational());
    let p = parse("hdd-7200, nvcache=1G ,latency=100us").unwrap();
    assert!(p.figures.cache_durable);
    assert_eq!(p.figures.cache_bytes, 1 << 30);
    assert_eq!(p.figures.command_latency, Duration::from_micros(100));
    let p = parse("rpm=10000,rate=150M,seek=9ms,settle=500us,capacity=300G").unwrap();
    assert_eq!(
        p.figures.mechanics,
        Mechanics::Rotating(Spindle {
            rpm: 10000,
            settle: Duration::from_micros(500),
            full_stroke: Duration::from_millis(9),
            capacity_bytes: 300 << 30,
        }),
        "rpm= makes a rotating disk"
    );
}

#[test]
fn the_previous_release_syntax_keeps_its_meaning() {
    let p = parse("flush=20ms,write=80M").unwrap();
    assert_eq!(p.figures.flush_cost, Duration::from_millis(20));
    assert_eq!(p.figures.media_bytes_per_s, Some(80 << 20));
    assert_eq!(p.figures.cache_bytes, 0, "paced writes, acknowledged once written");
    assert_eq!(
        p.figures.mechanics,
        Mechanics::Solid {
            per_request: Duration::ZERO
        }
    );
    assert!(!p.rotational());
    let p = parse("flush=5ms").unwrap();
    assert_eq!(p.figures.media_bytes_per_s, None);
}

#[test]
fn faults_a_lying_drive_and_the_sector_are_profile_options() {
    let p = parse("hdd-7200,fail=write:range=1G+64M:after=100,fail=flush:after=5s:times=2:p=50%:seed=9").unwrap();
    assert_eq!(
        p.figures.faults,
        [
            FaultRule {
                range: Some((1 << 30, 64 << 20)),
                start: FaultStart::AfterRequests(100),
                ..FaultRule::always(FaultKind::Write)
            },
            FaultRule {
                start: FaultStart::AfterTime(Duration::from_secs(5)),
                times: Some(2),
                probability: 0.5,
                seed: 9,
                ..FaultRule::always(FaultKind::Flush)
            },
        ]
    );
    assert_eq!(
        parse("ssd-sata,fail=read").unwrap().figures.faults,
        [FaultRule::always(FaultKind::Read)]
    );
    let p = parse("hdd-5400,flush=ignore,sector=4k").unwrap();
    assert!(p.figures.ignores_flushes);
    assert_eq!(p.figures.sector_bytes, 4096);
    assert_eq!(parse("hdd-5400").unwrap().figures.sector_bytes, 512);
}

#[test]
/// Issue 19.
fn physically_absurd_figures_are_refused_with_the_valid_range() {
    for (bad, says) in [
        (
            "flush=1ms,write=1",
            "write=1 is beyond any real drive; valid: 600K to 64G per second (the ST-506 of 1980",
        ),
        (
            "rpm=1,rate=50M",
            "rpm=1 is beyond any real drive; valid: 3600 to 15000 (the ST-506",
        ),
        ("hdd-5400,rpm=100000", "valid: 3600 to 15000"),
        (
            "hdd-5400,bus=1k",
            "bus=1k is beyond any real drive; valid: 600K to 64G per second",
        ),
        (
            "hdd-5400,seek=10s",
            "seek=10s is beyond any real drive; valid: up to 10ms and 250ms",
        ),
        ("hdd-5400,settle=20ms", "valid: up to 10ms and 250ms"),
        ("request=5s", "request=5s is beyond any real drive; valid: up to 1s"),
        ("nvme,latency=2s", "valid: up to 1s"),
        ("flush=1h", "flush=1h is beyond any real drive; valid: up to 1s"),
        ("hdd-5400,capacity=1M", "valid: 5M to 100T"),
        ("hdd-5400,sector=1000", "valid: 512 to 64K, a power of two"),
    ] {
        let err = parse(bad).unwrap_err().to_string();
        assert!(err.contains(says), "{bad}: {err}");
    }
    // The ends of the ranges are real drives, and valid.
    for good in [
        "rpm=3600,rate=600K,seek=250ms,settle=10ms",
        "rpm=15000,rate=64G",
        "request=1s,latency=1s,flush=1s",
    ] {
        assert!(parse(good).is_ok(), "{good}");
    }
}

#[test]
fn every_named_profile_lies_within_the_ranges() {
    for named in named() {
        let f = (named.figures)();
        for rate in [f.media_bytes_per_s, f.bus_bytes_per_s].into_iter().flatten() {
            assert!((MIN_RATE..=MAX_RATE).contains(&rate), "{}", named.name);
        }
        if let Some(s) = f.spindle() {
            assert!((MIN_RPM..=MAX_RPM).contains(&s.rpm), "{}", named.name);
            assert!(
                s.settle <= MAX_SETTLE && s.full_stroke <= MAX_FULL_STROKE,
                "{}",
                named.name
            );
            assert!(
                (MIN_CAPACITY..=MAX_CAPACITY).contains(&s.capacity_bytes),
                "{}",
                named.name
            );
        }
        assert!(
            f.flush_cost <= MAX_COST && f.command_latency <= MAX_COST,
            "{}",
            named.name
        );
    }
}

#[test]
fn bad_fault_rules_say_what_is_valid_in_one_line() {
    for (bad, says) in [
        (
            "hdd-5400,fail=wrte",
            "fail=wrte: unknown kind 'wrte'; expected fail=write|read|flush[:range=",
        ),
        ("hdd-5400,fail=flush:range=0+4k", "a flush has no byte range"),
        ("hdd-5400,fail=write:range=1G", "range=1G: expected OFFSET+LENGTH"),
        ("hdd-5400,fail=write:range=1G+0", "an empty range matches nothing"),
        (
            "hdd-5400,fail=write:after=soon",
            "after=soon: expected a number of requests or a duration",
        ),
        (
            "hdd-5400,fail=write:p=2",
            "p=2: expected a probability above 0, at most 1",
        ),
        (
            "hdd-5400,fail=write:times=0",
            "times=0: expected how many requests fail, 1 or more",
        ),
        ("hdd-5400,fail=write:colour=red", "unknown condition 'colour'"),
        ("hdd-5400,fail=write:oops", "'oops' is not NAME=VALUE"),
    ] {
        let err = parse(bad).unwrap_err().to_string();
        assert!(err.contains(says), "{bad}: {err}");
        assert!(err.contains(FAIL_SYNTAX), "{bad}: says what is valid: {err}");
        assert!(!err.contains('\n'), "{err}");
    }
}

#[test]
fn bad_profiles_say_which_part_is_wrong() {
    for (bad, says) in [
        ("floppy", "unknown profile 'floppy'"),
        ("hdd-5400,cache=lots", "cache: "),
        ("flush=1ms,write=0", "write: a rate of 0 would never finish"),
        ("rpm=5400", "needs rate="),
        ("seek=9ms", "give rpm= first"),
        ("hdd-5400,seek=5ms,settle=9ms", "longer than the full-stroke"),
        ("nvme,colour=red", "unknown key 'colour'"),
        ("hdd-5400,cache", "not KEY=VALUE"),
    ] {
        let err = parse(bad).unwrap_err().to_string();
        assert!(err.contains(says), "{bad}: {err}");
    }
}
