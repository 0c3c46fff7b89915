//! Compile every plugin under `plugins/` to a component and embed it.
//! Plugins whose Cargo.toml says `[package.metadata.quiver] role = "adapter"`
//! are listed apart: the host serves them only behind configured databases.

use std::fmt::Write as _;
use std::path::PathBuf;

use quiver_wasm_build as wasm_build;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir.parent().unwrap();
    let plugins_dir = root.join("plugins");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());

    let dirs = wasm_build::crate_dirs(&plugins_dir, &[]);
    let mut packages = Vec::new();
    let mut adapters = Vec::new();
    for dir in &dirs {
        println!("cargo:rerun-if-changed={}", dir.display());
        let name = wasm_build::package_name(dir).unwrap_or_else(|| panic!("{} has no package name", dir.display()));
        if wasm_build::quiver_metadata(dir, "role").as_deref() == Some("adapter") {
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
        let mut bytes = std::fs::read(&component.wasm).expect("read the built component");
        if let Some(section) = manifest_section(&component.package) {
            // Appended after every other section: nothing else changes.
            let section = wasm_encoder::CustomSection {
                name: quiver_contract::MANIFEST_SECTION.into(),
                data: section.as_slice().into(),
            };
            wasm_encoder::ComponentSection::append_to_component(&section, &mut bytes);
        }
        std::fs::write(&copy, bytes).expect("write the bundled component");
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

/// The JSON of the `quiver:manifest` section of `package`'s component, from
/// the plugin crate built natively (what its `describe()` returns); `None`
/// for a plugin the SDK's macro does not describe (the generic OpenAPI
/// connector, whose manifest comes from the operator's document).
fn manifest_section(package: &str) -> Option<Vec<u8>> {
    Some(match package {
        "quiver-plugin-calc" => quiver_plugin_calc::__quiver_manifest::section(),
        "quiver-plugin-codec" => quiver_plugin_codec::__quiver_manifest::section(),
        "quiver-plugin-datetime" => quiver_plugin_datetime::__quiver_manifest::section(),
        "quiver-plugin-json" => quiver_plugin_json::__quiver_manifest::section(),
        "quiver-plugin-sql" => quiver_plugin_sql::__quiver_manifest::section(),
        "quiver-plugin-template" => quiver_plugin_template::__quiver_manifest::section(),
        "quiver-plugin-text" => quiver_plugin_text::__quiver_manifest::section(),
        "quiver-plugin-openapi" => return None,
        other => panic!(
            "{other} is not in manifest_section() of bundle/build.rs: add it there and to the \
             [build-dependencies] of bundle/Cargo.toml"
        ),
    })
}
