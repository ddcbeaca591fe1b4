//! The test harness of every file under tests/ (see the top of `common/mod.rs` for how a file
//! uses it): libtest-mimic's runner, with what each test needs checked before it runs. A
//! test whose need is missing is reported as ignored with the reason ("skipped: needs root")
//! and counted in the closing line; with `FSYNCLAB_REQUIRE_PRIVILEGED=1` it fails instead.

use std::fmt;
use std::path::Path;
use std::process::ExitCode;

use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// Something a test needs from the machine it runs on.
pub enum Need {
    /// Effective uid 0: loop devices, mounts, sysctls, tracefs.
    Root,
    /// `/dev/fuse`, for the emulated disks.
    Fuse,
    /// tracefs in the kernel (CONFIG_TRACING), for `--explain`.
    Tracefs,
    /// A kernel the BPF tracer can load into: BTF, which it is compiled against (CO-RE).
    Bpf,
    /// A program on the PATH, found the way fsynclab finds the tools it runs (`mkfs.xfs`).
    Tool(&'static str),
    /// Anything else: what is needed, in words, and how to tell whether it is here.
    That(&'static str, fn() -> bool),
}

impl Need {
    fn is_here(&self) -> bool {
        match self {
            Need::Root => fsynclab::sys::is_root(),
            Need::Fuse => Path::new("/dev/fuse").exists(),
            Need::Tracefs => Path::new("/sys/kernel/tracing").is_dir(),
            Need::Bpf => Path::new("/sys/kernel/btf/vmlinux").exists(),
            Need::Tool(name) => fsynclab::testbed::command::find_tool(name).is_some(),
            Need::That(_, check) => check(),
        }
    }
}

impl fmt::Display for Need {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Need::Root => f.write_str("root"),
            Need::Fuse => f.write_str("/dev/fuse"),
            Need::Tracefs => f.write_str("tracefs (CONFIG_TRACING)"),
            Need::Bpf => f.write_str("BPF with BTF (/sys/kernel/btf/vmlinux)"),
            Need::Tool(name) => f.write_str(name),
            Need::That(what, _) => f.write_str(what),
        }
    }
}

/// One test of a file: its name, its body (which panics on failure), what it needs.
pub struct Test {
    pub name: &'static str,
    pub body: fn(),
    pub needs: Vec<Need>,
}

/// A test's name from its path in the file (`bpf::xfs_test` is `xfs_test`): a test is listed
/// by its own name, wherever in the file's modules it is defined.
pub fn last_name(path: &'static str) -> &'static str {
    path.rsplit("::").next().map_or(path, str::trim)
}

/// Whether tests whose needs are missing must fail (CI) rather than skip.
pub fn privileged_required() -> bool {
    std::env::var("FSYNCLAB_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1")
}

/// Runs the tests the command line selects, as `cargo test` would, and returns the exit code.
pub fn run(tests: Vec<Test>) -> ExitCode {
    // A shell starts a background job with SIGINT and SIGQUIT ignored, and the binary under
    // test inherits that; it then keeps them ignored on purpose (src/signals.rs), and the
    // tests that stop it with Ctrl-C would wait for it in vain. The tests signal their
    // child's pid only, so the default action here does not reach this process from them.
    // SIGHUP (ignored under nohup) is not reset here, which would undo nohup for the test
    // run itself: the tests that send it start their runs with `with_default_signals`.
    for signal in [libc::SIGINT, libc::SIGQUIT] {
        // SAFETY: setting a signal's action to its default touches no Rust state.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }
    let mut args = Arguments::from_args();
    // libtest reads the thread count from the environment too.
    if args.test_threads.is_none() {
        args.test_threads = std::env::var("RUST_TEST_THREADS").ok().and_then(|n| n.parse().ok());
    }
    let trials = tests.into_iter().map(Test::into_trial).collect();
    libtest_mimic::run(&args, trials).exit_code()
}

impl Test {
    fn into_trial(self) -> Trial {
        let Test { name, body, needs } = self;
        Trial::ignorable_test(name, move || {
            let missing: Vec<String> = needs.iter().filter(|n| !n.is_here()).map(Need::to_string).collect();
            if !missing.is_empty() {
                let missing = missing.join(" and ");
                if privileged_required() {
                    return Err(format!("FSYNCLAB_REQUIRE_PRIVILEGED=1 but {missing} is not available").into());
                }
                return Ok(Completion::ignored_with(format!("skipped: needs {missing}")));
            }
            // On a thread named after the test, as libtest does, so that a panic message
            // says which test it comes from.
            let thread = std::thread::Builder::new()
                .name(name.to_string())
                .spawn(body)
                .map_err(|e| Failed::from(format!("cannot start the test's thread: {e}")))?;
            match thread.join() {
                Ok(()) => Ok(Completion::Completed),
                Err(panic) => Err(panic_message(panic.as_ref()).into()),
            }
        })
    }
}

/// The message a panic was raised with.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied());
    match text {
        Some(text) => format!("test panicked: {text}"),
        None => "test panicked".to_string(),
    }
}
