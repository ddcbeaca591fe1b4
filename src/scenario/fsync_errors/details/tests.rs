//! The tests of the fsync-errors details: the behaviour table and what each call returned.

use super::published::published;
use super::*;
use crate::scenario::table::Cell;
use crate::scenario::Views as _;

fn call(error: Option<i32>) -> Call {
    Call {
        error: error.map(Errno),
        latency_ns: 1,
        disk_failed: 0,
        flushes: 0,
    }
}

fn ordered_as_published() -> Behaviour {
    Behaviour {
        filesystem: "ext4:data=ordered".into(),
        fault: "fail=write:range=1+4096".into(),
        write: call(None),
        first_fsync: Call {
            disk_failed: 1,
            ..call(Some(libc::EIO))
        },
        writeback: None,
        second_fsync: call(None),
        page: Content::New,
        fd_before: call(Some(libc::EIO)),
        fd_after: call(None),
        disk_failed: 1,
        state: FsState::Writable,
        on_disk: Ok(Content::Old),
        cut: None,
        kernel: Vec::new(),
    }
}

/// The details of a run that measured one row, `b`, on `device` under `fault`.
fn one_row(device: &str, fault: &str, b: Behaviour) -> Details {
    Details {
        device: device.into(),
        fault: fault.into(),
        rows: vec![Row::Measured(Box::new(b))],
    }
}

#[test]
fn blocks_read_as_new_old_zeros_or_mixed() {
    assert_eq!(Content::of(&[NEW; BLOCK]), Content::New);
    assert_eq!(Content::of(&[OLD; BLOCK]), Content::Old);
    assert_eq!(Content::of(&[0; BLOCK]), Content::Zeros);
    let mut mixed = [OLD; BLOCK];
    mixed[0] = NEW;
    assert_eq!(Content::of(&mixed), Content::Other);
}

#[test]
fn the_published_row_is_found_by_type_and_data_mode() {
    assert_eq!(published("ext4").unwrap().first_fsync, "EIO");
    assert_eq!(published("ext4:data=journal,commit=5").unwrap().second_fsync, "EIO");
    assert_eq!(published("btrfs").unwrap().page, "old");
    assert!(published("ext2").is_none());
}

#[test]
fn a_row_as_published_differs_in_nothing_and_reports_the_silent_loss() {
    let b = ordered_as_published();
    let published = published(&b.filesystem).unwrap();
    assert_eq!(b.differences(published), Vec::<String>::new());
    let details = one_row("nvme", "block", b);
    let findings = details.findings();
    assert!(
        findings[0].contains("returned 0 while the disk kept the old data"),
        "{findings:?}"
    );
    assert!(findings[1].contains("reads return the new data"), "{findings:?}");
    let tables = details.tables();
    assert_eq!(tables.len(), 2);
    let cells: Vec<String> = tables[0].rows[0]
        .iter()
        .map(|c| match c {
            Cell::Text(s) => s.clone(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(
        cells,
        [
            "ext4:data=ordered",
            "EIO",
            "-",
            "0",
            "EIO",
            "0",
            "new",
            "old",
            "writable"
        ]
    );
}

#[test]
fn a_difference_from_the_published_row_is_a_finding() {
    let b = Behaviour {
        page: Content::Old,
        ..ordered_as_published()
    };
    let details = one_row("nvme", "block", b);
    let findings = details.findings();
    assert!(
        findings
            .iter()
            .any(|f| f.contains("differs from ATC'20: page old (published: new)")),
        "{findings:?}"
    );
}

#[test]
fn when_the_disk_stops_taking_writes_the_state_is_said_with_the_kernels_words() {
    let b = Behaviour {
        filesystem: "xfs".into(),
        second_fsync: Call {
            disk_failed: 3,
            ..call(Some(libc::EIO))
        },
        state: FsState::Refusing(Errno(libc::EIO)),
        kernel: vec![
            "XFS (loop0): log I/O error -5".into(),
            "XFS (loop0): Filesystem has been shut down due to log error (0x2).".into(),
        ],
        ..ordered_as_published()
    };
    let details = one_row("nvme", "disk", b);
    let tables = details.tables();
    assert_eq!(tables.len(), 1, "no published row for a whole disk failing");
    assert!(tables[0].title.contains("the disk stopped taking writes"));
    // A failed write in the second fsync may be the journal's: the page is not called dirty.
    assert_eq!(tables[0].rows[0][6], Cell::Text("new".into()));
    let findings = details.findings();
    assert!(
        findings.iter().any(|f| f
            == "xfs: refuses changes (EIO) once the disk was healthy again; the kernel said: XFS (loop0): Filesystem has been shut down due to log error (0x2)."),
        "{findings:?}"
    );
    assert!(!findings.iter().any(|f| f.contains("ATC'20")), "{findings:?}");
}

#[test]
/// Issue 15.
fn after_a_failed_flush_the_cut_says_which_call_flushed_again() {
    let cut = crate::environment::PowerCut {
        trigger: "now".into(),
        keep: "none".into(),
        held_writes: 2,
        lost_writes: 2,
        ..Default::default()
    };
    let b = Behaviour {
        filesystem: "xfs".into(),
        fault: "fail=flush:times=1".into(),
        on_disk: Ok(Content::Old),
        cut: Some(cut),
        ..ordered_as_published()
    };
    let details = one_row("ssd-sata,request=200ms", "flush", b.clone());
    let findings = details.findings();
    assert!(findings.iter().any(|f| f == "xfs: after the failed flush, the 2nd fsync, the fsync through the descriptor opened after returned 0 without flushing the cache again"), "{findings:?}");
    assert!(
        findings
            .iter()
            .any(|f| f == "xfs: the cut lost 2 writes the drive still held, the new data among them"),
        "{findings:?}"
    );
    assert!(!findings.iter().any(|f| f.contains("ATC'20")), "{findings:?}");
    let tables = details.tables();
    assert_eq!(tables.len(), 1);
    assert_eq!(tables[0].columns[7], "on disk after the power cut");
    assert_eq!(tables[0].rows[0][3], Cell::Text("0 (no flush)".into()));
    // A call that flushed says so.
    let flushed = Behaviour {
        second_fsync: Call {
            flushes: 1,
            ..b.second_fsync
        },
        on_disk: Ok(Content::New),
        ..b
    };
    let findings = Details {
        rows: vec![Row::Measured(Box::new(flushed))],
        ..details
    }
    .findings();
    assert!(
        findings
            .iter()
            .any(|f| f == "xfs: after the failed flush, the 2nd fsync flushed the cache again"),
        "{findings:?}"
    );
}

#[test]
fn details_read_back_as_written() {
    let d = Details {
        device: "nvme".into(),
        fault: "block".into(),
        rows: vec![
            Row::Measured(Box::new(ordered_as_published())),
            Row::NotMeasured {
                filesystem: "btrfs".into(),
                why: "mkfs.btrfs is not installed".into(),
            },
        ],
    };
    let json = serde_json::to_string(&d).unwrap();
    assert_eq!(serde_json::from_str::<Details>(&json).unwrap(), d);
}
