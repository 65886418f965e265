//! What the advisor knows besides the transcript (P8), through the host handle: the
//! project's instruction files in the system prompt, the date and working directory
//! reminder on the first user message of every request, and the host's own list of files.

use crate::support::runtime as support;

use std::sync::Arc;

use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::scripted::ScriptedModel;
use advisor::model::{ChatMessage, ModelRequest};
use advisor::settings::SyncBacklog;
use advisor::watchdog::{ContextFile, WatchdogConfig};
use support::*;

/// Two reviews of a session working in a repository with an AGENTS.md, a WATCHDOG.md and a
/// user AGENTS.md; `tune` adjusts the configuration. Returns the model's requests.
async fn two_reviews(
    tune: impl FnOnce(&mut advisor::RuntimeConfig),
) -> (Vec<ModelRequest>, std::path::PathBuf, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let repo = home.join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::write(
        repo.join("AGENTS.md"),
        "Never touch the migrations folder.\n",
    )
    .unwrap();
    std::fs::write(repo.join("WATCHDOG.md"), "Watch the lockfile.\n").unwrap();
    std::fs::create_dir_all(home.join("agent")).unwrap();
    std::fs::write(home.join("agent/AGENTS.md"), "Answer in British English.\n").unwrap();
    let model = ScriptedModel::new([]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.workspace_root = repo.clone();
        cfg.watchdog = Some(WatchdogConfig {
            cwd: repo.clone(),
            agent_dir: Some(home.join("agent")),
            home: Some(home.clone()),
            instructions: Default::default(),
        });
        tune(cfg);
    });
    let t = Transcript::new();
    for text in ["first turn", "second turn"] {
        t.push(TranscriptMessage::user(text));
        h.turn_end(&t).await.unwrap();
    }
    h.dispose().await.unwrap();
    (model.requests(), repo, tmp)
}

fn user_text(message: &ChatMessage) -> &str {
    match message {
        ChatMessage::User { text } => text,
        other => panic!("expected a user message, got {other:?}"),
    }
}

#[actix::test]
async fn p8_project_instructions_sit_between_the_built_in_prompt_and_the_watchdog_blocks() {
    let (requests, repo, _tmp) = two_reviews(|_| {}).await;
    assert_eq!(requests.len(), 2);
    let system = &requests[0].system;
    let context = system
        .find("<project-context>\n")
        .expect("a project-context block");
    let watchdog = system
        .find("Watch the lockfile.")
        .expect("the watchdog block");
    let root_line = system
        .find("The workspace root is")
        .expect("the built-in prompt's end");
    assert!(root_line < context && context < watchdog, "{system}");
    let user_file = format!(
        "<file path=\"{}\">\nAnswer in British English.\n</file>\n",
        repo.parent().unwrap().join("agent/AGENTS.md").display()
    );
    let project_file = format!(
        "<file path=\"{}\">\nNever touch the migrations folder.\n</file>\n</project-context>",
        repo.join("AGENTS.md").display()
    );
    let (at_user, at_project) = (
        system.find(&user_file).expect(&user_file),
        system.find(&project_file).expect(&project_file),
    );
    let first_file = context + system[context..].find("<file path=").unwrap();
    assert!(
        first_file == at_user && at_user < at_project,
        "the user's file comes first, as oh-my-pi sends it: {system}"
    );
    assert_eq!(requests[1].system, *system, "byte-stable (M5)");
}

#[actix::test]
async fn p8_date_and_cwd_are_a_reminder_part_of_the_first_user_message_never_stored() {
    let (requests, repo, _tmp) = two_reviews(|_| {}).await;
    let first = user_text(&requests[0].messages[0]);
    // Its own text part before the first user message's text (oh-my-pi's shape), not joined
    // into that text.
    assert!(!first.contains("system-reminder"), "{first}");
    let reminder = requests[0].reminder.clone().unwrap_or_default();
    let today = {
        let out = std::process::Command::new("date")
            .args(["-u", "+%Y-%m-%d"])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    assert!(
        reminder.starts_with("<system-reminder>\n") && reminder.ends_with("</system-reminder>"),
        "{reminder}"
    );
    let update = first;
    assert!(reminder.contains(&today), "{reminder}");
    assert!(
        reminder.contains(&format!("'{}'", repo.display())),
        "{reminder}"
    );
    assert!(update.contains("first turn"), "{update}");
    assert!(
        !requests[0].system.contains(&today),
        "not in the system prompt"
    );
    // The second request: the same first message and reminder (a cached prefix), and no
    // reminder on the new update.
    assert_eq!(requests[1].messages[0], requests[0].messages[0]);
    assert_eq!(requests[1].reminder, requests[0].reminder);
    let last = user_text(requests[1].messages.last().unwrap());
    assert!(
        last.contains("second turn") && !last.contains("system-reminder"),
        "{last}"
    );
}

#[actix::test]
async fn p8_a_hosts_own_list_replaces_discovery() {
    let (requests, _, _tmp) = two_reviews(|cfg| {
        cfg.context_files = Some(Arc::from(vec![ContextFile {
            path: "/host/CLAUDE.md".into(),
            content: "Use the staging database only.".into(),
        }]));
    })
    .await;
    let system = &requests[0].system;
    assert!(
        system.contains("<file path=\"/host/CLAUDE.md\">\nUse the staging database only.\n</file>"),
        "{system}"
    );
    assert!(
        !system.contains("migrations folder"),
        "discovery is replaced"
    );
    assert!(
        system.contains("Watch the lockfile."),
        "the watchdog blocks stay"
    );
}
