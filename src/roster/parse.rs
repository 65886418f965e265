//! One roster file's text to what it says (RO4–RO13): the file-level checks (RO4), the
//! top-level keys (RO6), and each entry checked on its own (RO5), so one malformed entry
//! never costs the healthy ones.

use std::path::Path;
use std::str::FromStr;

use serde_norway::{Mapping, Value};

use super::tools::{resolve_grant, Rejected, RosterTool};
use super::{
    text, PathFilter, PolicyChoice, RosterWarning, MAX_ADVISORS, MAX_GLOBS_PER_ADVISOR,
    MAX_GLOBS_PER_FILE, MAX_NOTES_PER_UPDATE,
};
use crate::domain::advice::Severity;
use crate::regular_file::{clip, SHOWN_CHARS};
use crate::settings::{
    looks_like, too_deep, yaml_kind, ReviewMode, SyncBacklog, MAX_REVIEW_INTERVAL, MAX_SPEND_RATIO,
    MAX_TOOL_BUDGET, MAX_YAML_DEPTH, MIN_SPEND_RATIO, SPEND_RATIO_ALLOWED, SYNC_BACKLOG_ALLOWED,
};

/// The keys of a roster file's top level.
const TOP_KEYS: &[&str] = &["instructions", "maxNotesPerUpdate", "advisors"];

/// The keys of one entry.
const ENTRY_KEYS: &[&str] = &[
    "name",
    "enabled",
    "model",
    "tools",
    "instructions",
    "maxNotesPerUpdate",
    "policy",
    "maxSeverity",
    "when",
    "reviewMode",
    "reviewInterval",
    "syncBacklog",
    "toolBudget",
    "maxSpendRatio",
    "gate",
    "gateFailMode",
];

/// What one file says, checked; `@` imports not yet expanded.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ParsedFile {
    /// The top-level `instructions`, when set and not blank.
    pub(crate) instructions: Option<String>,
    /// The top-level `maxNotesPerUpdate`.
    pub(crate) max_notes_per_update: Option<usize>,
    /// The healthy entries, in file order.
    pub(crate) entries: Vec<Entry>,
}

/// One healthy entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    /// `name`, trimmed.
    pub(crate) name: String,
    /// Its slug (RO7).
    pub(crate) slug: String,
    /// `enabled`.
    pub(crate) enabled: Option<bool>,
    /// `model`, trimmed; blank counts as not set.
    pub(crate) model: Option<String>,
    /// `tools`, resolved (RO9); `None` when omitted or when every name was dropped (the
    /// default set applies either way).
    pub(crate) tools: Option<Vec<RosterTool>>,
    /// `instructions`, when not blank.
    pub(crate) instructions: Option<String>,
    /// `maxNotesPerUpdate`.
    pub(crate) max_notes_per_update: Option<usize>,
    /// `policy`.
    pub(crate) policy: Option<PolicyChoice>,
    /// `maxSeverity`.
    pub(crate) max_severity: Option<Severity>,
    /// `when`.
    pub(crate) when: Option<PathFilter>,
    /// `reviewMode` (CA6).
    pub(crate) review_mode: Option<ReviewMode>,
    /// `reviewInterval` (CA6).
    pub(crate) review_interval: Option<u64>,
    /// `syncBacklog` (CA6).
    pub(crate) sync_backlog: Option<SyncBacklog>,
    /// `toolBudget` (SP1).
    pub(crate) tool_budget: Option<u32>,
    /// `maxSpendRatio` (SP6).
    pub(crate) max_spend_ratio: Option<f64>,
    /// `gate` (GT10).
    pub(crate) gate: Option<crate::settings::GateMode>,
    /// `gateFailMode` (GT10).
    pub(crate) gate_fail_mode: Option<crate::settings::GateFailMode>,
}

/// The slug of an advisor name (RO7): lower case, every run of characters other than ASCII
/// letters and digits one `-`, no `-` at either end; `advisor` when nothing is left.
pub fn slugify(name: &str) -> String {
    let mut slug = String::with_capacity(name.len());
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    while slug.ends_with('-') {
        slug.pop();
    }
    if slug.is_empty() {
        slug.push_str("advisor");
    }
    slug
}

/// The most characters an advisor's name keeps (RO7): it rides in every advisory.
pub const MAX_NAME_CHARS: usize = 64;

/// A name as [`clean_name`] leaves it.
pub(crate) struct Cleaned {
    /// The name: trimmed, without control or bidi characters, at most [`MAX_NAME_CHARS`].
    pub(crate) name: String,
    /// Whether control or bidi characters were removed.
    pub(crate) stripped: bool,
    /// Whether it was cut to [`MAX_NAME_CHARS`].
    pub(crate) cut: bool,
}

/// Whether `c` may not appear in a name (RO7): a control character (U+0000–U+001F, U+007F–U+009F: an
/// escape sequence, a bell, a newline), a line or paragraph separator (U+2028, U+2029: a
/// newline to a reader), or one that reorders or hides text (bidi embeddings, overrides and
/// isolates, the directional marks, zero-width characters, the interlinear annotation marks
/// U+FFF9–U+FFFB).
pub(crate) fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{061c}'
                | '\u{feff}'
                | '\u{fff9}'..='\u{fffb}'
        )
}

/// `raw` as a display name (RO7): control and bidi characters removed (a run of them
/// between two words leaves one space), trimmed, cut to [`MAX_NAME_CHARS`] characters.
pub(crate) fn clean_name(raw: &str) -> Cleaned {
    let mut name = String::with_capacity(raw.len().min(4 * MAX_NAME_CHARS));
    let mut stripped = false;
    let mut gap = false;
    for c in raw.trim().chars() {
        if unprintable(c) {
            stripped = true;
            gap |= c.is_whitespace();
            continue;
        }
        if gap && !c.is_whitespace() && !name.is_empty() && !name.ends_with(' ') {
            name.push(' ');
        }
        gap = false;
        name.push(c);
    }
    let kept = name.trim();
    let cut = kept.chars().count() > MAX_NAME_CHARS;
    let name = match kept.char_indices().nth(MAX_NAME_CHARS) {
        Some((at, _)) => kept[..at].trim_end().to_string(),
        None => kept.to_string(),
    };
    Cleaned {
        name,
        stripped,
        cut,
    }
}

/// Parses the text of the roster file `file` (RO4). `None` when the whole file is skipped
/// (nested too deep, not YAML, not a mapping at the top); the reason is in `warnings`
/// either way, with every key and entry problem of a file that is kept.
pub(crate) fn parse_file(
    file: &Path,
    source: &str,
    warnings: &mut Vec<RosterWarning>,
) -> Option<ParsedFile> {
    let skip = |problem: String| {
        RosterWarning::file(file, None, text("fileSkipped", &[("problem", &problem)]))
    };
    if let Some(line) = too_deep(source) {
        let (max, line) = (MAX_YAML_DEPTH.to_string(), line.to_string());
        warnings.push(skip(text("tooDeep", &[("max", &max), ("line", &line)])));
        return None;
    }
    let value: Value = match super::yaml::from_str(source) {
        Ok(value) => value,
        Err(err) => {
            let error = err.to_string();
            let error = clip(&error, SHOWN_CHARS);
            warnings.push(skip(text("notYaml", &[("error", &error)])));
            return None;
        }
    };
    let map = match value {
        Value::Mapping(map) => map,
        Value::Null => return Some(ParsedFile::default()),
        other => {
            warnings.push(skip(kind_text("notMapping", &other)));
            return None;
        }
    };
    let mut parsed = ParsedFile::default();
    for (key, value) in &map {
        let Some(key) = key.as_str() else {
            warnings.push(unknown_key(file, None, &key_text(key), TOP_KEYS));
            continue;
        };
        let ignored = |problem: String| {
            RosterWarning::file(file, Some(key), text("ignored", &[("problem", &problem)]))
        };
        match key {
            "instructions" => match text_field(value) {
                Ok(text) => parsed.instructions = text,
                Err(problem) => warnings.push(ignored(key_problem(key, &problem))),
            },
            "maxNotesPerUpdate" => match notes_field(value) {
                Ok((notes, clamped)) => {
                    parsed.max_notes_per_update = notes;
                    warnings.extend(clamped.map(|raw| clamp_warning(file, None, raw)));
                }
                Err(problem) => warnings.push(ignored(key_problem(key, &problem))),
            },
            "advisors" => match value {
                Value::Null => {}
                Value::Sequence(items) => {
                    let mut items = items.iter().enumerate();
                    let mut globs_left = MAX_GLOBS_PER_FILE;
                    // RO24: past the cap nothing is checked, and one line says how many.
                    while parsed.entries.len() < MAX_ADVISORS {
                        let Some((index, item)) = items.next() else {
                            break;
                        };
                        let found = parse_entry(file, index + 1, item, warnings, &mut globs_left);
                        if let Some(entry) = found {
                            parsed.entries.push(entry);
                        }
                    }
                    let rest = items.count();
                    if rest > 0 {
                        warnings.push(too_many(file, rest));
                    }
                }
                other => warnings.push(ignored(kind_text("advisorsNotList", other))),
            },
            other => warnings.push(unknown_key(file, None, other, TOP_KEYS)),
        }
    }
    Some(parsed)
}

/// Checks one entry (RO5); `None` (with a warning naming the entry and the field) when it is
/// malformed.
fn parse_entry(
    file: &Path,
    index: usize,
    item: &Value,
    warnings: &mut Vec<RosterWarning>,
    globs_left: &mut usize,
) -> Option<Entry> {
    let position = format!("#{index}");
    let Value::Mapping(map) = item else {
        warnings.push(RosterWarning::entry(
            file,
            &position,
            None,
            entry_skipped(&kind_text("entryNotMapping", item)),
        ));
        return None;
    };
    let (name, label) = entry_name(file, &position, map, warnings)?;
    let mut entry = Entry {
        slug: slugify(&name),
        name,
        enabled: None,
        model: None,
        tools: None,
        instructions: None,
        max_notes_per_update: None,
        policy: None,
        max_severity: None,
        when: None,
        review_mode: None,
        review_interval: None,
        sync_backlog: None,
        tool_budget: None,
        max_spend_ratio: None,
        gate: None,
        gate_fail_mode: None,
    };
    let mut notes = Vec::new();
    for (key, value) in map {
        let Some(key) = key.as_str() else {
            notes.push(unknown_key(file, Some(&label), &key_text(key), ENTRY_KEYS));
            continue;
        };
        let place = Place {
            file,
            label: &label,
            globs_left: &mut *globs_left,
        };
        let checked = set_field(&mut entry, key, value, place, &mut notes);
        if let Err(problem) = checked {
            let named = if problem.starts_with('`') {
                problem
            } else {
                key_problem(key, &problem)
            };
            warnings.push(RosterWarning::entry(
                file,
                &label,
                Some(key),
                entry_skipped(&named),
            ));
            return None;
        }
    }
    warnings.extend(notes);
    Some(entry)
}

/// The entry's `name` (RO5), cleaned, and its label for warnings; `None` (with a warning
/// naming the entry's position) when it is missing or unusable. A name that was stripped
/// of unprintable characters or cut is noted.
fn entry_name(
    file: &Path,
    position: &str,
    map: &Mapping,
    warnings: &mut Vec<RosterWarning>,
) -> Option<(String, String)> {
    let mut name_notes = Vec::new();
    let name = match field(map, "name").map(text_field) {
        Some(Ok(Some(raw))) => match clean_name(&raw) {
            Cleaned { name, .. } if name.is_empty() => Err(text("nameUnprintable", &[])),
            Cleaned {
                name,
                stripped,
                cut,
            } => {
                if stripped {
                    name_notes.push("nameStripped");
                }
                if cut {
                    name_notes.push("nameCut");
                }
                Ok(name)
            }
        },
        Some(Err(problem)) => Err(problem),
        _ => Err(text("required", &[])),
    };
    let name = match name {
        Ok(name) => name,
        Err(problem) => {
            warnings.push(RosterWarning::entry(
                file,
                position,
                Some("name"),
                entry_skipped(&key_problem("name", &problem)),
            ));
            return None;
        }
    };
    let label = format!("\"{}\"", clip(&name, SHOWN_CHARS));
    let max = MAX_NAME_CHARS.to_string();
    warnings.extend(
        name_notes.into_iter().map(|key| {
            RosterWarning::entry(file, &label, Some("name"), text(key, &[("max", &max)]))
        }),
    );
    Some((name, label))
}

/// Where an entry's field is checked: its file, its label, and the `when.paths` globs the
/// file has left (RO24).
struct Place<'a> {
    file: &'a Path,
    label: &'a str,
    globs_left: &'a mut usize,
}

/// Checks the field `key` of an entry (RO6–RO17) and sets it on `entry`; warnings that do
/// not skip the entry go to `notes`.
fn set_field(
    entry: &mut Entry,
    key: &str,
    value: &Value,
    place: Place<'_>,
    notes: &mut Vec<RosterWarning>,
) -> Result<(), String> {
    let Place {
        file,
        label,
        globs_left,
    } = place;
    match key {
        "name" => Ok(()),
        "enabled" => flag_field(value).map(|v| entry.enabled = v),
        "model" => text_field(value)
            .map(|v| entry.model = v.map(|m| m.trim().to_string()).filter(|m| !m.is_empty())),
        "tools" => names_field(value).map(|names| {
            entry.tools = names.and_then(|names| {
                let grant = resolve_grant(&names);
                notes.extend(grant_warnings(
                    file,
                    label,
                    &grant.rejected,
                    grant.fell_back,
                ));
                (!grant.fell_back).then_some(grant.tools)
            })
        }),
        "instructions" => text_field(value).map(|v| entry.instructions = v),
        "maxNotesPerUpdate" => notes_field(value).map(|(v, clamped)| {
            entry.max_notes_per_update = v;
            notes.extend(clamped.map(|raw| clamp_warning(file, Some(label), raw)));
        }),
        "policy" => choice_field(value, "defer, interrupt, reconfirm").map(|v| entry.policy = v),
        "toolBudget" => budget_field(value).map(|v| entry.tool_budget = v),
        "maxSpendRatio" => ratio_field(value).map(|v| entry.max_spend_ratio = v),
        "gate" => match value {
            Value::Bool(false) => {
                entry.gate = Some(crate::settings::GateMode::Off);
                Ok(())
            }
            _ => choice_field(value, crate::settings::GATE_ALLOWED).map(|v| entry.gate = v),
        },
        "gateFailMode" => choice_field(value, crate::settings::GATE_FAIL_MODE_ALLOWED)
            .map(|v| entry.gate_fail_mode = v),
        "maxSeverity" => {
            choice_field(value, "nit, concern, blocker").map(|v| entry.max_severity = v)
        }
        "reviewMode" => choice_field(value, "turn, agent-end").map(|v| entry.review_mode = v),
        "reviewInterval" => interval_field(value).map(|v| entry.review_interval = v),
        "syncBacklog" => sync_field(value).map(|v| entry.sync_backlog = v),
        "when" => when_field(value, globs_left).map(|(v, written)| {
            entry.when = v;
            if let (Some(kept), Some(written)) = (&entry.when, written) {
                let vars = [
                    ("count", written.to_string()),
                    ("kept", kept.patterns().len().to_string()),
                    ("perAdvisor", MAX_GLOBS_PER_ADVISOR.to_string()),
                    ("perFile", MAX_GLOBS_PER_FILE.to_string()),
                ];
                let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let message = text("globsCut", &vars);
                notes.push(RosterWarning::entry(file, label, Some("when"), message));
            }
        }),
        other => {
            notes.push(unknown_key(file, Some(label), other, ENTRY_KEYS));
            Ok(())
        }
    }
}

/// The value under `key`, when the mapping has one.
fn field<'a>(map: &'a Mapping, key: &str) -> Option<&'a Value> {
    map.get(key)
}

/// Text, or nothing (YAML null, or blank text); anything else is a problem.
fn text_field(value: &Value) -> Result<Option<String>, String> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) if text.trim().is_empty() => Ok(None),
        Value::String(text) => Ok(Some(text.clone())),
        other => Err(kind_text("notText", other)),
    }
}

/// `true` or `false`, or nothing.
fn flag_field(value: &Value) -> Result<Option<bool>, String> {
    match value {
        Value::Null => Ok(None),
        Value::Bool(flag) => Ok(Some(*flag)),
        other => Err(kind_text("notFlag", other)),
    }
}

/// A list of names, or nothing; an item that is not text is a problem.
fn names_field(value: &Value) -> Result<Option<Vec<String>>, String> {
    match value {
        Value::Null => Ok(None),
        Value::Sequence(items) => items
            .iter()
            .enumerate()
            .map(|(index, item)| match item {
                Value::String(name) => Ok(name.clone()),
                other => Err(item_text("toolsItem", index, other)),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        other => Err(kind_text("toolsNotList", other)),
    }
}

/// A number from [`MIN_SPEND_RATIO`] to [`MAX_SPEND_RATIO`] (SP6), or nothing; anything
/// else makes the entry malformed (RO5).
fn ratio_field(value: &Value) -> Result<Option<f64>, String> {
    let allowed = |value: &str| {
        let vars = [("allowed", SPEND_RATIO_ALLOWED), ("value", value)];
        text("spendRatioRange", &vars)
    };
    match value {
        Value::Null => Ok(None),
        Value::Number(number) => match number.as_f64() {
            Some(x) if (MIN_SPEND_RATIO..=MAX_SPEND_RATIO).contains(&x) => Ok(Some(x)),
            _ => Err(allowed(&number.to_string())),
        },
        other => Err(allowed(yaml_kind(other))),
    }
}

/// A whole number from 0 to [`MAX_TOOL_BUDGET`] (SP1), or nothing; anything else makes
/// the entry malformed (RO5).
fn budget_field(value: &Value) -> Result<Option<u32>, String> {
    let allowed = |value: &str| {
        let max = MAX_TOOL_BUDGET.to_string();
        text("budgetRange", &[("max", &max), ("value", value)])
    };
    match value {
        Value::Null => Ok(None),
        Value::Number(number) => match number.as_u64() {
            Some(n) if n <= u64::from(MAX_TOOL_BUDGET) => Ok(u32::try_from(n).ok()),
            _ => Err(allowed(&number.to_string())),
        },
        other => Err(allowed(yaml_kind(other))),
    }
}

/// A whole number of at least 1 (RO10), or nothing; above [`MAX_NOTES_PER_UPDATE`] it is
/// capped, and the second value is the number written, for a warning.
fn notes_field(value: &Value) -> Result<(Option<usize>, Option<u64>), String> {
    let allowed = |value: &str| {
        let max = MAX_NOTES_PER_UPDATE.to_string();
        text("notesRange", &[("max", &max), ("value", value)])
    };
    match value {
        Value::Null => Ok((None, None)),
        Value::Number(number) => match number.as_u64() {
            Some(0) | None => Err(allowed(&number.to_string())),
            Some(n) if n > MAX_NOTES_PER_UPDATE as u64 => Ok((Some(MAX_NOTES_PER_UPDATE), Some(n))),
            Some(n) => Ok((usize::try_from(n).ok(), None)),
        },
        other => Err(allowed(yaml_kind(other))),
    }
}

/// `reviewInterval` (CA6): a YAML integer from 1 to 2^53 − 1, or nothing; a quoted number,
/// a fraction, `.nan`, `.inf` or anything else is a problem.
fn interval_field(value: &Value) -> Result<Option<u64>, String> {
    let shown = match value {
        Value::Null => return Ok(None),
        Value::Number(number) => match number.as_u64() {
            Some(n) if (1..=MAX_REVIEW_INTERVAL).contains(&n) => return Ok(Some(n)),
            _ => number.to_string(),
        },
        Value::String(word) => format!("{:?}", clip(word, SHOWN_CHARS)),
        other => yaml_kind(other).to_string(),
    };
    Err(text("intervalRange", &[("value", &shown)]))
}

/// `syncBacklog` (CA6): `off`, `1`, `3`, `5` or `strict`, numbers quoted or not, or
/// nothing.
fn sync_field(value: &Value) -> Result<Option<SyncBacklog>, String> {
    let shown = match value {
        Value::Null => return Ok(None),
        Value::String(word) => word.clone(),
        Value::Number(number) => number.to_string(),
        other => yaml_kind(other).to_string(),
    };
    shown.parse().map(Some).map_err(|_| {
        let value = clip(&shown, SHOWN_CHARS);
        text(
            "choiceWord",
            &[("allowed", SYNC_BACKLOG_ALLOWED), ("value", &value)],
        )
    })
}

/// One of a fixed set of words (any case), or nothing.
fn choice_field<T: FromStr>(value: &Value, allowed: &str) -> Result<Option<T>, String> {
    match value {
        Value::Null => Ok(None),
        Value::String(word) => word
            .trim()
            .to_ascii_lowercase()
            .parse()
            .map(Some)
            .map_err(|_| {
                let value = clip(word, SHOWN_CHARS);
                text("choiceWord", &[("allowed", allowed), ("value", &value)])
            }),
        other => Err(text(
            "choiceKind",
            &[("allowed", allowed), ("kind", yaml_kind(other))],
        )),
    }
}

/// `when: { paths: [globs] }` (RO17), or nothing; with the number of globs written when
/// some were dropped: past [`MAX_GLOBS_PER_ADVISOR`], or past the `globs_left` of the file
/// (RO24). Only the kept globs are compiled.
fn when_field(
    value: &Value,
    globs_left: &mut usize,
) -> Result<(Option<PathFilter>, Option<usize>), String> {
    let map = match value {
        Value::Null => return Ok((None, None)),
        Value::Mapping(map) => map,
        other => return Err(kind_text("whenNotMapping", other)),
    };
    let mut patterns = None;
    for (key, value) in map {
        match key.as_str() {
            Some("paths") => match value {
                Value::Sequence(items) => {
                    let mut list = Vec::with_capacity(items.len());
                    for (index, item) in items.iter().enumerate() {
                        match item {
                            Value::String(glob) => list.push(glob.clone()),
                            other => return Err(item_text("whenItem", index, other)),
                        }
                    }
                    patterns = Some(list);
                }
                other => return Err(kind_text("whenNotList", other)),
            },
            _ => {
                let key = key_text(key);
                let key = clip(&key, SHOWN_CHARS);
                return Err(text("whenUnknown", &[("key", &key)]));
            }
        }
    }
    let mut patterns = patterns.ok_or_else(|| text("whenNoPaths", &[]))?;
    if patterns.is_empty() {
        return Err(text("whenEmpty", &[]));
    }
    if *globs_left == 0 {
        let max = MAX_GLOBS_PER_FILE.to_string();
        return Err(text("globsUsedUp", &[("perFile", &max)]));
    }
    let written = patterns.len();
    let kept = written.min(MAX_GLOBS_PER_ADVISOR).min(*globs_left);
    patterns.truncate(kept);
    *globs_left -= kept;
    let filter = PathFilter::new(patterns)?;
    Ok((Some(filter), (kept < written).then_some(written)))
}

/// The line `key` about a value of the wrong kind (`{kind}`).
fn kind_text(key: &'static str, value: &Value) -> String {
    text(key, &[("kind", yaml_kind(value))])
}

/// The line `key` about the list item at `index` (from 0) of the wrong kind.
fn item_text(key: &'static str, index: usize, value: &Value) -> String {
    let index = (index + 1).to_string();
    text(key, &[("index", &index), ("kind", yaml_kind(value))])
}

/// `problem` of the field `key`: "`key` problem".
fn key_problem(key: &str, problem: &str) -> String {
    text("keyProblem", &[("key", key), ("problem", problem)])
}

/// `problem`, and the entry left out for it.
fn entry_skipped(problem: &str) -> String {
    text("entrySkipped", &[("problem", problem)])
}

/// A key as it is written, for a warning about it.
fn key_text(key: &Value) -> String {
    match key {
        Value::String(text) => text.clone(),
        Value::Number(number) => number.to_string(),
        Value::Bool(flag) => flag.to_string(),
        other => yaml_kind(other).to_string(),
    }
}

/// The warning for a key nobody reads, with a suggestion when it resembles a known one.
fn unknown_key(file: &Path, label: Option<&str>, key: &str, known: &[&str]) -> RosterWarning {
    let key = clip(key, SHOWN_CHARS);
    let message = match known.iter().find(|k| looks_like(&key, k)) {
        Some(near) => text("unknownKeyNear", &[("key", &key), ("near", near)]),
        None => text("unknownKey", &[("key", &key)]),
    };
    match label {
        Some(label) => RosterWarning::entry(file, label, Some(&key), message),
        None => RosterWarning::file(file, Some(&key), message),
    }
}

/// The warning for `count` entries of `file` past the roster's cap (RO24).
pub(crate) fn too_many(file: &Path, count: usize) -> RosterWarning {
    let (count, max) = (count.to_string(), MAX_ADVISORS.to_string());
    RosterWarning::file(
        file,
        Some("advisors"),
        text("tooManyAdvisors", &[("count", &count), ("max", &max)]),
    )
}

/// The warning for a `maxNotesPerUpdate` above the cap.
fn clamp_warning(file: &Path, label: Option<&str>, raw: u64) -> RosterWarning {
    let (raw, max) = (raw.to_string(), MAX_NOTES_PER_UPDATE.to_string());
    let message = text("notesClamped", &[("raw", &raw), ("max", &max)]);
    match label {
        Some(label) => RosterWarning::entry(file, label, Some("maxNotesPerUpdate"), message),
        None => RosterWarning::file(file, Some("maxNotesPerUpdate"), message),
    }
}

/// The warnings of a tool grant (RO9).
fn grant_warnings(
    file: &Path,
    label: &str,
    rejected: &[Rejected],
    fell_back: bool,
) -> Vec<RosterWarning> {
    let mut out: Vec<RosterWarning> = rejected
        .iter()
        .map(|rejected| {
            let message = match rejected {
                Rejected::Mutating(name) => {
                    text("toolRefused", &[("tool", &clip(name, SHOWN_CHARS))])
                }
                Rejected::Unknown(name) => {
                    text("toolUnknown", &[("tool", &clip(name, SHOWN_CHARS))])
                }
            };
            RosterWarning::entry(file, label, Some("tools"), message)
        })
        .collect();
    if fell_back {
        out.push(RosterWarning::entry(
            file,
            label,
            Some("tools"),
            text("noToolLeft", &[]),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "/p/WATCHDOG.yml";

    fn parse(text: &str) -> (Option<ParsedFile>, Vec<String>) {
        let mut warnings = Vec::new();
        let parsed = parse_file(Path::new(FILE), text, &mut warnings);
        (parsed, warnings.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn ro7_slugs() {
        assert_eq!(slugify("Architecture"), "architecture");
        assert_eq!(slugify("  Security & Secrets!! "), "security-secrets");
        assert_eq!(slugify("DB--Migrations_v2"), "db-migrations-v2");
        assert_eq!(slugify("Ünïcode Çheck"), "n-code-heck");
        assert_eq!(slugify("!!!"), "advisor");
    }

    #[test]
    fn ro4_invalid_yaml_and_non_mapping_skip_the_file() {
        let (parsed, warnings) = parse("advisors: [\n");
        assert!(parsed.is_none());
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with("/p/WATCHDOG.yml: not valid YAML (")
                && warnings[0].ends_with("); file skipped"),
            "{warnings:?}"
        );
        let (parsed, warnings) = parse("- name: a\n");
        assert!(parsed.is_none());
        assert_eq!(
            warnings,
            ["/p/WATCHDOG.yml: expected a mapping at the top, found a list; file skipped"]
        );
        let (parsed, warnings) = parse("");
        assert_eq!(parsed, Some(ParsedFile::default()));
        assert!(warnings.is_empty());
    }

    #[test]
    fn ro4_deep_nesting_is_refused_before_parsing() {
        let text = format!("advisors: {}{}", "[".repeat(100), "]".repeat(100));
        let (parsed, warnings) = parse(&text);
        assert!(parsed.is_none());
        assert_eq!(
            warnings,
            ["/p/WATCHDOG.yml: nested more than 64 levels deep (line 1); file skipped"]
        );
    }

    #[test]
    fn ro5_malformed_entry_is_skipped_naming_entry_and_field() {
        let (parsed, warnings) = parse(
            "advisors:\n  - name: Good\n  - name: Bad\n    enabled: sometimes\n  - model: x/y\n  - 7\n  - name: Also good\n",
        );
        let parsed = parsed.unwrap();
        let names: Vec<_> = parsed.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["Good", "Also good"]);
        assert_eq!(
            warnings,
            [
                "/p/WATCHDOG.yml: advisor \"Bad\": `enabled` must be true or false, not a string; entry skipped",
                "/p/WATCHDOG.yml: advisor #3: `name` is required; entry skipped",
                "/p/WATCHDOG.yml: advisor #4: an entry must be a mapping of fields, not a number; entry skipped",
            ]
        );
    }

    #[test]
    fn ro5_each_field_is_checked() {
        for (field, expected) in [
            ("model: 5", "`model` must be text, not a number"),
            (
                "tools: read",
                "`tools` must be a list of tool names, not a string",
            ),
            (
                "tools: [read, 3]",
                "`tools` must be a list of tool names; item 2 is a number",
            ),
            (
                "instructions: [a]",
                "`instructions` must be text, not a list",
            ),
            (
                "maxNotesPerUpdate: 0",
                "`maxNotesPerUpdate` must be a whole number from 1 to 32, not 0",
            ),
            (
                "maxNotesPerUpdate: 2.5",
                "`maxNotesPerUpdate` must be a whole number from 1 to 32, not 2.5",
            ),
            (
                "policy: loud",
                "`policy` must be one of defer, interrupt, reconfirm, not `loud`",
            ),
            (
                "maxSeverity: fatal",
                "`maxSeverity` must be one of nit, concern, blocker, not `fatal`",
            ),
            (
                "when: src",
                "`when` must be a mapping such as { paths: [\"migrations/**\"] }, not a string",
            ),
            (
                "when: {files: [a]}",
                "`when.files` is not a condition this advisor knows (only `paths`)",
            ),
            ("when: {paths: []}", "`when.paths` lists no glob"),
            (
                "when: {paths: [\"a[\"]}",
                "`when.paths` item 1 is not a valid glob",
            ),
        ] {
            let text = format!("advisors:\n  - name: A\n    {field}\n");
            let (parsed, warnings) = parse(&text);
            assert!(parsed.unwrap().entries.is_empty(), "{field}");
            assert_eq!(warnings.len(), 1, "{field}: {warnings:?}");
            assert!(warnings[0].contains(expected), "{field}: {}", warnings[0]);
            assert!(warnings[0].ends_with("; entry skipped"), "{}", warnings[0]);
        }
    }

    #[test]
    fn ro5_a_name_that_is_not_text_skips_the_entry_by_position() {
        let (parsed, warnings) = parse("advisors:\n  - name: [x]\n");
        assert!(parsed.unwrap().entries.is_empty());
        assert_eq!(
            warnings,
            ["/p/WATCHDOG.yml: advisor #1: `name` must be text, not a list; entry skipped"]
        );
    }

    #[test]
    fn ro6_top_level_keys_and_their_problems() {
        let (parsed, warnings) = parse(
            "instructions: |\n  Be brief.\nmaxNotesPerUpdate: 40\nadvisors:\ncolour: red\nadvisor: []\n",
        );
        let parsed = parsed.unwrap();
        assert_eq!(parsed.instructions.as_deref(), Some("Be brief.\n"));
        assert_eq!(parsed.max_notes_per_update, Some(32));
        assert_eq!(
            warnings,
            [
                "/p/WATCHDOG.yml: `maxNotesPerUpdate` 40 is above 32; 32 is used",
                "/p/WATCHDOG.yml: unknown key `colour` ignored",
                "/p/WATCHDOG.yml: unknown key `advisor` ignored (did you mean `advisors`?)",
            ]
        );
        let (parsed, warnings) = parse("instructions: 3\nadvisors: {name: a}\n");
        assert_eq!(parsed, Some(ParsedFile::default()));
        assert_eq!(
            warnings,
            [
                "/p/WATCHDOG.yml: `instructions` must be text, not a number; ignored",
                "/p/WATCHDOG.yml: `advisors` must be a list, not a mapping; ignored",
            ]
        );
    }

    #[test]
    fn ro8_to_ro17_fields_are_read() {
        let (parsed, warnings) = parse(
            "advisors:\n  - name: \" DB Migrations \"\n    enabled: false\n    model: \" openai/gpt-5:high \"\n    tools: [grep, glob]\n    instructions: Check locks.\n    maxNotesPerUpdate: 2\n    policy: Reconfirm\n    maxSeverity: concern\n    when:\n      paths: [\"migrations/**\", \"**/*.sql\"]\n",
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let entry = &parsed.unwrap().entries[0];
        assert_eq!(entry.name, "DB Migrations");
        assert_eq!(entry.slug, "db-migrations");
        assert_eq!(entry.enabled, Some(false));
        assert_eq!(entry.model.as_deref(), Some("openai/gpt-5:high"));
        assert_eq!(
            entry.tools,
            Some(vec![RosterTool::Search, RosterTool::Find])
        );
        assert_eq!(entry.instructions.as_deref(), Some("Check locks."));
        assert_eq!(entry.max_notes_per_update, Some(2));
        assert_eq!(entry.policy, Some(PolicyChoice::Reconfirm));
        assert_eq!(entry.max_severity, Some(Severity::Concern));
        let when = entry.when.as_ref().unwrap();
        assert_eq!(when.patterns(), ["migrations/**", "**/*.sql"]);
    }

    #[test]
    fn ro5_unknown_entry_key_warns_and_keeps_the_entry() {
        let (parsed, warnings) = parse("advisors:\n  - name: A\n    modle: x/y\n    blank:\n");
        assert_eq!(parsed.unwrap().entries.len(), 1);
        assert_eq!(
            warnings,
            [
                "/p/WATCHDOG.yml: advisor \"A\": unknown key `modle` ignored (did you mean `model`?)",
                "/p/WATCHDOG.yml: advisor \"A\": unknown key `blank` ignored",
            ]
        );
    }

    #[test]
    fn ro5_empty_values_count_as_not_set() {
        let (parsed, warnings) = parse(
            "advisors:\n  - name: A\n    model: \"  \"\n    enabled:\n    tools:\n    instructions: \"\"\n    when:\n",
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let entry = &parsed.unwrap().entries[0];
        assert_eq!(
            (entry.model.as_ref(), entry.enabled, entry.tools.as_ref()),
            (None, None, None)
        );
        assert!(entry.instructions.is_none() && entry.when.is_none());
    }

    #[test]
    fn ro5_an_out_of_range_number_skips_its_entry_not_the_file() {
        let (parsed, warnings) = parse(
            "advisors:\n  - name: Huge\n    maxNotesPerUpdate: 99999999999999999999999\n  - name: Healthy\n",
        );
        let names: Vec<_> = parsed
            .expect("the file is kept")
            .entries
            .iter()
            .map(|e| e.name.clone())
            .collect();
        assert_eq!(names, ["Healthy"]);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with("/p/WATCHDOG.yml: advisor \"Huge\": `maxNotesPerUpdate`")
                && warnings[0].ends_with("; entry skipped"),
            "{warnings:?}"
        );
    }

    #[test]
    fn sp6_ro5_a_max_spend_ratio_is_0_01_to_10_and_a_bad_one_skips_its_entry_naming_the_range() {
        let (parsed, warnings) = parse(
            "advisors:\n  - name: Thrifty\n    maxSpendRatio: 0.25\n  - name: Loose\n    maxSpendRatio: 10\n\
             \x20 - name: Huge\n    maxSpendRatio: 11\n  - name: Quoted\n    maxSpendRatio: '1'\n\
             \x20 - name: Tiny\n    maxSpendRatio: 0.001\n  - name: Plain\n    maxSpendRatio:\n",
        );
        let ratios: Vec<_> = parsed
            .expect("the file is kept")
            .entries
            .iter()
            .map(|e| (e.name.clone(), e.max_spend_ratio))
            .collect();
        assert_eq!(
            ratios,
            [
                ("Thrifty".to_string(), Some(0.25)),
                ("Loose".to_string(), Some(10.0)),
                ("Plain".to_string(), None),
            ]
        );
        assert_eq!(
            warnings,
            [
                "/p/WATCHDOG.yml: advisor \"Huge\": `maxSpendRatio` must be a number from 0.01 to \
                 10, not 11; entry skipped",
                "/p/WATCHDOG.yml: advisor \"Quoted\": `maxSpendRatio` must be a number from 0.01 \
                 to 10, not a string; entry skipped",
                "/p/WATCHDOG.yml: advisor \"Tiny\": `maxSpendRatio` must be a number from 0.01 to \
                 10, not 0.001; entry skipped",
            ]
        );
    }

    #[test]
    fn sp1_ro5_a_tool_budget_is_0_to_50_and_a_bad_one_skips_its_entry_naming_the_range() {
        let (parsed, warnings) = parse(
            "advisors:\n  - name: Frugal\n    toolBudget: 0\n  - name: Curious\n    toolBudget: 50\n\
             \x20 - name: Greedy\n    toolBudget: 51\n  - name: Vague\n    toolBudget: some\n\
             \x20 - name: Half\n    toolBudget: 1.5\n  - name: Plain\n    toolBudget:\n",
        );
        let budgets: Vec<_> = parsed
            .expect("the file is kept")
            .entries
            .iter()
            .map(|e| (e.name.clone(), e.tool_budget))
            .collect();
        assert_eq!(
            budgets,
            [
                ("Frugal".to_string(), Some(0)),
                ("Curious".to_string(), Some(50)),
                ("Plain".to_string(), None),
            ]
        );
        assert_eq!(
            warnings,
            [
                "/p/WATCHDOG.yml: advisor \"Greedy\": `toolBudget` must be a whole number from 0 \
                 to 50, not 51; entry skipped",
                "/p/WATCHDOG.yml: advisor \"Vague\": `toolBudget` must be a whole number from 0 \
                 to 50, not a string; entry skipped",
                "/p/WATCHDOG.yml: advisor \"Half\": `toolBudget` must be a whole number from 0 \
                 to 50, not 1.5; entry skipped",
            ]
        );
    }

    #[test]
    fn ro7_control_and_bidi_characters_are_removed_from_a_name_and_it_is_capped() {
        let (parsed, warnings) = parse(
            "advisors:\n  - name: \"Ctl\\e[31mRED\\e[0m\\a\\u202E\\nSecond line\"\n  - name: \"\\e\\u202E\\a\"\n",
        );
        let entries = parsed.unwrap().entries;
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].name, "Ctl[31mRED[0m Second line");
        assert_eq!(
            warnings,
            [
                "/p/WATCHDOG.yml: advisor \"Ctl[31mRED[0m Second line\": `name` held control or bidi characters; they were removed",
                "/p/WATCHDOG.yml: advisor #2: `name` has nothing printable; entry skipped",
            ]
        );
        let long = "N".repeat(10 * 1024);
        let (parsed, warnings) = parse(&format!("advisors:\n  - name: {long}\n"));
        let entries = parsed.unwrap().entries;
        assert_eq!(entries[0].name, "N".repeat(MAX_NAME_CHARS));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].ends_with(": `name` is longer than 64 characters; it was cut"),
            "{warnings:?}"
        );
    }

    /// RO7: the line and paragraph separators break a line like a newline, and the
    /// interlinear annotation marks hide text between them; all are removed like the other
    /// control characters (a run between two words leaves one space).
    #[test]
    fn ro7_line_separators_and_annotation_marks_are_removed_from_a_name() {
        let (parsed, warnings) = parse(
            "advisors:\n  - name: \"Line\\u2028Para\\u2029End\"\n  - name: \"\\uFFF9Shown\\uFFFAhidden\\uFFFB\"\n  - name: \"\\u2028\\u2029\\uFFF9\"\n",
        );
        let names: Vec<String> = parsed
            .unwrap()
            .entries
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["Line Para End", "Shownhidden"]);
        assert_eq!(
            warnings,
            [
                "/p/WATCHDOG.yml: advisor \"Line Para End\": `name` held control or bidi characters; they were removed",
                "/p/WATCHDOG.yml: advisor \"Shownhidden\": `name` held control or bidi characters; they were removed",
                "/p/WATCHDOG.yml: advisor #3: `name` has nothing printable; entry skipped",
            ]
        );
        assert_eq!(clean_name("a\u{2028}b\u{FFFA}").name, "a b");
    }

    #[test]
    fn ro24_when_globs_are_capped_per_advisor_and_per_file() {
        let entry = |name: &str, globs: usize| {
            let mut text = format!("  - name: {name}\n    when:\n      paths:\n");
            for i in 0..globs {
                text.push_str(&format!("        - \"src/{name}/m{i}/**\"\n"));
            }
            text
        };
        let mut text = String::from("advisors:\n");
        for (name, globs) in [("a", 1_000), ("b", 64), ("c", 64), ("d", 100), ("e", 1)] {
            text.push_str(&entry(name, globs));
        }
        let (parsed, warnings) = parse(&text);
        let kept: Vec<(String, usize)> = parsed
            .unwrap()
            .entries
            .iter()
            .map(|e| (e.name.clone(), e.when.as_ref().unwrap().patterns().len()))
            .collect();
        let kept: Vec<(&str, usize)> = kept.iter().map(|(n, k)| (n.as_str(), *k)).collect();
        assert_eq!(kept, [("a", 64), ("b", 64), ("c", 64), ("d", 64)]);
        assert_eq!(
            warnings,
            [
                "/p/WATCHDOG.yml: advisor \"a\": `when.paths` lists 1000 globs; the first 64 are used (at most 64 an advisor, 256 a file)",
                "/p/WATCHDOG.yml: advisor \"d\": `when.paths` lists 100 globs; the first 64 are used (at most 64 an advisor, 256 a file)",
                "/p/WATCHDOG.yml: advisor \"e\": `when.paths`: the file's 256 globs are used up by the entries before; entry skipped",
            ]
        );
    }
}
