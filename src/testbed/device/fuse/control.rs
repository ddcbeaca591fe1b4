//! The handle the testbed's users hold on a running emulated device ([`DeviceControl`]):
//! cut its power now or arm a cut the daemon makes itself when a trigger is reached, change
//! the injected faults, and stop emulating time. Cloned freely; every method may be called
//! from any thread while the device serves requests. A handle does not keep the device
//! alive (it would keep the media file open, and its tmpfs busy): once the device is gone,
//! its methods do nothing and say so (`None`).

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::super::power_cut::{CutPlan, Keep};
use super::super::profile;
use super::shared::Shared;
use crate::environment::PowerCut;
use crate::error::Usage;

/// A running emulated device's controls ([`super::EmulatedDevice::control`]).
#[derive(Clone)]
pub struct DeviceControl {
    shared: Weak<Shared>,
}

impl DeviceControl {
    pub(super) fn new(shared: &Arc<Shared>) -> DeviceControl {
        DeviceControl {
            shared: Arc::downgrade(shared),
        }
    }

    /// The device, while it runs.
    fn device(&self) -> Option<Arc<Shared>> {
        self.shared.upgrade()
    }

    /// Cuts the power now: the drive loses its volatile cache except what `keep` (drawn from
    /// `seed`) saves, every later request fails with EIO at once, and nothing more reaches
    /// the media. Returns what the cut did (a second cut, the first's record); None once the
    /// device is gone.
    pub fn cut_power(&self, keep: Keep, seed: u64) -> Option<PowerCut> {
        let shared = self.device()?;
        let mut st = shared.lock();
        Some(shared.cut(&mut st, keep, seed, "now".into()))
    }

    /// Arms `plan`: the daemon cuts the power itself when its trigger is reached (counted
    /// from now). Replaces a cut armed before; `now` cuts at once. False once the power is
    /// cut or the device is gone.
    pub fn arm_cut(&self, plan: CutPlan) -> bool {
        let Some(shared) = self.device() else { return false };
        let mut st = shared.lock();
        if st.cut.is_some() {
            return false;
        }
        shared.arm(&mut st, plan);
        true
    }

    /// The device's clock, s since it started, as [`PowerCut::at_s`] counts; None once the
    /// device is gone. Read when a cut is armed, it says how long after that the cut came.
    pub fn clock_s(&self) -> Option<f64> {
        Some(self.device()?.clock.now() as f64 / 1e9)
    }

    /// Disarms a cut armed and not yet made.
    pub fn disarm_cut(&self) {
        if let Some(shared) = self.device() {
            shared.lock().armed = None;
        }
    }

    /// The power cut, once it has happened (and while the device is there).
    pub fn power_cut(&self) -> Option<PowerCut> {
        self.device()?.lock().cut.clone()
    }

    /// Waits at most `limit` for the power cut (an armed one to come); returns its record.
    pub fn wait_for_cut(&self, limit: Duration) -> Option<PowerCut> {
        let shared = self.device()?;
        let deadline = Instant::now() + limit;
        let mut st = shared.lock();
        loop {
            if let Some(cut) = &st.cut {
                return Some(cut.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            st = shared
                .progress
                .wait_timeout(st, left.min(Duration::from_millis(50)))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Replaces the injected faults with `rules`, `fail=...` rules as `--device` takes them,
    /// separated by commas (`fail=write:times=3,fail=flush`); `after=DURATION` counts from
    /// now. An empty text makes the drive healthy again. Bad rules are refused in one line
    /// saying what is valid; a device that is gone is refused too.
    pub fn set_faults(&self, rules: &str) -> Result<(), Usage> {
        let parsed = profile::fault_rules(rules).map_err(|why| Usage(why.to_string()))?;
        let shared = self
            .device()
            .ok_or_else(|| Usage(format!("faults {rules}: the emulated device is gone")))?;
        let now = shared.clock.now();
        shared.lock().disk.set_faults(&parsed, now);
        Ok(())
    }

    /// Serves pending and later requests at once, without the model's times: for a run
    /// that is being stopped, whose teardown must not wait for a slow disk. (The daemon does
    /// it by itself once a signal has asked the run to stop.)
    pub fn stop_emulating_time(&self) {
        if let Some(shared) = self.device() {
            shared.stop_emulating_time();
        }
    }

    /// Whether time is still emulated (false too once the device is gone).
    pub fn emulates_time(&self) -> bool {
        self.device().is_some_and(|s| !s.is_instant())
    }
}
