//! cosign signatures, verified offline with a key the operator configures.
//!
//! cosign's classic form: the signature of the artifact whose manifest
//! has digest `sha256:HEX` is the image tagged `sha256-HEX.sig` in the same
//! repository. Each of its layers of type
//! `application/vnd.dev.cosign.simplesigning.v1+json` is a *simple signing*
//! payload (JSON naming the signed manifest's digest), and carries in its
//! annotation `dev.cosignproject.cosign/signature` the base64 of an ECDSA
//! P-256 / SHA-256 signature (ASN.1) of that payload's bytes. One layer
//! whose signature verifies with the key, and whose payload names the very
//! digest being pulled, is enough; anything else is refused.
//!
//! cosign's current form, a Sigstore bundle stored as a referrer of the
//! manifest, is read in [`super::bundle`]; either form verifying is enough.
//!
//! The verified payload and signature (or bundle) are kept in the store beside the
//! manifest, and verified again with the configured key every time the
//! host starts: changing the key takes back what the old one allowed.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::layout::{Descriptor, is_sha256};
use crate::contract::{Shape, sanitize_cut};

/// The media type of a simple signing payload layer.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation holding a layer's signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The `critical.type` of a cosign signature payload.
pub const PAYLOAD_TYPE: &str = "cosign container image signature";
/// Largest payload read (cosign's are a few hundred bytes).
pub const MAX_PAYLOAD_BYTES: u64 = 64 << 10;

/// The DER prefix of a P-256 public key's SubjectPublicKeyInfo
/// (id-ecPublicKey, prime256v1, then the 65-byte uncompressed point).
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce,
    0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// A cosign public key (`cosign.pub`): ECDSA P-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    point: Vec<u8>,
}

impl PublicKey {
    /// The key in PEM `text` (`-----BEGIN PUBLIC KEY-----`, as `cosign
    /// generate-key-pair` writes it).
    pub fn from_pem(text: &str) -> Result<PublicKey, String> {
        let body = text
            .split_once("-----BEGIN PUBLIC KEY-----")
            .and_then(|(_, rest)| rest.split_once("-----END PUBLIC KEY-----"))
            .map(|(body, _)| body)
            .ok_or("not a PEM public key (-----BEGIN PUBLIC KEY-----)")?;
        let body: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        let der = base64::engine::general_purpose::STANDARD.decode(body).map_err(|_| "the PEM body is not base64")?;
        PublicKey::from_spki(&der)
    }

    /// The key in DER SubjectPublicKeyInfo `der`: only ECDSA P-256 (cosign's keys).
    pub fn from_spki(der: &[u8]) -> Result<PublicKey, String> {
        let point = der
            .strip_prefix(&P256_SPKI_PREFIX[..])
            .filter(|p| p.len() == 65 && p[0] == 4)
            .ok_or("not an ECDSA P-256 public key (cosign's keys are; others are not read)")?;
        Ok(PublicKey { point: point.to_vec() })
    }

    /// The SubjectPublicKeyInfo of an uncompressed P-256 `point`.
    pub fn spki_of(point: &[u8]) -> Vec<u8> {
        [&P256_SPKI_PREFIX[..], point].concat()
    }

    /// Whether `signature` (ASN.1 DER) signs `message` with this key.
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        let key = ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_ASN1, &self.point);
        key.verify(message, signature).is_ok()
    }
}

/// A simple signing payload, as far as verification reads it.
#[derive(Debug, Clone, Deserialize)]
pub struct Payload {
    /// What is signed.
    pub critical: Critical,
}

/// The signed claims.
#[derive(Debug, Clone, Deserialize)]
pub struct Critical {
    /// Which reference was signed (not checked: a mirror renames it).
    pub identity: Identity,
    /// The signed manifest.
    pub image: Image,
    /// [`PAYLOAD_TYPE`].
    #[serde(rename = "type")]
    pub kind: String,
}

/// The signed reference.
#[derive(Debug, Clone, Deserialize)]
pub struct Identity {
    /// `REGISTRY/REPOSITORY`.
    #[serde(rename = "docker-reference")]
    pub docker_reference: String,
}

/// The signed manifest.
#[derive(Debug, Clone, Deserialize)]
pub struct Image {
    /// `sha256:…`.
    #[serde(rename = "docker-manifest-digest")]
    pub docker_manifest_digest: String,
}

/// A verified signature, as the store keeps it to verify again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "form", rename_all = "kebab-case")]
pub enum Proof {
    /// cosign's classic form: a simple signing payload and its signature
    /// from the `sha256-HEX.sig` tag.
    SimpleSigning {
        /// The payload's bytes, base64.
        payload: String,
        /// The signature, base64.
        signature: String,
    },
    /// A Sigstore bundle found among the manifest's referrers.
    Bundle {
        /// The bundle's bytes, base64.
        bundle: String,
    },
}

/// The `.sig` tag of the manifest of digest `digest`.
pub fn sig_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1) + ".sig"
}

/// The candidate signatures of the `.sig` manifest `bytes`: each simple
/// signing layer with its signature (base64 as written).
pub fn candidates(bytes: &[u8]) -> Result<Vec<(Descriptor, String)>, String> {
    #[derive(Deserialize)]
    struct SigManifest {
        #[serde(default)]
        layers: Vec<Descriptor>,
    }
    if bytes.len() as u64 > super::layout::MAX_DOCUMENT_BYTES {
        return Err("the signature manifest is too long".to_owned());
    }
    let manifest: SigManifest = serde_json::from_slice(bytes).map_err(|e| {
        format!("the signature manifest does not parse: {}", sanitize_cut(&e.to_string(), Shape::Line, 200))
    })?;
    Ok(manifest
        .layers
        .into_iter()
        .filter(|l| l.media_type == SIMPLE_SIGNING && is_sha256(&l.digest) && l.size <= MAX_PAYLOAD_BYTES)
        .filter_map(|l| l.annotations.get(SIGNATURE_ANNOTATION).cloned().map(|s| (l, s)))
        .collect())
}

impl Proof {
    /// Whether it signs the manifest `manifest` of digest `digest` with
    /// `key`; why not otherwise.
    pub fn check(&self, key: &PublicKey, digest: &str, manifest: &[u8]) -> Result<(), String> {
        let decode = |text: &str| base64::engine::general_purpose::STANDARD.decode(text.trim());
        let (payload, signature) = match self {
            Proof::Bundle { bundle } => {
                let bytes = decode(bundle).map_err(|_| "a kept bundle that is not base64")?;
                return super::bundle::check(&bytes, key, digest, manifest);
            }
            Proof::SimpleSigning { payload, signature } => (payload, signature),
        };
        let (Ok(payload), Ok(signature)) = (decode(payload), decode(signature)) else {
            return Err("a signature or payload that is not base64".to_owned());
        };
        if !key.verifies(&payload, &signature) {
            return Err("the signature does not verify with the configured key".to_owned());
        }
        let payload: Payload = serde_json::from_slice(&payload).map_err(|_| "a signed payload that is not cosign's")?;
        if payload.critical.kind != PAYLOAD_TYPE {
            return Err(format!(
                "a signed payload of type `{}`",
                sanitize_cut(&payload.critical.kind, Shape::Line, 80)
            ));
        }
        if payload.critical.image.docker_manifest_digest != digest {
            return Err("a valid signature, of another manifest (not this digest)".to_owned());
        }
        Ok(())
    }

    /// The proof of a simple signing payload's `bytes` and the `signature` as annotated.
    pub fn of(bytes: &[u8], signature: &str) -> Proof {
        Proof::SimpleSigning {
            payload: base64::engine::general_purpose::STANDARD.encode(bytes),
            signature: signature.trim().to_owned(),
        }
    }

    /// The proof of a bundle's `bytes`.
    pub fn bundle(bytes: &[u8]) -> Proof {
        Proof::Bundle { bundle: base64::engine::general_purpose::STANDARD.encode(bytes) }
    }

    /// Which form of signature it is, as the status names it.
    pub fn form(&self) -> &'static str {
        match self {
            Proof::SimpleSigning { .. } => "sig-tag",
            Proof::Bundle { .. } => "bundle",
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn key_pair() -> (ring::signature::EcdsaKeyPair, PublicKey) {
        use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair};
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng).unwrap();
        let public = PublicKey::from_spki(&PublicKey::spki_of(pair.public_key().as_ref())).unwrap();
        (pair, public)
    }

    fn signed(pair: &ring::signature::EcdsaKeyPair, digest: &str) -> Proof {
        let payload = format!(
            r#"{{"critical":{{"identity":{{"docker-reference":"r/x"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"{PAYLOAD_TYPE}"}},"optional":null}}"#
        );
        let signature = pair.sign(&ring::rand::SystemRandom::new(), payload.as_bytes()).unwrap();
        Proof::of(payload.as_bytes(), &base64::engine::general_purpose::STANDARD.encode(signature.as_ref()))
    }

    #[test]
    fn a_signature_verifies_only_with_its_key_and_for_its_digest() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let (pair, key) = key_pair();
        let (_, other) = key_pair();
        let proof = signed(&pair, &digest);
        assert_eq!(proof.check(&key, &digest, b""), Ok(()));
        assert!(proof.check(&other, &digest, b"").unwrap_err().contains("does not verify"));
        assert!(
            proof.check(&key, &format!("sha256:{}", "b".repeat(64)), b"").unwrap_err().contains("another manifest")
        );
        let Proof::SimpleSigning { payload, signature } = &proof else { unreachable!() };
        let mut payload = base64::engine::general_purpose::STANDARD.decode(payload).unwrap();
        payload.push(b' ');
        let tampered = Proof::of(&payload, signature);
        assert!(tampered.check(&key, &digest, b"").unwrap_err().contains("does not verify"));
    }

    #[test]
    fn keys_are_read_from_cosigns_pem_and_others_are_refused() {
        let (_, key) = key_pair();
        let pem = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            base64::engine::general_purpose::STANDARD.encode(PublicKey::spki_of(&key.point))
        );
        assert_eq!(PublicKey::from_pem(&pem).unwrap(), key);
        assert!(PublicKey::from_pem("-----BEGIN RSA PUBLIC KEY-----\nAAAA\n-----END RSA PUBLIC KEY-----").is_err());
        let ed25519 = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----";
        assert!(PublicKey::from_pem(ed25519).unwrap_err().contains("P-256"));
    }

    #[test]
    fn the_sig_tag_is_cosigns() {
        assert_eq!(sig_tag("sha256:abc"), "sha256-abc.sig");
    }
}
