//! The marshal form against its oracle, the JSON form: a small marshal
//! reader (written from CPython's format, not from the writer) turns each
//! record back into the JSON line's value by the table in the module docs,
//! which must equal what `ItemJson` writes, on the fixtures and on texts
//! with every kind of character. (The Python tests read the same batches
//! with the real `marshal.loads`.)

use serde_json::{json, Value};

use super::*;
use onair_core::event::{DecodeError, DecodeErrorKind, Decoder};
use onair_core::proto::json::ItemJson;
use onair_core::proto::time::FrameId;

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

/// A Python value as marshal gives it.
#[derive(Debug, Clone, PartialEq)]
enum Py {
    None,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Tuple(Vec<Py>),
}

/// Reads one marshal object (the codes the writer uses, no references).
fn read(data: &mut &[u8]) -> Py {
    let mut take = |n: usize| -> Vec<u8> {
        assert!(data.len() >= n, "short data");
        let (a, b) = data.split_at(n);
        *data = b;
        a.to_vec()
    };
    let code = take(1)[0];
    assert_eq!(code & 0x80, 0, "no references");
    let i32_at = |b: Vec<u8>| i32::from_le_bytes(b.try_into().expect("4 bytes"));
    match code {
        b'N' => Py::None,
        b'T' => Py::Bool(true),
        b'F' => Py::Bool(false),
        b'i' => Py::Int(i32_at(take(4)).into()),
        b'l' => {
            let n = i32_at(take(4));
            assert!(n > 0, "positive, normalized");
            let mut v: i128 = 0;
            let mut last = 0;
            for k in 0..n {
                let d = u16::from_le_bytes(take(2).try_into().expect("2 bytes"));
                assert!(d < 1 << 15, "a 15-bit digit");
                v |= i128::from(d) << (15 * k);
                last = d;
            }
            assert_ne!(last, 0, "normalized");
            assert!(v > i128::from(i32::MAX), "small ints are `i`");
            Py::Int(v)
        }
        b'g' => Py::Float(f64::from_le_bytes(take(8).try_into().expect("8 bytes"))),
        b'z' | b'a' => {
            let n = if code == b'z' {
                usize::from(take(1)[0])
            } else {
                i32_at(take(4)) as usize
            };
            assert_eq!(code == b'z', n < 256);
            let b = take(n);
            assert!(b.is_ascii(), "z/a hold ASCII only");
            Py::Str(String::from_utf8(b).expect("ASCII"))
        }
        b'u' => {
            let n = i32_at(take(4)) as usize;
            let s = String::from_utf8(take(n)).expect("UTF-8");
            assert!(!s.is_ascii(), "ASCII is z/a");
            Py::Str(s)
        }
        b')' | b'(' => {
            let n = if code == b')' {
                usize::from(take(1)[0])
            } else {
                i32_at(take(4)) as usize
            };
            assert_eq!(code == b')', n < 256);
            Py::Tuple((0..n).map(|_| read(data)).collect())
        }
        other => panic!("unexpected code {:?}", other as char),
    }
}

/// (tag, fields) per record of a whole batch, which must be exactly one object.
fn records(batch: &[u8]) -> Vec<(char, Vec<Py>)> {
    let mut data = batch;
    let top = read(&mut data);
    assert!(data.is_empty(), "one object");
    let Py::Tuple(top) = top else {
        panic!("a tuple")
    };
    let [Py::Str(tags), Py::Tuple(recs)] = &top[..] else {
        panic!("(tags, records): {top:?}")
    };
    assert_eq!(tags.len(), recs.len());
    tags.chars()
        .zip(recs)
        .map(|(t, r)| match r {
            Py::Tuple(f) => (t, f.clone()),
            other => panic!("a record: {other:?}"),
        })
        .collect()
}

fn j(v: &Py) -> Value {
    match v {
        Py::None => Value::Null,
        Py::Bool(b) => json!(b),
        Py::Int(i) => json!(u64::try_from(*i).expect("a u64")),
        Py::Float(f) => json!(f),
        Py::Str(s) => json!(s),
        Py::Tuple(_) => panic!("no nested tuple in a record"),
    }
}

fn event(name: &str, id: &Py, data: Value) -> Value {
    json!({"type": "event", "event": name, "id": j(id), "data": data})
}

/// The JSON line's value of one record, by the table in the module docs.
fn as_json(tag: char, f: &[Py]) -> Value {
    let n = |k: usize| assert_eq!(f.len(), k, "{tag}: {f:?}");
    let user = || json!({"id": j(&f[1]), "nickname": j(&f[2])});
    match tag {
        'c' => {
            n(6);
            event(
                "chat",
                &f[0],
                json!({"user": user(), "isDj": j(&f[3]), "message": j(&f[4]), "sentTime": j(&f[5])}),
            )
        }
        'p' => {
            n(8);
            event(
                "presence",
                &f[0],
                json!({"user": user(), "type": j(&f[3]), "fanRank": j(&f[4]),
                "isManager": j(&f[5]), "favoriteTemperature": j(&f[6]), "time": j(&f[7])}),
            )
        }
        'l' => {
            n(9);
            event(
                "like",
                &f[0],
                json!({"user": user(), "type": j(&f[3]), "totalAmount": j(&f[4]),
                "amount": j(&f[5]), "extraAmount": j(&f[6]), "combo": j(&f[7]), "time": j(&f[8])}),
            )
        }
        'd' => {
            n(6);
            event(
                "donation",
                &f[0],
                json!({"user": user(), "amount": j(&f[3]), "message": j(&f[4]), "time": j(&f[5])}),
            )
        }
        'e' => {
            n(3);
            assert_eq!(f[2], Py::Bool(f[1] == Py::Str("LIVE_ENDED".into())));
            event("end", &f[0], json!({"reason": j(&f[1])}))
        }
        'h' => {
            n(0);
            json!({"type": "heartbeat"})
        }
        'm' => {
            n(1);
            json!({"type": "comment", "text": j(&f[0])})
        }
        'r' => {
            n(1);
            json!({"type": "retry", "ms": j(&f[0])})
        }
        'u' => {
            n(3);
            json!({"type": "unknown", "event": j(&f[0]), "id": j(&f[1]), "data": j(&f[2])})
        }
        'x' => {
            n(5);
            json!({"type": "error", "error": j(&f[0]), "message": j(&f[1]), "event": j(&f[2]),
                "id": j(&f[3]), "raw": j(&f[4])})
        }
        other => panic!("unknown tag {other:?}"),
    }
}

fn check(items: &[Item]) -> String {
    let mut out = Vec::new();
    write_batch(items, &mut out);
    let recs = records(&out);
    let got: Vec<Value> = recs.iter().map(|(t, f)| as_json(*t, f)).collect();
    // Read back with serde_json's `float_roundtrip` (a dev-dependency
    // feature): the nearest double, as Python's json.loads reads it, since
    // the marshal form carries the f64's exact bits.
    let oracle: Vec<Value> = items
        .iter()
        .map(|i| serde_json::from_str(&ItemJson(i).to_line()).expect("JSON"))
        .collect();
    assert_eq!(got, oracle);
    recs.iter().map(|(t, _)| *t).collect()
}

#[test]
fn fixtures_read_back_as_their_json_lines() {
    let tags = check(&items(SERVICE));
    for t in ['c', 'p', 'l', 'd', 'e', 'h', 'u'] {
        assert!(tags.contains(t), "service.sse has a {t} record");
    }
    let tags = check(&items(BROKEN));
    for t in ['x', 'm', 'r'] {
        assert!(tags.contains(t), "broken.sse has a {t} record");
    }
}

#[test]
fn an_empty_batch_and_the_documented_bytes() {
    let mut out = Vec::new();
    write_batch(&[], &mut out);
    assert_eq!(out, b")\x02z\x00)\x00", "(\"\", ())");
    let stream =
        "id:7-1\nevent:chat\ndata:{\"user\":{\"id\":\"u\",\"nickname\":null},\"isDj\":true,\
                  \"message\":\"hi 🎵\",\"sentTime\":\"t\"}\n\n";
    let mut out = Vec::new();
    write_batch(&items(stream.as_bytes()), &mut out);
    let mut expected = b")\x02z\x01c)\x01)\x06z\x037-1z\x01uNTu\x07\x00\x00\x00".to_vec();
    expected.extend_from_slice("hi 🎵".as_bytes());
    expected.extend_from_slice(b"z\x01t");
    assert_eq!(out, expected);
}

#[test]
fn numbers_texts_and_long_tuples() {
    // Ints at the i32 edge and u64's, floats, texts of every length class.
    let mut all = Vec::new();
    for n in [
        0,
        1,
        i32::MAX as u64,
        i32::MAX as u64 + 1,
        1 << 32,
        (1 << 45) - 1,
        1 << 45,
        u64::MAX,
    ] {
        all.push(Item::Retry(n));
    }
    for t in [
        "36.5",
        "36",
        "0.1",
        "1e-7",
        "12345678901234567890",
        "1.7976931348623157e308",
        "-0.0",
    ] {
        let stream = format!(
            "event:presence\ndata:{{\"user\":{{\"id\":\"u\"}},\"type\":\"JOIN\",\"fanRank\":null,\
             \"isManager\":false,\"favoriteTemperature\":{t},\"time\":\"t\"}}\n\n"
        );
        all.extend(items(stream.as_bytes()));
    }
    for len in [0, 1, 255, 256, 70_000] {
        all.push(Item::Comment("x".repeat(len)));
        all.push(Item::Comment("é".repeat(len)));
    }
    all.push(Item::Comment("\u{1d}\u{1e}\u{1f}\0\n 👩‍👩‍👧".into()));
    // More than 255 records: the `(` form of the records tuple.
    let many: Vec<Item> = all.iter().cycle().take(700).cloned().collect();
    check(&all);
    let tags = check(&many);
    assert_eq!(tags.len(), 700);
}

#[test]
fn a_batch_pushed_one_by_one_equals_the_whole() {
    let all = items(SERVICE);
    let mut whole = Vec::new();
    write_batch(&all, &mut whole);
    let mut out = b"prefix".to_vec();
    let mut batch = Batch::new(&mut out);
    assert!(batch.is_empty());
    for item in &all {
        batch.push(item);
    }
    assert_eq!(batch.len(), all.len());
    batch.finish();
    assert_eq!(&out[..6], b"prefix");
    assert_eq!(out[6..], whole[..]);
}

#[test]
fn a_text_too_long_for_marshal_becomes_a_frame_error() {
    let chat = items(
        "id:1-0\nevent:chat\ndata:{\"user\":{\"id\":\"u\",\"nickname\":\"n\"},\"isDj\":false,\
         \"message\":\"0123456789\",\"sentTime\":\"t\"}\n\n"
            .as_bytes(),
    );
    let error = Item::Error(DecodeError {
        kind: DecodeErrorKind::InvalidJson,
        event: Some("chat".into()),
        id: Some(FrameId::new("2-0")),
        raw: "0123456789".into(),
        message: "m".into(),
    });
    for (item, event, id, tag) in [
        (&chat[0], "chat", "1-0", b'c'),
        (&error, "chat", "2-0", b'x'),
    ] {
        let mut out = Vec::new();
        let tags = [write_record_within(item, &mut out, 9)];
        let mut batch = vec![b')', 2, b'z', 1, tags[0], b')', 1];
        batch.extend_from_slice(&out);
        let recs = records(&batch);
        assert_eq!(recs[0].0, 'x');
        let f = &recs[0].1;
        assert_eq!(f[0], Py::Str("frame_too_large".into()));
        assert_eq!(f[1], Py::Str(TOO_LONG.into()));
        assert_eq!(
            (&f[2], &f[3], &f[4]),
            (
                &Py::Str(event.into()),
                &Py::Str(id.into()),
                &Py::Str(String::new())
            )
        );
        // Within the limit, the item itself.
        let mut out = Vec::new();
        assert_eq!(write_record_within(item, &mut out, 20), tag);
        assert!(!String::from_utf8_lossy(&out).contains("frame_too_large"));
    }
    let mut out = Vec::new();
    assert_eq!(
        write_record_within(&Item::Comment("x".repeat(10)), &mut out, 9),
        b'x'
    );
}

/// Frames of every kind with arbitrary texts (any `char`, escaped into the
/// JSON), nulls and any u64 or float, plus arbitrary bytes.
fn stream() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let text = any::<String>();
    let opt_text = proptest::option::of(any::<String>());
    let j = |s: &String| serde_json::to_string(s).expect("JSON");
    let oj = move |s: &Option<String>| s.as_ref().map_or("null".to_owned(), j);
    let frame = (
        0..8u8,
        (text, opt_text.clone(), text, opt_text),
        (any::<u64>(), proptest::option::of(any::<u64>()), any::<bool>()),
        proptest::option::of(-1e300f64..1e300),
        proptest::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(move |(kind, (a, b, c, d), (n, m, flag), temp, junk)| {
            let user = format!("{{\"id\":{},\"nickname\":{}}}", j(&a), oj(&b));
            let m = m.map_or("null".to_owned(), |m| m.to_string());
            let temp = temp.map_or("null".to_owned(), |t| format!("{t:?}"));
            let frame = match kind {
                0 => format!("event:chat\ndata:{{\"user\":{user},\"isDj\":{flag},\"message\":{},\"sentTime\":{}}}", j(&c), j(&a)),
                1 => format!("event:like\ndata:{{\"user\":{user},\"type\":{},\"totalAmount\":{n},\"amount\":{n},\"extraAmount\":0,\"combo\":{m},\"time\":\"t\"}}", j(&c)),
                2 => format!("event:presence\ndata:{{\"user\":{user},\"type\":\"JOIN\",\"fanRank\":{m},\"isManager\":{flag},\"favoriteTemperature\":{temp},\"time\":{}}}", j(&c)),
                3 => format!("event:donation\ndata:{{\"user\":{user},\"amount\":{n},\"message\":{},\"time\":\"t\"}}", oj(&d)),
                4 => format!("event:end\ndata:{{\"reason\":{}}}", j(&c)),
                5 => format!("retry:{n}"),
                6 => format!("event:poll\ndata:{}", c.replace(['\n', '\r'], " ")),
                _ => String::from_utf8_lossy(&junk).into_owned(),
            };
            let id = if flag { format!("id:{}\n", b.unwrap_or_default().replace(['\n', '\r', '\0'], "")) } else { String::new() };
            format!("{id}{frame}\n\n").into_bytes()
        });
    proptest::collection::vec(frame, 0..12).prop_map(|frames| frames.concat())
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    #[test]
    fn any_stream_reads_back_as_its_json_lines(input in stream()) {
        check(&items(&input));
    }

    #[test]
    fn arbitrary_bytes_read_back(input in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2000)) {
        check(&items(&input));
    }
}

#[test]
fn a_heartbeat_and_a_retry_make_the_documented_bytes() {
    let mut out = Vec::new();
    write_batch(&[Item::Heartbeat, Item::Retry(3000)], &mut out);
    // (tags, records) == ("hr", ((), (3000,)))
    assert_eq!(out, b")\x02z\x02hr)\x02)\x00)\x01i\xb8\x0b\x00\x00");
}
