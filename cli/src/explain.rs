//! `onair explain`: classify one HTTP response given as JSON on stdin.
//!
//! Input, one JSON object:
//! `{"endpoint":"chat","status":429,"headers":{"Retry-After":"30"},"body":"","nowMs":1700000000000}`
//! (`headers` and `body` optional, `body` a string, `nowMs` optional and only
//! needed to turn an HTTP-date `Retry-After` into a delay).
//!
//! Output, one JSON object on one line:
//! `{"kind":…,"advice":…,"status":…,"detailCode":…,"oauthError":…,"retryAfterMs":…,"quotaScope":…,"recentlyRevoked":…}`.
//! Bad input is a usage error: exit 2 with one line on stderr.

use std::io::Read;

use onair::api::classify;
use onair::Endpoint;
use serde_json::Value;

use crate::UsageError;

/// Runs `onair explain` over stdin and stdout.
pub fn run() -> Result<(), UsageError> {
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .map_err(|e| UsageError(format!("explain: cannot read stdin: {e}")))?;
    let line = explain(&input)?;
    println!("{line}");
    Ok(())
}

/// The output line for one input document.
pub fn explain(input: &[u8]) -> Result<String, UsageError> {
    let bad = |what: String| UsageError(format!("explain: {what}"));
    let doc: Value =
        serde_json::from_slice(input).map_err(|e| bad(format!("input is not valid JSON: {e}")))?;
    let Value::Object(doc) = doc else {
        return Err(bad("input must be one JSON object".to_owned()));
    };
    let endpoint = match doc.get("endpoint") {
        Some(Value::String(name)) => Endpoint::from_name(name).ok_or_else(|| {
            bad(format!(
                "unknown endpoint {name:?} (token, revoke, live, listeners, fans, events, chat)"
            ))
        })?,
        _ => return Err(bad("\"endpoint\" must be a string".to_owned())),
    };
    let status = doc
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .ok_or_else(|| bad("\"status\" must be a whole number from 0 to 65535".to_owned()))?;
    let headers: Vec<(String, String)> = match doc.get("headers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(name, value)| match value {
                Value::String(s) => Ok((name.clone(), s.clone())),
                Value::Number(n) => Ok((name.clone(), n.to_string())),
                _ => Err(bad(format!("header {name:?} must be a string"))),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(bad("\"headers\" must be an object of strings".to_owned())),
    };
    let body = match doc.get("body") {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(bad("\"body\" must be a string".to_owned())),
    };
    let now_ms = match doc.get("nowMs") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            bad("\"nowMs\" must be a whole number of unix milliseconds".to_owned())
        })?),
    };
    let problem = classify(endpoint, status, &headers, body.as_bytes());
    serde_json::to_string(&problem.explain(now_ms))
        .map_err(|e| bad(format!("cannot write the result: {e}")))
}
