//! Issue 10: every run records a timeline of the machine's writeback state, and `--explain`
//! splits each slow call into causes whose parts add up to it. The privileged tests run the
//! seeds' scenarios, scaled down, on a scratch filesystem over the emulated 5400 rpm disk
//! and check that the slowest calls are explained by what really delayed them; they need
//! root, loop devices, FUSE and tracefs.
//!
//! One binary, its tests in modules under tests/explain/ by what they check: the journal's
//! commits named (`journal`, and `own_commits` for the BPF tracer's per-filesystem ones),
//! writeback's throttling and flusher (`writeback`), every scenario and fsync-tps's threads
//! (`scenarios`), `exec --explain` (`exec`), what a traced run leaves behind (`leftovers`),
//! refusals (`refusals`) and saved results explained again (`reprint`); beside the helpers
//! that start runs (`runner`), read explanations (`parts`) and look at tracefs (`tracefs`).

#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;
#[path = "explain/exec.rs"]
mod exec;
#[path = "explain/journal.rs"]
mod journal;
#[path = "explain/leftovers.rs"]
mod leftovers;
#[path = "explain/own_commits.rs"]
mod own_commits;
#[path = "explain/parts.rs"]
mod parts;
#[path = "explain/refusals.rs"]
mod refusals;
#[path = "explain/reprint.rs"]
mod reprint;
#[path = "explain/runner.rs"]
mod runner;
#[path = "explain/scenarios.rs"]
mod scenarios;
#[path = "explain/tracefs.rs"]
mod tracefs;
#[path = "explain/writeback.rs"]
mod writeback;

use common::Need::{Bpf, Fuse, Root, Tool, Tracefs};

common::tests! {
    journal::slow_fsyncs_on_ext4_name_the_journal_commit_and_the_data_writeback: [Root, Fuse, Tracefs],
    journal::slow_fsyncs_on_xfs_name_the_log_force: [Root, Fuse, Tracefs, Tool("mkfs.xfs")],
    journal::the_bpf_tracer_names_the_xfs_log_force_with_its_flushes: [Root, Fuse, Bpf, Tool("mkfs.xfs")],
    journal::the_bpf_tracer_names_a_btrfs_commit_by_the_transaction_it_committed: [Root, Fuse, Bpf, Tool("mkfs.btrfs")],
    journal::the_bpf_tracer_explains_a_runs_slow_fsyncs_with_parts_that_add_up: [Root, Fuse, Bpf],
    refusals::tracer_bpf_is_refused_in_one_line_where_bpf_is_missing: [Root],
    refusals::an_explain_run_whose_bpf_tracer_cannot_load_fails_and_a_default_run_says_why_unexplained:
        [Root, Bpf, Tool("setpriv")],
    writeback::slow_writes_under_low_dirty_limits_are_dirty_throttling: [Root, Fuse, Tracefs],
    writeback::the_bpf_tracer_names_slow_writes_under_low_dirty_limits_dirty_throttling: [Root, Fuse, Bpf],
    writeback::a_wait_for_a_files_pages_names_the_flushers_background_work: [Root, Fuse, Tracefs],
    scenarios::the_bpf_tracer_explains_a_runs_creates_and_closes_as_well_as_its_sync_calls: [Root, Fuse, Bpf],
    writeback::the_bpf_tracer_names_the_flushers_background_work_behind_a_wait_for_a_files_pages: [Root, Fuse, Bpf],
    leftovers::cleanup_removes_the_trace_instance_of_a_sigkilled_run: [Root, Tracefs],
    leftovers::a_bpf_traced_run_killed_with_sigkill_leaves_no_bpf_program: [Root, Bpf],
    reprint::every_run_records_a_timeline_and_explain_reprints_a_saved_result,
    reprint::explain_prints_every_part_of_a_traced_run: [Root, Tracefs],
    refusals::bad_explain_flags_are_refused_in_one_line,
    leftovers::overlapping_runs_leave_tracefs_as_they_found_it: [Root, Fuse, Tracefs],
    leftovers::concurrent_traced_runs_and_cleanups_leave_no_instance_and_tracefs_as_found: [Root, Tracefs],
    scenarios::fsync_tps_explains_each_threads_slowest_commits_and_the_leaders_flush: [Root, Fuse, Tracefs],
    scenarios::the_bpf_tracer_ties_a_followers_commit_to_the_leaders_flush: [Root, Fuse, Bpf],
    exec::exec_explain_traces_the_sync_calls_of_the_whole_process_tree: [Root, Fuse, Tracefs],
    exec::exec_explain_works_on_the_hosts_own_filesystem: [Root, Tracefs],
    exec::the_bpf_tracer_names_a_short_wait_by_the_block_completion_that_ended_it: [Root, Bpf],
    exec::exec_explain_with_the_bpf_tracer_counts_the_calls_tracefs_counts: [Root, Fuse, Tracefs, Bpf, Tool("python3")],
    scenarios::every_scenario_explained_by_each_tracer_has_parts_that_add_up: [Root, Tracefs, Bpf],
    refusals::bad_exec_explain_flags_are_refused_in_one_line,
    leftovers::cleanup_removes_both_trace_instances_of_a_sigkilled_exec: [Root, Tracefs],
    leftovers::a_bpf_traced_exec_killed_with_sigkill_leaves_no_bpf_program: [Root, Bpf],
    own_commits::a_bpf_explained_fsync_loop_names_each_commits_own_parts: [Root, Bpf, Tool("python3")],
    own_commits::a_bpf_explained_call_names_only_its_own_filesystems_commits: [Root, Bpf, Tool("python3")],
    own_commits::a_bpf_explained_task_alternating_two_filesystems_names_each_calls_own: [Root, Bpf, Tool("python3")],
    exec::the_bpf_tracer_names_an_interrupts_wakeup_on_this_kernel_not_the_task_it_interrupted:
        [Root, Bpf, Tool("python3")],
    exec::the_bpf_tracers_count_of_interrupts_returns_to_zero_on_every_cpu: [Root, Bpf, Tool("bpftool")],
}
