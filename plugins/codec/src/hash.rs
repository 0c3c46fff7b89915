//! Hashes and HMACs with the RustCrypto crates and BLAKE3.

use quiver_sdk::prelude::*;

use crate::encoding::Bytes;

/// A hash function.
#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// SHA-256 (32 bytes).
    Sha256,
    /// SHA-512 (64 bytes).
    Sha512,
    /// SHA-1 (20 bytes; broken for security, fine for checksums and git-style ids).
    Sha1,
    /// MD5 (16 bytes; broken for security, fine for checksums).
    Md5,
    /// BLAKE3 (32 bytes).
    Blake3,
}

/// Input of `hash`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Hash {
    /// The data to hash, written as `input_encoding` says.
    pub data: String,
    /// Hash function.
    pub algorithm: Algorithm,
    /// How `data` is written; `text` hashes its UTF-8 bytes.
    #[serde(default)]
    pub input_encoding: Bytes,
    /// Secret key: computes an HMAC (e.g. HMAC-SHA256 for webhook signatures) instead of a plain
    /// hash. For `blake3` the key must be 32 bytes and BLAKE3's keyed mode is used.
    pub hmac_key: Option<String>,
    /// How `hmac_key` is written.
    #[serde(default)]
    pub key_encoding: Bytes,
}

/// A digest.
#[derive(Serialize, JsonSchema)]
pub struct Digest {
    /// The digest in lower-case hexadecimal.
    pub hex: String,
    /// The digest in standard base64.
    pub base64: String,
    /// Number of input bytes that were hashed.
    pub input_bytes: usize,
}

/// The digest of `data` with `algorithm`, keyed by `key` (an HMAC, or BLAKE3 keyed mode).
pub fn digest(algorithm: Algorithm, data: &[u8], key: Option<&[u8]>) -> Result<Vec<u8>, ToolError> {
    use hmac::{KeyInit, Mac};
    use sha2::Digest as _;

    macro_rules! with {
        ($hash:ty) => {
            match key {
                None => <$hash>::digest(data).to_vec(),
                Some(key) => {
                    let mut mac = <hmac::Hmac<$hash> as KeyInit>::new_from_slice(key)
                        .map_err(|e| ToolError::invalid_input(format!("bad HMAC key: {e}")))?;
                    mac.update(data);
                    mac.finalize().into_bytes().to_vec()
                }
            }
        };
    }
    Ok(match algorithm {
        Algorithm::Sha256 => with!(sha2::Sha256),
        Algorithm::Sha512 => with!(sha2::Sha512),
        Algorithm::Sha1 => with!(sha1::Sha1),
        Algorithm::Md5 => with!(md5::Md5),
        Algorithm::Blake3 => match key {
            None => blake3::hash(data).as_bytes().to_vec(),
            Some(key) => {
                let key: &[u8; 32] = key.try_into().map_err(|_| {
                    ToolError::invalid_input(format!(
                        "a blake3 key must be exactly 32 bytes, not {} (give it as 64 hex digits with key_encoding `hex`)",
                        key.len()
                    ))
                })?;
                blake3::keyed_hash(key, data).as_bytes().to_vec()
            }
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digests() {
        let hex_of = |a, d: &str, k: Option<&str>| hex::encode(digest(a, d.as_bytes(), k.map(str::as_bytes)).unwrap());
        assert_eq!(hex_of(Algorithm::Md5, "abc", None), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(hex_of(Algorithm::Sha1, "abc", None), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert!(hex_of(Algorithm::Sha256, "abc", None).starts_with("ba7816bf8f01cfea"));
        assert!(hex_of(Algorithm::Blake3, "abc", None).starts_with("6437b3ac38465133"));
        // RFC 4231 test case 2.
        assert_eq!(
            hex_of(Algorithm::Sha256, "what do ya want for nothing?", Some("Jefe")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert!(digest(Algorithm::Blake3, b"x", Some(b"short")).is_err());
    }
}
