//! What an OCI artifact holding a component looks like, read by allow-list.
//!
//! The CNCF Wasm layout (what `wkg` and `oci-wasm` write): an image
//! manifest whose config is `application/vnd.wasm.config.v0+json` and
//! whose one layer is `application/wasm`. Older artifacts name the layer
//! `application/vnd.wasm.component.v1` or
//! `application/vnd.bytecodealliance.wasm.component.layer.v0+wasm`, and
//! may carry a policy layer (`application/vnd.wasm.policy.v1+yaml`), a
//! request like a `policy.yaml` beside a component. Anything else (an
//! image index, another layer type, a second component, a digest that is
//! not SHA-256) is refused with what was found; a manifest is never read
//! as if it were a different one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::contract::{Shape, sanitize_cut};

/// The OCI image manifest's media type.
pub const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// The CNCF Wasm config's media type.
pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
/// The CNCF Wasm layer's media type (what `quiver push` writes).
pub const WASM_LAYER: &str = "application/wasm";
/// Component layer types older tools write, read like [`WASM_LAYER`].
pub const OLDER_LAYERS: [&str; 2] =
    ["application/vnd.wasm.component.v1", "application/vnd.bytecodealliance.wasm.component.layer.v0+wasm"];
/// A policy layer: what the component asks for (a request, never a grant).
pub const POLICY_LAYER: &str = "application/vnd.wasm.policy.v1+yaml";
/// Config types besides [`WASM_CONFIG`] that carry nothing Quiver reads:
/// the OCI empty descriptor and the image config older tools write.
pub const OTHER_CONFIGS: [&str; 2] = ["application/vnd.oci.empty.v1+json", "application/vnd.oci.image.config.v1+json"];
/// Largest manifest or config read (a component's manifest is a few hundred bytes).
pub const MAX_DOCUMENT_BYTES: u64 = 256 << 10;
/// Largest policy layer read.
pub const MAX_POLICY_BYTES: u64 = 64 << 10;

/// A content descriptor (`mediaType`, `digest`, `size`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// What the content is.
    pub media_type: String,
    /// `sha256:` and 64 hex digits.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
    /// Free-form notes (never trusted, shown sanitised).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// An OCI image manifest, as far as a component's needs it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageManifest {
    /// Always 2.
    pub schema_version: u32,
    /// [`MANIFEST`], or absent (older writers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// What the artifact is (OCI 1.1; the config's type for a Wasm artifact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// The content blobs.
    pub layers: Vec<Descriptor>,
    /// Free-form notes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// The parts of an artifact Quiver serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// The component layer.
    pub component: Descriptor,
    /// The policy layer, when it has one.
    pub policy: Option<Descriptor>,
    /// The config blob (read only when it is [`WASM_CONFIG`]).
    pub config: Descriptor,
}

/// The CNCF Wasm config (`application/vnd.wasm.config.v0+json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmConfig {
    /// When it was built (RFC 3339), if the writer says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// Always `wasm`.
    pub architecture: String,
    /// `wasip2` for a component, `wasip1` for a core module.
    pub os: String,
    /// The digests of the layers, in order.
    #[serde(default)]
    pub layer_digests: Vec<String>,
    /// What the component imports and exports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<ComponentTypes>,
}

/// A component's imports and exports by name, in the config.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ComponentTypes {
    /// Its exports (`wasi:cli/run@0.2.0`, `greet`…).
    #[serde(default)]
    pub exports: Vec<String>,
    /// Its imports.
    #[serde(default)]
    pub imports: Vec<String>,
    /// The world it targets, if the writer says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// Whether `digest` is `sha256:` and 64 lowercase hex digits.
pub fn is_sha256(digest: &str) -> bool {
    digest
        .strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

/// Outside text (a media type, an annotation) as it may be shown.
fn shown(text: &str) -> String {
    sanitize_cut(text, Shape::Line, 120)
}

impl Artifact {
    /// The component of the manifest `bytes`, whose layer may be at most
    /// `max_component` bytes; why not otherwise.
    pub fn read(bytes: &[u8], max_component: u64) -> Result<Artifact, String> {
        if bytes.len() as u64 > MAX_DOCUMENT_BYTES {
            return Err(format!("the manifest is {} bytes, over {MAX_DOCUMENT_BYTES}", bytes.len()));
        }
        let manifest: ImageManifest = serde_json::from_slice(bytes).map_err(|e| {
            let index = serde_json::from_slice::<serde_json::Value>(bytes)
                .ok()
                .and_then(|v| v.get("manifests").map(|_| ()))
                .is_some();
            if index {
                "an image index, not a manifest: pin the digest of the component's own manifest".to_owned()
            } else {
                format!("not an OCI image manifest: {}", shown(&e.to_string()))
            }
        })?;
        manifest.artifact(max_component)
    }
}

impl ImageManifest {
    /// Its component, policy and config, checked.
    pub fn artifact(self, max_component: u64) -> Result<Artifact, String> {
        if self.schema_version != 2 {
            return Err(format!("schemaVersion {}, not 2", self.schema_version));
        }
        if let Some(media_type) = self.media_type.as_deref().filter(|m| *m != MANIFEST) {
            return Err(format!("media type `{}`, not an OCI image manifest", shown(media_type)));
        }
        let config = self.config;
        if config.media_type != WASM_CONFIG && !OTHER_CONFIGS.contains(&config.media_type.as_str()) {
            return Err(format!("config of type `{}`, not a Wasm artifact's", shown(&config.media_type)));
        }
        let mut component = None;
        let mut policy = None;
        for layer in self.layers {
            if !is_sha256(&layer.digest) {
                return Err(format!("layer digest `{}` is not sha256 and 64 hex digits", shown(&layer.digest)));
            }
            let slot = match layer.media_type.as_str() {
                WASM_LAYER => &mut component,
                other if OLDER_LAYERS.contains(&other) => &mut component,
                POLICY_LAYER => &mut policy,
                other => {
                    return Err(format!(
                        "a layer of type `{}`, which is neither a component nor a policy",
                        shown(other)
                    ));
                }
            };
            if slot.is_some() {
                return Err(format!("two layers of type `{}`: an artifact holds one", shown(&layer.media_type)));
            }
            *slot = Some(layer);
        }
        let component = component.ok_or("no component layer (`application/wasm`)")?;
        if component.size > max_component {
            return Err(format!("the component is {} bytes, over the limit of {max_component}", component.size));
        }
        if let Some(policy) = policy.as_ref().filter(|p| p.size > MAX_POLICY_BYTES) {
            return Err(format!("the policy layer is {} bytes, over {MAX_POLICY_BYTES}", policy.size));
        }
        if !is_sha256(&config.digest) {
            return Err(format!("config digest `{}` is not sha256 and 64 hex digits", shown(&config.digest)));
        }
        if config.size > MAX_DOCUMENT_BYTES {
            return Err(format!("the config is {} bytes, over {MAX_DOCUMENT_BYTES}", config.size));
        }
        Ok(Artifact { component, policy, config })
    }
}

impl WasmConfig {
    /// Check the config `bytes` against the artifact they describe.
    pub fn check(bytes: &[u8], artifact: &Artifact) -> Result<WasmConfig, String> {
        let config: WasmConfig = serde_json::from_slice(bytes)
            .map_err(|e| format!("the Wasm config does not parse: {}", shown(&e.to_string())))?;
        if config.architecture != "wasm" {
            return Err(format!("the config says architecture `{}`, not `wasm`", shown(&config.architecture)));
        }
        if !config.layer_digests.is_empty() && !config.layer_digests.contains(&artifact.component.digest) {
            return Err("the config's layerDigests do not name the component layer".to_owned());
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(c: char) -> String {
        format!("sha256:{}", c.to_string().repeat(64))
    }

    fn manifest(layers: &[(&str, char)]) -> Vec<u8> {
        let layers: Vec<_> =
            layers.iter().map(|(t, c)| serde_json::json!({"mediaType": t, "digest": digest(*c), "size": 10})).collect();
        serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST,
            "config": {"mediaType": WASM_CONFIG, "digest": digest('c'), "size": 2},
            "layers": layers,
        }))
        .unwrap()
    }

    #[test]
    fn the_cncf_layout_and_the_older_types_are_read() {
        let artifact = Artifact::read(&manifest(&[(WASM_LAYER, 'a')]), 100).unwrap();
        assert_eq!(artifact.component.digest, digest('a'));
        assert_eq!(artifact.policy, None);
        for older in OLDER_LAYERS {
            let artifact = Artifact::read(&manifest(&[(older, 'a'), (POLICY_LAYER, 'b')]), 100).unwrap();
            assert_eq!(artifact.policy.unwrap().digest, digest('b'));
        }
    }

    #[test]
    fn what_is_not_allowed_is_refused_with_what_was_found() {
        let refused = |bytes: &[u8]| Artifact::read(bytes, 100).unwrap_err();
        assert!(refused(&manifest(&[])).contains("no component layer"));
        assert!(refused(&manifest(&[(WASM_LAYER, 'a'), (WASM_LAYER, 'b')])).contains("two layers"));
        let other = refused(&manifest(&[(WASM_LAYER, 'a'), ("application/vnd.oci.image.layer.v1.tar\n", 'b')]));
        assert!(other.contains("neither a component") && !other.contains('\n'), "{other}");
        assert!(refused(&manifest(&[(WASM_LAYER, 'a')]).replace_size(1000)).contains("over the limit"));
        let index = br#"{"schemaVersion":2,"manifests":[]}"#;
        assert!(refused(index).contains("image index"));
        let bad_digest = String::from_utf8(manifest(&[(WASM_LAYER, 'a')])).unwrap().replace(&digest('a'), "md5:00");
        assert!(refused(bad_digest.as_bytes()).contains("not sha256"));
    }

    trait Resize {
        fn replace_size(self, size: u64) -> Vec<u8>;
    }

    impl Resize for Vec<u8> {
        fn replace_size(self, size: u64) -> Vec<u8> {
            String::from_utf8(self).unwrap().replace("\"size\":10", &format!("\"size\":{size}")).into_bytes()
        }
    }

    #[test]
    fn the_config_must_name_the_component_it_describes() {
        let artifact = Artifact::read(&manifest(&[(WASM_LAYER, 'a')]), 100).unwrap();
        let config = |layers: &[String]| {
            serde_json::to_vec(&serde_json::json!({"architecture": "wasm", "os": "wasip2", "layerDigests": layers}))
                .unwrap()
        };
        assert!(WasmConfig::check(&config(&[digest('a')]), &artifact).is_ok());
        assert!(WasmConfig::check(&config(&[digest('b')]), &artifact).is_err());
        let amd64 = br#"{"architecture":"amd64","os":"linux"}"#;
        assert!(WasmConfig::check(amd64, &artifact).unwrap_err().contains("amd64"));
    }
}
