#![no_main]
//! See `quiver::fuzzing::jwks`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::jwks(data));
