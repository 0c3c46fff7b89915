//! The targets over what registries and operators hand the OCI loader:
//! artifact manifests and Wasm configs (from a registry), the lock file and
//! a docker `config.json` (from the operator's disk), and signatures in
//! both of cosign's forms (from a registry).

use crate::load::oci::layout::{Artifact, MAX_DOCUMENT_BYTES, WasmConfig, is_sha256};
use crate::load::oci::source::{OciLock, RegistryAuth, docker_auth_in};

/// The largest component the target lets a manifest declare.
const MAX_COMPONENT: u64 = 1 << 20;

/// An OCI manifest, and the same bytes as the Wasm config of the artifact
/// it names: an artifact that reads has one component layer with a sha256
/// digest within the size limit, and a config within its own.
pub fn oci_manifest(data: &[u8]) {
    let Ok(artifact) = Artifact::read(data, MAX_COMPONENT) else { return };
    assert!(is_sha256(&artifact.component.digest), "{}", artifact.component.digest);
    assert!(artifact.component.size <= MAX_COMPONENT);
    assert!(is_sha256(&artifact.config.digest) && artifact.config.size <= MAX_DOCUMENT_BYTES);
    if let Some(policy) = &artifact.policy {
        assert!(is_sha256(&policy.digest) && policy.size <= crate::load::oci::layout::MAX_POLICY_BYTES);
    }
    if let Ok(config) = WasmConfig::check(data, &artifact) {
        assert_eq!(config.architecture, "wasm");
    }
}

/// The lock file, then a docker `config.json` (split at the first NUL):
/// every pin that reads is a sha256 digest; credentials that read come
/// from the file's own entry, and no error quotes the file.
pub fn oci_credentials(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (lock, docker) = text.split_once('\0').unwrap_or((text, text));
    if let Ok(lock) = OciLock::parse(lock, "fuzz.lock") {
        assert!(lock.pins.values().all(|d| is_sha256(d)));
    }
    match docker_auth_in(docker, "fuzz.json", "127.0.0.1:5000") {
        Ok(RegistryAuth::Basic(..)) => assert!(docker.contains("auth"), "credentials from a file with no `auths`"),
        Ok(_) => unreachable!("a docker config gives Basic credentials or none"),
        Err(message) => {
            // Quoting the file would quote its secrets: a long enough
            // document never appears whole in the error.
            if docker.len() > 40 {
                assert!(!message.contains(docker), "an error quoted the docker config");
            }
        }
    }
}

/// A `.sig` manifest, each candidate's annotated signature checked over
/// the same bytes as its payload, and the bytes read as a PEM public key:
/// nothing verifies without the key's private half, and no input panics.
pub fn oci_signature(data: &[u8]) {
    use crate::load::oci::signature::{Proof, PublicKey, candidates};
    // A fixed valid key whose private half no input can have.
    const SPKI: &str = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEVs/o5+uQbTjL3chynL4wXgUg2R9q9UU8I5mEovUf86QZ7kOBIjJwqnzD1omageEHWwHdBO6B+dFabmdT9POxg==";
    let key = PublicKey::from_pem(&format!("-----BEGIN PUBLIC KEY-----\n{SPKI}\n-----END PUBLIC KEY-----")).unwrap();
    if let Ok(found) = candidates(data) {
        for (layer, signature) in found {
            let proof = Proof::of(data, &signature);
            assert!(proof.check(&key, &layer.digest, data).is_err(), "a signature verified without the private key");
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = PublicKey::from_pem(text);
    }
}

/// A Sigstore bundle checked against a fixed manifest with a key no input
/// has the private half of, and the same bytes as a referrer manifest:
/// nothing verifies, a referrer that reads names one bounded sha256 bundle
/// layer, and no input panics.
pub fn oci_bundle(data: &[u8]) {
    use crate::load::oci::bundle::{MAX_BUNDLE_BYTES, bundle_layer, check};
    use crate::load::oci::signature::PublicKey;
    const SPKI: &str = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEVs/o5+uQbTjL3chynL4wXgUg2R9q9UU8I5mEovUf86QZ7kOBIjJwqnzD1omageEHWwHdBO6B+dFabmdT9POxg==";
    const MANIFEST: &[u8] = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}"#;
    let key = PublicKey::from_pem(&format!("-----BEGIN PUBLIC KEY-----\n{SPKI}\n-----END PUBLIC KEY-----")).unwrap();
    let digest = crate::load::oci::registry::sha256_text(MANIFEST);
    assert!(check(data, &key, &digest, MANIFEST).is_err(), "a bundle verified without the private key");
    if let Ok(layer) = bundle_layer(data, &digest) {
        assert!(is_sha256(&layer.digest) && layer.size <= MAX_BUNDLE_BYTES);
    }
}
