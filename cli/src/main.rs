//! The `advisor` binary: the commands over the `advisor` library (`cli`), installing and
//! checking the hook hosts' hooks (`hosts`), and `advisor eval compare`'s table and chart
//! (`compare`).

#![warn(clippy::too_many_lines)]

mod cli;
mod compare;
mod hosts;

use std::io::IsTerminal;

use clap::Parser;
use tracing_subscriber::EnvFilter;

fn main() {
    let cli = cli::Cli::parse();
    init_tracing(&cli);
    if let Err(err) = cli::run(cli) {
        eprintln!(
            "{}",
            cli::texts::line("error", &[("error", &err.to_string())])
        );
        std::process::exit(1);
    }
}

/// Tracing goes to standard error, never standard output (which carries the commands'
/// results): warnings by default, the crate's debug events too with `ADVISOR_DEBUG` set.
fn init_tracing(cli: &cli::Cli) {
    let debug = advisor::settings::env_flag(std::env::var("ADVISOR_DEBUG").ok().as_deref());
    let directives = if debug {
        "warn,advisor=debug"
    } else if matches!(cli.command, cli::Command::Watchdog(_)) {
        // `advisor watchdog` prints the loader's warnings itself; don't say them twice.
        "warn,advisor::watchdog=error"
    } else if matches!(cli.command, cli::Command::Roster(_)) {
        // So does `advisor roster`, on standard output with the roster.
        "warn,advisor::roster=error"
    } else {
        "warn"
    };
    let filter = EnvFilter::try_new(directives).unwrap_or_else(|_| EnvFilter::new("warn"));
    // `advisor serve --log FILE`: its standard output is the protocol, so logs may go to a
    // file instead of standard error (V1).
    if let cli::Command::Serve(args) = &cli.command {
        if let Some(path) = &args.log {
            match cli::serve::open_log(path) {
                Ok(file) => {
                    let _ = tracing_subscriber::fmt()
                        .with_env_filter(filter)
                        .with_writer(std::sync::Mutex::new(file))
                        .with_ansi(false)
                        .try_init();
                }
                Err(err) => {
                    eprintln!(
                        "{}",
                        cli::texts::line("error", &[("error", &err.to_string())])
                    );
                    std::process::exit(1);
                }
            }
            return;
        }
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    // Timestamps help when debugging; in a plain warning they are noise. A subscriber
    // already installed (none is) would keep working, so a failed init is not reported.
    let _ = if debug {
        builder.try_init()
    } else {
        builder.without_time().try_init()
    };
}
