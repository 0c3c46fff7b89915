//! A real OCI registry: Debian's `docker-registry` (distribution 2.8,
//! installed by `.ci/run`) on a free loopback port, plain HTTP, storing in
//! a temporary folder; ready when its log says it listens (no sleeps), and
//! stopped by PID when dropped. Spoken to in the distribution API's own
//! words (blob uploads, manifests by tag or digest), so that a
//! test can publish an artifact exactly as another tool (`wkg`) lays it
//! out, or reach into its storage to tamper with a blob.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The OCI image index's media type.
const INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// Where the Debian package puts the server.
const BINARY: &str = "/usr/bin/docker-registry";

/// A running registry.
pub struct OciRegistry {
    /// Where it listens.
    pub addr: SocketAddr,
    child: Child,
    dir: tempfile::TempDir,
}

impl Drop for OciRegistry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `sha256:` and the hex SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    quiver::load::oci::registry::sha256_text(bytes)
}

impl OciRegistry {
    /// Start one, storing under a fresh temporary folder, open to all.
    pub fn start() -> OciRegistry {
        OciRegistry::starting(None)
    }

    /// Start one that answers only `user` with `password` (HTTP Basic, from
    /// an htpasswd file of bcrypt hashes, the one kind it reads).
    pub fn with_user(user: &str, password: &str) -> OciRegistry {
        OciRegistry::starting(Some((user, password)))
    }

    fn starting(user: Option<(&str, &str)>) -> OciRegistry {
        assert!(Path::new(BINARY).exists(), "{BINARY} is missing: run `bash .ci/run` (it installs docker-registry)");
        let dir = tempfile::tempdir().expect("a temporary folder");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let config = dir.path().join("config.yml");
        let auth = match user {
            Some((user, password)) => {
                let htpasswd = dir.path().join("htpasswd");
                let hash = bcrypt::hash(password, 4).expect("hash the password");
                std::fs::write(&htpasswd, format!("{user}:{hash}\n")).expect("write htpasswd");
                format!("auth:\n  htpasswd:\n    realm: quiver-tests\n    path: {}\n", htpasswd.display())
            }
            None => String::new(),
        };
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    \
                 rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n  secret: quiver-tests\n{auth}",
                dir.path().join("data").display()
            ),
        )
        .expect("write the configuration");
        let mut child = Command::new(BINARY)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start docker-registry: {e}"));
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let ready = lines.by_ref().map_while(Result::ok).any(|line| line.contains("listening on"));
        std::thread::spawn(move || lines.for_each(drop));
        let registry = OciRegistry { addr, child, dir };
        assert!(ready, "docker-registry exited before it listened");
        registry
    }

    /// Stop it (by PID); its storage stays until it is dropped.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// `REGISTRY/repository`.
    pub fn repo(&self, repository: &str) -> String {
        format!("{}/{repository}", self.addr)
    }

    /// The file the registry keeps blob `digest` in.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        self.dir.path().join(format!("data/docker/registry/v2/blobs/sha256/{}/{hex}/data", &hex[..2]))
    }

    /// Upload `bytes` as a blob of `repository` (a session opened with
    /// POST, the whole blob in its closing PUT); its digest.
    pub fn put_blob(&self, repository: &str, bytes: &[u8]) -> String {
        let digest = sha256(bytes);
        let (status, head, _) = self.exchange("POST", &format!("/v2/{repository}/blobs/uploads/"), &[], b"");
        assert_eq!(status, 202, "open an upload: {head}");
        let location = head
            .lines()
            .find_map(|l| l.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("location")))
            .map(|(_, value)| value.trim().to_owned())
            .expect("an upload location");
        let path = location.strip_prefix(&format!("http://{}", self.addr)).unwrap_or(&location);
        let path = format!("{path}&digest={}", digest.replace(':', "%3A"));
        let (status, _, body) = self.exchange("PUT", &path, &[("Content-Type", "application/octet-stream")], bytes);
        assert_eq!(status, 201, "blob upload: {}", String::from_utf8_lossy(&body));
        digest
    }

    /// Put the manifest `bytes` of type `media_type` at `reference` (a tag
    /// or a digest); its digest.
    pub fn put_manifest(&self, repository: &str, reference: &str, media_type: &str, bytes: &[u8]) -> String {
        let path = format!("/v2/{repository}/manifests/{reference}");
        let (status, _, body) = self.exchange("PUT", &path, &[("Content-Type", media_type)], bytes);
        assert_eq!(status, 201, "manifest upload: {}", String::from_utf8_lossy(&body));
        sha256(bytes)
    }

    /// The image index at `reference`, if there is one.
    pub fn index(&self, repository: &str, reference: &str) -> Option<Vec<u8>> {
        let path = format!("/v2/{repository}/manifests/{reference}");
        let (status, _, body) = self.exchange("GET", &path, &[("Accept", INDEX)], b"");
        (status == 200).then_some(body)
    }

    /// The manifest at `reference`, as the registry serves it.
    pub fn manifest(&self, repository: &str, reference: &str) -> Vec<u8> {
        let path = format!("/v2/{repository}/manifests/{reference}");
        let accept = [("Accept", quiver::load::oci::layout::MANIFEST)];
        let (status, _, body) = self.exchange("GET", &path, &accept, b"");
        assert_eq!(status, 200, "manifest: {}", String::from_utf8_lossy(&body));
        body
    }

    /// One request on its own connection: the status, headers and body.
    fn exchange(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String, Vec<u8>) {
        let mut stream = TcpStream::connect(self.addr).expect("connect to the registry");
        let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n", self.addr);
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        stream.write_all(request.as_bytes()).and_then(|()| stream.write_all(body)).expect("send");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).expect("read the answer");
        let split = answer.windows(4).position(|w| w == b"\r\n\r\n").expect("an HTTP answer");
        let head = String::from_utf8_lossy(&answer[..split]).into_owned();
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status");
        let mut body = answer[split + 4..].to_vec();
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
            body = unchunk(&body);
        }
        (status, head, body)
    }
}

/// The body of a chunked answer.
fn unchunk(mut bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = bytes.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&bytes[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.extend_from_slice(&bytes[end + 2..end + 2 + size]);
        bytes = &bytes[end + 4 + size..];
    }
    out
}

/// A cosign key pair made here (cosign itself cannot be installed): ECDSA
/// P-256, its public half written as `cosign generate-key-pair` writes
/// `cosign.pub`, signing as `cosign sign --key` does.
pub struct CosignKey {
    pair: ring::signature::EcdsaKeyPair,
}

impl Default for CosignKey {
    fn default() -> Self {
        Self::new()
    }
}

impl CosignKey {
    /// A fresh key pair.
    pub fn new() -> CosignKey {
        use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair};
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        CosignKey { pair: EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng).unwrap() }
    }

    /// The public key in PEM, as `cosign.pub`.
    pub fn public_pem(&self) -> String {
        use base64::Engine as _;
        use ring::signature::KeyPair as _;
        let spki = quiver::load::oci::signature::PublicKey::spki_of(self.pair.public_key().as_ref());
        let body = base64::engine::general_purpose::STANDARD.encode(spki);
        let lines: Vec<&str> = body.as_bytes().chunks(64).map(|c| std::str::from_utf8(c).unwrap()).collect();
        format!("-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n", lines.join("\n"))
    }

    /// Sign the manifest `digest` of `repository` as cosign does: a simple
    /// signing payload naming it, pushed with its signature under the
    /// `sha256-HEX.sig` tag.
    pub fn sign(&self, registry: &OciRegistry, repository: &str, digest: &str) {
        use base64::Engine as _;
        let payload = serde_json::to_vec(&serde_json::json!({
            "critical": {
                "identity": {"docker-reference": registry.repo(repository)},
                "image": {"docker-manifest-digest": digest},
                "type": "cosign container image signature",
            },
            "optional": null,
        }))
        .unwrap();
        let signature = self.pair.sign(&ring::rand::SystemRandom::new(), &payload).unwrap();
        let config = br#"{"architecture":"","os":"","config":{},"rootfs":{"type":"layers","diff_ids":[]}}"#;
        let manifest = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": quiver::load::oci::layout::MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": registry.put_blob(repository, config), "size": config.len()},
            "layers": [{
                "mediaType": quiver::load::oci::signature::SIMPLE_SIGNING,
                "digest": registry.put_blob(repository, &payload),
                "size": payload.len(),
                "annotations": {"dev.cosignproject.cosign/signature":
                    base64::engine::general_purpose::STANDARD.encode(signature.as_ref())},
            }],
        }))
        .unwrap();
        let tag = quiver::load::oci::signature::sig_tag(digest);
        registry.put_manifest(repository, &tag, quiver::load::oci::layout::MANIFEST, &manifest);
    }
}

/// What a Sigstore bundle made by [`CosignKey::bundle`] holds.
pub enum BundleContent<'a> {
    /// `cosign sign --key` (cosign 3): a DSSE envelope around an in-toto
    /// statement of `predicate_type` whose subject is `subject`.
    Statement {
        /// The signed manifest's digest.
        subject: &'a str,
        /// What the statement says of it.
        predicate_type: &'a str,
    },
    /// A message signature of the manifest's bytes.
    MessageSignature,
}

impl CosignKey {
    /// A Sigstore bundle (v0.3) signing the manifest `manifest` of
    /// `repository`, as cosign writes it with a key: the key's hint as the
    /// verification material, no transparency-log entry (`--tlog-upload=false`).
    pub fn bundle(&self, registry: &OciRegistry, repository: &str, manifest: &str, content: BundleContent) -> Vec<u8> {
        use base64::Engine as _;
        use quiver::load::oci::bundle::{BUNDLE, IN_TOTO, STATEMENTS, pae};
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        let rng = ring::rand::SystemRandom::new();
        let material = serde_json::json!({"publicKey": {"hint": b64(b"quiver-tests")}, "tlogEntries": []});
        let bundle = match content {
            BundleContent::Statement { subject, predicate_type } => {
                let hex = subject.strip_prefix("sha256:").expect("a sha256 digest");
                let statement = serde_json::json!({
                    "_type": STATEMENTS[0],
                    "subject": [{"digest": {"sha256": hex}, "annotations": {}}],
                    "predicateType": predicate_type,
                    "predicate": {},
                });
                let payload = serde_json::to_vec(&statement).unwrap();
                let sig = self.pair.sign(&rng, &pae(IN_TOTO, &payload)).unwrap();
                serde_json::json!({"mediaType": BUNDLE, "verificationMaterial": material, "dsseEnvelope": {
                    "payload": b64(&payload), "payloadType": IN_TOTO,
                    "signatures": [{"sig": b64(sig.as_ref()), "keyid": ""}]}})
            }
            BundleContent::MessageSignature => {
                let bytes = registry.manifest(repository, manifest);
                let hash = ring::digest::digest(&ring::digest::SHA256, &bytes);
                let sig = self.pair.sign(&rng, &bytes).unwrap();
                serde_json::json!({"mediaType": BUNDLE, "verificationMaterial": material, "messageSignature": {
                    "messageDigest": {"algorithm": "SHA2_256", "digest": b64(hash.as_ref())},
                    "signature": b64(sig.as_ref())}})
            }
        };
        serde_json::to_vec(&bundle).unwrap()
    }
}

impl OciRegistry {
    /// Attach `bundle` to the manifest `subject` of `repository` as cosign
    /// does on a registry without the referrers API: a referrer manifest
    /// (the bundle's type as `artifactType`, an empty config, the bundle
    /// as its one layer, `subject` naming the signed manifest) put by
    /// digest, and listed in the image index tagged `sha256-HEX` (the
    /// referrers tag schema). The referrer's digest.
    pub fn attach_bundle(&self, repository: &str, subject: &str, bundle: &[u8]) -> String {
        use quiver::load::oci::bundle::BUNDLE;
        use quiver::load::oci::layout::MANIFEST;
        let signed = self.manifest(repository, subject);
        let empty = b"{}";
        let referrer = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST,
            "artifactType": BUNDLE,
            "config": {"mediaType": "application/vnd.oci.empty.v1+json",
                       "digest": self.put_blob(repository, empty), "size": empty.len()},
            "layers": [{"mediaType": BUNDLE, "digest": self.put_blob(repository, bundle), "size": bundle.len()}],
            "subject": {"mediaType": MANIFEST, "digest": subject, "size": signed.len()},
            "annotations": {"dev.sigstore.bundle.content": "dsse-envelope",
                            "org.opencontainers.image.created": "2026-11-29T00:00:00Z"},
        }))
        .unwrap();
        let digest = sha256(&referrer);
        self.put_manifest(repository, &digest, MANIFEST, &referrer);
        let tag = subject.replacen(':', "-", 1);
        let mut index: serde_json::Value = self
            .index(repository, &tag)
            .map(|bytes| serde_json::from_slice(&bytes).unwrap())
            .unwrap_or_else(|| serde_json::json!({"schemaVersion": 2, "mediaType": INDEX, "manifests": []}));
        index["manifests"].as_array_mut().unwrap().push(serde_json::json!({
            "mediaType": MANIFEST, "digest": digest, "size": referrer.len(), "artifactType": BUNDLE,
            "annotations": {"dev.sigstore.bundle.content": "dsse-envelope"},
        }));
        self.put_manifest(repository, &tag, INDEX, &serde_json::to_vec(&index).unwrap());
        digest
    }
}
