use std::io::Write;

use clap::Parser;

fn main() {
    let cli = fsynclab::cli::Cli::parse();
    let code = match fsynclab::run(cli) {
        Ok(code) => code,
        Err(err) => {
            // Not eprintln!: it panics when stderr is gone (a closed terminal).
            let _ = writeln!(std::io::stderr(), "Error: {err:#}");
            fsynclab::exit_status(&err)
        }
    };
    // A step that could not be undone (a busy mount) has been reported where it happened:
    // the run is not a success, whatever it measured.
    let code = match code {
        0 | 2 if fsynclab::testbed::state::teardown_failed() => 1,
        code => code,
    };
    std::process::exit(code);
}
