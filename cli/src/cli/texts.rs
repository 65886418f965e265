//! The lines the command prints on standard error, kept as data in
//! `config/prompts/cli-notices.txt` (one `key: text` per line, `#` comments, `{name}`
//! placeholders) like the library's own text tables.

use advisor::texts::Table as TextTable;

const LINES: TextTable = TextTable(include_str!("../../../config/prompts/cli-notices.txt"));

/// The line `key` filled with `vars`; the key itself when the file has no such line (a
/// test checks that every key in use is there).
pub fn line(key: &'static str, vars: &[(&str, &str)]) -> String {
    LINES.line(key, vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l5_every_cli_line_in_use_is_in_its_file() {
        let keys = [
            "error",
            "warning",
            "malformed",
            "drainOutstanding",
            "drainOneTurn",
            "drainTurns",
            "drainInFlight",
            "drainIdle",
            "drainAfterError",
            "askNeverAsked",
        ];
        for key in keys {
            assert!(
                LINES.lookup(key).is_some(),
                "{key} is missing from cli-notices.txt"
            );
        }
        assert_eq!(line("error", &[("error", "x")]), "advisor: x");
    }
}
