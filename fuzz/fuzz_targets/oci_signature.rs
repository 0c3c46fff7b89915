#![no_main]
//! See `quiver::fuzzing::oci_signature`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::oci_signature(data));
