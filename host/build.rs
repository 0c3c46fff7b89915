//! Writes o200k_base's vocabulary (every token's bytes) as an `fst` set
//! into `OUT_DIR`, which `disclosure::ceiling` embeds: a static set read
//! in place, so bounding a prompt's tokens loads no table at run time.

use std::collections::BTreeSet;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let bpe = tiktoken_rs::o200k_base().expect("the o200k_base table embedded in tiktoken-rs");
    // Ordinary tokens are ranks 0..199_998; the special ones above decode
    // too but never come out of `encode_ordinary`, so they are left out.
    let tokens: BTreeSet<Vec<u8>> = (0..199_998).filter_map(|rank| bpe.decode_bytes(&[rank]).ok()).collect();
    assert!(tokens.len() == 199_998, "o200k_base has 199,998 ordinary tokens, read {}", tokens.len());
    let set = fst::Set::from_iter(tokens).expect("sorted, distinct keys");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("o200k_vocab.fst");
    std::fs::write(&out, set.as_fst().as_bytes()).expect("OUT_DIR is writable");
}
