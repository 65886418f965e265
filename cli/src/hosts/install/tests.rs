use super::*;
use std::os::unix::fs::symlink;

const BIN: &str = "/opt/advisor/bin/advisor";

/// A Claude Code settings file as the user has it: other keys, their own hooks (one on an
/// event we use, one on an event we do not), in Claude Code's own two-space layout.
const USER_SETTINGS: &str = r#"{
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "~/bin/check-bash.sh",
            "timeout": 5
          }
        ]
      }
    ],
    "Notification": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send done"
          }
        ]
      }
    ]
  },
  "permissions": {
    "allow": [
      "Bash(ls:*)"
    ]
  }
}
"#;

fn command(host: HookHost) -> String {
    hook_command(Path::new(BIN), host)
}

fn temp_file(text: Option<&str>) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(".claude").join("settings.json");
    if let Some(text) = text {
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(&file, text).unwrap();
    }
    (dir, file)
}

fn install(file: &Path, host: HookHost) -> Plan {
    let plan = plan_install(&install_events(host, true), file, &command(host)).unwrap();
    apply(&plan).unwrap();
    plan
}

fn parsed(file: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(file).unwrap()).unwrap()
}

#[test]
fn h24_our_commands_are_recognised_and_others_are_not() {
    assert!(is_our_command(&command(HookHost::Codex)));
    assert!(is_our_command(
        "'/home/a b/advisor' hook --host claude-code"
    ));
    assert!(is_our_command("advisor hook"));
    assert!(!is_our_command("advisor-notes hooked"));
    assert!(!is_our_command("python3 hook_log.py advisor hook"));
    assert!(!is_our_command("/usr/bin/advisor status"));
    assert!(!is_our_command(""));
    assert_eq!(
        hook_command(Path::new("/home/a b/it's/advisor"), HookHost::ClaudeCode),
        r"'/home/a b/it'\''s/advisor' hook --host claude-code"
    );
    assert_eq!(
        command_program(&hook_command(
            Path::new("/home/a b/it's/advisor"),
            HookHost::Codex
        )),
        Some("/home/a b/it's/advisor".to_string())
    );
}

#[test]
fn h23_a_new_claude_file_gets_every_event_with_the_pinned_shape() {
    let (_dir, file) = temp_file(None);
    let plan = install(&file, HookHost::ClaudeCode);
    assert_eq!(plan.events, ALL_EVENTS.map(String::from));
    let doc = parsed(&file);
    let hooks = doc["hooks"].as_object().unwrap();
    assert_eq!(
        hooks.keys().collect::<Vec<_>>(),
        ALL_EVENTS.iter().collect::<Vec<_>>()
    );
    assert_eq!(
        doc["hooks"]["PreToolUse"],
        serde_json::json!([{"matcher": "*", "hooks": [{"type": "command",
            "command": "/opt/advisor/bin/advisor hook --host claude-code", "timeout": 35}]}])
    );
    assert_eq!(
        doc["hooks"]["Stop"],
        serde_json::json!([{"hooks": [{"type": "command",
            "command": "/opt/advisor/bin/advisor hook --host claude-code", "timeout": 10}]}])
    );
    assert!(fs::read_to_string(&file)
        .unwrap()
        .starts_with("{\n  \"hooks\": {\n    \"SessionStart\""));
}

#[test]
fn h23_codex_gets_no_session_end() {
    let (_dir, file) = temp_file(None);
    install(&file, HookHost::Codex);
    let doc = parsed(&file);
    assert!(doc["hooks"].get("SessionEnd").is_none());
    assert!(doc["hooks"]["SubagentStop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .ends_with("hook --host codex"));
    assert_eq!(doc["hooks"].as_object().unwrap().len(), 6);
}

#[test]
fn h23_h26_the_users_hooks_and_keys_survive_install_and_uninstall_byte_for_byte() {
    let (_dir, file) = temp_file(Some(USER_SETTINGS));
    install(&file, HookHost::ClaudeCode);
    let doc = parsed(&file);
    let original: Value = serde_json::from_str(USER_SETTINGS).unwrap();
    assert_eq!(doc["model"], original["model"]);
    assert_eq!(doc["permissions"], original["permissions"]);
    assert_eq!(
        doc["hooks"]["Notification"],
        original["hooks"]["Notification"]
    );
    assert_eq!(
        doc["hooks"]["PreToolUse"][0], original["hooks"]["PreToolUse"][0],
        "theirs first"
    );
    assert!(is_our_command(
        doc["hooks"]["PreToolUse"][1]["hooks"][0]["command"]
            .as_str()
            .unwrap()
    ));
    let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["model", "hooks", "permissions"], "order kept");

    let plan = plan_uninstall(&file).unwrap();
    assert_eq!(plan.events.len(), 7);
    apply(&plan).unwrap();
    assert_eq!(
        fs::read_to_string(&file).unwrap(),
        USER_SETTINGS,
        "byte for byte"
    );
}

#[test]
fn h23_a_second_install_changes_nothing_and_says_so() {
    let (_dir, file) = temp_file(Some(USER_SETTINGS));
    install(&file, HookHost::ClaudeCode);
    let once = fs::read_to_string(&file).unwrap();
    let modified = fs::metadata(&file).unwrap().modified().unwrap();
    let plan = plan_install(
        &install_events(HookHost::ClaudeCode, true),
        &file,
        &command(HookHost::ClaudeCode),
    )
    .unwrap();
    assert!(!plan.changes() && plan.events.is_empty());
    assert_eq!(plan.diff(), "");
    apply(&plan).unwrap();
    assert_eq!(fs::read_to_string(&file).unwrap(), once);
    assert_eq!(
        fs::metadata(&file).unwrap().modified().unwrap(),
        modified,
        "not rewritten"
    );
}

#[test]
fn h23_an_entry_of_ours_for_another_binary_is_replaced_not_doubled() {
    let (_dir, file) = temp_file(Some(USER_SETTINGS));
    let plan = plan_install(
        &install_events(HookHost::ClaudeCode, true),
        &file,
        "/old/advisor hook --host claude-code",
    )
    .unwrap();
    apply(&plan).unwrap();
    let plan = install(&file, HookHost::ClaudeCode);
    assert_eq!(plan.events.len(), 7);
    let doc = parsed(&file);
    for event in ALL_EVENTS {
        let groups = doc["hooks"][event].as_array().unwrap();
        assert_eq!(our_hooks(groups).len(), 1, "{event}");
        assert_eq!(
            our_hooks(groups)[0].1["command"],
            Value::from(command(HookHost::ClaudeCode))
        );
    }
    assert_eq!(
        doc["hooks"]["PreToolUse"].as_array().unwrap().len(),
        2,
        "theirs and ours"
    );
}

#[test]
fn h26_uninstall_keeps_their_hook_in_a_group_shared_with_ours() {
    let shared = r#"{"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "/usr/local/bin/advisor hook --host claude-code"},
        {"type": "command", "command": "say done"}]}]}}"#;
    let (_dir, file) = temp_file(Some(shared));
    apply(&plan_uninstall(&file).unwrap()).unwrap();
    assert_eq!(
        parsed(&file),
        serde_json::json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}})
    );
}

#[test]
fn h26_uninstall_of_a_file_we_created_removes_it_and_of_nothing_is_a_no_op() {
    let (_dir, file) = temp_file(None);
    install(&file, HookHost::Codex);
    let plan = plan_uninstall(&file).unwrap();
    assert!(plan.changes() && plan.after.is_none());
    apply(&plan).unwrap();
    assert!(!file.exists());
    let plan = plan_uninstall(&file).unwrap();
    assert!(!plan.changes() && plan.events.is_empty());
    let (_dir, file) = temp_file(Some(USER_SETTINGS));
    let plan = plan_uninstall(&file).unwrap();
    assert!(!plan.changes(), "nothing of ours: nothing to do");
}

#[test]
fn h25_a_dry_run_plan_shows_the_diff_and_writes_nothing() {
    let (_dir, file) = temp_file(Some(USER_SETTINGS));
    let plan = plan_install(
        &install_events(HookHost::ClaudeCode, true),
        &file,
        &command(HookHost::ClaudeCode),
    )
    .unwrap();
    let diff = plan.diff();
    assert!(
        diff.starts_with(&format!(
            "--- {}\n+++ {}\n@@ ",
            file.display(),
            file.display()
        )),
        "{diff}"
    );
    assert!(diff.contains("+    \"SessionStart\": ["), "{diff}");
    assert!(
        !diff
            .lines()
            .any(|l| l.starts_with('-') && !l.starts_with("---")),
        "{diff}"
    );
    assert_eq!(
        fs::read_to_string(&file).unwrap(),
        USER_SETTINGS,
        "planning writes nothing"
    );
}

#[test]
fn h23_four_space_files_stay_four_space_and_the_mode_is_kept() {
    let text = "{\n    \"model\": \"opus\"\n}\n";
    let (_dir, file) = temp_file(Some(text));
    fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).unwrap();
    install(&file, HookHost::ClaudeCode);
    let written = fs::read_to_string(&file).unwrap();
    assert!(
        written
            .starts_with("{\n    \"model\": \"opus\",\n    \"hooks\": {\n        \"SessionStart\""),
        "{written}"
    );
    assert_eq!(
        fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let leftovers: Vec<_> = fs::read_dir(file.parent().unwrap()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no temporary file left");
}

#[test]
fn h23_invalid_json_and_wrong_shapes_are_refused_and_left_alone() {
    for (text, says) in [
        ("{\"hooks\": {,}", "is not valid JSON"),
        ("[1, 2]", "its top level is a list"),
        ("{\"hooks\": []}", "`hooks` is not an object"),
        ("{\"hooks\": {\"Stop\": {}}}", "`hooks.Stop` is not a list"),
    ] {
        let (_dir, file) = temp_file(Some(text));
        let err = plan_install(
            &install_events(HookHost::ClaudeCode, true),
            &file,
            &command(HookHost::ClaudeCode),
        )
        .unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with(&file.display().to_string()) && message.contains(says),
            "{message}"
        );
        assert_eq!(fs::read_to_string(&file).unwrap(), text);
    }
    let (_dir, file) = temp_file(Some("not json"));
    assert!(plan_uninstall(&file)
        .unwrap_err()
        .to_string()
        .contains("not valid JSON"));
}

#[test]
fn h23_a_symlinked_or_non_regular_settings_file_is_refused() {
    let (dir, file) = temp_file(None);
    let real = dir.path().join("real.json");
    fs::write(&real, "{}").unwrap();
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    symlink(&real, &file).unwrap();
    let err = plan_install(
        &install_events(HookHost::ClaudeCode, true),
        &file,
        &command(HookHost::ClaudeCode),
    )
    .unwrap_err();
    assert!(matches!(err, InstallError::Symlink(_)), "{err}");
    assert!(err.to_string().contains("is a symlink"));
    assert_eq!(fs::read_to_string(&real).unwrap(), "{}");

    let (_dir, file) = temp_file(None);
    fs::create_dir_all(&file).unwrap();
    let err = plan_install(
        &install_events(HookHost::Codex, true),
        &file,
        &command(HookHost::Codex),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("not a regular file (a directory)"),
        "{err}"
    );
}

#[test]
fn h23_the_places_follow_home_and_the_hosts_own_variables() {
    let dirs = HostDirs {
        home: Some("/home/u".into()),
        claude_config_dir: None,
        codex_home: None,
        cwd: "/p".into(),
    };
    assert_eq!(
        dirs.hooks_file(HookHost::ClaudeCode, Scope::User),
        Some("/home/u/.claude/settings.json".into())
    );
    assert_eq!(
        dirs.hooks_file(HookHost::ClaudeCode, Scope::Project),
        Some("/p/.claude/settings.json".into())
    );
    assert_eq!(
        dirs.hooks_file(HookHost::Codex, Scope::User),
        Some("/home/u/.codex/hooks.json".into())
    );
    assert_eq!(
        dirs.hooks_file(HookHost::Codex, Scope::Project),
        Some("/p/.codex/hooks.json".into())
    );
    let dirs = HostDirs::from_lookup(
        &|name| match name {
            "CODEX_HOME" => Some("/ch".into()),
            "CLAUDE_CONFIG_DIR" => Some("/cc".into()),
            _ => None,
        },
        "/p".into(),
    );
    assert_eq!(
        dirs.hooks_file(HookHost::Codex, Scope::User),
        Some("/ch/hooks.json".into())
    );
    assert_eq!(
        dirs.hooks_file(HookHost::ClaudeCode, Scope::User),
        Some("/cc/settings.json".into())
    );
    assert_eq!(
        HostDirs::default().hooks_file(HookHost::Codex, Scope::User),
        None
    );
}

#[test]
fn h33_the_pre_tool_use_hook_is_in_the_set_only_with_the_gate() {
    assert_eq!(
        install_events(HookHost::ClaudeCode, false),
        [
            "SessionStart",
            "UserPromptSubmit",
            "PostToolUse",
            "Stop",
            "SubagentStop",
            "SessionEnd"
        ]
    );
    assert_eq!(install_events(HookHost::ClaudeCode, true), ALL_EVENTS);
    assert_eq!(
        install_events(HookHost::Codex, false),
        [
            "SessionStart",
            "UserPromptSubmit",
            "PostToolUse",
            "Stop",
            "SubagentStop"
        ]
    );
    assert_eq!(
        install_events(HookHost::Codex, true),
        host_events(HookHost::Codex)
    );
}

#[test]
fn h33_the_gate_turned_off_removes_only_our_pre_tool_use_and_on_adds_it_back() {
    let (_dir, file) = temp_file(Some(USER_SETTINGS));
    install(&file, HookHost::ClaudeCode);
    let off = install_events(HookHost::ClaudeCode, false);
    let plan = plan_install(&off, &file, &command(HookHost::ClaudeCode)).unwrap();
    assert_eq!(plan.events, ["PreToolUse"]);
    assert!(
        plan.diff().contains("-        \"matcher\": \"*\",\n"),
        "{}",
        plan.diff()
    );
    apply(&plan).unwrap();
    let doc = parsed(&file);
    let original: Value = serde_json::from_str(USER_SETTINGS).unwrap();
    assert_eq!(
        doc["hooks"]["PreToolUse"], original["hooks"]["PreToolUse"],
        "their PreToolUse hook is kept, ours is gone"
    );
    assert!(is_our_command(
        doc["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
    ));
    // Again with the gate off: nothing changes.
    let again = plan_install(&off, &file, &command(HookHost::ClaudeCode)).unwrap();
    assert!(!again.changes() && again.events.is_empty());
    // The gate on: ours comes back after theirs.
    let plan = install(&file, HookHost::ClaudeCode);
    assert_eq!(plan.events, ["PreToolUse"]);
    let doc = parsed(&file);
    assert_eq!(doc["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
    assert_eq!(doc["hooks"]["PreToolUse"][1]["hooks"][0]["timeout"], 35);
}

#[test]
fn h33_a_new_file_without_the_gate_has_no_pre_tool_use_key() {
    let (_dir, file) = temp_file(None);
    let events = install_events(HookHost::Codex, false);
    let plan = plan_install(&events, &file, &command(HookHost::Codex)).unwrap();
    apply(&plan).unwrap();
    let doc = parsed(&file);
    let keys: Vec<&String> = doc["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(keys, events);
}
