//! The fast payload reader against serde: whenever the fast reader answers,
//! serde must give the same event (floats bit for bit). The first byte picks
//! the event name, the rest is the frame's data.
#![no_main]

use libfuzzer_sys::fuzz_target;
use onair::event::fuzzing::{fast, serde};
use onair::event::Event;

const NAMES: [&str; 4] = ["chat", "presence", "like", "donation"];

fuzz_target!(|input: &[u8]| {
    let Some((&pick, data)) = input.split_first() else {
        return;
    };
    let Ok(data) = std::str::from_utf8(data) else {
        return;
    };
    let name = NAMES[usize::from(pick) % NAMES.len()];
    if let Some(event) = fast(name, data) {
        let reference = serde(name, data);
        assert_eq!(reference, Ok(Some(event.clone())), "{name} {data:?}");
        if let (Event::Presence(a), Ok(Some(Event::Presence(b)))) = (&event, &reference) {
            assert_eq!(
                a.favorite_temperature.map(f64::to_bits),
                b.favorite_temperature.map(f64::to_bits)
            );
        }
    }
});
