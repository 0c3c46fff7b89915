#![no_main]
//! See `quiver::fuzzing::stub`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::stub(data));
