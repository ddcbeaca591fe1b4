//! The BPF object kept in the repository (src/explain/bpf/watch.bpf.o), which a build without
//! clang embeds: the record beside it (watch.bpf.o.sources) names the SHA-256 of every source
//! it was built from, and clang, where it is the recorded version, makes it byte for byte.
//! Either fails when the C program was edited and `scripts/build-bpf.sh` not run.

use std::path::Path;
use std::process::Command;

const DIR: &str = "src/explain/bpf";
const RECORD: &str = "src/explain/bpf/watch.bpf.o.sources";
const OBJECT: &str = "src/explain/bpf/watch.bpf.o";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn record() -> String {
    std::fs::read_to_string(root().join(RECORD)).unwrap()
}

/// `sha256sum`'s digest of `path` (relative to the repository).
fn sha256(path: &str) -> String {
    let out = Command::new("sha256sum")
        .arg(path)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "sha256sum {path}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// Issue 63: the kept object's record names every source of the program (the C file and each
/// header beside it) with its current SHA-256, and the object's own: an edit of watch.bpf.c
/// without `scripts/build-bpf.sh` fails here, on any machine, clang or not.
pub fn the_kept_bpf_object_was_built_from_the_sources_beside_it() {
    let record = record();
    let recorded: Vec<(String, String)> = record
        .lines()
        .filter(|l| !l.starts_with('#') && !l.contains(": "))
        .filter_map(|l| l.split_once("  "))
        .map(|(digest, path)| (path.to_string(), digest.to_string()))
        .collect();
    let mut sources = vec![format!("{DIR}/watch.bpf.c")];
    let mut headers: Vec<String> = std::fs::read_dir(root().join(DIR))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".h"))
        .map(|name| format!("{DIR}/{name}"))
        .collect();
    headers.sort();
    sources.extend(headers);
    sources.push(OBJECT.to_string());
    let mut stale = Vec::new();
    for source in &sources {
        match recorded.iter().find(|(path, _)| path == source) {
            Some((_, digest)) if *digest == sha256(source) => {}
            Some(_) => stale.push(format!("{source} changed")),
            None => stale.push(format!("{source} is not in the record")),
        }
    }
    for (path, _) in &recorded {
        if !sources.contains(path) {
            stale.push(format!("{path} is recorded but gone"));
        }
    }
    assert!(
        stale.is_empty(),
        "{OBJECT} is stale ({}): run scripts/build-bpf.sh and commit the object and {RECORD}",
        stale.join("; ")
    );
    assert!(
        record.lines().any(|l| l.starts_with("clang: ")),
        "{RECORD} names no clang"
    );
}

/// What `clang_makes_the_kept_bpf_object_byte_for_byte` needs, in words.
pub const SAME_CLANG: &str = "the clang the kept BPF object was built with (its record's `clang:` line)";

/// Whether `clang --version` is the one the record names: another clang makes other bytes
/// from the same source, which says nothing of the object.
pub fn same_clang() -> bool {
    let Ok(out) = Command::new("clang").arg("--version").output() else {
        return false;
    };
    let version = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    record()
        .lines()
        .any(|l| l.strip_prefix("clang: ") == Some(version.as_str()))
}

/// Issue 63: the kept object is what clang makes of the sources in the repository, byte for
/// byte (`scripts/build-bpf.sh --check`), not only what its record says: a hand-made object
/// or a record edited to match fails here, where the recorded clang is (CI's, from
/// scripts/setup.sh).
pub fn clang_makes_the_kept_bpf_object_byte_for_byte() {
    let out = Command::new("scripts/build-bpf.sh")
        .arg("--check")
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scripts/build-bpf.sh --check: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
