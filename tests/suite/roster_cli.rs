//! `advisor roster` as a user runs it (§15, RO14). The environment is set on the child
//! process only.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn run(home: &Path, args: &[&str]) -> Output {
    Command::new(crate::support::advisor_bin())
        .arg("roster")
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env_remove("PI_CODING_AGENT_DIR")
        .output()
        .unwrap()
}

fn write(home: &Path, relative: &str, text: &str) {
    let path = home.join(relative);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A user roster and settings, a repository `proj` with a roster at its root (overriding a
/// user entry, a malformed entry, aliases, refused and unknown tools, an import) and one in
/// `proj/app/.omp/` overriding another user entry.
fn tree(home: &Path) {
    fs::create_dir_all(home.join("proj/.git")).unwrap();
    write(
        home,
        ".omp/agent/config.yml",
        "modelRoles:\n  advisor: openrouter/google/gemini-2.5-pro\nadvisor:\n  maxNotesPerUpdate: 6\n  \
         syncBacklog: strict\n",
    );
    write(
        home,
        ".omp/agent/WATCHDOG.yml",
        "instructions: Prefer small diffs.\n\
         advisors:\n\
         \x20 - name: Architecture\n\
         \x20   model: anthropic/claude-sonnet-4-5:high\n\
         \x20 - name: Tests\n\
         \x20   tools: []\n",
    );
    write(
        home,
        "proj/WATCHDOG.yml",
        "instructions: |\n\
         \x20 This repository is a Rust crate.\n\
         \x20 @docs/rules.md\n\
         advisors:\n\
         \x20 - name: architecture\n\
         \x20   tools: [grep, glob, bash]\n\
         \x20   instructions: Watch module boundaries.\n\
         \x20 - name: Broken\n\
         \x20   enabled: maybe\n\
         \x20 - name: DB Migrations\n\
         \x20   tools: [write, lsp]\n\
         \x20   policy: reconfirm\n\
         \x20   maxSeverity: concern\n\
         \x20   reviewMode: agent-end\n\
         \x20   reviewInterval: 3\n\
         \x20   when:\n\
         \x20     paths: [\"migrations/**\"]\n",
    );
    write(
        home,
        "proj/docs/rules.md",
        "Run the tests before saying done.\n",
    );
    write(
        home,
        "proj/app/.omp/WATCHDOG.yaml",
        "maxNotesPerUpdate: 3\n\
         advisors:\n\
         \x20 - name: Tests\n\
         \x20   enabled: false\n\
         \x20   model: gpt5\n\
         \x20   syncBacklog: \"5\"\n",
    );
}

#[test]
fn ro14_roster_prints_every_field_with_its_source_and_the_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    tree(&home);
    let output = run(&home, &["--cwd", "proj/app"]);
    assert!(output.status.success(), "{output:?}");
    assert!(output.stderr.is_empty(), "{output:?}");
    let expected = "\
roster files:
  H/.omp/agent/WATCHDOG.yml
  H/proj/WATCHDOG.yml
  H/proj/app/.omp/WATCHDOG.yaml

shared instructions  [H/.omp/agent/WATCHDOG.yml, H/proj/WATCHDOG.yml]
    Prefer small diffs.

    This repository is a Rust crate.
    Run the tests before saying done.

shared maxNotesPerUpdate: 3  [top level of H/proj/app/.omp/WATCHDOG.yaml]

advisor architecture (\"architecture\")  [H/proj/WATCHDOG.yml]
  replaces the entry in H/.omp/agent/WATCHDOG.yml
  enabled: yes  [default]
  model: openrouter/google/gemini-2.5-pro (thinking medium)  [setting modelRoles.advisor in H/.omp/agent/config.yml]
  tools: search, find  [H/proj/WATCHDOG.yml]
  maxNotesPerUpdate: 3  [top level of H/proj/app/.omp/WATCHDOG.yaml]
  policy: the session's (advisor.policy)  [default]
  maxSeverity: blocker  [default]
  when: every update  [default]
  cadence: turn · every update  [default]
  catch-up: inherit → strict (advisor.syncBacklog)  [setting advisor.syncBacklog in H/.omp/agent/config.yml]
  instructions:  [H/proj/WATCHDOG.yml]
    Watch module boundaries.

advisor tests (\"Tests\")  [H/proj/app/.omp/WATCHDOG.yaml]
  replaces the entry in H/.omp/agent/WATCHDOG.yml
  enabled: no (paused)  [H/proj/app/.omp/WATCHDOG.yaml]
  model: no model: `gpt5` is not provider/model-id[:thinking]  [H/proj/app/.omp/WATCHDOG.yaml]
  tools: read, search, find, check_in  [default]
  maxNotesPerUpdate: 3  [top level of H/proj/app/.omp/WATCHDOG.yaml]
  policy: the session's (advisor.policy)  [default]
  maxSeverity: blocker  [default]
  when: every update  [default]
  cadence: turn · every update  [default]
  catch-up: 5  [H/proj/app/.omp/WATCHDOG.yaml]
  instructions: none  [default]

advisor db-migrations (\"DB Migrations\")  [H/proj/WATCHDOG.yml]
  enabled: yes  [default]
  model: openrouter/google/gemini-2.5-pro (thinking medium)  [setting modelRoles.advisor in H/.omp/agent/config.yml]
  tools: read, search, find, check_in  [default]
  maxNotesPerUpdate: 3  [top level of H/proj/app/.omp/WATCHDOG.yaml]
  policy: reconfirm  [H/proj/WATCHDOG.yml]
  maxSeverity: concern  [H/proj/WATCHDOG.yml]
  when: paths migrations/**  [H/proj/WATCHDOG.yml]
  cadence: agent-end · every 3 eligible updates  [H/proj/WATCHDOG.yml]
  catch-up: inherit → strict (advisor.syncBacklog)  [setting advisor.syncBacklog in H/.omp/agent/config.yml]
  instructions: none  [default]

warnings:
  H/proj/WATCHDOG.yml: advisor \"architecture\": tool `bash` refused: this advisor never mutates (it reads, searches and advises only)
  H/proj/WATCHDOG.yml: advisor \"Broken\": `enabled` must be true or false, not a string; entry skipped
  H/proj/WATCHDOG.yml: advisor \"DB Migrations\": tool `write` refused: this advisor never mutates (it reads, searches and advises only)
  H/proj/WATCHDOG.yml: advisor \"DB Migrations\": unknown tool `lsp` dropped (the tools are read, search, find, check_in)
  H/proj/WATCHDOG.yml: advisor \"DB Migrations\": no tool left; the default set is used (read, search, find, check_in)
";
    let expected = expected.replace("H/", &format!("{}/", home.display()));
    assert_eq!(String::from_utf8(output.stdout).unwrap(), expected);
}

#[test]
fn ro14_roster_json_is_one_document_with_sources_and_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    fs::create_dir_all(home.join("proj/.git")).unwrap();
    write(
        &home,
        "proj/.omp/WATCHDOG.yml",
        "advisors:\n  - name: Sec\n    model: anthropic/claude-sonnet-4-5\n    tools: [grep, edit]\n  - name: Sec2\n    tools: read\n",
    );
    let output = run(&home, &["--cwd", "proj", "--json"]);
    assert!(output.status.success(), "{output:?}");
    let file = home.join("proj/.omp/WATCHDOG.yml").display().to_string();
    let entry = serde_json::json!({"kind": "entry", "file": file});
    let default = serde_json::json!({"kind": "default"});
    let got: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        got,
        serde_json::json!({
            "files": [file],
            "instructions": null,
            "maxNotesPerUpdate": null,
            "advisors": [{
                "slug": "sec",
                "name": "Sec",
                "file": file,
                "overrides": [],
                "enabled": {"value": true, "source": default},
                "model": {
                    "value": {
                        "kind": "resolved",
                        "role": "anthropic/claude-sonnet-4-5",
                        "provider": "anthropic",
                        "model": "claude-sonnet-4-5",
                        "thinking": "medium"
                    },
                    "source": entry
                },
                "tools": {"value": ["search"], "source": entry},
                "instructions": {"value": null, "source": default},
                "maxNotesPerUpdate": {"value": 4, "source": default},
                "policy": {"value": null, "source": default},
                "maxSeverity": {"value": "blocker", "source": default},
                "when": {"value": null, "source": default},
                "reviewMode": {"value": "turn", "source": default},
                "reviewInterval": {"value": 1, "source": default},
                "syncBacklog": {"value": null, "source": default},
                "toolBudget": {"value": null, "source": default},
                "maxSpendRatio": {"value": null, "source": default},
                "gate": {"value": null, "source": default},
                "gateFailMode": {"value": null, "source": default}
            }],
            "warnings": [
                {
                    "file": file,
                    "advisor": "\"Sec\"",
                    "field": "tools",
                    "message": "tool `edit` refused: this advisor never mutates (it reads, searches and advises only)",
                    "text": format!("{file}: advisor \"Sec\": tool `edit` refused: this advisor never mutates (it reads, searches and advises only)")
                },
                {
                    "file": file,
                    "advisor": "\"Sec2\"",
                    "field": "tools",
                    "message": "`tools` must be a list of tool names, not a string; entry skipped",
                    "text": format!("{file}: advisor \"Sec2\": `tools` must be a list of tool names, not a string; entry skipped")
                }
            ]
        })
    );
}

#[test]
fn ro12_no_roster_file_says_the_unnamed_advisor_runs_alone() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    fs::create_dir_all(home.join("proj/.git")).unwrap();
    let output = run(&home, &["--cwd", "proj"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "no roster file (WATCHDOG.yml or WATCHDOG.yaml) found\n\n\
         no named advisor: the unnamed advisor runs alone\n"
    );
}

#[test]
fn ro14_a_broken_settings_file_is_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    fs::create_dir_all(home.join("proj/.git")).unwrap();
    write(&home, ".omp/agent/config.yml", "advisor: [\n");
    let output = run(&home, &["--cwd", "proj"]);
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("config.yml"), "{stderr}");
}
