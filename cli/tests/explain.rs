//! `onair explain` end to end: the built binary, stdin in, stdout out.

use std::io::Write;
use std::process::{Command, Stdio};

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn explain(input: &str) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_onair"))
        .arg("explain")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn onair");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8(out.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("utf-8 stderr"),
    }
}

/// Runs good inputs and snapshots input → output pairs.
fn table(inputs: &[&str]) -> Vec<serde_json::Value> {
    inputs
        .iter()
        .map(|input| {
            let run = explain(input);
            assert_eq!(run.code, Some(0), "{input}: {}", run.stderr);
            assert_eq!(run.stdout.lines().count(), 1, "one line: {}", run.stdout);
            let output: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
            serde_json::json!({ "input": input, "output": output })
        })
        .collect()
}

#[test]
fn explains_bot_endpoint_errors() {
    insta::assert_json_snapshot!(table(&[
        r#"{"endpoint":"chat","status":429,"headers":{"Retry-After":"30"},"body":""}"#,
        r#"{"endpoint":"chat","status":429,"body":"{\"status\":429,\"detailCode\":\"OAPI_MNGR_0302\",\"message\":\"slow\"}"}"#,
        r#"{"endpoint":"fans","status":429,"headers":{"retry-after":"Tue, 14 Nov 2023 22:23:20 GMT","X-RateLimit-Daily-Scope":"fans.read"},"body":"","nowMs":1700000000000}"#,
        r#"{"endpoint":"fans","status":429,"headers":{"retry-after":"Tue, 14 Nov 2023 22:23:20 GMT"}}"#,
        r#"{"endpoint":"live","status":429,"headers":{},"body":""}"#,
        r#"{"endpoint":"live","status":404,"body":"{\"detailCode\":\"OAPI_MNGR_0301\",\"userId\":null,\"extra\":null}"}"#,
        r#"{"endpoint":"listeners","status":401,"body":"{\"detailCode\":\"OAPI_MNGR_0203\"}"}"#,
        r#"{"endpoint":"live","status":403,"body":""}"#,
        r#"{"endpoint":"chat","status":403,"body":"{\"detailCode\":\"OAPI_MNGR_0208\"}"}"#,
        r#"{"endpoint":"chat","status":400,"body":"{\"detailCode\":\"OAPI_MNGR_0109\"}"}"#,
        r#"{"endpoint":"chat","status":502,"body":"<html>Bad Gateway</html>"}"#,
        r#"{"endpoint":"chat","status":204,"body":""}"#,
    ]));
}

#[test]
fn explains_stream_and_token_errors() {
    insta::assert_json_snapshot!(table(&[
        r#"{"endpoint":"events","status":403,"body":"data:{\"status\":403,\"detailCode\":\"OAPI_MNGR_0209\",\"message\":\"blocked\"}\n\n"}"#,
        r#"{"endpoint":"events","status":404,"body":"data:{\"status\":404,\"detailCode\":\"OAPI_MNGR_0301\"}\n\n"}"#,
        r#"{"endpoint":"token","status":400,"body":"{\"error\":\"invalid_grant\",\"error_description\":\"expired\"}"}"#,
        r#"{"endpoint":"token","status":401,"headers":{"WWW-Authenticate":"Basic realm=\"oauth\""},"body":"{\"error\":\"invalid_client\"}"}"#,
        r#"{"endpoint":"revoke","status":400,"body":"{\"error\":\"invalid_request\"}"}"#,
        r#"{"endpoint":"revoke","status":200}"#,
    ]));
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let cases = [
        "",
        "not json",
        "{\"endpoint\":\"chat\",",
        "[1,2]",
        r#"{"status":404}"#,
        r#"{"endpoint":"home","status":404}"#,
        r#"{"endpoint":"live"}"#,
        r#"{"endpoint":"live","status":70000}"#,
        r#"{"endpoint":"live","status":404,"body":7}"#,
        r#"{"endpoint":"live","status":404,"headers":["a"]}"#,
        r#"{"endpoint":"live","status":404,"nowMs":-1}"#,
    ];
    let mut messages = Vec::new();
    for input in cases {
        let run = explain(input);
        assert_eq!(run.code, Some(2), "{input}");
        assert_eq!(run.stdout, "", "{input}");
        assert_eq!(run.stderr.lines().count(), 1, "{input}: {}", run.stderr);
        messages.push(format!("{input} => {}", run.stderr.trim_end()));
    }
    insta::assert_json_snapshot!(messages);
}

#[test]
fn output_fields_come_in_the_documented_order() {
    let run =
        explain(r#"{"endpoint":"chat","status":429,"headers":{"Retry-After":"30"},"body":""}"#);
    assert_eq!(
        run.stdout,
        "{\"kind\":\"quota_daily\",\"advice\":\"retry_after\",\"status\":429,\"detailCode\":null,\
         \"oauthError\":null,\"retryAfterMs\":30000,\"quotaScope\":null,\"recentlyRevoked\":false}\n"
    );
}
