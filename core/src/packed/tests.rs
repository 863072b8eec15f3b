//! The packed form against its oracle, the JSON form: a small reader of the
//! layout table (written from the module docs, not from the writer) turns
//! every record back into the JSON line's value, which must equal what
//! `ItemJson` writes, on the fixtures and on texts full of markers.

use serde_json::{json, Value};

use super::*;
use crate::event::{DecodeError, DecodeErrorKind, Decoder, Item};
use crate::time::FrameId;

const SERVICE: &[u8] = include_bytes!("../../../fixtures/streams/service.sse");
const BROKEN: &[u8] = include_bytes!("../../../fixtures/streams/broken.sse");

fn items(mut input: &[u8]) -> Vec<Item> {
    let mut d = Decoder::new();
    let mut out = Vec::new();
    while let Some(item) = d.next_item(&mut input) {
        out.push(item);
    }
    out.extend(d.finish());
    out
}

fn packed(items: &[Item]) -> String {
    let mut out = Vec::new();
    write_batch(items, &mut out);
    String::from_utf8(out).expect("a batch is UTF-8")
}

/// Splits a batch into (tag, fields) per record, as a binding does.
fn read(batch: &str) -> Vec<(char, Vec<&str>)> {
    if batch.is_empty() {
        return Vec::new();
    }
    let mut fields: Vec<&str> = batch.split('\u{1f}').collect();
    let tags = fields.pop().expect("the tags");
    assert!(tags.bytes().all(|b| b.is_ascii_lowercase()), "{tags:?}");
    assert_eq!(tags.len() * WIDTH, fields.len(), "{WIDTH} fields per record");
    tags.chars()
        .zip(fields.chunks(WIDTH))
        .map(|(t, r)| (t, r.to_vec()))
        .collect()
}

fn text(f: &str) -> Value {
    assert!(!f.contains(['\u{1d}', '\u{1f}']), "{f:?}");
    json!(f)
}
fn opt_text(f: &str) -> Value {
    if f == "\u{1d}" {
        Value::Null
    } else {
        text(f)
    }
}
fn int(f: &str) -> Value {
    json!(f.parse::<u64>().expect("an int"))
}
fn opt_int(f: &str) -> Value {
    if f == "\u{1d}" {
        Value::Null
    } else {
        int(f)
    }
}
fn flag(f: &str) -> Value {
    match f {
        "1" => json!(true),
        "0" => json!(false),
        other => panic!("a flag: {other:?}"),
    }
}
fn opt_float(f: &str) -> Value {
    if f == "\u{1d}" {
        return Value::Null;
    }
    assert!(!f.contains(['e', 'E']), "no exponent: {f}");
    json!(f.parse::<f64>().expect("a float"))
}
fn user(f: &[&str]) -> Value {
    json!({"id": text(f[1]), "nickname": opt_text(f[2])})
}
fn event(name: &str, f: &[&str], data: Value) -> Value {
    json!({"type": "event", "event": name, "id": opt_text(f[0]), "data": data})
}

/// The JSON line's value of one record, by the table in the module docs.
fn as_json(tag: char, f: &[&str]) -> Value {
    // The kind's fields, then empty ones up to the width.
    let n = |k: usize| assert!(f[k..].iter().all(|x| x.is_empty()), "{tag}: {f:?}");
    match tag {
        'c' => {
            n(6);
            let data = json!({"user": user(f), "isDj": flag(f[3]), "message": text(f[4]), "sentTime": text(f[5])});
            event("chat", f, data)
        }
        'p' => {
            n(8);
            let data = json!({"user": user(f), "type": text(f[3]), "fanRank": opt_int(f[4]),
                "isManager": flag(f[5]), "favoriteTemperature": opt_float(f[6]), "time": text(f[7])});
            event("presence", f, data)
        }
        'l' => {
            n(9);
            let data = json!({"user": user(f), "type": text(f[3]), "totalAmount": int(f[4]),
                "amount": int(f[5]), "extraAmount": int(f[6]), "combo": opt_int(f[7]), "time": text(f[8])});
            event("like", f, data)
        }
        'd' => {
            n(6);
            let data = json!({"user": user(f), "amount": int(f[3]), "message": opt_text(f[4]), "time": text(f[5])});
            event("donation", f, data)
        }
        'e' => {
            n(3);
            assert_eq!(flag(f[2]), json!(f[1] == "LIVE_ENDED"));
            event("end", f, json!({"reason": text(f[1])}))
        }
        'h' => {
            n(0);
            json!({"type": "heartbeat"})
        }
        'm' => {
            n(1);
            json!({"type": "comment", "text": text(f[0])})
        }
        'r' => {
            n(1);
            json!({"type": "retry", "ms": int(f[0])})
        }
        'u' => {
            n(3);
            json!({"type": "unknown", "event": text(f[0]), "id": opt_text(f[1]), "data": text(f[2])})
        }
        'x' => {
            n(5);
            json!({"type": "error", "error": text(f[0]), "message": text(f[1]), "event": opt_text(f[2]),
                "id": opt_text(f[3]), "raw": text(f[4])})
        }
        'j' => {
            n(1);
            serde_json::from_str(f[0]).expect("a JSON line")
        }
        other => panic!("unknown tag {other:?}"),
    }
}

fn oracle(items: &[Item]) -> Vec<Value> {
    items
        .iter()
        .map(|i| serde_json::from_str(&ItemJson(i).to_line()).expect("JSON"))
        .collect()
}

fn check(items: &[Item]) -> Vec<char> {
    let batch = packed(items);
    let records = read(&batch);
    let got: Vec<Value> = records.iter().map(|(t, f)| as_json(*t, f)).collect();
    assert_eq!(got, oracle(items));
    records.iter().map(|(t, _)| *t).collect()
}

#[test]
fn fixtures_read_back_as_their_json_lines() {
    let service = items(SERVICE);
    let tags = check(&service);
    for t in ['c', 'p', 'l', 'd', 'e', 'h', 'u'] {
        assert!(tags.contains(&t), "service.sse has a {t} record");
    }
    assert!(!tags.contains(&'j'));
    let broken = items(BROKEN);
    let tags = check(&broken);
    for t in ['x', 'm', 'r'] {
        assert!(tags.contains(&t), "broken.sse has a {t} record");
    }
}

fn pad(fields: usize) -> String {
    "\u{1f}".repeat(WIDTH - fields)
}

#[test]
fn an_empty_batch_is_empty_and_a_heartbeat_is_an_empty_record() {
    assert_eq!(packed(&[]), "");
    let empty = pad(0);
    assert_eq!(packed(&[Item::Heartbeat]), format!("{empty}h"));
    assert_eq!(
        packed(&[Item::Heartbeat, Item::Heartbeat]),
        format!("{empty}{empty}hh")
    );
    assert_eq!(
        packed(&[Item::Comment(String::new())]),
        format!("{empty}m"),
        "an empty text is an empty field, not null"
    );
    assert_eq!(
        packed(&[Item::Comment("\u{1e}".into())]),
        format!("\u{1e}{empty}m"),
        "U+001E is plain text"
    );
}

#[test]
fn a_chat_record_as_documented() {
    let stream = "id:7-1\nevent:chat\ndata:{\"user\":{\"id\":\"u\",\"nickname\":null},\"isDj\":true,\
                  \"message\":\"hi 🎵\",\"sentTime\":\"t\"}\n\n";
    assert_eq!(
        packed(&items(stream.as_bytes())),
        format!("7-1\u{1f}u\u{1f}\u{1d}\u{1f}1\u{1f}hi 🎵\u{1f}t\u{1f}{}c", pad(6))
    );
}

#[test]
fn floats_read_back_exactly() {
    for t in ["36.5", "36", "0.1", "1e-7", "12345678901234567890", "1.7976931348623157e308"] {
        let stream = format!(
            "event:presence\ndata:{{\"user\":{{\"id\":\"u\"}},\"type\":\"JOIN\",\"fanRank\":null,\
             \"isManager\":false,\"favoriteTemperature\":{t},\"time\":\"t\"}}\n\n"
        );
        let got = items(stream.as_bytes());
        assert!(matches!(got[0], Item::Event { .. }), "{t}: {got:?}");
        check(&got);
    }
}

/// Every text field of every kind, with each marker byte in it: that record
/// (and only that one) falls back to JSON, and reads back the same.
#[test]
fn a_text_holding_a_marker_falls_back_to_json() {
    for marker in ['\u{1d}', '\u{1f}'] {
        let bad = format!("a{marker}b");
        let esc = serde_json::to_string(&bad).expect("JSON");
        let user = |id: &str, nick: &str| format!("{{\"id\":{id},\"nickname\":{nick}}}");
        let ok = "\"ok\"";
        let frames = [
            format!("event:chat\ndata:{{\"user\":{},\"isDj\":false,\"message\":{ok},\"sentTime\":{ok}}}", user(&esc, ok)),
            format!("event:chat\ndata:{{\"user\":{},\"isDj\":false,\"message\":{ok},\"sentTime\":{ok}}}", user(ok, &esc)),
            format!("event:chat\ndata:{{\"user\":{},\"isDj\":false,\"message\":{esc},\"sentTime\":{ok}}}", user(ok, ok)),
            format!("event:chat\ndata:{{\"user\":{},\"isDj\":false,\"message\":{ok},\"sentTime\":{esc}}}", user(ok, ok)),
            format!("event:like\ndata:{{\"user\":{},\"type\":{esc},\"totalAmount\":1,\"amount\":1,\"extraAmount\":0,\"combo\":null,\"time\":{ok}}}", user(ok, ok)),
            format!("event:presence\ndata:{{\"user\":{},\"type\":{esc},\"fanRank\":null,\"isManager\":false,\"favoriteTemperature\":null,\"time\":{ok}}}", user(ok, ok)),
            format!("event:donation\ndata:{{\"user\":{},\"amount\":5,\"message\":{esc},\"time\":{ok}}}", user(ok, ok)),
            format!("event:end\ndata:{{\"reason\":{esc}}}"),
            format!("event:poll\ndata:{bad}"),
            format!("event:{bad}\ndata:x"),
            format!(":{bad}"),
            format!("event:chat\ndata:{bad}"),
        ];
        for frame in frames {
            let stream = format!(":heartbeat\n\n{frame}\n\nretry:5\n\n");
            let got = items(stream.as_bytes());
            assert_eq!(got.len(), 3, "{frame:?}: {got:?}");
            assert_eq!(check(&got), ['h', 'j', 'r'], "{frame:?}");
        }
    }
    // An id with a marker (ids are any text but LF, CR and NUL).
    let with_id = Item::Unknown {
        event: "poll".into(),
        id: Some(FrameId::new("1\u{1f}2")),
        data: "d".into(),
    };
    assert_eq!(check(&[with_id]), ['j']);
    let error = Item::Error(DecodeError {
        kind: DecodeErrorKind::InvalidJson,
        event: Some("chat".into()),
        id: None,
        raw: "{\u{1d}".into(),
        message: "m".into(),
    });
    assert_eq!(check(&[error, Item::Retry(1)]), ['j', 'r']);
}

#[test]
fn integers_and_a_batch_pushed_one_by_one() {
    for n in [0, 1, 9, 10, 99, 100, 12345, u64::MAX - 1, u64::MAX] {
        let mut out = Vec::new();
        write_record(&Item::Retry(n), &mut out);
        assert_eq!(out[..out.len() - WIDTH], *n.to_string().as_bytes(), "{n}");
    }
    let all = items(SERVICE);
    let mut out = Vec::new();
    let mut batch = Batch::new(&mut out);
    assert!(batch.is_empty());
    for item in &all {
        batch.push(item);
    }
    assert_eq!(batch.len(), all.len());
    batch.finish();
    assert_eq!(String::from_utf8(out).expect("UTF-8"), packed(&all));
}
