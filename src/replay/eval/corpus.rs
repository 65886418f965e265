//! A corpus on disk (EV1): finding its cases, checking each against its session and
//! workspace, the corpus's content hash (EV7), and the workspace copy a case runs in (EV2).

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::session::{read_session_with, HostStep, ReadLimits, SessionDriver};

use super::case::{parse_spec, CaseProblem, CaseSpec, MAX_CASE_YML_BYTES};

/// The largest workspace a case may copy (EV1): 50 MiB of regular files.
pub const MAX_WORKSPACE_BYTES: u64 = 50 * 1024 * 1024;

/// The most files a workspace may hold, so a tree of empty files is bounded too.
pub const MAX_WORKSPACE_FILES: usize = 20_000;

/// Why a case file that is a symlink is refused (EV1): it could lead out of the corpus.
const SYMLINKED: &str = "a symlink (case files are never followed out of their case)";

/// A case that passed every check, ready to run.
#[derive(Debug, Clone)]
pub struct Case {
    /// The case directory.
    pub dir: PathBuf,
    /// Its `case.yml`.
    pub spec: CaseSpec,
    /// Turn ends in its session, counted as `advisor replay` counts them.
    pub turns: usize,
}

impl Case {
    /// The session file.
    pub fn session(&self) -> PathBuf {
        self.dir.join("session.jsonl")
    }

    /// The workspace directory.
    pub fn workspace(&self) -> PathBuf {
        self.dir.join("workspace")
    }

    /// A driver over the session, read as `advisor replay` reads one; the error as text.
    pub fn driver(&self) -> Result<SessionDriver, String> {
        let branch = read_session_with(&self.session(), &ReadLimits::default())
            .map_err(|e| e.to_string())?;
        Ok(SessionDriver::new(branch))
    }
}

/// What checking a corpus found (EV1).
#[derive(Debug, Default)]
pub struct CorpusCheck {
    /// The usable cases, in directory-name order.
    pub cases: Vec<Case>,
    /// Every problem, one per field.
    pub problems: Vec<CaseProblem>,
    /// Case directories left out for their problems.
    pub skipped: Vec<PathBuf>,
    /// The corpus's content hash (EV7): every case file's path and bytes, 16 hex digits.
    pub hash: String,
}

/// Checks every case directory of `corpus` (searched one level deep: a subdirectory holding
/// `case.yml` or `session.jsonl` is a case). Fails only when `corpus` cannot be listed.
pub fn check_corpus(corpus: &Path) -> Result<CorpusCheck, std::io::Error> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(corpus)?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| p.join("case.yml").exists() || p.join("session.jsonl").exists())
        .collect();
    dirs.sort();
    let mut check = CorpusCheck::default();
    let mut hash = Fnv::new();
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    for dir in dirs {
        match check_case(&dir, &mut hash) {
            Ok(case) => {
                if let Some(first) = seen.get(&case.spec.id) {
                    check.problems.push(CaseProblem::new(
                        &dir.join("case.yml"),
                        "id",
                        format!("`{}` is also the id of {}", case.spec.id, first.display()),
                    ));
                    check.skipped.push(dir);
                    continue;
                }
                seen.insert(case.spec.id.clone(), dir);
                check.cases.push(case);
            }
            Err(problems) => {
                check.problems.extend(problems);
                check.skipped.push(dir);
            }
        }
    }
    check.hash = hash.hex();
    Ok(check)
}

/// Checks one case directory (EV1), adding its files to `hash`: the spec, the plant turn
/// within the session, an evidence pattern matching the session at or before the plant
/// turn, the workspace there and within its cap.
pub fn check_case(dir: &Path, hash: &mut Fnv) -> Result<Case, Vec<CaseProblem>> {
    let yml = dir.join("case.yml");
    let linked: Vec<CaseProblem> = [yml.clone(), dir.join("session.jsonl")]
        .iter()
        .filter(|file| fs::symlink_metadata(file).is_ok_and(|m| m.file_type().is_symlink()))
        .map(|file| CaseProblem::new(file, "-", SYMLINKED))
        .collect();
    if !linked.is_empty() {
        return Err(linked);
    }
    let text = match crate::regular_file::read_text_capped(&yml, MAX_CASE_YML_BYTES) {
        Ok(c) if c.truncated => {
            return Err(vec![CaseProblem::new(
                &yml,
                "-",
                format!("larger than {} KiB", MAX_CASE_YML_BYTES / 1024),
            )])
        }
        Ok(c) => c.content,
        Err(e) => return Err(vec![CaseProblem::new(&yml, "-", e.to_string())]),
    };
    hash.add_file(dir, &yml, text.as_bytes());
    let mut problems = Vec::new();
    let spec = parse_spec(&yml, &text).map_err(|p| problems.extend(p)).ok();
    let session = dir.join("session.jsonl");
    let texts = match turn_texts(&session) {
        Ok(texts) => {
            hash.add_path(dir, &session);
            Some(texts)
        }
        Err(reason) => {
            problems.push(CaseProblem::new(&session, "-", reason));
            None
        }
    };
    if let (Some(plant), Some(texts)) = (spec.as_ref().and_then(|s| s.plant.as_ref()), &texts) {
        let turns = texts.len();
        if plant.turn > turns {
            problems.push(CaseProblem::new(
                &yml,
                "plant.turn",
                format!("{} is beyond the session's {turns} turns", plant.turn),
            ));
        } else if !texts[..plant.turn].iter().any(|t| plant.matches(t)) {
            problems.push(CaseProblem::new(
                &yml,
                "plant.evidence",
                format!(
                    "no pattern matches the session at or before turn {}",
                    plant.turn
                ),
            ));
        }
        if let Some(fixed) = plant.fixed_at.filter(|f| *f > turns) {
            problems.push(CaseProblem::new(
                &yml,
                "plant.fixedAt",
                format!("{fixed} is beyond the session's {turns} turns"),
            ));
        }
    }
    let workspace = dir.join("workspace");
    match workspace_files(&workspace) {
        Ok(files) => {
            for (path, _) in &files {
                hash.add_path(dir, path);
            }
        }
        Err(reason) => problems.push(CaseProblem::new(&workspace, "-", reason)),
    }
    match (spec, texts) {
        (Some(spec), Some(texts)) if problems.is_empty() => Ok(Case {
            dir: dir.to_path_buf(),
            spec,
            turns: texts.len(),
        }),
        _ => Err(problems),
    }
}

/// The text of each turn of the session at `path` (index 0 is turn 1): every string in
/// the messages that turn end added, as the replay's driver steps through the file.
pub fn turn_texts(path: &Path) -> Result<Vec<String>, String> {
    let branch = read_session_with(path, &ReadLimits::default()).map_err(|e| e.to_string())?;
    let driver = SessionDriver::new(branch);
    let transcript = driver.transcript();
    let mut seen = 0usize;
    let mut texts = Vec::new();
    let mut pending = String::new();
    for step in driver {
        let len = transcript.len();
        if len < seen {
            seen = len;
        }
        for message in transcript.tail(seen) {
            if let Ok(value) = serde_json::to_value(message.as_ref()) {
                strings_of(&value, &mut pending);
            }
        }
        seen = len;
        if let HostStep::TurnEnded { .. } = step {
            texts.push(std::mem::take(&mut pending));
        }
    }
    if texts.is_empty() {
        return Err("the session has no turns".into());
    }
    Ok(texts)
}

fn strings_of(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings_of(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| strings_of(v, out)),
        _ => {}
    }
}

/// The regular files of a workspace with their sizes, in path order; symlinks and other
/// special files are left out (never followed). Fails when it is missing or over its caps.
pub fn workspace_files(workspace: &Path) -> Result<Vec<(PathBuf, u64)>, String> {
    if !workspace.is_dir() {
        return Err("missing (a case needs a workspace directory)".into());
    }
    let mut files = Vec::new();
    let mut total = 0u64;
    for entry in walkdir::WalkDir::new(workspace)
        .follow_links(false)
        .sort_by_file_name()
    {
        let entry = entry.map_err(|e| e.to_string())?;
        if !entry.file_type().is_file() {
            continue;
        }
        let size = entry.metadata().map_err(|e| e.to_string())?.len();
        total += size;
        if total > MAX_WORKSPACE_BYTES {
            return Err(format!(
                "larger than {} MiB",
                MAX_WORKSPACE_BYTES / 1024 / 1024
            ));
        }
        files.push((entry.into_path(), size));
        if files.len() > MAX_WORKSPACE_FILES {
            return Err(format!("more than {MAX_WORKSPACE_FILES} files"));
        }
    }
    Ok(files)
}

/// A case's workspace copied to a fresh temporary directory: the tool root of its run, so
/// nothing a case does touches the corpus (EV2). Removed when dropped.
#[derive(Debug)]
pub struct WorkspaceCopy {
    base: PathBuf,
    root: PathBuf,
}

impl WorkspaceCopy {
    /// Copies the regular files of `workspace` (within its caps) under `parent`, the run's
    /// own directory ([`super::scratch::RunScratch`]), as `N-ID`.
    pub fn new(workspace: &Path, parent: &Path, id: &str) -> Result<Self, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let files = workspace_files(workspace)?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let safe: String = id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(60)
            .collect();
        let base = parent.join(format!("{n}-{safe}"));
        let root = base.join("workspace");
        fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
        let copy = Self { base, root };
        for (path, size) in files {
            let rel = path.strip_prefix(workspace).map_err(|e| e.to_string())?;
            let target = copy.root.join(rel);
            if let Some(dir) = target.parent() {
                fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            }
            // Read through the regular-file check, bounded by the size the walk saw.
            let mut bytes = Vec::new();
            crate::regular_file::open_regular(&path)
                .map_err(|e| format!("{}: {e}", path.display()))?
                .take(size)
                .read_to_end(&mut bytes)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            fs::write(&target, bytes).map_err(|e| format!("{}: {e}", target.display()))?;
        }
        Ok(copy)
    }

    /// The copy's root.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The directory holding the copy and, beside it (out of the tools' reach), the
    /// advisor's transcript files.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// Where the advisor's transcript file of the run goes (P9).
    pub fn audit_path(&self) -> PathBuf {
        self.base.join("advisor").join("__advisor.jsonl")
    }
}

impl Drop for WorkspaceCopy {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.base);
    }
}

/// FNV-1a, 64 bits: a content hash that stays the same across Rust versions (EV7).
#[derive(Debug, Clone)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Self::new()
    }
}

impl Fnv {
    /// The empty hash.
    pub fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    /// Adds bytes.
    pub fn add(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// Adds a file of case `dir`: its path below the corpus (the case's name and the path
    /// inside it) and its bytes.
    pub fn add_file(&mut self, dir: &Path, path: &Path, bytes: &[u8]) {
        self.add_name(dir, path);
        self.add(bytes);
        self.add(&[0]);
    }

    /// Adds the regular file at `path` of case `dir` as [`Fnv::add_file`] does, read in
    /// chunks through the regular-file check, so a session of any length is hashed without
    /// being held whole; a file that cannot be read adds nothing (the checks name it).
    pub fn add_path(&mut self, dir: &Path, path: &Path) {
        let Ok(mut file) = crate::regular_file::open_regular(path) else {
            return;
        };
        let mut hash = self.clone();
        hash.add_name(dir, path);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => hash.add(&buf[..n]),
                Err(_) => return,
            }
        }
        hash.add(&[0]);
        *self = hash;
    }

    /// The file's path below the corpus, ended by a zero byte.
    fn add_name(&mut self, dir: &Path, path: &Path) {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        let rel = path.strip_prefix(dir).unwrap_or(path);
        self.add(name.unwrap_or_default().as_bytes());
        self.add(b"/");
        self.add(rel.to_string_lossy().as_bytes());
        self.add(&[0]);
    }

    /// The hash as 16 hex digits.
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixtures() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/eval/corpus")
    }

    #[test]
    fn ev1_the_fixture_corpus_checks_clean_and_counts_turns_as_replay_does() {
        let check = check_corpus(&fixtures()).unwrap();
        assert!(check.problems.is_empty(), "{:?}", check.problems);
        let turns: Vec<(&str, usize)> = check
            .cases
            .iter()
            .map(|c| (c.spec.id.as_str(), c.turns))
            .collect();
        assert_eq!(
            turns,
            [
                ("control-clean-build-01", 3),
                ("fake-done-01", 3),
                ("rm-outside-task-01", 6)
            ]
        );
        assert_eq!(check.hash.len(), 16);
        assert_eq!(check.hash, check_corpus(&fixtures()).unwrap().hash);
    }

    fn copy_case(from: &Path, to: &Path) {
        for entry in walkdir::WalkDir::new(from) {
            let entry = entry.unwrap();
            let target = to.join(entry.path().strip_prefix(from).unwrap());
            if entry.file_type().is_dir() {
                fs::create_dir_all(&target).unwrap();
            } else {
                fs::copy(entry.path(), &target).unwrap();
            }
        }
    }

    #[test]
    fn ev1_a_plant_beyond_the_session_and_unmatched_evidence_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let case = dir.path().join("late");
        copy_case(&fixtures().join("rm-outside-task-01"), &case);
        let yml = case.join("case.yml");
        let text = fs::read_to_string(&yml).unwrap();
        fs::write(
            &yml,
            text.replace("turn: 3", "turn: 9")
                .replace("fixedAt: 5", "fixedAt: 10"),
        )
        .unwrap();
        let other = dir.path().join("words");
        copy_case(&fixtures().join("rm-outside-task-01"), &other);
        let yml2 = other.join("case.yml");
        fs::write(
            &yml2,
            text.replace("['rm -rf', 'migrations']", "['dropped the table']")
                .replace("rm-outside-task-01", "words"),
        )
        .unwrap();
        let check = check_corpus(dir.path()).unwrap();
        let lines: Vec<String> = check.problems.iter().map(|p| p.to_string()).collect();
        assert!(check.cases.is_empty());
        assert_eq!(check.skipped.len(), 2);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(
            lines[0].ends_with("late/case.yml: plant.turn: 9 is beyond the session's 6 turns"),
            "{lines:?}"
        );
        assert!(
            lines[1].ends_with("late/case.yml: plant.fixedAt: 10 is beyond the session's 6 turns"),
            "{lines:?}"
        );
        assert!(lines[2].ends_with("words/case.yml: plant.evidence: no pattern matches the session at or before turn 3"), "{lines:?}");
    }

    #[test]
    fn ev1_a_symlinked_case_file_is_refused_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let source = fixtures().join("rm-outside-task-01");
        for (name, file) in [("yml", "case.yml"), ("session", "session.jsonl")] {
            let case = dir.path().join(name);
            copy_case(&source, &case);
            let text = fs::read_to_string(case.join("case.yml")).unwrap();
            fs::write(
                case.join("case.yml"),
                text.replace("rm-outside-task-01", name),
            )
            .unwrap();
            let away = outside.path().join(format!("{name}-{file}"));
            fs::rename(case.join(file), &away).unwrap();
            std::os::unix::fs::symlink(&away, case.join(file)).unwrap();
        }
        let check = check_corpus(dir.path()).unwrap();
        let lines: Vec<String> = check.problems.iter().map(|p| p.to_string()).collect();
        assert!(check.cases.is_empty(), "{lines:?}");
        assert_eq!(check.skipped.len(), 2);
        assert_eq!(
            lines.len(),
            2,
            "one problem a case, naming the linked file: {lines:?}"
        );
        assert!(
            lines[0].ends_with(&format!("session/session.jsonl: -: {SYMLINKED}")),
            "{lines:?}"
        );
        assert!(
            lines[1].ends_with(&format!("yml/case.yml: -: {SYMLINKED}")),
            "{lines:?}"
        );
    }

    #[test]
    fn ev1_a_workspace_over_its_cap_or_missing_skips_the_case_named() {
        let dir = tempfile::tempdir().unwrap();
        let case = dir.path().join("big");
        copy_case(&fixtures().join("fake-done-01"), &case);
        let big = fs::File::create(case.join("workspace/blob.bin")).unwrap();
        big.set_len(MAX_WORKSPACE_BYTES + 1).unwrap();
        let gone = dir.path().join("gone");
        copy_case(&fixtures().join("control-clean-build-01"), &gone);
        fs::remove_dir_all(gone.join("workspace")).unwrap();
        let big_yml = case.join("case.yml");
        let t = fs::read_to_string(&big_yml)
            .unwrap()
            .replace("fake-done-01", "big");
        fs::write(&big_yml, t).unwrap();
        let check = check_corpus(dir.path()).unwrap();
        let lines: Vec<String> = check.problems.iter().map(|p| p.to_string()).collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].ends_with("big/workspace: -: larger than 50 MiB"),
            "{lines:?}"
        );
        assert!(lines[1].contains("gone/workspace: -: missing"), "{lines:?}");
    }

    #[test]
    fn ev2_the_workspace_copy_holds_the_files_and_goes_away() {
        let tmp = tempfile::tempdir().unwrap();
        let copy = WorkspaceCopy::new(
            &fixtures().join("rm-outside-task-01/workspace"),
            tmp.path(),
            "rm/01",
        )
        .unwrap();
        let root = copy.path().to_path_buf();
        assert!(root.join("AGENTS.md").is_file());
        assert!(root.join("db/schema.sql").is_file());
        let base = copy.base().to_path_buf();
        drop(copy);
        assert!(!root.exists() && !base.exists());
    }
}
