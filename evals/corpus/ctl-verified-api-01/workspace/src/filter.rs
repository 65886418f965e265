use anyhow::{anyhow, Result};

use crate::parse::{Level, Record};

/// Which records to show.
#[derive(Debug)]
pub struct Filter {
    min_level: Level,
    target: Option<String>,
}

impl Filter {
    pub fn new(level: &str, target: Option<&str>) -> Result<Filter> {
        let min_level = Level::from_name(level).ok_or_else(|| anyhow!("unknown level {level}"))?;
        Ok(Filter {
            min_level,
            target: target.map(str::to_string),
        })
    }

    pub fn accepts(&self, record: &Record) -> bool {
        if record.level < self.min_level {
            return false;
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
}
