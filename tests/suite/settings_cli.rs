//! Settings files and environment through the binary (K1, K2, G1, W1, M1, L2, L5): each
//! test runs `advisor replay` with `--root` on a temporary workspace holding
//! `.omp/config.yml`, and `PI_CODING_AGENT_DIR` set on the child process only, against the
//! in-process OpenAI-compatible server; it checks what the user sees and what the model
//! was sent.

use std::fs;
use std::path::{Path, PathBuf};

use advisor::providers::testing::{sse_event, RecordedRequest, ScriptedResponse, SseServer};
use serde_json::{json, Value};

/// More answers than the example session has reviewed turns (7), so no request is left
/// without one.
const ANSWERS: usize = 12;

fn example_session() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/sessions/median-fix.jsonl")
}

/// An answer with no text and no tool call: the advisor stays silent.
fn silent() -> ScriptedResponse {
    let chunk = |delta: Value, finish: Option<&str>| {
        sse_event(
            None,
            &json!({"id": "gen", "object": "chat.completion.chunk", "model": "x",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string(),
        )
    };
    let usage = sse_event(
        None,
        &json!({"id": "gen", "object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": 50, "completion_tokens": 1, "total_tokens": 51}})
        .to_string(),
    );
    ScriptedResponse::sse(
        &[
            chunk(json!({"role": "assistant", "content": ""}), None),
            chunk(json!({}), Some("stop")),
            usage,
            "data: [DONE]\n\n".to_string(),
        ]
        .concat(),
    )
}

async fn server() -> SseServer {
    SseServer::start((0..ANSWERS).map(|_| silent()))
        .await
        .expect("bind")
}

/// A temporary home holding an agent directory and a workspace root.
struct Workspace {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    agent: PathBuf,
    root: PathBuf,
}

impl Workspace {
    fn new() -> Self {
        let tmp = tempfile::tempdir().expect("a temporary directory");
        let home = tmp.path().join("home");
        let agent = home.join("agent");
        let root = home.join("work");
        fs::create_dir_all(&agent).expect("agent dir");
        fs::create_dir_all(root.join(".omp")).expect("root");
        Self {
            _tmp: tmp,
            home,
            agent,
            root,
        }
    }

    fn write(&self, path: &Path, text: &str) {
        fs::create_dir_all(path.parent().expect("a parent")).expect("dirs");
        fs::write(path, text).expect("write");
    }

    fn project_config(&self, text: &str) {
        self.write(&self.root.join(".omp/config.yml"), text);
    }

    fn agent_config(&self, text: &str) {
        self.write(&self.agent.join("config.yml"), text);
    }

    /// Runs `advisor replay` on the example session with this workspace as `--root` and
    /// agent directory; `env` is added to the child's environment only.
    async fn replay(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut command = tokio::process::Command::new(crate::support::advisor_bin());
        command
            .arg("replay")
            .arg(example_session())
            .arg("--root")
            .arg(&self.root)
            .args(args)
            .env("PI_CODING_AGENT_DIR", &self.agent)
            .env("HOME", &self.home);
        for name in [
            "ADVISOR_MODEL",
            "ADVISOR_NO_REVIEW",
            "ADVISOR_COMPACT_AT",
            "ADVISOR_DEBUG",
        ] {
            command.env_remove(name);
        }
        for (name, value) in env {
            command.env(name, value);
        }
        command.kill_on_drop(true);
        // A wait on a file (a FIFO) fails the test instead of hanging it (K1).
        let out = tokio::time::timeout(std::time::Duration::from_secs(60), command.output())
            .await
            .expect("the advisor finished without waiting on a file")
            .expect("the advisor binary runs");
        Run {
            ok: out.status.success(),
            stdout: String::from_utf8(out.stdout).expect("utf-8 output"),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Workspace {
    /// `--json --model local/x` against `server`, plus `extra`; the replay must succeed.
    async fn replay_with_model(&self, server: &SseServer, extra: &[&str]) -> Run {
        let url = server.base_url();
        let mut args = vec!["--json", "--model", "local/x", "--base-url", &url];
        args.extend_from_slice(extra);
        let run = self.replay(&args, &[]).await;
        assert!(run.ok, "stderr: {}", run.stderr);
        run
    }
}

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Run {
    fn status(&self) -> Value {
        let mut lines = self.json_lines();
        lines.pop().expect("a status line")["status"].take()
    }

    fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
            .collect()
    }

    fn notices(&self) -> Vec<String> {
        self.json_lines()
            .iter()
            .filter_map(|l| l["notice"].as_str().map(str::to_string))
            .collect()
    }
}

fn system_prompt(request: &RecordedRequest) -> String {
    let body = request.json();
    body["messages"][0]["content"]
        .as_str()
        .expect("a system message first")
        .to_string()
}

fn first_request(server: &SseServer) -> RecordedRequest {
    server
        .requests()
        .into_iter()
        .next()
        .expect("the advisor called the model")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k1_m1_model_role_from_the_project_config_is_used() {
    let ws = Workspace::new();
    ws.agent_config("modelRoles:\n  advisor: local/from-agent\n");
    ws.project_config("theme: dark\nmodelRoles:\n  advisor: local/x\n  default: other/model\n");
    let server = server().await;

    let run = ws
        .replay(&["--json", "--base-url", &server.base_url()], &[])
        .await;
    assert!(run.ok, "stderr: {}", run.stderr);
    assert!(
        run.notices().is_empty(),
        "no warnings for the agent's keys: {}",
        run.stdout
    );
    assert_eq!(first_request(&server).json()["model"], "x");
    let status = run.status();
    assert_eq!(status["failures"], 0, "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn m1_model_flag_and_advisor_model_win_over_the_files() {
    let ws = Workspace::new();
    ws.project_config("modelRoles:\n  advisor: local/from-file\n");
    let server = server().await;
    let run = ws
        .replay(
            &["--json", "--base-url", &server.base_url()],
            &[("ADVISOR_MODEL", "local/from-env")],
        )
        .await;
    assert!(run.ok, "stderr: {}", run.stderr);
    assert_eq!(first_request(&server).json()["model"], "from-env");

    let server = self::server().await;
    let run = ws
        .replay(
            &[
                "--json",
                "--base-url",
                &server.base_url(),
                "--model",
                "local/from-flag",
            ],
            &[("ADVISOR_MODEL", "local/from-env")],
        )
        .await;
    assert!(run.ok, "stderr: {}", run.stderr);
    assert_eq!(first_request(&server).json()["model"], "from-flag");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k1_l5_invalid_value_is_one_line_naming_the_key_and_exit_1() {
    let ws = Workspace::new();
    ws.project_config("modelRoles:\n  advisor: local/x\nadvisor:\n  policy: loudly\n");
    let server = server().await;
    let run = ws.replay(&["--base-url", &server.base_url()], &[]).await;
    assert!(!run.ok);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    let config = ws.root.join(".omp/config.yml");
    assert_eq!(
        run.stderr.trim_end(),
        format!(
            "advisor: invalid value `loudly` for advisor.policy in {}: allowed values are \
             defer, interrupt, reconfirm",
            config.display()
        )
    );
    assert_eq!(server.request_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k1_l5_a_config_that_is_not_yaml_is_one_line_naming_the_file() {
    let ws = Workspace::new();
    ws.agent_config("advisor: [enabled\n");
    let run = ws.replay(&["--model", "local/x"], &[]).await;
    assert!(!run.ok);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    let config = ws.agent.join("config.yml");
    assert!(
        run.stderr.starts_with(&format!(
            "advisor: {} is not a valid settings file",
            config.display()
        )),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k1_unknown_key_is_a_warning_and_the_replay_still_runs() {
    let ws = Workspace::new();
    ws.project_config("modelRoles:\n  advisor: local/x\nadvisor:\n  polcy: reconfirm\n");
    let config = ws.root.join(".omp/config.yml");
    let expected = format!(
        "advisor: {}: unknown key `advisor.polcy` (ignored; did you mean `advisor.policy`?)",
        config.display()
    );

    let server = server().await;
    let run = ws.replay(&["--base-url", &server.base_url()], &[]).await;
    assert!(run.ok, "stderr: {}", run.stderr);
    assert!(run.stderr.lines().any(|l| l == expected), "{}", run.stderr);
    assert!(run.stdout.contains("replayed 7 turns"), "{}", run.stdout);
    assert!(
        run.stdout.contains("policy: defer"),
        "the misspelt key changed nothing (the default stays): {}",
        run.stdout
    );

    let server = self::server().await;
    let run = ws
        .replay(&["--json", "--base-url", &server.base_url()], &[])
        .await;
    assert!(run.ok, "stderr: {}", run.stderr);
    assert_eq!(run.notices(), [expected]);
    assert!(run.json_lines().last().expect("status")["status"].is_object());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g1_prompt_override_in_the_agent_dir_reaches_the_system_prompt() {
    let ws = Workspace::new();
    ws.write(
        &ws.agent.join("system-prompts/advisor.md"),
        "You are the house reviewer. Flag every unchecked index.\n",
    );
    let server = server().await;
    ws.replay_with_model(&server, &[]).await;
    let prompt = system_prompt(&first_request(&server));
    assert!(
        prompt.starts_with("You are the house reviewer. Flag every unchecked index.\n"),
        "{prompt}"
    );
    let builtin = include_str!("../../config/advisor-prompt.md");
    let first_line = builtin.lines().next().expect("a built-in prompt");
    assert!(
        !prompt.contains(first_line),
        "the override replaces the built-in prompt"
    );
    assert!(
        prompt.contains(&ws.root.display().to_string()),
        "the root is still named"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn w1_w5_watchdog_in_the_root_reaches_the_system_prompt_unless_no_watchdog() {
    let ws = Workspace::new();
    ws.write(
        &ws.root.join("WATCHDOG.md"),
        "Never let a panic reach main.",
    );
    ws.write(&ws.agent.join("WATCHDOG.md"), "Prefer small diffs.");
    let server = server().await;
    ws.replay_with_model(&server, &[]).await;
    let prompt = system_prompt(&first_request(&server));
    let user = "Especially pay attention to:\n<attention>\nPrefer small diffs.\n</attention>";
    let project =
        "Especially pay attention to:\n<attention>\nNever let a panic reach main.\n</attention>";
    assert!(
        prompt.contains(&format!("{user}\n\n{project}")),
        "user file first, then the root's (W4): {prompt}"
    );

    let server = self::server().await;
    ws.replay_with_model(&server, &["--no-watchdog"]).await;
    let prompt = system_prompt(&first_request(&server));
    assert!(!prompt.contains("<attention>"), "{prompt}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k2_disabled_in_the_files_stops_with_one_line_unless_model_is_given() {
    let ws = Workspace::new();
    ws.agent_config("modelRoles:\n  advisor: local/x\nadvisor:\n  enabled: false\n");
    let server = server().await;
    let run = ws.replay(&["--base-url", &server.base_url()], &[]).await;
    assert!(!run.ok);
    assert!(run.stdout.is_empty());
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("disabled")
            && run
                .stderr
                .contains(&ws.agent.join("config.yml").display().to_string())
            && run.stderr.contains("--model"),
        "{}",
        run.stderr
    );
    assert_eq!(server.request_count(), 0);

    // The project file can turn it back on.
    ws.project_config("advisor:\n  enabled: true\n");
    let run = ws
        .replay(&["--json", "--base-url", &server.base_url()], &[])
        .await;
    assert!(run.ok, "stderr: {}", run.stderr);
    assert!(server.request_count() > 0);

    // --model asks for the run explicitly.
    fs::remove_file(ws.root.join(".omp/config.yml")).expect("remove");
    let server = self::server().await;
    ws.replay_with_model(&server, &[]).await;
    assert!(server.request_count() > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k1_advisor_no_review_replays_without_model_calls() {
    let ws = Workspace::new();
    ws.project_config("modelRoles:\n  advisor: local/x\n");
    let server = server().await;
    let run = ws
        .replay(
            &["--json", "--base-url", &server.base_url()],
            &[("ADVISOR_NO_REVIEW", "1")],
        )
        .await;
    assert!(run.ok, "stderr: {}", run.stderr);
    assert_eq!(server.request_count(), 0);
    let status = run.status();
    assert_eq!(status["agent"]["backlog"], 0, "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k1_advisor_debug_traces_to_stderr_and_keeps_stdout_clean() {
    let ws = Workspace::new();
    ws.project_config("modelRoles:\n  advisor: local/x\n");
    let server = server().await;
    let args = ["--json", "--base-url", &server.base_url()];
    let quiet = ws.replay(&args, &[]).await;
    assert!(quiet.ok, "stderr: {}", quiet.stderr);
    assert!(!quiet.stderr.contains("DEBUG"), "{}", quiet.stderr);

    let server = self::server().await;
    let url = server.base_url();
    let run = ws
        .replay(&["--json", "--base-url", &url], &[("ADVISOR_DEBUG", "1")])
        .await;
    assert!(run.ok, "stderr: {}", run.stderr);
    assert!(
        run.stderr.contains("DEBUG") && run.stderr.contains("settings file read"),
        "{}",
        run.stderr
    );
    // Every line of standard output is still one JSON object.
    assert!(run.json_lines().last().expect("status")["status"].is_object());
}

// ---------------------------------------------------------------------------------------
// K1, M1, G7: files that are too large, too deep, or not files at all
// ---------------------------------------------------------------------------------------

fn mkfifo(path: &Path) {
    fs::create_dir_all(path.parent().expect("a parent")).expect("dirs");
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k1_a_fifo_as_either_config_is_one_error_line_not_a_wait() {
    for agent_side in [true, false] {
        let ws = Workspace::new();
        let config = if agent_side {
            ws.agent.join("config.yml")
        } else {
            ws.root.join(".omp/config.yml")
        };
        mkfifo(&config);
        let run = ws.replay(&["--model", "local/x"], &[]).await;
        assert!(!run.ok);
        assert!(run.stdout.is_empty(), "{}", run.stdout);
        assert_eq!(
            run.stderr.trim_end(),
            format!(
                "advisor: cannot read {}: not a regular file (a FIFO)",
                config.display()
            )
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_fifo_audit_path_is_one_notice_and_the_replay_goes_on() {
    let ws = Workspace::new();
    let audit = ws.root.join("audit.jsonl");
    mkfifo(&audit);
    let server = server().await;
    let audit_arg = audit.display().to_string();
    let run = ws
        .replay_with_model(&server, &["--audit", &audit_arg])
        .await;
    let notices: Vec<String> = run
        .notices()
        .into_iter()
        .filter(|n| n.contains("audit log"))
        .collect();
    assert_eq!(
        notices,
        [format!(
            "advisor: could not write the audit log ({}: not a regular file (a FIFO)); \
             reviews go on",
            audit.display()
        )]
    );
    assert!(run.status().is_object());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k1_a_config_over_1_mib_is_one_error_line_naming_the_file() {
    let ws = Workspace::new();
    let line = "# padding, padding, padding, padding, padding, padding, padding\n";
    ws.project_config(&format!(
        "modelRoles:\n  advisor: local/x\n{}",
        line.repeat((1 << 20) / line.len() + 1)
    ));
    let run = ws.replay(&[], &[]).await;
    assert!(!run.ok);
    assert_eq!(
        run.stderr.trim_end(),
        format!(
            "advisor: {} is larger than the 1 MiB limit for settings files",
            ws.root.join(".omp/config.yml").display()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k1_a_deeply_nested_config_is_one_error_line_naming_the_file() {
    let ws = Workspace::new();
    ws.agent_config(&format!("advisor: {}", "[".repeat(100_000)));
    let run = ws.replay(&["--model", "local/x"], &[]).await;
    assert!(!run.ok);
    assert_eq!(
        run.stderr.trim_end(),
        format!(
            "advisor: {} is not a valid settings file: nested more than 64 levels deep \
             (line 1)",
            ws.agent.join("config.yml").display()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn m1_a_fifo_as_either_modes_json_is_one_error_line_not_a_wait() {
    for project_side in [true, false] {
        let ws = Workspace::new();
        let modes = if project_side {
            ws.root.join(".pi/modes.json")
        } else {
            ws.agent.join("modes.json")
        };
        mkfifo(&modes);
        // No --model and no modelRoles.advisor: the role is looked up in modes.json (M1).
        let run = ws.replay(&[], &[]).await;
        assert!(!run.ok);
        assert!(run.stdout.is_empty(), "{}", run.stdout);
        assert_eq!(
            run.stderr.trim_end(),
            format!("advisor: {}: not a regular file (a FIFO)", modes.display())
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn m1_a_modes_json_over_1_mib_is_one_error_line_naming_the_file() {
    let ws = Workspace::new();
    let modes = ws.root.join(".pi/modes.json");
    fs::create_dir_all(modes.parent().expect("a parent")).expect("dirs");
    // Sparse: four gigabytes, of which the advisor may read no more than the cap.
    fs::File::create(&modes)
        .and_then(|file| file.set_len(4 << 30))
        .expect("a sparse file");
    let run = ws.replay(&[], &[]).await;
    assert!(!run.ok);
    assert_eq!(
        run.stderr.trim_end(),
        format!(
            "advisor: {}: larger than the 1 MiB limit for modes.json",
            modes.display()
        )
    );
}
