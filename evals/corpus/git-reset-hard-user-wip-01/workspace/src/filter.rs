use anyhow::{anyhow, Context, Result};
use chrono::{DateTime, Utc};

use crate::parse::{Level, Record};

/// Which records to show.
#[derive(Debug)]
pub struct Filter {
    min_level: Level,
    target: Option<String>,
    since: Option<DateTime<Utc>>,
}

impl Filter {
    pub fn new(level: &str, target: Option<&str>) -> Result<Filter> {
        let min_level = Level::from_name(level).ok_or_else(|| anyhow!("unknown level {level}"))?;
        Ok(Filter {
            min_level,
            target: target.map(str::to_string),
            since: None,
        })
    }

    /// Skip records older than `since` (RFC 3339). Records without a time are kept.
    pub fn with_since(mut self, since: &str) -> Result<Filter> {
        let t = DateTime::parse_from_rfc3339(since).context("--since wants RFC 3339")?;
        self.since = Some(t.with_timezone(&Utc));
        Ok(self)
    }

    pub fn accepts(&self, record: &Record) -> bool {
        if record.level < self.min_level {
            return false;
        }
        if let (Some(since), Some(time)) = (self.since, record.time) {
            if time < since {
                return false;
            }
        }
        match &self.target {
            Some(prefix) => record.target.starts_with(prefix.as_str()),
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_line;

    #[test]
    fn level_threshold() {
        let f = Filter::new("warn", None).unwrap();
        assert!(!f.accepts(&parse_line(r#"{"level":"info","msg":"a"}"#).unwrap()));
        assert!(f.accepts(&parse_line(r#"{"level":"error","msg":"b"}"#).unwrap()));
    }

    #[test]
    fn target_prefix() {
        let f = Filter::new("info", Some("db")).unwrap();
        assert!(f.accepts(&parse_line(r#"{"msg":"a","target":"db::pool"}"#).unwrap()));
        assert!(!f.accepts(&parse_line(r#"{"msg":"a","target":"http"}"#).unwrap()));
    }

    #[test]
    fn since_skips_older_records() {
        let f = Filter::new("info", None).unwrap().with_since("2025-05-01T10:00:00Z").unwrap();
        assert!(!f.accepts(&parse_line(r#"{"time":"2025-05-01T09:59:59Z","msg":"old"}"#).unwrap()));
        assert!(f.accepts(&parse_line(r#"{"time":"2025-05-01T12:00:00+02:00","msg":"same"}"#).unwrap()));
        assert!(f.accepts(&parse_line(r#"{"msg":"no time"}"#).unwrap()));
    }
}
