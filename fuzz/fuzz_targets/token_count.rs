#![no_main]
//! See `quiver::fuzzing::token_count`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::token_count(data));
