use crate::parse::{Level, Record};

fn level_tag(level: Level) -> &'static str {
    match level {
        Level::Trace => "TRACE",
        Level::Debug => "DEBUG",
        Level::Info => " INFO",
        Level::Warn => " WARN",
        Level::Error => "ERROR",
    }
}

/// One line: time (or dashes), level, target, message.
pub fn format(record: &Record) -> String {
    let time = record
        .time
        .map(|t| t.format("%H:%M:%S%.3f").to_string())
        .unwrap_or_else(|| "------------".to_string());
    format!("{time} {} {}: {}", level_tag(record.level), record.target, record.message)
}
