//! The repeated-call guard of a review (P2): a model that makes the same tool call with the
//! same arguments [`REPEAT_LIMIT`] times in a row is told once to stop repeating; one more
//! such call ends the review (a success: the advisor had nothing new to do).

use serde_json::Value;

/// Identical calls in a row after which the model is told to stop (P2).
pub const REPEAT_LIMIT: u32 = 5;

/// What to do with one tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// Run it as usual.
    Run,
    /// Run it, and tell the model (in its result) to stop repeating it.
    Warn,
    /// Do not run it: the review ends.
    End,
}

/// The calls of one review, in order.
#[derive(Debug, Default)]
pub struct RepeatGuard {
    last: Option<(String, Value)>,
    run: u32,
    warned: bool,
}

impl RepeatGuard {
    /// A guard that has seen no call.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next call of the review.
    pub fn observe(&mut self, name: &str, arguments: &Value) -> Repeat {
        let same = self
            .last
            .as_ref()
            .is_some_and(|(n, a)| n == name && a == arguments);
        if same {
            self.run += 1;
        } else {
            self.last = Some((name.to_string(), arguments.clone()));
            self.run = 1;
            self.warned = false;
        }
        if self.run == REPEAT_LIMIT && !self.warned {
            self.warned = true;
            Repeat::Warn
        } else if self.run > REPEAT_LIMIT && self.warned {
            Repeat::End
        } else {
            Repeat::Run
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn p2_the_fifth_identical_call_warns_once_and_the_sixth_ends() {
        let mut g = RepeatGuard::new();
        let args = json!({"path": "src/lib.rs"});
        let seen: Vec<Repeat> = (0..6).map(|_| g.observe("read", &args)).collect();
        assert_eq!(
            seen,
            [
                Repeat::Run,
                Repeat::Run,
                Repeat::Run,
                Repeat::Run,
                Repeat::Warn,
                Repeat::End
            ]
        );
    }

    #[test]
    fn p2_other_arguments_or_another_tool_break_the_run() {
        let mut g = RepeatGuard::new();
        let a = json!({"path": "a"});
        for _ in 0..4 {
            assert_eq!(g.observe("read", &a), Repeat::Run);
        }
        assert_eq!(g.observe("read", &json!({"path": "b"})), Repeat::Run);
        assert_eq!(g.observe("search", &a), Repeat::Run);
        for _ in 0..4 {
            assert_eq!(g.observe("read", &a), Repeat::Run);
        }
        assert_eq!(g.observe("read", &a), Repeat::Warn);
    }
}
