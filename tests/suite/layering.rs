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

/// The names the crate root re-exports (`pub use module::…::Name;`, braces and `as`
/// included), each with the module it comes from, so `use crate::Name` counts as an import
/// of that module.
fn root_reexports(lib: &str) -> HashMap<String, String> {
    let mut names = HashMap::new();
    let mut rest = lib;
    while let Some(at) = rest.find("\npub use ") {
        let statement = &rest[at + "\npub use ".len()..];
        let end = statement.find(';').unwrap_or(statement.len());
        let (body, after) = (&statement[..end], &statement[end..]);
        rest = after;
        let module = body
            .split("::")
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        let tail = match (body.find('{'), body.rfind('}')) {
            (Some(open), Some(close)) => &body[open + 1..close],
            _ => body.rsplit("::").next().unwrap_or_default(),
        };
        for item in tail.split(',') {
            // `a::B` inside braces, or `b as c`: the name the root gives it is the last word.
            let item = item.trim();
            let named = item
                .rsplit(" as ")
                .next()
                .unwrap_or(item)
                .rsplit("::")
                .next()
                .unwrap_or(item)
                .trim();
            if !named.is_empty() {
                names.insert(named.to_string(), module.clone());
            }
        }
    }
    names
}

/// The first name after each `crate::` in the non-test code of `text`, with its line number
/// (`crate::{A, b::C}` gives `A` and `b`).
fn crate_names(text: &str) -> Vec<(usize, String)> {
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
            // `crate::{A, b::C}` names several at once (on one line).
            let group = match after.strip_prefix('{') {
                Some(inner) => inner.split('}').next().unwrap_or_default(),
                None => after,
            };
            for item in group.split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    found.push((index + 1, name));
                }
                if !after.starts_with('{') {
                    break;
                }
            }
            rest = after;
        }
    }
    found
}

/// The root modules named by `crate::…` references in the non-test code of `text`, with
/// their line numbers: `crate::module::…` names the module, `crate::Name` the module the
/// root re-exports `Name` from (`reexports`); a name the root does not know is kept as it
/// is, so it shows up as unlisted.
fn crate_references(text: &str, reexports: &HashMap<String, String>) -> Vec<(usize, String)> {
    crate_names(text)
        .into_iter()
        .map(|(line, name)| (line, reexports.get(&name).cloned().unwrap_or(name)))
        .collect()
}

/// The names the non-test code of `text` imports through a root re-export (`crate::Name`),
/// with their line numbers. The crate root sits above every module, so such an import runs
/// upward whatever module defines the name: a module imports from the defining module.
fn root_reexport_references(
    text: &str,
    reexports: &HashMap<String, String>,
) -> Vec<(usize, String)> {
    crate_names(text)
        .into_iter()
        .filter(|(_, name)| reexports.contains_key(name))
        .collect()
}

fn upward_imports(root: &Path) -> (Vec<String>, Vec<String>) {
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).expect("src/lib.rs");
    let order = layout_order(&lib);
    let reexports = root_reexports(&lib);
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
        // The crate root sits above every module (the `advisor` command is another crate).
        if first == "lib" {
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
        for (line, name) in root_reexport_references(&text, &reexports) {
            upward.push(format!(
                "{}:{line}: {first} imports {name} through the crate root, which the layout puts \
                 above every module; import it from `{}`",
                relative.display(),
                reexports[&name]
            ));
        }
        for (line, target) in crate_references(&text, &reexports) {
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

/// A file's module path (`session::reader`; `mod.rs` is its directory's module), or
/// `None` for the crate root and in-file unit tests.
fn module_path(relative: &Path) -> Option<Vec<String>> {
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    if parts.last().is_some_and(|last| last == "mod") {
        parts.pop();
    }
    let first = parts.first()?.as_str();
    if first == "lib" || parts.iter().any(|p| p == "tests") {
        return None;
    }
    Some(parts)
}

/// The leading `a::b::c` of `text`.
fn path_chain(text: &str) -> Vec<String> {
    let mut chain = Vec::new();
    let mut rest = text.trim_start();
    loop {
        let ident: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if ident.is_empty() {
            break;
        }
        rest = &rest[ident.len()..];
        chain.push(ident);
        match rest.strip_prefix("::") {
            Some(after) => rest = after,
            None => break,
        }
    }
    chain
}

/// The paths the non-test code of `text` names through `crate::`, `super::` or `self::`,
/// made absolute for the module `me` (`use super::{a, b}` names both).
fn module_references(text: &str, me: &[String]) -> Vec<Vec<String>> {
    let code: String = text
        .lines()
        .take_while(|line| !line.starts_with("#[cfg(test)]"))
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = Vec::new();
    for (anchor, base) in [
        ("crate::", Vec::new()),
        ("super::", me[..me.len().saturating_sub(1)].to_vec()),
        ("self::", me.to_vec()),
    ] {
        let mut rest = code.as_str();
        while let Some(at) = rest.find(anchor) {
            let preceded = rest[..at]
                .chars()
                .last()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
            let after = &rest[at + anchor.len()..];
            rest = after;
            if preceded {
                continue;
            }
            let items: Vec<&str> = match after.strip_prefix('{') {
                Some(group) => group
                    .split('}')
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .collect(),
                None => vec![after],
            };
            for item in items {
                let mut path = base.clone();
                path.extend(path_chain(item.trim_start_matches('{')));
                found.push(path);
            }
        }
    }
    found
}

/// Circles among the crate's files: `a` names something of `b` and `b` of `a`, through
/// any number of files in between. A module and its own submodules are left out (a parent
/// declares and re-exports its children, which use what it defines).
fn module_circles(root: &Path) -> Vec<Vec<String>> {
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut texts = HashMap::new();
    for file in files {
        let relative = file.strip_prefix(root.join("src")).expect("under src");
        if let Some(path) = module_path(relative) {
            let text = std::fs::read_to_string(&file).expect("a source file");
            texts.insert(path.join("::"), (path, text));
        }
    }
    let nested =
        |a: &str, b: &str| a.starts_with(&format!("{b}::")) || b.starts_with(&format!("{a}::"));
    let mut edges: HashMap<String, Vec<String>> = HashMap::new();
    for (name, (path, text)) in &texts {
        let mut targets: Vec<String> = module_references(text, path)
            .into_iter()
            .filter_map(|reference| {
                (1..=reference.len())
                    .rev()
                    .map(|n| reference[..n].join("::"))
                    .find(|candidate| texts.contains_key(candidate))
            })
            .filter(|target| target != name && !nested(name, target))
            .collect();
        targets.sort();
        targets.dedup();
        edges.insert(name.clone(), targets);
    }
    // Depth-first search; a node met again while still on the stack closes a circle.
    fn visit(
        node: &str,
        edges: &HashMap<String, Vec<String>>,
        stack: &mut Vec<String>,
        done: &mut std::collections::HashSet<String>,
        circles: &mut Vec<Vec<String>>,
    ) {
        if let Some(at) = stack.iter().position(|n| n == node) {
            circles.push(stack[at..].to_vec());
            return;
        }
        if !done.insert(node.to_string()) {
            return;
        }
        stack.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            visit(next, edges, stack, done, circles);
        }
        stack.pop();
    }
    let mut names: Vec<&String> = edges.keys().collect();
    names.sort();
    let (mut circles, mut done) = (Vec::new(), std::collections::HashSet::new());
    for name in names {
        visit(name, &edges, &mut Vec::new(), &mut done, &mut circles);
    }
    circles
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
    let lib =
        "//! # Layout\n//!\n//! - `texts` *(internal)*: a\n//! - [`domain`]: b\n//!   more\n\n\
               pub use config::RuntimeConfig;\npub use handle::{AdvisorHandle, HandleError};\n\
               pub use roster::load as load_roster;\n";
    let reexports = root_reexports(lib);
    let text = "use crate::domain::x;\nfn f() { crate::serve::run(); }\nuse crate::RuntimeConfig;\n\
                use crate::{HandleError};\nlet _ = crate::load_roster;\n#[cfg(test)]\nuse crate::actors::y;\n";
    assert_eq!(
        crate_references(text, &reexports),
        vec![
            (1, "domain".to_string()),
            (2, "serve".to_string()),
            (3, "config".to_string()),
            (4, "handle".to_string()),
            (5, "roster".to_string()),
        ]
    );
    assert_eq!(layout_order(lib), vec!["texts", "domain"]);
    assert_eq!(
        root_reexport_references(text, &reexports),
        vec![
            (3, "RuntimeConfig".to_string()),
            (4, "HandleError".to_string()),
            (5, "load_roster".to_string()),
        ],
        "a module path is no root re-export; a name the root re-exports is"
    );
}

#[test]
fn no_two_files_import_each_other_through_any_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let circles = module_circles(root);
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles
            .iter()
            .map(|c| c.join(" → "))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_circle_check_reads_super_self_and_groups() {
    let me = vec!["session".to_string(), "reader".to_string()];
    let text = "use super::input::{open, Line};\nuse super::{diagnostics::Diagnostics, tree};\n\
                use crate::domain::transcript::X;\nlet _ = self::inner::f;\n#[cfg(test)]\nuse super::driver;\n";
    let found: Vec<String> = module_references(text, &me)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        found,
        vec![
            "domain::transcript::X",
            "session::input",
            "session::diagnostics::Diagnostics",
            "session::tree",
            "session::reader::inner::f",
        ]
    );
}

/// The names in the `[dependencies]` table of a Cargo manifest (`name = …` or
/// `name.workspace = true`), up to the next table.
fn manifest_dependencies(manifest: &str) -> Vec<String> {
    manifest
        .lines()
        .skip_while(|line| line.trim() != "[dependencies]")
        .skip(1)
        .take_while(|line| !line.starts_with('['))
        .filter(|line| !line.trim_start().starts_with('#'))
        .filter_map(|line| {
            let key = line.split('=').next()?.trim();
            let name = key.split('.').next()?.trim();
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect()
}

/// Every package `roots` reach through the dependencies `Cargo.lock` records, by name. The
/// lock file does not tell normal from development dependencies, so the walk starts from the
/// library's normal ones; a package with several versions counts once (with all their
/// dependencies), so the set can only be larger than `cargo tree -e normal` shows.
fn locked_closure(lock: &str, roots: &[String]) -> std::collections::BTreeSet<String> {
    let mut edges: HashMap<String, Vec<String>> = HashMap::new();
    for package in lock.split("[[package]]").skip(1) {
        let Some(name) = package
            .lines()
            .find_map(|line| line.strip_prefix("name = "))
            .map(|n| n.trim_matches('"').to_string())
        else {
            continue;
        };
        let deps = package
            .split("dependencies = [")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .unwrap_or_default()
            .split(',')
            .filter_map(|entry| entry.trim().trim_matches('"').split(' ').next())
            .filter(|dep| !dep.is_empty())
            .map(str::to_string);
        edges.entry(name).or_default().extend(deps);
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut todo: Vec<String> = roots.to_vec();
    while let Some(name) = todo.pop() {
        if seen.insert(name.clone()) {
            todo.extend(edges.get(&name).into_iter().flatten().cloned());
        }
    }
    seen
}

/// The crates only the `advisor` command needs: argument parsing, progress bars, the
/// tracing subscriber that prints.
const COMMAND_ONLY_CRATES: [&str; 3] = ["clap", "indicatif", "tracing-subscriber"];

#[test]
fn the_library_builds_without_the_command_line_crates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let cli = std::fs::read_to_string(root.join("cli/Cargo.toml")).expect("cli/Cargo.toml");
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).expect("Cargo.lock");
    assert!(
        manifest.contains("members = [\".\", \"cli\"]"),
        "the workspace is the library and the command"
    );
    let library = manifest_dependencies(&manifest);
    assert!(library.contains(&"actix".to_string()), "{library:?}");
    let command = manifest_dependencies(&cli);
    let reached = locked_closure(&lock, &library);
    for name in COMMAND_ONLY_CRATES {
        assert!(
            command.contains(&name.to_string()),
            "the command depends on {name}: {command:?}"
        );
        assert!(
            !reached.contains(name),
            "the library reaches {name} through its dependencies; it belongs to cli/ only"
        );
    }
    // The walk sees what it should: the command's own closure has them.
    let through_command = locked_closure(&lock, &command);
    assert!(COMMAND_ONLY_CRATES
        .iter()
        .all(|name| through_command.contains(*name)));
}

#[test]
fn the_dependency_walk_reads_manifests_and_the_lock_file() {
    let manifest = "[package]\nname = \"x\"\n\n[dependencies]\nactix.workspace = true\n\
                    # a comment\nserde = { version = \"1\" }\n\n[dev-dependencies]\nclap = \"4\"\n";
    assert_eq!(manifest_dependencies(manifest), vec!["actix", "serde"]);
    let lock =
        "[[package]]\nname = \"actix\"\nversion = \"0.13.5\"\ndependencies = [\n \"tokio\",\n \
                \"bitflags 2.0.0\",\n]\n\n[[package]]\nname = \"tokio\"\nversion = \"1\"\n\n\
                [[package]]\nname = \"criterion\"\ndependencies = [\n \"clap\",\n]\n";
    let reached = locked_closure(lock, &["actix".to_string()]);
    assert_eq!(
        reached.into_iter().collect::<Vec<_>>(),
        vec!["actix", "bitflags", "tokio"]
    );
}
/// The non-test part of a source file: the lines before its `#[cfg(test)]` module.
fn non_test(text: &str) -> Vec<&str> {
    text.lines()
        .take_while(|line| !line.starts_with("#[cfg(test)]"))
        .collect()
}

/// Code lines: not blank, not a comment.
fn code_lines(lines: &[&str]) -> usize {
    lines
        .iter()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
        .count()
}

/// The fields of `pub struct NAME { … }` in `text`.
fn struct_fields(text: &str, name: &str) -> usize {
    let open = format!("pub struct {name} {{");
    let body = text.split(&open).nth(1).unwrap_or_default();
    let body = body.split("\n}").next().unwrap_or_default();
    body.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.starts_with("#[") && l.ends_with(','))
        .count()
}

/// Each function of the non-test `lines` with its length, signature to closing brace.
fn function_lengths(lines: &[&str]) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let signature = [
            "fn ",
            "pub fn ",
            "pub(crate) fn ",
            "pub(super) fn ",
            "const fn ",
        ]
        .iter()
        .any(|p| trimmed.starts_with(p));
        if !signature || trimmed.ends_with(';') {
            continue;
        }
        let close = format!("{}}}", " ".repeat(indent));
        if let Some(end) = lines[at..].iter().position(|l| *l == close) {
            let after = trimmed.split_once("fn ").map_or(trimmed, |(_, name)| name);
            let name = after.split(['(', '<']).next().unwrap_or(after).to_string();
            found.push((name, end + 1));
        }
    }
    found
}

/// The router's files: `src/delivery/router.rs` and its parts.
fn router_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("src/delivery/router.rs")];
    for entry in std::fs::read_dir(root.join("src/delivery/router")).expect("router parts") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

#[test]
fn router_state_is_composed_of_owned_parts_in_one_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = Vec::new();
    rust_files(&root.join("src"), &mut sources);
    let implementing: Vec<PathBuf> = sources
        .into_iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).expect("a source file");
            non_test(&text)
                .iter()
                .any(|l| l.trim_start().starts_with("impl RouterState"))
        })
        .collect();
    assert_eq!(
        implementing,
        vec![root.join("src/delivery/router.rs")],
        "`impl RouterState` only in src/delivery/router.rs"
    );
    let router = std::fs::read_to_string(&implementing[0]).expect("router.rs");
    let fields = struct_fields(&router, "RouterState");
    assert!(fields >= 5, "the field count reads the struct: {fields}");
    assert!(fields <= 12, "RouterState has {fields} fields, at most 12");
    let code = code_lines(&non_test(&router));
    assert!(code <= 900, "RouterState is {code} code lines, at most 900");
}

#[test]
fn the_routers_files_and_functions_stay_short() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut long = Vec::new();
    for file in router_files(root) {
        let text = std::fs::read_to_string(&file).expect("a source file");
        let lines = non_test(&text);
        let name = file.strip_prefix(root).expect("under root").display();
        if lines.len() > 900 {
            long.push(format!("{name}: {} non-test lines", lines.len()));
        }
        for (function, length) in function_lengths(&lines) {
            if length > 80 {
                long.push(format!("{name}: {function} is {length} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "over 900 lines a file or 80 a function:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_size_checks_see_fields_code_and_long_functions() {
    let text = "//! doc\npub struct S {\n    /// a\n    a: u8,\n    #[allow(x)]\n    b: Vec<u8>,\n}\n\n\
                impl S {\n    fn short(&self) {\n        // c\n    }\n\n    pub(super) fn long() {\n"
        .to_string()
        + &"        x();\n".repeat(81)
        + "    }\n}\n#[cfg(test)]\nmod tests {\n    fn t() {}\n}\n";
    assert_eq!(struct_fields(&text, "S"), 2);
    let lines = non_test(&text);
    assert_eq!(
        lines.len(),
        text.lines().count() - 4,
        "the test module is left out"
    );
    assert_eq!(
        function_lengths(&lines),
        vec![("short".to_string(), 3), ("long".to_string(), 83)]
    );
    assert_eq!(
        code_lines(&lines[..8]),
        5,
        "the docs and the blank line are not code"
    );
}
/// The files under `src/session` whose non-test code builds the reader's view of an entry
/// line (`Entry { … }` or `Entry::…(…)`, `Entry` not part of a longer name).
fn entry_builders(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&root.join("src/session"), &mut files);
    let mut builders: Vec<String> = files
        .into_iter()
        .filter(|file| {
            let text = std::fs::read_to_string(file).expect("a source file");
            let code: String = text
                .lines()
                .take_while(|line| !line.starts_with("#[cfg(test)]"))
                .filter(|line| !line.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            code.match_indices("Entry").any(|(at, _)| {
                let before = code[..at].chars().last();
                let after = &code[at + "Entry".len()..];
                !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
                    && (after.starts_with(" {") || after.starts_with("::"))
            })
        })
        .map(|file| {
            let relative = file.strip_prefix(root.join("src")).expect("under src");
            relative.to_string_lossy().replace('\\', "/")
        })
        .collect();
    builders.sort();
    builders
}

#[test]
fn l1_a_session_line_is_read_by_one_fast_way_and_the_general_way_only() {
    // SPEC L1: the hand-written reader (`direct`) answers where the general way (`entry`:
    // serde's derive over the transcript's types) would answer the same, and leaves every
    // other line to it. A third file building entries would be a second fast way, to be
    // kept in step with the general way by differential tests and a fuzz target of its own.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(
        entry_builders(root),
        ["session/direct.rs", "session/entry.rs"],
        "files that read session entry lines"
    );
}
