//! The header's version macros and `onair_abi_version()` match Cargo.toml.

use std::ffi::CStr;

use crate::*;

#[test]
fn version_macros_match_cargo_toml() {
    let parse = |s: &str| s.parse::<u32>().expect("a number");
    assert_eq!(ONAIR_VERSION_MAJOR, parse(env!("CARGO_PKG_VERSION_MAJOR")));
    assert_eq!(ONAIR_VERSION_MINOR, parse(env!("CARGO_PKG_VERSION_MINOR")));
    assert_eq!(ONAIR_VERSION_PATCH, parse(env!("CARGO_PKG_VERSION_PATCH")));
    // SAFETY: a static NUL-terminated string.
    let v = unsafe { CStr::from_ptr(onair_version()) };
    assert_eq!(v.to_str().ok(), Some(env!("CARGO_PKG_VERSION")));
}

#[test]
fn abi_version_matches_cargo_toml_metadata() {
    let toml = include_str!("../../Cargo.toml");
    let line = toml
        .lines()
        .find_map(|l| l.strip_prefix("abi-version = "))
        .expect("[package.metadata.onair] abi-version");
    assert_eq!(line.trim().parse::<u32>().ok(), Some(ONAIR_ABI_VERSION));
    assert_eq!(onair_abi_version(), ONAIR_ABI_VERSION);
}

#[test]
fn every_result_code_has_its_own_text() {
    // 13 and 14 went away in ABI 2: holes, never reused.
    let texts: Vec<&CStr> = (0..=27)
        .filter(|c| ![13, 14].contains(c))
        // SAFETY: static NUL-terminated strings.
        .map(|c| unsafe { CStr::from_ptr(onair_result_message(c)) })
        .collect();
    let mut unique = texts.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), texts.len());
    // SAFETY: as above.
    let unknown = unsafe { CStr::from_ptr(onair_result_message(9999)) };
    assert_eq!(unknown.to_str().ok(), Some("unknown result code"));
}
