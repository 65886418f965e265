//! The advisor's status (C3).

use serde::{Deserialize, Serialize};

use crate::model::Usage;

/// What `/advisor status` reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdvisorStatus {
    /// Whether the advisor is enabled.
    pub enabled: bool,
}

impl AdvisorStatus {
    /// Human-readable multi-line rendering.
    pub fn render(&self) -> String {
        format!("advisor: {}", if self.enabled { "enabled" } else { "disabled" })
    }
}

#[allow(dead_code)]
fn _usage(_: Usage) {}
