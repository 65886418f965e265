//! The crate layout: no import runs from a lower layer to a higher one. The order is the crate
//! docs' `# Layout` list (bottom up), so the docs and the code cannot drift apart.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The module names of the `# Layout` list in `src/lib.rs`, bottom first.
fn layout_order(lib: &str) -> Vec<String> {
    let section = lib
        .split("//! # Layout")
        .nth(1)
        .expect("src/lib.rs has a # Layout section");
    section
        .lines()
        .skip(1)
        .take_while(|line| line.starts_with("//!"))
        .filter_map(|line| line.strip_prefix("//! - "))
        .filter_map(|item| {
            let name = item.trim_start_matches('[').strip_prefix('`')?;
            Some(name.split('`').next()?.to_string())
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `crate::name` references in the non-test code of `text`, with their line numbers.
fn crate_references(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        if line.trim_start().starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
                .collect();
            if !name.is_empty() {
                found.push((index + 1, name));
            }
            rest = after;
        }
    }
    found
}

fn upward_imports(root: &Path) -> (Vec<String>, Vec<String>) {
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).expect("src/lib.rs");
    let order = layout_order(&lib);
    let rank: HashMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut upward = Vec::new();
    let mut unlisted = Vec::new();
    for file in files {
        let relative = file.strip_prefix(root.join("src")).expect("under src");
        let first = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or_default()
            .trim_end_matches(".rs")
            .to_string();
        // The binary (main.rs, cli/) and the crate root sit above every module.
        if matches!(first.as_str(), "lib" | "main" | "cli") {
            continue;
        }
        // In-file unit tests live in `tests.rs` / `tests/` beside the code they test.
        if relative.components().any(|c| {
            let c = c.as_os_str().to_string_lossy();
            c == "tests.rs" || c == "tests"
        }) {
            continue;
        }
        let Some(&own) = rank.get(first.as_str()) else {
            unlisted.push(first);
            continue;
        };
        let text = std::fs::read_to_string(&file).expect("a source file");
        for (line, target) in crate_references(&text) {
            match rank.get(target.as_str()) {
                Some(&theirs) if theirs > own => upward.push(format!(
                    "{}:{line}: {first} imports {target}, which the layout puts above it",
                    relative.display()
                )),
                Some(_) => {}
                None => unlisted.push(target),
            }
        }
    }
    unlisted.sort();
    unlisted.dedup();
    (upward, unlisted)
}

#[test]
fn layout_no_module_imports_from_a_layer_above_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).expect("src/lib.rs");
    let order = layout_order(&lib);
    assert!(order.len() >= 20, "the layout lists the modules: {order:?}");
    for module in &order {
        assert!(
            lib.contains(&format!("mod {module};")),
            "the layout names `{module}`, which src/lib.rs does not declare"
        );
    }
    let (upward, unlisted) = upward_imports(root);
    assert!(
        unlisted.is_empty(),
        "modules missing from the # Layout list: {unlisted:?}"
    );
    assert!(upward.is_empty(), "upward imports:\n{}", upward.join("\n"));
}

#[test]
fn the_layering_check_sees_an_upward_import() {
    let text = "use crate::domain::x;\nfn f() { crate::serve::run(); }\n#[cfg(test)]\nuse crate::actors::y;\n";
    assert_eq!(
        crate_references(text),
        vec![(1, "domain".to_string()), (2, "serve".to_string())]
    );
    let lib =
        "//! # Layout\n//!\n//! - `texts` *(internal)*: a\n//! - [`domain`]: b\n//!   more\n\n";
    assert_eq!(layout_order(lib), vec!["texts", "domain"]);
}
