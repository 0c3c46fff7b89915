#![no_main]
//! See `quiver::fuzzing::oci_credentials`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| quiver::fuzzing::oci_credentials(data));
