//! Plugins from OCI registries (issue 36), against Debian's real
//! `docker-registry` on loopback: published, pinned by digest, pulled in
//! the background into the content-addressed store, and served from it;
//! a blob that is not what its digest says is refused at the pull and at
//! the scan; a registry gone after the pull costs nothing.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use quiver::load::oci::layout::{MANIFEST, OLDER_LAYERS, POLICY_LAYER, WASM_CONFIG, WASM_LAYER};
use quiver::load::oci::{Phase, Registry};
use quiver_tests::TestHost;
use quiver_tests::builds;
use quiver_tests::registry::{OciRegistry, sha256};

async fn build_of(host: &quiver::Host) -> quiver::Result<String> {
    let out = host.call("versioned", "build", "{}").await?;
    Ok(out["build"].as_str().expect("a build marker").to_owned())
}

/// Push `wasm` to `repo:tag` with Quiver's own client; the manifest digest.
async fn push(registry: &OciRegistry, repository: &str, wasm: &[u8]) -> String {
    let client = Registry::new(vec![registry.addr.to_string()]).unwrap();
    let reference = format!("{}:v1", registry.repo(repository)).parse().unwrap();
    client.push(&reference, &oci_client_anonymous(), wasm).await.unwrap()
}

fn oci_client_anonymous() -> quiver::load::oci::source::RegistryAuth {
    quiver::load::oci::source::RegistryAuth::Anonymous
}

fn entry(reference: &str) -> String {
    format!("[[oci]]\nref = \"{reference}\"\ninsecure = true\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pushed_component_is_pulled_by_digest_and_outlives_its_registry() {
    let mut registry = OciRegistry::start();
    let digest = push(&registry, "tools/versioned", &builds::versioned(1)).await;
    // What `quiver push` prints is the digest the registry serves the manifest under.
    assert_eq!(sha256(&registry.manifest("tools/versioned", "v1")), digest);
    let pinned = format!("{}@{digest}", registry.repo("tools/versioned"));

    let cache = tempfile::tempdir().unwrap();
    let t = TestHost::builder().cache_dir(cache.path()).config(&entry(&pinned)).build();
    assert_eq!(build_of(&t.host).await.unwrap(), "gen-0001");
    let status = t.host.status();
    let [oci] = status.oci.as_slice() else { panic!("{:?}", status.oci) };
    assert_eq!((oci.state, oci.attempts, oci.digest.as_deref()), (Phase::Stored, 1, Some(digest.as_str())));
    let component = oci.component.clone().unwrap();
    assert!(component.starts_with(&cache.path().join("oci/sha256").display().to_string()), "{component}");
    assert_eq!(std::fs::read(&component).unwrap(), builds::versioned(1));
    assert!(status.plugins.iter().any(|p| p.name == "versioned" && p.origin == component));
    drop(t);

    // The registry goes away: the store serves, with no pull at all.
    registry.stop();
    let t = TestHost::builder().cache_dir(cache.path()).config(&entry(&pinned)).build();
    let status = t.host.status();
    assert_eq!((status.oci[0].state, status.oci[0].attempts), (Phase::Stored, 0));
    assert_eq!(build_of(&t.host).await.unwrap(), "gen-0001");
}

/// A loopback proxy to `to` that holds every connection until released:
/// a registry as slow as the test wants.
fn gated_proxy(to: std::net::SocketAddr) -> (String, std::sync::mpsc::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (release, released) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut open = false;
        for client in listener.incoming() {
            let Ok(client) = client else { continue };
            if !open {
                let _ = released.recv();
                open = true;
            }
            let Ok(server) = TcpStream::connect(to) else { continue };
            for (mut from, mut into) in [(client.try_clone().unwrap(), server.try_clone().unwrap()), (server, client)] {
                std::thread::spawn(move || {
                    let mut buffer = [0u8; 16 << 10];
                    while let Ok(n @ 1..) = from.read(&mut buffer) {
                        if into.write_all(&buffer[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = into.shutdown(std::net::Shutdown::Write);
                });
            }
        }
    });
    (addr, release)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_to_a_plugin_being_pulled_waits_for_its_pull() {
    let registry = OciRegistry::start();
    let digest = push(&registry, "tools/versioned", &builds::versioned(2)).await;
    let (proxy, release) = gated_proxy(registry.addr);
    let t = TestHost::builder().config(&entry(&format!("{proxy}/tools/versioned@{digest}"))).build();
    let host = t.host.clone();
    let call = tokio::spawn(async move { build_of(&host).await });
    // And as a model calls, through a session (the MCP and REST faces' path).
    let mut session = t.host.open_session(None).unwrap();
    let modelled = tokio::spawn(async move { session.call("versioned__build", serde_json::json!({})).await });
    // Serving goes on (Tier 1 does not wait) while the call waits.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(t.host.catalog().get("versioned").is_none());
    assert_eq!(t.host.status().oci[0].state, Phase::Pulling);
    assert!(!call.is_finished(), "a call naming a plugin being pulled must wait for it: {:?}", call.await);
    assert!(!modelled.is_finished(), "a session's call waits too: {:?}", modelled.await.unwrap().text);
    release.send(()).unwrap();
    assert_eq!(call.await.unwrap().unwrap(), "gen-0002");
    let outcome = modelled.await.unwrap();
    assert!(!outcome.is_error && outcome.text.contains("gen-0002"), "{}", outcome.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blob_that_is_not_its_digest_is_refused_at_the_pull_and_at_the_scan() {
    let registry = OciRegistry::start();
    let wasm = builds::versioned(3);
    let digest = push(&registry, "tools/versioned", &wasm).await;
    let pinned = format!("{}@{digest}", registry.repo("tools/versioned"));

    // Tampered in the registry's own storage: same length, other bytes.
    let blob = registry.blob_file(&sha256(&wasm));
    let good = std::fs::read(&blob).unwrap();
    std::fs::write(&blob, builds::versioned(4)).unwrap();
    let t = TestHost::builder().config(&entry(&pinned)).build();
    t.host.settled().await;
    let status = t.host.status();
    assert_eq!(status.oci[0].state, Phase::Failed);
    let reason = status.oci[0].reason.clone().unwrap();
    // (oci-client checks the digest as the blob streams in, before Quiver's own check.)
    assert!(reason.contains("digest") && reason.contains(&sha256(&wasm)), "{reason}");
    assert!(status.rejected.iter().any(|r| r.origin.starts_with("[[oci]]") && r.reason.contains("digest")));
    assert!(!t.cache.path().join("oci/sha256").join(format!("{}.wasm", &sha256(&wasm)[7..])).exists());
    let error = build_of(&t.host).await.unwrap_err();
    assert_eq!(error.kind(), quiver::ErrorKind::UnknownPlugin, "{error}");

    // Restored, pulled into a store; then the stored copy is changed on
    // disk: the scan compares it with its digest and does not serve it.
    std::fs::write(&blob, good).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let t = TestHost::builder().cache_dir(cache.path()).config(&entry(&pinned)).build();
    assert_eq!(build_of(&t.host).await.unwrap(), "gen-0003");
    let stored = t.host.status().oci[0].component.clone().unwrap();
    drop(t);
    std::fs::write(&stored, builds::versioned(4)).unwrap();
    let t = TestHost::builder().cache_dir(cache.path()).config(&entry(&pinned)).build();
    let rejected = t.host.status().rejected;
    let refusal = rejected.iter().find(|r| r.origin.starts_with("[[oci]]")).expect("the stored copy is refused");
    assert!(refusal.reason.contains("does not have the digest its manifest names"), "{}", refusal.reason);
    assert!(build_of(&t.host).await.is_err());
}

/// Publish `wasm` as another tool lays it out: `config` of `config_type`,
/// the component layer of `layer_type`, and optionally a policy layer.
fn publish_as(
    registry: &OciRegistry,
    repository: &str,
    (config_type, config): (&str, &[u8]),
    layer_type: &str,
    wasm: &[u8],
    policy: Option<&[u8]>,
) -> String {
    let descriptor = |media_type: &str, bytes: &[u8]| serde_json::json!({"mediaType": media_type, "digest": registry.put_blob(repository, bytes), "size": bytes.len()});
    let mut layers = vec![descriptor(layer_type, wasm)];
    layers.extend(policy.map(|p| descriptor(POLICY_LAYER, p)));
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": descriptor(config_type, config),
        "layers": layers,
    }))
    .unwrap();
    registry.put_manifest(repository, "v1", MANIFEST, &manifest)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifacts_laid_out_by_other_tools_are_served_and_others_refused_with_why() {
    let registry = OciRegistry::start();
    // As `wkg` writes it (the CNCF layout: its config names the layer).
    let wasm = builds::versioned(5);
    let config = serde_json::to_vec(&serde_json::json!({
        "created": "2026-11-29T00:00:00Z", "architecture": "wasm", "os": "wasip2",
        "layerDigests": [sha256(&wasm)],
        "component": {"exports": ["quiver:plugin/tool@0.1.0"], "imports": [], "target": null},
    }))
    .unwrap();
    let wkg = publish_as(&registry, "wkg/versioned", (WASM_CONFIG, &config), WASM_LAYER, &wasm, None);
    let t = TestHost::builder().config(&entry(&format!("{}@{wkg}", registry.repo("wkg/versioned")))).build();
    assert_eq!(build_of(&t.host).await.unwrap(), "gen-0005");

    // As older tools write it (Wassette reads these): another layer type,
    // an empty config, and a policy layer kept beside the component.
    let wasm = builds::versioned(6);
    let policy = b"version: \"1.0\"\npermissions:\n  network:\n    allow:\n      - host: api.example.com\n";
    let older = ("application/vnd.oci.empty.v1+json", &b"{}"[..]);
    let digest = publish_as(&registry, "older/versioned", older, OLDER_LAYERS[1], &wasm, Some(policy));
    let t = TestHost::builder().config(&entry(&format!("{}@{digest}", registry.repo("older/versioned")))).build();
    assert_eq!(build_of(&t.host).await.unwrap(), "gen-0006");
    let component = std::path::PathBuf::from(t.host.status().oci[0].component.clone().unwrap());
    assert_eq!(std::fs::read(component.with_extension("policy.yaml")).unwrap(), policy);

    // A container image is not a component: refused, naming what it holds.
    let tar = ("application/vnd.oci.image.config.v1+json", &b"{}"[..]);
    let image = publish_as(&registry, "images/app", tar, "application/vnd.oci.image.layer.v1.tar+gzip", b"x", None);
    let t = TestHost::builder().config(&entry(&format!("{}@{image}", registry.repo("images/app")))).build();
    t.host.settled().await;
    let reason = t.host.status().oci[0].reason.clone().unwrap();
    assert!(reason.contains("application/vnd.oci.image.layer.v1.tar+gzip") && reason.contains("neither"), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tag_is_served_only_once_the_lock_file_pins_it() {
    let registry = OciRegistry::start();
    let digest = push(&registry, "tools/versioned", &builds::versioned(7)).await;
    let tag = format!("{}:v1", registry.repo("tools/versioned"));
    let t = TestHost::builder().config(&entry(&tag)).build();
    let status = t.host.status();
    assert_eq!((status.oci[0].state, status.oci[0].attempts), (Phase::Failed, 0), "a tag is never pulled as it is");
    assert!(status.oci[0].reason.as_deref().unwrap().contains("quiver oci resolve"));

    // The lock file beside the configuration pins it (as `quiver oci resolve` writes it).
    let client = Registry::new(vec![registry.addr.to_string()]).unwrap();
    let resolved = client.resolve(&tag.parse().unwrap(), &oci_client_anonymous()).await.unwrap();
    assert_eq!(resolved, digest);
    let lock = quiver::load::oci::OciLock { pins: [(tag.clone(), resolved)].into() };
    let plugins = tempfile::tempdir().unwrap();
    lock.write(&plugins.path().join("quiver.lock")).unwrap();
    let config = format!("oci_lock = \"{}\"\n{}", plugins.path().join("quiver.lock").display(), entry(&tag));
    let t = TestHost::builder().config(&config).build();
    assert_eq!(build_of(&t.host).await.unwrap(), "gen-0007");
    assert_eq!(t.host.status().oci[0].digest.as_deref(), Some(digest.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_wants_credentials_gets_them_from_a_docker_config_and_never_sees_them_shown() {
    const PASSWORD: &str = "pa55-word-never-shown";
    let registry = OciRegistry::with_user("ci", PASSWORD);
    let client = Registry::new(vec![registry.addr.to_string()]).unwrap();
    let reference = format!("{}:v1", registry.repo("private/versioned")).parse().unwrap();
    let basic = quiver::load::oci::source::RegistryAuth::Basic("ci".into(), PASSWORD.into());
    let anonymous = client.push(&reference, &oci_client_anonymous(), &builds::versioned(8)).await;
    assert!(anonymous.is_err(), "the registry refuses anonymous pushes");
    // (A client keeps the first credentials it is given for a registry.)
    let client = Registry::new(vec![registry.addr.to_string()]).unwrap();
    let digest = client.push(&reference, &basic, &builds::versioned(8)).await.unwrap();
    let pinned = format!("{}@{digest}", registry.repo("private/versioned"));

    // No credentials: refused by the registry, and said so.
    let t = TestHost::builder().config(&entry(&pinned)).build();
    t.host.settled().await;
    let reason = t.host.status().oci[0].reason.clone().unwrap();
    assert!(reason.to_lowercase().contains("not authorized"), "{reason}");

    // A docker config.json's `auths` entry for the registry.
    let dir = tempfile::tempdir().unwrap();
    let config_json = dir.path().join("config.json");
    let encoded = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, format!("ci:{PASSWORD}"));
    std::fs::write(&config_json, format!(r#"{{"auths":{{"{}":{{"auth":"{encoded}"}}}}}}"#, registry.addr)).unwrap();
    let config = format!("{}docker_config = \"{}\"\n", entry(&pinned), config_json.display());
    let t = TestHost::builder().config(&config).build();
    assert_eq!(build_of(&t.host).await.unwrap(), "gen-0008");
    let shown = serde_json::to_string(&t.host.status()).unwrap();
    assert!(!shown.contains(PASSWORD) && !shown.contains(&encoded), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_component_signed_with_the_configured_key_is_served() {
    use quiver_tests::registry::CosignKey;
    let registry = OciRegistry::start();
    let (acme, mallory) = (CosignKey::new(), CosignKey::new());
    let keys = tempfile::tempdir().unwrap();
    std::fs::write(keys.path().join("acme.pub"), acme.public_pem()).unwrap();
    std::fs::write(keys.path().join("mallory.pub"), mallory.public_pem()).unwrap();
    let signed_entry = |digest: &str, key: &str| {
        let at = registry.repo("tools/versioned");
        format!("{}key = \"{}\"\n", entry(&format!("{at}@{digest}")), keys.path().join(key).display())
    };
    let state = |t: &TestHost| {
        let status = t.host.status();
        (status.oci[0].state, status.oci[0].signed, status.oci[0].reason.clone().unwrap_or_default())
    };

    // Unsigned: refused, nothing stored, nothing served.
    let unsigned = push(&registry, "tools/versioned", &builds::versioned(9)).await;
    let t = TestHost::builder().config(&signed_entry(&unsigned, "acme.pub")).build();
    t.host.settled().await;
    let (phase, signed, reason) = state(&t);
    assert_eq!((phase, signed), (Phase::Failed, false));
    assert!(reason.contains("no cosign signature") && reason.contains(".sig"), "{reason}");
    assert!(build_of(&t.host).await.is_err());

    // Signed by another key: refused.
    mallory.sign(&registry, "tools/versioned", &unsigned);
    let t = TestHost::builder().config(&signed_entry(&unsigned, "acme.pub")).build();
    t.host.settled().await;
    let (phase, _, reason) = state(&t);
    assert_eq!(phase, Phase::Failed);
    assert!(reason.contains("does not verify with the configured key"), "{reason}");

    // A signature of another manifest, moved under this one's tag: refused.
    let other = push(&registry, "tools/other", &builds::versioned(10)).await;
    acme.sign(&registry, "tools/versioned", &other);
    let moved = registry.manifest("tools/versioned", &quiver::load::oci::signature::sig_tag(&other));
    registry.put_manifest("tools/versioned", &quiver::load::oci::signature::sig_tag(&unsigned), MANIFEST, &moved);
    let t = TestHost::builder().config(&signed_entry(&unsigned, "acme.pub")).build();
    t.host.settled().await;
    assert!(state(&t).2.contains("of another manifest"), "{}", state(&t).2);

    // Signed with the configured key: served, and said so.
    acme.sign(&registry, "tools/versioned", &unsigned);
    let cache = tempfile::tempdir().unwrap();
    let t = TestHost::builder().cache_dir(cache.path()).config(&signed_entry(&unsigned, "acme.pub")).build();
    assert_eq!(build_of(&t.host).await.unwrap(), "gen-0009");
    assert_eq!(state(&t).0, Phase::Stored);
    assert!(state(&t).1, "the status says it was verified");
    drop(t);

    // From the store, the kept signature is verified again at every start:
    // with the same key it serves with no network; with another key it is
    // pulled again, and that key's check refuses it.
    let t = TestHost::builder().cache_dir(cache.path()).config(&signed_entry(&unsigned, "acme.pub")).build();
    assert_eq!((t.host.status().oci[0].state, t.host.status().oci[0].attempts), (Phase::Stored, 0));
    drop(t);
    let t = TestHost::builder().cache_dir(cache.path()).config(&signed_entry(&unsigned, "mallory.pub")).build();
    t.host.settled().await;
    let (phase, _, reason) = state(&t);
    assert_eq!(phase, Phase::Failed, "a key change takes back what the old key allowed");
    assert!(reason.contains("does not verify"), "{reason}");
    assert!(build_of(&t.host).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigstore_bundle_among_the_referrers_signs_a_component_and_nothing_else_does() {
    use quiver::load::oci::bundle::SIGN_PREDICATE;
    use quiver_tests::registry::{BundleContent, CosignKey};
    fn signature(subject: &str) -> BundleContent<'_> {
        BundleContent::Statement { subject, predicate_type: SIGN_PREDICATE }
    }
    let registry = OciRegistry::start();
    let (acme, mallory) = (CosignKey::new(), CosignKey::new());
    let keys = tempfile::tempdir().unwrap();
    std::fs::write(keys.path().join("acme.pub"), acme.public_pem()).unwrap();
    let entry_for = |repository: &str, digest: &str| {
        let pinned = format!("{}@{digest}", registry.repo(repository));
        format!("{}key = \"{}\"\n", entry(&pinned), keys.path().join("acme.pub").display())
    };
    let outcome = |config: &str, cache: Option<&std::path::Path>| {
        let mut builder = TestHost::builder().config(config);
        if let Some(cache) = cache {
            builder = builder.cache_dir(cache);
        }
        builder.build()
    };

    // Signed by the configured key as `cosign sign --key` does today (no
    // `.sig` tag at all): found through the referrers tag schema, served.
    let signed = push(&registry, "tools/signed", &builds::versioned(11)).await;
    registry.attach_bundle(
        "tools/signed",
        &signed,
        &acme.bundle(&registry, "tools/signed", &signed, signature(&signed)),
    );
    let cache = tempfile::tempdir().unwrap();
    let t = outcome(&entry_for("tools/signed", &signed), Some(cache.path()));
    assert_eq!(build_of(&t.host).await.unwrap(), "gen-0011");
    let oci = t.host.status().oci[0].clone();
    assert_eq!((oci.state, oci.signed, oci.signature), (Phase::Stored, true, Some("bundle")));
    drop(t);
    // From the store: the kept bundle verifies again, with no pull.
    let t = outcome(&entry_for("tools/signed", &signed), Some(cache.path()));
    let oci = t.host.status().oci[0].clone();
    assert_eq!((oci.state, oci.attempts, oci.signature), (Phase::Stored, 0, Some("bundle")));
    drop(t);

    // A message signature of the manifest's bytes: served too.
    let message = push(&registry, "tools/message", &builds::versioned(12)).await;
    let bundle = acme.bundle(&registry, "tools/message", &message, BundleContent::MessageSignature);
    registry.attach_bundle("tools/message", &message, &bundle);
    let t = outcome(&entry_for("tools/message", &message), None);
    assert_eq!(build_of(&t.host).await.unwrap(), "gen-0012");

    // Refused, each with its reason, and nothing served: another key's
    // bundle; the configured key's attestation of provenance (not a
    // signature); and its valid bundle of another manifest, copied among
    // this one's referrers.
    let refused = [
        ("another key", "does not verify with the configured key"),
        ("provenance", "not a signature"),
        ("moved", "of another manifest"),
    ];
    for (i, (case, expected)) in refused.into_iter().enumerate() {
        let repository = format!("tools/refused-{i}");
        let digest = push(&registry, &repository, &builds::versioned(20 + i as u32)).await;
        let bundle = match case {
            "another key" => mallory.bundle(&registry, &repository, &digest, signature(&digest)),
            "provenance" => acme.bundle(
                &registry,
                &repository,
                &digest,
                BundleContent::Statement { subject: &digest, predicate_type: "https://slsa.dev/provenance/v1" },
            ),
            _ => acme.bundle(&registry, &repository, &digest, signature(&signed)),
        };
        registry.attach_bundle(&repository, &digest, &bundle);
        let t = outcome(&entry_for(&repository, &digest), None);
        t.host.settled().await;
        let oci = t.host.status().oci[0].clone();
        let reason = oci.reason.unwrap_or_default();
        assert_eq!((oci.state, oci.signed), (Phase::Failed, false), "{case}: {reason}");
        assert!(reason.contains(expected) && reason.contains("Sigstore bundle"), "{case}: {reason}");
        assert!(build_of(&t.host).await.is_err(), "{case} was served");
    }
}
