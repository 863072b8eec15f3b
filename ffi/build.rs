//! Gives the shared library its ABI-versioned soname on ELF platforms
//! (`libonair.so.<abi>`, the ABI version of `[package.metadata.onair]` in
//! Cargo.toml), so programs linked against it load only a compatible one.

fn main() {
    println!("cargo:rerun-if-changed=Cargo.toml");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if !matches!(
        os.as_str(),
        "linux" | "freebsd" | "netbsd" | "openbsd" | "dragonfly"
    ) {
        return;
    }
    let manifest = std::fs::read_to_string("Cargo.toml").unwrap_or_default();
    // The one line `abi-version = N` (a unit test keeps it equal to
    // ONAIR_ABI_VERSION in the header).
    let abi = manifest
        .lines()
        .find_map(|line| line.trim().strip_prefix("abi-version = "))
        .and_then(|n| n.trim().parse::<u32>().ok());
    match abi {
        Some(abi) => println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libonair.so.{abi}"),
        None => {
            println!("cargo:warning=no abi-version in ffi/Cargo.toml: libonair.so gets no soname")
        }
    }
}
