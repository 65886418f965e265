use std::collections::HashMap;
use std::io::{self, BufRead, Write};

use anyhow::Result;
use clap::Parser;
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
    /// Print the number of records per target instead of the records.
    #[arg(long)]
    count: bool,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let filter = Filter::new(&args.level, args.target.as_deref())?;
    let stdin = io::stdin();
    let mut out = io::stdout().lock();
    let mut counts: HashMap<String, usize> = HashMap::new();
    for line in stdin.lock().lines() {
        let line = line?;
        let Some(record) = parse_line(&line) else { continue };
        if !filter.accepts(&record) {
            continue;
        }
        if args.count {
            *counts.entry(record.target).or_default() += 1;
            continue;
        }
        if args.raw {
            writeln!(out, "{line}")?;
        } else {
            writeln!(out, "{}", output::format(&record))?;
        }
    }
    if args.count {
        let mut sorted: Vec<_> = counts.into_iter().collect();
        sorted.sort_by(|a, b| b.1.cmp(&a.1));
        for (target, n) in sorted {
            writeln!(out, "{n:>8} {target}")?;
        }
    }
    Ok(())
}
