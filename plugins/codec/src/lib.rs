//! Quiver built-in tool plugin: hashes and HMACs, base64/hex/URL encodings, and UUIDs.

mod encoding;
mod hash;
mod uuids;

use quiver_sdk::prelude::*;

pub use encoding::{Bytes, Decode, Decoded, Encode, Encoded, Scheme, decode_text, encode_bytes, read_bytes};
pub use hash::{Algorithm, Digest, Hash, digest};
pub use uuids::{MakeUuid, UuidVersion, Uuids, make_uuids};

/// Hashes and HMACs (SHA-2, SHA-1, MD5, BLAKE3), base64/hex/URL encoding and decoding, and UUIDs.
#[quiver_sdk::plugin(categories = ["encoding", "crypto"])]
mod codec {
    use super::*;

    /// Hash data with SHA-256, SHA-512, SHA-1, MD5 or BLAKE3, or compute an HMAC with a key.
    pub fn hash(input: Hash) -> Result<Digest, ToolError> {
        let data = read_bytes(&input.data, input.input_encoding, "data")?;
        let key = input.hmac_key.as_deref().map(|k| read_bytes(k, input.key_encoding, "hmac_key")).transpose()?;
        let out = super::digest(input.algorithm, &data, key.as_deref())?;
        Ok(Digest { hex: hex::encode(&out), base64: encode_bytes(&out, Scheme::Base64), input_bytes: data.len() })
    }

    /// Encode text or bytes as base64, base64url, hex or URL percent-encoding.
    pub fn encode(input: Encode) -> Result<Encoded, ToolError> {
        let bytes = read_bytes(&input.data, input.input_encoding, "data")?;
        Ok(Encoded { text: encode_bytes(&bytes, input.scheme) })
    }

    /// Decode base64, base64url, hex or URL percent-encoding to text (or hex for binary data).
    pub fn decode(input: Decode) -> Result<Decoded, ToolError> {
        let bytes = decode_text(&input.data, input.scheme)?;
        let len = bytes.len();
        Ok(match String::from_utf8(bytes) {
            Ok(text) => Decoded { text: Some(text), hex: None, bytes: len },
            Err(e) => Decoded { text: None, hex: Some(hex::encode(e.as_bytes())), bytes: len },
        })
    }

    /// Generate UUIDs: random v4, time-ordered v7, or name-based v5/v3.
    pub fn uuid(input: MakeUuid) -> Result<Uuids, ToolError> {
        let uuids = make_uuids(input)?;
        Ok(Uuids { uuids: uuids.iter().map(|u| u.hyphenated().to_string()).collect() })
    }
}
