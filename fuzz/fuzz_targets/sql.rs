#![no_main]
//! See `quiver::fuzzing::sql`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::sql(data));
