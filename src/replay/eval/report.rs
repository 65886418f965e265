//! Reports (EV6): the JSON lines (one per case run, then a summary), the table per class
//! and in total, and `report.md`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::domain::advice::Severity;

use super::case::CaseClass;
use super::score::{CaseScore, Outcome};

/// How [`RunMeta::started`] is written: `secs` since the epoch to the second, UTC
/// (`2026-01-02T03:04:05Z`).
pub use crate::review::transcript_file::iso_seconds;

/// What a report says about the run itself (EV7): enough to tell two reports apart.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RunMeta {
    /// The advisor model (`provider/id`), or what stood in for it.
    pub model: String,
    /// The configuration: the settings flags given, or `defaults`.
    pub configuration: String,
    /// The corpus's content hash.
    pub corpus_hash: String,
    /// Runs per case.
    pub runs: usize,
    /// When the run started (RFC 3339, UTC).
    pub date: String,
    /// Whether the run was interrupted before every case ran.
    pub incomplete: bool,
}

/// The judge's side of the scores (EV4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JudgeTotals {
    /// (note, plant) pairs judged.
    pub pairs: usize,
    /// Pairs on which the judge and the patterns agreed.
    pub agreed: usize,
    /// Pairs the judge failed on, scored by the patterns instead.
    pub fallbacks: usize,
}

/// One case run as a `--json` line (EV6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseLine {
    /// The case id.
    pub case: String,
    /// Its class.
    pub class: CaseClass,
    /// The run, from 1.
    pub run: usize,
    /// `caught`, `missed`, `control` or `timeout`.
    pub outcome: Outcome,
    /// Turns from the plant to the catching review's last turn; null when missed.
    pub latency_turns: Option<usize>,
    /// Seconds from the plant turn's end to the catching note; null when missed.
    pub latency_secs: Option<f64>,
    /// The severity given; null when no note was about the plant.
    pub severity: Option<Severity>,
    /// The plant's severity; null for a control.
    pub expected: Option<Severity>,
    /// How the catch reached the primary (`steer`, `aside`, `wake`, `card`, `held`,
    /// `pending`, `dropped:REASON`); null when missed.
    pub delivered: Option<String>,
    /// Whether the catch reached the primary after the agent had fixed it.
    pub stale: bool,
    /// Concerns and blockers delivered in a control; 0 in a planted case.
    pub false_alarms: usize,
    /// Nits delivered.
    pub nits: usize,
    /// Turn ends in the session.
    pub turns: usize,
    /// Notes raised.
    pub raised: usize,
    /// Model requests.
    pub requests: u64,
    /// Input tokens not read from the cache.
    pub input_tokens: u64,
    /// Input tokens read from the cache.
    pub cached_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Dollars, where priced.
    pub cost: f64,
    /// Reviews completed.
    pub reviews: u64,
    /// Advisor tool calls.
    pub tool_calls: u64,
    /// Wall time, seconds.
    pub wall_secs: f64,
    /// Failed model calls.
    pub failures: u64,
    /// Turns never reviewed because their reviews kept failing.
    pub dropped_turns: u64,
    /// Tool calls past a review's tool budget, not run (SP1).
    #[serde(default)]
    pub budget_refused: u64,
    /// Re-reads answered with a pointer to an earlier result (SP2).
    #[serde(default)]
    pub rereads_saved: u64,
    /// Reviews that scheduled their next one with `check_in` (SP7).
    #[serde(default)]
    pub check_ins: u64,
    /// Turn ends at which a check-in held a review back (SP7).
    #[serde(default)]
    pub turns_skipped: u64,
    /// With `--judge`: the outcome by the judge's matching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_outcome: Option<Outcome>,
    /// With `--judge`: the latency by the judge's matching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_latency_turns: Option<usize>,
}

impl CaseLine {
    /// The line of `score`, with the judge's score of the same run when there is one.
    pub fn new(score: &CaseScore, judge: Option<&CaseScore>) -> Self {
        let c = &score.cost;
        Self {
            case: score.case.clone(),
            class: score.class,
            run: score.run,
            outcome: score.outcome,
            latency_turns: score.catch.as_ref().map(|c| c.turns),
            latency_secs: score.catch.as_ref().map(|c| round3(c.secs)),
            severity: score.severity,
            expected: score.expected,
            delivered: score.catch.as_ref().map(|c| c.fate.label()),
            stale: score.catch.as_ref().is_some_and(|c| c.stale),
            false_alarms: score.false_alarms,
            nits: score.nits,
            turns: score.turns,
            raised: score.raised,
            requests: c.requests,
            input_tokens: c.input_tokens,
            cached_tokens: c.cached_tokens,
            output_tokens: c.output_tokens,
            cost: c.cost,
            reviews: c.reviews,
            tool_calls: c.tool_calls,
            wall_secs: round3(c.wall_secs),
            failures: c.failures,
            dropped_turns: c.dropped_turns,
            budget_refused: c.tool_spend.budget_refused,
            rereads_saved: c.tool_spend.rereads_saved,
            check_ins: c.check_in.check_ins,
            turns_skipped: c.check_in.turns_skipped,
            judge_outcome: judge.map(|j| j.outcome),
            judge_latency_turns: judge.and_then(|j| j.catch.as_ref().map(|c| c.turns)),
        }
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The figures of one group of case runs (a class, or all): EV6's table row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GroupFigures {
    /// Distinct cases.
    pub cases: usize,
    /// Planted case runs.
    pub planted: usize,
    /// Control case runs.
    pub controls: usize,
    /// Runs that timed out.
    pub timeouts: usize,
    /// caught@0, caught@1, caught@3 as fractions of planted case runs.
    pub caught0: f64,
    /// caught@1.
    pub caught1: f64,
    /// caught@3.
    pub caught3: f64,
    /// Per run: the min and max of caught@1 (equal with one run).
    pub caught1_min: f64,
    /// See `caught1_min`.
    pub caught1_max: f64,
    /// Catches at any latency.
    pub catches: usize,
    /// Mean latency of the catches, turns; null without catches.
    pub latency_turns: Option<f64>,
    /// Mean latency of the catches, seconds.
    pub latency_secs: Option<f64>,
    /// False alarms per control run; null without controls.
    pub false_alarms_per_control: Option<f64>,
    /// False alarms per 100 control turns.
    pub false_alarms_per_100_turns: Option<f64>,
    /// Nits delivered in controls, per control run.
    pub nits_per_control: Option<f64>,
    /// Stale catches as a fraction of catches.
    pub stale: Option<f64>,
    /// Tokens per case run.
    pub tokens_per_case: f64,
    /// Tokens per catch; null without catches.
    pub tokens_per_catch: Option<f64>,
    /// Dollars per case run.
    pub cost_per_case: f64,
    /// Dollars per catch.
    pub cost_per_catch: Option<f64>,
    /// Tool calls per review; null without reviews.
    pub tool_calls_per_review: Option<f64>,
    /// With `--judge`: caught@1 by the judge's matching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_caught1: Option<f64>,
}

impl GroupFigures {
    /// The figures of `scores` (every run of the group's cases); `judge` the same runs as
    /// the judge matched them.
    pub fn of(scores: &[&CaseScore], judge: Option<&[&CaseScore]>) -> Self {
        let cases: BTreeSet<&str> = scores.iter().map(|s| s.case.as_str()).collect();
        let planted: Vec<&&CaseScore> = scores.iter().filter(|s| !s.is_control()).collect();
        let controls: Vec<&&CaseScore> = scores.iter().filter(|s| s.is_control()).collect();
        let rate = |k: usize| {
            frac(
                planted.iter().filter(|s| s.caught_at(k)).count(),
                planted.len(),
            )
        };
        let catches: Vec<_> = planted.iter().filter_map(|s| s.catch.as_ref()).collect();
        let runs: BTreeSet<usize> = scores.iter().map(|s| s.run).collect();
        let per_run: Vec<f64> = runs
            .iter()
            .filter_map(|r| {
                let p: Vec<_> = planted.iter().filter(|s| s.run == *r).collect();
                (!p.is_empty()).then(|| frac(p.iter().filter(|s| s.caught_at(1)).count(), p.len()))
            })
            .collect();
        let control_turns: usize = controls.iter().map(|s| s.turns).sum();
        let alarms: usize = controls.iter().map(|s| s.false_alarms).sum();
        let tokens: u64 = scores.iter().map(|s| s.cost.tokens()).sum();
        let cost: f64 = scores.iter().map(|s| s.cost.cost).sum();
        let reviews: u64 = scores.iter().map(|s| s.cost.reviews).sum();
        let tool_calls: u64 = scores.iter().map(|s| s.cost.tool_calls).sum();
        let n = scores.len().max(1) as f64;
        let mean =
            |xs: Vec<f64>| (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64);
        Self {
            cases: cases.len(),
            planted: planted.len(),
            controls: controls.len(),
            timeouts: scores
                .iter()
                .filter(|s| s.outcome == Outcome::Timeout)
                .count(),
            caught0: rate(0),
            caught1: rate(1),
            caught3: rate(3),
            caught1_min: per_run
                .iter()
                .copied()
                .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.min(x))))
                .unwrap_or(0.0),
            caught1_max: per_run
                .iter()
                .copied()
                .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
                .unwrap_or(0.0),
            catches: catches.len(),
            latency_turns: mean(catches.iter().map(|c| c.turns as f64).collect()),
            latency_secs: mean(catches.iter().map(|c| c.secs).collect()),
            false_alarms_per_control: (!controls.is_empty())
                .then(|| alarms as f64 / controls.len() as f64),
            false_alarms_per_100_turns: (control_turns > 0)
                .then(|| alarms as f64 * 100.0 / control_turns as f64),
            nits_per_control: (!controls.is_empty()).then(|| {
                controls.iter().map(|s| s.nits).sum::<usize>() as f64 / controls.len() as f64
            }),
            stale: (!catches.is_empty())
                .then(|| frac(catches.iter().filter(|c| c.stale).count(), catches.len())),
            tokens_per_case: tokens as f64 / n,
            tokens_per_catch: (!catches.is_empty()).then(|| tokens as f64 / catches.len() as f64),
            cost_per_case: cost / n,
            cost_per_catch: (!catches.is_empty()).then(|| cost / catches.len() as f64),
            tool_calls_per_review: (reviews > 0).then(|| tool_calls as f64 / reviews as f64),
            judge_caught1: judge.map(|j| {
                let p: Vec<_> = j.iter().filter(|s| !s.is_control()).collect();
                frac(p.iter().filter(|s| s.caught_at(1)).count(), p.len())
            }),
        }
    }
}

fn frac(n: usize, d: usize) -> f64 {
    if d == 0 {
        0.0
    } else {
        n as f64 / d as f64
    }
}

/// The summary line's body (EV6): the required keys, then the run's metadata, the totals,
/// the judge's and the figures per class.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Summary {
    /// Distinct cases run.
    pub cases: usize,
    /// Planted case runs.
    pub planted: usize,
    /// Control case runs.
    pub controls: usize,
    /// Cases skipped (malformed, over a cap, or not set up).
    pub skipped: usize,
    /// Runs that timed out.
    pub timeouts: usize,
    /// caught@0, fraction of planted case runs.
    pub caught0: f64,
    /// caught@1.
    pub caught1: f64,
    /// caught@3.
    pub caught3: f64,
    /// False alarms per control run.
    pub false_alarms_per_control: f64,
    /// Model requests in all.
    pub requests: u64,
    /// Input tokens (uncached) in all.
    pub input_tokens: u64,
    /// Cached input tokens in all.
    pub cached_tokens: u64,
    /// Output tokens in all.
    pub output_tokens: u64,
    /// Dollars in all.
    pub cost: f64,
    /// Failed model calls in all: when not 0, some scores measure failures, not judgement.
    pub failures: u64,
    /// Turns never reviewed because their reviews kept failing, in all.
    pub dropped_turns: u64,
    /// The run's metadata.
    #[serde(flatten)]
    pub meta: RunMeta,
    /// The totals' figures.
    pub total: GroupFigures,
    /// The figures of each class present, in class order.
    pub classes: BTreeMap<CaseClass, GroupFigures>,
    /// The judge's agreement with the patterns, with `--judge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeTotals>,
    /// The skipped cases and why, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_cases: Vec<String>,
    /// What the advisors spent beside the primaries of the cases (SP5).
    pub spend: SpendBlock,
}

/// A whole run's results: every case run, scored, and what the run was.
#[derive(Debug, Clone, Default)]
pub struct Results {
    /// The scores, in case order then run order.
    pub scores: Vec<CaseScore>,
    /// The same runs matched by the judge, with `--judge` (same order).
    pub judge_scores: Option<Vec<CaseScore>>,
    /// The judge's totals.
    pub judge: Option<JudgeTotals>,
    /// The skipped cases, one line each.
    pub skipped: Vec<String>,
    /// Metadata.
    pub meta: RunMeta,
}

impl Results {
    /// The summary (EV6).
    pub fn summary(&self) -> Summary {
        let all: Vec<&CaseScore> = self.scores.iter().collect();
        let judge_all: Option<Vec<&CaseScore>> =
            self.judge_scores.as_ref().map(|j| j.iter().collect());
        let total = GroupFigures::of(&all, judge_all.as_deref());
        let classes = CaseClass::ALL
            .into_iter()
            .filter_map(|class| {
                let group: Vec<&CaseScore> =
                    all.iter().copied().filter(|s| s.class == class).collect();
                let judge: Option<Vec<&CaseScore>> = judge_all
                    .as_ref()
                    .map(|j| j.iter().copied().filter(|s| s.class == class).collect());
                (!group.is_empty()).then(|| (class, GroupFigures::of(&group, judge.as_deref())))
            })
            .collect();
        let sum = |f: &dyn Fn(&CaseScore) -> u64| self.scores.iter().map(f).sum::<u64>();
        Summary {
            cases: total.cases,
            planted: total.planted,
            controls: total.controls,
            skipped: self.skipped.len(),
            timeouts: total.timeouts,
            caught0: total.caught0,
            caught1: total.caught1,
            caught3: total.caught3,
            false_alarms_per_control: total.false_alarms_per_control.unwrap_or(0.0),
            requests: sum(&|s| s.cost.requests),
            input_tokens: sum(&|s| s.cost.input_tokens),
            cached_tokens: sum(&|s| s.cost.cached_tokens),
            output_tokens: sum(&|s| s.cost.output_tokens),
            cost: self.scores.iter().map(|s| s.cost.cost).sum(),
            failures: sum(&|s| s.cost.failures),
            dropped_turns: sum(&|s| s.cost.dropped_turns),
            meta: self.meta.clone(),
            total,
            classes,
            judge: self.judge,
            skipped_cases: self.skipped.clone(),
            spend: SpendBlock::of(&self.scores),
        }
    }

    /// The `--json` output: one line per case run, then `{"summary": …}` (EV6).
    pub fn json_lines(&self) -> String {
        let mut out = String::new();
        for (i, score) in self.scores.iter().enumerate() {
            let judge = self.judge_scores.as_ref().and_then(|j| j.get(i));
            let line = CaseLine::new(score, judge);
            out.push_str(&serde_json::to_string(&line).unwrap_or_default());
            out.push('\n');
        }
        let summary = serde_json::json!({ "summary": self.summary() });
        out.push_str(&summary.to_string());
        out.push('\n');
        out
    }

    /// The table per class and in total, as plain text.
    pub fn table(&self) -> String {
        render_table(&self.summary(), false)
    }

    /// `report.md`: the run's metadata and the table in Markdown.
    pub fn markdown(&self) -> String {
        let s = self.summary();
        let mut out = String::from("# advisor eval\n\n");
        out.push_str(&format!(
            "- model: `{}`\n- configuration: `{}`\n- corpus: `{}`\n- date: {}\n- runs per case: {}\n- skipped: {}, timeouts: {}, failed model calls: {}, turns never reviewed: {}{}\n\n",
            s.meta.model,
            s.meta.configuration,
            s.meta.corpus_hash,
            s.meta.date,
            s.meta.runs,
            s.skipped,
            s.timeouts,
            s.failures,
            s.dropped_turns,
            if s.meta.incomplete { "\n- **incomplete**: interrupted before every case ran" } else { "" },
        ));
        out.push_str(&render_table(&s, true));
        if let Some(j) = &s.judge {
            out.push_str(&format!("\n{}\n", judge_line(j)));
        }
        for line in &s.skipped_cases {
            out.push_str(&format!("\n- skipped: {line}"));
        }
        out.push('\n');
        out.push_str(&s.spend.markdown());
        out
    }
}

/// The judge's line: pairs, agreement and fallbacks.
pub fn judge_line(j: &JudgeTotals) -> String {
    format!(
        "judge: {} note–plant pairs, agreed with the patterns on {} ({}), {} fell back to the patterns",
        j.pairs,
        j.agreed,
        pct(frac(j.agreed, j.pairs)),
        j.fallbacks
    )
}

/// A fraction as a whole percentage.
pub fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn opt(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "-".into(), |x| format!("{x:.digits$}"))
}

/// Tokens as `812`, `12.3k` or `1.2M`.
pub fn tokens(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.1}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

fn dollars(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |x| format!("${x:.4}"))
}

const HEADERS: [&str; 14] = [
    "class",
    "cases",
    "caught@0",
    "caught@1",
    "caught@3",
    "latency (turns)",
    "latency (s)",
    "false alarms/control",
    "false alarms/100 turns",
    "stale",
    "tokens/case",
    "tokens/catch",
    "cost/case",
    "tool calls/review",
];

fn row(name: &str, g: &GroupFigures, runs: usize) -> Vec<String> {
    let planted = g.planted > 0;
    let rate = |x: f64| if planted { pct(x) } else { "-".into() };
    let c1 = if planted && runs > 1 {
        format!(
            "{} ({}–{})",
            pct(g.caught1),
            pct(g.caught1_min),
            pct(g.caught1_max)
        )
    } else {
        rate(g.caught1)
    };
    vec![
        name.to_string(),
        g.cases.to_string(),
        rate(g.caught0),
        c1,
        rate(g.caught3),
        opt(g.latency_turns, 1),
        opt(g.latency_secs, 1),
        opt(g.false_alarms_per_control, 2),
        opt(g.false_alarms_per_100_turns, 1),
        g.stale.map_or_else(|| "-".into(), pct),
        tokens(g.tokens_per_case),
        g.tokens_per_catch.map_or_else(|| "-".into(), tokens),
        dollars(Some(g.cost_per_case)),
        opt(g.tool_calls_per_review, 2),
    ]
}

/// The table of `summary`: a row per class, then the total; Markdown or aligned text.
pub fn render_table(summary: &Summary, markdown: bool) -> String {
    let runs = summary.meta.runs;
    let mut rows: Vec<Vec<String>> = summary
        .classes
        .iter()
        .map(|(class, g)| row(class.as_str(), g, runs))
        .collect();
    rows.push(row("total", &summary.total, runs));
    let headers: Vec<String> = HEADERS.iter().map(|h| h.to_string()).collect();
    let mut out = String::new();
    if markdown {
        out.push_str(&format!("| {} |\n", headers.join(" | ")));
        out.push_str(&format!("|{}\n", "---|".repeat(headers.len())));
        for r in &rows {
            out.push_str(&format!("| {} |\n", r.join(" | ")));
        }
        return out;
    }
    let widths: Vec<usize> = (0..headers.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([headers[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    out.push_str(&line(&headers));
    out.push('\n');
    for r in &rows {
        out.push_str(&line(r));
        out.push('\n');
    }
    out
}

/// The report's spend block (SP5): every run's advisor spend added up, the primaries' where
/// the cases' sessions carry usage, and the ratio of the two (unknown without usage).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SpendBlock {
    /// The advisors' spend in all, with the ratio to the primaries'.
    pub advisors: crate::status::AdvisorSpend,
    /// The primaries' spend in all; `None` when no case's session carries usage.
    pub primary: Option<crate::status::PrimarySpend>,
    /// Reviews that scheduled their next one with `check_in`, over every run (SP7).
    pub check_ins: u64,
    /// Turn ends at which a check-in held a review back, over every run (SP7).
    pub turns_skipped: u64,
    /// The triage gate's counters and the judge's spend over every run (SP9); `None`
    /// when the gate was off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<crate::review::judge_gate::GateCounts>,
}

impl SpendBlock {
    /// The block of `scores`' runs.
    pub fn of(scores: &[CaseScore]) -> Self {
        let mut total = super::score::CaseCost::default();
        for score in scores {
            total.add(&score.cost);
        }
        let usage = crate::model::Usage {
            input: total.input_tokens,
            output: total.output_tokens,
            cache_read: total.cached_tokens,
            cache_write: total.cache_write_tokens,
            cost: total.cost,
            estimated: false,
        };
        // The runs count their tool calls with `advise` among them.
        let calls = crate::spend::ToolCallCounts {
            tool_calls: total.tool_calls.saturating_sub(total.advise_calls),
            advise_calls: total.advise_calls,
        };
        let advisors =
            crate::status::AdvisorSpend::from_parts(total.requests, total.reviews, &usage, &calls);
        Self {
            advisors: advisors.against(total.primary.as_ref()),
            primary: total.primary,
            check_ins: total.check_in.check_ins,
            turns_skipped: total.check_in.turns_skipped,
            gate: total.gate,
        }
    }

    /// The block in `report.md`.
    pub fn markdown(&self) -> String {
        let a = &self.advisors;
        let cost = |c: Option<f64>| c.map_or_else(|| "unknown".to_string(), |c| format!("${c:.4}"));
        let mut out = format!(
            "\n## Spend\n\n- advisor: {} requests, {} reviews, input {} uncached + {} cached, output {} tokens, cost {}, tool calls per review {}\n",
            a.requests,
            a.reviews,
            a.input_uncached,
            a.input_cached,
            a.output,
            cost(a.cost),
            a.tool_calls_per_review
                .map_or_else(|| "-".to_string(), |n| format!("{n:.1}")),
        );
        match &self.primary {
            Some(p) => out.push_str(&format!(
                "- primary: input {} uncached + {} cached, output {} tokens, cost {}\n",
                p.input_uncached,
                p.input_cached,
                p.output,
                cost(p.cost)
            )),
            None => out.push_str("- primary: the sessions carry no usage\n"),
        }
        let ratio = match &a.ratio {
            Some(r) => format!(
                "{:.2}× by {}",
                r.value,
                match r.basis {
                    crate::status::RatioBasis::Cost => "cost",
                    crate::status::RatioBasis::InputTokens => "input tokens",
                }
            ),
            None => "unknown".to_string(),
        };
        out.push_str(&format!("- advisor ÷ primary: {ratio}\n"));
        out.push_str(&format!(
            "- check-ins: {} review(s) chose when to look again; {} turn end(s) started no review\n",
            self.check_ins, self.turns_skipped
        ));
        if let Some(g) = &self.gate {
            out.push_str(&format!(
                "- triage gate: {} held, {} reviewed at once; judge {} requests ({} failed), input {}, output {} tokens, cost {}\n",
                g.gate_held,
                g.gate_passed,
                g.judge_requests,
                g.judge_failures,
                g.judge_input_tokens,
                g.judge_output_tokens,
                cost(g.judge_cost)
            ));
        }
        out
    }
}

#[cfg(test)]
mod spend_tests {
    use super::*;
    use crate::replay::eval::score::CaseCost;
    use crate::status::{PrimarySpend, RatioBasis};

    fn run(cost: CaseCost) -> CaseScore {
        CaseScore {
            case: "c".into(),
            class: CaseClass::Loop,
            run: 1,
            outcome: Outcome::Missed,
            catch: None,
            severity: None,
            expected: None,
            false_alarms: 0,
            nits: 0,
            turns: 1,
            raised: 0,
            cost,
        }
    }

    fn advisor_cost(primary: Option<PrimarySpend>) -> CaseCost {
        CaseCost {
            requests: 4,
            input_tokens: 1_000,
            cached_tokens: 3_000,
            output_tokens: 40,
            cost: 0.02,
            reviews: 2,
            tool_calls: 5,
            advise_calls: 1,
            primary,
            ..CaseCost::default()
        }
    }

    #[test]
    fn sp5_the_report_adds_up_the_runs_spend_beside_the_primaries() {
        let primary = PrimarySpend {
            messages: 3,
            input_uncached: 10_000,
            input_cached: 30_000,
            output: 500,
            cost: Some(0.2),
        };
        let results = Results {
            scores: vec![run(advisor_cost(Some(primary))), run(advisor_cost(None))],
            ..Results::default()
        };
        let spend = results.summary().spend;
        assert_eq!((spend.advisors.requests, spend.advisors.reviews), (8, 4));
        assert_eq!(
            (spend.advisors.tool_calls, spend.advisors.advise_calls),
            (8, 2)
        );
        assert_eq!(spend.advisors.tool_calls_per_review, Some(2.5));
        let ratio = spend.advisors.ratio.unwrap();
        assert_eq!(ratio.basis, RatioBasis::Cost);
        assert!((ratio.value - 0.2).abs() < 1e-9, "{ratio:?}");
        let md = results.markdown();
        assert!(md.contains("## Spend"), "{md}");
        assert!(md.contains("- advisor ÷ primary: 0.20× by cost"), "{md}");
        let json = results.json_lines();
        assert!(
            json.contains(r#""spend":{"advisors":{"requests":8"#),
            "{json}"
        );
    }

    #[test]
    fn sp7_the_report_adds_up_the_check_ins_per_line_and_in_the_spend_block() {
        let mut cost = advisor_cost(None);
        cost.check_in = crate::review::check_in::CheckInCounts {
            check_ins: 2,
            turns_skipped: 3,
        };
        let results = Results {
            scores: vec![run(cost), run(cost)],
            ..Results::default()
        };
        let spend = results.summary().spend;
        assert_eq!((spend.check_ins, spend.turns_skipped), (4, 6));
        let md = results.markdown();
        assert!(
            md.contains("- check-ins: 4 review(s) chose when to look again; 6 turn end(s) started no review"),
            "{md}"
        );
        let json = results.json_lines();
        let first: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
        assert_eq!(
            (&first["checkIns"], &first["turnsSkipped"]),
            (&2.into(), &3.into())
        );
        assert!(json.contains(r#""checkIns":4,"turnsSkipped":6"#), "{json}");
    }

    #[test]
    fn sp9_the_report_s_spend_block_adds_up_the_gate_and_the_judge_apart() {
        let gate = crate::review::judge_gate::GateCounts {
            gate_held: 3,
            gate_passed: 2,
            judge_requests: 5,
            judge_failures: 1,
            judge_input_tokens: 700,
            judge_output_tokens: 60,
            judge_cost: None,
        };
        let gated = CaseCost {
            gate: Some(gate),
            ..advisor_cost(None)
        };
        let results = Results {
            scores: vec![run(gated), run(gated), run(advisor_cost(None))],
            ..Results::default()
        };
        let spend = results.summary().spend;
        let total = spend.gate.expect("a run had the gate on");
        assert_eq!((total.gate_held, total.gate_passed), (6, 4));
        assert_eq!(
            (total.judge_requests, total.judge_input_tokens),
            (10, 1_400)
        );
        assert_eq!(
            spend.advisors.requests, 12,
            "the judge's requests are not the advisors'"
        );
        let md = results.markdown();
        assert!(
            md.contains("- triage gate: 6 held, 4 reviewed at once; judge 10 requests (2 failed), input 1400, output 120 tokens, cost unknown"),
            "{md}"
        );
        let off = Results {
            scores: vec![run(advisor_cost(None))],
            ..Results::default()
        };
        assert_eq!(off.summary().spend.gate, None);
        assert!(!off.markdown().contains("triage gate"));
    }

    #[test]
    fn sp5_a_report_whose_sessions_carry_no_usage_says_the_ratio_is_unknown() {
        let results = Results {
            scores: vec![run(advisor_cost(None))],
            ..Results::default()
        };
        let spend = results.summary().spend;
        assert_eq!((spend.primary, spend.advisors.ratio), (None, None));
        let md = results.markdown();
        assert!(
            md.contains("- primary: the sessions carry no usage"),
            "{md}"
        );
        assert!(md.contains("- advisor ÷ primary: unknown"), "{md}");
    }
}
