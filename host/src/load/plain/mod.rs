//! Plain components: components built for no particular host, whose
//! exports are typed functions, served as tools.
//!
//! Their stub (Tier 1) and manifest (Tier 2) are derived from the
//! component's own type information without compiling it: wit-parser
//! (which wasmtime re-exports) decodes the world the component
//! implements, each exported function becomes an action, and its
//! parameter and result types give its schemas ([`schema`]). Doc comments
//! come from the component when it carries them (the `package-docs`
//! section), else from a `NAME.wit` beside it, else the names speak.
//!
//! Names: an action is the interface's name and the function's, joined
//! by `_`, with `-` made `_` (`acme:plain/text` `read-file` →
//! `text_read_file`); a function exported at the top level of the world
//! keeps its own name (`hello`). Two exports that would get one name, or a
//! name past [`MAX_ACTION_NAME`](crate::contract::MAX_ACTION_NAME), are
//! not served, with that reason.
//!
//! Not served, each with its reason in [`Plain::skipped`]: WASI's own
//! interfaces (`wasi:cli/run`, `wasi:http/incoming-handler`, …: a host
//! calls them, not a model), componentize-py's `exports` interface (its
//! build-time `init` hook), resource methods and constructors, async
//! functions, and functions passing types JSON cannot carry ([`types`]).
//! A component that exports Quiver's contract is not plain: it needs its
//! stub, as before.

pub mod request;
pub mod schema;
pub mod types;
pub mod values;

use wasmtime::component::wit_parser::decoding::{DecodedWasm, decode};
use wasmtime::component::wit_parser::{Function, FunctionKind, Resolve, WorldId, WorldItem, WorldKey};

use std::cell::Cell;
use std::path::Path;
use std::sync::Arc;

use self::request::{MAX_POLICY_BYTES, Requests};
use self::schema::{Schema, Way};
use self::types::{Reader, Ty};
use crate::contract::{self, Access, Kind, MAX_ACTION_NAME, MAX_ACTIONS, MAX_SUMMARY_CHARS, Shape, sanitize_cut};
use crate::error::{Error, Result};
use crate::load::{Manifest, Origin, Plugin};

/// Where a function is exported: the interface's export name, if any,
/// and the function's WIT name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    pub interface: Option<String>,
    pub function: String,
}

/// One exported function, as an action.
#[derive(Debug, Clone)]
pub struct Func {
    /// The action's name (see the module's naming rule).
    pub action: String,
    pub export: Export,
    /// Its description: the doc comment, else what its names say.
    pub description: String,
    pub params: Vec<(String, Ty)>,
    pub result: Option<Ty>,
}

/// What a plain component offers, read from its types.
#[derive(Debug, Clone)]
pub struct Plain {
    /// A line on what it is for.
    pub description: String,
    /// The version of the package of its first exported interface.
    pub version: String,
    pub functions: Vec<Func>,
    /// The exports not served, with why: `(export, reason)`.
    pub skipped: Vec<(String, String)>,
    /// Whether it imports `wasi:http`: its functions may then change
    /// things outside (an HTTP request), so they are `write`, not `read`.
    pub reaches_out: bool,
}

/// Why a component is not a plain one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotPlain {
    /// It exports Quiver's own contract: it is a plugin and needs a stub.
    Contract,
    /// It is not a component wit-parser can read.
    Unreadable(String),
    /// It exports nothing a model can call; the reasons, per export.
    Nothing(Vec<(String, String)>),
}

impl Plain {
    /// Read what the component in `bytes` exports; `side` is the text of
    /// a `.wit` file shipped beside it, for its doc comments.
    pub fn derive(bytes: &[u8], side: Option<&str>) -> std::result::Result<Plain, NotPlain> {
        // wit-parser asserts some of what it reads: a panic there is an
        // unreadable file, never the host's end.
        let decoded = std::panic::catch_unwind(|| decode(bytes))
            .map_err(|_| NotPlain::Unreadable("its type information is malformed".into()))?;
        let (resolve, world) = match decoded {
            Ok(DecodedWasm::Component(resolve, world)) => (resolve, world),
            Ok(DecodedWasm::WitPackage(..)) => {
                return Err(NotPlain::Unreadable("it is a WIT package, not a component".into()));
            }
            Err(e) => return Err(NotPlain::Unreadable(format!("{e:#}"))),
        };
        let side = side.and_then(|text| {
            let mut resolve = Resolve::default();
            match resolve.push_source("side.wit", text) {
                Ok(_) => Some(resolve),
                Err(e) => {
                    let error = sanitize_cut(&format!("{e:#}"), Shape::Line, 300);
                    tracing::warn!(%error, "the .wit beside a component does not parse; its docs are not used");
                    None
                }
            }
        });
        Deriver { resolve: &resolve, side: side.as_ref(), total: Cell::new(0) }.run(world)
    }

    /// The manifest of plugin `name`: one action per function; `read`
    /// access, or `write` when it imports `wasi:http` (a plain component
    /// says nothing of what it changes; only HTTP reaches outside).
    pub fn manifest(&self, name: &str) -> Result<Manifest> {
        let actions = self
            .functions
            .iter()
            .map(|f| quiver_contract::ActionSection {
                name: f.action.clone(),
                description: f.description.clone(),
                input_schema: Schema::params(f.params.iter().map(|(n, t)| (n.as_str(), t, None))).to_value(),
                output_schema: f.result.as_ref().map(|t| output(t).to_value()),
                access: if self.reaches_out { Access::Write } else { Access::Read },
            })
            .collect();
        let declared = quiver_contract::ManifestSection {
            format: quiver_contract::MANIFEST_FORMAT,
            name: name.to_owned(),
            version: self.version.clone(),
            kind: Kind::Tool,
            description: self.description.clone(),
            categories: Vec::new(),
            actions,
        };
        Manifest::from_declared(declared, name)
    }

    /// The function behind `action`.
    pub fn function(&self, action: &str) -> Option<&Func> {
        self.functions.iter().find(|f| f.action == action)
    }
}

/// A component without a stub, read as a plain component: the name it is
/// served under (its file's, [`name_of`]), what it exports (docs from the
/// `NAME.wit` beside it, if any) and its manifest. A component that
/// implements Quiver's contract is [`Error::MissingStub`] as before; one
/// that exports nothing callable is [`Error::NothingToServe`], with each
/// export's reason.
pub(crate) fn load(origin: &Origin, bytes: &[u8]) -> Result<(String, Arc<Plain>, Manifest)> {
    let shown = origin.to_string();
    let side = origin.path().and_then(|path| side_text_logged(&path.with_extension("wit"), MAX_SIDE_WIT));
    let plain = derived(bytes, side.as_deref(), &shown)?;
    let name = match origin.path() {
        Some(path) => name_of(path).map_err(|reason| Error::InvalidManifest { plugin: shown.clone(), reason })?,
        None => return Err(Error::MissingStub { origin: shown }),
    };
    for (export, why) in &plain.skipped {
        tracing::info!(plugin = %name, %export, reason = %why, "export not served");
    }
    let manifest = plain.manifest(&name)?;
    Ok((name, Arc::new(plain), manifest))
}

/// What the component in `bytes` (`shown` in errors) exports, or why it
/// is not a plain component, as [`load`] says it.
fn derived(bytes: &[u8], side: Option<&str>, shown: &str) -> Result<Plain> {
    match Plain::derive(bytes, side) {
        Ok(plain) => Ok(plain),
        Err(NotPlain::Contract) => Err(Error::MissingStub { origin: shown.to_owned() }),
        Err(NotPlain::Unreadable(reason)) => {
            let reasons = format!("its types cannot be read: {}", sanitize_cut(&reason, Shape::Line, 300));
            Err(Error::NothingToServe { origin: shown.to_owned(), reasons })
        }
        Err(NotPlain::Nothing(skipped)) => {
            let reasons = skipped.iter().map(|(e, why)| format!("`{e}`: {why}")).collect::<Vec<_>>().join("; ");
            let reasons = if reasons.is_empty() { "it exports nothing".to_owned() } else { reasons };
            Err(Error::NothingToServe { origin: shown.to_owned(), reasons })
        }
    }
}

/// The stub of a plain component described by `manifest`: what the
/// scan lists, and what `quiver package` writes into it.
pub(crate) fn stub_of(manifest: &Manifest) -> Result<crate::contract::Stub> {
    let stub = manifest.stub().map_err(|reason| Error::InvalidManifest { plugin: manifest.name.clone(), reason })?;
    Ok(crate::contract::Stub { plain: true, ..stub })
}

/// What the plain component `plugin` exports, and its manifest, as its
/// preparation needs them: the scan's, or for a packaged one (its stub
/// says it is plain), read now from its bytes. A packaged manifest is
/// served only if its actions, access and schemas are what the types say
/// (descriptions aside: they may come from a `.wit` no longer beside it);
/// else it is [`Error::StubMismatch`] and the fix is to package it again.
pub(crate) fn prepared(plugin: &Plugin) -> Result<(Arc<Plain>, Manifest)> {
    if let (Some(plain), Some(manifest)) = (plugin.derived(), plugin.described()) {
        return Ok((plain.clone(), manifest.clone()));
    }
    let origin = plugin.origin();
    let shown = origin.to_string();
    let bytes = origin.bytes()?;
    let declared = plugin.declared_section().map(|s| Manifest::from_section(s, plugin.name())).transpose()?;
    // The docs of a packaged component are in its manifest already.
    let side = match (&declared, origin.path()) {
        (None, Some(path)) => side_text_logged(&path.with_extension("wit"), MAX_SIDE_WIT),
        _ => None,
    };
    let plain = derived(&bytes, side.as_deref(), &shown).map_err(|error| match error {
        Error::MissingStub { .. } => Error::StubMismatch {
            plugin: plugin.name().to_owned(),
            origin: shown.clone(),
            differences: "its stub says it is served as it is, but it exports Quiver's contract; package it again"
                .into(),
        },
        other => other,
    })?;
    let from_types = plain.manifest(plugin.name())?;
    let manifest = match declared {
        Some(declared) if declared.same_shape(&from_types) => declared,
        Some(_) => {
            return Err(Error::StubMismatch {
                plugin: plugin.name().to_owned(),
                origin: shown,
                differences: "its `quiver:manifest` section (the actions and schemas) is not what its types say; \
                              package it again"
                    .into(),
            });
        }
        None => from_types,
    };
    manifest.check_against(plugin.stub(), &shown)?;
    Ok((Arc::new(plain), manifest))
}

/// What the policy file beside the component at `origin`
/// (`NAME.policy.yaml`) asks for, if it ships one: a request shown to the
/// operator, never a grant. A file that is there but not read is shown as
/// such: the operator learns the component asked for something.
pub(crate) fn requests_beside(origin: &Origin) -> Option<Requests> {
    let path = origin.path()?.with_extension("policy.yaml");
    let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let file = sanitize_cut(&file, Shape::Line, 256);
    match side_text(&path, MAX_POLICY_BYTES) {
        Ok(None) => None,
        Ok(Some(text)) => Some(Requests { file, ..Requests::parse(&text) }),
        Err(problem) => Some(Requests { file, problem: Some(problem), ..Requests::default() }),
    }
}

/// Longest `.wit` read beside a component.
const MAX_SIDE_WIT: u64 = 1 << 20;

/// The text of the file at `path` beside a component, if it is a regular
/// file of at most `max` bytes inside the component's folder. A link is
/// followed only to a file in that folder or below it (a mounted
/// ConfigMap's `..data`), never out of it: a shipped link to
/// `/proc/self/environ` would otherwise put the host's own secrets into
/// what the file is shown as. It is opened without blocking and checked
/// once open, so a FIFO or a device behind the name is never read.
fn side_text(path: &Path, max: u64) -> std::result::Result<Option<String>, String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let Ok(target) = std::fs::canonicalize(path) else { return Ok(None) };
    let folder = path
        .parent()
        .and_then(|p| std::fs::canonicalize(if p.as_os_str().is_empty() { Path::new(".") } else { p }).ok());
    if !folder.is_some_and(|folder| target.starts_with(folder)) {
        return Err("it links out of the component's folder".into());
    }
    let flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    let unreadable = |e: std::io::Error| format!("it cannot be read: {}", e.kind());
    let file = std::fs::OpenOptions::new().read(true).custom_flags(flags).open(&target).map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    if meta.len() > max {
        return Err(format!("it is larger than {} KiB", max / 1024));
    }
    let mut text = String::new();
    match file.take(max).read_to_string(&mut text) {
        Ok(_) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => Err("it is not UTF-8 text".into()),
        Err(e) => Err(unreadable(e)),
    }
}

/// [`side_text`], with a file that is there but is not read logged (the
/// reason, never the content).
fn side_text_logged(path: &Path, max: u64) -> Option<String> {
    side_text(path, max).unwrap_or_else(|reason| {
        let shown = crate::catalog::printable(&path.display().to_string());
        tracing::warn!(path = %shown, %reason, "a file beside a component is not read");
        None
    })
}

/// The name a plain component is served under: its file's stem, in lower
/// case with `_` and `.` made `-` (`Text_Tools.wasm` → `text-tools`), which
/// must then follow the plugin name rule.
pub(crate) fn name_of(path: &Path) -> std::result::Result<String, String> {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = stem.to_ascii_lowercase().replace(['_', '.'], "-");
    match contract::plugin_name_problem(&name) {
        None => Ok(name),
        Some(problem) => Err(format!("a component without a stub is named after its file: {problem}; rename the file")),
    }
}

/// The output schema of a function returning `ty`: a `result`'s `ok` type
/// (its `err` is the call's typed error).
pub fn output(ty: &Ty) -> Schema {
    match ty {
        Ty::Result { ok: Some(ok), .. } => Schema::for_ty(ok, Way::Out),
        Ty::Result { ok: None, .. } => Schema::null(),
        other => Schema::for_ty(other, Way::Out),
    }
}

struct Deriver<'a> {
    resolve: &'a Resolve,
    side: Option<&'a Resolve>,
    /// Type nodes read so far, all functions together.
    total: Cell<usize>,
}

impl Deriver<'_> {
    fn run(self, world: WorldId) -> std::result::Result<Plain, NotPlain> {
        let resolve = self.resolve;
        let world = resolve.worlds.get(world).ok_or_else(|| NotPlain::Unreadable("no world".into()))?;
        let mut plain = Plain {
            description: String::new(),
            version: String::new(),
            functions: Vec::new(),
            skipped: Vec::new(),
            reaches_out: world.imports.keys().any(|k| self.key_name(k).starts_with("wasi:http/")),
        };
        let mut interface_docs = Vec::new();
        for (key, item) in &world.exports {
            let export = self.key_name(key);
            match item {
                WorldItem::Function(f) => self.function(&mut plain, None, f),
                WorldItem::Interface { id, .. } => {
                    if export.starts_with("quiver:plugin/") {
                        return Err(NotPlain::Contract);
                    }
                    if export.starts_with("wasi:") {
                        let why = "a WASI interface: the host calls it, not a model";
                        plain.skipped.push((export, why.into()));
                        continue;
                    }
                    let Some(interface) = resolve.interfaces.get(*id) else { continue };
                    if matches!(key, WorldKey::Name(n) if n == "exports") && interface.functions.keys().eq(["init"]) {
                        let why = "componentize-py's initialisation hook, which ran when the component was built";
                        plain.skipped.push((export, why.into()));
                        continue;
                    }
                    let short = interface.name.clone().unwrap_or_else(|| export.clone());
                    if plain.version.is_empty() {
                        let package = interface.package.and_then(|p| resolve.packages.get(p));
                        plain.version =
                            package.and_then(|p| p.name.version.as_ref()).map(|v| v.to_string()).unwrap_or_default();
                    }
                    let docs = types::docs(&interface.docs).or_else(|| self.side_interface_docs(&export));
                    interface_docs.push((short.clone(), docs));
                    for f in interface.functions.values() {
                        self.function(&mut plain, Some((&export, &short)), f);
                    }
                }
                WorldItem::Type { .. } => {}
            }
        }
        names_once(&mut plain);
        if plain.functions.is_empty() {
            return Err(NotPlain::Nothing(plain.skipped));
        }
        if plain.version.is_empty() {
            plain.version = "0.0.0".into();
        }
        plain.description = types::docs(&world.docs)
            .or_else(|| match &interface_docs[..] {
                [(_, Some(docs))] => Some(docs.clone()),
                _ => None,
            })
            .map(|d| contract::one_line(&contract::summary_of(&d), MAX_SUMMARY_CHARS))
            .unwrap_or_else(|| {
                let names: Vec<&str> = interface_docs.iter().map(|(n, _)| n.as_str()).collect();
                match names.is_empty() {
                    true => "A WebAssembly component's functions.".to_owned(),
                    false => format!("A WebAssembly component's functions: {}.", names.join(", ")),
                }
            });
        Ok(plain)
    }

    fn key_name(&self, key: &WorldKey) -> String {
        match key {
            WorldKey::Name(name) => name.clone(),
            WorldKey::Interface(id) => self.resolve.id_of(*id).unwrap_or_else(|| "an unnamed interface".into()),
        }
    }

    /// Add `f`, exported from `interface` (`(export name, short name)`)
    /// or the world, to `plain`, or say why it is not served.
    fn function(&self, plain: &mut Plain, interface: Option<(&String, &String)>, f: &Function) {
        let export = Export { interface: interface.map(|(e, _)| e.clone()), function: f.name.clone() };
        let shown = match interface {
            Some((e, _)) => format!("{e}#{}", f.name),
            None => f.name.clone(),
        };
        let why = match f.kind {
            FunctionKind::Freestanding => None,
            FunctionKind::AsyncFreestanding => Some("an async function, which Quiver does not serve yet"),
            _ => Some("a resource's method or constructor: resources live in the component, not in JSON"),
        };
        if let Some(why) = why {
            plain.skipped.push((shown, why.into()));
            return;
        }
        if plain.functions.len() >= MAX_ACTIONS {
            let why = format!("past the {MAX_ACTIONS} actions a plugin may have");
            return plain.skipped.push((shown, why));
        }
        let (mut params, mut result) = match signature(self.resolve, f, &self.total) {
            Ok(signature) => signature,
            Err(why) => return plain.skipped.push((shown, why)),
        };
        let mut docs = types::docs(&f.docs);
        // The `.wit` beside the component, when it declares this very
        // function with the same types, adds its doc comments (the
        // function's, and its records' fields and variants' cases).
        if let Some((side, declared)) = self.side_function(interface.map(|(e, _)| e.as_str()), &f.name) {
            match signature(side, declared, &self.total) {
                Ok((p, r)) if same_signature((&p, &r), (&params, &result)) => {
                    (params, result) = (p, r);
                    docs = docs.or_else(|| types::docs(&declared.docs));
                }
                _ => {
                    tracing::warn!(function = %shown, "the .wit beside the component declares it otherwise; its docs are not used")
                }
            }
        }
        let description = match docs {
            Some(docs) => fitted(&docs),
            None => described_by_names(interface.map(|(_, s)| s.as_str()), f, &params, &result),
        };
        let action = match interface {
            Some((_, short)) => format!("{}_{}", snake(short), snake(&f.name)),
            None => snake(&f.name),
        };
        plain.functions.push(Func { action, export, description, params, result });
    }

    /// The function `name` of `interface` (its export name) or the world,
    /// as the `.wit` beside the component declares it.
    fn side_function(&self, interface: Option<&str>, name: &str) -> Option<(&Resolve, &Function)> {
        let side = self.side?;
        let found = match interface {
            Some(export) => side
                .interfaces
                .iter()
                .find(|(id, _)| side.id_of(*id).as_deref() == Some(export))
                .and_then(|(_, i)| i.functions.get(name)),
            None => side.worlds.iter().find_map(|(_, w)| {
                w.exports.iter().find_map(|(k, item)| match (k, item) {
                    (WorldKey::Name(n), WorldItem::Function(f)) if n == name => Some(f),
                    _ => None,
                })
            }),
        };
        found.map(|f| (side, f))
    }

    fn side_interface_docs(&self, export: &str) -> Option<String> {
        let side = self.side?;
        let (_, interface) = side.interfaces.iter().find(|(id, _)| side.id_of(*id).as_deref() == Some(export))?;
        types::docs(&interface.docs)
    }
}

/// A function's parameters, named, and its result.
type Typed = (Vec<(String, Ty)>, Option<Ty>);

/// The parameters and result of `f`, read from `resolve`.
fn signature(resolve: &Resolve, f: &Function, total: &Cell<usize>) -> std::result::Result<Typed, String> {
    let mut reader = Reader::new(resolve, total);
    let params = f
        .params
        .iter()
        .map(|p| Ok((p.name.clone(), reader.read(&p.ty)?)))
        .collect::<std::result::Result<_, String>>()?;
    let result = f.result.as_ref().map(|t| reader.read(t)).transpose()?;
    Ok((params, result))
}

type Signature<'a> = (&'a [(String, Ty)], &'a Option<Ty>);

/// Whether two signatures take and give the same types (docs aside).
fn same_signature((params, result): Signature<'_>, (others, other): Signature<'_>) -> bool {
    params.len() == others.len()
        && params.iter().zip(others).all(|((n, a), (m, b))| n == m && a.same_shape(b))
        && match (result, other) {
            (None, None) => true,
            (Some(a), Some(b)) => a.same_shape(b),
            _ => false,
        }
}

/// A doc comment (sanitised by [`types::docs`]) as a description: its
/// first paragraph (the Tier-1 summary) cut to a line of
/// [`MAX_SUMMARY_CHARS`], with the whole text after it when it was longer.
fn fitted(docs: &str) -> String {
    let docs = docs.to_owned();
    let summary = contract::summary_of(&docs);
    let line = contract::one_line(&summary, MAX_SUMMARY_CHARS);
    if line == summary { docs } else { format!("{line}\n\n{docs}") }
}

/// A description from names alone: what it is, then its signature
/// (`` `text.count(text: string) -> counts` ``).
fn described_by_names(interface: Option<&str>, f: &Function, params: &[(String, Ty)], result: &Option<Ty>) -> String {
    let name = match interface {
        Some(i) => format!("{i}.{}", f.name),
        None => f.name.clone(),
    };
    let params: Vec<String> = params.iter().map(|(n, t)| format!("{n}: {}", t.wit())).collect();
    let result = result.as_ref().map(|t| format!(" -> {}", t.wit())).unwrap_or_default();
    let summary = contract::one_line(&format!("`{name}`, a function of a WebAssembly component."), MAX_SUMMARY_CHARS);
    format!("{summary}\n\n`{name}({}){result}`", params.join(", "))
}

/// A WIT name as part of an action name: `read-file` → `read_file`.
fn snake(name: &str) -> String {
    name.to_ascii_lowercase().replace('-', "_")
}

/// Leave out, with the reason, functions whose action names collide or
/// break the contract's rule.
fn names_once(plain: &mut Plain) {
    let mut seen = std::collections::HashMap::<String, usize>::new();
    for f in &plain.functions {
        *seen.entry(f.action.clone()).or_default() += 1;
    }
    let functions = std::mem::take(&mut plain.functions);
    for f in functions {
        let shown = match &f.export.interface {
            Some(i) => format!("{i}#{}", f.export.function),
            None => f.export.function.clone(),
        };
        if seen[&f.action] > 1 {
            plain.skipped.push((shown, format!("another export would also be the action `{}`", f.action)));
        } else if let Some(problem) = contract::action_name_problem(&f.action) {
            plain.skipped.push((shown, format!("{problem} (at most {MAX_ACTION_NAME})")));
        } else {
            plain.functions.push(f);
        }
    }
}

#[cfg(test)]
mod tests;
