use clap::Parser;

fn main() {
    let cli = fsynclab::cli::Cli::parse();
    let code = match fsynclab::app::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("Error: {err:#}");
            fsynclab::error::exit_status(&err)
        }
    };
    std::process::exit(code);
}
