//! Compiles the BPF program of `fsynclab watch` (src/explain/bpf/watch.bpf.c) to a BPF object
//! with clang, which the binary embeds and libbpf loads (explain/bpf/mod.rs).
//!
//! The object is CO-RE: its field offsets are relocated by libbpf against the running
//! kernel's BTF when it loads, so it is built once, here, whatever kernel the build machine
//! runs (its own BTF is not read). BPF's helper headers come from libbpf-dev (`<bpf/...>`),
//! which scripts/setup.sh installs with clang. Without clang the build goes on with an empty
//! object, and `fsynclab watch` refuses in one line saying to run scripts/setup.sh.

use std::env;
use std::path::PathBuf;
use std::process::Command;

const SOURCE: &str = "src/explain/bpf/watch.bpf.c";
const HEADERS: [&str; 2] = ["src/explain/bpf/kernel_types.h", "src/explain/bpf/watch_maps.h"];

fn main() {
    println!("cargo:rerun-if-changed={SOURCE}");
    for header in HEADERS {
        println!("cargo:rerun-if-changed={header}");
    }
    println!("cargo:rerun-if-env-changed=CLANG");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("watch.bpf.o");
    let arch = match env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => "x86",
        Ok("aarch64") => "arm64",
        Ok(other) => {
            println!("cargo:warning=no BPF tracer for {other}: `fsynclab watch` will refuse");
            return empty(&out);
        }
        Err(_) => "x86",
    };
    let clang = env::var("CLANG").unwrap_or_else(|_| "clang".to_string());
    let status = Command::new(&clang)
        .args(["-g", "-O2", "-target", "bpf", "-Wall", "-Werror"])
        .arg(format!("-D__TARGET_ARCH_{arch}"))
        .args(["-c", SOURCE, "-o"])
        .arg(&out)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{clang} failed on {SOURCE} ({s})"),
        Err(e) => {
            println!(
                "cargo:warning=cannot run {clang} ({e}): built without the BPF tracer; run scripts/setup.sh and rebuild"
            );
            empty(&out);
        }
    }
}

/// An empty object: the binary knows it was built without the BPF program.
fn empty(out: &PathBuf) {
    std::fs::write(out, b"").expect("OUT_DIR is writable");
}
