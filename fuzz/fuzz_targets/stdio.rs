#![no_main]
//! See `quiver::fuzzing::stdio`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::stdio(data));
