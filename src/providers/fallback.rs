//! The backup models of `retry.fallbackChains` (P6), built by a host the way it builds the
//! advisor's own model.

use std::sync::Arc;

use super::ProviderError;
use crate::model::ModelClient;

/// Builds each role of `chain` with `build`, in order. A role that cannot be built (no key,
/// unknown provider…) is left out, with a line for the user saying why.
pub fn build_fallbacks(
    chain: &[String],
    build: impl Fn(&str) -> Result<Arc<dyn ModelClient>, ProviderError>,
) -> (Vec<Arc<dyn ModelClient>>, Vec<String>) {
    let mut models = Vec::with_capacity(chain.len());
    let mut notices = Vec::new();
    for role in chain {
        match build(role) {
            Ok(model) => models.push(model),
            Err(e) => notices.push(crate::texts::notice(
                "backupOff",
                &[("role", &role.to_string()), ("error", &e.to_string())],
            )),
        }
    }
    (models, notices)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::scripted::ScriptedModel;

    #[test]
    fn p6_a_backup_that_cannot_be_built_is_left_out_with_a_notice() {
        let chain = vec!["ok/one".to_string(), "nokey/two".to_string()];
        let (models, notices) = build_fallbacks(&chain, |role| {
            if role.starts_with("ok/") {
                Ok(Arc::new(ScriptedModel::new([]).with_id(role)) as Arc<dyn ModelClient>)
            } else {
                Err(ProviderError::MissingKey {
                    provider: "nokey".into(),
                    env_var: "NOKEY_API_KEY".into(),
                })
            }
        });
        assert_eq!(models.len(), 1);
        assert_eq!(models[0].info().id, "ok/one");
        assert_eq!(notices.len(), 1);
        assert!(notices[0].starts_with("advisor: backup model nokey/two is off: "));
    }
}
