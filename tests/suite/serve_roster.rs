//! `advisor serve` with a roster of named advisors (§15, RO23): `session/open` reports the
//! advisors resolved from the session's `WATCHDOG.yml` and the roster's warnings, and
//! `session/ask` takes an optional `advisor`.

use advisor::model::scripted::ScriptedModel;
use serde_json::json;

use super::serve_dispatch::{open, start};

/// Two advisors (one paused) and a malformed entry.
const ROSTER: &str = "\
advisors:
  - name: Architecture
    model: openai/gpt-5:high
    policy: interrupt
    maxSeverity: concern
    when:
      paths: [\"src/**\"]
  - name: Security
    enabled: false
  - name: Broken
    maxSeverity: loud
";

#[actix::test]
async fn ro23_open_reports_the_resolved_advisors_and_the_roster_warnings() {
    let (mut c, _server) = start(ScriptedModel::new([]));
    let dir = tempfile::tempdir().unwrap();
    // A temporary directory's name starts with `.`: its plain file would be ignored (W2).
    std::fs::create_dir(dir.path().join(".omp")).unwrap();
    std::fs::write(dir.path().join(".omp/WATCHDOG.yml"), ROSTER).unwrap();
    let r = open(&mut c, "s1", dir.path(), json!({"policy": "reconfirm"})).await;
    let advisors = r["roster"]["advisors"].as_array().expect("advisors");
    assert_eq!(advisors.len(), 2, "{r}");
    assert_eq!(
        advisors[0],
        json!({"name": "Architecture", "slug": "architecture", "enabled": true,
            "model": "openai/gpt-5", "thinking": "high", "policy": "interrupt",
            "maxSeverity": "concern", "when": {"paths": ["src/**"]}})
    );
    let security = &advisors[1];
    assert_eq!(security["name"], "Security");
    assert_eq!(security["enabled"], false);
    assert_eq!(security["policy"], "reconfirm", "the session's policy");
    assert_eq!(security["maxSeverity"], "blocker");
    assert!(security.get("model").is_none(), "{security}");
    assert!(
        !security["noModel"].as_str().unwrap_or_default().is_empty(),
        "no model role anywhere: {security}"
    );
    assert!(security.get("when").is_none());
    let warnings = r["roster"]["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1, "{r}");
    let warning = warnings[0].as_str().unwrap();
    assert!(
        warning.contains("WATCHDOG.yml")
            && warning.contains("Broken")
            && warning.contains("maxSeverity"),
        "{warning}"
    );
    // RO12: no roster file, no `roster` in the result.
    let plain = tempfile::tempdir().unwrap();
    let r = open(&mut c, "s2", plain.path(), json!({})).await;
    assert!(r.get("roster").is_none(), "{r}");
    assert_eq!(r["enabled"], true);
}

#[actix::test]
async fn ro23_session_ask_takes_an_advisor_and_refuses_a_bad_one() {
    let (mut c, _server) = start(ScriptedModel::new([]));
    let dir = tempfile::tempdir().unwrap();
    open(&mut c, "s1", dir.path(), json!({})).await;
    let e = c
        .call_err(
            "session/ask",
            json!({"sessionId": "s1", "question": "Why?", "advisor": 5}),
        )
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(e["data"], json!({"field": "advisor"}), "{e}");
    let e = c
        .call_err(
            "session/ask",
            json!({"sessionId": "s1", "question": "Why?", "advisor": "Nobody"}),
        )
        .await;
    assert_eq!(e["code"], -32000, "{e}");
    assert_eq!(e["data"], json!({"reason": "unknownAdvisor"}), "{e}");
    assert!(e["message"].as_str().unwrap().contains("Nobody"), "{e}");
}
