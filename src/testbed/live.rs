//! What a testbed has set up, and the emulated device serving it: the undo stack, the device
//! with its dead man's switch, and the order they go in, whether setting up failed halfway
//! or the [`super::Prepared`] holding them is dropped.

use super::deadman;
use super::device::fuse::EmulatedDevice;
use super::device::DeviceControl;
use super::state::{Step, Undo};

/// The undo stack and the emulated device with its dead man's switch. Fields drop in
/// order: the stack (unmount, detach, FUSE unmount, sysctls back), then the device's
/// session thread is joined and its switch disarmed.
pub(super) struct Live {
    pub(super) undo: Undo,
    pub(super) device: Option<EmulatedDevice>,
    pub(super) switch: Option<deadman::Switch>,
    /// Taken off the disk it was made on ([`super::Prepared::unplug`], or a power cut's
    /// cycle, [`super::power`]): no loop device to name, no device to count the run's
    /// flushes on.
    pub(super) unplugged: bool,
    /// In a `--kernel` guest whose run drives its disk: the controls of the device the host
    /// emulates and serves it, over the control port ([`super::vm::control`]).
    pub(super) served: Option<DeviceControl>,
}

impl Live {
    /// Nothing set up yet: the steps of a testbed being made are recorded on it, so that a
    /// failure halfway drops it and undoes them in the right order.
    pub(super) fn new() -> Live {
        Live {
            undo: Undo::new(),
            device: None,
            switch: None,
            unplugged: false,
            served: None,
        }
    }
}

impl Drop for Live {
    /// The emulated device's media file lives on a tmpfs below its FUSE mount: undo the
    /// steps above that tmpfs (mount, loop device, FUSE mount), let the device go (closing
    /// the media file), then the undo stack undoes the rest as it drops (a mount that
    /// failed left the tmpfs busy, for `fsynclab cleanup`).
    fn drop(&mut self) {
        if self.device.is_some() {
            self.undo.undo_above(|s| matches!(s, Step::Tmpfs { .. }));
            self.device = None;
        }
    }
}
