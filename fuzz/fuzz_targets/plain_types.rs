#![no_main]
//! See `quiver::fuzzing::plain_types`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::plain_types(data));
