//! A unified-style line diff, for `advisor install --dry-run` (H25): what would change in a
//! settings file, with three lines of context around each change.

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// The most line pairs the exact diff compares (the product of the two line counts); past
/// it the whole old text is shown removed and the new one added.
const MAX_CELLS: usize = 4_000_000;

/// One line of the edit script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op<'a> {
    Same(&'a str),
    Removed(&'a str),
    Added(&'a str),
}

/// The diff of `before` (`None`: the file does not exist) and `after` (`None`: the file is
/// removed) under the name `path`, in unified format (`---`/`+++` lines, `@@` hunks); empty
/// when nothing changes.
pub fn unified_diff(path: &str, before: Option<&str>, after: Option<&str>) -> String {
    if before == after {
        return String::new();
    }
    let old: Vec<&str> = before.map_or_else(Vec::new, |t| t.lines().collect());
    let new: Vec<&str> = after.map_or_else(Vec::new, |t| t.lines().collect());
    let ops = edit_script(&old, &new);
    let mut out = format!(
        "--- {}\n+++ {}\n",
        if before.is_some() { path } else { "/dev/null" },
        if after.is_some() { path } else { "/dev/null" }
    );
    for hunk in hunks(&ops) {
        out.push_str(&hunk);
    }
    out
}

/// The shortest edit script by longest common subsequence (or a plain replace past
/// [`MAX_CELLS`]).
fn edit_script<'a>(old: &[&'a str], new: &[&'a str]) -> Vec<Op<'a>> {
    let (n, m) = (old.len(), new.len());
    if n.saturating_mul(m) > MAX_CELLS {
        let mut ops: Vec<Op> = old.iter().map(|l| Op::Removed(l)).collect();
        ops.extend(new.iter().map(|l| Op::Added(l)));
        return ops;
    }
    // lcs[i][j]: the common subsequence length of old[i..] and new[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if old[i] == new[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::with_capacity(n + m);
    while i < n || j < m {
        if i < n && j < m && old[i] == new[j] {
            ops.push(Op::Same(old[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            // Removals before additions, as diff prints them.
            ops.push(Op::Removed(old[i]));
            i += 1;
        } else {
            ops.push(Op::Added(new[j]));
            j += 1;
        }
    }
    ops
}

/// The hunks of `ops`, each with its `@@ -a,b +c,d @@` header.
fn hunks(ops: &[Op]) -> Vec<String> {
    let changed: Vec<usize> = (0..ops.len())
        .filter(|&k| !matches!(ops[k], Op::Same(_)))
        .collect();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for &k in &changed {
        let start = k.saturating_sub(CONTEXT);
        let end = (k + CONTEXT + 1).min(ops.len());
        match ranges.last_mut() {
            Some(last) if start <= last.1 => last.1 = end,
            _ => ranges.push((start, end)),
        }
    }
    ranges
        .into_iter()
        .map(|(start, end)| hunk(ops, start, end))
        .collect()
}

/// One hunk: the ops in `start..end` with their header.
fn hunk(ops: &[Op], start: usize, end: usize) -> String {
    let count = |range: &[Op], keep: fn(&Op) -> bool| range.iter().filter(|op| keep(op)).count();
    let in_old = |op: &Op| !matches!(op, Op::Added(_));
    let in_new = |op: &Op| !matches!(op, Op::Removed(_));
    let old_start = count(&ops[..start], in_old);
    let new_start = count(&ops[..start], in_new);
    let old_len = count(&ops[start..end], in_old);
    let new_len = count(&ops[start..end], in_new);
    // Unified format numbers lines from 1; an empty side names the line before it.
    let first = |at: usize, len: usize| if len == 0 { at } else { at + 1 };
    let mut out = format!(
        "@@ -{},{old_len} +{},{new_len} @@\n",
        first(old_start, old_len),
        first(new_start, new_len)
    );
    for op in &ops[start..end] {
        let (mark, line) = match op {
            Op::Same(l) => (' ', l),
            Op::Removed(l) => ('-', l),
            Op::Added(l) => ('+', l),
        };
        out.push(mark);
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h25_a_change_is_shown_with_its_context_and_nothing_for_no_change() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let after = "a\nb\nc\nd\nE\nf\ng\nh\ni\n";
        let diff = unified_diff("f.json", Some(before), Some(after));
        assert_eq!(
            diff,
            "--- f.json\n+++ f.json\n@@ -2,7 +2,8 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n+i\n"
        );
        assert_eq!(unified_diff("f", Some(before), Some(before)), "");
    }

    #[test]
    fn h25_a_new_or_removed_file_diffs_against_dev_null() {
        assert_eq!(
            unified_diff("s.json", None, Some("{\n}\n")),
            "--- /dev/null\n+++ s.json\n@@ -0,0 +1,2 @@\n+{\n+}\n"
        );
        assert_eq!(
            unified_diff("s.json", Some("{}\n"), None),
            "--- s.json\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-{}\n"
        );
    }

    #[test]
    fn h25_far_apart_changes_make_two_hunks() {
        let before: String = (0..20).map(|i| format!("{i}\n")).collect();
        let after = before
            .replace("2\n", "two\n")
            .replace("17\n", "seventeen\n");
        let diff = unified_diff("x", Some(&before), Some(&after));
        assert_eq!(diff.matches("@@ -").count(), 2, "{diff}");
        assert!(diff.contains("-2\n+two\n") && diff.contains("-17\n+seventeen\n"));
    }
}
