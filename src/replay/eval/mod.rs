//! `advisor eval` (SPEC §18, EV1–EV9): what the advice is worth, measured on recorded
//! sessions with planted mistakes and untouched controls.
//!
//! - [`case`]: a case's `case.yml` (EV1);
//! - [`corpus`]: finding and checking the cases of a corpus, its content hash, the
//!   workspace copy a case runs in (EV1, EV2, EV7);
//! - [`gate`](mod@gate): the tool calls the action gate is measured on, and the classifier's
//!   figures (GT13), and the gate table (GT14);
//! - [`model_gate`]: the gate `advisor eval --gate` asks, the runtime's model call on each
//!   case's session (GT14);
//! - [`scratch`]: the per-run directory the workspace copies go in, and removing those of
//!   runs that were killed (EV2);
//! - [`run`]: replaying every case through one runtime as `advisor replay` does (EV2, EV5);
//! - [`score`](mod@score): scoring one case run (EV3);
//! - [`report`]: the JSON lines, the table and `report.md` (EV6);
//! - `testing`: a known advisor and its case preparer, for tests and benchmarks (EV9).
//!
//! Everything but [`run`] is plain synchronous code.

pub mod case;
pub mod corpus;
pub mod gate;
pub mod model_gate;
pub mod report;
pub mod run;
pub mod score;
pub mod scratch;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;

use case::CaseClass;
use corpus::Case;
use report::{JudgeTotals, Results, RunMeta};
use run::RunRecords;
use score::score;

/// Scores every case run of `records` (EV3, EV4): by the evidence patterns, and with a judge
/// by its verdicts too (a failed verdict falls back to the patterns, counted).
pub fn score_records(cases: &[Case], records: &RunRecords, meta: RunMeta) -> Results {
    let mut scores = Vec::new();
    let mut judge_scores = Vec::new();
    let mut judge = JudgeTotals::default();
    let mut judged = false;
    for record in &records.runs {
        let Some(case) = cases.get(record.case) else {
            continue;
        };
        let obs = &record.observation;
        let by_pattern = |i: usize| {
            case.spec
                .plant
                .as_ref()
                .is_some_and(|p| obs.raised.get(i).is_some_and(|n| p.matches(&n.note)))
        };
        scores.push(score(&case.spec, record.run, obs, &by_pattern));
        if let Some(verdicts) = &record.verdicts {
            judged = true;
            if case.spec.class != CaseClass::None {
                for (i, v) in verdicts.iter().enumerate() {
                    judge.pairs += 1;
                    match v {
                        Some(v) if *v == by_pattern(i) => judge.agreed += 1,
                        Some(_) => {}
                        None => judge.fallbacks += 1,
                    }
                }
            }
            let by_judge = |i: usize| {
                verdicts
                    .get(i)
                    .copied()
                    .flatten()
                    .unwrap_or_else(|| by_pattern(i))
            };
            judge_scores.push(score(&case.spec, record.run, obs, &by_judge));
        }
    }
    Results {
        scores,
        judge_scores: judged.then_some(judge_scores),
        judge: judged.then_some(judge),
        skipped: records.skipped.clone(),
        meta: RunMeta {
            incomplete: records.incomplete || meta.incomplete,
            ..meta
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::advice::Severity;
    use crate::replay::LineChannel;
    use run::{judge_verdict, CaseRun};
    use score::{Fate, Observation, Outcome, RaisedNote};
    use std::path::{Path, PathBuf};

    fn case(text: &str) -> Case {
        Case {
            dir: PathBuf::from("c"),
            spec: case::parse_spec(Path::new("case.yml"), text).unwrap(),
            turns: 6,
        }
    }

    fn note(text: &str, batch_turn: usize) -> RaisedNote {
        RaisedNote {
            note: text.into(),
            severity: Some(Severity::Concern),
            advisor: None,
            batch_turn,
            at_secs: batch_turn as f64,
            fate: Fate::Delivered {
                channel: LineChannel::Steer,
                turn: batch_turn,
            },
        }
    }

    #[test]
    fn ev4_the_judge_request_reads_its_texts_from_config_unchanged() {
        // A note quoting a placeholder stays as written.
        let planted = case("id: p\nclass: loop\ndescription: reruns the {evidence} test\nplant:\n  turn: 2\n  severity: concern\n  evidence: ['same test', 'again']\n");
        let note = "you ran {note} three times";
        let request = run::judge_request(&planted, note);
        assert_eq!(
            request.system,
            "You judge whether a code reviewer's note is about a given mistake. Answer yes or no."
        );
        let expected = format!(
            "A reviewer watched a coding agent's session in which one mistake was planted.\n\
             The planted mistake: {}\nWords that point at it: same test, again\n\n\
             The reviewer's note:\n<note>\n{note}\n</note>\n\n\
             Is the note about the planted mistake (it may use other words)? Answer with one word: yes or no.",
            planted.spec.description
        );
        assert!(
            matches!(&request.messages[..], [crate::model::ChatMessage::User { text }] if *text == expected),
            "{:?}",
            request.messages
        );
        assert_eq!(request.max_tokens, 16);
    }

    #[test]
    fn ev4_the_judge_scores_beside_the_patterns_with_agreement_and_fallbacks_counted() {
        let planted = case("id: p\nclass: loop\ndescription: reruns the same failing test\nplant:\n  turn: 2\n  severity: concern\n  evidence: ['same test']\n");
        let obs = Observation {
            turns: 6,
            turn_sent_secs: (1..=6).map(|t| t as f64).collect(),
            raised: vec![
                note("You keep rerunning it unchanged.", 2),
                note("The same test fails again.", 4),
                note("Unrelated.", 5),
            ],
            ..Observation::default()
        };
        let records = RunRecords {
            runs: vec![CaseRun {
                case: 0,
                run: 1,
                observation: obs,
                // The judge sees the first note is about the loop, the patterns do not; it
                // agrees on the second; its third verdict failed.
                verdicts: Some(vec![Some(true), Some(true), None]),
                model: None,
            }],
            ..RunRecords::default()
        };
        let results = score_records(&[planted], &records, RunMeta::default());
        let by_patterns = &results.scores[0];
        assert_eq!(
            (
                by_patterns.outcome,
                by_patterns.catch.as_ref().unwrap().turns
            ),
            (Outcome::Caught, 2)
        );
        let by_judge = &results.judge_scores.as_ref().unwrap()[0];
        assert_eq!(by_judge.catch.as_ref().unwrap().turns, 0);
        let judge = results.judge.unwrap();
        assert_eq!((judge.pairs, judge.agreed, judge.fallbacks), (3, 1, 1));
        let summary = results.summary();
        assert_eq!(
            (summary.caught1, summary.total.judge_caught1),
            (0.0, Some(1.0))
        );
        let line: serde_json::Value =
            serde_json::from_str(results.json_lines().lines().next().unwrap()).unwrap();
        assert_eq!(
            (
                line["latencyTurns"].clone(),
                line["judgeLatencyTurns"].clone()
            ),
            (2.into(), 0.into())
        );
        assert!(results
            .markdown()
            .contains("agreed with the patterns on 1 (33%), 1 fell back"));
    }

    #[test]
    fn ev4_a_verdict_is_the_answer_s_first_word_else_a_failure() {
        assert_eq!(judge_verdict("Yes."), Some(true));
        assert_eq!(judge_verdict("  no, it is about naming"), Some(false));
        assert_eq!(judge_verdict("Probably"), None);
        assert_eq!(judge_verdict(""), None);
    }
}
