//! The handle the testbed's users hold on a running emulated device ([`DeviceControl`]):
//! cut its power now or arm a cut the daemon makes itself when a trigger is reached, change
//! the injected faults, stop emulating time, and turn the power on again. Cloned freely;
//! every method may be called from any thread while the device serves requests. A handle
//! does not keep the device alive (it would keep the media file open, and its tmpfs busy):
//! once the device is gone, its methods do nothing and say so (`None`).
//!
//! The device may be this process's or another's: a `--kernel` guest's disk is emulated by
//! the host's fsynclab, and the guest's handle sends each [`Request`] there ([`Remote`]),
//! where [`DeviceControl::answer`] makes it on the device.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::super::power_cut::{CutPlan, Keep};
use super::super::profile;
use super::shared::Shared;
use crate::environment::PowerCut;
use crate::error::Usage;

/// What a handle asks of its device: one request, one [`Reply`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    CutPower { keep: Keep, seed: u64 },
    ArmCut { plan: CutPlan },
    DisarmCut,
    ClockS,
    PowerCut,
    SetFaults { rules: String },
    StopEmulatingTime,
    EmulatesTime,
    PowerOn { fresh: bool },
}

/// A device's answer to a [`Request`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// The power cut (CutPower, PowerCut), if there is one.
    Cut(Option<PowerCut>),
    /// Whether it was done, or holds (ArmCut, DisarmCut, StopEmulatingTime, EmulatesTime,
    /// PowerOn, SetFaults).
    Done(bool),
    /// The device's clock (ClockS).
    Clock(f64),
    /// Refused, saying why in one line (SetFaults' bad rules).
    Refused(String),
    /// The device is gone, or could not be reached.
    Gone,
}

/// A device served by another process: sends a request and waits for its reply; None when
/// the other side cannot be reached.
pub trait Remote: Send + Sync {
    fn ask(&self, request: &Request) -> Option<Reply>;
}

/// A running emulated device's controls ([`super::EmulatedDevice::control`]).
#[derive(Clone)]
pub struct DeviceControl {
    at: At,
}

#[derive(Clone)]
enum At {
    Here(Weak<Shared>),
    Remote(Arc<dyn Remote>),
}

/// How often a handle on a remote device asks whether the power has been cut while it waits
/// for a cut.
const REMOTE_LOOK: Duration = Duration::from_millis(20);

impl DeviceControl {
    pub(super) fn new(shared: &Arc<Shared>) -> DeviceControl {
        DeviceControl {
            at: At::Here(Arc::downgrade(shared)),
        }
    }

    /// The controls of a device another process serves.
    pub fn remote(remote: Arc<dyn Remote>) -> DeviceControl {
        DeviceControl { at: At::Remote(remote) }
    }

    /// The device, while it runs in this process.
    fn device(&self) -> Option<Arc<Shared>> {
        match &self.at {
            At::Here(shared) => shared.upgrade(),
            At::Remote(_) => None,
        }
    }

    /// Makes `request` on the device and says what came of it: what a remote handle's
    /// requests come to on the side that serves the device.
    pub fn answer(&self, request: Request) -> Reply {
        if let At::Remote(remote) = &self.at {
            return remote.ask(&request).unwrap_or(Reply::Gone);
        }
        let Some(shared) = self.device() else {
            return Reply::Gone;
        };
        match request {
            Request::CutPower { keep, seed } => {
                let mut st = shared.lock();
                Reply::Cut(Some(shared.cut(&mut st, keep, seed, "now".into())))
            }
            Request::ArmCut { plan } => {
                let mut st = shared.lock();
                if st.cut.is_some() {
                    return Reply::Done(false);
                }
                shared.arm(&mut st, plan);
                Reply::Done(true)
            }
            Request::DisarmCut => {
                shared.lock().armed = None;
                Reply::Done(true)
            }
            Request::ClockS => Reply::Clock(shared.clock.now() as f64 / 1e9),
            Request::PowerCut => Reply::Cut(shared.lock().cut.clone()),
            Request::SetFaults { rules } => match profile::fault_rules(&rules) {
                Ok(parsed) => {
                    let now = shared.clock.now();
                    shared.lock().disk.set_faults(&parsed, now);
                    Reply::Done(true)
                }
                Err(why) => Reply::Refused(why.to_string()),
            },
            Request::StopEmulatingTime => {
                shared.stop_emulating_time();
                Reply::Done(true)
            }
            Request::EmulatesTime => Reply::Done(!shared.is_instant()),
            Request::PowerOn { fresh } => Reply::Done(shared.power_on(fresh)),
        }
    }

    /// Cuts the power now: the drive loses its volatile cache except what `keep` (drawn from
    /// `seed`) saves, every later request fails with EIO at once, and nothing more reaches
    /// the media. Returns what the cut did (a second cut, the first's record); None once the
    /// device is gone.
    pub fn cut_power(&self, keep: Keep, seed: u64) -> Option<PowerCut> {
        match self.answer(Request::CutPower { keep, seed }) {
            Reply::Cut(cut) => cut,
            _ => None,
        }
    }

    /// Arms `plan`: the daemon cuts the power itself when its trigger is reached (counted
    /// from now). Replaces a cut armed before; `now` cuts at once. False once the power is
    /// cut or the device is gone.
    pub fn arm_cut(&self, plan: CutPlan) -> bool {
        self.answer(Request::ArmCut { plan }) == Reply::Done(true)
    }

    /// The device's clock, s since it started, as [`PowerCut::at_s`] counts; None once the
    /// device is gone. Read when a cut is armed, it says how long after that the cut came.
    pub fn clock_s(&self) -> Option<f64> {
        match self.answer(Request::ClockS) {
            Reply::Clock(s) => Some(s),
            _ => None,
        }
    }

    /// Disarms a cut armed and not yet made.
    pub fn disarm_cut(&self) {
        self.answer(Request::DisarmCut);
    }

    /// The power cut, once it has happened (and while the device is there).
    pub fn power_cut(&self) -> Option<PowerCut> {
        match self.answer(Request::PowerCut) {
            Reply::Cut(cut) => cut,
            _ => None,
        }
    }

    /// Waits at most `limit` for the power cut (an armed one to come); returns its record.
    pub fn wait_for_cut(&self, limit: Duration) -> Option<PowerCut> {
        let deadline = Instant::now() + limit;
        let shared = match &self.at {
            At::Here(shared) => shared.upgrade()?,
            At::Remote(_) => return self.wait_for_remote_cut(deadline),
        };
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

    /// [`DeviceControl::wait_for_cut`] on a remote device: asked every [`REMOTE_LOOK`], each
    /// request short, so that other requests of the run's threads pass between.
    fn wait_for_remote_cut(&self, deadline: Instant) -> Option<PowerCut> {
        loop {
            if let Some(cut) = self.power_cut() {
                return Some(cut);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            std::thread::sleep(left.min(REMOTE_LOOK));
        }
    }

    /// Replaces the injected faults with `rules`, `fail=...` rules as `--device` takes them,
    /// separated by commas (`fail=write:times=3,fail=flush`); `after=DURATION` counts from
    /// now. An empty text makes the drive healthy again. Bad rules are refused in one line
    /// saying what is valid; a device that is gone is refused too.
    pub fn set_faults(&self, rules: &str) -> Result<(), Usage> {
        match self.answer(Request::SetFaults { rules: rules.into() }) {
            Reply::Done(_) => Ok(()),
            Reply::Refused(why) => Err(Usage(why)),
            _ => Err(Usage(format!("faults {rules}: the emulated device is gone"))),
        }
    }

    /// Serves pending and later requests at once, without the model's times: for a run
    /// that is being stopped, whose teardown must not wait for a slow disk. (The daemon does
    /// it by itself once a signal has asked the run to stop.)
    pub fn stop_emulating_time(&self) {
        self.answer(Request::StopEmulatingTime);
    }

    /// Whether time is still emulated (false too once the device is gone).
    pub fn emulates_time(&self) -> bool {
        self.answer(Request::EmulatesTime) == Reply::Done(true)
    }

    /// Turns the power on again after a cut (see [`Shared::power_on`]): for the recovery
    /// (`fresh` false: the media as the cut left them, time not emulated), or for a new
    /// filesystem just made on the media (`fresh`: the profile's drive afresh). False when
    /// the power was not cut or the device is gone.
    pub fn power_on(&self, fresh: bool) -> bool {
        self.answer(Request::PowerOn { fresh }) == Reply::Done(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testbed::device::model::Disk;
    use crate::testbed::device::CutTrigger;

    /// A device's shared state over a plain file (no FUSE mount): what its handle drives.
    fn device(profile: &str) -> (Arc<Shared>, DeviceControl, tempfile::NamedTempFile) {
        let media = tempfile::NamedTempFile::new().unwrap();
        media.as_file().set_len(1 << 20).unwrap();
        let figures = profile::parse(profile).unwrap().figures;
        let shared = Arc::new(Shared::new(Disk::new(figures), media.reopen().unwrap(), 1 << 20));
        let control = DeviceControl::new(&shared);
        (shared, control, media)
    }

    fn cut_now(control: &DeviceControl) -> bool {
        control.arm_cut(CutPlan {
            trigger: CutTrigger::Now,
            keep: Keep::Nothing,
            seed: 3,
        })
    }

    /// A served disk's power comes on again after a cut: for the recovery, with no faults
    /// and time not emulated; for a fresh filesystem, as the profile's drive, its faults
    /// counted from then, time emulated. Before any cut there is nothing to turn on.
    #[test]
    fn the_power_comes_on_again_for_the_recovery_and_for_a_fresh_drive() {
        let (shared, control, _media) = device("hdd-7200,fail=write:times=1");
        assert!(!control.power_on(false), "the power was never cut");
        assert!(cut_now(&control));
        assert!(control.power_cut().is_some());
        assert!(!cut_now(&control), "no cut is armed once the power is off");

        assert!(control.power_on(false));
        assert_eq!(control.power_cut(), None);
        assert!(!control.emulates_time(), "the recovery is not timed by the model");
        assert!(
            shared.lock().disk.figures().faults.is_empty(),
            "the recovery's drive is healthy"
        );
        assert!(!shared.dead.load(std::sync::atomic::Ordering::SeqCst));

        assert!(cut_now(&control));
        assert!(control.power_on(true));
        assert!(control.emulates_time());
        assert_eq!(
            shared.lock().disk.figures().faults.len(),
            1,
            "the profile's faults again"
        );
        assert_eq!(shared.lock().timing.writes_acked, 0);
    }

    /// The same requests made through `answer`, as a guest's come to the host.
    #[test]
    fn answer_makes_each_request_on_the_device() {
        let (_shared, control, _media) = device("ssd-sata");
        assert!(matches!(control.answer(Request::ClockS), Reply::Clock(s) if s >= 0.0));
        assert_eq!(control.answer(Request::PowerCut), Reply::Cut(None));
        assert!(matches!(
            control.answer(Request::SetFaults {
                rules: "fail=bogus".into()
            }),
            Reply::Refused(_)
        ));
        assert_eq!(
            control.answer(Request::SetFaults {
                rules: "fail=flush".into()
            }),
            Reply::Done(true)
        );
        let cut = control.answer(Request::CutPower {
            keep: Keep::Nothing,
            seed: 1,
        });
        assert!(matches!(cut, Reply::Cut(Some(ref c)) if c.trigger == "now"), "{cut:?}");
        assert_eq!(control.answer(Request::PowerOn { fresh: false }), Reply::Done(true));
    }

    /// Once the device is gone its handle says so.
    #[test]
    fn a_handle_on_a_device_that_is_gone_says_so() {
        let (shared, control, _media) = device("ssd-sata");
        drop(shared);
        assert_eq!(control.answer(Request::ClockS), Reply::Gone);
        assert_eq!(control.clock_s(), None);
        assert!(!control.power_on(false));
        assert_eq!(control.wait_for_cut(Duration::from_millis(10)), None);
    }
}
