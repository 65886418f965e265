//! Note normalisation for the emission guard (P3, D8 amended): the dedupe key and the
//! content-free test, and the length cap that is checked before either (D10 `tooLong`).

use unicode_normalization::UnicodeNormalization;

/// The notes that carry no advice, as exact dedupe keys (P3): a note whose key is one of
/// these is dropped `contentFree`. Only exact keys count: "looks good to me" passes.
pub const CONTENT_FREE: [&str; 37] = [
    "stop",
    "stop here",
    "stop now",
    "halt",
    "abort",
    "done",
    "task done",
    "task complete",
    "complete",
    "finished",
    "ok",
    "okay",
    "ok done",
    "no issue",
    "no issues",
    "no issue continue",
    "no concerns",
    "no concern",
    "nothing to add",
    "nothing to flag",
    "nothing to report",
    "no notes",
    "no further input",
    "no further input needed",
    "no further input required",
    "no further watcher input",
    "no further watcher input needed",
    "no further advice",
    "no further advice needed",
    "lgtm",
    "looks good",
    "all good",
    "agent is on track",
    "agent on track",
    "on track",
    "continue",
    "carry on",
];

/// The dedupe key of a note (P3): lower-cased, Unicode NFKC, every run of characters that
/// are neither letters nor digits made one space, trimmed. `"Stop."`, `"*stop*"` and
/// `"  STOP "` all give `stop`.
pub fn normalize_note(note: &str) -> String {
    let lowered = note.to_lowercase();
    let mut key = String::with_capacity(lowered.len());
    let mut gap = false;
    for c in lowered.nfkc() {
        if c.is_alphanumeric() {
            if gap && !key.is_empty() {
                key.push(' ');
            }
            gap = false;
            key.push(c);
        } else {
            gap = true;
        }
    }
    key
}

/// True for a key that is one of the content-free notes (P3).
pub fn is_content_free_key(key: &str) -> bool {
    CONTENT_FREE.contains(&key)
}

/// True for notes that carry no advice: their key is empty or one of [`CONTENT_FREE`].
#[cfg(test)]
pub fn is_content_free(note: &str) -> bool {
    let key = normalize_note(note);
    key.is_empty() || is_content_free_key(&key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p3_the_key_is_lower_case_nfkc_with_every_non_letter_digit_run_one_space() {
        assert_eq!(
            normalize_note("  Check\u{00A0}the\t\nNULL -- case!  "),
            "check the null case"
        );
        assert_eq!(normalize_note("ﬁle"), "file");
        for note in ["Stop.", "*stop*", "  STOP ", "stop!!!"] {
            assert_eq!(normalize_note(note), "stop", "{note}");
        }
        assert_eq!(normalize_note("don't—use `unwrap()`"), "don t use unwrap");
        assert_eq!(
            normalize_note("Größe ２"),
            "größe 2",
            "letters and digits of any script"
        );
        assert_eq!(normalize_note("…!?"), "");
    }

    #[test]
    fn p3_content_free_notes_are_exact_keys_of_the_list() {
        assert_eq!(CONTENT_FREE.len(), 37);
        for note in [
            "LGTM!",
            "  looks good.",
            "Done",
            "No further watcher input needed.",
            "Agent is on track",
            "carry on",
            "OK, done",
        ] {
            assert!(is_content_free(note), "{note}");
        }
        for note in [
            "looks good to me",
            "all clear",
            "done: but the test is skipped",
        ] {
            assert!(!is_content_free(note), "{note}");
        }
    }
}
