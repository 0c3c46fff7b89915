//! A plugin of a catalog, as a scan made it, and its prepared form.

use std::sync::Arc;

use tokio::sync::OnceCell;

use super::manifest::Manifest;
use super::origin::{self, Origin};
use super::plain::Plain;
use super::plain::request::Requests;
use super::settings::PluginSettings;
use super::stub::{self, Stub};
use crate::contract::tool::ToolPre;
use crate::error::Result;
use crate::sandbox::GuestState;

/// One plugin of a catalog: its stub, its origin, its settings, and (after
/// first use) its prepared form. Immutable apart from those lazy cells; a
/// new version of the file is a new `Plugin`.
pub struct Plugin {
    stub: Stub,
    /// The name it is served under when it is not its stub's (an adapter
    /// serving a configured database).
    instance: Option<String>,
    origin: Origin,
    settings: PluginSettings,
    /// Its manifest when the host made it (an OpenAPI document's), so
    /// preparing it never asks the component.
    described: Option<Manifest>,
    /// Its `quiver:manifest` section, if it has one (see [`Declared`]).
    declared: Option<Declared>,
    /// What the host knows of it when it is a component with no Quiver
    /// contract, served as it is (its stub says so).
    plain: Option<PlainParts>,
    prepared: OnceCell<Result<Arc<Prepared>>>,
}

/// The manifest a plugin's `quiver:manifest` section declares: kept as
/// read, parsed and checked against the stub on first use (a scan of a
/// thousand plugins parses none), and checked against `describe()` when the
/// plugin is prepared.
struct Declared {
    section: Arc<[u8]>,
    parsed: std::sync::OnceLock<Option<Manifest>>,
}

/// What the scan knows of a component served as it is.
struct PlainParts {
    /// What it exports, when the scan derived it from its types (a
    /// component with no stub); a packaged one's is derived when it is
    /// prepared, and held by its [`Pre::Plain`].
    derived: Option<Arc<Plain>>,
    /// What its policy file beside it asks for, read by the scan.
    requests: Option<Requests>,
}

/// A compiled, linked and checked plugin version, ready to instantiate.
pub struct Prepared {
    pub(crate) pre: Pre,
    /// Its full manifest (Tier 2), checked against the stub.
    pub manifest: Manifest,
}

/// How a prepared plugin is instantiated and called.
pub(crate) enum Pre {
    /// Through Quiver's contract: `invoke(action, input)`.
    Contract(ToolPre<GuestState>),
    /// A plain component: each action is an exported function, found by
    /// its index (resolved once, here), with the types `plain` says.
    Plain {
        pre: wasmtime::component::InstancePre<GuestState>,
        exports: Vec<(String, wasmtime::component::ComponentExportIndex)>,
        plain: Arc<Plain>,
    },
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name())
            .field("origin", &self.origin)
            .field("loaded", &self.is_loaded())
            .finish()
    }
}

impl Plugin {
    /// A plugin with a stub already read from its bytes. A stub that
    /// says the component is served as it is (`quiver package` wrote it)
    /// makes a plain component, as [`plain`](Self::plain) does, whose
    /// types are read when it is prepared.
    pub fn new(stub: Stub, origin: Origin, settings: PluginSettings) -> Plugin {
        let (plain, settings) = match stub.plain {
            true => {
                let requests = super::plain::requests_beside(&origin);
                (Some(PlainParts { derived: None, requests }), Plugin::plain_settings(settings))
            }
            false => (None, settings),
        };
        Plugin {
            stub,
            instance: None,
            origin,
            settings,
            described: None,
            declared: None,
            plain,
            prepared: OnceCell::new(),
        }
    }

    /// A plain component (see [`Plain`]) the scan read whole: its stub
    /// and manifest are the ones derived from its types, and its `config`
    /// values are its environment variables (the interface such a
    /// component reads settings through).
    pub(crate) fn plain(
        plain: Arc<Plain>,
        manifest: Manifest,
        origin: Origin,
        settings: PluginSettings,
    ) -> Result<Plugin> {
        let stub = super::plain::stub_of(&manifest)?;
        let plugin = Plugin::new(stub, origin, settings).with_manifest(manifest);
        let requests = plugin.plain.and_then(|p| p.requests);
        Ok(Plugin { plain: Some(PlainParts { derived: Some(plain), requests }), ..plugin })
    }

    /// `settings` as a plain component gets them: its `config` values
    /// are its environment variables too.
    pub(crate) fn plain_settings(mut settings: PluginSettings) -> PluginSettings {
        let config = settings.grants.config.entries().map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
        settings.grants.wasi.environment = config;
        settings
    }

    /// Whether it is a component with no Quiver contract, served as it is.
    pub fn is_plain(&self) -> bool {
        self.plain.is_some()
    }

    /// What it exports, if it is a plain component whose types have been
    /// read: by the scan, or (a packaged one) when it was prepared.
    pub(crate) fn exports(&self) -> Option<&Arc<Plain>> {
        let parts = self.plain.as_ref()?;
        parts.derived.as_ref().or(match self.prepared.get() {
            Some(Ok(prepared)) => match &prepared.pre {
                Pre::Plain { plain, .. } => Some(plain),
                Pre::Contract(_) => None,
            },
            _ => None,
        })
    }

    /// What the scan derived from its types, for a plain component with no
    /// stub of its own.
    pub(crate) fn derived(&self) -> Option<&Arc<Plain>> {
        self.plain.as_ref()?.derived.as_ref()
    }

    /// What the policy file beside a plain component asks for.
    pub(crate) fn requests(&self) -> Option<&Requests> {
        self.plain.as_ref()?.requests.as_ref()
    }

    /// The component with `stub` served under another `name`, with its own
    /// settings: one adapter component serving each configured database.
    pub fn instance(name: &str, stub: Stub, origin: Origin, settings: PluginSettings) -> Plugin {
        Plugin { instance: Some(name.to_owned()), ..Plugin::new(stub, origin, settings) }
    }

    /// The same plugin described by `manifest`, which the host made: its
    /// component's `describe()` is not asked.
    pub fn with_manifest(self, manifest: Manifest) -> Plugin {
        Plugin { described: Some(manifest), ..self }
    }

    /// The manifest the host made for it, if it did.
    pub fn described(&self) -> Option<&Manifest> {
        self.described.as_ref()
    }

    /// The same plugin with the payload of its `quiver:manifest` section
    /// (when it has one): its schemas are served from it before it is
    /// compiled.
    pub fn with_declared(self, section: Option<&[u8]>) -> Plugin {
        let declared = section.map(|s| Declared { section: s.into(), parsed: Default::default() });
        Plugin { declared, ..self }
    }

    /// The payload of its `quiver:manifest` section, if it has one.
    pub fn declared_section(&self) -> Option<&[u8]> {
        self.declared.as_ref().map(|d| &*d.section)
    }

    /// The manifest its section declares, if it has a valid one that
    /// agrees with its stub (a broken one is logged once; preparing the
    /// plugin then rejects it).
    fn declared(&self) -> Option<&Manifest> {
        let declared = self.declared.as_ref()?;
        declared
            .parsed
            .get_or_init(|| {
                let origin = self.origin.to_string();
                let manifest = Manifest::from_section(&declared.section, self.name())
                    .and_then(|m| m.check_against(&self.stub, &origin).map(|()| m));
                manifest.inspect_err(|error| tracing::warn!(%error, "manifest section not used")).ok()
            })
            .as_ref()
    }

    /// Whether it is served under a name of its own (see [`instance`](Self::instance)).
    pub fn is_instance(&self) -> bool {
        self.instance.is_some()
    }

    /// Its Tier-1 stub.
    pub fn stub(&self) -> &Stub {
        &self.stub
    }

    /// The name it is served under: its stub's, or its instance name.
    pub fn name(&self) -> &str {
        self.instance.as_deref().unwrap_or(&self.stub.name)
    }

    /// Where it comes from.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Its settings.
    pub fn settings(&self) -> &PluginSettings {
        &self.settings
    }

    /// Whether it has been prepared (compiled, linked, described).
    pub fn is_loaded(&self) -> bool {
        matches!(self.prepared.get(), Some(Ok(_)))
    }

    /// Its manifest, known without compiling it: once prepared, the checked
    /// one; before, the host's own (an OpenAPI document's) or its
    /// `quiver:manifest` section's.
    pub fn manifest(&self) -> Option<&Manifest> {
        match self.prepared.get() {
            Some(Ok(prepared)) => Some(&prepared.manifest),
            Some(Err(_)) => None,
            None => self.listed_manifest(),
        }
    }

    /// Its manifest as known without compiling it, whether or not it has
    /// been prepared since (the host's own, or its section's): what is
    /// charged for it stays the same once it is compiled.
    pub fn listed_manifest(&self) -> Option<&Manifest> {
        self.described.as_ref().or_else(|| self.declared())
    }

    /// Its prepared form, made by `prepare` on first use; concurrent first
    /// uses share one preparation, and a failure is remembered for this
    /// version.
    pub(crate) async fn prepared<F>(&self, prepare: F) -> Result<Arc<Prepared>>
    where
        F: Future<Output = Result<Arc<Prepared>>>,
    {
        self.prepared.get_or_init(|| prepare).await.clone()
    }

    /// Keep its bytes from now on, if the file still is the version the
    /// scan read (same stamp, same stub); whether they are now kept.
    pub(crate) fn keep_bytes(&self) -> bool {
        if self.origin.holds_bytes() {
            return true;
        }
        let Origin::File { path, digest, .. } = &self.origin else { return true };
        let Ok(bytes) = origin::read_unchanged(path, digest) else { return false };
        // A plain component has no stub: its bytes, which `read_unchanged`
        // checked by digest, are its identity.
        let same = match self.derived() {
            Some(_) => true,
            None => stub::read(&bytes, &self.origin.to_string()).is_ok_and(|stub| stub == self.stub),
        };
        if same {
            self.origin.keep(bytes);
            true
        } else {
            false
        }
    }
}
