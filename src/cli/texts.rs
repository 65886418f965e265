//! The lines the command prints on standard error, kept as data in
//! `config/prompts/cli-notices.txt` (one `key: text` per line, `#` comments, `{name}`
//! placeholders) like the library's own text tables.

const LINES: &str = include_str!("../../config/prompts/cli-notices.txt");

/// The line `key` filled with `vars`; the key itself when the file has no such line (a
/// test checks that every key in use is there).
pub fn line(key: &str, vars: &[(&str, &str)]) -> String {
    let template = lookup(key).unwrap_or(key);
    vars.iter()
        .fold(template.to_string(), |out, (name, value)| {
            out.replace(&format!("{{{name}}}"), value)
        })
}

fn lookup(key: &str) -> Option<&'static str> {
    LINES
        .lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (k, text) = line.split_once(':')?;
            (k == key).then(|| text.trim())
        })
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
                lookup(key).is_some(),
                "{key} is missing from cli-notices.txt"
            );
        }
        assert_eq!(line("error", &[("error", "x")]), "advisor: x");
    }
}
