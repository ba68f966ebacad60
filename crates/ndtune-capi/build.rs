//! Generates `include/ndtune.h` from this crate's C functions and types with cbindgen, writing
//! the file only when its content changes (so that an unchanged header keeps its timestamp, and
//! the committed header is always what the code declares).

use std::path::Path;

fn main() {
    let crate_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let crate_dir = Path::new(&crate_dir);
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("cbindgen.toml is a cbindgen configuration");
    let bindings = cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header");
    let mut text = Vec::new();
    bindings.write(&mut text);
    let header = crate_dir.join("include/ndtune.h");
    if std::fs::read(&header).ok().as_deref() != Some(&text[..]) {
        std::fs::create_dir_all(header.parent().expect("include/"))
            .and_then(|()| std::fs::write(&header, &text))
            .unwrap_or_else(|e| panic!("{}: {e}", header.display()));
    }
}
