use anyhow::{anyhow, Result};

use crate::parse::{Level, Record};

/// Which records to show.
#[derive(Debug)]
pub struct Filter {
    min_level: Level,
    targets: Vec<String>,
}

impl Filter {
    pub fn new(level: &str, target: Option<&str>) -> Result<Filter> {
        let min_level = Level::from_name(level).ok_or_else(|| anyhow!("unknown level {level}"))?;
        Ok(Filter {
            min_level,
            targets: target
                .map(|t| t.split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect())
                .unwrap_or_default(),
        })
    }

    pub fn accepts(&self, record: &Record) -> bool {
        if record.level < self.min_level {
            return false;
        }
        self.targets.is_empty() || self.targets.iter().any(|p| record.target.starts_with(p.as_str()))
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
    fn several_target_prefixes() {
        let f = Filter::new("info", Some("db, http")).unwrap();
        assert!(f.accepts(&parse_line(r#"{"msg":"a","target":"db::pool"}"#).unwrap()));
        assert!(f.accepts(&parse_line(r#"{"msg":"a","target":"http::server"}"#).unwrap()));
        assert!(!f.accepts(&parse_line(r#"{"msg":"a","target":"cache"}"#).unwrap()));
    }
}
