//! Path confinement (T2): every path a tool touches resolves inside the workspace root.
//!
//! A path from the model is taken relative to the root (an absolute path is accepted only when
//! it already lies under the root). It is first normalised lexically, so a `..` that climbs
//! above the root is refused before the filesystem is consulted; then it is canonicalised, so a
//! symlink whose target leaves the root is refused too. URLs and the filesystem root `/` are
//! refused outright. Every refusal is a [`ToolError`] whose text tells the model what to do.

use std::io;
use std::path::{Component, Path, PathBuf};

use crate::tools::ToolError;

/// A path that passed confinement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confined {
    /// The canonical path (symlinks resolved), inside the canonical root.
    pub path: PathBuf,
    /// The path as the model should refer to it: relative to the root, `/`-separated,
    /// `.` for the root itself.
    pub display: String,
}

/// The canonical form of the workspace root; an error when the root is unusable.
pub fn canonical_root(root: &Path) -> Result<PathBuf, ToolError> {
    let canon = root.canonicalize().map_err(|e| {
        ToolError::Failed(format!(
            "the workspace root `{}` cannot be opened: {e}",
            root.display()
        ))
    })?;
    if !canon.is_dir() {
        return Err(ToolError::Failed(format!(
            "the workspace root `{}` is not a directory",
            root.display()
        )));
    }
    Ok(canon)
}

/// Normalises `input` lexically into a root-relative path (no `.`, no `..`), refusing URLs,
/// `/`, absolute paths outside the root and `..` escapes. `root` must be canonical.
pub fn relative(root: &Path, input: &str) -> Result<PathBuf, ToolError> {
    let trimmed = input.trim();
    if trimmed.contains("://") {
        return Err(ToolError::OutsideWorkspace(format!(
            "`{trimmed}` looks like a URL; these tools read the local workspace only, never the network"
        )));
    }
    let path = Path::new(trimmed);
    let within = if path.is_absolute() {
        if path.components().all(|c| matches!(c, Component::RootDir)) {
            return Err(ToolError::OutsideWorkspace(format!(
                "`/` is the filesystem root and cannot be listed or searched; use paths relative to the workspace root `{}`",
                root.display()
            )));
        }
        let lexical = normalise(path, PathBuf::new()).unwrap_or_default();
        // The root may have been spelled through a symlink (`/tmp` on macOS): an existing
        // absolute path is also accepted when its canonical form lies under the root.
        let under_root = lexical
            .strip_prefix(root)
            .map(Path::to_path_buf)
            .ok()
            .or_else(|| {
                let canonical = lexical.canonicalize().ok()?;
                canonical.strip_prefix(root).map(Path::to_path_buf).ok()
            });
        match under_root {
            Some(rest) => rest,
            None => {
                return Err(ToolError::OutsideWorkspace(format!(
                    "`{trimmed}` is outside the workspace; only paths under `{}` are allowed (give them relative to it)",
                    root.display()
                )))
            }
        }
    } else {
        path.to_path_buf()
    };
    normalise(&within, PathBuf::new()).ok_or_else(|| {
        ToolError::OutsideWorkspace(format!(
            "`{trimmed}` climbs above the workspace root with `..`; only paths under `{}` are allowed",
            root.display()
        ))
    })
}

/// Applies `path`'s components to `base` lexically; `None` when a `..` would pop past `base`.
fn normalise(path: &Path, mut base: PathBuf) -> Option<PathBuf> {
    let floor = base.components().count();
    for component in path.components() {
        match component {
            Component::Normal(part) => base.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if base.components().count() <= floor {
                    return None;
                }
                base.pop();
            }
            Component::RootDir => base.push("/"),
            Component::Prefix(p) => base.push(p.as_os_str()),
        }
    }
    Some(base)
}

/// `root`-relative display form of a root-relative path.
pub fn display_of(rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        return ".".to_string();
    }
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

/// Resolves `input` inside the canonical `root`: an existing path whose canonical form lies
/// under the root. Errors: outside the root, not found, a symlink loop, unreadable.
pub fn resolve(root: &Path, input: &str) -> Result<Confined, ToolError> {
    let rel = relative(root, input)?;
    let display = display_of(&rel);
    let joined = root.join(&rel);
    let path = joined.canonicalize().map_err(|e| io_error(&display, &e))?;
    if !path.starts_with(root) {
        return Err(ToolError::OutsideWorkspace(format!(
            "`{display}` is a symlink that leads outside the workspace; only files under `{}` can be read",
            root.display()
        )));
    }
    Ok(Confined { path, display })
}

/// A filesystem error on `display`, phrased for the model.
pub fn io_error(display: &str, e: &io::Error) -> ToolError {
    match e.kind() {
        io::ErrorKind::NotFound => ToolError::NotFound(format!(
            "`{display}` does not exist (paths are relative to the workspace root)"
        )),
        io::ErrorKind::PermissionDenied => {
            ToolError::Failed(format!("`{display}` cannot be read: permission denied"))
        }
        _ if is_loop(e) => ToolError::Failed(format!(
            "`{display}` cannot be resolved: it runs into a symlink loop"
        )),
        _ => ToolError::Failed(format!("`{display}` cannot be opened: {e}")),
    }
}

/// Whether `e` is ELOOP ("too many levels of symbolic links").
fn is_loop(e: &io::Error) -> bool {
    const ELOOP_LINUX: i32 = 40;
    const ELOOP_BSD: i32 = 62;
    matches!(e.raw_os_error(), Some(ELOOP_LINUX) | Some(ELOOP_BSD)) && cfg!(unix)
}

/// Display form of a path found under the canonical `root` (e.g. by a directory walk).
pub fn display_under(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) => display_of(rel),
        Err(_) => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "fn a() {}\n").unwrap();
        (dir, root)
    }

    #[test]
    fn t2_relative_and_absolute_paths_inside_the_root_resolve() {
        let (_d, root) = tree();
        let c = resolve(&root, "src/a.rs").unwrap();
        assert_eq!(c.display, "src/a.rs");
        assert_eq!(c.path, root.join("src/a.rs"));
        let abs = root.join("src/a.rs");
        assert_eq!(
            resolve(&root, abs.to_str().unwrap()).unwrap().display,
            "src/a.rs"
        );
        assert_eq!(
            resolve(&root, "./src/../src/a.rs").unwrap().display,
            "src/a.rs"
        );
        assert_eq!(resolve(&root, ".").unwrap().display, ".");
        assert_eq!(resolve(&root, "").unwrap().display, ".");
    }

    #[cfg(unix)]
    #[test]
    fn t2_absolute_paths_through_a_symlinked_root_spelling_resolve() {
        let (_d, root) = tree();
        let alias_dir = tempfile::tempdir().unwrap();
        let alias = alias_dir.path().join("alias");
        std::os::unix::fs::symlink(&root, &alias).unwrap();
        let input = alias.join("src/a.rs");
        let c = resolve(&root, input.to_str().unwrap()).unwrap();
        assert_eq!(c.display, "src/a.rs");
    }

    #[test]
    fn t2_dotdot_escapes_are_refused() {
        let (_d, root) = tree();
        let e = resolve(&root, "../etc/passwd").unwrap_err();
        assert!(matches!(e, ToolError::OutsideWorkspace(_)));
        assert!(
            e.to_string().contains("climbs above the workspace root"),
            "{e}"
        );
        assert!(resolve(&root, "src/../../x").is_err());
    }

    #[test]
    fn t2_absolute_paths_outside_and_the_filesystem_root_are_refused() {
        let (_d, root) = tree();
        let e = resolve(&root, "/etc/passwd").unwrap_err();
        assert!(e.to_string().contains("outside the workspace"), "{e}");
        let e = resolve(&root, "/").unwrap_err();
        assert!(e.to_string().contains("filesystem root"), "{e}");
        let e = resolve(&root, "https://example.com/x").unwrap_err();
        assert!(e.to_string().contains("URL"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn t2_symlinks_leaving_the_root_and_loops_are_refused() {
        let (_d, root) = tree();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("leak")).unwrap();
        let e = resolve(&root, "leak").unwrap_err();
        assert!(e.to_string().contains("symlink that leads outside"), "{e}");
        std::os::unix::fs::symlink(root.join("loop"), root.join("loop")).unwrap();
        let e = resolve(&root, "loop").unwrap_err();
        assert!(e.to_string().contains("symlink loop"), "{e}");
        std::os::unix::fs::symlink(root.join("src/a.rs"), root.join("inside")).unwrap();
        assert_eq!(
            resolve(&root, "inside").unwrap().path,
            root.join("src/a.rs")
        );
    }

    #[test]
    fn t2_missing_path_is_not_found() {
        let (_d, root) = tree();
        let e = resolve(&root, "src/nope.rs").unwrap_err();
        assert_eq!(
            e.to_string(),
            "not found: `src/nope.rs` does not exist (paths are relative to the workspace root)"
        );
    }
}
