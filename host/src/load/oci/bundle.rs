//! Sigstore bundles: cosign's current form of a signature, verified offline
//! with the key the operator configures.
//!
//! `cosign sign --key` (cosign 3, and 2 with `--new-bundle-format`) writes
//! a *bundle*: JSON holding a DSSE envelope around an in-toto statement
//! whose subject is the signed manifest's digest and whose predicate type
//! is cosign's signing predicate. It stores it as a *referrer* of that
//! manifest: an image manifest with `artifactType` the bundle's media type,
//! an empty config, the bundle as its one layer, and a `subject` naming the
//! signed manifest. A registry with the OCI referrers API lists it there;
//! one without (distribution 2.8) lists it in the image index tagged
//! `sha256-HEX` (the referrers tag schema).
//!
//! What verifies, and nothing else:
//! - a DSSE envelope of type `application/vnd.in-toto+json` with one
//!   signature (ECDSA P-256, SHA-256) of its pre-authentication encoding
//!   by the configured key, whose statement is in-toto's, whose predicate
//!   type is cosign's *signing* predicate (an attestation — provenance, an
//!   SBOM — signed by the same key says something else, and is not read as
//!   approval), and whose subjects include the pinned digest;
//! - or a message signature of the pinned manifest's exact bytes by the
//!   configured key, its message digest (when given) the pinned digest.
//!
//! The bundle's transparency-log entries and timestamps are not read: the
//! configured key is the whole root of trust, as with `cosign verify --key
//! --insecure-ignore-tlog`. A bundle signed by a certificate (keyless) is
//! refused with that reason.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::Deserialize;
use serde::de::IgnoredAny;

use super::layout::{Descriptor, MAX_DOCUMENT_BYTES, is_sha256};
use super::signature::PublicKey;
use crate::contract::{Shape, sanitize_cut};

/// The bundle media type cosign writes (the referrer's `artifactType` and
/// its layer's type).
pub const BUNDLE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// Bundle media types read: [`BUNDLE`] and the two earlier versions.
pub const BUNDLES: [&str; 3] = [
    BUNDLE,
    "application/vnd.dev.sigstore.bundle+json;version=0.2",
    "application/vnd.dev.sigstore.bundle+json;version=0.1",
];
/// The DSSE payload type of an in-toto statement.
pub const IN_TOTO: &str = "application/vnd.in-toto+json";
/// In-toto statement types read.
pub const STATEMENTS: [&str; 2] = ["https://in-toto.io/Statement/v1", "https://in-toto.io/Statement/v0.1"];
/// The predicate type of `cosign sign`'s statement: a signature of the subject.
pub const SIGN_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";
/// Largest bundle read (cosign's are a few KiB, a certificate chain included).
pub const MAX_BUNDLE_BYTES: u64 = MAX_DOCUMENT_BYTES;
/// Referrers looked at, at most, for one manifest.
pub const MAX_REFERRERS: usize = 16;

/// A referrer manifest, as far as finding its bundle needs it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Referrer {
    #[serde(default)]
    artifact_type: Option<String>,
    #[serde(default)]
    layers: Vec<Descriptor>,
    #[serde(default)]
    subject: Option<Descriptor>,
}

/// A Sigstore bundle, as far as key verification reads it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Bundle {
    media_type: String,
    #[serde(default)]
    verification_material: Material,
    #[serde(default)]
    message_signature: Option<MessageSignature>,
    #[serde(default)]
    dsse_envelope: Option<Envelope>,
}

/// What the bundle says signed it: only whether it is a certificate.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Material {
    #[serde(default)]
    certificate: Option<IgnoredAny>,
    #[serde(default)]
    x509_certificate_chain: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageSignature {
    #[serde(default)]
    message_digest: Option<HashOutput>,
    signature: String,
}

#[derive(Deserialize)]
struct HashOutput {
    algorithm: String,
    digest: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    payload: String,
    payload_type: String,
    signatures: Vec<EnvelopeSignature>,
}

#[derive(Deserialize)]
struct EnvelopeSignature {
    sig: String,
}

/// An in-toto statement, as far as a signature of a manifest reads it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Statement {
    #[serde(rename = "_type")]
    kind: String,
    subject: Vec<Subject>,
    predicate_type: String,
}

#[derive(Deserialize)]
struct Subject {
    #[serde(default)]
    digest: BTreeMap<String, String>,
}

/// Outside text, as a refusal may quote it.
fn quoted(text: &str) -> String {
    sanitize_cut(text, Shape::Line, 80)
}

/// Base64 as protobuf's JSON writes it (standard), or URL-safe (DSSE allows both).
fn decode(text: &str) -> Result<Vec<u8>, String> {
    let engines = [&base64::engine::general_purpose::STANDARD, &base64::engine::general_purpose::URL_SAFE];
    engines
        .iter()
        .find_map(|e| e.decode(text.trim()).ok())
        .ok_or_else(|| "a bundle field that is not base64".to_owned())
}

/// Whether a referrer index entry of type `artifact_type` may hold a bundle.
pub fn is_bundle(artifact_type: Option<&str>) -> bool {
    artifact_type.is_some_and(|t| BUNDLES.contains(&t))
}

/// The bundle layer of the referrer manifest `bytes`, which must be a
/// bundle artifact whose subject is the manifest `subject`.
pub fn bundle_layer(bytes: &[u8], subject: &str) -> Result<Descriptor, String> {
    if bytes.len() as u64 > MAX_DOCUMENT_BYTES {
        return Err("a referrer manifest that is too long".to_owned());
    }
    let referrer: Referrer = serde_json::from_slice(bytes)
        .map_err(|e| format!("a referrer manifest that does not parse: {}", quoted(&e.to_string())))?;
    if !is_bundle(referrer.artifact_type.as_deref()) {
        return Err("a referrer that is not a Sigstore bundle".to_owned());
    }
    if referrer.subject.as_ref().map(|s| s.digest.as_str()) != Some(subject) {
        return Err("a bundle whose subject is another manifest".to_owned());
    }
    match &referrer.layers[..] {
        [layer] if BUNDLES.contains(&layer.media_type.as_str()) && is_sha256(&layer.digest) => {
            if layer.size > MAX_BUNDLE_BYTES {
                return Err(format!("a bundle of {} bytes, over {MAX_BUNDLE_BYTES}", layer.size));
            }
            Ok(layer.clone())
        }
        _ => Err("a bundle artifact that is not one bundle layer".to_owned()),
    }
}

/// DSSE's pre-authentication encoding of a payload: what its signatures sign.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!("DSSEv1 {} {payload_type} {} ", payload_type.len(), payload.len()).into_bytes();
    out.extend_from_slice(payload);
    out
}

/// Whether the bundle `bytes` signs the manifest `manifest` of digest
/// `digest` with `key`; why not otherwise.
pub fn check(bytes: &[u8], key: &PublicKey, digest: &str, manifest: &[u8]) -> Result<(), String> {
    if bytes.len() as u64 > MAX_BUNDLE_BYTES {
        return Err("a bundle that is too long".to_owned());
    }
    let bundle: Bundle = serde_json::from_slice(bytes)
        .map_err(|e| format!("a bundle that does not parse: {}", quoted(&e.to_string())))?;
    if !BUNDLES.contains(&bundle.media_type.as_str()) {
        return Err(format!("a bundle of type `{}`", quoted(&bundle.media_type)));
    }
    let hex = digest.strip_prefix("sha256:").filter(|_| is_sha256(digest)).ok_or("a digest that is not sha256")?;
    let verified = match (&bundle.message_signature, &bundle.dsse_envelope) {
        (Some(message), None) => {
            if let Some(said) = &message.message_digest {
                let said_hex = decode(&said.digest).map(hex::encode)?;
                if said.algorithm != "SHA2_256" || said_hex != hex {
                    return Err("a message signature of another manifest (not this digest)".to_owned());
                }
            }
            key.verifies(manifest, &decode(&message.signature)?)
        }
        (None, Some(envelope)) => {
            if envelope.payload_type != IN_TOTO {
                return Err(format!("a DSSE envelope of type `{}`", quoted(&envelope.payload_type)));
            }
            let payload = decode(&envelope.payload)?;
            let signed = pae(&envelope.payload_type, &payload);
            let verified =
                envelope.signatures.iter().any(|s| decode(&s.sig).is_ok_and(|sig| key.verifies(&signed, &sig)));
            if verified {
                return statement_names(&payload, hex);
            }
            false
        }
        _ => return Err("a bundle with neither or both of a message signature and a DSSE envelope".to_owned()),
    };
    match verified {
        true => Ok(()),
        false
            if bundle.verification_material.certificate.is_some()
                || bundle.verification_material.x509_certificate_chain.is_some() =>
        {
            Err("a bundle signed with a certificate (keyless), not the configured key".to_owned())
        }
        false => Err("the signature does not verify with the configured key".to_owned()),
    }
}

/// Whether the signed statement `payload` is cosign's signature of the
/// manifest of hex digest `hex`.
fn statement_names(payload: &[u8], hex: &str) -> Result<(), String> {
    let statement: Statement =
        serde_json::from_slice(payload).map_err(|_| "a signed payload that is not an in-toto statement")?;
    if !STATEMENTS.contains(&statement.kind.as_str()) {
        return Err(format!("a signed statement of type `{}`", quoted(&statement.kind)));
    }
    if statement.predicate_type != SIGN_PREDICATE {
        return Err(format!(
            "a signed attestation of `{}`, not a signature (`cosign sign`)",
            quoted(&statement.predicate_type)
        ));
    }
    if !statement.subject.iter().any(|s| s.digest.get("sha256").is_some_and(|d| d.eq_ignore_ascii_case(hex))) {
        return Err("a valid signature, of another manifest (not this digest)".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::oci::signature::tests::key_pair;

    const MANIFEST_BYTES: &[u8] = br#"{"schemaVersion":2}"#;

    fn digest_of(bytes: &[u8]) -> String {
        crate::load::oci::registry::sha256_text(bytes)
    }

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn dsse(pair: &ring::signature::EcdsaKeyPair, digest: &str, predicate: &str) -> Vec<u8> {
        let statement = serde_json::json!({
            "_type": STATEMENTS[0],
            "subject": [{"digest": {"sha256": digest.strip_prefix("sha256:").unwrap()}}],
            "predicateType": predicate,
            "predicate": {},
        });
        let payload = serde_json::to_vec(&statement).unwrap();
        let sig = pair.sign(&ring::rand::SystemRandom::new(), &pae(IN_TOTO, &payload)).unwrap();
        serde_json::to_vec(&serde_json::json!({
            "mediaType": BUNDLE,
            "verificationMaterial": {"publicKey": {"hint": "x"}, "tlogEntries": []},
            "dsseEnvelope": {"payload": b64(&payload), "payloadType": IN_TOTO, "signatures": [{"sig": b64(sig.as_ref())}]},
        }))
        .unwrap()
    }

    #[test]
    fn a_dsse_bundle_verifies_only_with_its_key_for_its_digest_as_a_signature() {
        let digest = digest_of(MANIFEST_BYTES);
        let (pair, key) = key_pair();
        let (_, other) = key_pair();
        assert_eq!(check(&dsse(&pair, &digest, SIGN_PREDICATE), &key, &digest, MANIFEST_BYTES), Ok(()));
        let wrong = check(&dsse(&pair, &digest, SIGN_PREDICATE), &other, &digest, MANIFEST_BYTES);
        assert!(wrong.unwrap_err().contains("does not verify"));
        let elsewhere = format!("sha256:{}", "b".repeat(64));
        let moved = check(&dsse(&pair, &elsewhere, SIGN_PREDICATE), &key, &digest, MANIFEST_BYTES);
        assert!(moved.unwrap_err().contains("another manifest"));
        let provenance = check(&dsse(&pair, &digest, "https://slsa.dev/provenance/v1"), &key, &digest, MANIFEST_BYTES);
        assert!(provenance.unwrap_err().contains("not a signature"));
    }

    #[test]
    fn a_message_signature_bundle_signs_the_manifests_bytes() {
        let digest = digest_of(MANIFEST_BYTES);
        let (pair, key) = key_pair();
        let sig = pair.sign(&ring::rand::SystemRandom::new(), MANIFEST_BYTES).unwrap();
        let bundle = |said: &str| {
            serde_json::to_vec(&serde_json::json!({
                "mediaType": BUNDLE,
                "verificationMaterial": {"publicKey": {"hint": "x"}},
                "messageSignature": {"messageDigest": {"algorithm": "SHA2_256", "digest": said}, "signature": b64(sig.as_ref())},
            }))
            .unwrap()
        };
        let said = b64(&hex::decode(digest.strip_prefix("sha256:").unwrap()).unwrap());
        assert_eq!(check(&bundle(&said), &key, &digest, MANIFEST_BYTES), Ok(()));
        assert!(check(&bundle(&b64(&[0; 32])), &key, &digest, MANIFEST_BYTES).unwrap_err().contains("another"));
        assert!(check(&bundle(&said), &key, &digest, b"{}").unwrap_err().contains("does not verify"));
    }

    #[test]
    fn a_keyless_bundle_is_refused_with_that_reason() {
        let digest = digest_of(MANIFEST_BYTES);
        let (pair, key) = key_pair();
        let (_, other) = key_pair();
        let mut bundle: serde_json::Value = serde_json::from_slice(&dsse(&pair, &digest, SIGN_PREDICATE)).unwrap();
        bundle["verificationMaterial"] = serde_json::json!({"certificate": {"rawBytes": "AAAA"}});
        let bytes = serde_json::to_vec(&bundle).unwrap();
        assert_eq!(check(&bytes, &key, &digest, MANIFEST_BYTES), Ok(()), "the key signed it: the material is a hint");
        assert!(check(&bytes, &other, &digest, MANIFEST_BYTES).unwrap_err().contains("keyless"));
    }

    #[test]
    fn the_referrer_must_be_one_bundle_of_this_subject() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let layer =
            serde_json::json!({"mediaType": BUNDLE, "digest": format!("sha256:{}", "c".repeat(64)), "size": 10});
        let referrer = |artifact: &str, subject: &str, layers: serde_json::Value| {
            serde_json::to_vec(&serde_json::json!({
                "schemaVersion": 2, "artifactType": artifact, "layers": layers,
                "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": digest, "size": 2},
                "subject": {"mediaType": crate::load::oci::layout::MANIFEST, "digest": subject, "size": 1},
            }))
            .unwrap()
        };
        assert!(bundle_layer(&referrer(BUNDLE, &digest, serde_json::json!([layer])), &digest).is_ok());
        let other = format!("sha256:{}", "b".repeat(64));
        assert!(bundle_layer(&referrer(BUNDLE, &other, serde_json::json!([layer])), &digest).is_err());
        assert!(
            bundle_layer(&referrer("application/spdx+json", &digest, serde_json::json!([layer])), &digest).is_err()
        );
        assert!(bundle_layer(&referrer(BUNDLE, &digest, serde_json::json!([layer, layer])), &digest).is_err());
    }

    #[test]
    fn the_pre_authentication_encoding_is_dsses() {
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
        );
    }
}
