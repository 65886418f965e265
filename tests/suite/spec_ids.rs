//! The repository carries its own specification: every rule id the code cites (a comment,
//! a doc, a message) and every rule id a test is named after resolves to a rule that
//! `docs/SPEC.md` defines, so a reader can always look a citation up.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use regex::Regex;

/// A rule id of one of the SPEC's families (`RO` and `GT` before the one-letter families).
fn id_pattern() -> Regex {
    Regex::new(r"\b(?:RO|GT|[AXGFRDSWTMKCLVPH])\d{1,2}\b").expect("a valid pattern")
}

/// The ids `docs/SPEC.md` defines: a line starting with `ID.`, or a heading naming one.
fn defined_ids(spec: &str) -> BTreeSet<String> {
    let pattern = id_pattern();
    let mut ids = BTreeSet::new();
    for line in spec.lines() {
        if line.starts_with('#') {
            ids.extend(pattern.find_iter(line).map(|m| m.as_str().to_string()));
        } else if let Some(found) = pattern.find(line) {
            if found.start() == 0 && line[found.end()..].starts_with('.') {
                ids.insert(found.as_str().to_string());
            }
        }
    }
    ids
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the directory is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every rule id cited anywhere in the text of `src/`, with one place it was seen.
fn ids_cited_in_src(root: &Path) -> Vec<(String, String)> {
    let pattern = id_pattern();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut cited = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a source file is readable");
        for (index, line) in text.lines().enumerate() {
            for found in pattern.find_iter(line) {
                // §16's scenarios (CA-S1 … CA-S12) are named, not rule ids of their own.
                if line[..found.start()].ends_with("CA-") {
                    continue;
                }
                let place = format!("{}:{}", file.display(), index + 1);
                cited.push((found.as_str().to_string(), place));
            }
        }
    }
    cited
}

/// The rule ids a test is named after: the leading `x5_c3_` segments of a test's name.
fn ids_naming_tests(root: &Path) -> Vec<(String, String)> {
    let test_fn =
        Regex::new(r"fn ((?:(?:ro|gt|[axgfrdswtmkclvph])\d{1,2}_)+)").expect("a valid pattern");
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("tests"), &mut files);
    let mut cited = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a source file is readable");
        for (index, line) in text.lines().enumerate() {
            for found in test_fn.captures_iter(line) {
                for id in found[1].split('_').filter(|s| !s.is_empty()) {
                    let place = format!("{}:{}", file.display(), index + 1);
                    cited.push((id.to_uppercase(), place));
                }
            }
        }
    }
    cited
}

#[test]
fn every_rule_id_cited_in_code_and_test_names_is_defined_in_docs_spec() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let spec = std::fs::read_to_string(root.join("docs/SPEC.md")).expect("docs/SPEC.md exists");
    let defined = defined_ids(&spec);
    assert!(
        ["A1", "D10", "RO24", "P11", "X5"]
            .iter()
            .all(|id| defined.contains(*id)),
        "the SPEC's rule lines are recognised: {defined:?}"
    );

    let cited: Vec<_> = ids_cited_in_src(root)
        .into_iter()
        .chain(ids_naming_tests(root))
        .collect();
    assert!(cited.len() > 500, "ids are collected: {}", cited.len());
    let stray: Vec<_> = cited
        .iter()
        .filter(|(id, _)| !defined.contains(id))
        .map(|(id, place)| format!("{id} at {place}"))
        .collect();
    assert!(
        stray.is_empty(),
        "rule ids that docs/SPEC.md does not define:\n{}",
        stray.join("\n")
    );
}

#[test]
fn a_rule_id_the_spec_does_not_define_is_found() {
    let defined = defined_ids("## 1. Part\n\nA1. A rule.\n  A2. indented, not a rule\n");
    assert_eq!(defined, BTreeSet::from(["A1".to_string()]));
}
