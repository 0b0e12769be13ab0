//! Smoke run of the load generator: `loadgen --quick` with tiny budgets
//! against the debug `agent`, so the benchmark keeps working (a few
//! seconds; the real numbers come from `scripts/bench.sh`).

use std::process::Command;

use asg_tests::{binary, testdata};

#[test]
fn loadgen_quick_run_measures_every_phase() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json_path = dir.path().join("bench.json");
    let output = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .arg("--quick")
        .arg("--agent")
        .arg(binary("agent"))
        .arg("--config")
        .arg(testdata("agent-resources.yaml"))
        .args([
            "--conversations",
            "100",
            "--clients",
            "4",
            "--low-clients",
            "2",
        ])
        .args(["--requests", "200", "--turns", "12", "--startup-runs", "2"])
        .args(["--get-rounds", "2"])
        .args(["--overload-turns-per-conversation", "2"])
        .args(["--max-seconds", "60", "--json"])
        .arg(&json_path)
        .output()
        .expect("cannot run loadgen");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "loadgen failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("GET /health"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).expect("JSON report"))
            .expect("valid JSON report");
    assert_eq!(report["conversations"], 100);
    assert_eq!(report["pending_approvals"], 3);
    assert_eq!(report["startup"]["runs"].as_array().map(Vec::len), Some(2));
    let phases = report["phases"].as_array().expect("phases");
    assert_eq!(phases.len(), 7, "five phases and two low-concurrency runs");
    for phase in phases {
        assert_eq!(phase["errors"], 0, "{phase}");
        assert!(phase["ok"].as_u64().unwrap_or(0) > 0, "{phase}");
    }
    // GET /conversations/{id} and the hello-world alternate, each
    // reported as its median round.
    assert!(
        phases[2]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("3. GET /conversations/{id}")
                && n.ends_with("(median of 2 rounds)")),
        "{}",
        phases[2]
    );
    let hello = &report["headline"]["hello_anchor"];
    assert_eq!(
        hello["label"], "axum hello-world (median of 2 rounds)",
        "{hello}"
    );
    assert!(hello["phase"]["ok"].as_u64().unwrap_or(0) > 0, "{hello}");
    assert_eq!(phases[4]["ok"], 12, "every turn is measured");
    assert_eq!(phases[5]["ok"], 12, "every A2A model reply is measured");
    assert!(
        phases[5]["name"]
            .as_str()
            .is_some_and(|n| n.contains("model reply")),
        "{}",
        phases[5]
    );
    assert_eq!(phases[6]["ok"], 12, "every A -> B delegation is measured");
    let turns = &report["headline"]["overload"][0];
    assert_eq!(
        turns["work"], "turns, a new conversation every 2",
        "{turns}"
    );
    assert!(turns["ok"].as_u64().unwrap_or(0) > 0, "{turns}");
    assert_eq!(turns["non_2xx"], turns["status_503"], "{turns}");
    assert_eq!(turns["no_answer"], 0, "{turns}");
    assert_eq!(report["shutdown"]["status"], "exit status: 0");
}
