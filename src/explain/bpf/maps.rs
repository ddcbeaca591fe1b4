//! What the kernel's maps hold, read and taken out: every call's latency histogram per
//! process and kind, the processes that ended (taken out so that a long watch keeps room),
//! the names of the processes seen, and what the kernel side could not keep.

use std::collections::{BTreeMap, HashMap};

use anyhow::{Context as _, Result};
use libbpf_rs::{MapCore as _, MapFlags};

use super::histogram::{self, LatencyKey};
use super::record::SyncKind;
use super::{BpfTracer, Lost};

impl BpfTracer {
    /// Every call's latency so far, per process and kind, from the in-kernel histograms.
    pub(crate) fn latencies(&self) -> Result<HashMap<(u32, SyncKind), histogram::Buckets>> {
        let map = self.map("latency")?;
        let mut out: HashMap<(u32, SyncKind), histogram::Buckets> = HashMap::new();
        for key in map.keys() {
            let Some(value) = map.lookup(&key, MapFlags::ANY).context("reading a latency histogram")? else {
                continue;
            };
            let (Some(k), Ok(count)) = (LatencyKey::parse(&key), <[u8; 8]>::try_from(value.as_slice())) else {
                continue;
            };
            if let Some(kind) = SyncKind::from_number(k.kind) {
                out.entry((k.pid, kind))
                    .or_default()
                    .add(k.bucket, u64::from_ne_bytes(count));
            }
        }
        Ok(out)
    }

    /// The histograms of the processes `alive` says have ended, taken out of the kernel's map
    /// with their names, so that a long watch of short-lived processes (a shell loop's `dd`,
    /// git, dpkg) keeps room in both maps for the processes that come after them: per
    /// process, its name (None if the kernel did not keep it) and its histogram of each kind.
    /// A process that has ended makes no more calls, so nothing counted is lost between the
    /// read and the removal. The processes go into `taken`, also those taken before an
    /// error: they are out of the kernel's map.
    pub(crate) fn take_ended(&self, alive: impl Fn(u32) -> bool, taken: &mut Vec<EndedProcess>) -> Result<()> {
        let map = self.map("latency")?;
        let mut by_pid: BTreeMap<u32, EndedProcess> = BTreeMap::new();
        // A process has a key per kind and bucket: asked once each.
        let mut living: HashMap<u32, bool> = HashMap::new();
        // A histogram that could not be read or removed ends the pass: it stays in the
        // kernel's map, with its process's name, to be taken the next time.
        let mut failed: Option<(u32, anyhow::Error)> = None;
        for key in map.keys() {
            let Some(k) = LatencyKey::parse(&key) else { continue };
            if *living.entry(k.pid).or_insert_with(|| alive(k.pid)) {
                continue;
            }
            let value = match map.lookup(&key, MapFlags::ANY) {
                Ok(Some(value)) => value,
                Ok(None) => continue,
                Err(e) => {
                    failed = Some((k.pid, anyhow::Error::from(e).context("reading a latency histogram")));
                    break;
                }
            };
            if let Err(e) = map.delete(&key) {
                failed = Some((
                    k.pid,
                    anyhow::Error::from(e).context("removing an ended process's latency histogram"),
                ));
                break;
            }
            let (Some(kind), Ok(count)) = (SyncKind::from_number(k.kind), <[u8; 8]>::try_from(value.as_slice())) else {
                continue;
            };
            let ended = by_pid.entry(k.pid).or_insert_with(|| EndedProcess {
                pid: k.pid,
                name: None,
                latencies: BTreeMap::new(),
            });
            ended
                .latencies
                .entry(kind)
                .or_default()
                .add(k.bucket, u64::from_ne_bytes(count));
        }
        let names = self.map("process_names")?;
        for ended in by_pid.values_mut() {
            let key = ended.pid.to_ne_bytes();
            if let Some(name) = names.lookup(&key, MapFlags::ANY).ok().flatten() {
                ended.name = Some(comm(&name));
                // Gone already if the kernel never kept it: not an error.
                if failed.as_ref().is_none_or(|(pid, _)| *pid != ended.pid) {
                    let _ = names.delete(&key);
                }
            }
        }
        taken.extend(by_pid.into_values());
        failed.map_or(Ok(()), |(_, e)| Err(e))
    }

    /// The name of each process seen making a sync call.
    pub(crate) fn process_names(&self) -> Result<HashMap<u32, String>> {
        let map = self.map("process_names")?;
        let mut out = HashMap::new();
        for key in map.keys() {
            let (Ok(pid), Some(name)) = (
                <[u8; 4]>::try_from(key.as_slice()),
                map.lookup(&key, MapFlags::ANY).ok().flatten(),
            ) else {
                continue;
            };
            out.insert(u32::from_ne_bytes(pid), comm(&name));
        }
        Ok(out)
    }

    /// How many process names the kernel has kept since the program started (each new
    /// process making a sync call, while there is room).
    pub(crate) fn names_given(&self) -> Result<u64> {
        let value = self
            .map("names_given")?
            .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
            .context("reading the count of process names")?;
        Ok(value
            .and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
            .map(u64::from_ne_bytes)
            .unwrap_or(0))
    }

    /// What the kernel side could not keep.
    pub(crate) fn lost(&self) -> Result<Lost> {
        let map = self.map("lost")?;
        let read = |i: u32| -> Result<u64> {
            let v = map
                .lookup(&i.to_ne_bytes(), MapFlags::ANY)
                .context("reading the BPF loss counters")?;
            Ok(v.and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
                .map(u64::from_ne_bytes)
                .unwrap_or(0))
        };
        Ok(Lost {
            calls: read(0)?,
            records: read(1)?,
            histogram: read(2)?,
            latencies: read(3)?,
            processes: read(4)?,
        })
    }
}

/// A process that ended, as [`BpfTracer::take_ended`] took it out of the kernel's maps.
#[derive(Debug)]
pub(crate) struct EndedProcess {
    pub(crate) pid: u32,
    pub(crate) name: Option<String>,
    pub(crate) latencies: BTreeMap<SyncKind, histogram::Buckets>,
}

/// A task's command name as the kernel keeps it (up to a NUL).
fn comm(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}
