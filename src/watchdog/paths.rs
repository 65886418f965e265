//! Path helpers: `~` expansion and lexical normalisation.

use std::path::{Component, Path, PathBuf};

/// Expands a leading `~` (alone or followed by `/`) to `home`. Other paths come back
/// unchanged; `~user` is not special. `None` when the path needs a home that is unknown.
pub fn expand_tilde(path: &str, home: Option<&Path>) -> Option<PathBuf> {
    if path == "~" {
        return home.map(Path::to_path_buf);
    }
    match path.strip_prefix("~/") {
        Some(rest) => home.map(|home| home.join(rest)),
        None => Some(PathBuf::from(path)),
    }
}

/// Normalises a path without touching the filesystem: `.` components vanish and `..`
/// removes the component before it (`a/../b` is `b`; `/..` is `/`).
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                Some(Component::ParentDir | Component::CurDir) | None => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w6_tilde_expands_from_home() {
        let home = Path::new("/home/u");
        assert_eq!(
            expand_tilde("~", Some(home)),
            Some(PathBuf::from("/home/u"))
        );
        assert_eq!(
            expand_tilde("~/notes/a.md", Some(home)),
            Some(PathBuf::from("/home/u/notes/a.md"))
        );
        assert_eq!(
            expand_tilde("~user/a", Some(home)),
            Some(PathBuf::from("~user/a"))
        );
        assert_eq!(expand_tilde("rel/a", None), Some(PathBuf::from("rel/a")));
        assert_eq!(expand_tilde("~/a", None), None);
    }

    #[test]
    fn w6_paths_normalise_lexically() {
        let cases = [
            ("/a/b/../c", "/a/c"),
            ("/a/./b/", "/a/b"),
            ("/..", "/"),
            ("/a/../../b", "/b"),
            ("a/../b", "b"),
            ("../x", "../x"),
            ("a/../../x", "../x"),
        ];
        for (input, expected) in cases {
            assert_eq!(
                normalize_lexically(Path::new(input)),
                PathBuf::from(expected),
                "{input}"
            );
        }
    }
}
