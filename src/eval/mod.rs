//! `advisor eval` (SPEC §18, EV1–EV9): what the advice is worth, measured on recorded
//! sessions with planted mistakes and untouched controls.
//!
//! - [`case`]: a case's `case.yml` (EV1);
//! - [`corpus`]: finding and checking the cases of a corpus, its content hash, the
//!   workspace copy a case runs in (EV1, EV2, EV7);
//! - [`run`]: replaying every case through one runtime as `advisor replay` does (EV2, EV5);
//! - [`score`]: scoring one case run (EV3);
//! - [`report`]: the JSON lines, the table and `report.md` (EV6);
//! - [`compare`]: configurations side by side and the chart (EV6);
//! - `testing`: a known advisor and its case preparer, for tests and benchmarks (EV9).
//!
//! Everything but [`run`] is plain synchronous code.

pub mod case;
pub mod compare;
pub mod corpus;
pub mod report;
pub mod run;
pub mod score;
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
