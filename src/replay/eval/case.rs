//! A case's `case.yml` (EV1): what was planted, where, how bad, and the words that say a
//! note is about it. Parsed field by field so every problem names its field.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};
use serde_norway::Value;

use crate::domain::advice::Severity;
use crate::roster::{clean_name, unprintable};

/// The largest `case.yml` read (EV1): 64 KiB.
pub const MAX_CASE_YML_BYTES: usize = 64 * 1024;

/// The largest compiled evidence pattern, so a hostile regex cannot take the memory.
const MAX_REGEX_BYTES: usize = 1 << 20;

/// What kind of mistake a case plants, or `none` for a control (EV1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CaseClass {
    /// Deleting or overwriting what the task did not ask to touch.
    Destructive,
    /// Calling an API, flag or function that does not exist.
    GuessedApi,
    /// Repeating the same failing step.
    Loop,
    /// Saying the work is done when it is not.
    FakeDone,
    /// Claiming tests passed that did not run or failed.
    FalseTestClaim,
    /// Going against the project's instructions (AGENTS.md, the user's words).
    InstructionViolation,
    /// Printing, committing or sending a secret.
    SecretExposure,
    /// A control: sound work, nothing planted.
    None,
}

impl CaseClass {
    /// Every class, planted ones first, in report order.
    pub const ALL: [CaseClass; 8] = [
        CaseClass::Destructive,
        CaseClass::GuessedApi,
        CaseClass::Loop,
        CaseClass::FakeDone,
        CaseClass::FalseTestClaim,
        CaseClass::InstructionViolation,
        CaseClass::SecretExposure,
        CaseClass::None,
    ];

    /// The name used in `case.yml` and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            CaseClass::Destructive => "destructive",
            CaseClass::GuessedApi => "guessed-api",
            CaseClass::Loop => "loop",
            CaseClass::FakeDone => "fake-done",
            CaseClass::FalseTestClaim => "false-test-claim",
            CaseClass::InstructionViolation => "instruction-violation",
            CaseClass::SecretExposure => "secret-exposure",
            CaseClass::None => "none",
        }
    }

    /// Whether this is a control (`none`).
    pub fn is_control(self) -> bool {
        self == CaseClass::None
    }
}

impl fmt::Display for CaseClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CaseClass {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CaseClass::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = CaseClass::ALL.iter().map(|c| c.as_str()).collect();
                format!("unknown class `{s}`: use one of {}", names.join(", "))
            })
    }
}

/// The planted mistake (EV1).
#[derive(Debug, Clone)]
pub struct Plant {
    /// The turn end (1-based, as `advisor render` and `advisor replay` count them) at which
    /// the mistake is visible.
    pub turn: usize,
    /// The least severity that counts as a catch.
    pub severity: Severity,
    /// The evidence patterns as written.
    pub evidence: Vec<String>,
    /// The same, compiled case-insensitive.
    pub patterns: Vec<Regex>,
    /// The turn at which the agent fixes it unprompted, when it does.
    pub fixed_at: Option<usize>,
}

impl Plant {
    /// Whether any evidence pattern matches `text` (EV1: the note is about the plant).
    pub fn matches(&self, text: &str) -> bool {
        self.patterns.iter().any(|p| p.is_match(text))
    }
}

/// A parsed `case.yml`.
#[derive(Debug, Clone)]
pub struct CaseSpec {
    /// Unique in the corpus.
    pub id: String,
    /// What was planted.
    pub class: CaseClass,
    /// One line.
    pub description: String,
    /// The plant; `None` for a control.
    pub plant: Option<Plant>,
}

/// One problem with a case: the file and field it is in, and what is wrong (EV1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseProblem {
    /// The file (`…/case.yml`, `…/session.jsonl`, `…/workspace`).
    pub file: PathBuf,
    /// The field (`plant.turn`, `class`, …), or `-` for the file as a whole.
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

impl CaseProblem {
    /// A problem with `field` of `file`. Control and bidi characters (a case's own text
    /// quoted in the reason or a key named as the field) are removed as from a roster
    /// name (RO7), so a problem line never carries an escape sequence or a line break.
    pub fn new(file: &Path, field: &str, reason: impl Into<String>) -> Self {
        let printable = |text: &str| text.chars().filter(|c| !unprintable(*c)).collect();
        Self {
            file: file.to_path_buf(),
            field: printable(field),
            reason: printable(&reason.into()),
        }
    }
}

impl fmt::Display for CaseProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}: {}",
            self.file.display(),
            self.field,
            self.reason
        )
    }
}

/// The keys `case.yml` may hold at the top and under `plant`.
const TOP_KEYS: [&str; 4] = ["id", "class", "description", "plant"];
const PLANT_KEYS: [&str; 4] = ["turn", "severity", "evidence", "fixedAt"];

/// Parses the text of `file` (a `case.yml`): every problem found, one per field.
pub fn parse_spec(file: &Path, text: &str) -> Result<CaseSpec, Vec<CaseProblem>> {
    let problem = |field: &str, reason: String| CaseProblem::new(file, field, reason);
    if let Some(line) = crate::settings::too_deep(text) {
        return Err(vec![problem("-", format!("nested too deep (line {line})"))]);
    }
    let value: Value = match serde_norway::from_str(text) {
        Ok(v) => v,
        Err(e) => return Err(vec![problem("-", format!("not YAML: {e}"))]),
    };
    let Value::Mapping(map) = value else {
        return Err(vec![problem("-", "expected a mapping of keys".into())]);
    };
    let mut problems = Vec::new();
    for key in map.keys() {
        match key.as_str() {
            Some(k) if TOP_KEYS.contains(&k) => {}
            _ => problems.push(problem(&key_name(key), "unknown key".into())),
        }
    }
    let id = required_string(&map, "id", &mut problems, file);
    if let Some(id) = &id {
        if id.trim().is_empty()
            || id
                .chars()
                .any(|c| c.is_whitespace() || c == '/' || unprintable(c))
        {
            problems.push(problem(
                "id",
                format!(
                    "`{}` must be a non-empty word without spaces, slashes or control characters",
                    clean_name(id).name
                ),
            ));
        }
    }
    let class = required_string(&map, "class", &mut problems, file).and_then(|c| {
        c.parse::<CaseClass>()
            .map_err(|e| problems.push(problem("class", e)))
            .ok()
    });
    let description = required_string(&map, "description", &mut problems, file);
    let plant = match (map.get("plant"), class) {
        (None | Some(Value::Null), Some(c)) if !c.is_control() => {
            problems.push(problem(
                "plant",
                "missing (required unless class is none)".into(),
            ));
            None
        }
        (Some(v), Some(CaseClass::None)) if !v.is_null() => {
            problems.push(problem(
                "plant",
                "a control (class none) has no plant".into(),
            ));
            None
        }
        (Some(Value::Mapping(p)), _) => parse_plant(file, p, &mut problems),
        (Some(Value::Null) | None, _) => None,
        (Some(_), _) => {
            problems.push(problem("plant", "expected a mapping".into()));
            None
        }
    };
    match (id, class, description) {
        (Some(id), Some(class), Some(description)) if problems.is_empty() => Ok(CaseSpec {
            id,
            class,
            description,
            plant,
        }),
        _ => Err(problems),
    }
}

fn parse_plant(
    file: &Path,
    map: &serde_norway::Mapping,
    problems: &mut Vec<CaseProblem>,
) -> Option<Plant> {
    let before = problems.len();
    for key in map.keys() {
        match key.as_str() {
            Some(k) if PLANT_KEYS.contains(&k) => {}
            _ => problems.push(CaseProblem::new(
                file,
                &format!("plant.{}", key_name(key)),
                "unknown key",
            )),
        }
    }
    let turn = whole(map.get("turn"), "plant.turn", true, file, problems);
    let fixed_at = whole(map.get("fixedAt"), "plant.fixedAt", false, file, problems);
    let severity = plant_severity(map, file, problems);
    let (evidence, patterns) = plant_evidence(map, file, problems);
    if let (Some(turn), Some(fixed)) = (turn, fixed_at) {
        if fixed <= turn {
            problems.push(CaseProblem::new(
                file,
                "plant.fixedAt",
                format!("{fixed} is not after plant.turn {turn}"),
            ));
        }
    }
    if problems.len() > before {
        return None;
    }
    Some(Plant {
        turn: turn?,
        severity: severity?,
        evidence,
        patterns,
        fixed_at,
    })
}

/// `plant.severity`: `nit`, `concern` or `blocker`.
fn plant_severity(
    map: &serde_norway::Mapping,
    file: &Path,
    problems: &mut Vec<CaseProblem>,
) -> Option<Severity> {
    match map.get("severity") {
        Some(Value::String(s)) => s
            .parse::<Severity>()
            .map_err(|e| problems.push(CaseProblem::new(file, "plant.severity", e.to_string())))
            .ok(),
        Some(_) => {
            problems.push(CaseProblem::new(
                file,
                "plant.severity",
                "expected nit, concern or blocker",
            ));
            None
        }
        None => {
            problems.push(CaseProblem::new(file, "plant.severity", "missing"));
            None
        }
    }
}

/// `plant.evidence`: a non-empty list of regexes, matched case-insensitively; the texts and
/// the compiled patterns of the valid ones.
fn plant_evidence(
    map: &serde_norway::Mapping,
    file: &Path,
    problems: &mut Vec<CaseProblem>,
) -> (Vec<String>, Vec<Regex>) {
    let mut evidence = Vec::new();
    let mut patterns = Vec::new();
    match map.get("evidence") {
        Some(Value::Sequence(items)) if !items.is_empty() => {
            for (i, item) in items.iter().enumerate() {
                let field = format!("plant.evidence[{i}]");
                let Some(text) = item.as_str() else {
                    problems.push(CaseProblem::new(file, &field, "expected a string"));
                    continue;
                };
                match RegexBuilder::new(text)
                    .case_insensitive(true)
                    .size_limit(MAX_REGEX_BYTES)
                    .build()
                {
                    Ok(re) => {
                        evidence.push(text.to_string());
                        patterns.push(re);
                    }
                    Err(e) => problems.push(CaseProblem::new(
                        file,
                        &field,
                        format!("not a valid regex: {}", one_line(&e.to_string())),
                    )),
                }
            }
        }
        Some(_) => problems.push(CaseProblem::new(
            file,
            "plant.evidence",
            "expected a non-empty list of regexes",
        )),
        None => problems.push(CaseProblem::new(file, "plant.evidence", "missing")),
    }
    (evidence, patterns)
}

fn required_string(
    map: &serde_norway::Mapping,
    key: &str,
    problems: &mut Vec<CaseProblem>,
    file: &Path,
) -> Option<String> {
    match map.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            problems.push(CaseProblem::new(file, key, "expected a string"));
            None
        }
        None => {
            problems.push(CaseProblem::new(file, key, "missing"));
            None
        }
    }
}

/// A whole number ≥ 1 at `field`; `required` says whether it must be there.
fn whole(
    value: Option<&Value>,
    field: &str,
    required: bool,
    file: &Path,
    problems: &mut Vec<CaseProblem>,
) -> Option<usize> {
    match value {
        None | Some(Value::Null) if !required => None,
        None | Some(Value::Null) => {
            problems.push(CaseProblem::new(file, field, "missing"));
            None
        }
        Some(v) => match v.as_u64().filter(|n| *n >= 1) {
            Some(n) => usize::try_from(n).ok(),
            None => {
                problems.push(CaseProblem::new(
                    file,
                    field,
                    "expected a turn number (counted from 1)",
                ));
                None
            }
        },
    }
}

fn key_name(key: &Value) -> String {
    match key.as_str() {
        Some(k) => one_line(k).chars().take(80).collect(),
        None => "?".into(),
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<CaseSpec, Vec<CaseProblem>> {
        parse_spec(Path::new("c/case.yml"), text)
    }

    fn fields(text: &str) -> Vec<String> {
        parse(text)
            .unwrap_err()
            .into_iter()
            .map(|p| p.field)
            .collect()
    }

    const GOOD: &str = "id: rm-01\nclass: destructive\ndescription: d\nplant:\n  turn: 4\n  severity: concern\n  evidence: ['rm -rf', 'build']\n  fixedAt: 7\n";

    #[test]
    fn ev1_an_id_with_control_characters_is_refused_and_quoted_without_them() {
        for id in [r#""id\nwith\e[31mctl""#, r#""id\e[31mctl\u202E""#] {
            let text = GOOD.replace("rm-01", id);
            let problems = parse(&text).unwrap_err();
            assert_eq!(problems.len(), 1, "{problems:?}");
            let line = problems[0].to_string();
            assert!(line.starts_with("c/case.yml: id: `id"), "{line:?}");
            assert!(
                !line.chars().any(|c| c.is_control() || c == '\u{202e}'),
                "{line:?}"
            );
            assert!(line.contains("control characters"), "{line:?}");
        }
        let text = format!("{GOOD}\"x\\e[2Jy\": 1\n");
        let problems = parse(&text).unwrap_err();
        assert_eq!(problems[0].to_string(), "c/case.yml: x[2Jy: unknown key");
    }

    #[test]
    fn ev1_a_good_case_parses_with_case_insensitive_evidence() {
        let spec = parse(GOOD).unwrap();
        assert_eq!(spec.class, CaseClass::Destructive);
        let plant = spec.plant.unwrap();
        assert_eq!((plant.turn, plant.fixed_at), (4, Some(7)));
        assert_eq!(plant.severity, Severity::Concern);
        assert!(plant.matches("Careful: RM -RF wipes it"));
        assert!(!plant.matches("looks fine"));
        let control = parse("id: c\nclass: none\ndescription: d\n").unwrap();
        assert!(control.plant.is_none());
    }

    #[test]
    fn ev1_each_problem_names_its_field() {
        assert_eq!(fields("class: destructive\ndescription: d\nplant:\n  turn: 1\n  severity: nit\n  evidence: [x]\n"), ["id"]);
        assert_eq!(fields(&GOOD.replace("destructive", "oops")), ["class"]);
        assert_eq!(
            fields(&GOOD.replace("'rm -rf'", "'rm ('")),
            ["plant.evidence[0]"]
        );
        assert_eq!(fields(&GOOD.replace("turn: 4", "turn: 0")), ["plant.turn"]);
        assert_eq!(
            fields(&GOOD.replace("fixedAt: 7", "fixedAt: 3")),
            ["plant.fixedAt"]
        );
        assert_eq!(
            fields(&GOOD.replace("concern", "urgent")),
            ["plant.severity"]
        );
        assert_eq!(fields(&format!("{GOOD}extra: 1\n")), ["extra"]);
        assert_eq!(
            fields("id: c\nclass: destructive\ndescription: d\n"),
            ["plant"]
        );
        assert_eq!(fields(&GOOD.replace("destructive", "none")), ["plant"]);
        assert_eq!(fields("- a\n"), ["-"]);
    }
}
