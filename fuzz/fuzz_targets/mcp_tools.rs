#![no_main]
//! See `quiver::fuzzing::mcp_tools`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::mcp_tools(data));
