//! What a run asks of the testbed, typed: where its I/O goes (a directory, or a scratch
//! filesystem with its emulated disk, I/O scheduler, mkfs options, size and backing
//! directory, per-device dirty limits) and the writeback sysctls to set for it.
//!
//! A request is built once, by reading each option's text through its [`Key`]: from the
//! command line's flags (`cli::TargetArgs`) or from a matrix's shared options and axes. Both
//! go through [`TestbedRequest::from_options`], so the matrix accepts every testbed option
//! `run` accepts, with the same checks; the names of the options, which of them need a
//! scratch filesystem and which are sysctls exist here only. [`super::prepare`] is given
//! nothing else.

use std::path::PathBuf;

use super::bdi::BdiSpec;
use super::device::DeviceProfile;
use super::loopdev::SchedulerSpec;
use super::scratch_spec::ScratchSpec;
use crate::error::Usage;
use crate::units::{human_size, parse_duration, parse_size, UnitError};

/// A testbed option, by its command-line name (`--scratch-size`, or `scratch-size=` on a
/// matrix axis).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    Dir,
    Scratch,
    MkfsOpts,
    ScratchSize,
    Backing,
    Scheduler,
    Device,
    Bdi,
    DirtyRatio,
    DirtyBackgroundRatio,
    DirtyExpire,
}

impl Key {
    /// Every option, in the order `--help` lists them.
    pub const ALL: [Key; 11] = [
        Key::Dir,
        Key::Scratch,
        Key::MkfsOpts,
        Key::ScratchSize,
        Key::Backing,
        Key::Scheduler,
        Key::Device,
        Key::Bdi,
        Key::DirtyRatio,
        Key::DirtyBackgroundRatio,
        Key::DirtyExpire,
    ];

    /// The name without dashes in front: `scratch-size`.
    pub fn name(self) -> &'static str {
        match self {
            Key::Dir => "dir",
            Key::Scratch => "scratch",
            Key::MkfsOpts => "mkfs-opts",
            Key::ScratchSize => "scratch-size",
            Key::Backing => "backing",
            Key::Scheduler => "scheduler",
            Key::Device => "device",
            Key::Bdi => "bdi",
            Key::DirtyRatio => "dirty-ratio",
            Key::DirtyBackgroundRatio => "dirty-background-ratio",
            Key::DirtyExpire => "dirty-expire",
        }
    }

    /// The option named `name`; `dirty_ratio` and `dirty-ratio` are the same option.
    pub fn from_name(name: &str) -> Option<Key> {
        let dashed = name.trim().replace('_', "-");
        Key::ALL.into_iter().find(|k| k.name() == dashed)
    }

    /// Every name, for messages: `dir, scratch, mkfs-opts, ...`.
    pub fn names() -> String {
        Key::ALL.map(Key::name).join(", ")
    }

    /// Whether the option exists only on a scratch filesystem.
    pub fn scratch_only(self) -> bool {
        matches!(
            self,
            Key::MkfsOpts | Key::ScratchSize | Key::Backing | Key::Scheduler | Key::Device | Key::Bdi
        )
    }

    /// The `/proc/sys/vm` file the option sets, for the sysctls.
    pub fn sysctl(self) -> Option<&'static str> {
        match self {
            Key::DirtyRatio => Some("dirty_ratio"),
            Key::DirtyBackgroundRatio => Some("dirty_background_ratio"),
            // The kernel keeps it as a C int of centiseconds (Documentation/admin-guide/sysctl/vm.rst).
            Key::DirtyExpire => Some("dirty_expire_centisecs"),
            _ => None,
        }
    }

    /// How a message shows this option set to `value`.
    fn shown(self, value: &str, spelling: Spelling) -> String {
        match spelling {
            Spelling::Flag => format!("--{} {value}", self.name()),
            Spelling::Assignment => format!("{}={value}", self.name()),
        }
    }
}

/// How the options were written, so that a message quotes them as the user wrote them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spelling {
    /// Command-line flags: `--scratch-size 1x`.
    Flag,
    /// A matrix's axes and shared options: `scratch-size=1x`.
    Assignment,
}

/// What a run asks of the testbed.
#[derive(Clone, Debug, PartialEq)]
pub struct TestbedRequest {
    pub place: Place,
    /// The writeback sysctls to set for the run, by their `/proc/sys/vm` names, each with
    /// the option that asked for it.
    pub sysctls: Vec<Sysctl>,
}

/// Where the run's I/O goes.
#[derive(Clone, Debug, PartialEq)]
pub enum Place {
    /// A directory on a filesystem that is already there.
    Dir(PathBuf),
    /// A scratch filesystem made for the run.
    Scratch(Box<ScratchOptions>),
}

/// Everything `--scratch` takes, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct ScratchOptions {
    pub spec: ScratchSpec,
    pub mkfs_options: Vec<String>,
    /// The image's size; None: what the scenario needs plus a margin
    /// ([`ScratchSpec::default_size`]).
    pub size: Option<u64>,
    pub backing: PathBuf,
    pub scheduler: Option<SchedulerSpec>,
    pub device: DeviceProfile,
    /// Per-device dirty limits of the loop device (`--bdi strict_limit=1,max_bytes=4M`).
    pub bdi: Option<BdiSpec>,
}

/// One writeback sysctl to set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sysctl {
    pub key: Key,
    /// Its `/proc/sys/vm` name.
    pub name: &'static str,
    pub value: u64,
}

impl Default for TestbedRequest {
    /// The current directory, nothing changed.
    fn default() -> TestbedRequest {
        TestbedRequest {
            place: Place::Dir(PathBuf::from(".")),
            sysctls: Vec::new(),
        }
    }
}

impl TestbedRequest {
    /// Reads `options` (each option at most once; a later one replaces an earlier one) into
    /// a request, checking every value as the command line does. Without `dir` or `scratch`
    /// the run goes to the current directory.
    pub fn from_options(options: &[(Key, String)], spelling: Spelling) -> Result<TestbedRequest, Usage> {
        let get = |key: Key| options.iter().rev().find(|(k, _)| *k == key).map(|(_, v)| v.as_str());
        let Some(scratch) = get(Key::Scratch) else {
            if let Some(key) = Key::ALL.into_iter().find(|k| k.scratch_only() && get(*k).is_some()) {
                return Err(Usage(match spelling {
                    Spelling::Flag => format!(
                        "--{} applies to a scratch filesystem only: add --scratch FS (e.g. --scratch ext4) instead of --dir",
                        key.name()
                    ),
                    Spelling::Assignment => format!(
                        "{} needs a scratch filesystem, and dir names a directory: give --scratch FS instead of --dir",
                        key.name()
                    ),
                }));
            }
            return Ok(TestbedRequest {
                place: Place::Dir(PathBuf::from(get(Key::Dir).unwrap_or("."))),
                sysctls: sysctls(&get, spelling)?,
            });
        };
        if get(Key::Dir).is_some() {
            return Err(Usage(
                "dir and scratch exclude each other: a run goes to a directory or to a scratch filesystem".into(),
            ));
        }
        let spec = ScratchSpec::parse(scratch)?;
        let size = get(Key::ScratchSize)
            .map(|text| {
                let size = parse_size(text)
                    .map_err(|e| Usage(format!("{}: {e}", Key::ScratchSize.shown(text, spelling))))?
                    .get();
                if size < spec.min_size() {
                    return Err(Usage(format!(
                        "{}: {} needs at least {}",
                        Key::ScratchSize.shown(text, spelling),
                        spec.fstype,
                        human_size(spec.min_size())
                    )));
                }
                Ok(size)
            })
            .transpose()?;
        let device = get(Key::Device)
            .map(DeviceProfile::parse)
            .transpose()?
            .unwrap_or(DeviceProfile::Host);
        let options = ScratchOptions {
            spec,
            mkfs_options: get(Key::MkfsOpts)
                .map(|o| o.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
            size,
            backing: PathBuf::from(get(Key::Backing).unwrap_or(".")),
            scheduler: get(Key::Scheduler).map(SchedulerSpec::parse).transpose()?,
            device,
            bdi: get(Key::Bdi).map(BdiSpec::parse).transpose()?,
        };
        Ok(TestbedRequest {
            place: Place::Scratch(Box::new(options)),
            sysctls: sysctls(&get, spelling)?,
        })
    }

    /// The scratch filesystem asked for, if any.
    pub fn scratch(&self) -> Option<&ScratchOptions> {
        match &self.place {
            Place::Scratch(s) => Some(s),
            Place::Dir(_) => None,
        }
    }

    fn scratch_mut(&mut self) -> Option<&mut ScratchOptions> {
        match &mut self.place {
            Place::Scratch(s) => Some(s),
            Place::Dir(_) => None,
        }
    }

    /// The same request with its scratch filesystem's directory under `backing`.
    pub fn backed_by(&self, backing: PathBuf) -> TestbedRequest {
        let mut moved = self.clone();
        if let Some(s) = moved.scratch_mut() {
            s.backing = backing;
        }
        moved
    }

    /// Whether making it needs root: a scratch filesystem, or sysctls.
    pub fn needs_root(&self) -> bool {
        self.scratch().is_some() || !self.sysctls.is_empty()
    }

    /// The flags of the sysctls asked for, for messages: `--dirty-ratio, --dirty-expire`.
    pub fn sysctl_flags(&self) -> String {
        self.sysctls
            .iter()
            .map(|s| format!("--{}", s.key.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The sysctls among the options, checked.
fn sysctls<'a>(get: &impl Fn(Key) -> Option<&'a str>, spelling: Spelling) -> Result<Vec<Sysctl>, Usage> {
    let mut out = Vec::new();
    for key in [Key::DirtyRatio, Key::DirtyBackgroundRatio, Key::DirtyExpire] {
        let (Some(text), Some(name)) = (get(key), key.sysctl()) else {
            continue;
        };
        let value = match key {
            Key::DirtyExpire => {
                expire_centisecs(text).map_err(|e| Usage(format!("{}: {e}", key.shown(text, spelling))))?
            }
            _ => text.trim().parse::<u64>().ok().filter(|p| *p <= 100).ok_or_else(|| {
                Usage(format!(
                    "{}: expected a percentage from 0 to 100",
                    key.shown(text, spelling)
                ))
            })?,
        };
        out.push(Sysctl { key, name, value });
    }
    Ok(out)
}

/// `--dirty-expire 30s` in the kernel's centiseconds, which it keeps in a C int.
fn expire_centisecs(text: &str) -> Result<u64, String> {
    const MAX: u128 = i32::MAX as u128;
    let centisecs = match parse_duration(text) {
        Ok(d) => d.as_millis() / 10,
        Err(UnitError::DurationTooLong) => u128::MAX,
        Err(err) => return Err(err.to_string()),
    };
    if centisecs > MAX {
        return Err(format!(
            "too long; the kernel takes at most {} days",
            MAX / 100 / 86_400
        ));
    }
    Ok(centisecs as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(options: &[(Key, &str)], spelling: Spelling) -> Result<TestbedRequest, Usage> {
        let options: Vec<(Key, String)> = options.iter().map(|(k, v)| (*k, v.to_string())).collect();
        TestbedRequest::from_options(&options, spelling)
    }

    #[test]
    fn names_round_trip_and_underscores_are_dashes() {
        for key in Key::ALL {
            assert_eq!(Key::from_name(key.name()), Some(key));
        }
        assert_eq!(
            Key::from_name("dirty_background_ratio"),
            Some(Key::DirtyBackgroundRatio)
        );
        assert_eq!(Key::from_name("colour"), None);
    }

    #[test]
    fn a_directory_by_default_and_a_scratch_filesystem_when_asked() {
        assert_eq!(request(&[], Spelling::Flag).unwrap(), TestbedRequest::default());
        let r = request(
            &[
                (Key::Scratch, "ext4:nobarrier"),
                (Key::Scheduler, "bfq:slice_idle=8"),
                (Key::Device, "hdd-7200"),
                (Key::ScratchSize, "2G"),
                (Key::DirtyExpire, "30s"),
            ],
            Spelling::Assignment,
        )
        .unwrap();
        let s = r.scratch().unwrap();
        assert_eq!(
            (s.spec.fstype.as_str(), s.spec.mount_options.as_str()),
            ("ext4", "nobarrier")
        );
        assert_eq!(s.scheduler.as_ref().unwrap().to_string(), "bfq:slice_idle=8");
        assert_eq!(s.size, Some(2 << 30));
        assert_eq!(
            r.sysctls,
            [Sysctl {
                key: Key::DirtyExpire,
                name: "dirty_expire_centisecs",
                value: 3000
            }]
        );
        assert!(r.needs_root());
    }

    #[test]
    fn messages_quote_options_as_they_were_written() {
        let err = |o: &[(Key, &str)], s| request(o, s).unwrap_err().to_string();
        assert_eq!(
            err(&[(Key::Device, "ram")], Spelling::Flag),
            "--device applies to a scratch filesystem only: add --scratch FS (e.g. --scratch ext4) instead of --dir"
        );
        assert!(
            err(&[(Key::Scratch, "xfs"), (Key::ScratchSize, "100M")], Spelling::Flag)
                .starts_with("--scratch-size 100M: xfs needs at least")
        );
        assert!(err(
            &[(Key::Scratch, "ext4"), (Key::ScratchSize, "1x")],
            Spelling::Assignment
        )
        .starts_with("scratch-size=1x: "));
        assert_eq!(
            err(&[(Key::DirtyRatio, "101")], Spelling::Assignment),
            "dirty-ratio=101: expected a percentage from 0 to 100"
        );
        assert!(err(&[(Key::DirtyExpire, "10000h")], Spelling::Flag).contains("too long"));
        assert!(err(&[(Key::Scratch, "ext4"), (Key::Dir, "/tmp")], Spelling::Assignment).contains("exclude each other"));
    }
}
