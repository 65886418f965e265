//! `advisor install`, `uninstall` and `doctor` as a user runs them (H23–H29), against a
//! scratch home. The environment is set on the child process only, from scratch.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A scratch home with a project directory in it.
struct Home {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    proj: PathBuf,
}

fn home() -> Home {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let proj = home.join("proj");
    fs::create_dir_all(&proj).unwrap();
    Home {
        _tmp: tmp,
        home,
        proj,
    }
}

impl Home {
    /// Runs the binary in the project with only HOME (and PATH) plus `env` set.
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = Command::new(crate::support::advisor_bin());
        command
            .args(args)
            .current_dir(&self.proj)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &self.home)
            .env("ADVISOR_RUNTIME_DIR", self.home.join("run"));
        for (name, value) in env {
            command.env(name, value);
        }
        command.output().unwrap()
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.home.join(relative)
    }
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// The user's own Claude Code settings, in Claude Code's two-space layout.
const THEIRS: &str = r#"{
  "model": "opus",
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "say done"
          }
        ]
      }
    ]
  }
}
"#;

/// What install says when it leaves PreToolUse out (H33).
const NO_PRE_TOOL_USE: &str = "no PreToolUse hook: only the action gate uses it, and the gate \
     is off here; `advisor install claude-code --gate risky` turns it on and adds the hook";

fn binary() -> String {
    crate::support::advisor_bin()
        .canonicalize()
        .unwrap()
        .display()
        .to_string()
}

#[test]
fn h23_h26_install_claude_code_for_the_user_then_again_then_uninstall() {
    let h = home();
    let settings = h.path(".claude/settings.json");
    write(&settings, THEIRS);
    let text = stdout(&h.run(&["install", "claude-code"], &[("ANTHROPIC_API_KEY", "k")]));
    assert_eq!(
        text,
        format!(
            "installed the advisor's hooks for Claude Code in {} (SessionStart, UserPromptSubmit, \
             PostToolUse, Stop, SubagentStop, SessionEnd); they run {} hook --host claude-code\n\
             {NO_PRE_TOOL_USE}\n\
             model: anthropic/claude-sonnet-4-5 (the default with ANTHROPIC_API_KEY set)\n",
            settings.display(),
            binary()
        )
    );
    let doc: Value = serde_json::from_str(&fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(doc["model"], "opus");
    assert_eq!(doc["hooks"]["Stop"][0]["hooks"][0]["command"], "say done");
    let ours = &doc["hooks"]["PostToolUse"][0];
    assert_eq!(ours["matcher"], "*");
    assert_eq!(ours["hooks"][0]["type"], "command");
    assert_eq!(
        ours["hooks"][0]["command"],
        format!("{} hook --host claude-code", binary())
    );
    assert_eq!(ours["hooks"][0]["timeout"], 10);

    let again = stdout(&h.run(&["install", "claude-code", "--user"], &[]));
    assert!(
        again.starts_with(&format!(
            "the advisor's hooks for Claude Code are already installed in {}; nothing changed\n",
            settings.display()
        )),
        "{again}"
    );
    assert!(again.contains("no model yet: set ANTHROPIC_API_KEY (the advisor then uses anthropic/claude-sonnet-4-5)"), "{again}");

    let gone = stdout(&h.run(&["uninstall", "claude-code"], &[]));
    assert!(
        gone.starts_with(&format!(
            "removed the advisor's hooks from {}",
            settings.display()
        )),
        "{gone}"
    );
    assert_eq!(
        fs::read_to_string(&settings).unwrap(),
        THEIRS,
        "byte for byte"
    );
    let none = stdout(&h.run(&["uninstall", "claude-code"], &[]));
    assert_eq!(
        none,
        format!(
            "no advisor hooks in {}; nothing changed\n",
            settings.display()
        )
    );
}

#[test]
fn h25_dry_run_prints_the_diff_and_writes_nothing() {
    let h = home();
    let settings = h.path(".claude/settings.json");
    write(&settings, THEIRS);
    let text = stdout(&h.run(
        &[
            "install",
            "claude-code",
            "--dry-run",
            "--model",
            "openai/gpt-5-mini",
        ],
        &[],
    ));
    let name = settings.display().to_string();
    assert!(
        text.starts_with(&format!("--- {name}\n+++ {name}\n@@ -9,7 +9,72 @@\n")),
        "{text}"
    );
    assert!(text.contains("+    \"SessionStart\": [\n"), "{text}");
    let config = h.path(".config/advisor/config.yml");
    assert!(text.contains(&format!(
        "--- /dev/null\n+++ {}\n@@ -0,0 +1,4 @@\n+modelRoles:\n+  advisor: openai/gpt-5-mini\n+advisor:\n+  enabled: true\n",
        config.display()
    )), "{text}");
    assert!(
        text.ends_with(&format!(
            "{NO_PRE_TOOL_USE}\ndry run: nothing was written\n"
        )),
        "{text}"
    );
    assert_eq!(fs::read_to_string(&settings).unwrap(), THEIRS);
    assert!(!config.exists());

    stdout(&h.run(&["install", "claude-code"], &[]));
    let text = stdout(&h.run(&["uninstall", "claude-code", "--dry-run"], &[]));
    assert!(
        text.contains("-    \"SessionEnd\": [\n")
            && text.ends_with("dry run: nothing was written\n"),
        "{text}"
    );
    assert_ne!(
        fs::read_to_string(&settings).unwrap(),
        THEIRS,
        "still installed"
    );
}

#[test]
fn h23_a_broken_or_symlinked_settings_file_is_refused_and_untouched() {
    let h = home();
    let settings = h.path(".claude/settings.json");
    write(&settings, "{\"hooks\": ");
    let out = h.run(&["install", "claude-code"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "advisor: {} is not valid JSON",
            settings.display()
        )),
        "{err}"
    );
    assert!(err.contains("it was not changed"), "{err}");
    assert_eq!(fs::read_to_string(&settings).unwrap(), "{\"hooks\": ");

    let out = h.run(&["install", "codex", "--model", "gpt-5"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("advisor: `gpt-5` is not a model: pass --model provider/model-id"),
        "{err}"
    );
    assert!(!h.path(".codex/hooks.json").exists(), "nothing written");

    let real = h.path("dotfiles/settings.json");
    write(&real, "{}");
    fs::remove_file(&settings).unwrap();
    std::os::unix::fs::symlink(&real, &settings).unwrap();
    let out = h.run(&["install", "claude-code"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a symlink"));
    assert_eq!(fs::read_to_string(&real).unwrap(), "{}");
}

#[test]
fn h23_h27_codex_for_the_project_with_a_model_and_the_trust_note() {
    let h = home();
    let codex_home = h.path("codex-home");
    let code_home = codex_home.display().to_string();
    let out = h.run(
        &[
            "install",
            "codex",
            "--project",
            "--model",
            "openai/gpt-5-mini:high",
            "--gate",
            "risky",
        ],
        &[("CODEX_HOME", &code_home)],
    );
    let text = stdout(&out);
    let hooks = h.proj.join(".codex/hooks.json");
    assert!(
        text.starts_with(&format!(
            "installed the advisor's hooks for Codex in {}",
            hooks.display()
        )),
        "{text}"
    );
    let config = h.path(".config/advisor/config.yml");
    assert!(
        text.contains(&format!("wrote {}\n", config.display())),
        "{text}"
    );
    assert!(
        text.contains("model: openai/gpt-5-mini:high (modelRoles.advisor in the settings)\n"),
        "{text}"
    );
    assert!(
        text.contains("Codex runs hooks only once they are trusted"),
        "{text}"
    );
    assert!(text.contains("--dangerously-bypass-hook-trust"), "{text}");
    assert_eq!(
        fs::read_to_string(&config).unwrap(),
        "modelRoles:\n  advisor: openai/gpt-5-mini:high\nadvisor:\n  gate: risky\n  enabled: true\n"
    );
    let doc: Value = serde_json::from_str(&fs::read_to_string(&hooks).unwrap()).unwrap();
    assert!(doc["hooks"].get("SessionEnd").is_none());
    assert_eq!(doc["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"], 35);
    assert!(!codex_home.exists(), "the user's Codex home is left alone");

    let gone = stdout(&h.run(&["uninstall", "codex", "--project"], &[]));
    assert!(gone.contains("which held nothing else"), "{gone}");
    assert!(!hooks.exists());
}

#[test]
fn h28_h29_doctor_reports_hooks_the_last_session_and_the_silent_codex() {
    let h = home();
    let state = h.path("state");
    write(
        &state.join("hook-events.jsonl"),
        "{\"ts\":\"2026-12-06T11:00:00Z\",\"host\":\"claude-code\",\"event\":\"SessionStart\",\"session\":\"abc\",\"ms\":3,\"outcome\":\"empty\"}\n\
         {\"ts\":\"2026-12-06T11:00:05Z\",\"host\":\"claude-code\",\"event\":\"Stop\",\"session\":\"abc\",\"ms\":9,\"outcome\":\"block\"}\n",
    );
    let state_dir = state.display().to_string();
    let env = [
        ("ADVISOR_STATE_DIR", state_dir.as_str()),
        ("OPENAI_API_KEY", "k"),
    ];
    stdout(&h.run(&["install", "claude-code"], &env));
    stdout(&h.run(&["install", "codex"], &env));
    let text = stdout(&h.run(&["doctor"], &env));
    assert!(
        text.contains(&format!(
            "Claude Code:\n  user hooks {}: advisor hooks on all 6 events (no PreToolUse: the action gate is off)\n",
            h.path(".claude/settings.json").display()
        )),
        "{text}"
    );
    assert!(text.contains("  last session abc (2026-12-06T11:00:00Z – 2026-12-06T11:00:05Z): SessionStart 1, Stop 1; outcomes: block 1, empty 1; slowest answer 9 ms\n"), "{text}");
    assert!(
        text.contains("  model openai/gpt-5 (the default with OPENAI_API_KEY set)\n"),
        "{text}"
    );
    assert!(
        text.contains("Codex:\n")
            && text
                .contains("  no hook has fired yet\n  Codex runs hooks only once they are trusted"),
        "{text}"
    );
    assert!(text.contains("background process: not running"), "{text}");

    let json: Value = serde_json::from_str(&stdout(&h.run(&["doctor", "--json"], &env))).unwrap();
    assert_eq!(json["hosts"][0]["host"], "claude-code");
    assert_eq!(json["hosts"][0]["lastSession"]["outcomes"]["block"], 1);
    assert_eq!(
        json["hosts"][1]["files"][0]["events"]
            .as_array()
            .unwrap()
            .len(),
        5,
        "Codex's events without PreToolUse (H33)"
    );
    assert_eq!(json["hosts"][1]["lastSession"], Value::Null);
    assert_eq!(json["daemon"]["state"], "absent");
}

/// The event keys of a hooks file, sorted (an entry added later goes last).
fn event_keys(file: &Path) -> Vec<String> {
    let doc: Value = serde_json::from_str(&fs::read_to_string(file).unwrap()).unwrap();
    let mut keys: Vec<String> = doc["hooks"].as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

/// Claude Code's events without PreToolUse, sorted.
const WITHOUT_PRE: [&str; 6] = [
    "PostToolUse",
    "SessionEnd",
    "SessionStart",
    "Stop",
    "SubagentStop",
    "UserPromptSubmit",
];

/// Claude Code's events with PreToolUse, sorted.
const WITH_PRE: [&str; 7] = [
    "PostToolUse",
    "PreToolUse",
    "SessionEnd",
    "SessionStart",
    "Stop",
    "SubagentStop",
    "UserPromptSubmit",
];

#[test]
fn h33_h27_the_gate_flag_adds_pre_tool_use_and_off_takes_it_away_idempotently() {
    let h = home();
    let settings = h.path(".claude/settings.json");
    let first = stdout(&h.run(&["install", "claude-code"], &[]));
    assert!(first.contains(&format!("\n{NO_PRE_TOOL_USE}\n")), "{first}");
    assert_eq!(event_keys(&settings), WITHOUT_PRE);

    let on = stdout(&h.run(&["install", "claude-code", "--gate", "risky"], &[]));
    assert!(
        on.starts_with(&format!(
            "installed the advisor's hooks for Claude Code in {} (SessionStart, UserPromptSubmit, \
             PreToolUse, PostToolUse, Stop, SubagentStop, SessionEnd);",
            settings.display()
        )),
        "{on}"
    );
    assert!(!on.contains("no PreToolUse hook"), "{on}");
    assert_eq!(event_keys(&settings), WITH_PRE);
    let config = h.path(".config/advisor/config.yml");
    assert_eq!(
        fs::read_to_string(&config).unwrap(),
        "advisor:\n  gate: risky\n"
    );
    // The settings now say risky: a plain install keeps the hook and changes nothing.
    let again = stdout(&h.run(&["install", "claude-code"], &[]));
    assert!(again.contains("are already installed"), "{again}");
    assert_eq!(event_keys(&settings), WITH_PRE);

    let off = stdout(&h.run(&["install", "claude-code", "--gate", "off"], &[]));
    assert!(
        off.starts_with(&format!(
            "installed the advisor's hooks for Claude Code in {} (SessionStart, UserPromptSubmit, \
             PostToolUse, Stop, SubagentStop, SessionEnd);",
            settings.display()
        )),
        "{off}"
    );
    assert!(off.contains(&format!("\n{NO_PRE_TOOL_USE}\n")), "{off}");
    assert_eq!(event_keys(&settings), WITHOUT_PRE);
    assert_eq!(
        fs::read_to_string(&config).unwrap(),
        "advisor:\n  gate: \"off\"\n"
    );
    let again = stdout(&h.run(&["install", "claude-code"], &[]));
    assert!(again.contains("are already installed"), "{again}");
    assert_eq!(event_keys(&settings), WITHOUT_PRE);
}

#[test]
fn h33_gt10_the_project_settings_or_a_roster_entry_s_gate_bring_pre_tool_use() {
    let h = home();
    let hooks = h.proj.join(".codex/hooks.json");
    write(
        &h.proj.join(".advisor/config.yml"),
        "advisor:\n  gate: all\n",
    );
    let text = stdout(&h.run(&["install", "codex", "--project"], &[]));
    assert!(!text.contains("no PreToolUse hook"), "{text}");
    assert!(event_keys(&hooks).contains(&"PreToolUse".to_string()));

    // The project's gate off: the hook goes, and the line names the project's install.
    write(
        &h.proj.join(".advisor/config.yml"),
        "advisor:\n  gate: off\n",
    );
    let text = stdout(&h.run(&["install", "codex", "--project"], &[]));
    assert!(
        text.contains(
            "no PreToolUse hook: only the action gate uses it, and the gate is off here; \
             `advisor install codex --project --gate risky` turns it on and adds the hook\n"
        ),
        "{text}"
    );
    assert!(!event_keys(&hooks).contains(&"PreToolUse".to_string()));

    // A roster entry with its own gate turns it on whatever advisor.gate says (GT10).
    write(
        &h.proj.join("WATCHDOG.yml"),
        "advisors:\n  - name: Security\n    gate: risky\n",
    );
    let dry = stdout(&h.run(&["install", "codex", "--project", "--dry-run"], &[]));
    assert!(dry.contains("+    \"PreToolUse\": [\n"), "{dry}");
    assert!(
        !event_keys(&hooks).contains(&"PreToolUse".to_string()),
        "dry run"
    );
    stdout(&h.run(&["install", "codex", "--project", "--gate", "off"], &[]));
    assert!(
        event_keys(&hooks).contains(&"PreToolUse".to_string()),
        "--gate off leaves the entry's own gate on"
    );
}

#[test]
fn h33_h28_doctor_warns_when_the_gate_is_on_and_pre_tool_use_is_missing() {
    let h = home();
    stdout(&h.run(&["install", "claude-code"], &[]));
    // The gate turned on by hand, after the install.
    write(
        &h.path(".config/advisor/config.yml"),
        "advisor:\n  gate: risky\n",
    );
    let warning = "the action gate is on (advisor.gate: risky) but no PreToolUse hook of the \
                   advisor is installed, so it cannot stop a call before it runs: run \
                   `advisor install claude-code` again";
    let text = stdout(&h.run(&["doctor"], &[]));
    assert!(
        text.contains(&format!(
            "  user hooks {}: advisor hooks on 6 events; missing on PreToolUse (run `advisor install claude-code` again)\n",
            h.path(".claude/settings.json").display()
        )),
        "{text}"
    );
    assert!(text.contains(&format!("\n  {warning}\n")), "{text}");
    let json: Value = serde_json::from_str(&stdout(&h.run(&["doctor", "--json"], &[]))).unwrap();
    let gate = &json["hosts"][0]["gate"];
    assert_eq!(gate["on"], true);
    assert_eq!(gate["source"], "advisor.gate: risky");
    assert_eq!(gate["preToolUse"], false);
    assert_eq!(gate["problem"], warning);
    assert_eq!(
        json["hosts"][1]["gate"]["problem"],
        Value::Null,
        "Codex is not installed"
    );

    // The fix it names.
    stdout(&h.run(&["install", "claude-code"], &[]));
    let text = stdout(&h.run(&["doctor"], &[]));
    assert!(!text.contains("the action gate is on"), "{text}");
    assert!(text.contains("advisor hooks on all 7 events\n"), "{text}");
}
