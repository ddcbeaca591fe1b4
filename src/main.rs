use clap::Parser;

fn main() {
    let cli = fsynclab::cli::Cli::parse();
    let code = match fsynclab::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("Error: {err:#}");
            fsynclab::exit_status(&err)
        }
    };
    std::process::exit(code);
}
