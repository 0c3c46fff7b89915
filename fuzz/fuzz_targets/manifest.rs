#![no_main]
//! See `quiver::fuzzing::manifest`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::manifest(data));
