//! The `advisor` binary.

mod cli;

use clap::Parser;
use tracing_subscriber::EnvFilter;

fn main() {
    let cli = cli::Cli::parse();
    init_tracing(&cli);
    if let Err(err) = cli::run(cli) {
        eprintln!("advisor: {err}");
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
    } else {
        "warn"
    };
    let filter = EnvFilter::try_new(directives).unwrap_or_else(|_| EnvFilter::new("warn"));
    // A subscriber already installed (none is) would keep working; nothing to report.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
