#![no_main]
//! See `quiver::fuzzing::config`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::config(data));
