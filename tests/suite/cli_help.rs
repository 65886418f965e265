//! `advisor --help` and every subcommand's help, as a user reads them: they say what a
//! command and each flag do, and never cite the specification's rule ids (`L2`, `RO14`,
//! `§15` …), which a user has no way to look up. The subcommands are found by reading the
//! help itself, so a command added later is checked too.

use std::process::Command;

use regex::Regex;

/// The long help (`--help`) of `advisor` followed by `path`.
fn help(path: &[String]) -> String {
    let out = Command::new(crate::support::advisor_bin())
        .args(path)
        .arg("--help")
        .output()
        .expect("the advisor binary runs");
    assert!(
        out.status.success(),
        "`advisor {} --help` exits 0: {}",
        path.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The subcommands a help text lists under `Commands:` (clap's own `help` left out).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| line.trim_end() != "Commands:")
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// A rule id of the specification: one to three capitals and a one- or two-digit number
/// (`L2`, `V4`, `RO14`, `EV1`, `CA12`), or a section sign (`§15`).
fn rule_id() -> Regex {
    Regex::new(r"\b[A-Z]{1,3}\d{1,2}\b|§").expect("a valid pattern")
}

/// Every help text of the binary, each with the command line that prints it.
fn every_help() -> Vec<(String, String)> {
    let mut pending = vec![Vec::<String>::new()];
    let mut found = Vec::new();
    while let Some(path) = pending.pop() {
        let text = help(&path);
        for sub in subcommands(&text) {
            let mut next = path.clone();
            next.push(sub);
            pending.push(next);
        }
        found.push((format!("advisor {} --help", path.join(" ")), text));
    }
    found
}

#[test]
fn help_texts_cite_no_rule_ids() {
    let helps = every_help();
    let commands: Vec<&str> = helps.iter().map(|(line, _)| line.as_str()).collect();
    for expected in ["replay", "render", "serve", "roster", "eval compare"] {
        assert!(
            commands
                .iter()
                .any(|line| *line == format!("advisor {expected} --help")),
            "the subcommands are discovered: {commands:?}"
        );
    }
    let pattern = rule_id();
    let cited: Vec<String> = helps
        .iter()
        .flat_map(|(command, text)| {
            text.lines()
                .filter(|line| pattern.is_match(line))
                .map(move |line| format!("{command}: {}", line.trim()))
        })
        .collect();
    assert!(
        cited.is_empty(),
        "help text cites rule ids:\n{}",
        cited.join("\n")
    );
}

#[test]
fn the_rule_id_pattern_finds_the_forms_the_spec_uses_and_nothing_else() {
    let pattern = rule_id();
    for cited in ["(L2)", "(V1–V4)", "(§15, RO14)", "(P9)", "EV1", "CA25"] {
        assert!(pattern.is_match(cited), "{cited}");
    }
    for plain in [
        "MiB",
        "UTF-8",
        "SHA256",
        "JSON-RPC 2.0",
        "x5",
        "--max-held-mib",
    ] {
        assert!(!pattern.is_match(plain), "{plain}");
    }
}
