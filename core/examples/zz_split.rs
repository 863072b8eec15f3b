#[path = "../benches/common/mod.rs"]
mod common;
use onair::sse::{Item, Parser};
use std::time::Instant;
fn run(chunks: &[&[u8]], bulk: bool) -> (usize, f64) {
    let mut best = f64::MAX;
    let mut n = 0;
    for _ in 0..300 {
        let t = Instant::now();
        let mut p = Parser::new();
        n = 0;
        for c in chunks {
            if bulk {
                let mut ch = onair::sse::Chunk::new(c);
                while let Some(item) = p.next_item_in(&mut ch) {
                    if let Item::Event(f) = item { n += f.data.len(); }
                }
            } else {
            let mut rest = *c;
            while let Some(item) = p.next_item(&mut rest) {
                if let Item::Event(f) = item { n += f.data.len(); }
            }
            }
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e3);
    }
    (n, best)
}
fn main() {
    let s = common::service_stream(2 << 20);
    let c4: Vec<&[u8]> = s.bytes.chunks(4096).collect();
    let one: Vec<&[u8]> = vec![&s.bytes[..]];
    for _ in 0..3 {
        println!("4k {:?} bulk {:?} whole {:?} whole-bulk {:?}", run(&c4, false), run(&c4, true), run(&one, false), run(&one, true));
    }
}
