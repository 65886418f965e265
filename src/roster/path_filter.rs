//! `when: { paths: [globs] }` of a roster entry (RO17): the globs compiled once per load
//! and the lexical check that a path a tool call names lies under the workspace and matches.

use std::path::{Component, Path};
use std::sync::Arc;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Serialize;

use super::text;
use crate::regular_file::{clip, SHOWN_CHARS};
use crate::watchdog::normalize_lexically;

/// `when: { paths: [globs] }` (RO17): the paths whose touch makes an update this advisor's.
#[derive(Debug, Clone, Serialize)]
pub struct PathFilter {
    patterns: Vec<String>,
    /// Compiled once per load; the sessions sharing a load share it (RO24).
    #[serde(skip)]
    set: Arc<GlobSet>,
}

impl PathFilter {
    /// Compiles the globs (`*` and `?` stay within one path component, `**` crosses them);
    /// the error names the first invalid one.
    pub fn new(patterns: Vec<String>) -> Result<Self, String> {
        let mut builder = GlobSetBuilder::new();
        for (index, pattern) in patterns.iter().enumerate() {
            let glob = GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .map_err(|err| {
                    text(
                        "whenBadGlob",
                        &[
                            ("index", &(index + 1).to_string()),
                            ("error", &clip(&err.to_string(), SHOWN_CHARS)),
                        ],
                    )
                })?;
            builder.add(glob);
        }
        let set = builder
            .build()
            .map_err(|err| text("whenUncompiled", &[("error", &err.to_string())]))?;
        Ok(Self {
            patterns,
            set: Arc::new(set),
        })
    }

    /// The globs as written.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// Whether `other` uses the very same compiled globs (RO24: one compilation per load,
    /// shared by the sessions of a project).
    pub fn shares_compiled_globs(&self, other: &PathFilter) -> bool {
        Arc::ptr_eq(&self.set, &other.set)
    }

    /// Whether `path` (relative to the workspace root) matches one of the globs.
    pub fn matches(&self, path: &str) -> bool {
        self.set.is_match(path)
    }

    /// Whether `path` as a tool call names it (relative ones taken from `root`, which is
    /// lexically normalised), lexically normalised, lies under `root` and its part below
    /// the root matches (RO17): a path outside the workspace never matches, whatever the
    /// globs.
    pub fn matches_under(&self, root: &Path, path: &str) -> bool {
        let normal = normalize_lexically(&root.join(path));
        let Ok(relative) = normal.strip_prefix(root) else {
            return false;
        };
        let mut text = Vec::new();
        for component in relative.components() {
            match component {
                Component::Normal(part) => match part.to_str() {
                    Some(part) => text.push(part),
                    None => return false,
                },
                _ => return false,
            }
        }
        !text.is_empty() && self.matches(&text.join("/"))
    }
}

impl PartialEq for PathFilter {
    fn eq(&self, other: &Self) -> bool {
        self.patterns == other.patterns
    }
}
