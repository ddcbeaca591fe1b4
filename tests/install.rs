//! fsynclab installed as a tool (issue 63): the static binary of `scripts/build-release.sh`
//! run in an empty root, its Debian package installed, upgraded and removed, and the BPF
//! object kept in the repository checked against its sources.
//!
//! The release build is not made here (minutes): `scripts/test.sh` makes it once with
//! `scripts/build-release.sh DIR --debug` and names DIR in `FSYNCLAB_RELEASE_DIR`; a test that
//! needs it is skipped with that reason where it is not set (and fails under
//! `FSYNCLAB_REQUIRE_PRIVILEGED=1`, as in CI). By hand: `scripts/build-release.sh /tmp/rel &&
//! FSYNCLAB_RELEASE_DIR=/tmp/rel cargo test --test install`.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

#[path = "install/bpf_object.rs"]
mod bpf_object;
mod common;
#[path = "install/empty_root.rs"]
mod empty_root;
#[path = "install/package.rs"]
mod package;

use std::path::PathBuf;

use common::Need::{Bpf, Root, That, Tool, Tracefs};

common::tests! {
    bpf_object::the_kept_bpf_object_was_built_from_the_sources_beside_it,
    bpf_object::clang_makes_the_kept_bpf_object_byte_for_byte: [Tool("clang"), That(bpf_object::SAME_CLANG, bpf_object::same_clang)],
    empty_root::the_static_binary_loads_no_shared_library: [That(RELEASE, release_built)],
    empty_root::the_static_binary_runs_watch_and_probe_in_an_empty_root: [Root, Bpf, Tracefs, Tool("unshare"), That(RELEASE, release_built)],
    empty_root::an_empty_root_without_proc_is_one_line_naming_it: [Root, Tool("unshare"), That(RELEASE, release_built)],
    empty_root::an_empty_root_without_sys_is_one_line_naming_it: [Root, Tool("unshare"), That(RELEASE, release_built)],
    package::the_package_installs_runs_and_is_removed_without_a_trace: [Root, Tool("dpkg"), Tool("man"), That(RELEASE, release_built), That(package::NOT_INSTALLED, package::not_installed)],
    package::the_results_store_survives_upgrade_removal_and_purge: [Root, Tool("dpkg"), That(RELEASE, release_built), That(package::NOT_INSTALLED, package::not_installed)],
}

/// What the release tests need, in words.
const RELEASE: &str =
    "a release build in $FSYNCLAB_RELEASE_DIR (scripts/build-release.sh DIR; scripts/test.sh makes one)";

/// The directory `scripts/build-release.sh` filled, when it holds the binary and a package.
fn release_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("FSYNCLAB_RELEASE_DIR")?);
    (dir.join("fsynclab").is_file() && deb_in(&dir).is_some()).then_some(dir)
}

fn release_built() -> bool {
    release_dir().is_some()
}

/// The static binary of the release build.
fn release_binary() -> PathBuf {
    release_dir().expect("checked by the test's needs").join("fsynclab")
}

/// The package of the release build.
fn release_deb() -> PathBuf {
    deb_in(&release_dir().expect("checked by the test's needs")).expect("checked by the test's needs")
}

/// The one `fsynclab_*.deb` in `dir`.
fn deb_in(dir: &std::path::Path) -> Option<PathBuf> {
    let mut debs: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            name.starts_with("fsynclab_") && name.ends_with(".deb")
        })
        .collect();
    (debs.len() == 1).then(|| debs.remove(0))
}
