#![no_main]
//! See `quiver::fuzzing::sign_in`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::sign_in(data));
