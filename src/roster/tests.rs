//! Unit tests of the roster's resolution, named by rule (§15).

use super::*;
use std::fs;

fn catalog() -> Catalog {
    Catalog::empty()
}

/// Parses each `(file, text)` and merges them in order, as [`load`] does after reading.
fn merged(files: &[(&str, &str)], settings: &RosterSettings) -> Roster {
    let mut warnings = Vec::new();
    let parsed = files
        .iter()
        .filter_map(|(file, text)| {
            let path = PathBuf::from(file);
            parse_file(&path, text, &mut warnings).map(|parsed| (path, parsed))
        })
        .collect();
    merge(parsed, settings, &catalog(), warnings)
}

fn entry_file(path: &str) -> Source {
    Source::Entry { file: path.into() }
}

fn warning_lines(roster: &Roster) -> Vec<String> {
    roster.warnings.iter().map(ToString::to_string).collect()
}

#[test]
fn ro2_more_specific_file_replaces_the_entry_in_its_place() {
    let roster = merged(
        &[
            (
                "/u/WATCHDOG.yml",
                "advisors:\n  - name: Architecture\n    model: a/one\n  - name: Tests\n",
            ),
            (
                "/p/WATCHDOG.yml",
                "advisors:\n  - name: Security\n  - name: architecture!\n    tools: [read]\n",
            ),
        ],
        &RosterSettings::default(),
    );
    let slugs: Vec<_> = roster.advisors.iter().map(|a| a.slug.as_str()).collect();
    assert_eq!(slugs, ["architecture", "tests", "security"]);
    let architecture = &roster.advisors[0];
    assert_eq!(architecture.name, "architecture!");
    assert_eq!(architecture.file, PathBuf::from("/p/WATCHDOG.yml"));
    assert_eq!(architecture.overrides, [PathBuf::from("/u/WATCHDOG.yml")]);
    // The whole entry is replaced: the user file's model does not carry over.
    assert!(matches!(
        architecture.model.value,
        ModelChoice::NoModel { role: None, .. }
    ));
    assert_eq!(
        architecture.tools,
        Sourced::new(vec![RosterTool::Read], entry_file("/p/WATCHDOG.yml"))
    );
    assert!(roster.warnings.is_empty());
}

#[test]
fn ro2_same_slug_twice_in_one_file_keeps_the_later_with_a_warning() {
    let roster = merged(
        &[(
            "/p/WATCHDOG.yml",
            "advisors:\n  - name: Sec\n    enabled: false\n  - name: SEC\n",
        )],
        &RosterSettings::default(),
    );
    assert_eq!(roster.advisors.len(), 1);
    assert_eq!(roster.advisors[0].name, "SEC");
    assert_eq!(roster.advisors[0].enabled, Sourced::default_value(true));
    assert_eq!(
        warning_lines(&roster),
        ["/p/WATCHDOG.yml: advisor \"SEC\": a second entry with the slug `sec`; the later one is used"]
    );
}

#[test]
fn ro6_shared_instructions_concatenate_in_load_order() {
    let roster = merged(
        &[
            ("/u/WATCHDOG.yml", "instructions: \"  User rule.\\n\"\n"),
            ("/p/WATCHDOG.yml", "advisors: []\n"),
            ("/p/sub/WATCHDOG.yml", "instructions: Leaf rule.\n"),
        ],
        &RosterSettings::default(),
    );
    // `merge` takes the texts as `load` leaves them (expanded and trimmed); here they are
    // raw, so only the order and the files are checked.
    let shared = roster.instructions.clone().unwrap();
    assert_eq!(shared.text, "  User rule.\n\n\nLeaf rule.");
    assert_eq!(
        shared.files,
        [
            PathBuf::from("/u/WATCHDOG.yml"),
            PathBuf::from("/p/sub/WATCHDOG.yml")
        ]
    );
    assert!(roster.is_empty());
    assert_eq!(roster.files.len(), 3);
}

#[test]
fn ro10_max_notes_entry_then_top_level_then_setting_then_four() {
    let setting = RosterSettings {
        advisor_role: None,
        max_notes_per_update: Some(Sourced::new(
            100,
            Source::Setting {
                key: "advisor.maxNotesPerUpdate",
                file: None,
            },
        )),
        sync_backlog: None,
        ..RosterSettings::default()
    };
    let files = [
        ("/u/WATCHDOG.yml", "maxNotesPerUpdate: 7\n"),
        (
            "/p/WATCHDOG.yml",
            "maxNotesPerUpdate: 3\nadvisors:\n  - name: A\n    maxNotesPerUpdate: 9\n  - name: B\n",
        ),
    ];
    let roster = merged(&files, &setting);
    assert_eq!(
        roster.advisors[0].max_notes_per_update,
        Sourced::new(9, entry_file("/p/WATCHDOG.yml"))
    );
    assert_eq!(
        roster.advisors[1].max_notes_per_update,
        Sourced::new(
            3,
            Source::TopLevel {
                file: "/p/WATCHDOG.yml".into()
            }
        )
    );
    let roster = merged(&[("/p/WATCHDOG.yml", "advisors: [{name: A}]\n")], &setting);
    assert_eq!(
        roster.advisors[0].max_notes_per_update,
        Sourced::new(32, setting.max_notes_per_update.clone().unwrap().source),
        "a setting above 32 is capped"
    );
    let roster = merged(
        &[("/p/WATCHDOG.yml", "advisors: [{name: A}]\n")],
        &RosterSettings::default(),
    );
    assert_eq!(
        roster.advisors[0].max_notes_per_update,
        Sourced::default_value(4)
    );
}

#[test]
fn ca22_ca25_an_entry_model_by_role_alias_resolves_a_disabled_provider_is_no_model() {
    let mut settings = RosterSettings {
        advisor_role: Some(Sourced::new(
            "anthropic/claude-sonnet-4-5".to_string(),
            Source::Setting {
                key: "modelRoles.advisor",
                file: None,
            },
        )),
        model_roles: [("slow".to_string(), "openai/gpt-5:high".to_string())].into(),
        ..RosterSettings::default()
    };
    let text = "advisors:\n  - {name: Slow, model: '@slow'}\n  - {name: Adv, model: '@advisor'}\n  - {name: Smol, model: '@smol'}\n  - {name: Plain}\n";
    let models = |settings: &RosterSettings| -> Vec<String> {
        let roster = merged(&[("/p/WATCHDOG.yml", text)], settings);
        assert!(roster.warnings.is_empty(), "{:?}", warning_lines(&roster));
        roster
            .advisors
            .iter()
            .map(|a| a.model.value.to_string())
            .collect()
    };
    assert_eq!(
        models(&settings),
        [
            "openai/gpt-5 (thinking high)",
            "anthropic/claude-sonnet-4-5 (thinking medium)",
            "no model: model role `@smol` is not set (modelRoles.smol)",
            "anthropic/claude-sonnet-4-5 (thinking medium)",
        ]
    );
    settings.disabled_providers = vec!["anthropic".into()];
    assert_eq!(
        models(&settings),
        [
            "openai/gpt-5 (thinking high)",
            "no model: provider `anthropic` is disabled by the settings (disabledProviders)",
            "no model: model role `@smol` is not set (modelRoles.smol)",
            "no model: provider `anthropic` is disabled by the settings (disabledProviders)",
        ],
        "the advisor role of a disabled provider is never used, and @advisor does not fall back \
         to the slow role"
    );
}

#[test]
fn ro8_model_from_entry_else_the_advisor_role_else_no_model() {
    let settings = RosterSettings {
        advisor_role: Some(Sourced::new(
            "anthropic/claude-sonnet-4-5".to_string(),
            Source::Setting {
                key: "modelRoles.advisor",
                file: Some("/u/config.yml".into()),
            },
        )),
        max_notes_per_update: None,
        sync_backlog: None,
        ..RosterSettings::default()
    };
    let roster = merged(
        &[(
            "/p/WATCHDOG.yml",
            "advisors:\n  - name: A\n    model: openai/gpt-5:high\n  - name: B\n  - name: C\n    model: gpt5\n",
        )],
        &settings,
    );
    let models: Vec<String> = roster
        .advisors
        .iter()
        .map(|a| format!("{} [{}]", a.model.value, a.model.source))
        .collect();
    assert_eq!(
        models,
        [
            "openai/gpt-5 (thinking high) [/p/WATCHDOG.yml]",
            "anthropic/claude-sonnet-4-5 (thinking medium) [setting modelRoles.advisor in /u/config.yml]",
            "no model: `gpt5` is not provider/model-id[:thinking] [/p/WATCHDOG.yml]",
        ]
    );
    let roster = merged(
        &[("/p/WATCHDOG.yml", "advisors: [{name: A}]\n")],
        &RosterSettings::default(),
    );
    assert_eq!(
        roster.advisors[0].model.to_owned(),
        Sourced::default_value(ModelChoice::NoModel {
            role: None,
            reason: "neither `model` nor modelRoles.advisor names one".into()
        })
    );
}

#[test]
fn ro12_no_file_means_no_roster() {
    let roster = merged(&[], &RosterSettings::default());
    assert!(roster.is_empty() && roster.files.is_empty() && roster.warnings.is_empty());
}

#[test]
fn ro15_to_ro17_defaults() {
    let roster = merged(
        &[("/p/WATCHDOG.yml", "advisors: [{name: A}]\n")],
        &RosterSettings::default(),
    );
    let advisor = &roster.advisors[0];
    assert_eq!(advisor.policy, Sourced::default_value(None));
    assert_eq!(
        advisor.max_severity,
        Sourced::default_value(Severity::Blocker)
    );
    assert_eq!(advisor.when, Sourced::default_value(None));
    assert_eq!(advisor.instructions, Sourced::default_value(None));
    assert_eq!(
        advisor.tools,
        Sourced::default_value(RosterTool::DEFAULT_SET.to_vec())
    );
}

#[test]
fn ro17_path_globs_stay_within_components_unless_doubled() {
    let filter = PathFilter::new(vec!["migrations/**".into(), "src/*.sql".into()]).unwrap();
    assert!(filter.matches("migrations/2024/01_init.sql"));
    assert!(filter.matches("src/a.sql"));
    assert!(!filter.matches("src/deep/a.sql"));
    assert!(!filter.matches("docs/migrations.md"));
}

#[test]
fn ro14_from_layers_names_the_last_file_setting_each_key() {
    let layer = |role: Option<&str>, notes: Option<usize>| SettingsLayer {
        advisor_role: role.map(str::to_string),
        max_notes_per_update: notes,
        ..SettingsLayer::default()
    };
    let layers = vec![
        (
            PathBuf::from("/u/config.yml"),
            layer(Some("a/b"), Some(2)),
            Vec::new(),
        ),
        (
            PathBuf::from("/p/.omp/config.yml"),
            layer(None, Some(6)),
            Vec::new(),
        ),
    ];
    let settings = RosterSettings::from_layers(&layers);
    assert_eq!(
        settings.advisor_role.unwrap().source.to_string(),
        "setting modelRoles.advisor in /u/config.yml"
    );
    let notes = settings.max_notes_per_update.unwrap();
    assert_eq!(notes.value, 6);
    assert_eq!(
        notes.source.to_string(),
        "setting advisor.maxNotesPerUpdate in /p/.omp/config.yml"
    );
}

/// A home with a repository `proj` (with `.git`) and the agent directory inside home.
struct Tree {
    _dir: tempfile::TempDir,
    home: PathBuf,
    proj: PathBuf,
}

impl Tree {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let proj = home.join("proj");
        fs::create_dir_all(proj.join(".git")).unwrap();
        fs::create_dir_all(home.join(".omp/agent")).unwrap();
        Self {
            _dir: dir,
            home,
            proj,
        }
    }

    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.home.join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path
    }

    fn load(&self, cwd: &str) -> Roster {
        let config =
            WatchdogConfig::from_env_values(self.home.join(cwd), None, Some(self.home.clone()));
        load(&config, &RosterSettings::default(), &catalog(), None)
    }
}

#[test]
fn ro1_files_load_user_first_then_outermost_to_innermost() {
    let tree = Tree::new();
    let user = tree.write(
        ".omp/agent/WATCHDOG.yml",
        "advisors: [{name: A, model: u/a}]\n",
    );
    let root_omp = tree.write(
        "proj/.omp/WATCHDOG.yml",
        "advisors: [{name: A, model: r/a}]\n",
    );
    let root_yaml = tree.write("proj/WATCHDOG.yaml", "advisors: [{name: B}]\n");
    let leaf = tree.write(
        "proj/sub/WATCHDOG.yml",
        "advisors: [{name: B, model: l/b}]\n",
    );
    tree.write("proj/.hidden/WATCHDOG.yml", "advisors: [{name: Hidden}]\n");
    let roster = tree.load("proj/sub");
    assert_eq!(
        roster.files,
        [
            user.clone(),
            root_omp.clone(),
            root_yaml.clone(),
            leaf.clone()
        ]
    );
    let summary: Vec<_> = roster
        .advisors
        .iter()
        .map(|a| (a.slug.as_str(), a.file.clone(), a.overrides.clone()))
        .collect();
    assert_eq!(
        summary,
        [("a", root_omp, vec![user]), ("b", leaf, vec![root_yaml]),]
    );
    assert!(roster.warnings.is_empty(), "{:?}", roster.warnings);
    let hidden = tree.load("proj/.hidden");
    assert!(hidden.advisors.iter().all(|a| a.slug != "hidden"));
}

#[test]
fn ro3_project_imports_stay_inside_the_project_and_the_user_file_imports_anywhere() {
    let tree = Tree::new();
    tree.write("notes.md", "home notes");
    tree.write("proj/rules.md", "project rules");
    tree.write(
        ".omp/agent/WATCHDOG.yml",
        "instructions: \"User: @~/notes.md\"\n",
    );
    let project = tree.write(
        "proj/WATCHDOG.yml",
        "advisors:\n  - name: A\n    instructions: \"Own: @rules.md and @~/notes.md\"\n",
    );
    let roster = tree.load("proj");
    assert_eq!(
        roster.instructions.clone().unwrap().text,
        "User: home notes"
    );
    assert_eq!(
        roster.advisors[0].instructions.value.as_deref(),
        Some("Own: project rules and @~/notes.md")
    );
    assert_eq!(
        warning_lines(&roster),
        [format!(
            "{}: import @~/notes.md left as is: a project WATCHDOG file may only import files inside {}",
            project.display(),
            tree.proj.display()
        )]
    );
}

#[cfg(unix)]
#[test]
fn ro3_a_project_roster_leading_out_of_its_project_is_skipped() {
    let tree = Tree::new();
    let outside = tree.write("outside.yml", "advisors: [{name: Leak}]\n");
    std::os::unix::fs::symlink(&outside, tree.proj.join("WATCHDOG.yml")).unwrap();
    let roster = tree.load("proj");
    assert!(roster.is_empty());
    assert_eq!(roster.warnings.len(), 1);
    let line = roster.warnings[0].to_string();
    assert!(
        line.contains("symlink leading outside") && line.ends_with("; file skipped"),
        "{line}"
    );
}

#[cfg(unix)]
#[test]
fn ro3_a_fifo_is_refused_without_waiting() {
    let tree = Tree::new();
    let fifo = tree.proj.join("WATCHDOG.yml");
    crate::regular_file::testing::mkfifo(&fifo);
    let roster = tree.load("proj");
    assert_eq!(
        warning_lines(&roster),
        [format!(
            "{}: not a regular file (a FIFO); file skipped",
            fifo.display()
        )]
    );
}

#[test]
fn ro3_a_roster_file_that_is_a_directory_is_skipped_with_a_warning() {
    let tree = Tree::new();
    let dir = tree.proj.join("WATCHDOG.yml");
    fs::create_dir_all(&dir).unwrap();
    let roster = tree.load("proj");
    assert!(roster.is_empty());
    assert_eq!(
        warning_lines(&roster),
        [format!(
            "{}: not a regular file (a directory); file skipped",
            dir.display()
        )]
    );
}

#[test]
fn ro3_an_oversized_roster_file_is_skipped_not_cut() {
    let tree = Tree::new();
    let big = format!("advisors: [{{name: A}}]\n#{}\n", "x".repeat(MAX_FILE_BYTES));
    let file = tree.write("proj/WATCHDOG.yml", &big);
    let roster = tree.load("proj");
    assert!(roster.is_empty());
    assert_eq!(
        warning_lines(&roster),
        [format!("{}: over 256 KiB; file skipped", file.display())]
    );
}

#[test]
fn ro11_instructions_are_redacted_like_watchdog_blocks() {
    let tree = Tree::new();
    tree.write(
        "proj/WATCHDOG.yml",
        "advisors:\n  - name: A\n    instructions: \"token ghp_0123456789abcdefghijABCDEFGHIJ012345\"\n",
    );
    let config = WatchdogConfig::from_env_values(tree.proj.clone(), None, Some(tree.home.clone()));
    let redactor = Redactor::new().unwrap();
    let roster = load(
        &config,
        &RosterSettings::default(),
        &catalog(),
        Some(&redactor),
    );
    let text = roster.advisors[0].instructions.value.clone().unwrap();
    assert!(!text.contains("ghp_0123456789"), "{text}");
}

#[test]
fn ro21_refresh_rereads_only_when_a_roster_file_or_import_changed() {
    let tree = Tree::new();
    let config = WatchdogConfig::from_env_values(tree.proj.clone(), None, Some(tree.home.clone()));
    let settings = RosterSettings::default();
    let fresh =
        |previous: Option<&Fingerprint>| refresh(&config, &settings, &catalog(), None, previous);
    let RosterRefresh::Rebuilt(empty) = fresh(None) else {
        panic!("a first load always reads");
    };
    assert!(empty.is_empty());
    assert_eq!(fresh(Some(&empty.fingerprint)), RosterRefresh::Unchanged);
    tree.write("proj/rules.md", "v1");
    tree.write(
        "proj/.omp/WATCHDOG.yaml",
        "advisors: [{name: A, instructions: \"@../rules.md\"}]\n",
    );
    let RosterRefresh::Rebuilt(added) = fresh(Some(&empty.fingerprint)) else {
        panic!("a new roster file is noticed");
    };
    assert_eq!(added.advisors[0].instructions.value.as_deref(), Some("v1"));
    assert_eq!(fresh(Some(&added.fingerprint)), RosterRefresh::Unchanged);
    tree.write("proj/rules.md", "v2, longer");
    let RosterRefresh::Rebuilt(changed) = fresh(Some(&added.fingerprint)) else {
        panic!("a changed import is noticed");
    };
    assert_eq!(
        changed.advisors[0].instructions.value.as_deref(),
        Some("v2, longer")
    );
}

#[test]
fn ro8_from_values_takes_a_hosts_settings_in_code() {
    let settings = AdvisorSettings {
        max_notes_per_update: 7,
        ..AdvisorSettings::default()
    };
    let from = RosterSettings::from_values(Some("  ".into()), &settings);
    assert_eq!(from.advisor_role, None);
    assert_eq!(
        from.max_notes_per_update.unwrap().source.to_string(),
        "setting advisor.maxNotesPerUpdate"
    );
}

#[test]
fn ro4_every_roster_text_in_use_is_in_its_data_file() {
    let sources = [include_str!("mod.rs"), include_str!("parse.rs")];
    let mut keys = Vec::new();
    for source in sources {
        for call in ["text(\"", "kind_text(\"", "item_text(\""] {
            for (at, _) in source.match_indices(call) {
                let rest = &source[at + call.len()..];
                if let Some(end) = rest.find('"') {
                    keys.push(&rest[..end]);
                }
            }
        }
    }
    assert!(keys.len() > 30, "{keys:?}");
    for key in keys {
        assert!(
            TEXTS.lookup(key).is_some(),
            "{key} is missing from roster-warnings.txt"
        );
    }
}

/// A model builder for tests: every entry is without a model.
struct NoModels;

impl RosterModels for NoModels {
    fn build(
        &self,
        advisor: &RosterAdvisor,
    ) -> Result<std::sync::Arc<dyn crate::model::ModelClient>, String> {
        Err(format!("no model for {}", advisor.slug))
    }
}

#[test]
fn ro1_ro12_ro21_discover_finds_the_roster_where_watchdog_md_is_and_watches_for_one() {
    let tree = Tree::new();
    let config = WatchdogConfig::from_env_values(tree.proj.clone(), None, Some(tree.home.clone()));
    let discover = || {
        RosterSetup::discover(
            config.clone(),
            RosterSettings::default(),
            std::sync::Arc::new(catalog()),
            None,
            std::sync::Arc::new(NoModels),
        )
    };
    let none = discover();
    assert!(
        none.roster.is_empty() && !none.found(),
        "no roster file: the unnamed advisor (RO12)"
    );
    assert!(
        none.reload.is_some(),
        "a roster file written later is still looked for (RO21)"
    );
    tree.write("proj/WATCHDOG.yml", "advisors: [{name: Security}]\n");
    let setup = discover();
    assert!(setup.found(), "a roster file is found (RO1)");
    let names: Vec<_> = setup
        .roster
        .advisors
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(names, ["Security"]);
    let reload = setup.reload.expect("the files are watched (RO21)");
    assert_eq!(reload.watchdog.cwd, config.cwd);
    assert_eq!(
        setup
            .models
            .build(&setup.roster.advisors[0])
            .err()
            .as_deref(),
        Some("no model for security")
    );
}

#[test]
fn ro24_a_roster_runs_at_most_sixteen_advisors() {
    let many = |prefix: &str, n: usize| {
        let mut text = String::from("advisors:\n");
        for i in 0..n {
            text.push_str(&format!("  - name: {prefix} {i}\n"));
        }
        text
    };
    // One file of 1,000: the first 16 are kept, the rest are not even checked.
    let roster = merged(
        &[("/p/WATCHDOG.yml", &many("P", 1_000))],
        &RosterSettings::default(),
    );
    assert_eq!(roster.advisors.len(), MAX_ADVISORS);
    assert_eq!(roster.advisors[15].name, "P 15");
    assert_eq!(
        warning_lines(&roster),
        ["/p/WATCHDOG.yml: 984 more advisors skipped: a roster runs at most 16"]
    );
    // Two files of 10: the user's 10 first, then 6 of the project's.
    let roster = merged(
        &[
            ("/u/WATCHDOG.yml", &many("U", 10)),
            ("/p/WATCHDOG.yml", &many("P", 10)),
        ],
        &RosterSettings::default(),
    );
    assert_eq!(roster.advisors.len(), MAX_ADVISORS);
    assert_eq!(roster.advisors[15].name, "P 5");
    assert_eq!(
        warning_lines(&roster),
        ["/p/WATCHDOG.yml: 4 more advisors skipped: a roster runs at most 16"]
    );
}

#[test]
fn ca6_ca_s10_malformed_cadence_fields_skip_the_entry_with_a_warning_healthy_ones_run() {
    let text = "advisors:\n  - name: Good\n    reviewMode: agent-end\n    reviewInterval: 3\n    \
                syncBacklog: strict\n  - name: Bad\n    reviewMode: every-step\n  - name: Zero\n    \
                reviewInterval: 0\n  - name: Quoted\n    reviewInterval: \"3\"\n  - name: Two\n    \
                syncBacklog: 2\n  - name: Half\n    reviewInterval: 1.5\n  - name: Quoted5\n    \
                syncBacklog: \"5\"\n";
    let roster = merged(&[("/p/WATCHDOG.yml", text)], &RosterSettings::default());
    let names: Vec<&str> = roster.advisors.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["Good", "Quoted5"]);
    let good = &roster.advisors[0];
    assert_eq!(good.review_mode.value, ReviewMode::AgentEnd);
    assert_eq!(good.review_interval.value, 3);
    assert_eq!(good.sync_backlog.value, Some(SyncBacklog::Strict));
    assert_eq!(good.review_mode.source, entry_file("/p/WATCHDOG.yml"));
    assert_eq!(
        roster.advisors[1].sync_backlog.value,
        Some(SyncBacklog::Below(5)),
        "numbers quoted or not"
    );
    let lines = warning_lines(&roster);
    assert_eq!(lines.len(), 5, "{lines:#?}");
    for (name, field) in [
        ("Bad", "reviewMode"),
        ("Zero", "reviewInterval"),
        ("Quoted", "reviewInterval"),
        ("Two", "syncBacklog"),
        ("Half", "reviewInterval"),
    ] {
        let warning = roster
            .warnings
            .iter()
            .find(|w| w.advisor.as_deref() == Some(&format!("\"{name}\"")))
            .unwrap_or_else(|| panic!("no warning for {name}: {lines:#?}"));
        assert_eq!(warning.field.as_deref(), Some(field), "{warning}");
        let line = warning.to_string();
        assert!(
            line.starts_with("/p/WATCHDOG.yml: advisor \"") && line.contains("entry skipped"),
            "{line}"
        );
    }
}

#[test]
fn ca5_ca9_an_entry_without_cadence_fields_is_turn_every_update_and_inherits_the_catch_up() {
    let settings = RosterSettings {
        sync_backlog: Some(Sourced::new(
            SyncBacklog::Strict,
            Source::Setting {
                key: "advisor.syncBacklog",
                file: Some("/u/config.yml".into()),
            },
        )),
        ..RosterSettings::default()
    };
    let roster = merged(
        &[(
            "/p/WATCHDOG.yml",
            "advisors:\n  - name: Plain\n  - name: Off\n    syncBacklog: off\n",
        )],
        &settings,
    );
    let plain = &roster.advisors[0];
    assert_eq!(plain.review_mode, Sourced::default_value(ReviewMode::Turn));
    assert_eq!(plain.review_interval, Sourced::default_value(1));
    assert_eq!(plain.sync_backlog.value, None, "inherits, live");
    assert_eq!(
        plain.sync_backlog.source.to_string(),
        "setting advisor.syncBacklog in /u/config.yml"
    );
    assert_eq!(
        roster.advisors[1].sync_backlog.value,
        Some(SyncBacklog::Off),
        "an explicit off beats a global strict"
    );
    assert_eq!(
        roster.inherited_sync_backlog.map(|s| s.value),
        Some(SyncBacklog::Strict)
    );
}
