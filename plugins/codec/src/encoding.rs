//! Byte encodings: base64, base64url, hex and URL percent-encoding.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};
use quiver_sdk::prelude::*;

/// Characters percent-encoding leaves alone: RFC 3986 unreserved (`A-Z a-z 0-9 - . _ ~`).
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// Decoders that accept input with or without `=` padding.
const LENIENT: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const BASE64_ANY: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT);
const BASE64URL_ANY: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, LENIENT);

/// How input bytes are written.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Default, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
pub enum Bytes {
    /// The UTF-8 bytes of the text itself.
    #[default]
    Text,
    /// Base64 (standard or URL-safe alphabet, padding optional).
    Base64,
    /// Hexadecimal, e.g. `48656c6c6f`.
    Hex,
}

/// A text encoding of bytes.
#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
pub enum Scheme {
    /// Standard base64 (`+`, `/`, `=` padding), as in MIME and data URLs.
    Base64,
    /// URL-safe base64 (`-`, `_`), without padding, as in JWTs.
    Base64url,
    /// Lower-case hexadecimal.
    Hex,
    /// Percent-encoding for a URL component: all but `A-Z a-z 0-9 - . _ ~` as `%XX`.
    Url,
}

/// Input of `encode`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Encode {
    /// The data to encode, written as `input_encoding` says.
    pub data: String,
    /// Encoding to produce.
    pub scheme: Scheme,
    /// How `data` is written; `text` encodes its UTF-8 bytes, `hex` or `base64`
    /// convert between encodings.
    #[serde(default)]
    pub input_encoding: Bytes,
}

/// Encoded text.
#[derive(Serialize, JsonSchema)]
pub struct Encoded {
    /// The encoded text.
    pub text: String,
}

/// Input of `decode`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Decode {
    /// The encoded text. Whitespace is ignored for base64 and hex; base64 padding is optional
    /// and either alphabet (`+/` or `-_`) is accepted.
    pub data: String,
    /// Encoding of `data`.
    pub scheme: Scheme,
}

/// Decoded bytes.
#[derive(Serialize, JsonSchema)]
pub struct Decoded {
    /// The bytes as UTF-8 text; absent when they are not valid UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The bytes in hexadecimal, only when they are not valid UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hex: Option<String>,
    /// Number of decoded bytes.
    pub bytes: usize,
}

/// The bytes `data` stands for; `what` names the field in errors.
pub fn read_bytes(data: &str, encoding: Bytes, what: &str) -> Result<Vec<u8>, ToolError> {
    match encoding {
        Bytes::Text => Ok(data.as_bytes().to_vec()),
        Bytes::Base64 => {
            decode_base64(data).map_err(|e| ToolError::invalid_input(format!("{what} is not base64: {e}")))
        }
        Bytes::Hex => decode_hex(data).map_err(|e| ToolError::invalid_input(format!("{what} is not hex: {e}"))),
    }
}

fn strip_whitespace(data: &str) -> String {
    data.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Base64 in either alphabet, padding optional.
fn decode_base64(data: &str) -> Result<Vec<u8>, base64::DecodeError> {
    let data = strip_whitespace(data);
    if data.contains(['-', '_']) { BASE64URL_ANY.decode(data) } else { BASE64_ANY.decode(data) }
}

fn decode_hex(data: &str) -> Result<Vec<u8>, hex::FromHexError> {
    let data = strip_whitespace(data);
    hex::decode(data.strip_prefix("0x").unwrap_or(&data))
}

/// `bytes` written in `scheme`.
pub fn encode_bytes(bytes: &[u8], scheme: Scheme) -> String {
    match scheme {
        Scheme::Base64 => base64::engine::general_purpose::STANDARD.encode(bytes),
        Scheme::Base64url => base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes),
        Scheme::Hex => hex::encode(bytes),
        Scheme::Url => percent_encoding::percent_encode(bytes, COMPONENT).to_string(),
    }
}

/// The bytes `text` encodes in `scheme`.
pub fn decode_text(text: &str, scheme: Scheme) -> Result<Vec<u8>, ToolError> {
    match scheme {
        // Either alphabet is accepted for either scheme: a common mix-up costs nothing.
        Scheme::Base64 | Scheme::Base64url => {
            decode_base64(text).map_err(|e| ToolError::invalid_input(format!("not valid base64: {e}")))
        }
        Scheme::Hex => decode_hex(text).map_err(|e| ToolError::invalid_input(format!("not valid hex: {e}"))),
        Scheme::Url => {
            // Reject stray `%` so a mistake is not silently passed through.
            let b = text.as_bytes();
            for (i, _) in text.match_indices('%') {
                let ok = b.get(i + 1..i + 3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
                if !ok {
                    return Err(ToolError::invalid_input(format!(
                        "`%` at character {} is not followed by two hex digits",
                        text[..i].chars().count()
                    )));
                }
            }
            Ok(percent_encoding::percent_decode_str(text).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for scheme in [Scheme::Base64, Scheme::Base64url, Scheme::Hex, Scheme::Url] {
            let text = "héllo wörld/?&=~ 🦀";
            assert_eq!(decode_text(&encode_bytes(text.as_bytes(), scheme), scheme).unwrap(), text.as_bytes());
        }
        assert_eq!(encode_bytes(b"a b&c", Scheme::Url), "a%20b%26c");
        assert_eq!(decode_text("aGk", Scheme::Base64).unwrap(), b"hi");
        assert!(decode_text("100%", Scheme::Url).is_err());
        assert!(decode_text("zz", Scheme::Hex).is_err());
    }
}
