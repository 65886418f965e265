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
             PreToolUse, PostToolUse, Stop, SubagentStop, SessionEnd); they run {} hook --host claude-code\n\
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
        text.starts_with(&format!("--- {name}\n+++ {name}\n@@ -9,7 +9,84 @@\n")),
        "{text}"
    );
    assert!(text.contains("+    \"SessionStart\": [\n"), "{text}");
    let config = h.path(".config/advisor/config.yml");
    assert!(text.contains(&format!(
        "--- /dev/null\n+++ {}\n@@ -0,0 +1,4 @@\n+modelRoles:\n+  advisor: openai/gpt-5-mini\n+advisor:\n+  enabled: true\n",
        config.display()
    )), "{text}");
    assert!(text.ends_with("dry run: nothing was written\n"), "{text}");
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
            "Claude Code:\n  user hooks {}: advisor hooks on all 7 events\n",
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
        6
    );
    assert_eq!(json["hosts"][1]["lastSession"], Value::Null);
    assert_eq!(json["daemon"]["state"], "absent");
}
