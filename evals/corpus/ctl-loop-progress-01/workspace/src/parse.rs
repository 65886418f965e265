use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde_json::Value;

/// The level of a record, ordered from least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// A level name that is none of trace, debug, info, warn(ing), error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownLevel(pub String);

impl std::fmt::Display for UnknownLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown level {:?}", self.0)
    }
}

impl std::error::Error for UnknownLevel {}

impl FromStr for Level {
    type Err = UnknownLevel;

    fn from_str(name: &str) -> Result<Level, UnknownLevel> {
        match name.to_ascii_lowercase().as_str() {
            "trace" => Ok(Level::Trace),
            "debug" => Ok(Level::Debug),
            "info" => Ok(Level::Info),
            "warn" | "warning" => Ok(Level::Warn),
            "error" => Ok(Level::Error),
            _ => Err(UnknownLevel(name.to_string())),
        }
    }
}

/// One parsed log line.
#[derive(Debug, Clone)]
pub struct Record {
    pub time: Option<DateTime<Utc>>,
    pub level: Level,
    pub target: String,
    pub message: String,
}

/// Parses one JSON log line; lines that are not JSON objects give `None`.
pub fn parse_line(line: &str) -> Option<Record> {
    let v: Value = serde_json::from_str(line).ok()?;
    let obj = v.as_object()?;
    let level = obj
        .get("level")
        .and_then(Value::as_str)
        .and_then(|name| name.parse().ok())
        .unwrap_or(Level::Info);
    let time = obj
        .get("time")
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc));
    Some(Record {
        time,
        level,
        target: obj.get("target").and_then(Value::as_str).unwrap_or("").to_string(),
        message: obj.get("msg").and_then(Value::as_str).unwrap_or("").to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_level_and_message() {
        let r = parse_line(r#"{"level":"WARN","msg":"disk 91% full","target":"agent::disk"}"#).unwrap();
        assert_eq!(r.level, Level::Warn);
        assert_eq!(r.message, "disk 91% full");
    }

    #[test]
    fn level_from_str() {
        assert_eq!("Warning".parse::<Level>(), Ok(Level::Warn));
        assert_eq!("loud".parse::<Level>(), Err(UnknownLevel("loud".to_string())));
    }

    #[test]
    fn skips_non_json() {
        assert!(parse_line("plain text").is_none());
    }

    #[test]
    fn parses_time() {
        let r = parse_line(r#"{"time":"2025-05-01T10:00:00Z","msg":"x"}"#).unwrap();
        assert_eq!(r.time.unwrap().to_rfc3339(), "2025-05-01T10:00:00+00:00");
    }
}
