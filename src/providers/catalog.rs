//! The model catalog (M3): per model, context window, output bound, whether it reasons and
//! four prices per million tokens. The built-in catalog is `config/models.json`, compiled
//! in; a file of the same shape may replace it.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::error::{ErrorSource, ProviderError};
use crate::model::{ModelInfo, Usage};
use crate::regular_file::read_text_capped;

/// The built-in catalog file.
const BUILTIN: &str = include_str!("../../config/models.json");

/// The largest catalog file that is read: 4 MiB, room for thousands of models. A longer
/// one is an error naming the file; no more than the cap (plus one byte) is ever read.
pub const MAX_CATALOG_BYTES: usize = 4 << 20;

/// Window given to a model the catalog does not know (M3).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
/// Output bound given to a model the catalog does not know.
pub const DEFAULT_MAX_OUTPUT: u64 = 16_384;

/// Prices in dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prices {
    /// Uncached input.
    #[serde(default)]
    pub input: f64,
    /// Output (reasoning included).
    #[serde(default)]
    pub output: f64,
    /// Input read from the cache.
    #[serde(default)]
    pub cache_read: f64,
    /// Input written to the cache.
    #[serde(default)]
    pub cache_write: f64,
}

impl Prices {
    /// The cost in dollars of these token counts (G4).
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.input as f64 * self.input
            + usage.output as f64 * self.output
            + usage.cache_read as f64 * self.cache_read
            + usage.cache_write as f64 * self.cache_write)
            / 1_000_000.0
    }
}

/// One catalog entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogEntry {
    /// Context window in tokens.
    pub context_window: u64,
    /// Maximum output tokens.
    pub max_output: u64,
    /// Whether the model reasons (thinking / reasoning effort is sent).
    #[serde(default)]
    pub reasoning: bool,
    /// List prices.
    #[serde(default)]
    pub price: Prices,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Defaults {
    #[serde(default = "default_window")]
    context_window: u64,
    #[serde(default = "default_output")]
    max_output: u64,
}

fn default_window() -> u64 {
    DEFAULT_CONTEXT_WINDOW
}

fn default_output() -> u64 {
    DEFAULT_MAX_OUTPUT
}

impl Default for Defaults {
    fn default() -> Self {
        Self {
            context_window: DEFAULT_CONTEXT_WINDOW,
            max_output: DEFAULT_MAX_OUTPUT,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
struct CatalogFile {
    #[serde(default)]
    defaults: Defaults,
    models: BTreeMap<String, CatalogEntry>,
}

/// What a lookup found: the facts, the prices, and whether the model was known.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// Window, output bound, reasoning flag.
    pub info: ModelInfo,
    /// Prices (all zero for an unknown model).
    pub prices: Prices,
    /// Whether the catalog had an entry.
    pub known: bool,
}

/// The model catalog, keyed by `provider/model-id`.
#[derive(Debug, Clone)]
pub struct Catalog {
    defaults: Defaults,
    models: BTreeMap<String, CatalogEntry>,
}

impl Catalog {
    /// The catalog compiled into the crate (`config/models.json`).
    pub fn builtin() -> Result<Self, ProviderError> {
        Self::from_json("built-in config/models.json", BUILTIN)
    }

    /// Parses a catalog file's text; `source_name` names it in errors.
    pub fn from_json(source_name: &str, text: &str) -> Result<Self, ProviderError> {
        let file: CatalogFile = serde_json::from_str(text).map_err(|e| ProviderError::Catalog {
            source_name: source_name.to_string(),
            source: ErrorSource::new(e),
        })?;
        Ok(Self {
            defaults: file.defaults,
            models: file.models,
        })
    }

    /// Reads a catalog file that replaces the built-in one. Only a regular file is read, and
    /// at most [`MAX_CATALOG_BYTES`] of it: a FIFO or a device is an error at once, never a
    /// wait, and so is a longer file (M3). Blocking: call it while
    /// loading configuration, never on an actor thread.
    pub fn load(path: &Path) -> Result<Self, ProviderError> {
        let name = path.display().to_string();
        let error = |source: ErrorSource| ProviderError::Catalog {
            source_name: name.clone(),
            source,
        };
        let read =
            read_text_capped(path, MAX_CATALOG_BYTES).map_err(|e| error(ErrorSource::new(e)))?;
        if read.truncated {
            return Err(error(ErrorSource::message(
                "larger than the 4 MiB limit for a model catalog",
            )));
        }
        Self::from_json(&name, &read.content)
    }

    /// An empty catalog (every model unknown).
    pub fn empty() -> Self {
        Self {
            defaults: Defaults::default(),
            models: BTreeMap::new(),
        }
    }

    /// Adds or replaces one entry.
    pub fn insert(&mut self, id: &str, entry: CatalogEntry) {
        self.models.insert(id.to_string(), entry);
    }

    /// The entry for `provider/model-id`, if any.
    pub fn get(&self, id: &str) -> Option<&CatalogEntry> {
        self.models.get(id)
    }

    /// Whether the catalog knows `id`.
    pub fn contains(&self, id: &str) -> bool {
        self.models.contains_key(id)
    }

    /// Every model id, sorted.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.models.keys().map(String::as_str)
    }

    /// The facts for `id`; an unknown model gets the defaults (128k window, no prices) and
    /// a warning when `warn` is set.
    pub fn resolve(&self, id: &str, warn: bool) -> Resolved {
        match self.models.get(id) {
            Some(e) => Resolved {
                info: ModelInfo {
                    id: id.to_string(),
                    context_window: e.context_window,
                    max_output: e.max_output,
                    reasoning: e.reasoning,
                },
                prices: e.price,
                known: true,
            },
            None => {
                if warn {
                    tracing::warn!(
                        model = id,
                        context_window = self.defaults.context_window,
                        "model not in the catalog: using a default window and no prices"
                    );
                }
                Resolved {
                    info: ModelInfo {
                        id: id.to_string(),
                        context_window: self.defaults.context_window,
                        max_output: self.defaults.max_output,
                        reasoning: false,
                    },
                    prices: Prices::default(),
                    known: false,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn m3_builtin_catalog_has_the_documented_models() {
        let c = Catalog::builtin().unwrap();
        for id in [
            "anthropic/claude-sonnet-4-5",
            "anthropic/claude-opus-4-5",
            "anthropic/claude-haiku-4-5",
            "openrouter/z-ai/glm-5.2",
            "openrouter/anthropic/claude-sonnet-4.5",
            "openai/gpt-5",
            "openai/gpt-5-mini",
            "openai/gpt-4.1",
            "openrouter/openai/gpt-5",
        ] {
            let e = c.get(id).unwrap_or_else(|| panic!("{id} missing"));
            assert!(e.context_window >= 100_000, "{id}");
            assert!(e.max_output > 0 && e.max_output < e.context_window, "{id}");
            assert!(e.price.input > 0.0 && e.price.output > 0.0, "{id}");
        }
        assert!(c.get("openai/gpt-5").unwrap().reasoning);
        assert!(!c.get("openai/gpt-4.1").unwrap().reasoning);
    }

    #[test]
    fn m3_builtin_catalog_carries_a_note() {
        let v: serde_json::Value = serde_json::from_str(BUILTIN).unwrap();
        assert!(
            v["note"].as_str().unwrap().contains("list prices")
                || v["note"].as_str().unwrap().contains("List prices")
        );
        assert!(v["date"].is_string());
    }

    #[test]
    fn m3_unknown_model_gets_128k_default() {
        let c = Catalog::builtin().unwrap();
        let r = c.resolve("local/qwen3-coder", false);
        assert!(!r.known);
        assert_eq!(r.info.context_window, 128_000);
        assert_eq!(r.prices, Prices::default());
    }

    #[test]
    fn g4_cost_from_prices() {
        let p = Prices {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        };
        let u = Usage {
            estimated: false,
            input: 1_000,
            output: 2_000,
            cache_read: 10_000,
            cache_write: 4_000,
            cost: 0.0,
        };
        let want = (3_000.0 + 30_000.0 + 3_000.0 + 15_000.0) / 1e6;
        assert!((p.cost(&u) - want).abs() < 1e-12);
    }

    #[test]
    fn m3_bad_catalog_text_is_an_error_naming_the_source() {
        let e = Catalog::from_json("mine.json", "{").unwrap_err();
        assert!(e.to_string().starts_with("model catalog mine.json:"));
    }

    #[test]
    fn m3_a_catalog_file_that_is_a_fifo_or_too_large_is_an_error_not_a_wait() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("models.json");
        crate::regular_file::testing::mkfifo(&fifo);
        let e = Catalog::load(&fifo).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "model catalog {}: not a regular file (a FIFO)",
                fifo.display()
            )
        );
        let big = dir.path().join("big.json");
        // Sparse: four gigabytes of which no more than the cap is read.
        std::fs::File::create(&big)
            .unwrap()
            .set_len(4 << 30)
            .unwrap();
        let e = Catalog::load(&big).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "model catalog {}: larger than the 4 MiB limit for a model catalog",
                big.display()
            )
        );
        std::fs::write(&big, BUILTIN).unwrap();
        assert_eq!(
            Catalog::load(&big).unwrap().ids().count(),
            Catalog::builtin().unwrap().ids().count()
        );
    }
}
