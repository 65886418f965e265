use std::path::PathBuf;
use std::sync::Arc;

use super::*;
use crate::model::scripted::ScriptedModel;
use crate::model::ThinkingLevel;
use crate::roster::{RosterModels, RosterTool, Sourced};

/// Builds every entry's client from a script, or fails for the slug `broken`.
pub(crate) struct Models;

impl RosterModels for Models {
    fn build(&self, advisor: &RosterAdvisor) -> Result<Arc<dyn ModelClient>, String> {
        if advisor.slug == "broken" {
            return Err("no key for acme".into());
        }
        Ok(Arc::new(ScriptedModel::new([])))
    }
}

/// A resolved entry called `name` with the defaults of RO8–RO17.
pub(crate) fn entry(name: &str) -> RosterAdvisor {
    RosterAdvisor::new(
        name,
        ModelChoice::resolved("openai", "gpt-5", ThinkingLevel::default()),
    )
}

fn roster(entries: Vec<RosterAdvisor>, shared: Option<&str>) -> Roster {
    Roster::in_code(entries, shared)
}

fn config_with(roster: Roster) -> RuntimeConfig {
    let mut config = RuntimeConfig::new("primary", "/w", Some(Arc::new(ScriptedModel::new([]))));
    config.audit_path = Some(PathBuf::from("/s/sess/__advisor.jsonl"));
    config.roster = Some(RosterSetup {
        roster,
        models: Arc::new(Models),
        reload: None,
    });
    config
}

#[test]
fn ro12_without_a_roster_the_session_runs_the_unnamed_advisor_alone() {
    let mut config = config_with(Roster::default());
    config.roster = None;
    let plans = config.member_plans();
    assert_eq!(plans.len(), 1);
    let plan = &plans[0];
    assert!(plan.label.is_none() && plan.instructions.is_none());
    assert_eq!(plan.max_notes, config.settings.max_notes_per_update);
    assert_eq!(plan.audit_path, config.audit_path);
    assert_eq!(plan.tools.names(), ["find", "read", "search"]);
}

#[test]
fn ro12_roster_files_without_entries_give_the_unnamed_advisor_the_shared_instructions_and_budget() {
    let mut empty = roster(Vec::new(), Some("Watch the migrations."));
    empty.max_notes_per_update = Some(Sourced::default_value(7));
    let plans = config_with(empty).member_plans();
    assert_eq!(plans.len(), 1);
    assert!(plans[0].label.is_none());
    assert_eq!(
        plans[0].instructions.as_deref(),
        Some("Watch the migrations.")
    );
    assert_eq!(plans[0].max_notes, 7);
}

#[test]
fn ro11_a_members_instructions_are_the_shared_ones_then_its_own() {
    let mut security = entry("Security");
    security.instructions = Sourced::default_value(Some("Look for injections.".into()));
    let plain = entry("Plain");
    let plans = config_with(roster(vec![security, plain], Some("Be brief."))).member_plans();
    assert_eq!(
        plans[0].instructions.as_deref(),
        Some("Be brief.\n\nLook for injections.")
    );
    assert_eq!(plans[1].instructions.as_deref(), Some("Be brief."));
}

#[test]
fn ro13_each_member_has_its_label_and_transcript_file_beside_the_unnamed_advisors() {
    let plans = config_with(roster(vec![entry("Test Coverage")], None)).member_plans();
    let plan = &plans[0];
    assert_eq!(plan.slug(), Some("test-coverage"));
    assert_eq!(plan.name(), Some("Test Coverage"));
    assert_eq!(
        plan.audit_path.as_deref(),
        Some(std::path::Path::new(
            "/s/sess/__advisor.test-coverage.jsonl"
        ))
    );
    let session = crate::tools::ToolSession::for_member("primary", plan.slug(), "/w");
    assert_eq!(session.id(), "primary-advisor.test-coverage");
}

#[test]
fn ro9_a_members_tools_are_its_grant_and_an_empty_grant_leaves_none() {
    let mut reader = entry("Reader");
    reader.tools = Sourced::default_value(vec![RosterTool::Read]);
    let mut none = entry("None");
    none.tools = Sourced::default_value(Vec::new());
    let plans = config_with(roster(vec![reader, none], None)).member_plans();
    assert_eq!(plans[0].tools.names(), ["read"]);
    assert!(plans[1].tools.names().is_empty());
    let offered: Vec<String> = plans[1]
        .tools
        .schemas_with_advise()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(offered, ["advise"]);
}

#[test]
fn ro8_an_unresolved_or_unbuildable_model_is_no_model_with_its_reason() {
    let mut unresolved = entry("Unresolved");
    unresolved.model = Sourced::default_value(ModelChoice::NoModel {
        role: None,
        reason: "modelRoles.advisor is not set".into(),
    });
    let plans = config_with(roster(
        vec![unresolved, entry("Broken"), entry("Fine")],
        None,
    ))
    .member_plans();
    assert_eq!(
        plans[0].model.as_ref().err().map(String::as_str),
        Some("modelRoles.advisor is not set")
    );
    assert_eq!(
        plans[1].model.as_ref().err().map(String::as_str),
        Some("no key for acme")
    );
    assert!(plans[2].model.is_ok());
}

#[test]
fn ro10_ro15_ro16_ro17_budget_policy_cap_and_paths_come_from_the_entry() {
    let mut e = entry("Strict");
    e.max_notes_per_update = Sourced::default_value(2);
    e.policy = Sourced::default_value(Some(PolicyChoice::Reconfirm));
    e.max_severity = Sourced::default_value(Severity::Concern);
    e.when = Sourced::default_value(Some(PathFilter::new(vec!["db/**".into()]).unwrap()));
    e.enabled = Sourced::default_value(false);
    let plan = &config_with(roster(vec![e], None)).member_plans()[0];
    assert_eq!(plan.max_notes, 2);
    assert_eq!(plan.policy, Some(DeliveryPolicy::Reconfirm));
    assert_eq!(plan.max_severity, Severity::Concern);
    assert!(plan.when.as_ref().is_some_and(|w| w.matches("db/m/1.sql")));
    assert!(!plan.enabled);
}

#[test]
fn ro20_a_member_answers_to_its_name_in_any_case_and_to_its_slug() {
    let plan = &config_with(roster(vec![entry("Test Coverage")], None)).member_plans()[0];
    assert!(plan.answers_to("Test Coverage"));
    assert!(plan.answers_to("test coverage"));
    assert!(plan.answers_to("test-coverage"));
    assert!(!plan.answers_to("coverage"));
    assert!(!config_with(Roster::default())
        .unnamed_plan()
        .answers_to("advisor"));
}

#[test]
fn ro21_the_diff_names_added_removed_and_changed_entries_by_slug() {
    let old = roster(vec![entry("Keep"), entry("Gone"), entry("Edit")], None);
    let mut edited = entry("Edit");
    edited.max_notes_per_update = Sourced::default_value(9);
    let new = roster(vec![entry("Keep"), edited, entry("New One")], None);
    let diff = RosterDiff::between(&old, &new);
    assert_eq!(diff.added, ["new-one"]);
    assert_eq!(diff.removed, ["gone"]);
    assert_eq!(diff.changed, ["edit"]);
    assert!(RosterDiff::between(&new, &new).is_empty());
}

#[test]
fn ro21_changed_shared_instructions_change_every_entry() {
    let old = roster(vec![entry("A"), entry("B")], Some("One."));
    let new = roster(vec![entry("A"), entry("B")], Some("Two."));
    assert_eq!(RosterDiff::between(&old, &new).changed, ["a", "b"]);
}

#[test]
fn ca7_a_cadence_only_edit_retunes_and_rebuilds_nothing_any_other_edit_rebuilds() {
    let old = roster(vec![entry("A"), entry("B")], None);
    let mut new_a = entry("A");
    new_a.review_mode = Sourced::default_value(crate::settings::ReviewMode::AgentEnd);
    new_a.review_interval = Sourced::default_value(3);
    new_a.sync_backlog = Sourced::default_value(Some(crate::settings::SyncBacklog::Strict));
    let mut new_b = entry("B");
    new_b.max_notes_per_update = Sourced::default_value(9);
    new_b.review_interval = Sourced::default_value(2);
    let diff = RosterDiff::between(&old, &roster(vec![new_a, new_b], None));
    assert_eq!(diff.retuned, ["a"]);
    assert_eq!(diff.changed, ["b"], "another field changed too: a rebuild");
    assert!(!diff.is_empty());
}

#[test]
fn ca5_ca9_an_entry_plan_uses_its_own_cadence_the_unnamed_one_the_settings() {
    let mut own = entry("Own");
    own.review_mode = Sourced::default_value(crate::settings::ReviewMode::AgentEnd);
    let mut config = config_with(roster(vec![own], None));
    config.settings.review_mode = crate::settings::ReviewMode::Turn;
    config.settings.review_interval = 5;
    config.settings.sync_backlog = crate::settings::SyncBacklog::Below(3);
    let plan = &config.member_plans()[0];
    let cadence = plan.cadence(&config.settings);
    assert_eq!(cadence.mode, crate::settings::ReviewMode::AgentEnd);
    assert_eq!(
        cadence.interval, 1,
        "an entry's omitted interval is 1, whatever the settings"
    );
    assert_eq!(
        cadence.sync,
        crate::settings::SyncBacklog::Below(3),
        "inherited"
    );
    let unnamed = config.unnamed_plan().cadence(&config.settings);
    assert_eq!(
        (unnamed.mode, unnamed.interval),
        (crate::settings::ReviewMode::Turn, 5)
    );
}

#[test]
fn sp1_a_roster_entry_s_tool_budget_wins_over_the_setting() {
    let mut own = entry("Frugal");
    own.tool_budget = Sourced::default_value(Some(0));
    let mut config = config_with(roster(vec![own, entry("Default")], None));
    config.settings.tool_budget = 9;
    let plans = config.member_plans();
    let budgets: Vec<u32> = plans.iter().map(|p| p.tool_budget).collect();
    assert_eq!(budgets, [0, 9]);
    config.roster = None;
    assert_eq!(config.unnamed_plan().tool_budget, 9);
}
