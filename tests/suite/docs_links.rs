//! The README is the front door and the references live in `docs/`: the README stays short,
//! and every link between them — to a file or to a heading of one — lands somewhere, so a
//! section moved from one page to another cannot leave a dead link behind.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use regex::Regex;

/// The most lines the README may have.
const README_MAX_LINES: usize = 400;

/// The anchor a renderer gives a heading: lower case, spaces as `-`, every other character
/// but letters, digits, `-` and `_` left out.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings (outside code fences); a repeated heading
/// gets `-1`, `-2` … as renderers number them.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut found = HashSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if fenced || hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let count = seen.entry(base.clone()).or_insert(0);
        found.insert(match *count {
            0 => base,
            n => format!("{base}-{n}"),
        });
        *count += 1;
    }
    found
}

/// The README and every page under `docs/`.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// Every relative link of `text` that does not land: a missing file, or a missing heading.
fn dead_links(
    page: &Path,
    text: &str,
    anchors_of: &dyn Fn(&Path) -> Option<HashSet<String>>,
) -> Vec<String> {
    let link = Regex::new(r"\]\(([^)\s]+)\)").expect("a valid pattern");
    let dir = page.parent().unwrap_or(Path::new("."));
    let mut dead = Vec::new();
    for found in link.captures_iter(text) {
        let target = &found[1];
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (file, anchor) = match target.split_once('#') {
            Some((file, anchor)) => (file, Some(anchor)),
            None => (target, None),
        };
        let path = if file.is_empty() {
            page.to_path_buf()
        } else {
            dir.join(file)
        };
        if !path.exists() {
            dead.push(format!("{}: {target} (no such file)", page.display()));
            continue;
        }
        if let Some(anchor) = anchor {
            match anchors_of(&path) {
                Some(known) if !known.contains(anchor) => {
                    dead.push(format!("{}: {target} (no such heading)", page.display()))
                }
                _ => {}
            }
        }
    }
    dead
}

#[test]
fn the_readme_is_short_and_every_link_of_it_and_of_docs_lands() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines; move reference material into docs/ and link it"
    );
    let anchors_of = |path: &Path| -> Option<HashSet<String>> {
        let is_markdown = path.extension().is_some_and(|e| e == "md");
        is_markdown.then(|| anchors(&std::fs::read_to_string(path).unwrap_or_default()))
    };
    let mut dead = Vec::new();
    let pages = pages(root);
    for page in &pages {
        let text = std::fs::read_to_string(page).expect("a page is readable");
        dead.extend(dead_links(page, &text, &anchors_of));
    }
    assert!(pages.len() > 5, "the pages are found: {pages:?}");
    assert!(dead.is_empty(), "dead links:\n{}", dead.join("\n"));
    for page in pages.iter().skip(1) {
        let name = page
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        assert!(
            readme.contains(&format!("(docs/{name}")),
            "README.md links no docs/{name}"
        );
    }
}

#[test]
fn a_dead_link_or_heading_is_found_and_a_live_one_is_not() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = root.join("README.md");
    let text = "# Top\n## The advisor's transcript file\n```\n# not a heading\n```\n\
                [a](#the-advisors-transcript-file) [b](#top) [c](#not-a-heading) \
                [d](docs/NOPE.md) [e](docs/SPEC.md) [f](https://example.com/x#y)";
    let own = anchors(text);
    let anchors_of = |path: &Path| (path == page.as_path()).then(|| own.clone());
    let dead = dead_links(&page, text, &anchors_of);
    assert_eq!(dead.len(), 2, "{dead:?}");
    assert!(
        dead[0].ends_with("#not-a-heading (no such heading)"),
        "{dead:?}"
    );
    assert!(dead[1].ends_with("docs/NOPE.md (no such file)"), "{dead:?}");
    assert_eq!(slug(" `--json` output"), "--json-output");
    assert_eq!(slug("Roster (WATCHDOG.yml)"), "roster-watchdogyml");
}
