//! `fsync-errors` (issue 15): what each filesystem tells an application after a failed
//! writeback — PostgreSQL's "fsyncgate" (2018), tabulated by Rebello et al., "Can
//! Applications Recover from fsync Failures?" (USENIX ATC 2020).
//!
//! For each filesystem of `--set fs` (ext4 data=ordered, ext4 data=journal, XFS and Btrfs by
//! default) the scenario makes a scratch filesystem of its own on an emulated disk (`--set
//! device`), runs the fsyncgate sequence on it ([`sequence`]) with the disk failing the
//! writes of one data block (`--set fault=block`, as published), every write (`disk`: the
//! journal and metadata too), or one cache flush followed by a power cut (`flush`: what a
//! retried fsync made durable), and computes the row of the behaviour table: the error reported
//! by the first fsync and by the second, to a descriptor opened before the error and one
//! opened after, the page's content after the error, what is on the disk after a remount
//! with the disk healthy, and the filesystem's state. The table sets the published rows
//! beside the measured ones ([`details`]). `fault=flush` is issue 15's item 4, faults and
//! power cuts together: a cut after a failed flush, the filesystem recovered by the
//! power-cut cycle of [`crate::testbed::power`].
//!
//! Why the scenario makes its own filesystems rather than run on the testbed it is given:
//! every row needs a filesystem made for it (a failed writeback can leave one read-only or
//! shut down, so rows cannot share one) on a disk fsynclab can make fail (never a user's
//! directory); and the table is one result, stored, shown and exported whole, where a
//! matrix would make one run per filesystem and tabulate numbers. The rows' scratch
//! directories live in the run's work directory; each is undone before the next is made.

mod details;
mod locate;
mod sequence;

use std::time::Duration;

use anyhow::Result;

pub(crate) use details::Details;
use details::Row;
use sequence::Scope;

use super::{Context, GuestDisk, Outcome, Plan, Scenario};
use crate::error::Usage;
use crate::measure::Recorder;
use crate::observe::{Event, Unit};
use crate::params::{scenario_params, Params, ScenarioParams};
use crate::testbed::command::find_tool;
use crate::testbed::device::DeviceProfile;
use crate::testbed::scratch::{self, ScratchSpec};

/// The block size of the file: one page.
const BLOCK: usize = 4096;
/// The content of every block before the sequence, and of the target block after the write.
const OLD: u8 = b'o';
const NEW: u8 = b'n';

scenario_params! {
    /// The scenario's parameters, as read.
    struct FsyncErrorsParams {
        /// the filesystems, one row each: FS[:MOUNT_OPTIONS] separated by commas
        fs: String = text(check_filesystems, DEFAULT_FS),
        /// what fails: block (the writes of the file's data block, as published), disk (every write: journal
        /// and metadata too) or flush (one cache flush, then the power is cut)
        fault: Scope = choice("block"),
        /// the emulated disk under each filesystem (`fsynclab list-devices`); the scenario sets its faults
        device: String = text(check_device, DEFAULT_DEVICE),
    }
}

/// The filesystems of the published table.
const DEFAULT_FS: &str = "ext4:data=ordered,ext4:data=journal,xfs,btrfs";
/// A fast emulated disk: the sequence is a few requests, and the timing is not the point.
const DEFAULT_DEVICE: &str = "nvme";

pub(crate) static FSYNC_ERRORS: Scenario = Scenario {
    name: "fsync-errors",
    purpose:
        "what each filesystem tells an application after a failed writeback (fsyncgate), beside the published table",
    seed: "none (Rebello et al., ATC 2020; PostgreSQL's fsyncgate, 2018)",
    params: FsyncErrorsParams::specs,
    plan,
};

fn plan(params: &Params) -> Result<Box<dyn Plan>> {
    let p = FsyncErrorsParams::from_params(params)?;
    let filesystems = filesystems(&p.fs).map_err(|e| Usage(format!("--set fs={}: {e}", p.fs)))?;
    let device = device(&p.device).map_err(|e| Usage(format!("--set device={}: {e}", p.device)))?;
    if !crate::sys::is_root() {
        return Err(
            Usage("fsync-errors makes scratch filesystems on emulated disks: run fsynclab as root".into()).into(),
        );
    }
    for spec in &filesystems {
        if let Some(missing) = scratch::missing_tool(&spec.fstype, |t| find_tool(t).is_some()) {
            let why = missing.split_once(": ").map_or(missing.as_str(), |(_, why)| why);
            return Err(Usage(format!("--set fs={}: {why}", spec.fstype)).into());
        }
    }
    if !std::path::Path::new("/dev/fuse").exists() {
        return Err(Usage(
            "fsync-errors needs FUSE for its emulated disks and /dev/fuse is missing; load it with `modprobe fuse`"
                .into(),
        )
        .into());
    }
    Ok(Box::new(Config {
        filesystems,
        scope: p.fault,
        device,
    }))
}

/// `--set fs`: filesystems separated by commas, a piece that is not a filesystem continuing
/// the mount options of the one before (`ext4:data=journal,commit=5,xfs`).
fn filesystems(text: &str) -> Result<Vec<ScratchSpec>, String> {
    let mut pieces: Vec<String> = Vec::new();
    for piece in text.split(',').map(str::trim) {
        match pieces.last_mut() {
            Some(last) if ScratchSpec::parse(piece).is_err() && last.contains(':') => {
                last.push(',');
                last.push_str(piece);
            }
            _ => pieces.push(piece.to_string()),
        }
    }
    let specs = pieces
        .iter()
        .map(|p| ScratchSpec::parse(p).map_err(|e| e.0.replacen(&format!("--scratch {p}: "), "", 1)))
        .collect::<Result<Vec<_>, _>>()?;
    if specs.is_empty() {
        return Err("name at least one filesystem".into());
    }
    Ok(specs)
}

fn check_filesystems(text: &str) -> Result<(), String> {
    filesystems(text)
        .map(|_| ())
        .map_err(|e| format!("filesystems as FS[:MOUNT_OPTIONS],... ({e})"))
}

/// `--set device`: an emulated disk without faults of its own.
fn device(text: &str) -> Result<DeviceProfile, String> {
    let profile = DeviceProfile::parse(text).map_err(|e| e.0.replacen(&format!("--device {text}: "), "", 1))?;
    match &profile {
        DeviceProfile::Emulated(p) if !p.figures.faults.is_empty() => {
            Err("the scenario sets the disk's faults itself; give the profile without fail=".into())
        }
        DeviceProfile::Emulated(_) => Ok(profile),
        _ => Err("the faults need an emulated disk: one of `fsynclab list-devices`, not host or ram".into()),
    }
}

fn check_device(text: &str) -> Result<(), String> {
    device(text)
        .map(|_| ())
        .map_err(|e| format!("an emulated disk profile ({e})"))
}

struct Config {
    filesystems: Vec<ScratchSpec>,
    scope: Scope,
    device: DeviceProfile,
}

impl Plan for Config {
    fn space_needed(&self) -> u64 {
        // The images are on the emulated disks' private tmpfs, in memory.
        0
    }

    fn expected_duration(&self) -> Option<Duration> {
        None
    }

    fn untraceable_calls(&self) -> Option<&'static str> {
        Some("fsync-errors times no call for its latency: its calls fail on purpose")
    }

    fn guest_disk(&self) -> GuestDisk {
        // A new filesystem on a new failing disk for each row: the guest makes them.
        GuestDisk::InGuest
    }

    fn run(&self, ctx: &mut Context<'_>) -> Result<Outcome> {
        let mut rows = Vec::new();
        ctx.observer.event(Event::Phase {
            name: "filesystems",
            total: Some(self.filesystems.len() as u64),
            unit: Unit::Items,
        });
        // Mount options are the kernel's to judge, as with --scratch: each filesystem given
        // some is mounted once before anything is measured, so that options `run --scratch`
        // refuses are refused here too, in its words (exit status 2, no run stored), instead
        // of making a run whose row is "not measured" (issue 24).
        for spec in self.filesystems.iter().filter(|s| !s.mount_options.is_empty()) {
            match sequence::try_mount(spec, &self.device, ctx.dir) {
                Ok(()) => {}
                Err(_) if ctx.stop.is_set() => break,
                Err(e) => {
                    return Err(match e.downcast::<Usage>() {
                        Ok(refused) => Usage(refused.0.replacen("--scratch ", "--set fs=", 1)).into(),
                        Err(e) => e,
                    })
                }
            }
        }
        for spec in &self.filesystems {
            if ctx.stop.is_set() {
                break;
            }
            let row = match sequence::measure(spec, &self.device, self.scope, ctx.dir) {
                Ok(b) => Row::Measured(Box::new(b)),
                // A signal reached the mkfs or mount: the run ends, without this row.
                Err(_) if ctx.stop.is_set() => break,
                Err(e) => Row::NotMeasured {
                    filesystem: sequence::spec_label(spec),
                    why: format!("{e:#}"),
                },
            };
            rows.push(row);
            ctx.observer.event(Event::Progress {
                done: rows.len() as u64,
            });
        }
        Ok(Outcome {
            recorder: Recorder::new(),
            background: None,
            details: super::Details::FsyncErrors(Details {
                device: self.device.to_string(),
                fault: self.scope.name().to_string(),
                rows,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filesystems_keep_their_mount_options_together() {
        let specs = filesystems("ext4:data=journal,commit=5,xfs, btrfs").unwrap();
        let labels: Vec<String> = specs.iter().map(sequence::spec_label).collect();
        assert_eq!(labels, ["ext4:data=journal,commit=5", "xfs", "btrfs"]);
        assert_eq!(filesystems(DEFAULT_FS).unwrap().len(), 4);
        let err = filesystems("ext4,zfs").unwrap_err();
        assert!(err.contains("unknown filesystem 'zfs'"), "{err}");
    }

    #[test]
    fn the_device_is_an_emulated_disk_without_faults() {
        assert!(device("nvme").is_ok());
        assert!(device("ram").unwrap_err().contains("need an emulated disk"));
        assert!(device("nvme,fail=flush").unwrap_err().contains("without fail="));
        assert!(device("floppy").unwrap_err().contains("unknown profile 'floppy'"));
    }
}

#[cfg(test)]
mod params_tests {
    use super::*;

    #[test]
    fn every_parameter_declared_is_read_and_every_one_read_is_declared() {
        crate::params::assert_declared_and_read::<FsyncErrorsParams>(&FSYNC_ERRORS.params());
    }
}
