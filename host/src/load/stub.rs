//! The Tier-1 stub: read from the `quiver:stub` custom section of a
//! component without compiling it.
//!
//! The section lives in the component's main core module (where a
//! `#[link_section]` static lands after `wasm-component-ld`). Finding it
//! walks the section headers only: code sections are skipped whole, so the
//! cost is a few microseconds whatever the plugin's size. The same walk
//! counts the core modules the component instantiates: more than a call may
//! use ([`CORE_INSTANCES_PER_CALL`]) is refused here, not at the first call.

use wasmparser::{Chunk, Parser, Payload};

use crate::sandbox::limits::CORE_INSTANCES_PER_CALL;

use crate::contract::{MANIFEST_SECTION, STUB_SECTION as SECTION};
pub use crate::contract::{Stub, StubAction};
use crate::error::{Error, Result};

/// Read and validate the stub of the component in `bytes`. `origin` names
/// the file in errors.
pub fn read(bytes: &[u8], origin: &str) -> Result<Stub> {
    read_sections(bytes, origin).map(|(stub, _)| stub)
}

/// Read and validate the stub of the component in `bytes`, and return the
/// payload of its `quiver:manifest` section if it has one (parsed only
/// when a schema is first needed: see `Plugin::manifest`).
pub fn read_sections<'a>(bytes: &'a [u8], origin: &str) -> Result<(Stub, Option<&'a [u8]>)> {
    let (data, manifest) = sections(bytes, origin)?;
    let stub = Stub::from_json(data).map_err(|reason| Error::InvalidStub { origin: origin.to_owned(), reason })?;
    Ok((stub, manifest))
}

/// The payloads of the one `quiver:stub` section in `bytes` and of the
/// `quiver:manifest` section if any, at any depth.
fn sections<'a>(bytes: &'a [u8], origin: &str) -> Result<(&'a [u8], Option<&'a [u8]>)> {
    let not_wasm = |reason: String| Error::NotWasm { origin: origin.to_owned(), reason };
    if !bytes.starts_with(b"\0asm") {
        return Err(not_wasm("it does not start with the `\\0asm` magic number".into()));
    }
    if Parser::is_core_wasm(bytes) {
        return Err(Error::CoreModule { origin: origin.to_owned() });
    }
    if !Parser::is_component(bytes) {
        return Err(not_wasm("unknown WebAssembly version or layer".into()));
    }

    let mut found: Option<&[u8]> = None;
    let mut manifest: Option<&[u8]> = None;
    let mut core_instances = 0u32;
    let mut parser = Parser::new(0);
    let mut stack = Vec::new();
    let mut rest = bytes;
    loop {
        let (payload, consumed) = match parser.parse(rest, true).map_err(|e| not_wasm(e.to_string()))? {
            Chunk::Parsed { consumed, payload } => (payload, consumed),
            Chunk::NeedMoreData(_) => return Err(not_wasm("the file is truncated".into())),
        };
        rest = &rest[consumed..];
        match payload {
            Payload::CodeSectionStart { size, .. } => {
                parser.skip_section();
                rest = rest
                    .get(size as usize..)
                    .ok_or_else(|| not_wasm("a code section runs past the end of the file".into()))?;
            }
            Payload::ModuleSection { parser: nested, .. } | Payload::ComponentSection { parser: nested, .. } => {
                stack.push(parser.clone());
                parser = nested;
            }
            Payload::CustomSection(reader) if reader.name() == SECTION => {
                if found.is_some() {
                    return Err(Error::InvalidStub {
                        origin: origin.to_owned(),
                        reason: format!("more than one `{SECTION}` section"),
                    });
                }
                found = Some(reader.data());
            }
            Payload::CustomSection(reader) if reader.name() == MANIFEST_SECTION => {
                if manifest.is_some() {
                    return Err(Error::InvalidStub {
                        origin: origin.to_owned(),
                        reason: format!("more than one `{MANIFEST_SECTION}` section"),
                    });
                }
                manifest = Some(reader.data());
            }
            Payload::InstanceSection(reader) => {
                for instance in reader {
                    let instance = instance.map_err(|e| not_wasm(e.to_string()))?;
                    core_instances += u32::from(matches!(instance, wasmparser::Instance::Instantiate { .. }));
                }
            }
            Payload::End(_) => match stack.pop() {
                Some(outer) => parser = outer,
                None => break,
            },
            _ => {}
        }
    }
    if core_instances > CORE_INSTANCES_PER_CALL {
        return Err(Error::Compile {
            plugin: origin.to_owned(),
            origin: origin.to_owned(),
            message: format!(
                "it instantiates {core_instances} core modules; a call may use at most {CORE_INSTANCES_PER_CALL} \
                 (a Rust component needs 1 to 4, a Python one 14)"
            ),
        });
    }
    let stub = found.ok_or_else(|| Error::MissingStub { origin: origin.to_owned() })?;
    Ok((stub, manifest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_component_instantiating_too_many_core_modules_is_refused_at_load() {
        let instances = |n: usize| {
            let body = "(core instance (instantiate $m))\n".repeat(n);
            wat::parse_str(format!("(component (core module $m) {body})")).unwrap()
        };
        assert_eq!(read(&instances(20), "twenty.wasm").unwrap_err().kind(), crate::error::ErrorKind::MissingStub);
        let error = read(&instances(21), "many.wasm").unwrap_err();
        assert!(error.to_string().contains("instantiates 21 core modules; a call may use at most 20"), "{error}");
    }

    fn component_with_section(name: &str, data: &[u8]) -> Vec<u8> {
        // A minimal component: header plus one custom section.
        let mut bytes = b"\0asm\x0d\x00\x01\x00".to_vec();
        let mut payload = Vec::new();
        payload.push(name.len() as u8);
        payload.extend_from_slice(name.as_bytes());
        payload.extend_from_slice(data);
        bytes.push(0);
        let mut len = payload.len();
        loop {
            let byte = (len & 0x7f) as u8;
            len >>= 7;
            if len == 0 {
                bytes.push(byte);
                break;
            }
            bytes.push(byte | 0x80);
        }
        bytes.extend(payload);
        bytes
    }

    fn kind(bytes: &[u8]) -> crate::error::ErrorKind {
        read(bytes, "t.wasm").unwrap_err().kind()
    }

    const GOOD: &str = r#"{"format":1,"contract":"quiver:plugin@0.1.0","name":"calc","version":"1.0.0",
        "kind":"tool","description":"Math","categories":["math"],
        "actions":[{"name":"eval","summary":"Evaluate","access":"read"}]}"#;

    #[test]
    fn reads_a_valid_stub() {
        let stub = read(&component_with_section(SECTION, GOOD.as_bytes()), "t.wasm").unwrap();
        assert_eq!(stub.name, "calc");
        assert_eq!(stub.kind, crate::contract::Kind::Tool);
        assert_eq!(stub.action_names().collect::<Vec<_>>(), ["eval"]);
    }

    #[test]
    fn rejects_what_is_not_a_plugin() {
        assert_eq!(kind(b"hello"), crate::error::ErrorKind::NotWasm);
        assert_eq!(kind(b"\0asm\x01\x00\x00\x00"), crate::error::ErrorKind::CoreModule);
        assert_eq!(kind(&component_with_section("other", b"x")), crate::error::ErrorKind::MissingStub);
        let bad = GOOD.replace("\"calc\"", "\"Calc!\"");
        assert_eq!(kind(&component_with_section(SECTION, bad.as_bytes())), crate::error::ErrorKind::InvalidStub);
        let future = GOOD.replace("0.1.0\",\"name", "0.2.0\",\"name");
        assert_eq!(kind(&component_with_section(SECTION, future.as_bytes())), crate::error::ErrorKind::InvalidStub);
        let mut truncated = component_with_section(SECTION, GOOD.as_bytes());
        truncated.truncate(truncated.len() - 10);
        assert_eq!(kind(&truncated), crate::error::ErrorKind::NotWasm);
    }
}
