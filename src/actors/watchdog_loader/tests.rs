//! Tests of the WatchdogLoader actor through its mailbox (SPEC §8, W7, W8).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::WatchdogLoader;
use crate::messages::watchdog::GetWatchdogPrompt;
use crate::messages::watchdog::GetWatchdogStats;
use crate::watchdog::WatchdogConfig;
use actix::Actor;

fn write(path: &Path, content: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

/// Sets a modification time far from the current one, so the change is visible whatever
/// the filesystem's timestamp resolution.
fn set_mtime(path: &Path, offset_secs: u64) {
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() + Duration::from_secs(offset_secs))
        .unwrap();
}

/// A home directory inside the temporary directory: the temporary directory's own name
/// starts with a dot, and a plain WATCHDOG.md in a hidden directory is ignored (W2).
fn home_in(dir: &tempfile::TempDir) -> PathBuf {
    let home = dir.path().join("home");
    fs::create_dir_all(&home).unwrap();
    home
}

fn config(home: &Path, cwd: &Path) -> WatchdogConfig {
    WatchdogConfig::from_env_values(cwd.to_path_buf(), None, Some(home.to_path_buf()))
}

#[actix::test]
async fn w8_change_between_reviews_shows_in_the_second_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let home = &home_in(&dir);
    let file = home.join("WATCHDOG.md");
    write(&file, "check error handling");
    let addr = WatchdogLoader::new(config(home, home)).start();

    let first = addr.send(GetWatchdogPrompt).await.unwrap();
    assert!(first.joined().contains("check error handling"));

    write(&file, "check the tests");
    set_mtime(&file, 3600);
    let second = addr.send(GetWatchdogPrompt).await.unwrap();
    assert_eq!(
        second.joined(),
        "Especially pay attention to:\n<attention>\ncheck the tests\n</attention>"
    );
    assert_eq!(addr.send(GetWatchdogStats).await.unwrap().loads, 2);
}

#[actix::test]
async fn w8_unchanged_tree_is_not_reread() {
    let dir = tempfile::tempdir().unwrap();
    let home = &home_in(&dir);
    write(&home.join("WATCHDOG.md"), "rules @part.md");
    write(&home.join("part.md"), "and more");
    let addr = WatchdogLoader::new(config(home, home)).start();

    let first = addr.send(GetWatchdogPrompt).await.unwrap();
    let second = addr.send(GetWatchdogPrompt).await.unwrap();
    let third = addr.send(GetWatchdogPrompt).await.unwrap();
    assert_eq!(first.blocks, second.blocks);
    assert_eq!(second.blocks, third.blocks);
    assert!(first.joined().contains("rules and more"));

    let stats = addr.send(GetWatchdogStats).await.unwrap();
    assert_eq!(stats.requests, 3);
    assert_eq!(stats.loads, 1);
    assert_eq!(stats.files_read, 2);
}

#[actix::test]
async fn w8_new_candidate_appears_in_the_next_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let home = &home_in(&dir);
    let cwd = home.join("proj");
    fs::create_dir_all(&cwd).unwrap();
    write(&home.join("WATCHDOG.md"), "home rules");
    let addr = WatchdogLoader::new(config(home, &cwd)).start();

    assert_eq!(addr.send(GetWatchdogPrompt).await.unwrap().blocks.len(), 1);
    write(&cwd.join(".omp/WATCHDOG.md"), "project rules");
    let prompt = addr.send(GetWatchdogPrompt).await.unwrap();
    assert_eq!(prompt.blocks.len(), 2);
    assert!(prompt.blocks[1].contains("project rules"));
}

#[actix::test]
async fn w3_warning_reported_once_per_change() {
    let dir = tempfile::tempdir().unwrap();
    let home = &home_in(&dir);
    fs::write(home.join("WATCHDOG.md"), [0xc3, 0x28]).unwrap();
    let addr = WatchdogLoader::new(config(home, home)).start();

    let first = addr.send(GetWatchdogPrompt).await.unwrap();
    assert!(first.blocks.is_empty());
    assert_eq!(first.warnings.len(), 1);
    let second = addr.send(GetWatchdogPrompt).await.unwrap();
    assert!(second.warnings.is_empty());
}

#[actix::test]
async fn w5_no_files_means_no_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let home = &home_in(&dir);
    let addr = WatchdogLoader::new(config(home, home)).start();
    let prompt = addr.send(GetWatchdogPrompt).await.unwrap();
    assert!(prompt.blocks.is_empty());
    assert_eq!(prompt.joined(), "");
}

#[actix::test]
async fn w7_subagent_loader_uses_its_own_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let home = &home_in(&dir);
    let sub_cwd = home.join("tools/lint");
    fs::create_dir_all(&sub_cwd).unwrap();
    write(&home.join("WATCHDOG.md"), "shared");
    write(&sub_cwd.join("WATCHDOG.md"), "lint only");
    let main_config = config(home, home);
    let main = WatchdogLoader::new(main_config.clone()).start();
    let sub = WatchdogLoader::new(main_config.with_cwd(&sub_cwd)).start();

    let main_prompt = main.send(GetWatchdogPrompt).await.unwrap();
    let sub_prompt = sub.send(GetWatchdogPrompt).await.unwrap();
    assert_eq!(main_prompt.blocks.len(), 1);
    assert!(!main_prompt.joined().contains("lint only"));
    assert_eq!(sub_prompt.blocks.len(), 2);
    assert!(sub_prompt.blocks[0].contains("shared"));
    assert!(sub_prompt.blocks[1].contains("lint only"));
}

/// Collects the notices a loader sends.
struct Told(Vec<crate::messages::review::NoticeRaised>);

impl Actor for Told {
    type Context = actix::Context<Self>;
}

impl actix::Handler<crate::messages::review::NoticeRaised> for Told {
    type Result = ();

    fn handle(&mut self, msg: crate::messages::review::NoticeRaised, _ctx: &mut Self::Context) {
        self.0.push(msg);
    }
}

#[derive(actix::Message)]
#[rtype(result = "Vec<(String, bool)>")]
struct TakeTold;

impl actix::Handler<TakeTold> for Told {
    type Result = actix::MessageResult<TakeTold>;

    fn handle(&mut self, _msg: TakeTold, _ctx: &mut Self::Context) -> Self::Result {
        let told = self.0.drain(..);
        actix::MessageResult(told.map(|n| (n.text, n.advisor.is_some())).collect())
    }
}

#[actix::test]
async fn w8_ro13_asks_during_a_check_share_it_and_its_warnings_are_told_once_unnamed() {
    let dir = tempfile::tempdir().unwrap();
    let home = &home_in(&dir);
    write(&home.join("WATCHDOG.md"), "rules @bin.md");
    fs::write(home.join("bin.md"), [0xff, 0xfe]).unwrap();
    let told = Told(Vec::new()).start();
    let addr = WatchdogLoader::new(config(home, home))
        .with_notices(told.clone().recipient())
        .start();
    let asks = (0..3).map(|_| addr.send(GetWatchdogPrompt));
    let answers = futures_util::future::join_all(asks).await;
    for answer in answers {
        let prompt = answer.unwrap();
        assert!(prompt.joined().contains("rules"));
        assert!(
            prompt.warnings.is_empty(),
            "the warnings went to the notices"
        );
    }
    let stats = addr.send(GetWatchdogStats).await.unwrap();
    assert_eq!((stats.requests, stats.loads), (3, 1));
    let later = addr.send(GetWatchdogPrompt).await.unwrap();
    assert!(later.warnings.is_empty());
    let told = told.send(TakeTold).await.unwrap();
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0].0.contains("bin.md") && !told[0].1, "{told:?}");
}
