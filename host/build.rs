//! Writes o200k_base's vocabulary (every token's bytes, with its rank) as
//! an `fst` map into `OUT_DIR`, which `disclosure::ceiling` embeds: a
//! static map read in place, so counting a prompt's tokens builds no table
//! at run time.

use std::collections::BTreeMap;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let bpe = tiktoken_rs::o200k_base().expect("the o200k_base table embedded in tiktoken-rs");
    // Ordinary tokens are ranks 0..199_998; the special ones above decode
    // too but never come out of `encode_ordinary`, so they are left out.
    let tokens: BTreeMap<Vec<u8>, u64> = (0..199_998u32)
        .filter_map(|rank| bpe.decode_bytes(&[rank]).ok().map(|bytes| (bytes, u64::from(rank))))
        .collect();
    assert!(tokens.len() == 199_998, "o200k_base has 199,998 ordinary tokens, read {}", tokens.len());
    let map = fst::Map::from_iter(tokens).expect("sorted, distinct keys");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("o200k_vocab.fst");
    std::fs::write(&out, map.as_fst().as_bytes()).expect("OUT_DIR is writable");
}
