//! Who may set the machine-wide vm sysctls: one run at a time, the second refused naming the
//! first (or, with `FSYNCLAB_SYSCTL_WAIT`, waiting for it to end), and none while a killed
//! run's changes are still in force.

use std::path::Path;

use anyhow::Result;

use super::request::TestbedRequest;
use super::{state, sysctl};
use crate::error::Usage;

/// Takes the sysctl lock for a run that sets sysctls, or refuses the run.
///
/// Refusing, rather than letting runs share: two runs that want different values cannot
/// both measure what they asked for, and even equal values would tie one run's result to
/// when the other ends. So one run at a time sets sysctls; the second is told which run
/// holds them, and can start once it ends. Likewise while a killed run's changes are still
/// in force: the value this run would record as "before" would be that run's, and
/// `fsynclab cleanup` would later put back the wrong one.
///
/// With `FSYNCLAB_SYSCTL_WAIT=SECONDS` in the environment (scripts/test.sh sets it: another
/// fsynclab's tests may run beside), a run waits up to that long for the holder to end,
/// saying so once, before it is refused.
pub(super) fn claim_sysctls(request: &TestbedRequest, state_dir: &Path) -> Result<sysctl::SysctlLock> {
    let flags = request.sysctl_flags();
    let waited = match sysctl_wait()? {
        Some(wait) => wait_for_sysctls(wait, &flags)?,
        None => sysctl::try_lock()?,
    };
    let Some(lock) = waited else {
        // The holder records its changes right after taking the lock: give it a moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(500);
        let holder = loop {
            let running = state::sysctl_changes(state_dir).into_iter().find(|c| c.running);
            if running.is_some() || std::time::Instant::now() > deadline {
                break running;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let who = match holder {
            Some(h) => format!(
                "fsynclab pid {} ({}) has set {}",
                h.pid,
                command_line(h.pid),
                h.changes.join(", ")
            ),
            None => "another fsynclab run is changing the vm sysctls".into(),
        };
        return Err(Usage(format!(
            "{flags}: {who}; sysctls are machine-wide, so one run at a time may set them: start this one when it has ended"
        ))
        .into());
    };
    if let Some(dead) = state::sysctl_changes(state_dir).into_iter().find(|c| !c.running) {
        return Err(Usage(format!(
            "{flags}: a run killed earlier (pid {}) left {}; run `fsynclab cleanup` first",
            dead.pid,
            dead.changes.join(", ")
        ))
        .into());
    }
    Ok(lock)
}

/// How long `FSYNCLAB_SYSCTL_WAIT` says to wait for another run's sysctls, if it is set.
fn sysctl_wait() -> Result<Option<std::time::Duration>> {
    let Some(text) = std::env::var_os("FSYNCLAB_SYSCTL_WAIT") else {
        return Ok(None);
    };
    let text = text.to_string_lossy();
    let seconds: f64 = text
        .trim()
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s >= 0.0 && *s <= 86_400.0)
        .ok_or_else(|| {
            Usage(format!(
                "FSYNCLAB_SYSCTL_WAIT={text:.20}: give seconds to wait, 0 to 86400"
            ))
        })?;
    Ok(Some(std::time::Duration::from_secs_f64(seconds)))
}

/// The sysctl lock, waiting up to `wait` for another run to release it (None if it did not).
fn wait_for_sysctls(wait: std::time::Duration, flags: &str) -> Result<Option<sysctl::SysctlLock>> {
    let deadline = std::time::Instant::now() + wait;
    let mut said = false;
    loop {
        if let Some(lock) = sysctl::try_lock()? {
            return Ok(Some(lock));
        }
        if std::time::Instant::now() >= deadline {
            return Ok(None);
        }
        if !said {
            note!(
                "{flags}: another fsynclab run holds the vm sysctls; waiting up to {} for it to end (FSYNCLAB_SYSCTL_WAIT)",
                crate::units::format_duration(wait)
            );
            said = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The command line of process `pid`, shortened, for messages (`fsynclab run ...`).
fn command_line(pid: u32) -> String {
    let mut args = crate::kernel::process::cmdline(pid).unwrap_or_default();
    if let Some(first) = args.first_mut() {
        if let Some(name) = Path::new(first.as_str()).file_name() {
            *first = name.to_string_lossy().into_owned();
        }
    }
    let text = args.join(" ");
    match text.char_indices().nth(120) {
        Some((cut, _)) => format!("`{}...`", &text[..cut]),
        None => format!("`{text}`"),
    }
}
