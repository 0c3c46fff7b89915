//! Compile every plugin under `plugins/` to a component and embed it.

use std::fmt::Write as _;
use std::path::PathBuf;

#[path = "wasm_build.rs"]
mod wasm_build;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let plugins_dir = manifest_dir.parent().unwrap();
    let root = plugins_dir.parent().unwrap();
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());

    let dirs = wasm_build::crate_dirs(plugins_dir, &["bundle"]);
    let mut packages = Vec::new();
    for dir in &dirs {
        println!("cargo:rerun-if-changed={}", dir.display());
        let name = wasm_build::package_name(dir).unwrap_or_else(|| panic!("{} has no package name", dir.display()));
        packages.push(name);
    }
    let built = wasm_build::build(root, &packages);

    let mut code = String::from("/// The bundled plugins, sorted by file name.\npub static PLUGINS: &[Bundled] = &[\n");
    for component in &built {
        let file = format!("{}.wasm", component.package.strip_prefix("quiver-plugin-").unwrap_or(&component.package));
        let copy = out_dir.join(&file);
        std::fs::copy(&component.wasm, &copy).expect("copy the built component");
        writeln!(
            code,
            "    Bundled {{ file_name: {file:?}, bytes: include_bytes!({:?}) }},",
            copy.display().to_string()
        )
        .unwrap();
    }
    code.push_str("];\n");
    std::fs::write(out_dir.join("plugins.rs"), code).unwrap();
}
