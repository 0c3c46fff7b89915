#![no_main]
//! See `quiver::fuzzing::skill`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::skill(data));
