//! Packaging a component built by any toolchain: writing its `quiver:stub`
//! section, so the host can list it without compiling it.
//!
//! The SDK's macro puts the stub into the component's main core module at
//! compile time. A component from another toolchain (componentize-py,
//! componentize-js, raw `wit-bindgen`) has none; `quiver package` runs its
//! `describe()` once in the sandbox, derives the stub from the manifest and
//! calls this module to add it as a custom section of the component itself
//! (the outermost level, after every other section). The stub reader
//! accepts the section at any depth. Re-packaging replaces a stub an
//! earlier packaging wrote; it never edits a core module's sections.
//!
//! The sections are copied with `wasmparser` and `wasm-encoder`, byte for
//! byte: nothing but the stub section changes.

use wasm_encoder::{Component, CustomSection, RawSection};
use wasmparser::{Parser, Payload};

use crate::contract::{MANIFEST_SECTION, STUB_SECTION, Stub};

/// `component` with `manifest` (the JSON of a `quiver:manifest` section)
/// and, when given, `stub` as its sections, written at the outermost level
/// after every other one. Outer sections of those names are replaced; with
/// no `stub`, the component's own stub stays where it is (an SDK plugin's,
/// in its core module). The error says why the bytes cannot be packaged
/// (not a component, or a section of those names inside a core module
/// that would have to change, which only a rebuild does).
pub fn with_sections(component: &[u8], stub: Option<&Stub>, manifest: &[u8]) -> Result<Vec<u8>, String> {
    if !Parser::is_component(component) {
        return Err("it is not a WebAssembly component".into());
    }
    let mut out = Component::new();
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(component) {
        let payload = payload.map_err(|e| format!("it does not parse: {e}"))?;
        match &payload {
            Payload::Version { .. } if depth == 0 => continue,
            Payload::End(_) => {
                depth = depth.saturating_sub(1);
                continue;
            }
            Payload::CustomSection(reader) if reader.name() == STUB_SECTION || reader.name() == MANIFEST_SECTION => {
                let replaced = reader.name() == MANIFEST_SECTION || stub.is_some();
                if depth > 0 && replaced {
                    return Err(format!(
                        "a core module of it already carries a `{}` section (the SDK writes the stub): rebuild \
                         it instead of packaging it",
                        reader.name()
                    ));
                }
                if replaced {
                    continue;
                }
            }
            _ => {}
        }
        if depth > 0 {
            // Inside a nested module or component, copied whole with it.
            if matches!(payload, Payload::ModuleSection { .. } | Payload::ComponentSection { .. }) {
                depth += 1;
            }
            continue;
        }
        if let Some((id, range)) = payload.as_section() {
            out.section(&RawSection { id, data: &component[range] });
        }
        if matches!(payload, Payload::ModuleSection { .. } | Payload::ComponentSection { .. }) {
            depth += 1;
        }
    }
    if let Some(stub) = stub {
        let json = stub.to_json();
        out.section(&CustomSection { name: STUB_SECTION.into(), data: json.as_slice().into() });
    }
    out.section(&CustomSection { name: MANIFEST_SECTION.into(), data: manifest.into() });
    Ok(out.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{Access, Kind, StubAction};

    fn stub(version: &str) -> Stub {
        let mut stub = Stub::new("echo", version, Kind::Tool, "Echoes.");
        stub.actions.push(StubAction { name: "echo".into(), summary: "Echo.".into(), access: Access::Read });
        stub
    }

    #[test]
    fn the_sections_are_added_once_and_replaced_on_repackaging() {
        let component = wat::parse_str("(component (core module (func)) (core module))").unwrap();
        let packaged = with_sections(&component, Some(&stub("0.1.0")), b"{}").unwrap();
        let (read, manifest) = crate::load::stub::read_sections(&packaged, "p.wasm").unwrap();
        assert_eq!((read, manifest), (stub("0.1.0"), Some(&b"{}"[..])));
        let again = with_sections(&packaged, Some(&stub("0.2.0")), b"[]").unwrap();
        let (read, manifest) = crate::load::stub::read_sections(&again, "p.wasm").unwrap();
        assert_eq!((read.version.as_str(), manifest), ("0.2.0", Some(&b"[]"[..])));
        // Everything else is byte for byte what it was.
        assert_eq!(with_sections(&again, Some(&stub("0.1.0")), b"{}").unwrap(), packaged);
        // Without a stub, the component's own stays and only the manifest changes.
        let kept = with_sections(&packaged, None, b"[1]").unwrap();
        assert_eq!(crate::load::stub::read_sections(&kept, "p.wasm").unwrap(), (stub("0.1.0"), Some(&b"[1]"[..])));
        assert!(packaged.starts_with(&component[..8]) && packaged[8..].starts_with(&component[8..]));
        wasmparser::Validator::new().validate_all(&packaged).unwrap();
    }

    #[test]
    fn a_stub_inside_a_core_module_stays_or_is_refused() {
        let nested = wat::parse_str(r#"(component (core module (@custom "quiver:stub" "{}")))"#).unwrap();
        assert!(with_sections(&nested, Some(&stub("0.1.0")), b"{}").unwrap_err().contains("rebuild"));
        with_sections(&nested, None, b"{}").expect("an SDK plugin's stub stays, the manifest is added");
        let core = wat::parse_str("(module)").unwrap();
        assert!(with_sections(&core, None, b"{}").unwrap_err().contains("not a WebAssembly component"));
    }
}
