//! Compile the fixture components under `tests/fixtures/` once per test
//! build (not per test), and expose their paths as constants, plus
//! `foreach_fixture!`, which names each fixture with the test module
//! (`[package.metadata.quiver] suite`) that must hold its test.

use std::fmt::Write as _;
use std::path::PathBuf;

use quiver_wasm_build as wasm_build;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir.parent().unwrap();
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());

    let dirs = wasm_build::crate_dirs(&manifest_dir.join("fixtures"), &[]);
    let mut packages = Vec::new();
    for dir in &dirs {
        println!("cargo:rerun-if-changed={}", dir.display());
        packages.push(wasm_build::package_name(dir).expect("fixture package name"));
    }
    let built = wasm_build::build(root, &packages);

    let mut code = String::new();
    let mut names = Vec::new();
    let mut each = Vec::new();
    for (dir, component) in dirs.iter().zip(&built) {
        let name = component.package.strip_prefix("fixture-").unwrap_or(&component.package);
        let constant = name.to_uppercase().replace('-', "_");
        let copy = out_dir.join(format!("{name}.wasm"));
        std::fs::copy(&component.wasm, &copy).expect("copy the fixture");
        writeln!(code, "/// The `{name}` fixture component.").unwrap();
        writeln!(code, "pub const {constant}: &str = {:?};", copy.display().to_string()).unwrap();
        names.push(format!("({name:?}, {constant})"));
        each.push(format!("$mac!({}, {});", suite(dir), name.replace('-', "_")));
    }
    writeln!(code, "/// Every fixture: (name, path).").unwrap();
    writeln!(code, "pub const ALL: &[(&str, &str)] = &[{}];", names.join(", ")).unwrap();
    writeln!(code, "/// Calls `$mac!(suite, fixture)` for every fixture: `suite` is the module").unwrap();
    writeln!(code, "/// of `tests/all` that must hold a test named after the fixture.").unwrap();
    writeln!(code, "#[macro_export]").unwrap();
    writeln!(code, "macro_rules! foreach_fixture {{ ($mac:ident) => {{ {} }}; }}", each.join(" ")).unwrap();
    std::fs::write(out_dir.join("fixtures.rs"), code).unwrap();
}

/// The test module a fixture declares in `[package.metadata.quiver] suite`.
fn suite(dir: &std::path::Path) -> String {
    wasm_build::quiver_metadata(dir, "suite").unwrap_or_else(|| {
        panic!(
            "{}: add `[package.metadata.quiver] suite = \"MODULE\"`, the module of tests/all whose test is named \
             after this fixture",
            dir.display()
        )
    })
}
