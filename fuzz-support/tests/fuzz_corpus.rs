//! Replays every committed fuzz seed (`fuzz/corpus/<target>/*`) through its
//! body in this crate, so stable CI compiles the bodies and checks their
//! invariants on the corpora; a regression input kept from a finding is
//! replayed the same way. Long runs: `scripts/fuzz`.

use std::fs;
use std::path::Path;

use onair_fuzz_support as fuzz;

/// A fuzz body: bytes in, a panic when an invariant breaks.
type Body = fn(&[u8]);

/// Each target of `fuzz/fuzz_targets/` and the body it calls.
const TARGETS: &[(&str, Body)] = &[
    ("sse_chunking", fuzz::sse_chunking),
    ("event_decode", fuzz::event_stream),
    ("fast_json", fuzz::event_json),
    ("classify", fuzz::classify_response),
    ("quota_headers", fuzz::quota_headers),
    ("token_response", fuzz::token_response),
    ("token_file", fuzz::token_file),
    ("rest_bodies", fuzz::rest_bodies),
    ("chat_text", fuzz::chat_text),
    ("commands", fuzz::commands),
    ("kit_state", fuzz::kit_state),
    ("bot", fuzz::bot),
    ("c_api", fuzz::c_api),
];

fn fuzz_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

#[test]
fn every_target_has_a_body_and_a_seed_corpus() {
    let targets = fuzz_dir().join("fuzz_targets");
    let mut on_disk: Vec<String> = fs::read_dir(&targets)
        .expect("fuzz/fuzz_targets reads")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".rs").map(str::to_owned)
        })
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = TARGETS.iter().map(|(t, _)| (*t).to_owned()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "fuzz_targets/ and this table differ");
    let doc = fs::read_to_string(fuzz_dir().join("../FUZZING.md")).expect("FUZZING.md reads");
    for target in &listed {
        assert!(
            doc.contains(&format!("| `{target}` |")),
            "FUZZING.md has no table row for {target}"
        );
    }
    for target in &listed {
        let corpus = fuzz_dir().join("corpus").join(target);
        let seeds = fs::read_dir(&corpus)
            .unwrap_or_else(|e| panic!("{}: {e}", corpus.display()))
            .count();
        assert!(seeds > 0, "{target} has no seeds");
    }
}

/// `ONAIR_FUZZ_TARGETS=c_api,bot` replays only those targets (scripts/miri
/// replays the C API's this way); unset, every target.
fn chosen(target: &str) -> bool {
    std::env::var("ONAIR_FUZZ_TARGETS")
        .map(|only| only.split(',').any(|t| t.trim() == target))
        .unwrap_or(true)
}

#[test]
fn every_body_holds_on_every_committed_input() {
    let mut replayed = 0;
    let mut broken = Vec::new();
    for (target, body) in TARGETS.iter().filter(|(t, _)| chosen(t)) {
        let corpus = fuzz_dir().join("corpus").join(target);
        let mut files: Vec<_> = fs::read_dir(&corpus)
            .unwrap_or_else(|e| panic!("{}: {e}", corpus.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        files.sort();
        for file in files {
            let data = fs::read(&file).expect("a corpus file reads");
            if std::panic::catch_unwind(|| body(&data)).is_err() {
                broken.push(format!("{target}/{}", file.display()));
            }
            replayed += 1;
        }
        // Every body also takes the empty input and every single byte.
        body(&[]);
        for b in 0..=255u8 {
            body(&[b]);
        }
    }
    assert!(
        broken.is_empty(),
        "inputs that broke an invariant: {broken:#?}"
    );
    eprintln!("replayed {replayed} committed inputs");
    assert!(replayed > 0, "no target chosen");
}
