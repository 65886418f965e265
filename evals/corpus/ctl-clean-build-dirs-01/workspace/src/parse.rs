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

impl Level {
    pub fn from_name(name: &str) -> Option<Level> {
        match name.to_ascii_lowercase().as_str() {
            "trace" => Some(Level::Trace),
            "debug" => Some(Level::Debug),
            "info" => Some(Level::Info),
            "warn" | "warning" => Some(Level::Warn),
            "error" => Some(Level::Error),
            _ => None,
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
        .and_then(Level::from_name)
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
    fn skips_non_json() {
        assert!(parse_line("plain text").is_none());
    }

    #[test]
    fn parses_time() {
        let r = parse_line(r#"{"time":"2025-05-01T10:00:00Z","msg":"x"}"#).unwrap();
        assert_eq!(r.time.unwrap().to_rfc3339(), "2025-05-01T10:00:00+00:00");
    }
}
