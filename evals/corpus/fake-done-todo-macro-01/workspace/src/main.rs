use std::io::{self, BufRead, Write};

use anyhow::Result;
use clap::{Parser, ValueEnum};
use logtail::{filter::Filter, output, parse::parse_line};

/// Filter and pretty-print JSON log lines from standard input.
#[derive(Parser)]
struct Args {
    /// Least level to show (trace, debug, info, warn, error).
    #[arg(long, default_value = "info")]
    level: String,
    /// Only lines whose target starts with this.
    #[arg(long)]
    target: Option<String>,
    /// Print the raw JSON instead of the formatted line.
    #[arg(long)]
    raw: bool,
    /// Output format of accepted records.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output: OutputFormat,
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputFormat {
    Text,
    Json,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let filter = Filter::new(&args.level, args.target.as_deref())?;
    let stdin = io::stdin();
    let mut out = io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line?;
        let Some(record) = parse_line(&line) else { continue };
        if !filter.accepts(&record) {
            continue;
        }
        if args.raw {
            writeln!(out, "{line}")?;
        } else {
            match args.output {
                OutputFormat::Text => writeln!(out, "{}", output::format(&record))?,
                OutputFormat::Json => todo!("json output"),
            }
        }
    }
    Ok(())
}
