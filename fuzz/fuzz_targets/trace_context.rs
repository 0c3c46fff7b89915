#![no_main]
//! See `quiver::fuzzing::trace_context`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::trace_context(data));
