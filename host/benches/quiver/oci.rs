//! Plugins from an OCI registry (`load::oci`), against Debian's
//! `docker-registry` on loopback: publishing a component, pulling it into
//! an empty store (manifest, config and layer fetched, each checked against
//! its digest as it streams, written whole), finding it stored at the next
//! start (no network), and a host listing it from the store (its bytes
//! hashed again against the digest its manifest names).

use std::fmt::Write as _;

use quiver::Host;
use quiver::load::oci::bundle::SIGN_PREDICATE;
use quiver::load::oci::source::RegistryAuth;
use quiver::load::oci::{OciLock, Pulls, RawOci, Registry, Store};
use quiver_tests::registry::{BundleContent, OciRegistry};

use crate::{Options, Stats, ms, time};

pub(crate) fn section(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Plugins from an OCI registry\n").unwrap();
    writeln!(
        report,
        "Debian's `docker-registry` 2.8 on loopback (plain HTTP, no credentials), so the figures are the \
         client's and the disk's, not a network's. Push: `quiver push`'s work (two blobs and a manifest). \
         Pull: one `[[oci]]` entry into an empty store (manifest by digest, the Wasm config and the component \
         checked against their digests as they stream in, written whole and renamed). Stored: the same entry \
         found in the store at start (the manifest read and hashed, the component's size checked; no network). \
         Listed: a host built over that store (the scan reads the component, hashes it against the digest \
         its manifest names and reads its stub; nothing is compiled). Signed: the same with a cosign key \
         configured, signed in cosign's classic form (`.sig`: a simple signing payload, ECDSA P-256; \
         two requests find no Sigstore bundle first, two more fetch the `.sig` manifest and payload) or \
         as cosign 3 signs (bundle: a DSSE envelope; the referrers API answers 404, then the tag-schema \
         index, the referrer manifest and the bundle), verified at the pull, and again from the store at \
         start. Medians of {} runs.\n",
        options.reps(20)
    )
    .unwrap();
    writeln!(
        report,
        "| component | size (KiB) | push (ms) | pull (ms) | stored, at start (ms) | listed from the store (ms) | \
         `.sig`: pull (ms) | `.sig`: stored, at start (ms) | bundle: pull (ms) | bundle: stored, at start (ms) |"
    )
    .unwrap();
    writeln!(report, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|").unwrap();
    let signer = quiver_tests::registry::CosignKey::new();
    let keys = tempfile::tempdir().unwrap();
    std::fs::write(keys.path().join("cosign.pub"), signer.public_pem()).unwrap();
    let registry = OciRegistry::start();
    let components = [
        ("Rust (the `versioned` fixture)", quiver_tests::builds::versioned(1)),
        ("JavaScript (componentize-js)", std::fs::read(quiver_tests::guests::plain_js()).unwrap()),
        ("Python (componentize-py)", std::fs::read(quiver_tests::guests::plain_python()).unwrap()),
    ];
    for (i, (language, wasm)) in components.into_iter().enumerate() {
        let reference = format!("{}:v{i}", registry.repo("bench/component"));
        let client = Registry::new(vec![registry.addr.to_string()]).unwrap();
        let mut digest = String::new();
        let push: Vec<_> = (0..options.reps(20))
            .map(|_| {
                let (pushed, elapsed) = time(|| {
                    runtime.block_on(client.push(&reference.parse().unwrap(), &RegistryAuth::Anonymous, &wasm))
                });
                digest = pushed.unwrap();
                elapsed
            })
            .collect();
        let entry = RawOci {
            reference: format!("{}@{digest}", registry.repo("bench/component")),
            insecure: true,
            username: None,
            password_env: None,
            docker_config: None,
            key: None,
        };
        // The store a host uses is `cache_dir/oci`.
        let cache = tempfile::tempdir().unwrap();
        let root = cache.path().join("oci");
        let pulls = |root: &std::path::Path| {
            Pulls::new(std::slice::from_ref(&entry), Ok(OciLock::default()), Some(Store::new(root.to_owned())), 1 << 30)
        };
        let pull: Vec<_> = (0..options.reps(20))
            .map(|_| {
                let empty = tempfile::tempdir().unwrap();
                let (stored, elapsed) = time(|| runtime.block_on(pulls(empty.path()).pull(0)));
                assert!(stored, "{language} is pulled");
                elapsed
            })
            .collect();
        assert!(runtime.block_on(pulls(&root).pull(0)));
        let found: Vec<_> = (0..options.reps(50))
            .map(|_| {
                let (pulls, elapsed) = time(|| pulls(&root));
                assert_eq!(pulls.unstored(), Vec::<usize>::new(), "found in the store");
                elapsed
            })
            .collect();
        signer.sign(&registry, "bench/component", &digest);
        let key = Some(keys.path().join("cosign.pub"));
        let signed = RawOci { key: key.clone(), ..entry.clone() };
        let (signed_pull, signed_found) = signed_figures(options, runtime, &signed, &cache.path().join("signed"));
        // The same component signed as cosign 3 signs: a Sigstore bundle
        // among its referrers (the tag schema here), no `.sig` tag.
        let bundled_reference = format!("{}:v{i}", registry.repo("bench/bundled"));
        let bundled_digest = runtime
            .block_on(client.push(&bundled_reference.parse().unwrap(), &RegistryAuth::Anonymous, &wasm))
            .unwrap();
        let statement = BundleContent::Statement { subject: &bundled_digest, predicate_type: SIGN_PREDICATE };
        let bundle = signer.bundle(&registry, "bench/bundled", &bundled_digest, statement);
        registry.attach_bundle("bench/bundled", &bundled_digest, &bundle);
        let bundled =
            RawOci { reference: format!("{}@{bundled_digest}", registry.repo("bench/bundled")), key, ..entry.clone() };
        let (bundle_pull, bundle_found) = signed_figures(options, runtime, &bundled, &cache.path().join("bundled"));
        let config = format!("[[oci]]\nref = \"{}\"\ninsecure = true\n", entry.reference);
        let listed: Vec<_> = (0..options.reps(20))
            .map(|_| {
                let config = quiver::Config::parse(&config, cache.path()).unwrap();
                let (host, elapsed) = time(|| {
                    let _entered = runtime.enter();
                    Host::builder().config(config).cache_dir(Some(cache.path().to_owned())).build().unwrap()
                });
                assert_eq!(host.status().oci[0].state, quiver::load::oci::Phase::Stored);
                elapsed
            })
            .collect();
        writeln!(
            report,
            "| {language} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            wasm.len() / 1024,
            ms(Stats::new(push).median()),
            ms(Stats::new(pull).median()),
            ms(Stats::new(found).median()),
            ms(Stats::new(listed).median()),
            ms(Stats::new(signed_pull).median()),
            ms(Stats::new(signed_found).median()),
            ms(Stats::new(bundle_pull).median()),
            ms(Stats::new(bundle_found).median()),
        )
        .unwrap();
        eprintln!("measured {language}");
    }
    writeln!(report).unwrap();
}

/// Pulls of the signed `entry` into empty stores, and finds of it in the
/// store at `root` (its kept signature verified again): their times.
fn signed_figures(
    options: &Options,
    runtime: &tokio::runtime::Runtime,
    entry: &RawOci,
    root: &std::path::Path,
) -> (Vec<std::time::Duration>, Vec<std::time::Duration>) {
    let pulls = |root: &std::path::Path| {
        Pulls::new(std::slice::from_ref(entry), Ok(OciLock::default()), Some(Store::new(root.to_owned())), 1 << 30)
    };
    let pull = (0..options.reps(20))
        .map(|_| {
            let empty = tempfile::tempdir().unwrap();
            let (stored, elapsed) = time(|| runtime.block_on(pulls(empty.path()).pull(0)));
            assert!(stored, "{} is pulled, signed", entry.reference);
            elapsed
        })
        .collect();
    assert!(runtime.block_on(pulls(root).pull(0)));
    let found = (0..options.reps(50))
        .map(|_| {
            let (pulls, elapsed) = time(|| pulls(root));
            assert_eq!(pulls.unstored(), Vec::<usize>::new(), "found in the store, its signature verified");
            elapsed
        })
        .collect();
    (pull, found)
}
