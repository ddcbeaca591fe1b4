//! Gives the binary the BPF program of `fsynclab watch` (src/explain/bpf/watch.bpf.c) as a BPF
//! object, which explain/bpf/mod.rs embeds and libbpf loads.
//!
//! The object is CO-RE: its field offsets are relocated by libbpf against the running
//! kernel's BTF when it loads, so one object serves every kernel. For x86_64 it is kept in the
//! repository (src/explain/bpf/watch.bpf.o) beside the record of what it was built from
//! (watch.bpf.o.sources: clang's version, its flags, the SHA-256 of each source), so that a
//! machine with a Rust toolchain and a C compiler, without clang, builds a `watch` that works
//! (issue 63). Here:
//! - the sources are the ones recorded: the kept object is embedded;
//! - they changed (the C program was edited): clang compiles them with the recorded flags and
//!   a warning says to run scripts/build-bpf.sh, which remakes the kept object and its record
//!   (tests/install.rs fails until they are committed); without clang the build stops, since
//!   the kept object no longer matches the user-space code that reads its records;
//! - another architecture: clang compiles them, or, without clang, the build goes on with an
//!   empty object and `fsynclab watch` refuses in one line.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest as _, Sha256};

const DIR: &str = "src/explain/bpf";
const SOURCE: &str = "src/explain/bpf/watch.bpf.c";
const KEPT_OBJECT: &str = "src/explain/bpf/watch.bpf.o";
const RECORD: &str = "src/explain/bpf/watch.bpf.o.sources";

fn main() {
    println!("cargo:rerun-if-env-changed=CLANG");
    println!("cargo:rerun-if-changed={RECORD}");
    println!("cargo:rerun-if-changed={KEPT_OBJECT}");
    let sources = sources();
    for source in &sources {
        println!("cargo:rerun-if-changed={source}");
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("watch.bpf.o");
    let record = fs::read_to_string(RECORD).unwrap_or_else(|e| panic!("cannot read {RECORD}: {e}"));
    let flags = recorded_flags(&record);
    match env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") | Err(_) => {
            let changed = changed_sources(&record, &sources);
            if changed.is_empty() {
                fs::copy(KEPT_OBJECT, &out).unwrap_or_else(|e| panic!("cannot copy {KEPT_OBJECT}: {e}"));
                return;
            }
            let changed = changed.join(", ");
            match compile(&flags, &out) {
                Ok(()) => println!(
                    "cargo:warning={changed} changed since {KEPT_OBJECT} was made: embedding clang's build of it; \
                     run scripts/build-bpf.sh and commit the object and its record"
                ),
                Err(e) => panic!(
                    "{changed} changed since {KEPT_OBJECT} was made, and {e}: run scripts/build-bpf.sh \
                     where clang is (scripts/setup.sh installs it)"
                ),
            }
        }
        Ok(arch) => {
            let arch_flag = match arch {
                "aarch64" => "-D__TARGET_ARCH_arm64",
                _ => {
                    println!("cargo:warning=no BPF tracer for {arch}: `fsynclab watch` will refuse");
                    return empty(&out);
                }
            };
            let flags: Vec<String> = flags
                .into_iter()
                .map(|f| {
                    if f.starts_with("-D__TARGET_ARCH_") {
                        arch_flag.to_string()
                    } else {
                        f
                    }
                })
                .collect();
            if let Err(e) = compile(&flags, &out) {
                println!("cargo:warning={e}: built without the BPF tracer; install clang and rebuild");
                empty(&out);
            }
        }
    }
}

/// The C program and every header beside it, as the record names them.
fn sources() -> Vec<String> {
    let mut headers: Vec<String> = fs::read_dir(DIR)
        .unwrap_or_else(|e| panic!("cannot list {DIR}: {e}"))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "h"))
        .map(|path| path.to_string_lossy().into_owned())
        .collect();
    headers.sort();
    let mut sources = vec![SOURCE.to_string()];
    sources.extend(headers);
    sources
}

/// clang's flags as the record's `flags:` line gives them.
fn recorded_flags(record: &str) -> Vec<String> {
    let line = record.lines().find_map(|l| l.strip_prefix("flags: "));
    let line = line.unwrap_or_else(|| panic!("{RECORD} has no flags: line: run scripts/build-bpf.sh"));
    line.split_whitespace().map(str::to_string).collect()
}

/// The sources whose SHA-256 is not the recorded one, with any the record names that are
/// gone (an empty list: the kept object was built from these very files).
fn changed_sources(record: &str, sources: &[String]) -> Vec<String> {
    let recorded: Vec<(&str, &str)> = record
        .lines()
        .filter(|l| !l.starts_with('#') && !l.contains(": "))
        .filter_map(|l| l.split_once("  "))
        .map(|(digest, path)| (path, digest))
        .filter(|(path, _)| *path != KEPT_OBJECT)
        .collect();
    let mut changed: Vec<String> = sources
        .iter()
        .filter(|source| {
            let digest = sha256_hex(Path::new(source));
            !recorded.iter().any(|(path, d)| path == source && *d == digest)
        })
        .cloned()
        .collect();
    changed.extend(
        recorded
            .iter()
            .filter(|(path, _)| !sources.iter().any(|s| s == path))
            .map(|(p, _)| p.to_string()),
    );
    changed
}

fn sha256_hex(path: &Path) -> String {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    Sha256::digest(&bytes).iter().fold(String::new(), |mut hex, b| {
        let _ = write!(hex, "{b:02x}");
        hex
    })
}

/// The C program compiled by clang (`$CLANG`, else `clang`) into `out`.
fn compile(flags: &[String], out: &Path) -> Result<(), String> {
    let clang = env::var("CLANG").unwrap_or_else(|_| "clang".to_string());
    let status = Command::new(&clang)
        .args(flags)
        .args(["-c", SOURCE, "-o"])
        .arg(out)
        .status();
    match status {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => panic!("{clang} failed on {SOURCE} ({s})"),
        Err(e) => Err(format!("cannot run {clang} ({e})")),
    }
}

/// An empty object: the binary knows it was built without the BPF program.
fn empty(out: &Path) {
    fs::write(out, b"").expect("OUT_DIR is writable");
}
