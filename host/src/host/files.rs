//! Plugin files looked at alone, outside the catalog: [`Host::check`]
//! validates one whole, [`Host::package`] writes its stub and manifest
//! sections.

use std::path::Path;

use super::Host;
use crate::error::{Error, Result};
use crate::load::{Manifest, Origin, Plugin, stub};

impl Host {
    /// Fully validate the plugin file at `path` (stub, world, compile,
    /// `describe()`, manifest against stub) without adding it to the
    /// catalog; for a component served as it is, also what it does not
    /// serve and what its policy file asks for.
    pub async fn check(&self, path: &Path) -> Result<Checked> {
        let max_bytes = self.inner.reloader.folders().max_plugin_bytes.unwrap_or(crate::load::MAX_PLUGIN_BYTES);
        let origin = Origin::file(path, crate::load::Beside::default(), max_bytes)?;
        let bytes = origin.bytes()?;
        let resolver = self.inner.reloader.settings();
        // Its `quiver:manifest` section, if packaged, is checked too.
        let plugin = match stub::read_sections(&bytes, &origin.to_string()) {
            Ok((stub, declared)) => {
                let settings = resolver.resolve(&stub.name, None)?;
                Plugin::new(stub, origin, settings).with_declared(declared)
            }
            // A component with no stub and no contract: as a scan reads it.
            Err(Error::MissingStub { .. }) => {
                let (name, plain, manifest) = crate::load::plain::load(&origin, &bytes)?;
                let settings = resolver.resolve(&name, None)?;
                Plugin::plain(plain, manifest, origin, settings)?
            }
            Err(error) => return Err(error),
        };
        let manifest = self.inner.runtime.prepare(&plugin).await?.manifest.clone();
        let (skipped, requests) = (crate::catalog::skipped_of(&plugin), crate::catalog::requests_of(&plugin));
        Ok(Checked { manifest, skipped, requests })
    }

    /// The component at `path` with its `quiver:stub` and `quiver:manifest`
    /// sections written from its own `describe()` (run once in the sandbox,
    /// with the limits of a plugin of no name) and checked by the
    /// contract's rules: what makes a component built by any toolchain a
    /// plugin Tier 1 lists, and whose schemas are served, without compiling
    /// it. A stub that already agrees with `describe()` (as the host checks
    /// at first load: an SDK plugin's) stays; a component already packaged
    /// so comes back unchanged (`changed: false`). A component with no
    /// Quiver contract gets the stub and manifest derived from its types
    /// (nothing runs), marked as served as it is.
    pub async fn package(&self, path: &Path) -> Result<Packaged> {
        let max_bytes = self.inner.reloader.folders().max_plugin_bytes.unwrap_or(crate::load::MAX_PLUGIN_BYTES);
        let origin = Origin::file(path, crate::load::Beside::default(), max_bytes)?;
        let bytes = origin.bytes()?;
        let text = origin.to_string();
        let existing = match stub::read(&bytes, &text) {
            Ok(stub) => Some(stub),
            Err(Error::MissingStub { .. } | Error::InvalidStub { .. }) => None,
            Err(other) => return Err(other),
        };
        // A component with no Quiver contract (or one packaged as such):
        // its stub and schemas come from its types (docs from the `.wit`
        // beside it), nothing runs, and its name is its file's.
        if existing.as_ref().is_none_or(|stub| stub.plain) {
            match crate::load::plain::load(&origin, &bytes) {
                Ok((_, _, manifest)) => {
                    let stub = crate::load::plain::stub_of(&manifest)?;
                    let packaged = crate::load::package::with_sections(&bytes, Some(&stub), &manifest.to_section())
                        .map_err(|reason| Error::InvalidStub { origin: text.clone(), reason })?;
                    let changed = packaged != bytes;
                    return Ok(Packaged { bytes: packaged, manifest, changed, plain: true });
                }
                Err(Error::MissingStub { .. }) if existing.is_none() => {}
                Err(other) => return Err(other),
            }
        }
        let placeholder = crate::contract::Stub::new("unpackaged", "0.0.0", crate::contract::Kind::Tool, "");
        let settings = self.inner.reloader.settings().resolve(&placeholder.name, None)?;
        let plugin = Plugin::new(existing.clone().unwrap_or(placeholder), origin, settings);
        let package = |wasm: &[u8], manifest: &Manifest| -> Result<Vec<u8>> {
            let stub =
                manifest.stub().map_err(|reason| Error::InvalidManifest { plugin: manifest.name.clone(), reason })?;
            // A stub the host would accept for this describe() stays as it is.
            let agrees = existing.as_ref().map(|existing| manifest.check_against(existing, &text));
            let new_stub = (!matches!(agrees, Some(Ok(())))).then_some(&stub);
            crate::load::package::with_sections(wasm, new_stub, &manifest.to_section()).map_err(|reason| {
                match agrees {
                    // A stub in a core module that disagrees: say how.
                    Some(Err(mismatch)) => mismatch,
                    _ => Error::InvalidStub { origin: text.clone(), reason },
                }
            })
        };
        let (manifest, packaged) = self.inner.runtime.describe_unpackaged(&plugin, package).await?;
        let changed = packaged != bytes;
        Ok(Packaged { bytes: packaged, manifest, changed, plain: false })
    }
}

/// A component packaged by [`Host::package`].
#[derive(Debug)]
pub struct Packaged {
    /// The component with its stub section.
    pub bytes: Vec<u8>,
    /// Its manifest: what its `describe()` said, or its types.
    pub manifest: Manifest,
    /// Whether the bytes differ from the input (false: it already carried
    /// this very stub).
    pub changed: bool,
    /// Whether it is a component with no Quiver contract, served as it is:
    /// its stub and schemas were derived from its types, not from a
    /// `describe()`.
    pub plain: bool,
}

/// What [`Host::check`] found in a plugin file.
#[derive(Debug)]
pub struct Checked {
    /// Its checked manifest.
    pub manifest: Manifest,
    /// For a component served as it is: its exports not served, with why.
    pub skipped: Vec<crate::catalog::SkippedExport>,
    /// For a component that ships a policy file: what it asks for, next
    /// to what the configuration grants.
    pub requests: Option<crate::load::RequestsStatus>,
}
