//! Issue 8: every way out leaves the machine as it was. Overlapping sysctl runs, every
//! terminating signal, a busy mount at the end, a second Ctrl-C, killed `--dir` runs, state
//! files that name what is not fsynclab's, and a sweep that SIGKILLs a scratch run at every
//! step of its life and checks that `fsynclab cleanup` restores the machine exactly.
//!
//! The tests of this file run one at a time, each with a state directory of its own
//! (`FSYNCLAB_STATE_DIR`): one's `cleanup` would otherwise undo what another is looking at,
//! or meet a user's leftovers.
//!
//! One binary, its tests in modules under tests/safety/ by the way out they check: sysctls
//! two runs would both set (`sysctls`), signals and a closed terminal (`signals`), what
//! `cleanup` undoes and what it leaves alone (`cleanup`), and the SIGKILL sweeps (`sweep`);
//! the turn, state directory and runs they share are in `setup`.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

#[path = "safety/cleanup.rs"]
mod cleanup;
mod common;
#[path = "safety/setup.rs"]
mod setup;
#[path = "safety/signals.rs"]
mod signals;
#[path = "safety/sweep.rs"]
mod sweep;
#[path = "safety/sysctls.rs"]
mod sysctls;

use common::Need::{Fuse, Root, Tool};

common::tests! {
    sysctls::a_second_run_setting_sysctls_is_refused_while_one_is_live: [Root],
    sysctls::a_second_run_setting_sysctls_waits_for_the_live_one_under_sysctl_wait: [Root],
    sysctls::a_killed_runs_sysctls_are_cleaned_up_before_another_run_sets_them: [Root],
    sysctls::a_result_says_when_a_sysctl_changed_under_it: [Root],
    signals::every_terminating_signal_stops_a_dir_run_and_cleans_up,
    signals::sighup_and_sigusr1_stop_a_scratch_run_and_undo_everything: [Root, Fuse],
    signals::a_signal_ignored_at_start_stays_ignored,
    signals::a_closed_terminal_still_undoes_a_scratch_run: [Root, Fuse],
    cleanup::a_busy_mount_at_the_end_fails_the_run_and_cleanup_keeps_its_record: [Root, Fuse],
    signals::a_second_ctrl_c_says_what_it_leaves_and_cleanup_undoes_it: [Root, Fuse],
    cleanup::cleanup_removes_the_work_directory_of_a_killed_dir_run,
    cleanup::cleanup_removes_nothing_without_fsynclabs_shape,
    cleanup::cleanup_undoes_a_killed_scratch_run_whose_state_file_is_gone: [Root, Tool("mkfs.ext2")],
    sweep::a_sigkilled_run_on_an_emulated_disk_dies_at_once: [Root, Fuse],
    sweep::sigkill_at_every_step_then_cleanup_restores_the_machine: [Root, Fuse, Tool("mkfs.ext4")],
    sweep::sigkill_during_a_fault_run_then_cleanup_restores_the_machine:
        [Root, Fuse, Tool("mkfs.ext4"), Tool("mkfs.xfs")],
}
