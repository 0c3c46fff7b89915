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

use crate::contract::{STUB_SECTION, Stub};

/// `component` with `stub` as its `quiver:stub` section, written at the
/// outermost level. An outer stub section already there is replaced; the
/// error says why the bytes cannot be packaged (not a component, or a
/// stub inside a core module, which only a rebuild changes).
pub fn with_stub(component: &[u8], stub: &Stub) -> Result<Vec<u8>, String> {
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
            Payload::CustomSection(reader) if reader.name() == STUB_SECTION => {
                if depth > 0 {
                    return Err(format!(
                        "a core module of it already carries a `{STUB_SECTION}` section (the SDK writes one): \
                         rebuild it instead of packaging it"
                    ));
                }
                continue;
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
    let json = stub.to_json();
    out.section(&CustomSection { name: STUB_SECTION.into(), data: json.as_slice().into() });
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
    fn the_stub_is_added_once_and_replaced_on_repackaging() {
        let component = wat::parse_str("(component (core module (func)) (core module))").unwrap();
        let packaged = with_stub(&component, &stub("0.1.0")).unwrap();
        assert_eq!(crate::load::stub::read(&packaged, "p.wasm").unwrap(), stub("0.1.0"));
        let again = with_stub(&packaged, &stub("0.2.0")).unwrap();
        assert_eq!(crate::load::stub::read(&again, "p.wasm").unwrap().version, "0.2.0");
        // Everything else is byte for byte what it was.
        assert_eq!(with_stub(&again, &stub("0.1.0")).unwrap(), packaged);
        assert!(packaged.starts_with(&component[..8]) && packaged[8..].starts_with(&component[8..]));
        wasmparser::Validator::new().validate_all(&packaged).unwrap();
    }

    #[test]
    fn a_stub_inside_a_core_module_or_a_core_module_is_refused() {
        let nested = wat::parse_str(r#"(component (core module (@custom "quiver:stub" "{}")))"#).unwrap();
        assert!(with_stub(&nested, &stub("0.1.0")).unwrap_err().contains("rebuild it"));
        let core = wat::parse_str("(module)").unwrap();
        assert!(with_stub(&core, &stub("0.1.0")).unwrap_err().contains("not a WebAssembly component"));
    }
}
