#![no_main]
//! See `quiver::fuzzing::oci_bundle`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::oci_bundle(data));
