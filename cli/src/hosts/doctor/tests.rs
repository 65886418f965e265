use super::*;
use crate::hosts::install::{apply, hook_command, install_events, plan_install};
use std::fs;

const EVENTS_LOG: &str = r#"{"ts":"2026-12-06T10:00:00Z","host":"claude-code","event":"SessionStart","session":"s1","ms":3,"outcome":"empty"}
{"ts":"2026-12-06T10:00:01Z","host":"codex","event":"SessionStart","session":"x1","ms":4,"outcome":"daemon-down"}
not json at all
{"ts":"2026-12-06T11:00:00Z","host":"claude-code","event":"SessionStart","session":"s2","ms":2,"outcome":"empty"}
{"ts":"2026-12-06T11:00:01Z","host":"claude-code","event":"UserPromptSubmit","session":"s2","ms":5,"outcome":"context"}
{"ts":"2026-12-06T11:00:02Z","host":"claude-code","event":"PostToolUse","session":"s2","ms":7,"outcome":"context"}
{"ts":"2026-12-06T11:00:03Z","host":"claude-code","event":"Stop","session":"s2","ms":240,"outcome":"block"}
{"ts":"2026-12-06T11:00:04Z","host":"pi","event":"Stop","session":"p","ms":1,"outcome":"empty"}
"#;

fn lookup(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }
}

struct Setup {
    _tmp: tempfile::TempDir,
    dirs: HostDirs,
    places: HostPaths,
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let cwd = home.join("proj");
    fs::create_dir_all(&cwd).unwrap();
    Setup {
        dirs: HostDirs {
            home: Some(home.clone()),
            claude_config_dir: None,
            codex_home: None,
            cwd,
        },
        places: HostPaths {
            config_dir: home.join(".config/advisor"),
            state_dir: home.join(".local/state/advisor"),
            runtime_dir: tmp.path().join("run"),
        },
        _tmp: tmp,
    }
}

#[test]
fn h28_the_last_session_per_host_is_counted_from_the_log() {
    let sessions = last_sessions(EVENTS_LOG);
    let claude = &sessions[&HookHost::ClaudeCode];
    assert_eq!(claude.session, "s2");
    assert_eq!(
        (claude.first.as_str(), claude.last.as_str()),
        ("2026-12-06T11:00:00Z", "2026-12-06T11:00:03Z")
    );
    assert_eq!(claude.events.values().sum::<u64>(), 4, "s1 is not counted");
    assert_eq!(claude.events["Stop"], 1);
    assert_eq!(claude.outcomes["context"], 2);
    assert_eq!(claude.outcomes["block"], 1);
    assert_eq!(claude.max_ms, 240);
    let codex = &sessions[&HookHost::Codex];
    assert_eq!(
        (codex.session.as_str(), codex.outcomes["daemon-down"]),
        ("x1", 1)
    );
    assert!(last_sessions("").is_empty());
}

#[test]
fn h28_installed_hooks_a_fired_session_and_a_missing_key_are_reported() {
    let s = setup();
    let bin = s.dirs.home.as_ref().unwrap().join("bin/advisor");
    fs::create_dir_all(bin.parent().unwrap()).unwrap();
    fs::write(&bin, "#!/bin/sh\n").unwrap();
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
    let file = s
        .dirs
        .hooks_file(HookHost::ClaudeCode, Scope::User)
        .unwrap();
    apply(
        &plan_install(
            &install_events(HookHost::ClaudeCode, true),
            &file,
            &hook_command(&bin, HookHost::ClaudeCode),
        )
        .unwrap(),
    )
    .unwrap();
    let log = s.places.hook_events();
    fs::create_dir_all(log.parent().unwrap()).unwrap();
    fs::write(&log, EVENTS_LOG).unwrap();

    let report = diagnose(
        &s.dirs,
        &s.places,
        &lookup(&[("ADVISOR_MODEL", "anthropic/claude-haiku-4-5")]),
    );
    let claude = &report.hosts[0];
    assert_eq!(claude.files[0].events.len(), 7);
    assert_eq!(
        claude.files[0].programs,
        [ProgramReport {
            path: bin.display().to_string(),
            executable: true
        }]
    );
    assert!(!claude.files[1].exists, "no project file");
    assert_eq!(claude.last_session.as_ref().unwrap().session, "s2");
    assert_eq!(
        claude.model.problem.as_deref(),
        Some("ANTHROPIC_API_KEY is not set")
    );
    assert_eq!(report.daemon.state, "absent");

    let text = render_text(&report);
    assert!(
        text.contains(&format!(
            "  user hooks {}: advisor hooks on all 7 events\n",
            file.display()
        )),
        "{text}"
    );
    assert!(text.contains("  last session s2 (2026-12-06T11:00:00Z – 2026-12-06T11:00:03Z): PostToolUse 1, SessionStart 1, Stop 1, UserPromptSubmit 1; outcomes: block 1, context 2, empty 1; slowest answer 240 ms\n"), "{text}");
    assert!(
        text.contains("  model anthropic/claude-haiku-4-5: ANTHROPIC_API_KEY is not set\n"),
        "{text}"
    );
    assert!(
        text.contains("Codex:\n")
            && text.contains("  not installed: run `advisor install codex`\n"),
        "{text}"
    );
    assert!(text.contains("background process: not running"), "{text}");
}

#[test]
fn h29_codex_hooks_that_never_fired_get_the_trust_note() {
    let s = setup();
    let file = s.dirs.hooks_file(HookHost::Codex, Scope::Project).unwrap();
    apply(
        &plan_install(
            &install_events(HookHost::Codex, true),
            &file,
            "/gone/advisor hook --host codex",
        )
        .unwrap(),
    )
    .unwrap();
    let report = diagnose(&s.dirs, &s.places, &lookup(&[("OPENAI_API_KEY", "k")]));
    let codex = &report.hosts[1];
    assert_eq!(codex.files[1].events.len(), 6);
    assert!(!codex.files[1].programs[0].executable);
    assert_eq!(codex.model.role.as_deref(), Some("openai/gpt-5"));
    assert_eq!(codex.model.problem, None);
    let text = render_text(&report);
    assert!(text.contains("which is not an executable file"), "{text}");
    assert!(
        text.contains("  no hook has fired yet\n  Codex runs hooks only once they are trusted"),
        "{text}"
    );
    assert!(
        text.contains("  model openai/gpt-5 (the default with OPENAI_API_KEY set)\n"),
        "{text}"
    );
}

#[test]
fn h28_h33_partial_installs_broken_files_and_a_stray_socket_path_are_named() {
    let s = setup();
    // With the gate on, PreToolUse is one of the events the advisor needs (H33).
    write_config(&s, "advisor:\n  gate: risky\n");
    let file = s
        .dirs
        .hooks_file(HookHost::ClaudeCode, Scope::User)
        .unwrap();
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "advisor hook --host claude-code"}]}]}}"#).unwrap();
    let codex = s.dirs.hooks_file(HookHost::Codex, Scope::User).unwrap();
    fs::create_dir_all(codex.parent().unwrap()).unwrap();
    fs::write(&codex, "{ nope").unwrap();
    fs::create_dir_all(s.places.socket()).unwrap();
    let report = diagnose(&s.dirs, &s.places, &lookup(&[]));
    let text = render_text(&report);
    assert!(text.contains("advisor hooks on 1 events; missing on SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, SubagentStop, SessionEnd"), "{text}");
    assert!(
        text.contains("  the action gate is on (advisor.gate: risky) but no PreToolUse hook"),
        "{text}"
    );
    assert!(
        text.contains("cannot be used:") && text.contains("is not valid JSON"),
        "{text}"
    );
    assert!(
        text.contains("no model: set ANTHROPIC_API_KEY or OPENAI_API_KEY"),
        "{text}"
    );
    assert_eq!(report.daemon.state, "not a socket");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(
        json["hosts"][0]["files"][0]["events"],
        serde_json::json!(["Stop"])
    );
    assert_eq!(json["daemon"]["state"], "not a socket");
}

/// Writes the advisor's user config.yml.
fn write_config(s: &Setup, text: &str) {
    let config = s.places.config_file();
    fs::create_dir_all(config.parent().unwrap()).unwrap();
    fs::write(config, text).unwrap();
}

/// Installs our hooks for `host` on `events` into its user file.
fn install_user(s: &Setup, host: HookHost, events: &[&str]) -> PathBuf {
    let file = s.dirs.hooks_file(host, Scope::User).unwrap();
    let command = format!("/opt/advisor hook --host {}", host.as_str());
    apply(&plan_install(events, &file, &command).unwrap()).unwrap();
    file
}

#[test]
fn h33_with_the_gate_off_a_missing_pre_tool_use_is_not_missing() {
    let s = setup();
    let file = install_user(
        &s,
        HookHost::ClaudeCode,
        &install_events(HookHost::ClaudeCode, false),
    );
    let report = diagnose(&s.dirs, &s.places, &lookup(&[]));
    let claude = &report.hosts[0];
    assert!(claude.files[0].missing_events.is_empty());
    assert_eq!(
        claude.gate,
        GateReport {
            on: false,
            source: None,
            pre_tool_use: false,
            problem: None
        }
    );
    let text = render_text(&report);
    assert!(
        text.contains(&format!(
            "  user hooks {}: advisor hooks on all 6 events (no PreToolUse: the action gate is off)\n",
            file.display()
        )),
        "{text}"
    );
    assert!(!text.contains("action gate is on"), "{text}");
}

#[test]
fn h33_gt10_the_gate_on_without_its_hook_is_a_warning_with_the_fix() {
    let s = setup();
    write_config(&s, "advisor:\n  gate: all\n");
    install_user(&s, HookHost::Codex, &install_events(HookHost::Codex, false));
    let report = diagnose(&s.dirs, &s.places, &lookup(&[]));
    let codex = &report.hosts[1];
    assert_eq!(codex.files[0].missing_events, ["PreToolUse"]);
    let warning = "the action gate is on (advisor.gate: all) but no PreToolUse hook of the \
                   advisor is installed, so it cannot stop a call before it runs: run \
                   `advisor install codex` again";
    assert_eq!(codex.gate.problem.as_deref(), Some(warning));
    assert!(codex.gate.on);
    assert_eq!(
        report.hosts[0].gate.problem, None,
        "Claude Code is not installed"
    );
    assert!(render_text(&report).contains(&format!("  {warning}\n")));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["hosts"][1]["gate"]["on"], true);
    assert_eq!(json["hosts"][1]["gate"]["preToolUse"], false);
    assert_eq!(json["hosts"][1]["gate"]["source"], "advisor.gate: all");
    assert_eq!(json["hosts"][1]["gate"]["problem"], warning);

    // With the hook installed the warning goes.
    install_user(&s, HookHost::Codex, &install_events(HookHost::Codex, true));
    let report = diagnose(&s.dirs, &s.places, &lookup(&[]));
    assert_eq!(report.hosts[1].gate.problem, None);
    assert!(report.hosts[1].gate.pre_tool_use);
}

#[test]
fn h33_a_pre_tool_use_hook_with_the_gate_off_says_it_can_go() {
    let s = setup();
    install_user(
        &s,
        HookHost::ClaudeCode,
        &install_events(HookHost::ClaudeCode, true),
    );
    let text = render_text(&diagnose(&s.dirs, &s.places, &lookup(&[])));
    assert!(
        text.contains(
            "  the action gate is off, so the PreToolUse hook only adds a call per tool use: \
             `advisor install claude-code` again leaves it out\n"
        ),
        "{text}"
    );
}

#[test]
fn h28_a_background_process_that_answers_a_ping_is_running_and_a_dead_socket_is_stale() {
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixListener;
    let s = setup();
    fs::create_dir_all(&s.places.runtime_dir).unwrap();
    let socket = s.places.socket();
    let listener = UnixListener::bind(&socket).unwrap();
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut line = String::new();
        BufReader::new(&stream).read_line(&mut line).unwrap();
        let asked: Request = serde_json::from_str(&line).unwrap();
        assert_eq!(
            asked,
            Request::Ping {
                v: PROTOCOL_VERSION
            }
        );
        (&stream)
            .write_all(b"{\"reply\":\"pong\",\"pid\":4242}\n")
            .unwrap();
    });
    let report = diagnose(&s.dirs, &s.places, &lookup(&[]));
    server.join().unwrap();
    assert_eq!(report.daemon.state, "running (pid 4242)");
    assert!(render_text(&report).contains(&format!(
        "background process: running (pid 4242), socket {}\n",
        socket.display()
    )));
    // The listener is gone; its socket file stays behind.
    let report = diagnose(&s.dirs, &s.places, &lookup(&[]));
    assert_eq!(report.daemon.state, "stale");
    assert!(render_text(&report).contains("a stale socket"));
}
