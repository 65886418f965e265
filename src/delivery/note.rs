//! Note normalisation for the emission guard (D8): the dedupe key and the content-free
//! test, and the length cap that is checked before either (D10 `tooLong`).

use unicode_normalization::UnicodeNormalization;

/// Normalises a note for deduplication (D8): NFKC, whitespace runs collapsed, trimmed.
pub fn normalize_note(note: &str) -> String {
    let nfkc: String = note.nfkc().collect();
    nfkc.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// True for notes that carry no advice ("lgtm", "looks good", "all clear", "done"…).
pub fn is_content_free(note: &str) -> bool {
    let lowered = normalize_note(note).to_lowercase();
    let core = lowered.trim_matches(|c: char| !c.is_alphanumeric());
    matches!(
        core,
        "" | "lgtm"
            | "looks good"
            | "looks good to me"
            | "all clear"
            | "all good"
            | "done"
            | "ok"
            | "no issues"
            | "nothing to add"
            | "no concerns"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d8_normalisation_is_nfkc_with_whitespace_collapsed() {
        assert_eq!(
            normalize_note("  check\u{00A0}the\t\nnull  "),
            "check the null"
        );
        assert_eq!(normalize_note("ﬁle"), "file");
    }

    #[test]
    fn d8_content_free_notes_are_recognised_whatever_their_case_and_punctuation() {
        for note in ["LGTM!", "  looks good.", "All clear", "done", "…"] {
            assert!(is_content_free(note), "{note}");
        }
        assert!(!is_content_free("done: but the test is skipped"));
    }
}
