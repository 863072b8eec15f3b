//! `onair decode` end to end: the built binary on fixture streams.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/streams")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn onair(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_onair"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn onair");
    let mut pipe = child.stdin.take().expect("stdin");
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait");
    writer.join().expect("writer");
    out
}

fn decode(args: &[&str], stdin: &[u8]) -> String {
    let out = onair(args, stdin);
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty());
    let text = String::from_utf8(out.stdout).expect("utf-8 output");
    for line in text.lines() {
        let value: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
        assert!(value.is_object());
    }
    text
}

#[test]
fn typed_service_stream() {
    insta::assert_snapshot!(decode(&["decode"], &fixture("service.sse")));
}

#[test]
fn typed_broken_stream() {
    insta::assert_snapshot!(decode(&["decode"], &fixture("broken.sse")));
}

#[test]
fn raw_service_stream() {
    insta::assert_snapshot!(decode(&["decode", "--raw"], &fixture("service.sse")));
}

#[test]
fn raw_broken_stream() {
    insta::assert_snapshot!(decode(&["decode", "--raw"], &fixture("broken.sse")));
}

#[test]
fn chunk_size_never_changes_the_output() {
    for name in ["service.sse", "broken.sse"] {
        let input = fixture(name);
        let whole = decode(&["decode"], &input);
        for chunk in ["1", "2", "3", "7", "64", "4096"] {
            assert_eq!(
                decode(&["decode", "--chunk", chunk], &input),
                whole,
                "{name} --chunk {chunk}"
            );
        }
    }
}

#[test]
fn frame_cap_reports_frame_too_large_and_goes_on() {
    let big = format!("event:chat\ndata:{}\n\ndata:after\n\n", "x".repeat(5000));
    let out = decode(&["decode", "--max-frame-bytes", "1024"], big.as_bytes());
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["type"], "error");
    assert_eq!(lines[0]["error"], "frame_too_large");
    assert_eq!(lines[0]["event"], "chat");
    assert_eq!(lines[1]["type"], "unknown");
    assert_eq!(lines[1]["data"], "after");
}

#[test]
fn garbage_is_output_not_a_crash() {
    let mut junk = Vec::new();
    let mut x: u32 = 12345;
    for _ in 0..100_000 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        junk.push((x >> 16) as u8);
    }
    decode(&["decode"], &junk);
    decode(&["decode", "--raw", "--chunk", "5"], &junk);
}

#[test]
fn empty_input_prints_nothing() {
    assert_eq!(decode(&["decode"], b""), "");
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    for args in [
        &["decode", "--chunk"][..],
        &["decode", "--chunk", "0"],
        &["decode", "--chunk", "x"],
        &["decode", "--max-frame-bytes", "-1"],
        &["decode", "--bogus"],
        &["nope"],
        &[],
    ] {
        let out = onair(args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
}
