//! WATCHDOG.md discovery, order, block format, imports and reload checks on real
//! temporary directory trees (SPEC §8).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use advisor::watchdog::{load, refresh, Refresh, WatchdogConfig};

/// A temporary tree: `<root>/home` is the home directory, the agent directory is
/// `<root>/home/.omp/agent`.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Self {
        let tree = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        fs::create_dir_all(tree.home()).unwrap();
        tree
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    fn write(&self, rel: &str, content: &str) -> PathBuf {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, content).unwrap();
        path
    }

    fn mkdir(&self, rel: &str) -> PathBuf {
        let path = self.path(rel);
        fs::create_dir_all(&path).unwrap();
        path
    }

    fn config(&self, cwd: &str) -> WatchdogConfig {
        WatchdogConfig::from_env_values(self.mkdir(cwd), None, Some(self.home()))
    }

    /// The blocks' contents, unwrapped, for compact assertions.
    fn contents(&self, cwd: &str) -> Vec<String> {
        load(&self.config(cwd))
            .prompt
            .blocks
            .iter()
            .map(|block| unwrap_block(block))
            .collect()
    }
}

fn unwrap_block(block: &str) -> String {
    block
        .strip_prefix("Especially pay attention to:\n<attention>\n")
        .and_then(|rest| rest.strip_suffix("\n</attention>"))
        .unwrap_or_else(|| panic!("not a watchdog block: {block:?}"))
        .to_owned()
}

fn git_init(dir: &Path) {
    let status = Command::new("git")
        .args(["init", "--quiet"])
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn w4_user_file_comes_first() {
    let tree = Tree::new();
    git_init(&tree.mkdir("home/repo"));
    tree.write("home/repo/WATCHDOG.md", "project");
    tree.write("home/repo/.omp/WATCHDOG.md", "project omp");
    tree.write("home/.omp/agent/WATCHDOG.md", "user");
    assert_eq!(
        tree.contents("home/repo"),
        ["user", "project omp", "project"]
    );
}

#[test]
fn w4_parent_before_child_and_all_load_together() {
    let tree = Tree::new();
    git_init(&tree.mkdir("home/repo"));
    tree.write("home/repo/WATCHDOG.md", "parent");
    tree.write("home/repo/crates/WATCHDOG.md", "middle");
    tree.write("home/repo/crates/core/WATCHDOG.md", "child");
    assert_eq!(
        tree.contents("home/repo/crates/core"),
        ["parent", "middle", "child"]
    );
}

#[test]
fn w4_omp_before_plain_file_at_one_level() {
    let tree = Tree::new();
    git_init(&tree.mkdir("home/repo"));
    tree.write("home/repo/WATCHDOG.md", "plain");
    tree.write("home/repo/.omp/WATCHDOG.md", "omp");
    assert_eq!(tree.contents("home/repo"), ["omp", "plain"]);
}

#[test]
fn w5_blocks_are_wrapped_and_joined_by_a_blank_line() {
    let tree = Tree::new();
    git_init(&tree.mkdir("home/repo"));
    tree.write("home/repo/.omp/WATCHDOG.md", "  first\n");
    tree.write("home/repo/WATCHDOG.md", "second & <third>");
    let prompt = load(&tree.config("home/repo")).prompt;
    assert_eq!(
        prompt.joined(),
        "Especially pay attention to:\n<attention>\n  first\n\n</attention>\n\n\
         Especially pay attention to:\n<attention>\nsecond & <third>\n</attention>"
    );
}

#[test]
fn w2_hidden_owner_directory_ignored_but_omp_kept() {
    let tree = Tree::new();
    git_init(&tree.mkdir("home/repo"));
    tree.write("home/repo/.hidden/WATCHDOG.md", "hidden plain");
    tree.write("home/repo/.hidden/.omp/WATCHDOG.md", "hidden omp");
    tree.write("home/repo/.hidden/work/WATCHDOG.md", "visible child");
    tree.write("home/repo/WATCHDOG.md", "root");
    assert_eq!(
        tree.contents("home/repo/.hidden/work"),
        ["root", "hidden omp", "visible child"]
    );
}

#[test]
fn w2_user_file_kept_inside_hidden_directories() {
    let tree = Tree::new();
    tree.write("home/.omp/agent/WATCHDOG.md", "user");
    assert_eq!(tree.contents("home"), ["user"]);
}

#[test]
fn w1_walk_stops_at_the_repository_root() {
    let tree = Tree::new();
    tree.write("home/WATCHDOG.md", "above the repository");
    git_init(&tree.mkdir("home/repo"));
    tree.write("home/repo/WATCHDOG.md", "repository root");
    tree.write("home/repo/src/WATCHDOG.md", "src");
    assert_eq!(tree.contents("home/repo/src"), ["repository root", "src"]);
}

#[test]
fn w1_git_file_marks_a_repository_root_too() {
    let tree = Tree::new();
    tree.write("home/WATCHDOG.md", "above the worktree");
    tree.write(
        "home/worktree/.git",
        "gitdir: /elsewhere/.git/worktrees/w\n",
    );
    tree.write("home/worktree/WATCHDOG.md", "worktree");
    assert_eq!(tree.contents("home/worktree/deep"), ["worktree"]);
}

#[test]
fn w1_without_repository_walk_stops_at_home() {
    let tree = Tree::new();
    tree.write("WATCHDOG.md", "above home");
    tree.write("home/WATCHDOG.md", "home");
    tree.write("home/proj/WATCHDOG.md", "proj");
    assert_eq!(tree.contents("home/proj/sub"), ["home", "proj"]);
}

#[test]
fn w1_pi_coding_agent_dir_locates_the_user_file() {
    let tree = Tree::new();
    tree.write("agents/WATCHDOG.md", "custom user");
    tree.write("home/.omp/agent/WATCHDOG.md", "default user");
    let agent_dir = tree.path("agents").display().to_string();
    let config = WatchdogConfig::from_env_values(tree.home(), Some(agent_dir), Some(tree.home()));
    let prompt = load(&config).prompt;
    assert_eq!(prompt.blocks.len(), 1);
    assert_eq!(unwrap_block(&prompt.blocks[0]), "custom user");
}

#[test]
fn w1_file_reached_twice_gives_one_block() {
    let tree = Tree::new();
    git_init(&tree.mkdir("home/repo"));
    tree.write("home/repo/WATCHDOG.md", "both user and project");
    let repo = tree.path("home/repo");
    let config = WatchdogConfig::from_env_values(
        repo.clone(),
        Some(repo.display().to_string()),
        Some(tree.home()),
    );
    assert_eq!(load(&config).prompt.blocks.len(), 1);
}

#[test]
fn w5_empty_watchdog_file_is_still_a_block() {
    let tree = Tree::new();
    tree.write("home/WATCHDOG.md", "");
    let prompt = load(&tree.config("home")).prompt;
    assert_eq!(
        prompt.blocks,
        ["Especially pay attention to:\n<attention>\n\n</attention>"]
    );
}

#[test]
fn w3_directory_named_watchdog_md_is_skipped_silently() {
    let tree = Tree::new();
    tree.mkdir("home/WATCHDOG.md");
    tree.write("home/proj/WATCHDOG.md", "proj");
    let prompt = load(&tree.config("home/proj")).prompt;
    assert_eq!(prompt.blocks.len(), 1);
    assert!(prompt.warnings.is_empty());
}

#[test]
fn w3_non_utf8_file_is_skipped_with_a_warning() {
    let tree = Tree::new();
    let bad = tree.path("home/WATCHDOG.md");
    fs::write(&bad, [b'o', b'k', 0xff, 0xfe]).unwrap();
    tree.write("home/proj/WATCHDOG.md", "proj");
    let prompt = load(&tree.config("home/proj")).prompt;
    assert_eq!(prompt.blocks.len(), 1);
    assert_eq!(unwrap_block(&prompt.blocks[0]), "proj");
    assert_eq!(prompt.warnings.len(), 1);
    assert!(prompt.warnings[0].contains(&bad.display().to_string()));
    assert!(prompt.warnings[0].contains("UTF-8"));
}

#[test]
fn w3_symlinked_watchdog_file_is_followed() {
    let tree = Tree::new();
    let target = tree.write("home/shared/rules.md", "shared rules");
    std::os::unix::fs::symlink(&target, tree.path("home/WATCHDOG.md")).unwrap();
    assert_eq!(tree.contents("home"), ["shared rules"]);
    // The user's own file may point anywhere.
    let outside = tree.write("elsewhere/mine.md", "my rules");
    tree.mkdir("home/.omp/agent");
    std::os::unix::fs::symlink(&outside, tree.path("home/.omp/agent/WATCHDOG.md")).unwrap();
    assert_eq!(tree.contents("home"), ["my rules", "shared rules"]);
}

#[test]
fn w6_imports_resolve_inline_relative_and_from_home() {
    let tree = Tree::new();
    git_init(&tree.mkdir("home/repo"));
    tree.write("home/notes.md", "home notes");
    tree.write("home/repo/docs/style.md", "style: @./tone.md");
    tree.write("home/repo/docs/tone.md", "calm");
    tree.write("home/repo/sub/local.md", "local");
    tree.write(
        "home/repo/sub/WATCHDOG.md",
        "Read @../docs/style.md and @local.md.",
    );
    // `~` imports are the user file's (a project file's stay literal, W6).
    tree.write("home/.omp/agent/WATCHDOG.md", "Mine: @~/notes.md.");
    assert_eq!(
        tree.contents("home/repo/sub"),
        ["Mine: home notes.", "Read style: calm and local."]
    );
}

#[test]
fn w6_nesting_cycles_repeats_and_missing_on_disk() {
    let tree = Tree::new();
    tree.write("home/d1.md", "1 @d2.md");
    tree.write("home/d2.md", "2 @d3.md");
    tree.write("home/d3.md", "3 @d4.md");
    tree.write("home/d4.md", "4 @d5.md");
    tree.write("home/d5.md", "5 @d6.md");
    tree.write("home/d6.md", "6");
    tree.write("home/a.md", "a @b.md");
    tree.write("home/b.md", "b @a.md");
    tree.write(
        "home/WATCHDOG.md",
        "@d1.md\n@a.md\n@a.md again\n@gone.md\n```\n@d6.md\n```\n`@d6.md` me@d6.md\n",
    );
    assert_eq!(
        tree.contents("home"),
        ["1 2 3 4 5 @d6.md\na b @a.md\n@a.md again\n@gone.md\n```\n@d6.md\n```\n`@d6.md` me@d6.md\n"]
    );
}

#[test]
fn w6_import_of_a_directory_stays_literal() {
    let tree = Tree::new();
    tree.mkdir("home/docs");
    tree.write("home/WATCHDOG.md", "@docs");
    assert_eq!(tree.contents("home"), ["@docs"]);
}

/// Moves a file's modification time well away from its current one, so a change is seen
/// even on filesystems with coarse timestamps.
fn touch_later(path: &Path) {
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() + Duration::from_secs(3600))
        .unwrap();
}

#[test]
fn w8_unchanged_tree_is_not_reloaded() {
    let tree = Tree::new();
    tree.write("home/WATCHDOG.md", "rules");
    let config = tree.config("home");
    let first = load(&config);
    assert_eq!(
        refresh(&config, Some(&first.fingerprint)),
        Refresh::Unchanged
    );
}

#[test]
fn w8_changed_file_is_reloaded() {
    let tree = Tree::new();
    let file = tree.write("home/WATCHDOG.md", "old");
    let config = tree.config("home");
    let first = load(&config);
    fs::write(&file, "new").unwrap();
    touch_later(&file);
    let Refresh::Rebuilt(second) = refresh(&config, Some(&first.fingerprint)) else {
        panic!("a changed file must trigger a reload");
    };
    assert_eq!(unwrap_block(&second.prompt.blocks[0]), "new");
}

#[test]
fn w8_new_candidate_is_picked_up() {
    let tree = Tree::new();
    tree.write("home/WATCHDOG.md", "home");
    let config = tree.config("home/proj");
    let first = load(&config);
    tree.write("home/proj/.omp/WATCHDOG.md", "new one");
    let Refresh::Rebuilt(second) = refresh(&config, Some(&first.fingerprint)) else {
        panic!("a new candidate must trigger a reload");
    };
    assert_eq!(second.prompt.blocks.len(), 2);
}

#[test]
fn w8_new_repository_root_changes_the_candidates() {
    let tree = Tree::new();
    tree.write("home/WATCHDOG.md", "home");
    tree.write("home/proj/WATCHDOG.md", "proj");
    let config = tree.config("home/proj");
    let first = load(&config);
    assert_eq!(first.prompt.blocks.len(), 2);
    git_init(&tree.path("home/proj"));
    let Refresh::Rebuilt(second) = refresh(&config, Some(&first.fingerprint)) else {
        panic!("a new repository root must trigger a reload");
    };
    assert_eq!(second.prompt.blocks.len(), 1);
}

#[test]
fn w8_changed_import_is_reloaded() {
    let tree = Tree::new();
    tree.write("home/WATCHDOG.md", "@part.md");
    let part = tree.write("home/part.md", "old part");
    let config = tree.config("home");
    let first = load(&config);
    fs::write(&part, "new part").unwrap();
    touch_later(&part);
    let Refresh::Rebuilt(second) = refresh(&config, Some(&first.fingerprint)) else {
        panic!("a changed import must trigger a reload");
    };
    assert_eq!(unwrap_block(&second.prompt.blocks[0]), "new part");
}

#[test]
fn w8_missing_import_appearing_is_reloaded() {
    let tree = Tree::new();
    tree.write("home/WATCHDOG.md", "@later.md");
    let config = tree.config("home");
    let first = load(&config);
    assert_eq!(unwrap_block(&first.prompt.blocks[0]), "@later.md");
    tree.write("home/later.md", "arrived");
    let Refresh::Rebuilt(second) = refresh(&config, Some(&first.fingerprint)) else {
        panic!("an import that appeared must trigger a reload");
    };
    assert_eq!(unwrap_block(&second.prompt.blocks[0]), "arrived");
}

#[test]
fn w7_subagent_discovers_from_its_own_directory() {
    let tree = Tree::new();
    git_init(&tree.mkdir("home/repo"));
    tree.write("home/repo/WATCHDOG.md", "main");
    tree.write("home/repo/pkg/WATCHDOG.md", "pkg");
    let main = tree.config("home/repo");
    let sub = main.with_cwd(tree.path("home/repo/pkg"));
    assert_eq!(load(&main).prompt.blocks.len(), 1);
    let sub_blocks = load(&sub).prompt.blocks;
    assert_eq!(sub_blocks.len(), 2);
    assert_eq!(unwrap_block(&sub_blocks[1]), "pkg");
}

// ---------------------------------------------------------------------------------------
// W6, X5: secrets, sizes and special files
// ---------------------------------------------------------------------------------------

fn mkfifo(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

/// Loads on its own thread and fails (instead of hanging) when that takes over 20 s.
fn load_within_seconds(config: WatchdogConfig) -> advisor::watchdog::Loaded {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(load(&config));
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the load finished without waiting on a file")
}

#[test]
fn w6_project_imports_resolve_only_inside_the_repository_root() {
    let tree = Tree::new();
    git_init(&tree.mkdir("home/repo"));
    tree.write("home/notes.md", "home notes");
    let outside = tree.write("home/outside.md", "outside");
    tree.write("home/repo/docs/in.md", "inside");
    std::os::unix::fs::symlink(&outside, tree.path("home/repo/docs/link.md")).unwrap();
    std::os::unix::fs::symlink(tree.path("home"), tree.path("home/repo/up")).unwrap();
    tree.write(
        "home/repo/sub/WATCHDOG.md",
        "@../docs/in.md @/proc/self/environ @/etc/passwd @~/notes.md @../../outside.md \
         @../docs/link.md @../up/notes.md",
    );
    let loaded = load(&tree.config("home/repo/sub"));
    let blocks: Vec<String> = loaded
        .prompt
        .blocks
        .iter()
        .map(|b| unwrap_block(b))
        .collect();
    assert_eq!(
        blocks,
        [
            "inside @/proc/self/environ @/etc/passwd @~/notes.md @../../outside.md \
          @../docs/link.md @../up/notes.md"
        ]
    );
    let root = tree.path("home/repo").canonicalize().unwrap();
    let warnings = &loaded.prompt.warnings;
    assert_eq!(warnings.len(), 6, "{warnings:#?}");
    assert_eq!(
        warnings[0],
        format!(
            "watchdog: import @/proc/self/environ left as is: a project WATCHDOG file may only \
             import files inside {}",
            tree.path("home/repo").display()
        )
    );
    assert!(
        warnings[4].contains("docs/link.md")
            && warnings[4].ends_with(&format!("inside {}", root.display())),
        "{}",
        warnings[4]
    );
}

#[test]
fn w6_without_a_repository_imports_stay_inside_the_working_directory() {
    let tree = Tree::new();
    tree.write("home/secret.md", "secret");
    tree.write("home/proj/part.md", "part");
    tree.write("home/proj/WATCHDOG.md", "@part.md @../secret.md");
    let loaded = load(&tree.config("home/proj"));
    assert_eq!(unwrap_block(&loaded.prompt.blocks[0]), "part @../secret.md");
    assert_eq!(
        loaded.prompt.warnings.len(),
        1,
        "{:?}",
        loaded.prompt.warnings
    );
}

#[test]
fn w6_the_user_file_imports_from_anywhere() {
    let tree = Tree::new();
    git_init(&tree.mkdir("home/repo"));
    let elsewhere = tree.write("elsewhere/rules.md", "absolute rules");
    tree.write("home/notes.md", "home notes");
    tree.write(
        "home/.omp/agent/WATCHDOG.md",
        &format!(
            "@~/notes.md @{} @../../../elsewhere/rules.md",
            elsewhere.display()
        ),
    );
    let loaded = load(&tree.config("home/repo"));
    assert_eq!(
        unwrap_block(&loaded.prompt.blocks[0]),
        "home notes absolute rules @../../../elsewhere/rules.md"
    );
    assert!(
        loaded.prompt.warnings.is_empty(),
        "{:?}",
        loaded.prompt.warnings
    );
}

#[test]
fn w6_a_project_watchdog_symlink_leading_out_is_skipped_with_a_warning() {
    let tree = Tree::new();
    git_init(&tree.mkdir("home/repo"));
    let target = tree.write("home/private.md", "private");
    std::os::unix::fs::symlink(&target, tree.path("home/repo/WATCHDOG.md")).unwrap();
    tree.mkdir("home/repo/.omp");
    std::os::unix::fs::symlink(
        "/proc/self/environ",
        tree.path("home/repo/.omp/WATCHDOG.md"),
    )
    .unwrap();
    let loaded = load(&tree.config("home/repo"));
    assert!(
        loaded.prompt.blocks.is_empty(),
        "{:?}",
        loaded.prompt.blocks
    );
    let warnings = &loaded.prompt.warnings;
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert_eq!(
        warnings[0],
        format!(
            "watchdog: skipped {}: it is a symlink leading outside {}",
            tree.path("home/repo/.omp/WATCHDOG.md").display(),
            tree.path("home/repo").canonicalize().unwrap().display()
        )
    );
    assert!(
        warnings[1].contains("home/repo/WATCHDOG.md"),
        "{}",
        warnings[1]
    );
}

#[test]
fn w6_watchdog_blocks_pass_through_secret_redaction() {
    let tree = Tree::new();
    let key = format!("sk-proj-{}", "aZ3kQ9mX2pL7rT5vB8nC1dF4".repeat(2));
    tree.write("home/part.md", &format!("export OPENAI_API_KEY={key}\n"));
    tree.write("home/WATCHDOG.md", "Check this:\n@part.md");
    let block = tree.contents("home").remove(0);
    assert_eq!(
        block,
        "Check this:\nexport OPENAI_API_KEY=[redacted:env-secret]\n"
    );
    let unredacted = advisor::watchdog::load_with(&tree.config("home"), None);
    assert!(unwrap_block(&unredacted.prompt.blocks[0]).contains(&key));
}

#[test]
fn w6_watchdog_content_is_cut_at_256_kib_a_file_and_1_mib_in_all() {
    let tree = Tree::new();
    // 200 MB, sparse: only the first 256 KiB are ever read.
    let huge = tree.path("home/.omp/agent/WATCHDOG.md");
    fs::create_dir_all(huge.parent().unwrap()).unwrap();
    fs::File::create(&huge).unwrap().set_len(200 << 20).unwrap();
    let loaded = load(&tree.config("home"));
    assert_eq!(unwrap_block(&loaded.prompt.blocks[0]).len(), 256 * 1024);
    assert_eq!(
        loaded.prompt.warnings,
        [format!(
            "watchdog: {} is over 256 KiB; only its first 256 KiB are used",
            huge.display()
        )]
    );

    fs::write(&huge, "user rules").unwrap();
    git_init(&tree.mkdir("home/a"));
    let chunk = "r".repeat(200 * 1024);
    for level in ["home/a", "home/a/b", "home/a/b/c", "home/a/b/c/d"] {
        tree.write(
            &format!("{level}/WATCHDOG.md"),
            &format!("@part.md {chunk}"),
        );
        tree.write(&format!("{level}/part.md"), &chunk);
    }
    let loaded = load(&tree.config("home/a/b/c/d"));
    let total: usize = loaded
        .prompt
        .blocks
        .iter()
        .map(|b| unwrap_block(b).len())
        .sum();
    assert!(total <= 1 << 20, "{total}");
    assert!(
        total > (1 << 20) - 64,
        "the budget is used up to the cap: {total}"
    );
    assert_eq!(
        loaded.prompt.warnings,
        ["watchdog: the watchdog files pass 1 MiB in all; the rest is left out"]
    );
}

#[test]
fn w6_a_fifo_watchdog_file_or_import_is_one_warning_never_a_wait() {
    let tree = Tree::new();
    let fifo = tree.path("home/WATCHDOG.md");
    mkfifo(&fifo);
    let loaded = load_within_seconds(tree.config("home"));
    assert!(loaded.prompt.blocks.is_empty());
    assert_eq!(
        loaded.prompt.warnings,
        [format!(
            "watchdog: skipped {}: not a regular file (a FIFO)",
            fifo.display()
        )]
    );

    fs::remove_file(&fifo).unwrap();
    tree.write("home/WATCHDOG.md", "see @pipe.md");
    let pipe = tree.path("home/pipe.md");
    mkfifo(&pipe);
    let loaded = load_within_seconds(tree.config("home"));
    assert_eq!(unwrap_block(&loaded.prompt.blocks[0]), "see @pipe.md");
    assert_eq!(
        loaded.prompt.warnings,
        [format!(
            "watchdog: import {} left as is: not a regular file (a FIFO)",
            pipe.display()
        )]
    );
}
