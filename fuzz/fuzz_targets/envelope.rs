#![no_main]
//! See `quiver::fuzzing::envelope`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::envelope(data));
