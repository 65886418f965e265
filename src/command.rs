//! `/advisor …` commands (SPEC C1–C4): parsing only; the Supervisor carries them out.

use crate::domain::advice::{Advisory, Severity};

/// The usage line printed for anything that is not a command.
pub const USAGE: &str =
    "usage: /advisor [toggle|on [NAME]|off [NAME]|status|dump [NAME] [raw]|test <nit|concern|blocker> <note>]";

/// A parsed `/advisor` command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdvisorCommand {
    /// `/advisor` or `/advisor toggle` (C1).
    Toggle,
    /// `/advisor on` (C1); `/advisor on NAME` resumes one advisor of the roster (RO19).
    On {
        /// The advisor named, as typed (matched by slug, RO7).
        advisor: Option<String>,
    },
    /// `/advisor off` (C1); `/advisor off NAME` pauses one advisor of the roster (RO19).
    Off {
        /// The advisor named, as typed (matched by slug, RO7).
        advisor: Option<String>,
    },
    /// `/advisor status` (C3).
    Status,
    /// `/advisor dump [NAME] [raw]` (C4, RO19).
    Dump {
        /// Whether `raw` was given.
        raw: bool,
        /// The advisor named, as typed; `None`: every advisor, one section each.
        advisor: Option<String>,
    },
    /// `/advisor test <severity> <note>` (C2).
    Test(Advisory),
}

/// Parses a command line, with or without the leading `/advisor`. Verbs are
/// case-insensitive; anything else is answered with the usage line (`Err`). A bare
/// `/advisor` toggles (C1), but an empty line is no command at all: it gets the usage.
pub fn parse_command(line: &str) -> Result<AdvisorCommand, String> {
    let mut words = line.split_whitespace().peekable();
    let prefixed = words
        .peek()
        .is_some_and(|w| w.eq_ignore_ascii_case("/advisor") || w.eq_ignore_ascii_case("advisor"));
    if prefixed {
        words.next();
    }
    let verb = words.next().map(str::to_ascii_lowercase);
    let rest: Vec<&str> = words.collect();
    match (verb.as_deref(), rest.as_slice()) {
        (None, []) if prefixed => Ok(AdvisorCommand::Toggle),
        (Some("toggle"), []) => Ok(AdvisorCommand::Toggle),
        (Some("on"), name) => Ok(AdvisorCommand::On {
            advisor: joined(name),
        }),
        (Some("off"), name) => Ok(AdvisorCommand::Off {
            advisor: joined(name),
        }),
        (Some("status"), []) => Ok(AdvisorCommand::Status),
        (Some("dump"), words) => {
            let raw = words.last().is_some_and(|w| w.eq_ignore_ascii_case("raw"));
            let name = if raw {
                &words[..words.len() - 1]
            } else {
                words
            };
            Ok(AdvisorCommand::Dump {
                raw,
                advisor: joined(name),
            })
        }
        (Some("test"), [severity, note @ ..]) if !note.is_empty() => {
            let severity: Severity = severity.parse().map_err(|e| format!("{e}\n{USAGE}"))?;
            Ok(AdvisorCommand::Test(Advisory::new(
                note.join(" "),
                Some(severity),
            )))
        }
        _ => Err(USAGE.to_string()),
    }
}

/// The words of an advisor's name joined by one space, `None` when there are none.
fn joined(words: &[&str]) -> Option<String> {
    (!words.is_empty()).then(|| words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c1_verbs_are_case_insensitive() {
        assert_eq!(parse_command("/advisor"), Ok(AdvisorCommand::Toggle));
        assert_eq!(
            parse_command("/advisor ON"),
            Ok(AdvisorCommand::On { advisor: None })
        );
        assert_eq!(
            parse_command("off"),
            Ok(AdvisorCommand::Off { advisor: None })
        );
        assert_eq!(
            parse_command("/advisor dump RAW"),
            Ok(AdvisorCommand::Dump {
                raw: true,
                advisor: None
            })
        );
        assert_eq!(parse_command("/advisor frobnicate"), Err(USAGE.to_string()));
    }

    #[test]
    fn c1_an_empty_line_is_answered_with_the_usage_not_a_toggle() {
        for line in ["", "   ", "\t\n"] {
            assert_eq!(parse_command(line), Err(USAGE.to_string()), "{line:?}");
        }
        assert_eq!(parse_command("  /advisor  "), Ok(AdvisorCommand::Toggle));
        assert_eq!(parse_command("toggle"), Ok(AdvisorCommand::Toggle));
    }

    #[test]
    fn c2_test_argument_parsing() {
        assert_eq!(
            parse_command("/advisor test nit be tidy"),
            Ok(AdvisorCommand::Test(Advisory::new(
                "be tidy",
                Some(Severity::Nit)
            )))
        );
        assert_eq!(
            parse_command("/advisor   test   BLOCKER   stop   now "),
            Ok(AdvisorCommand::Test(Advisory::new(
                "stop now",
                Some(Severity::Blocker)
            )))
        );
        assert!(parse_command("/advisor test").is_err());
        assert!(parse_command("/advisor test nit").is_err());
        assert!(parse_command("/advisor test urgent fix it")
            .unwrap_err()
            .contains("nit, concern or blocker"));
    }
}
