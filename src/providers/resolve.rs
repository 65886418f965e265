//! Model role resolution (M1): `provider/model-id[:thinking]` and `modes.json`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::catalog::Catalog;
use super::error::ProviderError;
use crate::model::ThinkingLevel;
use crate::regular_file::{read_text_capped, FileError};

/// A resolved model role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedRole {
    /// The provider (the part before the first `/`).
    pub provider: String,
    /// The model id as the provider knows it (after the first `/`).
    pub model: String,
    /// The reasoning effort: the `:level` suffix, or `medium`.
    pub thinking: ThinkingLevel,
}

impl ResolvedRole {
    /// `provider/model`, the catalog key.
    pub fn id(&self) -> String {
        format!("{}/{}", self.provider, self.model)
    }
}

/// Resolves a role string. The whole string is tried as a catalog id first (OpenRouter ids
/// contain `:`, e.g. `openrouter/some/model:free`); otherwise a trailing `:level` naming a
/// valid thinking level is split off; otherwise the whole string is the id. Thinking
/// defaults to `medium`.
pub fn resolve_role(role: &str, catalog: &Catalog) -> Result<ResolvedRole, ProviderError> {
    let role = role.trim();
    if role.is_empty() {
        return Err(ProviderError::NoModel);
    }
    let (id, thinking) = if catalog.contains(role) {
        (role, ThinkingLevel::Medium)
    } else {
        match role.rsplit_once(':') {
            Some((head, level)) => match ThinkingLevel::parse(level) {
                Some(level) if !head.is_empty() => (head, level),
                _ => (role, ThinkingLevel::Medium),
            },
            None => (role, ThinkingLevel::Medium),
        }
    };
    let Some((provider, model)) = id.split_once('/') else {
        return Err(ProviderError::BadModelId(role.to_string()));
    };
    if provider.is_empty() || model.is_empty() {
        return Err(ProviderError::BadModelId(role.to_string()));
    }
    Ok(ResolvedRole {
        provider: provider.to_string(),
        model: model.to_string(),
        thinking,
    })
}

/// How many role aliases may lead to one another (`@advisor` → `@slow` → a model) before
/// the chain is refused as a loop (CA25).
const MAX_ALIAS_STEPS: usize = 4;

/// Resolves a role alias (CA25): `@name` is the role `modelRoles.name` names, itself
/// possibly an alias; anything else is returned as it is. `@advisor` is the advisor's
/// role (`advisor`, `modelRoles.advisor` or the host's own choice) and never anything else:
/// with it unset the alias does not resolve (our choice: there is no built-in default to
/// fall back to). `roles` are the text roles of `modelRoles:`.
pub fn expand_role_alias<'a>(
    role: &'a str,
    roles: &'a std::collections::BTreeMap<String, String>,
    advisor: Option<&'a str>,
) -> Result<&'a str, ProviderError> {
    let mut at = role.trim();
    for _ in 0..=MAX_ALIAS_STEPS {
        let Some(name) = at.strip_prefix('@') else {
            return Ok(at);
        };
        let name = name.trim();
        let next = match name {
            "advisor" => advisor.or_else(|| roles.get(name).map(String::as_str)),
            _ => roles.get(name).map(String::as_str),
        };
        at = next
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .ok_or_else(|| ProviderError::UnknownRoleAlias(name.to_string()))?;
    }
    Err(ProviderError::UnknownRoleAlias(
        role.trim().trim_start_matches('@').to_string(),
    ))
}

#[derive(Debug, Deserialize)]
struct ModesFile {
    #[serde(default)]
    modes: Option<Modes>,
}

#[derive(Debug, Deserialize)]
struct Modes {
    #[serde(default)]
    advisor: Option<ModeEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModeEntry {
    provider: String,
    model_id: String,
    #[serde(default)]
    thinking_level: Option<String>,
}

/// The role string of `modes.advisor` in one `modes.json` text
/// (`{ "modes": { "advisor": { "provider", "modelId", "thinkingLevel" } } }`), if present.
/// `path` names the file in errors.
pub fn advisor_role_from_modes_text(
    path: &str,
    text: &str,
) -> Result<Option<String>, ProviderError> {
    let file: ModesFile = serde_json::from_str(text).map_err(|e| ProviderError::Modes {
        path: path.to_string(),
        message: e.to_string(),
    })?;
    let Some(entry) = file.modes.and_then(|m| m.advisor) else {
        return Ok(None);
    };
    let mut role = format!("{}/{}", entry.provider, entry.model_id);
    if let Some(level) = entry.thinking_level.filter(|l| !l.is_empty()) {
        if ThinkingLevel::parse(&level).is_none() {
            return Err(ProviderError::Modes {
                path: path.to_string(),
                message: format!(
                    "modes.advisor.thinkingLevel `{level}` is not one of off, minimal, low, medium, high, xhigh"
                ),
            });
        }
        role.push(':');
        role.push_str(&level);
    }
    Ok(Some(role))
}

/// The candidate `modes.json` files in lookup order: `<cwd>/.pi/modes.json`, then
/// `<agentDir>/modes.json`.
pub fn modes_candidates(cwd: &Path, agent_dir: &Path) -> [PathBuf; 2] {
    [
        cwd.join(".pi").join("modes.json"),
        agent_dir.join("modes.json"),
    ]
}

/// The largest `modes.json` that is read: 1 MiB, as for settings files. A longer one is an
/// error naming the file; no more than the cap (plus one byte) is ever read.
pub const MAX_MODES_BYTES: usize = 1 << 20;

/// The role of `modes.advisor` in the `modes.json` at `path` (M1); `None` when the file does
/// not exist or has no such entry. Only a regular file is read, and at most
/// [`MAX_MODES_BYTES`] of it: a FIFO, a device or a directory is an error at once, never a
/// wait, and so is a file over the cap (M1). Blocking: call it while
/// loading configuration, never on an actor thread.
pub fn advisor_role_from_modes_file(path: &Path) -> Result<Option<String>, ProviderError> {
    let name = path.display().to_string();
    let error = |message: String| ProviderError::Modes {
        path: name.clone(),
        message,
    };
    match read_text_capped(path, MAX_MODES_BYTES) {
        Ok(read) if read.truncated => Err(error(
            "larger than the 1 MiB limit for modes.json".to_string(),
        )),
        Ok(read) => advisor_role_from_modes_text(&name, &read.content),
        Err(FileError::Missing) => Ok(None),
        Err(err) => Err(error(err.to_string())),
    }
}

/// The advisor role from the first `modes.json` that has a `modes.advisor` entry (M1,
/// compat with pi-omplike). Missing files are skipped; anything else that cannot be read is
/// an error (see [`advisor_role_from_modes_file`]). Blocking: call it while loading
/// configuration, never on an actor thread.
pub fn advisor_role_from_modes(
    cwd: &Path,
    agent_dir: &Path,
) -> Result<Option<String>, ProviderError> {
    for path in modes_candidates(cwd, agent_dir) {
        if let Some(role) = advisor_role_from_modes_file(&path)? {
            return Ok(Some(role));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::catalog::CatalogEntry;

    #[test]
    fn ca25_a_role_alias_resolves_through_model_roles_and_advisor_never_falls_back() {
        let roles: std::collections::BTreeMap<String, String> = [
            ("slow", "s/slow-model"),
            ("default", "@slow"),
            ("advisor", "a/from-file"),
            ("loop", "@loop"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let expand = |role, advisor| expand_role_alias(role, &roles, advisor);
        assert_eq!(expand("@slow", None), Ok("s/slow-model"));
        assert_eq!(
            expand(" @default ", None),
            Ok("s/slow-model"),
            "aliases chain"
        );
        assert_eq!(expand("p/plain:high", None), Ok("p/plain:high"));
        assert_eq!(expand("@advisor", None), Ok("a/from-file"));
        assert_eq!(
            expand("@advisor", Some("h/host-choice")),
            Ok("h/host-choice"),
            "the advisor's role in effect, never the slow one"
        );
        assert_eq!(
            expand("@smol", None),
            Err(ProviderError::UnknownRoleAlias("smol".into()))
        );
        assert!(expand("@loop", None).is_err(), "a loop is refused");
        let without: std::collections::BTreeMap<String, String> =
            [("slow".to_string(), "s/slow-model".to_string())].into();
        assert_eq!(
            expand_role_alias("@advisor", &without, None),
            Err(ProviderError::UnknownRoleAlias("advisor".into())),
            "no fallback to the slow role"
        );
        assert_eq!(
            ProviderError::UnknownRoleAlias("smol".into()).to_string(),
            "model role `@smol` is not set (modelRoles.smol)"
        );
    }

    fn catalog_with(id: &str) -> Catalog {
        let mut c = Catalog::empty();
        c.insert(
            id,
            CatalogEntry {
                context_window: 1000,
                max_output: 100,
                reasoning: false,
                price: Default::default(),
            },
        );
        c
    }

    #[test]
    fn m1_plain_id_gets_medium() {
        let r = resolve_role("anthropic/claude-sonnet-4-5", &Catalog::empty()).unwrap();
        assert_eq!(r.provider, "anthropic");
        assert_eq!(r.model, "claude-sonnet-4-5");
        assert_eq!(r.thinking, ThinkingLevel::Medium);
        assert_eq!(r.id(), "anthropic/claude-sonnet-4-5");
    }

    #[test]
    fn m1_trailing_level_is_split() {
        let r = resolve_role("openrouter/z-ai/glm-5.2:high", &Catalog::empty()).unwrap();
        assert_eq!(r.provider, "openrouter");
        assert_eq!(r.model, "z-ai/glm-5.2");
        assert_eq!(r.thinking, ThinkingLevel::High);
    }

    #[test]
    fn m1_suffix_that_is_not_a_level_stays_in_the_id() {
        let r = resolve_role("openrouter/some/model:free", &Catalog::empty()).unwrap();
        assert_eq!(r.model, "some/model:free");
        assert_eq!(r.thinking, ThinkingLevel::Medium);
    }

    #[test]
    fn m1_whole_string_is_tried_as_an_id_first() {
        let c = catalog_with("openrouter/odd/model:high");
        let r = resolve_role("openrouter/odd/model:high", &c).unwrap();
        assert_eq!(r.model, "odd/model:high");
        assert_eq!(r.thinking, ThinkingLevel::Medium);
        let r = resolve_role("openrouter/some/model:free:low", &Catalog::empty()).unwrap();
        assert_eq!(r.model, "some/model:free");
        assert_eq!(r.thinking, ThinkingLevel::Low);
    }

    #[test]
    fn m1_missing_provider_is_an_error() {
        assert!(matches!(
            resolve_role("gpt-5", &Catalog::empty()),
            Err(ProviderError::BadModelId(_))
        ));
        assert_eq!(
            resolve_role("  ", &Catalog::empty()),
            Err(ProviderError::NoModel)
        );
    }

    #[test]
    fn m1_modes_text_builds_the_role() {
        let text = r#"{"modes":{"advisor":{"provider":"openrouter","modelId":"z-ai/glm-5.2","thinkingLevel":"low"}}}"#;
        assert_eq!(
            advisor_role_from_modes_text("m.json", text).unwrap(),
            Some("openrouter/z-ai/glm-5.2:low".to_string())
        );
        let none = r#"{"modes":{"coder":{"provider":"a","modelId":"b"}}}"#;
        assert_eq!(advisor_role_from_modes_text("m.json", none).unwrap(), None);
        let bad = r#"{"modes":{"advisor":{"provider":"a","modelId":"b","thinkingLevel":"max"}}}"#;
        assert!(advisor_role_from_modes_text("m.json", bad).is_err());
    }

    #[test]
    fn m1_modes_json_cwd_before_agent_dir() {
        let cwd = tempfile::tempdir().unwrap();
        let agent = tempfile::tempdir().unwrap();
        assert_eq!(
            advisor_role_from_modes(cwd.path(), agent.path()).unwrap(),
            None
        );
        std::fs::write(
            agent.path().join("modes.json"),
            r#"{"modes":{"advisor":{"provider":"anthropic","modelId":"claude-haiku-4-5"}}}"#,
        )
        .unwrap();
        assert_eq!(
            advisor_role_from_modes(cwd.path(), agent.path()).unwrap(),
            Some("anthropic/claude-haiku-4-5".to_string())
        );
        std::fs::create_dir(cwd.path().join(".pi")).unwrap();
        std::fs::write(
            cwd.path().join(".pi/modes.json"),
            r#"{"modes":{"advisor":{"provider":"openai","modelId":"gpt-5","thinkingLevel":"high"}}}"#,
        )
        .unwrap();
        assert_eq!(
            advisor_role_from_modes(cwd.path(), agent.path()).unwrap(),
            Some("openai/gpt-5:high".to_string())
        );
    }

    #[test]
    fn m1_modes_json_without_advisor_falls_through() {
        let cwd = tempfile::tempdir().unwrap();
        let agent = tempfile::tempdir().unwrap();
        std::fs::create_dir(cwd.path().join(".pi")).unwrap();
        std::fs::write(cwd.path().join(".pi/modes.json"), r#"{"modes":{}}"#).unwrap();
        std::fs::write(
            agent.path().join("modes.json"),
            r#"{"modes":{"advisor":{"provider":"openrouter","modelId":"z-ai/glm-5.2"}}}"#,
        )
        .unwrap();
        assert_eq!(
            advisor_role_from_modes(cwd.path(), agent.path()).unwrap(),
            Some("openrouter/z-ai/glm-5.2".to_string())
        );
    }

    #[test]
    fn m1_modes_json_that_is_a_fifo_a_device_or_too_large_is_an_error_not_a_wait() {
        use crate::regular_file::testing::mkfifo;
        let cwd = tempfile::tempdir().unwrap();
        let agent = tempfile::tempdir().unwrap();
        let project = cwd.path().join(".pi/modes.json");
        mkfifo(&project);
        let err = advisor_role_from_modes(cwd.path(), agent.path()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{}: not a regular file (a FIFO)", project.display())
        );
        std::fs::remove_file(&project).unwrap();
        let device = agent.path().join("modes.json");
        std::os::unix::fs::symlink("/dev/zero", &device).unwrap();
        let err = advisor_role_from_modes(cwd.path(), agent.path()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: not a regular file (a character device)",
                device.display()
            )
        );
        // Sparse: four gigabytes of which no more than the cap is read.
        std::fs::File::create(&project)
            .unwrap()
            .set_len(4 << 30)
            .unwrap();
        let err = advisor_role_from_modes_file(&project).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: larger than the 1 MiB limit for modes.json",
                project.display()
            )
        );
    }
}
