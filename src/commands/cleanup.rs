//! `fsynclab cleanup`: what killed runs left behind, undone.

use anyhow::Result;

use crate::error::Usage;
use crate::testbed;

/// `fsynclab cleanup`: undoes what killed runs left, says what it did and checked, and
/// what is left with why. As root it covers everything runs record in /run/fsynclab; for
/// another user, the work directories their runs recorded.
pub(crate) fn cleanup() -> Result<i32> {
    let Some(dir) = testbed::state::user_state_dir() else {
        return Err(Usage(
            "cleanup: no state directory for this user ($XDG_RUNTIME_DIR is not set); run it as root for scratch filesystems and sysctls".into(),
        )
        .into());
    };
    let outcome = testbed::state::cleanup_leftovers(&dir)?;
    for line in &outcome.undone {
        println!("undone: {line}");
    }
    for pid in &outcome.running {
        println!("left alone: pid {pid} is still running");
    }
    for line in &outcome.failed {
        note!("fsynclab: cleanup: could not undo {line}");
    }
    for line in &outcome.kept {
        note!("fsynclab: cleanup: kept {line}");
    }
    for file in &outcome.kept_files {
        note!(
            "fsynclab: cleanup: {} still records what is left; run `fsynclab cleanup` again once the cause above is gone",
            file.display()
        );
    }
    if outcome.undone.is_empty() && outcome.failed.is_empty() && outcome.kept.is_empty() {
        println!("nothing to clean up");
    }
    Ok(if outcome.failed.is_empty() && outcome.kept.is_empty() {
        0
    } else {
        1
    })
}
