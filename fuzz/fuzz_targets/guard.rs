#![no_main]
//! See `quiver::fuzzing::guard`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::guard(data));
