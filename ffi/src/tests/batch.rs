//! `onair_decoder_take_json` gives the same lines as `onair_decoder_next` +
//! `onair_decoder_item_json`, one call for all pending items; the marshal
//! batches are the core's, fed or taken.

use std::ptr::null_mut;

use crate::decoder::*;
use crate::onair_result::*;

const STREAM: &[u8] = b":heartbeat\n\nid:1-0\nevent:chat\ndata:{\"user\":{\"id\":\"u\",\"nickname\":null},\
\"isDj\":false,\"message\":\"hi \\\"x\\\"\",\"sentTime\":\"t\"}\n\nevent:chat\ndata:{broken\n\nretry:5\n\n";

fn lines_one_by_one() -> Vec<String> {
    let mut d = null_mut();
    let mut out = Vec::new();
    // SAFETY: pointers from this test; views read before the next call.
    unsafe {
        assert_eq!(onair_decoder_new(0, &mut d), ONAIR_OK);
        assert_eq!(
            onair_decoder_feed(d, STREAM.as_ptr(), STREAM.len()),
            ONAIR_OK
        );
        let mut item = std::mem::zeroed::<onair_item>();
        loop {
            assert_eq!(onair_decoder_next(d, &mut item), ONAIR_OK);
            if item.kind == onair_item_kind::ONAIR_ITEM_NONE {
                break;
            }
            let (mut p, mut l) = (std::ptr::null(), 0);
            assert_eq!(onair_decoder_item_json(d, &mut p, &mut l), ONAIR_OK);
            let line = std::slice::from_raw_parts(p.cast::<u8>(), l);
            out.push(String::from_utf8(line.to_vec()).expect("utf-8"));
        }
        onair_decoder_free(d);
    }
    out
}

#[test]
fn take_json_equals_the_item_lines() {
    let expected = lines_one_by_one();
    assert_eq!(expected.len(), 4);
    let mut d = null_mut();
    // SAFETY: pointers from this test.
    unsafe {
        assert_eq!(onair_decoder_new(0, &mut d), ONAIR_OK);
        let (mut p, mut l) = (std::ptr::null(), 1);
        assert_eq!(onair_decoder_take_json(d, &mut p, &mut l), ONAIR_OK);
        assert_eq!(l, 0);
        assert_eq!(*p, 0);
        assert_eq!(
            onair_decoder_feed(d, STREAM.as_ptr(), STREAM.len()),
            ONAIR_OK
        );
        assert_eq!(onair_decoder_take_json(d, &mut p, &mut l), ONAIR_OK);
        let text =
            std::str::from_utf8(std::slice::from_raw_parts(p.cast::<u8>(), l)).expect("utf-8");
        assert_eq!(*p.add(l), 0);
        let got: Vec<&str> = text.lines().collect();
        assert_eq!(got, expected);
        assert!(text.ends_with('\n'));
        assert_eq!(onair_decoder_pending(d), 0);
        assert_eq!(onair_decoder_item_json(d, &mut p, &mut l), ONAIR_NO_CURRENT);
        assert_eq!(
            onair_decoder_take_json(d, null_mut(), &mut l),
            ONAIR_NULL_PARAMETER
        );
        onair_decoder_free(d);
    }
}

#[test]
fn marshal_batches_feed_or_take() {
    let (mut a, mut b) = (null_mut(), null_mut());
    // SAFETY: pointers from this test; each batch is copied before the next call.
    unsafe {
        assert_eq!(onair_decoder_new(0, &mut a), ONAIR_OK);
        assert_eq!(onair_decoder_new(0, &mut b), ONAIR_OK);
        let (mut p, mut l) = (std::ptr::null(), 0);
        assert_eq!(onair_decoder_take_marshal(a, &mut p, &mut l), ONAIR_OK);
        assert_eq!(std::slice::from_raw_parts(p, l), b")\x02z\x00)\x00");
        let mut fed = Vec::new();
        let mut taken = Vec::new();
        for chunk in STREAM.chunks(7) {
            assert_eq!(onair_decoder_feed(a, chunk.as_ptr(), chunk.len()), ONAIR_OK);
            assert_eq!(onair_decoder_take_marshal(a, &mut p, &mut l), ONAIR_OK);
            taken.push(std::slice::from_raw_parts(p, l).to_vec());
            assert_eq!(
                onair_decoder_feed_marshal(b, chunk.as_ptr(), chunk.len(), &mut p, &mut l),
                ONAIR_OK
            );
            fed.push(std::slice::from_raw_parts(p, l).to_vec());
        }
        assert_eq!(fed, taken);
        // The whole stream at once: the core's batch of its items.
        let mut expected = Vec::new();
        {
            let mut input = STREAM;
            let mut dec = onair_core::event::Decoder::new();
            let mut items = Vec::new();
            while let Some(item) = dec.next_item(&mut input) {
                items.push(item);
            }
            crate::marshal::write_batch(&items, &mut expected);
        }
        assert_eq!(onair_decoder_feed(b, STREAM.as_ptr(), 12), ONAIR_OK);
        let rest = &STREAM[12..];
        assert_eq!(
            onair_decoder_feed_marshal(b, rest.as_ptr(), rest.len(), &mut p, &mut l),
            ONAIR_OK
        );
        assert_eq!(std::slice::from_raw_parts(p, l), expected);
        assert!(expected.starts_with(b")\x02z\x04hcxr"));
        assert_eq!(onair_decoder_pending(b), 0);
        assert_eq!(
            onair_decoder_item_json(b, &mut p.cast(), &mut l),
            ONAIR_NO_CURRENT
        );
        assert_eq!(
            onair_decoder_feed_marshal(b, STREAM.as_ptr(), STREAM.len(), &mut p, null_mut()),
            ONAIR_NULL_PARAMETER
        );
        assert_eq!(
            onair_decoder_take_marshal(b, null_mut(), &mut l),
            ONAIR_NULL_PARAMETER
        );
        assert_eq!(onair_decoder_pending(b), 0);
        onair_decoder_free(a);
        onair_decoder_free(b);
    }
}
