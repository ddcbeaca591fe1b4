//! The tests of a matrix plan: axes read, cells crossed, order round-robin, testbeds checked.

use super::*;

/// A plan of fsync-tps over `axes`, two runs a cell (the other tests of plans start from it).
pub(super) fn plan(axes: &[(&str, &[&str])]) -> Plan {
    Plan {
        scenario: "fsync-tps".into(),
        sets: vec!["threads=2".into()],
        target: Vec::new(),
        axes: axes
            .iter()
            .map(|(k, v)| Axis {
                key: k.to_string(),
                values: v.iter().map(|s| s.to_string()).collect(),
            })
            .collect(),
        repeat: 2,
        figures: Vec::new(),
        columns: None,
        implied_scratch: false,
        placement: None,
        kernel_timeout: None,
        origin: None,
    }
}

/// Issue 17: on a farm a cell's repeats start at another place in the order each
/// repetition, so that a scheduler handing runs to nodes in order spreads each cell over
/// the nodes; on one host, and with a host axis, the order is the plain round-robin.
#[test]
/// Issue 17.
fn farm_repetitions_rotate_over_the_cells() {
    let mut p = plan(&[("coordination", &["none", "wal"])]);
    p.repeat = 3;
    assert_eq!(p.order(), [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]);
    p.placement = Some(Placement {
        engine: "slurm".into(),
        ..Default::default()
    });
    assert_eq!(p.order(), [(0, 0), (0, 1), (1, 1), (1, 0), (2, 0), (2, 1)]);
    p.axes.insert(
        0,
        Axis {
            key: HOST_AXIS.into(),
            values: vec!["n1".into(), "n2".into()],
        },
    );
    p.repeat = 1;
    assert_eq!(p.order(), [(0, 0), (0, 1), (0, 2), (0, 3)]);
}

#[test]
fn values_split_at_commas_but_keep_write_rates_and_mount_options() {
    assert_eq!(
        split_values("device", "ram,flush=5ms,write=80M,hdd-7200"),
        ["ram", "flush=5ms,write=80M", "hdd-7200"]
    );
    assert_eq!(
        split_values(
            "device",
            "flush=5ms,write=80M,flush=20ms,hdd-7200,flush=ignore,hdd-7200"
        ),
        ["flush=5ms,write=80M", "flush=20ms", "hdd-7200,flush=ignore", "hdd-7200"]
    );
    assert_eq!(
        split_values("scratch", "ext4:data=writeback,nobarrier,xfs"),
        ["ext4:data=writeback,nobarrier", "xfs"]
    );
    assert_eq!(split_values("threads", "1,8"), ["1", "8"]);
    assert_eq!(
        split_values(
            "bdi",
            "strict_limit=1,max_bytes=4M,strict_limit=1,max_bytes=1M,max_bytes=256k"
        ),
        [
            "strict_limit=1,max_bytes=4M",
            "strict_limit=1,max_bytes=1M",
            "max_bytes=256k"
        ]
    );
    assert_eq!(normalize_key("dirty_ratio"), "dirty-ratio");
    assert_eq!(normalize_key("record_size"), "record_size");
}

#[test]
fn cells_are_the_product_and_runs_go_round_robin() {
    let p = plan(&[("device", &["ram", "hdd-7200"]), ("coordination", &["none", "wal"])]);
    let cells = p.cells();
    assert_eq!(cells.len(), 4);
    assert_eq!(
        cells[1],
        vec![("device".into(), "ram".into()), ("coordination".into(), "wal".into())]
    );
    assert_eq!(
        p.order(),
        [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2), (1, 3)]
    );
}

#[test]
/// Issue 11.
fn a_device_axis_implies_a_scratch_ext4() {
    let mut p = plan(&[("device", &["ram", "hdd-7200"]), ("coordination", &["none", "wal"])]);
    p.check().unwrap();
    assert!(p.implied_scratch && p.needs_root());
    let t = p.target_for(&p.cells()[3]).unwrap();
    let s = t.scratch().unwrap();
    assert_eq!(s.spec.fstype, "ext4");
    assert!(matches!(&s.device, crate::testbed::device::DeviceProfile::Emulated(p) if p.name == "hdd-7200"));
    assert_eq!(p.sets_for(&p.cells()[3]), ["threads=2", "coordination=wal"]);
    // A directory and a device cannot go together.
    let mut p = plan(&[("device", &["ram"])]);
    p.target.push(("dir".into(), "/tmp".into()));
    assert!(p
        .check()
        .unwrap_err()
        .to_string()
        .contains("--scratch FS instead of --dir"));
}

/// Issue 14: the matrix reads testbed options as `run` reads its flags, tunables too.
#[test]
/// Issue 14.
fn a_scheduler_axis_takes_tunables_as_run_does() {
    let mut p = plan(&[("scheduler", &["bfq:slice_idle=8", "mq-deadline"])]);
    p.check().unwrap();
    let t = p.target_for(&p.cells()[0]).unwrap();
    assert_eq!(
        t.scratch().unwrap().scheduler.as_ref().unwrap().to_string(),
        "bfq:slice_idle=8"
    );
    let err = plan(&[("scheduler", &["cfq"])]).check().unwrap_err().to_string();
    assert!(err.contains("unknown scheduler 'cfq'"), "{err}");
}

#[test]
fn bad_axes_are_refused_before_anything_runs() {
    let err = |axes: &[(&str, &[&str])]| plan(axes).check().unwrap_err().to_string();
    assert!(err(&[("colour", &["red"])]).contains("a parameter of fsync-tps"));
    assert!(err(&[("device", &["ram", "ram"])]).contains("ram is given twice"));
    // Issue 19, item 15: one value spelled twice is the same value.
    assert!(err(&[("duration", &["1", "2s", "1000ms"])]).contains("1 and 1000ms are the same value"));
    assert!(err(&[("record_size", &["4k", "4096"])]).contains("4k and 4096 are the same value"));
    assert!(err(&[("scratch-size", &["1G", "1024M"])]).contains("1G and 1024M are the same value"));
    assert!(err(&[("device", &["flush=5ms", "flush=5000us"])]).contains("are the same value"));
    assert!(err(&[("dirty-ratio", &["10", "010"])]).contains("are the same value"));
    assert!(err(&[("device", &["floppy"])]).contains("--device floppy"));
    assert!(err(&[("coordination", &["none", "paxos"])]).contains("paxos"));
    assert!(err(&[("threads", &["2"])]).contains("both an axis and a setting"));
    assert!(plan(&[])
        .check()
        .unwrap_err()
        .to_string()
        .contains("at least one --axis"));
    assert!(!plan(&[("coordination", &["none", "wal"])]).needs_root());
}

/// Issue 17: host is an axis, which no cell takes as a parameter or testbed option.
#[test]
/// Issue 17.
fn host_is_an_axis_of_where_a_cell_runs() {
    let mut p = plan(&[("host", &["n1", "n2"]), ("coordination", &["none", "wal"])]);
    p.check().unwrap();
    let cell = &p.cells()[2];
    assert_eq!(cell.host(), Some("n2"));
    assert_eq!(p.sets_for(cell), ["threads=2", "coordination=none"]);
    assert!(!p.needs_root());
    assert!(plan(&[("host", &["n1", "n1"])])
        .check()
        .unwrap_err()
        .to_string()
        .contains("n1 is given twice"));
}
