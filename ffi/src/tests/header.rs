//! include/onair.h is what cbindgen renders from this crate; the committed
//! file must match (ONAIR_BLESS=1 rewrites it).

use std::path::PathBuf;

fn render() -> String {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("ffi/cbindgen.toml reads");
    let mut out = Vec::new();
    cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen renders the header")
        .write(&mut out);
    String::from_utf8(out).expect("the header is UTF-8")
}

#[test]
fn header_is_current() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../include/onair.h");
    let rendered = render();
    if std::env::var_os("ONAIR_BLESS").is_some() {
        std::fs::write(&path, &rendered).expect("include/onair.h writes");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered,
        "include/onair.h is stale: run `ONAIR_BLESS=1 cargo test -p onair-ffi header` and commit it"
    );
}
