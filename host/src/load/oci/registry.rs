//! Talking to a registry, through `oci-client` (the OCI distribution
//! client the ORAS project maintains): pull an artifact into the store,
//! resolve a tag, push a component in the CNCF Wasm layout.
//!
//! Every answer is bounded before it is trusted: a manifest by
//! [`MAX_DOCUMENT_BYTES`], a component by the plugin size limit and by
//! the size its manifest declares, and each blob is checked against its
//! digest as it streams in. A registry's error text is outside text: it is
//! sanitised before it reaches the status or a log.

use std::time::Duration;

use futures_util::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use sha2::Digest;

use super::bundle;
use super::layout::is_sha256;
use super::layout::{
    Artifact, ComponentTypes, Descriptor, ImageManifest, MANIFEST, MAX_DOCUMENT_BYTES, WASM_CONFIG, WASM_LAYER,
    WasmConfig,
};
use super::signature::{self, Proof, PublicKey};
use super::store::{Store, Stored};
use crate::contract::{Shape, sanitize_cut};

/// How long a registry may take to connect, and between two reads.
const NETWORK_TIMEOUT: Duration = Duration::from_secs(30);

/// The manifest types asked for (an index is asked for so that it can be
/// refused with a reason rather than a 404).
const ACCEPTED: [&str; 2] = [MANIFEST, "application/vnd.oci.image.index.v1+json"];

/// A registry client for the configured registries.
pub struct Registry {
    client: Client,
}

/// Outside text from a registry or the client, as it may be shown.
fn shown(error: impl std::fmt::Display) -> String {
    sanitize_cut(&error.to_string(), Shape::Line, 300)
}

impl Registry {
    /// A client speaking HTTPS, except plain HTTP to `insecure` registries.
    pub fn new(insecure: Vec<String>) -> Result<Registry, String> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let config = ClientConfig {
            protocol: ClientProtocol::HttpsExcept(insecure),
            read_timeout: Some(NETWORK_TIMEOUT),
            connect_timeout: Some(NETWORK_TIMEOUT),
            user_agent: concat!("quiver/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        };
        let client = Client::try_from(config).map_err(|e| format!("cannot make the registry client: {}", shown(e)))?;
        Ok(Registry { client })
    }

    /// Pull the artifact `pinned` (by digest) into `store`, its component
    /// at most `max_component` bytes; what was stored.
    pub async fn pull(
        &self,
        pinned: &Reference,
        auth: &RegistryAuth,
        key: Option<&PublicKey>,
        store: &Store,
        max_component: u64,
    ) -> Result<Stored, String> {
        let wanted = pinned.digest().ok_or("the reference is not pinned to a digest")?.to_owned();
        self.client.store_auth_if_needed(pinned.resolve_registry(), auth).await;
        let (manifest, _) = self
            .client
            .pull_manifest_raw(pinned, auth, &ACCEPTED)
            .await
            .map_err(|e| format!("the manifest: {}", shown(e)))?;
        // oci-client checks the digest already; the store names files by
        // it, so check it here too rather than trust a dependency's detail.
        if format!("sha256:{}", hex::encode(sha2::Sha256::digest(&manifest))) != wanted {
            return Err(format!("the registry answered a manifest that is not {wanted}"));
        }
        let artifact = Artifact::read(&manifest, max_component)?;
        // Signed by the configured key, or nothing is fetched further.
        let proof = match key {
            Some(key) => Some(self.signature(pinned, auth, &wanted, &manifest, key).await?),
            None => None,
        };
        if artifact.config.media_type == WASM_CONFIG {
            let config = self.blob(pinned, &artifact.config.digest, artifact.config.size, MAX_DOCUMENT_BYTES).await?;
            WasmConfig::check(&config, &artifact)?;
        }
        let component = &artifact.component;
        let bytes = self.blob(pinned, &component.digest, component.size, max_component).await?;
        let io = |e: std::io::Error| format!("cannot write to the store {}: {e}", store.root().display());
        store.put_blob(&component.digest, "wasm", &bytes).map_err(io)?;
        if let Some(policy) = &artifact.policy {
            let text = self.blob(pinned, &policy.digest, policy.size, super::layout::MAX_POLICY_BYTES).await?;
            store.put_blob(&component.digest, "policy.yaml", &text).map_err(io)?;
        }
        if let Some(proof) = &proof {
            store.put_proof(&wanted, proof).map_err(io)?;
        }
        store.put_manifest(&wanted, &manifest).map_err(io)?;
        store.stored(&wanted, max_component).ok_or_else(|| "the stored artifact cannot be read back".to_owned())
    }

    /// A cosign signature of the manifest `manifest` (of digest `digest`)
    /// of `image` that verifies with `key`: a Sigstore bundle among its
    /// referrers (cosign's current form), else its `sha256-HEX.sig` tag.
    async fn signature(
        &self,
        image: &Reference,
        auth: &RegistryAuth,
        digest: &str,
        manifest: &[u8],
        key: &PublicKey,
    ) -> Result<Proof, String> {
        let bundle = match self.bundle(image, auth, digest, manifest, key).await {
            Ok(proof) => return Ok(proof),
            Err(reason) => reason,
        };
        match self.sig_tag(image, auth, digest, key).await {
            Ok(proof) => Ok(proof),
            Err(classic) => Err(format!("no cosign signature verifies: Sigstore bundle: {bundle}; {classic}")),
        }
    }

    /// A Sigstore bundle referring to the manifest `digest` that verifies
    /// with `key`, found through the referrers API (or, where the registry
    /// has none, the referrers tag schema).
    async fn bundle(
        &self,
        image: &Reference,
        auth: &RegistryAuth,
        digest: &str,
        manifest: &[u8],
        key: &PublicKey,
    ) -> Result<Proof, String> {
        let at = |d: &str| Reference::with_digest(image.registry().to_owned(), image.repository().to_owned(), d.into());
        let index =
            self.client.pull_referrers(&at(digest), None).await.map_err(|e| format!("the referrers: {}", shown(e)))?;
        let mut refusal = "none refers to this digest".to_owned();
        let found =
            index.manifests.iter().filter(|e| bundle::is_bundle(e.artifact_type.as_deref()) && is_sha256(&e.digest));
        for entry in found.take(bundle::MAX_REFERRERS) {
            let referrer = at(&entry.digest);
            let checked = async {
                let (bytes, _) = self
                    .client
                    .pull_manifest_raw(&referrer, auth, &[MANIFEST])
                    .await
                    .map_err(|e| format!("the referrer {}: {}", entry.digest, shown(e)))?;
                if sha256_text(&bytes) != entry.digest {
                    return Err(format!("the referrer {} is not what its digest says", entry.digest));
                }
                let layer = bundle::bundle_layer(&bytes, digest)?;
                let bytes = self.blob(&referrer, &layer.digest, layer.size, bundle::MAX_BUNDLE_BYTES).await?;
                bundle::check(&bytes, key, digest, manifest).map(|()| Proof::bundle(&bytes))
            };
            match checked.await {
                Ok(proof) => return Ok(proof),
                Err(reason) => refusal = reason,
            }
        }
        Err(refusal)
    }

    /// The classic cosign signature of the manifest `digest` of `image`
    /// (its `sha256-HEX.sig` tag) that verifies with `key`.
    async fn sig_tag(
        &self,
        image: &Reference,
        auth: &RegistryAuth,
        digest: &str,
        key: &PublicKey,
    ) -> Result<Proof, String> {
        let tag = signature::sig_tag(digest);
        let at = Reference::with_tag(image.registry().to_owned(), image.repository().to_owned(), tag.clone());
        let accepted = [MANIFEST, "application/vnd.docker.distribution.manifest.v2+json"];
        let (bytes, _) = self
            .client
            .pull_manifest_raw(&at, auth, &accepted)
            .await
            .map_err(|e| format!("no `{tag}` signature: {}", shown(e)))?;
        let mut refusal = format!("`{tag}` holds no cosign signature layer");
        for (layer, signature) in signature::candidates(&bytes)? {
            let payload = self.blob(&at, &layer.digest, layer.size, signature::MAX_PAYLOAD_BYTES).await?;
            let proof = Proof::of(&payload, &signature);
            match proof.check(key, digest, &[]) {
                Ok(()) => return Ok(proof),
                Err(reason) => refusal = format!("`{tag}`: {reason}"),
            }
        }
        Err(refusal)
    }

    /// The blob `digest` of `size` bytes (at most `max`), checked.
    async fn blob(&self, image: &Reference, digest: &str, size: u64, max: u64) -> Result<Vec<u8>, String> {
        let what = format!("blob {digest}");
        if size > max {
            return Err(format!("{what} is {size} bytes, over {max}"));
        }
        let mut stream =
            self.client.pull_blob_stream(image, digest).await.map_err(|e| format!("{what}: {}", shown(e)))?;
        let mut bytes = Vec::with_capacity(size as usize);
        let mut hasher = sha2::Sha256::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| format!("{what}: {}", shown(e)))?;
            if (bytes.len() + chunk.len()) as u64 > size {
                return Err(format!("{what} is longer than the {size} bytes its manifest says"));
            }
            hasher.update(&chunk);
            bytes.extend_from_slice(&chunk);
        }
        if bytes.len() as u64 != size {
            return Err(format!("{what} is {} bytes, not the {size} its manifest says", bytes.len()));
        }
        if format!("sha256:{}", hex::encode(hasher.finalize())) != digest {
            return Err(format!("{what} does not have its digest: the registry's copy is not what was published"));
        }
        Ok(bytes)
    }

    /// The digest the tag `reference` names now.
    pub async fn resolve(&self, reference: &Reference, auth: &RegistryAuth) -> Result<String, String> {
        self.client.store_auth_if_needed(reference.resolve_registry(), auth).await;
        let digest = self.client.fetch_manifest_digest(reference, auth).await.map_err(shown)?;
        if !super::layout::is_sha256(&digest) {
            return Err(format!("the registry named the digest `{}`, not sha256", shown(&digest)));
        }
        Ok(digest)
    }

    /// Push the component `wasm` to `reference` in the CNCF Wasm layout;
    /// the manifest's digest.
    pub async fn push(&self, reference: &Reference, auth: &RegistryAuth, wasm: &[u8]) -> Result<String, String> {
        let (manifest, config) = cncf_artifact(wasm)?;
        self.client.store_auth_if_needed(reference.resolve_registry(), auth).await;
        let layer_digest = sha256_text(wasm);
        for (bytes, digest) in [(wasm.to_vec(), layer_digest), (config.clone(), sha256_text(&config))] {
            self.client.push_blob(reference, bytes, &digest).await.map_err(|e| format!("{digest}: {}", shown(e)))?;
        }
        let content_type = http::HeaderValue::from_static(MANIFEST);
        self.client
            .push_manifest_raw(reference, manifest.clone(), content_type)
            .await
            .map_err(|e| format!("the manifest: {}", shown(e)))?;
        Ok(sha256_text(&manifest))
    }
}

/// `sha256:` and the hex SHA-256 of `bytes`.
pub fn sha256_text(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// The manifest and config of `wasm` in the CNCF Wasm layout: the config
/// names the component's top-level imports and exports.
pub fn cncf_artifact(wasm: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
    if !wasmparser::Parser::is_component(wasm) {
        return Err("not a WebAssembly component".to_owned());
    }
    let mut types = ComponentTypes::default();
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        match payload.map_err(|e| format!("not a valid component: {e}"))? {
            wasmparser::Payload::ModuleSection { .. } | wasmparser::Payload::ComponentSection { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::ComponentImportSection(reader) if depth == 0 => {
                for import in reader {
                    types.imports.push(import.map_err(|e| e.to_string())?.name.name.to_owned());
                }
            }
            wasmparser::Payload::ComponentExportSection(reader) if depth == 0 => {
                for export in reader {
                    types.exports.push(export.map_err(|e| e.to_string())?.name.name.to_owned());
                }
            }
            _ => {}
        }
    }
    let layer = sha256_text(wasm);
    let config = WasmConfig {
        created: Some(jiff::Timestamp::now().to_string()),
        architecture: "wasm".into(),
        os: "wasip2".into(),
        layer_digests: vec![layer.clone()],
        component: Some(types),
    };
    let config = serde_json::to_vec(&config).map_err(|e| e.to_string())?;
    let descriptor = |media_type: &str, digest: String, size: usize| Descriptor {
        media_type: media_type.to_owned(),
        digest,
        size: size as u64,
        annotations: Default::default(),
    };
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(MANIFEST.to_owned()),
        artifact_type: Some(WASM_CONFIG.to_owned()),
        config: descriptor(WASM_CONFIG, sha256_text(&config), config.len()),
        layers: vec![descriptor(WASM_LAYER, layer, wasm.len())],
        annotations: Default::default(),
    };
    Ok((serde_json::to_vec(&manifest).map_err(|e| e.to_string())?, config))
}
