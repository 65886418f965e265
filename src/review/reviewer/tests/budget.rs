//! The tool budget of a review (SP1).

use super::*;

fn budgeted(model: &ScriptedModel, budget: u32) -> ReviewEngine {
    let mut engine = engine(model);
    engine.limits.tool_budget = budget;
    engine
}

#[test]
fn sp1_parallel_calls_past_the_budget_are_not_run_and_the_model_is_told_to_advise_or_end() {
    let read = |id: &str, path: &str| (id.to_string(), json!({ "path": path }));
    let calls: Vec<(String, Value)> = vec![
        read("1", "a"),
        read("2", "b"),
        read("3", "c"),
        read("4", "d"),
        read("5", "e"),
    ];
    let mut parallel: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "read", args.clone()))
        .collect();
    parallel.insert(2, ("n", "advise", json!({"note": "Check the error path."})));
    parallel.push(("x", "unknown_tool", json!({})));
    let model = ScriptedModel::new([
        ScriptedReply::tool_calls(&parallel),
        ScriptedReply::text("done"),
    ]);
    let port = StubPort::default();
    let run = review(budgeted(&model, 3), &port, AdvisorContext::new(), "update");
    assert!(run.result.is_ok());
    let log = port.log.borrow();
    let ran: Vec<(&str, &Value)> = log
        .tool_calls
        .iter()
        .map(|(n, a)| (n.as_str(), a))
        .collect();
    assert_eq!(
        ran,
        [
            ("read", &json!({"path": "a"})),
            ("read", &json!({"path": "b"})),
            ("advise", &json!({"note": "Check the error path."})),
            ("read", &json!({"path": "c"})),
            ("unknown_tool", &json!({})),
        ],
        "three reads and advise ran (advise is never counted), and the unknown tool went to \
         the executor to be refused there (T7), uncounted"
    );
    let spent = texts::fill(texts::BUDGET_SPENT, &[("calls", "3 tool calls")]);
    assert_eq!(
        spent,
        "Not run: this review's budget of 3 tool calls is spent. Advise now with what you have, \
         or end the review."
    );
    let got = results(&run.context.messages);
    assert_eq!(got[4], spent);
    assert_eq!(got[5], spent);
    assert_eq!(run.tool_spend.budget_refused, 2);
    // The refusal reaches the model's next request.
    let next = &model.requests()[1];
    assert_eq!(
        results(&next.messages)
            .iter()
            .filter(|t| **t == spent)
            .count(),
        2
    );
}

#[test]
fn sp1_the_budget_runs_over_the_rounds_of_one_review_and_starts_again_at_the_next() {
    let call = |path: &str| ScriptedReply::tool_call("c", "read", json!({ "path": path }));
    let model = ScriptedModel::new([
        call("a"),
        call("b"),
        call("c"),
        ScriptedReply::text("done"),
        call("d"),
        ScriptedReply::text("done"),
    ]);
    let port = StubPort::default();
    let first = review(budgeted(&model, 2), &port, AdvisorContext::new(), "one");
    assert_eq!(first.tool_spend.budget_refused, 1);
    assert_eq!(
        results(&first.context.messages)[2],
        texts::fill(texts::BUDGET_SPENT, &[("calls", "2 tool calls")])
    );
    let second = review(budgeted(&model, 2), &port, first.context, "two");
    assert_eq!(
        second.tool_spend.budget_refused, 0,
        "a new review, a new budget"
    );
    assert_eq!(port.log.borrow().tool_calls.len(), 3, "a, b, then d");
}

#[test]
fn sp1_g3_a_call_of_the_round_past_the_cap_is_g3_s_and_costs_no_budget() {
    // Budget 0: every workspace call is refused by SP1, except in the round past G3's
    // cap, where G3's own text answers and nothing is counted as refused by the budget.
    let call = || ScriptedReply::tool_call("c", "read", json!({"path": "a"}));
    let model = ScriptedModel::new([call(), call()]);
    let mut engine = budgeted(&model, 0);
    engine.limits.max_tool_rounds = 1;
    let port = StubPort::default();
    let run = review(engine, &port, AdvisorContext::new(), "update");
    let got = results(&run.context.messages);
    assert_eq!(
        got[0],
        format!(
            "{}\n\n{}",
            texts::fill(texts::BUDGET_SPENT, &[("calls", "0 tool calls")]),
            texts::FINISH_NOW
        )
    );
    assert_eq!(got[1], texts::TOOL_NOT_RUN);
    assert_eq!(run.tool_spend.budget_refused, 1);
    assert!(port.log.borrow().tool_calls.is_empty());
}
