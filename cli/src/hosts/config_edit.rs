//! Setting a few keys of the hosts' `config.yml` for `advisor install --model/--gate` (H27),
//! keeping the rest of the file as it is: its other keys, comments and order.
//!
//! Only two-level keys in block style are edited (`modelRoles:` then `  advisor: …`): a
//! missing section is appended at the end, a missing key is put first under its section, an
//! existing key's line is replaced. A section written inline (`advisor: {enabled: true}`) is
//! refused with a message asking for a hand edit. The result is read back and must say what
//! was asked (and be a valid settings file), or nothing is written.

use std::path::Path;

use advisor::settings::SettingsLayer;

/// One key to set: `section.key: value`, the value as YAML text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyEdit {
    /// The top-level section, e.g. `modelRoles`.
    pub section: &'static str,
    /// The key under it, e.g. `advisor`.
    pub key: &'static str,
    /// The value as YAML text (already quoted when it needs to be).
    pub value: String,
}

impl KeyEdit {
    /// `section.key` set to the string `value`, quoted when YAML would read it otherwise.
    pub fn string(section: &'static str, key: &'static str, value: &str) -> Self {
        Self {
            section,
            key,
            value: yaml_string(value),
        }
    }

    /// `section.key` set to `true` or `false`.
    pub fn flag(section: &'static str, key: &'static str, value: bool) -> Self {
        Self {
            section,
            key,
            value: value.to_string(),
        }
    }
}

/// `text` as a YAML scalar: plain when it is made of safe characters and does not start
/// with an indicator, else double-quoted (JSON quoting is valid YAML).
fn yaml_string(text: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-:+".contains(c);
    let plain = !text.is_empty()
        && text.chars().all(safe)
        && text.starts_with(|c: char| c.is_ascii_alphanumeric())
        && !matches!(
            text,
            "true" | "false" | "null" | "yes" | "no" | "on" | "off"
        );
    if plain {
        text.to_string()
    } else {
        serde_json::Value::from(text).to_string()
    }
}

/// Why a settings file could not be edited.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct EditError {
    /// The file, as shown.
    pub file: String,
    /// What went wrong, and what to do.
    pub message: String,
}

/// `text` (the content of `file`, empty for a new one) with each of `edits` applied.
pub fn edit_config(file: &Path, text: &str, edits: &[KeyEdit]) -> Result<String, EditError> {
    let error = |message: String| EditError {
        file: file.display().to_string(),
        message,
    };
    let parsed = |text: &str| {
        serde_norway::from_str::<serde_json::Value>(text).map_err(|e| {
            error(format!(
                "not a valid settings file ({e}); it was not changed"
            ))
        })
    };
    if !text.trim().is_empty() && !parsed(text)?.is_object() {
        return Err(error(
            "its top level is not a mapping; it was not changed".into(),
        ));
    }
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for edit in edits {
        set_key(&mut lines, edit).map_err(error)?;
    }
    let mut out = lines.join("\n");
    out.push('\n');
    let value = parsed(&out)?;
    for edit in edits {
        let expected = serde_norway::from_str::<serde_json::Value>(&edit.value).ok();
        if value.get(edit.section).and_then(|s| s.get(edit.key)) != expected.as_ref() {
            return Err(error(format!(
                "could not set {}.{}; add it by hand",
                edit.section, edit.key
            )));
        }
    }
    SettingsLayer::parse(file, &out).map_err(|e| error(e.to_string()))?;
    Ok(out)
}

/// Whether `line` opens the top-level `section` (`section:` alone, maybe a comment after).
/// `Err` when the section is written inline.
fn opens_section(line: &str, section: &str) -> Result<bool, String> {
    let Some(rest) = line.strip_prefix(section).and_then(|r| r.strip_prefix(':')) else {
        return Ok(false);
    };
    let rest = rest.trim();
    if rest.is_empty() || rest.starts_with('#') {
        Ok(true)
    } else {
        Err(format!(
            "`{section}:` is written inline; put the keys under it one per line, then try again"
        ))
    }
}

/// Sets one key in the file's lines.
fn set_key(lines: &mut Vec<String>, edit: &KeyEdit) -> Result<(), String> {
    let mut start = None;
    for (i, line) in lines.iter().enumerate() {
        if opens_section(line, edit.section)? {
            start = Some(i);
        }
    }
    let Some(start) = start else {
        lines.push(format!("{}:", edit.section));
        lines.push(format!("  {}: {}", edit.key, edit.value));
        return Ok(());
    };
    let is_top_level = |line: &str| {
        let t = line.trim_start();
        !t.is_empty() && !t.starts_with('#') && line.len() == t.len()
    };
    let end = lines[start + 1..]
        .iter()
        .position(|l| is_top_level(l))
        .map_or(lines.len(), |p| start + 1 + p);
    let indent: String = lines[start + 1..end]
        .iter()
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| l.chars().take_while(|c| *c == ' ').collect())
        .filter(|i: &String| !i.is_empty())
        .unwrap_or_else(|| "  ".to_string());
    let entry = format!("{indent}{}: {}", edit.key, edit.value);
    let key_line = (start + 1..end).find(|&i| {
        lines[i]
            .strip_prefix(indent.as_str())
            .and_then(|r| r.strip_prefix(edit.key))
            .is_some_and(|r| r.starts_with(':'))
    });
    match key_line {
        Some(i) => lines[i] = entry,
        None => lines.insert(start + 1, entry),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edits(model: &str) -> Vec<KeyEdit> {
        vec![
            KeyEdit::string("modelRoles", "advisor", model),
            KeyEdit::flag("advisor", "enabled", true),
        ]
    }

    fn edit(text: &str, model: &str) -> Result<String, EditError> {
        edit_config(Path::new("/c/config.yml"), text, &edits(model))
    }

    #[test]
    fn h27_a_new_file_gets_both_sections() {
        assert_eq!(
            edit("", "anthropic/claude-sonnet-4-5:high").unwrap(),
            "modelRoles:\n  advisor: anthropic/claude-sonnet-4-5:high\nadvisor:\n  enabled: true\n"
        );
    }

    #[test]
    fn h27_other_keys_comments_and_order_are_kept() {
        let text = "# my settings\nmodelRoles:\n    default: x/y  # the agent's\n    advisor: old/one\n\
                    retry:\n  fallbackChains: {}\nadvisor:\n  # tuned\n  immuneTurns: 5\n  enabled: false\n";
        assert_eq!(
            edit(text, "openai/gpt-5").unwrap(),
            "# my settings\nmodelRoles:\n    default: x/y  # the agent's\n    advisor: openai/gpt-5\n\
             retry:\n  fallbackChains: {}\nadvisor:\n  # tuned\n  immuneTurns: 5\n  enabled: true\n"
        );
        let text = "modelRoles:\n  default: x/y\n";
        assert_eq!(
            edit(text, "a/b").unwrap(),
            "modelRoles:\n  advisor: a/b\n  default: x/y\nadvisor:\n  enabled: true\n"
        );
    }

    #[test]
    fn h27_values_yaml_would_misread_are_quoted() {
        assert_eq!(yaml_string("@slow"), "\"@slow\"");
        assert_eq!(yaml_string("a/b c"), "\"a/b c\"");
        assert_eq!(yaml_string("off"), "\"off\"");
        assert_eq!(yaml_string("openrouter/x/y:free"), "openrouter/x/y:free");
        let out = edit("", "@slow").unwrap();
        assert!(out.contains("advisor: \"@slow\""), "{out}");
    }

    #[test]
    fn h27_inline_sections_and_broken_files_are_refused() {
        let err = edit("advisor: {enabled: false}\n", "a/b").unwrap_err();
        assert!(
            err.message.contains("`advisor:` is written inline"),
            "{err}"
        );
        let err = edit("modelRoles: [\n", "a/b").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("/c/config.yml: not a valid settings file"),
            "{err}"
        );
        let err = edit("- a\n- b\n", "a/b").unwrap_err();
        assert!(err.message.contains("not a mapping"), "{err}");
    }

    #[test]
    fn h27_a_value_the_settings_refuse_is_not_written() {
        let err = edit_config(
            Path::new("/c/config.yml"),
            "",
            &[KeyEdit::string("advisor", "policy", "sometimes")],
        )
        .unwrap_err();
        assert!(err.message.contains("advisor.policy"), "{err}");
    }
}
