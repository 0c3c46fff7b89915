//! Compile every plugin under `plugins/` to a component and embed it.
//! Plugins whose Cargo.toml says `[package.metadata.quiver] role = "adapter"`
//! are listed apart: the host serves them only behind configured databases.

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
    let mut adapters = Vec::new();
    for dir in &dirs {
        println!("cargo:rerun-if-changed={}", dir.display());
        let name = wasm_build::package_name(dir).unwrap_or_else(|| panic!("{} has no package name", dir.display()));
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("read the plugin's Cargo.toml");
        if manifest.lines().any(|l| l.trim().replace(' ', "") == "role=\"adapter\"") {
            adapters.push(name.clone());
        }
        packages.push(name);
    }
    println!("cargo:rerun-if-changed={}", manifest_dir.join("demo").display());
    let built = wasm_build::build(root, &packages);

    let mut plugins = String::new();
    let mut adapter_list = String::new();
    for component in &built {
        let file = format!("{}.wasm", component.package.strip_prefix("quiver-plugin-").unwrap_or(&component.package));
        let copy = out_dir.join(&file);
        std::fs::copy(&component.wasm, &copy).expect("copy the built component");
        let entry = format!(
            "    Bundled {{ file_name: {file:?}, bytes: include_bytes!({:?}) }},\n",
            copy.display().to_string()
        );
        if adapters.contains(&component.package) { adapter_list.push_str(&entry) } else { plugins.push_str(&entry) }
    }
    let mut code = String::new();
    writeln!(code, "/// The bundled plugins, sorted by file name.\npub static PLUGINS: &[Bundled] = &[\n{plugins}];")
        .unwrap();
    writeln!(code, "/// The bundled database adapters (served behind configured databases only).").unwrap();
    writeln!(code, "pub static ADAPTERS: &[Bundled] = &[\n{adapter_list}];").unwrap();
    std::fs::write(out_dir.join("plugins.rs"), code).unwrap();
}
