//! The roster at runtime (SPEC §15, RO11–RO13, RO19–RO21, A6): a session runs one advisor
//! per roster entry, each its own reviewer; without a roster, today's unnamed advisor.

use crate::support::runtime::*;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::thread::ThreadId;

use advisor::domain::host::{HostEvent, RewriteKind};
use advisor::domain::transcript::{
    AssistantBlock, AssistantMessage, Transcript, TranscriptMessage,
};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::{
    ModelClient, ModelError, ModelFuture, ModelInfo, ModelRequest, ThinkingLevel,
};
use advisor::roster::{
    ModelChoice, PolicyChoice, Roster, RosterAdvisor, RosterModels, RosterReload, RosterSettings,
    RosterSetup, Sourced,
};
use advisor::settings::SyncBacklog;
use advisor::watchdog::WatchdogConfig;
use advisor::{AdvisorState, AskError, HandleError, RuntimeConfig};
use parking_lot::Mutex;

/// Each entry's client by slug; an entry without one has no model.
#[derive(Clone, Default)]
struct Models(BTreeMap<String, Arc<dyn ModelClient>>);

impl Models {
    fn with(mut self, slug: &str, model: impl ModelClient + 'static) -> Self {
        self.0.insert(slug.to_string(), Arc::new(model));
        self
    }
}

impl RosterModels for Models {
    fn build(&self, advisor: &RosterAdvisor) -> Result<Arc<dyn ModelClient>, String> {
        self.0
            .get(&advisor.slug)
            .cloned()
            .ok_or_else(|| format!("no key for {}", advisor.slug))
    }
}

/// A resolved entry named `name`, every field at its default.
fn entry(name: &str) -> RosterAdvisor {
    RosterAdvisor::new(
        name,
        ModelChoice::resolved("scripted", "test", ThinkingLevel::default()),
    )
}

fn roster_of(entries: Vec<RosterAdvisor>, shared: Option<&str>) -> Roster {
    Roster::in_code(entries, shared)
}

/// A session whose roster is `roster` with clients `models`; no session model.
fn roster_config(roster: Roster, models: Models, sync: SyncBacklog) -> RuntimeConfig {
    let placeholder: Arc<dyn ModelClient> = Arc::new(ScriptedModel::new([]));
    config(placeholder, sync, |cfg| {
        cfg.model = None;
        cfg.roster = Some(RosterSetup {
            roster,
            models: Arc::new(models),
            reload: None,
        });
    })
}

fn two_advisors(arch: &ScriptedModel, sec: &ScriptedModel) -> RuntimeConfig {
    let models = Models::default()
        .with("architecture", arch.clone())
        .with("security", sec.clone());
    let mut security = entry("Security");
    security.instructions = Sourced::default_value(Some("Look for injections.".into()));
    let roster = roster_of(vec![entry("Architecture"), security], Some("Be brief."));
    roster_config(roster, models, SyncBacklog::Below(1))
}

fn contents(advice: &advisor::StepAdvice) -> String {
    advice
        .deliveries()
        .map(|d| d.content.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

fn notices(events: Vec<HostEvent>) -> Vec<(String, Option<String>)> {
    events
        .into_iter()
        .filter_map(|e| match e {
            HostEvent::Notice { text, advisor } => Some((text, advisor)),
            _ => None,
        })
        .collect()
}

#[actix::test]
async fn ro12_without_a_roster_the_unnamed_advisor_reviews_and_its_advice_has_no_name() {
    let model = ScriptedModel::new([ScriptedReply::advise("1", "Check the index.", Some("nit"))]);
    let (h, _events) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("add a column")]);
    h.turn_end(&t).await.unwrap();
    let advice = contents(&h.step_boundary().await.unwrap());
    assert!(advice.contains("Check the index."), "{advice}");
    assert!(!advice.contains("advisor="), "{advice}");
    let status = h.status().await.unwrap();
    assert!(status.advisors.is_empty());
    assert_eq!(status.agent.reviews, 1);
    assert!(!status.render().contains("advisors:"));
    assert_eq!(
        h.command("/advisor off Security").await.unwrap(),
        "advisor: no advisor named \"Security\"; this session has no roster, only its one unnamed advisor"
    );
}

#[actix::test]
async fn ro13_each_advisor_reviews_every_turn_with_its_own_context_and_the_same_delta() {
    let arch = ScriptedModel::new([
        ScriptedReply::advise("a1", "Split the module.", Some("nit")),
        ScriptedReply::text(""),
    ]);
    let sec = ScriptedModel::new([
        ScriptedReply::advise("s1", "Escape the query.", Some("nit")),
        ScriptedReply::text(""),
    ]);
    let (h, _events) = start(two_advisors(&arch, &sec));
    let t = Transcript::from_messages([TranscriptMessage::user("write the search endpoint")]);
    h.turn_end(&t).await.unwrap();
    let advice = contents(&h.step_boundary().await.unwrap());
    assert!(
        advice.contains(r#"advisor="Architecture""#) && advice.contains("Split the module."),
        "{advice}"
    );
    assert!(
        advice.contains(r#"advisor="Security""#) && advice.contains("Escape the query."),
        "{advice}"
    );

    t.push(TranscriptMessage::user("now add paging"));
    h.turn_end(&t).await.unwrap();
    let (a, s) = (arch.requests(), sec.requests());
    assert_eq!(a.len(), 2, "one call a review");
    assert_eq!(s.len(), 2);
    // The same delta for both.
    assert_eq!(last_user_text(&a[0]), last_user_text(&s[0]));
    assert_eq!(last_user_text(&a[1]), last_user_text(&s[1]));
    assert!(last_user_text(&a[1]).contains("now add paging"));
    // Each its own context: its own advice is in it, the other's never.
    let arch_second = format!("{:?}", a[1].messages);
    assert!(arch_second.contains("Split the module."));
    assert!(!arch_second.contains("Escape the query."));
    let sec_second = format!("{:?}", s[1].messages);
    assert!(sec_second.contains("Escape the query."));
    assert!(!sec_second.contains("Split the module."));
    let status = h.status().await.unwrap();
    let reviews: Vec<u64> = status.advisors.iter().map(|a| a.agent.reviews).collect();
    assert_eq!(reviews, [2, 2]);
    // D10 per advisor, from the router: each delivered its one nit.
    let delivered: Vec<u64> = status
        .advisors
        .iter()
        .map(|a| a.deliveries.delivered())
        .collect();
    assert_eq!(delivered, [1, 1]);
    assert_eq!(status.agent.reviews, 4, "the session total");
}

#[actix::test]
async fn ro13_one_failing_advisor_leaves_the_other_reviewing() {
    let fail = || {
        ScriptedReply::Fail(ModelError::Permanent {
            message: "invalid api key".into(),
        })
    };
    let arch = ScriptedModel::new([fail(), fail(), fail()]);
    let sec = ScriptedModel::new([
        ScriptedReply::text(""),
        ScriptedReply::advise("s1", "Still watching.", Some("nit")),
    ]);
    let (h, mut events) = start(two_advisors(&arch, &sec));
    let t = Transcript::from_messages([TranscriptMessage::user("turn one")]);
    h.turn_end(&t).await.unwrap();
    t.push(TranscriptMessage::user("turn two"));
    h.turn_end(&t).await.unwrap();
    let advice = contents(&h.step_boundary().await.unwrap());
    assert!(advice.contains(r#"advisor="Security""#) && advice.contains("Still watching."));
    let status = h.status().await.unwrap();
    let arch_status = &status.advisors[0];
    assert_eq!(arch_status.state, AdvisorState::Failing, "{arch_status:?}");
    assert_eq!(status.advisors[1].state, AdvisorState::Running);
    assert_eq!(status.advisors[1].agent.reviews, 2);
    let told = notices(drain(&mut events));
    let about_arch: Vec<_> = told
        .iter()
        .filter(|(_, who)| who.as_deref() == Some("Architecture"))
        .collect();
    assert!(
        about_arch
            .iter()
            .any(|(text, _)| text.starts_with("advisor Architecture: paused")),
        "{told:?}"
    );
    assert!(told
        .iter()
        .all(|(_, who)| who.as_deref() != Some("Security")));
}

#[actix::test]
async fn ro11_the_system_prompt_is_builtin_then_watchdog_then_shared_then_own_instructions() {
    let (dir, repo) = git_repo();
    fs::write(repo.join("WATCHDOG.md"), "Never touch the vendored SDK.").unwrap();
    let arch = ScriptedModel::new([]);
    let sec = ScriptedModel::new([]);
    let mut cfg = two_advisors(&arch, &sec);
    cfg.watchdog = Some(WatchdogConfig {
        cwd: repo.clone(),
        agent_dir: Some(dir.path().join("agent")),
        home: Some(dir.path().to_path_buf()),
        instructions: Default::default(),
    });
    let (h, _events) = start(cfg);
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    let system = &sec.requests()[0].system;
    let at = |text: &str| {
        system
            .find(text)
            .unwrap_or_else(|| panic!("{text} missing from {system}"))
    };
    assert_eq!(at("You are"), 0, "the built-in prompt first: {system}");
    assert!(at("Never touch the vendored SDK.") < at("Be brief."));
    assert!(
        system.ends_with("Be brief.\n\nLook for injections."),
        "{system}"
    );
    let arch_system = &arch.requests()[0].system;
    assert!(arch_system.ends_with("\n\nBe brief."), "{arch_system}");
    assert!(arch_system.contains("Never touch the vendored SDK."));
    assert!(!arch_system.contains("Look for injections."));
}

#[actix::test]
async fn ro13_each_advisor_keeps_its_own_transcript_file_beside_the_unnamed_advisors() {
    let dir = tempfile::tempdir().unwrap();
    let session_dir = dir.path().join("sess");
    fs::create_dir_all(&session_dir).unwrap();
    let arch = ScriptedModel::new([]);
    let sec = ScriptedModel::new([]);
    let mut cfg = two_advisors(&arch, &sec);
    cfg.audit_path = Some(session_dir.join("__advisor.jsonl"));
    let (h, _events) = start(cfg);
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    h.dispose().await.unwrap();
    let mut files: Vec<String> = fs::read_dir(&session_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        ["__advisor.architecture.jsonl", "__advisor.security.jsonl"]
    );
    for file in files {
        let text = fs::read_to_string(session_dir.join(file)).unwrap();
        assert!(text.contains("### Session update"), "{text}");
    }
}

#[actix::test]
async fn ro19_off_name_stops_that_advisors_model_calls_and_status_shows_a_line_per_advisor() {
    let arch = ScriptedModel::new([]);
    let sec = ScriptedModel::new([]);
    let (h, _events) = start(two_advisors(&arch, &sec));
    let t = Transcript::from_messages([TranscriptMessage::user("turn one")]);
    h.turn_end(&t).await.unwrap();
    assert_eq!(
        h.command("/advisor off security").await.unwrap(),
        "advisor Security: off"
    );
    assert_eq!(
        h.command("/advisor off Nobody").await.unwrap(),
        "advisor: no advisor named \"Nobody\"; the advisors are: Architecture, Security"
    );
    t.push(TranscriptMessage::user("turn two"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(
        sec.request_count(),
        1,
        "no call after /advisor off Security"
    );
    assert_eq!(arch.request_count(), 2);
    let status = h.status().await.unwrap();
    assert_eq!(status.advisors[1].state, AdvisorState::Paused);
    let text = h.command("/advisor status").await.unwrap();
    assert!(text.contains("advisors:\n"), "{text}");
    assert!(
        text.contains("  Architecture: scripted/test, running, context "),
        "{text}"
    );
    assert!(
        text.contains("  Security: scripted/test, paused (paused by /advisor off), context "),
        "{text}"
    );
    assert!(text.contains("session total: input "), "{text}");

    assert_eq!(
        h.command("/advisor on Security").await.unwrap(),
        "advisor Security: on"
    );
    t.push(TranscriptMessage::user("turn three"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(sec.request_count(), 2);
    let resumed = last_user_text(&sec.requests()[1]);
    assert!(
        resumed.contains("turn three") && !resumed.contains("turn two"),
        "{resumed}"
    );
    let dump = h.command("/advisor dump Security").await.unwrap();
    assert!(dump.starts_with("── Security ──\n"), "{dump}");
    assert!(!dump.contains("── Architecture ──"));
}

#[actix::test]
async fn ro20_an_ask_goes_to_the_named_advisor_else_the_first_enabled_entry() {
    let arch = ScriptedModel::new([ScriptedReply::text("Architecture answers.")]);
    let sec = ScriptedModel::new([ScriptedReply::text("Security answers.")]);
    let models = Models::default()
        .with("architecture", arch.clone())
        .with("security", sec.clone());
    let mut off = entry("Off Duty");
    off.enabled = Sourced::default_value(false);
    let roster = roster_of(vec![off, entry("Architecture"), entry("Security")], None);
    let mut cfg = roster_config(roster, models, SyncBacklog::Below(1));
    cfg.settings.consult = true;
    let (h, _events) = start(cfg);
    assert_eq!(
        h.ask_advisor("is this safe?", Some("security"))
            .await
            .unwrap(),
        "Security answers."
    );
    assert_eq!(h.ask("and this?").await.unwrap(), "Architecture answers.");
    assert_eq!(
        h.ask_advisor("who?", Some("Nobody")).await,
        Err(HandleError::Ask(AskError::UnknownAdvisor("Nobody".into())))
    );
    assert_eq!(
        h.ask_advisor("who?", Some("off duty")).await,
        Err(HandleError::Ask(AskError::MemberNotRunning(
            "Off Duty".into()
        )))
    );
}

/// Records the thread every call is made on.
#[derive(Clone)]
struct ThreadProbe {
    script: ScriptedModel,
    seen: Arc<Mutex<Vec<ThreadId>>>,
}

impl ModelClient for ThreadProbe {
    fn complete(&self, request: ModelRequest) -> ModelFuture {
        self.seen.lock().push(std::thread::current().id());
        self.script.complete(request)
    }

    fn info(&self) -> ModelInfo {
        self.script.info()
    }
}

#[actix::test]
async fn a6_ro24_three_advisors_run_on_the_sessions_arbiter_and_start_no_thread() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let probe = || ThreadProbe {
        script: ScriptedModel::new([]),
        seen: Arc::clone(&seen),
    };
    let models = Models::default()
        .with("a", probe())
        .with("b", probe())
        .with("c", probe());
    let roster = roster_of(vec![entry("A"), entry("B"), entry("C")], None);
    let (h, _events) = start(roster_config(roster, models, SyncBacklog::Below(1)));
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    let seen = seen.lock().clone();
    assert_eq!(seen.len(), 3, "each advisor reviewed");
    let here = std::thread::current().id();
    assert!(
        seen.iter().all(|t| *t == here),
        "every advisor runs on the session's arbiter (the test's thread)"
    );
}

/// Writes the roster file of `repo` with one entry per name.
fn write_roster(repo: &Path, names: &[&str]) {
    let mut text = String::from("advisors:\n");
    for name in names {
        text.push_str(&format!("  - name: {name}\n    model: openai/gpt-5\n"));
    }
    // Written in place: a check that runs meanwhile may see the old file or half the new
    // one, and the check the next turn end asks for sees the whole.
    fs::write(repo.join("WATCHDOG.yml"), text).unwrap();
}

/// A temporary directory holding a repository `repo` (its `.git` marks the project root
/// where roster files are found); the directory also serves as home and agent directory.
fn git_repo() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    fs::create_dir_all(repo.join(".git")).unwrap();
    (dir, repo)
}

/// Writes a roster of one entry, Architecture, with `instructions`.
fn write_architecture(repo: &Path, instructions: &str) {
    let text = format!(
        "advisors:\n  - name: Architecture\n    model: openai/gpt-5\n    instructions: {instructions}\n"
    );
    fs::write(repo.join("WATCHDOG.yml"), text).unwrap();
}

/// A session on the roster files of `repo` (under `dir`, which also holds the agent
/// directory and home), checked again at turn ends (RO21).
fn reloading(dir: &Path, repo: &Path, models: Models) -> RuntimeConfig {
    let watchdog = WatchdogConfig {
        cwd: repo.to_path_buf(),
        agent_dir: Some(dir.join("agent")),
        home: Some(dir.to_path_buf()),
        instructions: Default::default(),
    };
    let settings = RosterSettings::default();
    let catalog = Arc::new(advisor::providers::Catalog::builtin().unwrap());
    let roster = advisor::roster::load(&watchdog, &settings, &catalog, None);
    assert!(!roster.is_empty(), "{:?}", roster.warnings);
    let mut cfg = roster_config(roster, models, SyncBacklog::Below(1));
    if let Some(setup) = cfg.roster.as_mut() {
        setup.reload = Some(RosterReload {
            watchdog,
            settings,
            catalog,
            cache: None,
        });
    }
    cfg
}

/// Asks for the status until it lists `n` advisors: the check runs on the blocking pool,
/// which a loaded machine may take a while to run; bounded to a minute.
async fn until_advisors(h: &advisor::AdvisorHandle, n: usize) {
    let listed = async {
        while h.status().await.unwrap().advisors.len() != n {
            tokio::task::yield_now().await;
        }
    };
    if tokio::time::timeout(std::time::Duration::from_secs(60), listed)
        .await
        .is_err()
    {
        let status = h.status().await.unwrap();
        let names: Vec<_> = status
            .advisors
            .iter()
            .map(|a| (&a.slug, &a.state))
            .collect();
        panic!("the roster never had {n} advisors: {names:?}");
    }
}

#[actix::test]
async fn ro21_an_added_entry_starts_at_the_transcripts_end_and_a_removed_one_stops() {
    let (dir, repo) = git_repo();
    write_roster(&repo, &["Architecture"]);
    let arch = ScriptedModel::new([]);
    let sec = ScriptedModel::new([]);
    let models = Models::default()
        .with("architecture", arch.clone())
        .with("security", sec.clone());
    let (h, _events) = start(reloading(dir.path(), &repo, models));
    let t = Transcript::from_messages([TranscriptMessage::user("turn one")]);
    h.turn_end(&t).await.unwrap();
    write_roster(&repo, &["Architecture", "Security"]);
    t.push(TranscriptMessage::user("turn two"));
    h.turn_end(&t).await.unwrap();
    until_advisors(&h, 2).await;
    t.push(TranscriptMessage::user("turn three"));
    h.turn_end(&t).await.unwrap();
    // X4: it starts at the transcript's end as it stood when it was added (the check may
    // end before or after turn two's end), never replaying the history before it.
    let reviewed: String = sec.requests().iter().map(last_user_text).collect();
    assert!(reviewed.contains("turn three"), "{reviewed}");
    assert!(!reviewed.contains("turn one"), "{reviewed}");

    write_roster(&repo, &["Security"]);
    t.push(TranscriptMessage::user("turn four"));
    h.turn_end(&t).await.unwrap();
    until_advisors(&h, 1).await;
    let calls = arch.request_count();
    t.push(TranscriptMessage::user("turn five"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(
        arch.request_count(),
        calls,
        "a removed advisor reviews no more"
    );
    assert!(last_user_text(sec.requests().last().unwrap()).contains("turn five"));
    let status = h.status().await.unwrap();
    assert_eq!(status.advisors[0].name, "Security");
}

#[actix::test]
async fn ro21_w8_a_roster_file_written_after_the_session_opened_starts_its_advisors() {
    let (dir, repo) = git_repo();
    let watchdog = WatchdogConfig {
        cwd: repo.clone(),
        agent_dir: Some(dir.path().join("agent")),
        home: Some(dir.path().to_path_buf()),
        instructions: Default::default(),
    };
    let catalog = Arc::new(advisor::providers::Catalog::builtin().unwrap());
    let arch = ScriptedModel::new([]);
    let models = Models::default().with("architecture", arch.clone());
    // As the hosts discover it: no roster file yet, so an empty roster that is watched.
    let setup = RosterSetup::discover(
        watchdog,
        RosterSettings::default(),
        catalog,
        None,
        Arc::new(models),
    );
    assert!(setup.roster.is_empty());
    let unnamed = ScriptedModel::new([]);
    let cfg = config(Arc::new(unnamed.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.roster = Some(setup);
    });
    let (h, _events) = start(cfg);
    let t = Transcript::from_messages([TranscriptMessage::user("turn one")]);
    h.turn_end(&t).await.unwrap();
    assert_eq!(
        unnamed.request_count(),
        1,
        "RO12: the unnamed advisor reviews"
    );
    assert!(h.status().await.unwrap().advisors.is_empty());
    write_roster(&repo, &["Architecture"]);
    t.push(TranscriptMessage::user("turn two"));
    h.turn_end(&t).await.unwrap();
    until_advisors(&h, 1).await;
    let unnamed_calls = unnamed.request_count();
    t.push(TranscriptMessage::user("turn three"));
    h.turn_end(&t).await.unwrap();
    let reviewed: String = arch.requests().iter().map(last_user_text).collect();
    assert!(reviewed.contains("turn three"), "{reviewed}");
    assert!(!reviewed.contains("turn one"), "X4: {reviewed}");
    assert_eq!(
        unnamed.request_count(),
        unnamed_calls,
        "the unnamed advisor stops once the roster has an entry (RO12)"
    );
}

#[actix::test]
async fn ro21_a_changed_entry_is_rebuilt_before_its_next_review_which_covers_that_turn() {
    let (dir, repo) = git_repo();
    let write = |instructions: &str| write_architecture(&repo, instructions);
    write("Old rule.");
    let arch = ScriptedModel::new([]);
    let models = Models::default().with("architecture", arch.clone());
    let (h, _events) = start(reloading(dir.path(), &repo, models));
    let t = Transcript::from_messages([TranscriptMessage::user("turn 0")]);
    h.turn_end(&t).await.unwrap();
    assert!(arch.requests()[0].system.ends_with("Old rule."));
    // The longer text changes the file's size, so the check sees it at once.
    write("A much newer rule.");
    // The check runs on the blocking pool; each turn end starts one, or asks for one more
    // while one runs. Bounded to a minute of turns on a loaded machine.
    let rebuilt_rule = || {
        let last = arch.requests().last().cloned();
        last.is_some_and(|r| r.system.ends_with("A much newer rule."))
    };
    let turns = async {
        let mut turn = 1;
        while !rebuilt_rule() {
            t.push(TranscriptMessage::user(format!("turn {turn}")));
            h.turn_end(&t).await.unwrap();
            turn += 1;
            h.status().await.unwrap();
        }
        turn
    };
    let turn = tokio::time::timeout(std::time::Duration::from_secs(60), turns)
        .await
        .expect("the changed entry is rebuilt");
    let rebuilt = arch.requests().last().unwrap().clone();
    let delta = last_user_text(&rebuilt);
    assert!(delta.contains(&format!("turn {}", turn - 1)), "{delta}");
    assert!(!delta.contains("turn 0"), "{delta}");
    assert_eq!(rebuilt.messages.len(), 1, "a fresh context");
}

#[actix::test]
async fn r1_ro21_an_entry_rebuilt_after_a_compaction_reviews_the_whole_transcript() {
    let (dir, repo) = git_repo();
    let write = |instructions: &str| write_architecture(&repo, instructions);
    write("Old rule.");
    let arch = ScriptedModel::new([]);
    let models = Models::default().with("architecture", arch.clone());
    let (h, _events) = start(reloading(dir.path(), &repo, models));
    let t = Transcript::from_messages([TranscriptMessage::user("turn 0")]);
    h.turn_end(&t).await.unwrap();
    write("A much newer rule.");
    let rebuilt_rule = || {
        let last = arch.requests().last().cloned();
        last.is_some_and(|r| r.system.ends_with("A much newer rule."))
    };
    // Each turn is compacted before it ends, so the rebuild (whichever turn end makes it)
    // comes after a reset: R1's replay of the whole transcript. Bounded to a minute.
    let turns = async {
        let mut turn = 1;
        while !rebuilt_rule() {
            h.rewrite(RewriteKind::Compaction).await.unwrap();
            t.push(TranscriptMessage::user(format!("turn {turn}")));
            h.turn_end(&t).await.unwrap();
            turn += 1;
            h.status().await.unwrap();
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), turns)
        .await
        .expect("the changed entry is rebuilt");
    let rebuilt = arch.requests().last().unwrap().clone();
    let delta = last_user_text(&rebuilt);
    assert!(delta.contains("turn 0"), "the whole transcript: {delta}");
    assert_eq!(rebuilt.messages.len(), 1, "a fresh context");
}

fn read_call(path: &str) -> TranscriptMessage {
    serde_json::from_value(serde_json::json!({
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "c1", "name": "read",
                     "arguments": {"path": path}}],
        "stopReason": "toolUse"
    }))
    .expect("an assistant message")
}

/// Architecture reviewing every update and Migrations only those touching `db/**` (RO17).
fn architecture_and_migrations(arch: &ScriptedModel, db: &ScriptedModel) -> RuntimeConfig {
    let models = Models::default()
        .with("architecture", arch.clone())
        .with("migrations", db.clone());
    let mut migrations = entry("Migrations");
    migrations.when = Sourced::default_value(Some(
        advisor::roster::PathFilter::new(vec!["db/**".into()]).unwrap(),
    ));
    let roster = roster_of(vec![entry("Architecture"), migrations], None);
    roster_config(roster, models, SyncBacklog::Below(1))
}

#[actix::test]
async fn ro17_ro19_an_advisor_whose_paths_were_not_touched_skips_the_turn_and_status_counts_it() {
    let (arch, db) = (ScriptedModel::new([]), ScriptedModel::new([]));
    let (h, _events) = start(architecture_and_migrations(&arch, &db));
    let t = Transcript::from_messages([TranscriptMessage::user("tidy the parser")]);
    t.push(read_call("src/parser.rs"));
    h.turn_end(&t).await.unwrap();
    assert_eq!((arch.request_count(), db.request_count()), (1, 0));
    let status = h.status().await.unwrap();
    let skipped: Vec<u64> = status.advisors.iter().map(|a| a.skipped_updates).collect();
    assert_eq!(skipped, [0, 1]);

    t.push(TranscriptMessage::user("now the migration"));
    t.push(read_call("db/0042_users.sql"));
    h.turn_end(&t).await.unwrap();
    assert_eq!((arch.request_count(), db.request_count()), (2, 1));
    let delta = last_user_text(&db.requests()[0]);
    assert!(
        delta.contains("tidy the parser") && delta.contains("0042_users.sql"),
        "{delta}"
    );
}

#[test]
fn ro24_every_roster_session_points_at_the_process_catalog_instead_of_copying_it() {
    let (dir, repo) = git_repo();
    write_roster(&repo, &["Architecture", "Security"]);
    let catalog = Arc::new(advisor::providers::Catalog::builtin().unwrap());
    let open = |id: &str| {
        let models = advisor::ModelSource::new(Arc::clone(&catalog), Arc::new(|_: &str| None));
        let setup = advisor::SessionSetup {
            basics: advisor::SessionBasics::new(id.into(), repo.clone(), models),
            watchdog: Some(WatchdogConfig {
                cwd: repo.clone(),
                agent_dir: Some(dir.path().join("agent")),
                home: Some(dir.path().to_path_buf()),
                instructions: Default::default(),
            }),
            loaded: Default::default(),
            settings: Default::default(),
            model: advisor::SessionModel::None,
        };
        let roster = setup
            .build()
            .config
            .roster
            .expect("the roster file was found");
        roster.reload.expect("reloaded at turn ends").catalog
    };
    let (first, second) = (open("s1"), open("s2"));
    assert!(Arc::ptr_eq(&first, &catalog) && Arc::ptr_eq(&second, &catalog));
}

#[actix::test]
async fn ro17_ro19_the_skipped_updates_count_survives_off_name_and_on_name() {
    let (arch, db) = (ScriptedModel::new([]), ScriptedModel::new([]));
    let (h, _events) = start(architecture_and_migrations(&arch, &db));
    let skipped = || async { h.status().await.unwrap().advisors[1].skipped_updates };
    let t = Transcript::from_messages([TranscriptMessage::user("tidy the parser")]);
    t.push(read_call("src/parser.rs"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(skipped().await, 1);
    h.command("/advisor off Migrations").await.unwrap();
    assert_eq!(skipped().await, 1, "paused, it keeps its count");
    h.command("/advisor on Migrations").await.unwrap();
    assert_eq!(skipped().await, 1, "resumed, it goes on from its count");
    t.push(TranscriptMessage::user("and the lexer"));
    t.push(read_call("src/lexer.rs"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(skipped().await, 2);
    assert_eq!(db.request_count(), 0);
}

#[actix::test]
async fn w3_ro13_a_watchdog_warning_is_told_once_for_all_advisors_naming_none() {
    let (dir, repo) = git_repo();
    fs::write(repo.join("WATCHDOG.md"), "Keep it small. @notes.bin").unwrap();
    fs::write(repo.join("notes.bin"), [0xff, 0xfe, 0x00]).unwrap();
    let arch = ScriptedModel::new([]);
    let sec = ScriptedModel::new([]);
    let mut cfg = two_advisors(&arch, &sec);
    cfg.watchdog = Some(WatchdogConfig {
        cwd: repo.clone(),
        agent_dir: Some(dir.path().join("agent")),
        home: Some(dir.path().to_path_buf()),
        instructions: Default::default(),
    });
    let (h, mut events) = start(cfg);
    let t = Transcript::from_messages([TranscriptMessage::user("turn one")]);
    h.turn_end(&t).await.unwrap();
    t.push(TranscriptMessage::user("turn two"));
    h.turn_end(&t).await.unwrap();
    // The status is answered after every notice sent before it.
    h.status().await.unwrap();
    assert_eq!((arch.request_count(), sec.request_count()), (2, 2));
    assert!(sec.requests()[1].system.contains("Keep it small."));
    let told: Vec<_> = notices(drain(&mut events))
        .into_iter()
        .filter(|(text, _)| text.contains("notes.bin"))
        .collect();
    assert_eq!(told.len(), 1, "{told:?}");
    let (text, advisor) = &told[0];
    assert!(text.starts_with("watchdog: import "), "{text}");
    assert_eq!(*advisor, None);
}

#[actix::test]
async fn ro19_off_then_on_name_cancels_the_running_review_so_its_blocker_never_reaches_the_primary()
{
    let arch = ScriptedModel::new([]);
    let (sec, mut asked, gate) = GatedModel::new(
        vec![
            ScriptedReply::advise("s1", "Parameterise the query.", Some("blocker")),
            ScriptedReply::text(""),
            ScriptedReply::text(""),
        ],
        true,
    );
    let gate = gate.expect("gated");
    let models = Models::default()
        .with("architecture", arch.clone())
        .with("security", sec);
    let roster = roster_of(vec![entry("Architecture"), entry("Security")], None);
    let (h, mut events) = start(roster_config(roster, models, SyncBacklog::Below(1)));
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("write the search endpoint")]);
    let first = actix::spawn({
        let (h, t) = (h.clone(), t.clone());
        async move { h.turn_end(&t).await }
    });
    // Security's review is in its model call, its answer (the blocker) held back.
    next_request(&mut asked).await;
    assert_eq!(
        h.command("/advisor off Security").await.unwrap(),
        "advisor Security: off"
    );
    first.await.unwrap().unwrap();
    assert_eq!(
        h.command("/advisor on Security").await.unwrap(),
        "advisor Security: on"
    );
    gate.add_permits(3);
    t.push(TranscriptMessage::user("turn two"));
    // Waits for the restarted Security's review of turn two.
    h.turn_end(&t).await.unwrap();
    let mut seen = Vec::new();
    while let Ok(request) = asked.try_recv() {
        seen.push(request);
    }
    assert_eq!(seen.len(), 1, "only the restarted advisor's call: {seen:?}");
    assert_eq!(seen[0].messages.len(), 1, "a fresh context");
    assert!(last_user_text(&seen[0]).contains("turn two"));
    assert_eq!(
        gate.available_permits(),
        2,
        "the old review's call was cancelled before its answer"
    );
    let advice = contents(&h.step_boundary().await.unwrap());
    assert!(!advice.contains("Parameterise"), "{advice}");
    let status = h.status().await.unwrap();
    let woke = drain(&mut events).into_iter().any(|e| {
        matches!(&e, HostEvent::Wake { card } | HostEvent::Card { card }
            if card.content.contains("Parameterise"))
    });
    assert!(!woke, "nothing of the old review reaches the primary");
    assert_eq!(status.advisors[1].deliveries.raised(), 0);
    drop(asked);
}

#[actix::test]
async fn ro19_on_while_every_advisor_is_paused_by_name_keeps_their_deferred_notes() {
    let sec = ScriptedModel::new([
        ScriptedReply::advise("s1", "Parameterise the query.", Some("blocker")),
        ScriptedReply::text(""),
    ]);
    let models = Models::default().with("security", sec.clone());
    let mut security = entry("Security");
    security.policy = Sourced::default_value(Some(PolicyChoice::Defer));
    let roster = roster_of(vec![security], None);
    let (h, _events) = start(roster_config(roster, models, SyncBacklog::Below(1)));
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("write the search endpoint")]);
    h.turn_end(&t).await.unwrap();
    let pending = |s: &advisor::AdvisorStatus| s.advisors[0].deliveries.pending;
    assert_eq!(
        pending(&h.status().await.unwrap()),
        1,
        "P1: deferred to the end of the run"
    );
    h.command("/advisor off Security").await.unwrap();
    assert_eq!(h.command("/advisor on").await.unwrap(), "advisor: on");
    let status = h.status().await.unwrap();
    assert_eq!(
        pending(&status),
        1,
        "still deferred: the session was on, no reset"
    );
    assert_eq!(status.advisors[0].deliveries.dropped_summary(), "");
    assert_eq!(status.advisors[0].state, AdvisorState::Running);
}

#[actix::test]
async fn ro15_d5_a_roster_entry_under_reconfirm_makes_the_turn_end_wait_for_the_catch_up() {
    tokio::time::pause();
    let (sec, _asked, _gate) = GatedModel::new(vec![], true);
    let models = Models::default().with("security", sec);
    let mut security = entry("Security");
    security.policy = Sourced::default_value(Some(PolicyChoice::Reconfirm));
    let roster = roster_of(vec![security], None);
    let mut cfg = roster_config(roster, models, SyncBacklog::Off);
    cfg.settings.policy = advisor::settings::DeliveryPolicy::Defer;
    let (h, _events) = start(cfg);
    let answer = TranscriptMessage::Assistant(AssistantMessage::new(
        vec![AssistantBlock::Text {
            text: "Done.".into(),
        }],
        Some("stop".into()),
    ));
    let t = Transcript::from_messages([TranscriptMessage::user("go"), answer]);
    let started = tokio::time::Instant::now();
    h.turn_end(&t).await.unwrap();
    // A terminal turn's catch-up block waits for the review, up to 120 s (D5).
    assert_eq!(started.elapsed().as_secs(), 120);
    assert!(
        h.turn_end_may_wait(),
        "told to a host (serve's turnEndWaits)"
    );
}

#[actix::test]
async fn ro15_ro21_a_reconfirm_entry_added_mid_session_makes_the_next_final_turn_end_wait() {
    let (dir, repo) = git_repo();
    let interrupt =
        "advisors:\n  - name: Architecture\n    model: openai/gpt-5\n    policy: interrupt\n";
    fs::write(repo.join("WATCHDOG.yml"), interrupt).unwrap();
    // Both advisors' reviews stay in their model calls: a catch-up can only time out.
    let (arch, _arch_asked, _arch_gate) = GatedModel::new(vec![], true);
    let (sec, _sec_asked, _sec_gate) = GatedModel::new(vec![], true);
    let models = Models::default()
        .with("architecture", arch)
        .with("security", sec);
    let mut cfg = reloading(dir.path(), &repo, models);
    cfg.settings.sync_backlog = SyncBacklog::Off;
    cfg.settings.policy = advisor::settings::DeliveryPolicy::Defer;
    let (h, _events) = start(cfg);
    assert!(
        h.turn_end_may_wait(),
        "a reloaded roster may gain a reconfirm entry"
    );
    let answer = || {
        TranscriptMessage::Assistant(AssistantMessage::new(
            vec![AssistantBlock::Text {
                text: "Done.".into(),
            }],
            Some("stop".into()),
        ))
    };
    let t = Transcript::from_messages([TranscriptMessage::user("go"), answer()]);
    // Nothing is under reconfirm: the final turn end is handed over, not held.
    h.turn_end(&t).await.unwrap();
    let both =
        format!("{interrupt}  - name: Security\n    model: openai/gpt-5\n    policy: reconfirm\n");
    fs::write(repo.join("WATCHDOG.yml"), both).unwrap();
    t.push(TranscriptMessage::user("and the tests"));
    t.push(answer());
    h.turn_end(&t).await.unwrap();
    until_advisors(&h, 2).await;
    // RO15: Security delivers under reconfirm now, so a final turn end waits for the
    // catch-up (D5), up to 120 s.
    tokio::time::pause();
    t.push(TranscriptMessage::user("one more"));
    t.push(answer());
    let started = tokio::time::Instant::now();
    h.turn_end(&t).await.unwrap();
    assert_eq!(started.elapsed().as_secs(), 120);
}

#[actix::test]
async fn ro20_an_ask_without_a_name_goes_to_the_first_running_advisor() {
    let arch = ScriptedModel::new([ScriptedReply::text("Architecture answers.")]);
    let models = Models::default().with("architecture", arch.clone());
    // Security has no model; Audit is paused by name.
    let roster = roster_of(
        vec![entry("Security"), entry("Audit"), entry("Architecture")],
        None,
    );
    let models = models.with("audit", ScriptedModel::new([]));
    let mut cfg = roster_config(roster, models, SyncBacklog::Below(1));
    cfg.settings.consult = true;
    let (h, _events) = start(cfg);
    h.command("/advisor off Audit").await.unwrap();
    assert_eq!(h.ask("and this?").await.unwrap(), "Architecture answers.");
    h.command("/advisor off Architecture").await.unwrap();
    let refused = h.ask("and now?").await.unwrap_err().to_string();
    assert!(
        refused.contains("advisor Security is not running"),
        "{refused}"
    );
}

#[actix::test]
async fn ro21_ro16_a_removed_advisors_running_review_delivers_nothing() {
    let (dir, repo) = git_repo();
    let capped = "advisors:\n  - name: Architecture\n    model: openai/gpt-5\n  - name: Security\n    model: openai/gpt-5\n    maxSeverity: nit\n    policy: reconfirm\n";
    fs::write(repo.join("WATCHDOG.yml"), capped).unwrap();
    let arch = ScriptedModel::new([]);
    let (sec, mut asked, gate) = GatedModel::new(
        vec![
            ScriptedReply::advise("s1", "Parameterise the query.", Some("blocker")),
            ScriptedReply::text(""),
        ],
        true,
    );
    let gate = gate.expect("gated");
    let models = Models::default()
        .with("architecture", arch.clone())
        .with("security", sec);
    let mut cfg = reloading(dir.path(), &repo, models);
    cfg.settings.sync_backlog = SyncBacklog::Off;
    let (h, mut events) = start(cfg);
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("write the search endpoint")]);
    h.turn_end(&t).await.unwrap();
    // Security's review is running, its answer held back; then its entry goes.
    next_request(&mut asked).await;
    write_roster(&repo, &["Architecture"]);
    t.push(TranscriptMessage::user("turn two"));
    h.turn_end(&t).await.unwrap();
    until_advisors(&h, 1).await;
    gate.add_permits(2);
    // RO21: the removed entry's review was cancelled with it, so its held-back answer is
    // never taken. Everything here runs on one thread with in-process models: had the
    // review gone on, these round trips would have let it take a permit and raise.
    let mut status = h.status().await.unwrap();
    for _ in 0..50 {
        tokio::task::yield_now().await;
        status = h.status().await.unwrap();
    }
    assert_eq!(
        gate.available_permits(),
        2,
        "the removed advisor's model call was cancelled before its answer"
    );
    assert_eq!(status.deliveries.raised(), 0, "{:?}", status.deliveries);
    assert_eq!(status.deliveries.delivered(), 0);
    let advice = contents(&h.step_boundary().await.unwrap());
    assert!(!advice.contains("Parameterise"), "{advice}");
    h.status().await.unwrap();
    let told = drain(&mut events).into_iter().any(|e| {
        matches!(&e, HostEvent::Wake { card } | HostEvent::Card { card }
            if card.content.contains("Parameterise"))
    });
    assert!(
        !told,
        "nothing of the removed Security's reaches the primary"
    );
    drop(asked);
}

/// A session whose roster files under `dir` are looked for but not there yet, with
/// `unnamed` as the session's (unnamed) advisor's model and `architecture` for the entry of
/// that name once a file names it.
fn watched_without_roster(
    dir: &Path,
    repo: &Path,
    unnamed: &ScriptedModel,
    architecture: &ScriptedModel,
) -> RuntimeConfig {
    let watchdog = WatchdogConfig {
        cwd: repo.to_path_buf(),
        agent_dir: Some(dir.join("agent")),
        home: Some(dir.to_path_buf()),
        instructions: Default::default(),
    };
    let catalog = Arc::new(advisor::providers::Catalog::builtin().unwrap());
    let models = Models::default().with("architecture", architecture.clone());
    let setup = RosterSetup::discover(
        watchdog,
        RosterSettings::default(),
        catalog,
        None,
        Arc::new(models),
    );
    assert!(setup.roster.is_empty());
    config(Arc::new(unnamed.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.roster = Some(setup);
    })
}

#[actix::test]
async fn ro12_ro21_a_roster_that_replaces_the_unnamed_advisor_drops_its_undelivered_notes() {
    let (dir, repo) = git_repo();
    let unnamed = ScriptedModel::new([
        ScriptedReply::advise("u1", "Rename the helper.", Some("nit")),
        ScriptedReply::text(""),
    ]);
    let arch = ScriptedModel::new([]);
    let cfg = watched_without_roster(dir.path(), &repo, &unnamed, &arch);
    let (h, _events) = start(cfg);
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("turn one")]);
    h.turn_end(&t).await.unwrap();
    assert_eq!(h.status().await.unwrap().deliveries.pending, 1, "queued");
    write_roster(&repo, &["Architecture"]);
    t.push(TranscriptMessage::user("turn two"));
    h.turn_end(&t).await.unwrap();
    until_advisors(&h, 1).await;
    let status = h.status().await.unwrap();
    assert_eq!(status.deliveries.dropped_summary(), "removed 1");
    assert_eq!(status.deliveries.pending, 0);
    let advice = contents(&h.step_boundary().await.unwrap());
    assert!(!advice.contains("Rename the helper."), "{advice}");
    // C2: the user's check still goes the normal delivery path.
    let reply = h
        .command("/advisor test nit tidy the imports")
        .await
        .unwrap();
    assert!(reply.ends_with("Recorded."), "{reply}");
}

#[actix::test]
async fn ro12_ro21_shared_instructions_written_mid_session_reach_the_unnamed_advisor() {
    let (dir, repo) = git_repo();
    let unnamed = ScriptedModel::new([]);
    let arch = ScriptedModel::new([]);
    let cfg = watched_without_roster(dir.path(), &repo, &unnamed, &arch);
    let (h, _events) = start(cfg);
    let t = Transcript::from_messages([TranscriptMessage::user("turn 0")]);
    h.turn_end(&t).await.unwrap();
    assert!(!unnamed.requests()[0].system.contains("Prefer small diffs."));
    // A roster file without entries: its shared instructions are the unnamed advisor's.
    fs::write(
        repo.join("WATCHDOG.yml"),
        "instructions: Prefer small diffs.\n",
    )
    .unwrap();
    let instructed = || {
        let last = unnamed.requests().last().cloned();
        last.is_some_and(|r| r.system.ends_with("Prefer small diffs."))
    };
    // Each turn end starts a check, or asks for one more while one runs; bounded to a
    // minute of turns on a loaded machine.
    let turns = async {
        let mut turn = 1;
        while !instructed() {
            t.push(TranscriptMessage::user(format!("turn {turn}")));
            h.turn_end(&t).await.unwrap();
            turn += 1;
            h.status().await.unwrap();
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), turns)
        .await
        .expect("the unnamed advisor is rebuilt with the shared instructions");
    assert!(
        h.status().await.unwrap().advisors.is_empty(),
        "still unnamed"
    );
}

#[actix::test]
async fn ro19_d9_off_name_drops_that_advisors_held_notes() {
    let arch = ScriptedModel::new([
        ScriptedReply::advise("a1", "The migration drops a column.", Some("concern")),
        ScriptedReply::text(""),
    ]);
    let sec = ScriptedModel::new([]);
    let mut cfg = two_advisors(&arch, &sec);
    cfg.settings.policy = advisor::settings::DeliveryPolicy::Reconfirm;
    let (h, _events) = start(cfg);
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("add the migration")]);
    h.turn_end(&t).await.unwrap();
    assert_eq!(h.status().await.unwrap().held_notes.len(), 1, "held (D4)");
    assert_eq!(
        h.command("/advisor off Architecture").await.unwrap(),
        "advisor Architecture: off"
    );
    let status = h.status().await.unwrap();
    assert!(status.held_notes.is_empty(), "{:?}", status.held_notes);
    assert_eq!(
        status.advisors[0].deliveries.dropped_summary(),
        "disabled 1"
    );
}

/// Every entry reviews with one scripted client.
struct Everyone(ScriptedModel);

impl RosterModels for Everyone {
    fn build(&self, _advisor: &RosterAdvisor) -> Result<Arc<dyn ModelClient>, String> {
        Ok(Arc::new(self.0.clone()))
    }
}

#[actix::test]
async fn ro24_a_cloned_repositorys_thousand_entries_cost_sixteen_model_calls_a_turn() {
    let (dir, repo) = git_repo();
    let mut text = String::from("advisors:\n");
    for i in 0..1_000 {
        text.push_str(&format!(
            "  - name: Reviewer {i}\n    model: openai/gpt-5\n"
        ));
    }
    fs::write(repo.join("WATCHDOG.yml"), text).unwrap();
    let watchdog = WatchdogConfig {
        cwd: repo.clone(),
        agent_dir: Some(dir.path().join("agent")),
        home: Some(dir.path().to_path_buf()),
        instructions: Default::default(),
    };
    let catalog = Arc::new(advisor::providers::Catalog::builtin().unwrap());
    let model = ScriptedModel::new([]);
    let setup = RosterSetup::discover(
        watchdog,
        RosterSettings::default(),
        catalog,
        None,
        Arc::new(Everyone(model.clone())),
    );
    let skipped: Vec<String> = setup
        .roster
        .warnings
        .iter()
        .map(ToString::to_string)
        .collect();
    let mut cfg = roster_config(setup.roster, Models::default(), SyncBacklog::Below(1));
    if let Some(roster) = cfg.roster.as_mut() {
        roster.models = Arc::new(Everyone(model.clone()));
    }
    let (h, _events) = start(cfg);
    let t = Transcript::from_messages([TranscriptMessage::user("turn one")]);
    h.turn_end(&t).await.unwrap();
    let calls = model.request_count();
    eprintln!("RO24: model calls for one turn with a 1,000-entry roster: {calls}");
    assert_eq!(calls, 16, "one call per advisor that runs");
    assert_eq!(h.status().await.unwrap().advisors.len(), 16);
    assert_eq!(
        skipped,
        [format!(
            "{}: 984 more advisors skipped: a roster runs at most 16",
            repo.join("WATCHDOG.yml").display()
        )]
    );
}
