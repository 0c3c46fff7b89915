//! `quiver push` and `quiver oci …`: components to and from OCI registries.

use std::path::Path;
use std::process::ExitCode;

use quiver::load::oci::{OciLock, RawOci, Registry};
use quiver::{Config, Error, Result};

use crate::output::shown;

/// The `oci` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum OciCommand {
    /// Resolve every `[[oci]]` tag to the digest it names now and write them into the lock
    /// file (`oci_lock`, default quiver.lock beside the config), which every replica reads:
    /// a tag is never resolved by a serving host.
    Resolve,
    /// Pull every `[[oci]]` artifact the store lacks now, compile it into the compile cache,
    /// and print where each one is (exit 1 if one cannot be served): for an init container,
    /// or before going offline.
    Pull,
    /// Remove from the store (`CACHE/oci`) every artifact no `[[oci]]` entry is pinned to now,
    /// and print what went. Run it once every replica sharing the store serves the new
    /// configuration.
    Gc,
}

/// The `oci` subcommands that run on a host.
pub(crate) async fn with_host(command: OciCommand, host: &quiver::Host) -> Result<ExitCode> {
    match command {
        OciCommand::Pull => pull(host).await,
        OciCommand::Gc => {
            let collected = host.collect_oci_store()?;
            crate::output::print_json(&serde_json::to_value(&collected).map_err(|e| Error::internal("gc", e))?);
            Ok(ExitCode::SUCCESS)
        }
        OciCommand::Resolve => unreachable!("needs no host: handled before one is built"),
    }
}

/// `quiver push FILE REF`: publish a component in the CNCF Wasm layout and
/// print its manifest digest (`sha256:…`) on stdout.
pub(crate) async fn push(file: &Path, reference: &str, entry: RawOci) -> Result<ExitCode> {
    let wasm =
        std::fs::read(file).map_err(|e| Error::Io { path: file.display().to_string(), message: e.to_string() })?;
    let entry = RawOci { reference: reference.to_owned(), ..entry };
    let parsed = entry.parsed()?;
    let registry = registry(std::slice::from_ref(&entry))?;
    let digest = registry.push(&parsed, &entry.auth(&parsed)?, &wasm).await.map_err(|m| failed(&entry, m))?;
    println!("{digest}");
    Ok(ExitCode::SUCCESS)
}

/// `quiver oci resolve`: pin every tag in the lock file.
pub(crate) async fn resolve(config: &Config) -> Result<ExitCode> {
    let path = config.oci_lock_path();
    let old = OciLock::read(&path)?;
    let tags: Vec<&RawOci> = config.oci.iter().filter(|e| e.is_tag()).collect();
    let registry = registry(&config.oci)?;
    let mut lock = OciLock::default();
    for entry in tags {
        let reference = entry.parsed()?;
        let digest = registry.resolve(&reference, &entry.auth(&reference)?).await.map_err(|m| failed(entry, m))?;
        let was = old.pins.get(&entry.reference).filter(|d| **d != digest);
        let note = was.map(|d| format!(" (was {d})")).unwrap_or_default();
        println!("{} {digest}{note}", shown(&entry.reference));
        lock.pins.insert(entry.reference.clone(), digest);
    }
    lock.write(&path)?;
    eprintln!("wrote {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// `quiver oci pull`: wait for every artifact's first outcome, print the states.
pub(crate) async fn pull(host: &quiver::Host) -> Result<ExitCode> {
    host.settled().await;
    let status = host.status();
    // Compile what was pulled now, into the compile cache the replicas share.
    let pulled: Vec<&str> = status.oci.iter().filter_map(|o| o.component.as_deref()).collect();
    for plugin in status.plugins.iter().filter(|p| pulled.contains(&p.origin.as_str())) {
        if let Err(error) = host.describe(&plugin.name).await {
            eprintln!("error: {}: {}", plugin.name, shown(&error.to_string()));
            return Ok(ExitCode::FAILURE);
        }
    }
    crate::output::print_json(&serde_json::to_value(&status.oci).map_err(|e| Error::internal("status", e))?);
    let failed = status.oci.iter().any(|o| o.state != quiver::load::oci::Phase::Stored);
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn registry(entries: &[RawOci]) -> Result<Registry> {
    let insecure = entries
        .iter()
        .filter(|e| e.insecure)
        .filter_map(|e| e.parsed().ok().map(|r| r.registry().to_owned()))
        .collect();
    Registry::new(insecure).map_err(|m| Error::internal("registry client", m))
}

fn failed(entry: &RawOci, message: String) -> Error {
    Error::Io { path: entry.section(), message }
}
