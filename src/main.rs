//! The `advisor` binary.

mod cli;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    if let Err(err) = cli::run(cli) {
        eprintln!("advisor: {err}");
        std::process::exit(1);
    }
}
