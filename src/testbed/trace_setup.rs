//! Making a run's tracing instance: tracefs found or mounted, and the instance made, each
//! step recorded on the undo stack ([`Step::Tracefs`], [`Step::TraceInstance`]) before it
//! is taken. The tracefs primitives themselves, which the undo steps call, are in
//! [`super::tracefs`].

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::machine_lock::MachineLock;
use super::state::{Step, Undo};
use super::tracefs::{find_mount, mount_at, next_instance_name, Instance, DEFAULT_MOUNT, LOCK};

impl Instance {
    /// Makes this process's next instance, finding or mounting tracefs for it; both are
    /// recorded on `undo`, which removes them again.
    pub(crate) fn make(undo: &mut Undo) -> Result<Instance> {
        let name = next_instance_name();
        // Recorded before it exists: a kill between mkdir and the record cannot leak it.
        undo.record(Step::TraceInstance { name: name.clone() })?;
        let _lock = MachineLock::take(LOCK)?;
        // No fsynclab unmounts tracefs between our finding it and making the instance, but
        // someone else may: then it is found (or mounted) again.
        let mut attempts = 0;
        loop {
            let root = find_or_mount(undo)?;
            match Instance::create(&root, &name) {
                Ok(instance) => return Ok(instance),
                Err(_) if attempts < 3 && !root.join("instances").is_dir() => attempts += 1,
                Err(e) => return Err(e),
            }
        }
    }
}

/// Finds tracefs, or mounts it at [`DEFAULT_MOUNT`] (as `mount -t tracefs fsynclab
/// /sys/kernel/tracing` would) and records that on `undo`. With the [`LOCK`] held.
fn find_or_mount(undo: &mut Undo) -> Result<PathBuf> {
    if let Some(root) = find_mount() {
        return Ok(root);
    }
    mount_at(Path::new(DEFAULT_MOUNT))?;
    undo.record(Step::Tracefs {
        mount_point: PathBuf::from(DEFAULT_MOUNT),
    })?;
    Ok(PathBuf::from(DEFAULT_MOUNT))
}
