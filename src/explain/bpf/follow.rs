//! Following the program as it goes: each slow call handed over as the kernel sends it, with
//! the journal commit it waited for (its record sent just before it, or kept by the kernel),
//! and each call's latency where every call was asked for.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _, Result};
use libbpf_rs::{MapCore as _, MapFlags, RingBufferBuilder};

use super::latency_record::CallLatency;
use super::record::SlowCall;
use super::BpfTracer;

/// The commits' own records kept for the calls that follow them in the ring (a call's
/// commit record comes just before it; the whole set is dropped when it reaches this).
const COMMITS_KEPT: usize = 1024;

/// The kernel's `commit_detail` array (watch_records.h): JOURNAL_GROUPS groups of slots, a
/// journal's device hashed to one, its commits taking the group's COMMITS_PER_GROUP slots in
/// turn; a commit's record stays until a commit that many later of its journal (or of one in
/// its group) takes its slot.
pub(crate) const JOURNAL_GROUPS: u32 = 8;
pub(crate) const COMMITS_PER_GROUP: u32 = 8;

/// The slot of journal commit `dev_tid` (device << 32 | transaction), as watch_maps.h's
/// commit_slot has it.
fn commit_slot(dev_tid: u64) -> u32 {
    let (dev, tid) = ((dev_tid >> 32) as u32, dev_tid as u32);
    (dev ^ dev >> 20) % JOURNAL_GROUPS * COMMITS_PER_GROUP + tid % COMMITS_PER_GROUP
}

impl BpfTracer {
    /// Hands each slow call to `on_call` as the kernel sends it, until `go_on` says no
    /// (asked every `tick`). A record that does not parse is an error.
    pub(crate) fn follow(
        &self,
        tick: Duration,
        go_on: impl FnMut() -> bool,
        on_call: impl FnMut(SlowCall),
    ) -> Result<()> {
        self.follow_every(tick, go_on, on_call, |_| {})
    }

    /// [`BpfTracer::follow`], and each call's latency to `on_latency` as well when the
    /// settings asked for every call ([`Settings::every_call`]).
    pub(crate) fn follow_every(
        &self,
        tick: Duration,
        mut go_on: impl FnMut() -> bool,
        mut on_call: impl FnMut(SlowCall),
        mut on_latency: impl FnMut(CallLatency),
    ) -> Result<()> {
        let events = self.map("events")?;
        let every = self.map("every")?;
        let bad: std::cell::RefCell<Option<String>> = std::cell::RefCell::new(None);
        // The commits' records the kernel sent ahead of the calls that waited for them.
        let mut commits: HashMap<u64, SlowCall> = HashMap::new();
        let mut builder = RingBufferBuilder::new();
        builder
            .add(&events, |bytes: &[u8]| match SlowCall::parse(bytes) {
                Ok(commit) if commit.is_commit() => {
                    if commits.len() >= COMMITS_KEPT {
                        commits.clear();
                    }
                    let c = commit.last_commit.as_ref().expect("a commit's record names it");
                    commits.insert(u64::from(c.dev) << 32 | u64::from(c.tid), commit);
                    0
                }
                Ok(mut call) => {
                    if let Some(c) = &call.last_commit {
                        let dev_tid = u64::from(c.dev) << 32 | u64::from(c.tid);
                        call.commit = commits
                            .get(&dev_tid)
                            .cloned()
                            .or_else(|| self.commit_detail(dev_tid))
                            .map(Box::new);
                    }
                    on_call(call);
                    0
                }
                Err(e) => {
                    *bad.borrow_mut() = Some(e);
                    -1
                }
            })
            .context("reading the BPF ring buffer")?;
        if self.every_call {
            builder
                .add(&every, |bytes: &[u8]| match CallLatency::parse(bytes) {
                    Ok(call) => {
                        on_latency(call);
                        0
                    }
                    Err(e) => {
                        *bad.borrow_mut() = Some(e);
                        -1
                    }
                })
                .context("reading the BPF ring buffer of latencies")?;
        }
        let ring = builder.build().context("reading the BPF ring buffer")?;
        while go_on() {
            // An interrupted poll (EINTR, a signal) only means: look at go_on again. The
            // program wakes this poll only when its ring is half full; the records of a
            // quieter tick are taken when the poll times out.
            if let Err(e) = ring.poll(tick) {
                if e.kind() != libbpf_rs::ErrorKind::Interrupted {
                    return Err(anyhow!("reading the BPF ring buffer: {e}"));
                }
            }
            ring.consume().context("reading the BPF ring buffer")?;
        }
        ring.consume().context("reading the BPF ring buffer")?;
        drop(ring);
        match bad.into_inner() {
            Some(e) => bail!(e),
            None => Ok(()),
        }
    }

    /// Where the time of journal commit `dev_tid` (device << 32 | transaction) went, if the
    /// kernel still keeps it (its slot not yet taken by a later commit).
    pub(crate) fn commit_detail(&self, dev_tid: u64) -> Option<SlowCall> {
        let value = self
            .map("commit_detail")
            .ok()?
            .lookup(&commit_slot(dev_tid).to_ne_bytes(), MapFlags::ANY)
            .ok()??;
        let commit = SlowCall::parse(&value).ok()?;
        let held = commit.last_commit.as_ref()?;
        (u64::from(held.dev) << 32 | u64::from(held.tid) == dev_tid).then_some(commit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journals_consecutive_commits_take_its_groups_slots_in_turn() {
        let slots = JOURNAL_GROUPS * COMMITS_PER_GROUP;
        // ram (1:0), loop0 and loop1 (7:0, 7:1), sda1 (8:1), nvme0n1p3 (259:3), vda (254:0).
        let devices = [1u64 << 20, 7 << 20, 7 << 20 | 1, 8 << 20 | 1, 259 << 20 | 3, 254 << 20];
        for dev in devices {
            let start = 1_000_003u64;
            let turn: Vec<u32> = (start..start + u64::from(COMMITS_PER_GROUP))
                .map(|tid| commit_slot(dev << 32 | tid))
                .collect();
            let distinct: std::collections::HashSet<&u32> = turn.iter().collect();
            assert_eq!(distinct.len(), COMMITS_PER_GROUP as usize, "device {dev:#x}: {turn:?}");
            assert!(turn.iter().all(|&s| s < slots), "{turn:?}");
            let next = start + u64::from(COMMITS_PER_GROUP);
            assert_eq!(commit_slot(dev << 32 | next), turn[0], "device {dev:#x}");
        }
        // Two loop devices' commits never share a slot, whatever their transactions.
        for (a, b) in [(0u64, 0u64), (42, 42), (1_000, 1_003)] {
            assert_ne!(commit_slot(7 << 52 | a), commit_slot((7 << 20 | 1) << 32 | b));
        }
    }
}
