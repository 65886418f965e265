//! `advisor eval compare` (EV6): configurations side by side, each figure with its delta
//! from the first, and the chart of catch@1 against cost per case.

use std::fmt::Write as _;

use advisor::replay::eval::report::{pct, tokens, Summary};

/// One configuration's results, read from its `--json` output.
#[derive(Debug, Clone)]
pub struct Column {
    /// What to call it: the file name given, or the model and configuration.
    pub label: String,
    /// Its summary line.
    pub summary: Summary,
}

/// Why a results file is unusable.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// No `{"summary": …}` line.
    #[error("{0}: no summary line (is it the output of `advisor eval --json`?)")]
    NoSummary(String),
    /// The summary line does not parse.
    #[error("{file}: the summary line: {reason}")]
    BadSummary {
        /// The file.
        file: String,
        /// What is wrong.
        reason: String,
    },
}

/// The summary of the `--json` output `text` (its last `{"summary": …}` line).
pub fn read_summary(file: &str, text: &str) -> Result<Summary, CompareError> {
    let line = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("{\"summary\""))
        .ok_or_else(|| CompareError::NoSummary(file.to_string()))?;
    #[derive(serde::Deserialize)]
    struct Wrap {
        summary: Summary,
    }
    serde_json::from_str::<Wrap>(line)
        .map(|w| w.summary)
        .map_err(|e| CompareError::BadSummary {
            file: file.to_string(),
            reason: e.to_string(),
        })
}

/// The label of a configuration: its model and configuration.
pub fn label_of(summary: &Summary) -> String {
    if summary.meta.configuration.is_empty() || summary.meta.configuration == "defaults" {
        summary.meta.model.clone()
    } else {
        format!("{} · {}", summary.meta.model, summary.meta.configuration)
    }
}

struct Figure {
    name: &'static str,
    value: fn(&Summary) -> f64,
    show: fn(f64) -> String,
    delta: fn(f64) -> String,
}

fn signed_pct(x: f64) -> String {
    format!("{:+.0} pts", x * 100.0)
}

fn signed(x: f64) -> String {
    format!("{x:+.2}")
}

fn signed_tokens(x: f64) -> String {
    if x < 0.0 {
        format!("-{}", tokens(-x))
    } else {
        format!("+{}", tokens(x))
    }
}

const FIGURES: [Figure; 8] = [
    Figure {
        name: "caught@0",
        value: |s| s.caught0,
        show: pct,
        delta: signed_pct,
    },
    Figure {
        name: "caught@1",
        value: |s| s.caught1,
        show: pct,
        delta: signed_pct,
    },
    Figure {
        name: "caught@3",
        value: |s| s.caught3,
        show: pct,
        delta: signed_pct,
    },
    Figure {
        name: "false alarms/control",
        value: |s| s.false_alarms_per_control,
        show: |x| format!("{x:.2}"),
        delta: signed,
    },
    Figure {
        name: "latency (turns)",
        value: |s| s.total.latency_turns.unwrap_or(0.0),
        show: |x| format!("{x:.1}"),
        delta: signed,
    },
    Figure {
        name: "tokens/case",
        value: |s| s.total.tokens_per_case,
        show: tokens,
        delta: signed_tokens,
    },
    Figure {
        name: "cost/case",
        value: |s| s.total.cost_per_case,
        show: |x| format!("${x:.4}"),
        delta: |x| format!("{x:+.4}"),
    },
    Figure {
        name: "requests",
        value: |s| s.requests as f64,
        show: |x| format!("{x:.0}"),
        delta: |x| format!("{x:+.0}"),
    },
];

/// The side-by-side table: a row per figure, a column per configuration, each after the
/// first with its delta in brackets.
pub fn compare_table(columns: &[Column]) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header = vec!["".to_string()];
    header.extend(columns.iter().map(|c| c.label.clone()));
    rows.push(header);
    let mut meta = vec!["corpus".to_string()];
    meta.extend(columns.iter().map(|c| c.summary.meta.corpus_hash.clone()));
    rows.push(meta);
    for f in &FIGURES {
        let base = columns
            .first()
            .map(|c| (f.value)(&c.summary))
            .unwrap_or(0.0);
        let mut row = vec![f.name.to_string()];
        for (i, c) in columns.iter().enumerate() {
            let v = (f.value)(&c.summary);
            row.push(if i == 0 {
                (f.show)(v)
            } else {
                format!("{} ({})", (f.show)(v), (f.delta)(v - base))
            });
        }
        rows.push(row);
    }
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..rows[0].len()).map(width).collect();
    let mut out = String::new();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    let hashes: std::collections::BTreeSet<&str> = columns
        .iter()
        .map(|c| c.summary.meta.corpus_hash.as_str())
        .collect();
    if hashes.len() > 1 {
        out.push_str("note: the results come from different corpora (corpus hashes differ)\n");
    }
    out
}

/// The chart (EV6): catch@1 (%) up, cost per case across (dollars when any configuration
/// is priced, else thousands of tokens), one labelled point per configuration, so it reads
/// without a legend.
pub fn svg_chart(columns: &[Column]) -> String {
    let priced = columns.iter().any(|c| c.summary.total.cost_per_case > 0.0);
    let max_x = columns
        .iter()
        .map(|c| chart_x(&c.summary, priced))
        .fold(0.0_f64, f64::max);
    let chart = Chart {
        priced,
        max_x: nice_ceiling(max_x),
    };
    let (w, h) = (W, H);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="13">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="28" text-anchor="middle" font-size="16" font-weight="bold">Catches within one turn against what each case costs</text>"#,
        w / 2.0
    );
    chart.grid(&mut s);
    chart.axes(&mut s);
    chart.points(&mut s, columns);
    s.push_str("</svg>\n");
    s
}

/// The chart's width and height, in pixels.
const W: f64 = 720.0;
const H: f64 = 480.0;
/// The chart's margins (left, right, top, bottom), in pixels.
const LEFT: f64 = 80.0;
const RIGHT: f64 = 40.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 70.0;

/// A configuration's place across: its cost per case in dollars when any configuration is
/// priced, else its thousands of tokens per case.
fn chart_x(s: &Summary, priced: bool) -> f64 {
    if priced {
        s.total.cost_per_case
    } else {
        s.total.tokens_per_case / 1000.0
    }
}

/// The chart's scales: what is across, and the axis's end.
struct Chart {
    priced: bool,
    max_x: f64,
}

impl Chart {
    /// The pixel across for `x`.
    fn px(&self, x: f64) -> f64 {
        let (w, left, right, max_x) = (W, LEFT, RIGHT, self.max_x);
        left + (w - left - right) * if max_x > 0.0 { x / max_x } else { 0.0 }
    }

    /// The pixel down for the share `y` (0 to 1).
    fn py(&self, y: f64) -> f64 {
        let (h, top, bottom) = (H, TOP, BOTTOM);
        top + (h - top - bottom) * (1.0 - y)
    }

    /// The grid lines and the ticks of both axes.
    fn grid(&self, s: &mut String) {
        let (w, h, left, right, top, bottom) = (W, H, LEFT, RIGHT, TOP, BOTTOM);
        let (priced, max_x) = (self.priced, self.max_x);
        for i in 0..=5 {
            let y = i as f64 / 5.0;
            let _ = writeln!(
                s,
                r##"<line x1="{left}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#e5e5e5"/><text x="{2:.1}" y="{3:.1}" text-anchor="end">{4}%</text>"##,
                self.py(y),
                w - right,
                left - 8.0,
                self.py(y) + 4.0,
                i * 20
            );
            let x = max_x * i as f64 / 5.0;
            // The axis title carries the unit; ticks are plain numbers.
            let label = match (priced, max_x >= 5.0) {
                (true, _) => format!("{x:.3}"),
                (false, true) => format!("{x:.0}"),
                (false, false) => format!("{x:.1}"),
            };
            let _ = writeln!(
                s,
                r##"<line x1="{0:.1}" y1="{top}" x2="{0:.1}" y2="{1:.1}" stroke="#e5e5e5"/><text x="{0:.1}" y="{2:.1}" text-anchor="middle">{3}</text>"##,
                self.px(x),
                h - bottom,
                h - bottom + 18.0,
                label
            );
        }
    }

    /// The axis lines and their titles.
    fn axes(&self, s: &mut String) {
        let (w, h, left, right, top, bottom) = (W, H, LEFT, RIGHT, TOP, BOTTOM);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{0}" x2="{1}" y2="{0}" stroke="#333"/><line x1="{left}" y1="{top}" x2="{left}" y2="{0}" stroke="#333"/>"##,
            h - bottom,
            w - right
        );
        let x_title = if self.priced {
            "cost per case (US dollars)"
        } else {
            "tokens per case (thousands)"
        };
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{x_title}</text>"#,
            left + (w - left - right) / 2.0,
            h - 22.0
        );
        let _ = writeln!(
            s,
            r#"<text transform="translate(22 {:.1}) rotate(-90)" text-anchor="middle">caught within one turn (% of planted cases)</text>"#,
            top + (h - top - bottom) / 2.0
        );
    }

    /// One labelled point per configuration.
    fn points(&self, s: &mut String, columns: &[Column]) {
        let w = W;
        let colours = [
            "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
        ];
        for (i, c) in columns.iter().enumerate() {
            let (x, y) = (
                self.px(chart_x(&c.summary, self.priced)),
                self.py(c.summary.caught1),
            );
            let colour = colours[i % colours.len()];
            // Labels go right of the point, or left of it near the right edge.
            let (anchor, dx) = if x > w * 0.65 {
                ("end", -10.0)
            } else {
                ("start", 10.0)
            };
            let dy = if i % 2 == 0 { -6.0 } else { 16.0 };
            let _ = writeln!(
                s,
                r#"<circle cx="{x:.1}" cy="{y:.1}" r="6" fill="{colour}"/><text x="{:.1}" y="{:.1}" text-anchor="{anchor}" fill="{colour}">{} ({})</text>"#,
                x + dx,
                y + dy,
                advisor::xml::quoted(&c.label),
                pct(c.summary.caught1)
            );
        }
    }
}

/// A round number at or above `x` for the axis's end (1, 2 or 5 times a power of ten).
fn nice_ceiling(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|v| *v >= x)
        .unwrap_or(10.0 * power)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(model: &str, caught1: f64, cost: f64) -> Summary {
        let mut s = Summary {
            caught1,
            ..Summary::default()
        };
        s.meta.model = model.into();
        s.meta.configuration = "defaults".into();
        s.meta.corpus_hash = "abc".into();
        s.total.cost_per_case = cost;
        s.total.tokens_per_case = 1000.0;
        s
    }

    #[test]
    fn ev6_compare_shows_each_figure_with_its_delta_from_the_first() {
        let cols = [
            Column {
                label: "a".into(),
                summary: summary("m1", 0.5, 0.01),
            },
            Column {
                label: "b".into(),
                summary: summary("m2", 0.75, 0.02),
            },
        ];
        let table = compare_table(&cols);
        let row = table.lines().find(|l| l.starts_with("caught@1")).unwrap();
        assert!(
            row.contains("50%") && row.contains("75% (+25 pts)"),
            "{table}"
        );
        let cost = table.lines().find(|l| l.starts_with("cost/case")).unwrap();
        assert!(cost.contains("$0.0200 (+0.0100)"), "{table}");
        let json = serde_json::json!({"summary": cols[1].summary}).to_string();
        assert_eq!(
            read_summary("b.json", &format!("{{\"case\":1}}\n{json}\n"))
                .unwrap()
                .caught1,
            0.75
        );
        assert!(read_summary("x", "{}\n").is_err());
    }

    #[test]
    fn ev6_the_chart_labels_every_point_and_titles_both_axes_with_units() {
        let cols = [
            Column {
                label: "small <model>".into(),
                summary: summary("m1", 0.5, 0.01),
            },
            Column {
                label: "big".into(),
                summary: summary("m2", 0.75, 0.02),
            },
        ];
        let svg = svg_chart(&cols);
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains("small &lt;model&gt; (50%)"));
        assert!(svg.contains("big (75%)"));
        assert!(svg.contains("cost per case (US dollars)"));
        assert!(svg.contains("caught within one turn (% of planted cases)"));
        assert_eq!(nice_ceiling(0.018), 0.02);
        assert_eq!(nice_ceiling(3.0), 5.0);
    }
}
