//! Regression tests: cases that guard an issue, found by a hostile run or a review, each
//! named for what a user now sees and citing its issue in its doc comment (ripgrep's
//! tests/regression.rs). The other files under tests/ are by feature.
//!
//! Issue 19: the holes a hostile run of the store, matrix, compare, report and `-o` found.
//! Each test reproduces one as the issue describes it and checks what a user now sees.
//!
//! Issue 8, the items that need no root: a run's buffers checked against memory in all
//! (item 4), fsync-tps rows cut short by a full disk (item 7), output places checked before
//! anything is measured (item 9), and a reader that goes away (item 10). Items 1-3, 5 and 12
//! are in tests/safety.rs, item 6 beside the result writer, items 8 and 11 in tests/errors.rs
//! and tests/scratch.rs.
//!
//! One binary, its tests in modules under tests/regression/ by what they guard: where output
//! goes (`output`), the results store (`store`), compare (`compare`), matrices (`matrix`) and
//! fsync-tps (`fsync_tps`); the made-up runs and commands they share are in `setup`.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;
#[path = "regression/compare.rs"]
mod compare;
#[path = "regression/fsync_tps.rs"]
mod fsync_tps;
#[path = "regression/matrix.rs"]
mod matrix;
#[path = "regression/output.rs"]
mod output;
#[path = "regression/setup.rs"]
mod setup;
#[path = "regression/store.rs"]
mod store;

use common::Need::{Root, That, Tool};

common::tests! {
    output::output_never_replaces_a_device_node: [Root],
    output::output_follows_links_and_writes_into_fifos,
    output::output_onto_the_store_in_use_is_refused,
    store::a_foreign_database_is_refused_unchanged,
    store::concurrent_first_use_of_a_new_store_keeps_every_run,
    store::an_immutable_store_is_refused_before_measuring: [
        Root,
        Tool("chattr"),
        That("chattr +i on the filesystem of the temporary directory", store::immutable_files_here),
    ],
    store::a_store_reads_without_write_access: [Root, Tool("mount"), Tool("setpriv")],
    compare::compare_counts_a_run_named_again_once_and_says_so,
    compare::large_ranges_work_or_get_a_one_line_error,
    compare::compare_of_different_scenarios_says_so_first,
    store::runs_parses_dates_strictly_and_compares_parameters_by_value,
    matrix::matrix_input_and_plans_are_bounded,
    matrix::matrix_values_spelled_differently_are_one_value,
    matrix::concurrent_resumes_make_each_run_once,
    fsync_tps::fsync_tps_buffers_are_checked_for_the_whole_run,
    fsync_tps::fsync_tps_rows_cut_short_are_marked_and_left_out,
    output::output_places_are_checked_before_measuring,
    output::a_reader_that_goes_away_ends_the_run_quietly,
}
