//! `onair_decoder_take_json` gives the same lines as `onair_decoder_next` +
//! `onair_decoder_item_json`, one call for all pending items.

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
