#![no_main]
//! See `quiver::fuzzing::policy`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::policy(data));
