#![no_main]
//! See `quiver::fuzzing::access_token`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::access_token(data));
