//! The runtime itself: the engine, its linkers, the compile cache and the
//! pool of instance slots, and the [`Backend`] calls go through.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use wasmtime::Engine;

use crate::catalog::{Catalog, ToolRecord};
use crate::contract::Access;
use crate::error::{Error, Result};
use crate::invoke::{Answer, Backend, BoxFuture, Call, Caller, Facts, Output};
use crate::load::cache::ArtifactCache;
use crate::load::compile::Compiler;
use crate::load::{ActionSpec, Instances, LoadStats, Manifest, Plugin, Pre, Prepared};
use crate::sandbox::Linkers;
use crate::sandbox::limits::{self, EngineSettings};
use crate::telemetry::Usage;

use super::call::Ran;
use super::kept::{Key, Shelf, Tenant, Warm};

/// Runs plugins: one engine, its linkers, its compile cache and its pool
/// of instance slots, shared by every catalog version.
pub struct WasmRuntime {
    engine: Engine,
    compiler: Compiler,
    linkers: Arc<Linkers>,
    /// Initialises the components that ask for it (see [`preinit`](super::preinit)).
    preinit: Arc<super::preinit::Preinit>,
    /// One permit per instance slot of the engine's pool: every
    /// instantiation (calls, `describe()` checks, initialisations) holds one.
    permits: Arc<tokio::sync::Semaphore>,
    /// Calls waiting for a permit now, and the most that may.
    waiting: std::sync::atomic::AtomicUsize,
    max_queue: usize,
    /// Instances clean calls left, for plugins kept per caller.
    shelf: Shelf<Warm>,
}

impl WasmRuntime {
    /// Create the engine (see [`limits::engine`]) and its linkers, with
    /// compiled components kept in `cache_dir` (`None`: no cache) and read
    /// from `cache`'s shared folder.
    pub fn new(
        settings: &EngineSettings,
        cache_dir: Option<PathBuf>,
        cache: &crate::load::cache::CacheSettings,
    ) -> Result<WasmRuntime> {
        let engine = limits::engine(settings).map_err(|e| Error::internal("engine", format!("{e:#}")))?;
        let linkers = Arc::new(Linkers::new(&engine)?);
        let at = if cache == &Default::default() { "cache_dir" } else { "cache_dir, [cache]" };
        let cache = ArtifactCache::new(&engine, cache_dir, cache).map_err(|message| Error::config(at, message))?;
        let permits = Arc::new(tokio::sync::Semaphore::new(settings.max_concurrency.max(1) as usize));
        let preinit = Arc::new(super::preinit::Preinit::new(engine.clone(), linkers.clone(), permits.clone()));
        Ok(WasmRuntime {
            compiler: Compiler::new(engine.clone(), cache, preinit.clone()),
            engine,
            linkers,
            preinit,
            permits,
            waiting: Default::default(),
            max_queue: settings.max_queue as usize,
            shelf: Shelf::new(settings.max_kept_instances as usize, super::kept::KEPT_IDLE),
        })
    }

    /// Counters of compilations and cache hits.
    pub fn stats(&self) -> &LoadStats {
        &self.compiler.stats
    }

    /// `plugin`, compiled, linked and checked: done once per plugin version
    /// (concurrent first uses share it; a failure is remembered).
    pub async fn prepare(&self, plugin: &Plugin) -> Result<Arc<Prepared>> {
        plugin.prepared(self.prepare_uncached(plugin)).await
    }

    async fn prepare_uncached(&self, plugin: &Plugin) -> Result<Arc<Prepared>> {
        let component = self.compiler.compile(plugin).await?;
        let origin = plugin.origin().to_string();
        if plugin.is_plain() {
            let (plain, manifest) = crate::load::plain::prepared(plugin)?;
            let pre = self.linkers.plain_pre(&self.engine, &component, plugin.name(), &origin)?;
            let exports = super::plain::exports(&component, &plain, plugin)?;
            return Ok(Arc::new(Prepared { pre: Pre::Plain { pre, exports, plain }, manifest }));
        }
        let kind = plugin.stub().kind;
        let pre = self.linkers.instantiate_pre(&self.engine, &component, kind, plugin.name(), &origin)?;
        if let Some(manifest) = plugin.described() {
            return Ok(Arc::new(Prepared { pre: Pre::Contract(pre), manifest: manifest.clone() }));
        }
        let manifest = {
            let _permit = self.permit().await?;
            super::call::describe(&self.engine, &pre, plugin).await?
        };
        manifest.check_against(plugin.stub(), &origin)?;
        if let Some(section) = plugin.declared_section() {
            // What was served before compiling must be what the plugin says.
            let declared = Manifest::from_section(section, plugin.name())?;
            if !declared.same_as(&manifest) {
                return Err(Error::StubMismatch {
                    plugin: plugin.name().to_owned(),
                    origin,
                    differences: "its `quiver:manifest` section (the schemas) is not what describe() returns; \
                                  package it again"
                        .into(),
                });
            }
        }
        Ok(Arc::new(Prepared { pre: Pre::Contract(pre), manifest }))
    }

    /// Compile `plugin`, a component without a stub (its stub here is a
    /// placeholder), link it as the kind its exports and imports suggest,
    /// and run its `describe()`; then check that it links as the kind the
    /// manifest declares. What `quiver package` derives a stub from.
    ///
    /// A component that asks for pre-initialisation is initialised first
    /// (see [`preinit`](super::preinit)): `packaged` is given the initialised bytes and
    /// returns what the packager makes of them (the same code, other
    /// custom sections). The compiled form is cached for those bytes too,
    /// so the packaged file is never compiled, nor initialised, again.
    pub async fn describe_unpackaged(
        &self,
        plugin: &Plugin,
        packaged: impl FnOnce(&[u8], &Manifest) -> Result<Vec<u8>>,
    ) -> Result<(Manifest, Vec<u8>)> {
        let origin = plugin.origin().to_string();
        let mut wasm = plugin.origin().bytes()?;
        if super::preinit::wants_init(&wasm) {
            use crate::load::compile::Initializer;
            let limits = plugin.settings().grants.limits;
            let initialized = self.preinit.initialize(plugin.name(), limits, wasm).await;
            let initialized = initialized.map_err(|message| Error::Compile {
                plugin: plugin.name().to_owned(),
                origin: origin.clone(),
                message,
            })?;
            self.compiler.stats.count_initialized();
            wasm = initialized.into();
        }
        let component = self.compiler.compile_bytes(wasm.clone(), plugin).await?;
        let kind = Linkers::kind_of(&self.engine, &component);
        let pre = self.linkers.instantiate_pre(&self.engine, &component, kind, plugin.name(), &origin)?;
        let manifest = {
            let _permit = self.permit().await?;
            super::call::describe(&self.engine, &pre, plugin).await?
        };
        if manifest.kind != kind {
            self.linkers.instantiate_pre(&self.engine, &component, manifest.kind, &manifest.name, &origin)?;
        }
        let bytes = packaged(&wasm, &manifest)?;
        self.compiler.store(&bytes, &component);
        Ok((manifest, bytes))
    }

    /// Wait for a free instance slot.
    async fn permit(&self) -> Result<tokio::sync::SemaphorePermit<'_>> {
        self.permits.acquire().await.map_err(|_| Error::internal("runtime", "the host is shutting down"))
    }

    /// Run `action` of `plugin` with `input` for `caller`, after checking
    /// it against the action's schema; `ceiling` is the caller's highest
    /// access to what the plugin reaches. Also the statuses of the HTTP
    /// responses the call received and what else it did through its
    /// capabilities, whatever its outcome.
    pub async fn invoke(
        &self,
        plugin: &Plugin,
        action: &str,
        input: &Value,
        (caller, ceiling): (&Caller, Access),
    ) -> (Result<Value>, Vec<u16>, Usage) {
        let Ran { result, statuses, usage, .. } = self.run(plugin, action, input, (caller, ceiling)).await;
        (result, statuses, usage)
    }

    async fn run(&self, plugin: &Plugin, action: &str, input: &Value, (caller, ceiling): (&Caller, Access)) -> Ran {
        let started = async {
            let prepared = self.prepare(plugin).await?;
            let spec = prepared.manifest.action(action).ok_or_else(|| Error::UnknownAction {
                plugin: plugin.name().to_owned(),
                action: action.to_owned(),
                known: plugin.stub().action_names().map(str::to_owned).collect(),
            })?;
            let input = match validate(plugin, spec, input) {
                Ok(()) => input.clone(),
                // Optional arguments the model gave as `null` (as OpenAI's strict
                // mode makes it) mean "not given": drop them and check again.
                Err(error) => {
                    let mut relaxed = input.clone();
                    if !crate::load::drop_null_optionals(&spec.input_schema.value(), &mut relaxed) {
                        return Err(error);
                    }
                    validate(plugin, spec, &relaxed).map_err(|_| error)?;
                    relaxed
                }
            };
            let deadline = std::time::Instant::now() + plugin.settings().grants.limits.timeout();
            let permit = self.permit_by(deadline, plugin, action).await?;
            Ok((prepared, input, deadline, permit))
        };
        let (prepared, input, deadline, _permit) = match started.await {
            Ok(ready) => ready,
            Err(error) => return Ran::refused(error),
        };
        // What the call runs: the contract's `invoke`, or a plain
        // component's export with its arguments lowered (refused here,
        // before any instance is taken, when they do not fit).
        let target = match &prepared.pre {
            Pre::Contract(pre) => Target::Contract(pre),
            Pre::Plain { pre, exports, plain } => {
                let found =
                    plain.function(action).zip(exports.iter().find(|(name, _)| name == action).map(|(_, index)| index));
                let Some((function, index)) = found else {
                    return Ran::refused(Error::internal("runtime", format!("no export behind the action `{action}`")));
                };
                match super::plain::arguments(plugin, function, &input) {
                    Ok(args) => Target::Plain { pre, index, call: (function, args) },
                    Err(error) => return Ran::refused(error),
                }
            }
        };
        // A plugin kept per caller runs in the instance this caller's last
        // clean call left, if there is one.
        self.shelf.sweep();
        let kept = (plugin.settings().instances == Instances::PerCaller)
            .then(|| Key::new(&prepared, plugin.settings(), Tenant::of(caller, ceiling)));
        let warm = kept.as_ref().and_then(|key| self.shelf.take(key));
        match warm {
            Some(_) => self.compiler.stats.count_reused(),
            None => self.compiler.stats.count_instantiated(),
        }
        let mut ran = match target {
            Target::Contract(pre) => {
                let input = input.to_string();
                super::call::invoke(&self.engine, pre, plugin, (action, &input), (ceiling, deadline), warm).await
            }
            Target::Plain { pre, index, call } => {
                super::plain::invoke(&self.engine, pre, index, plugin, call, (ceiling, deadline), warm).await
            }
        };
        if let (Some(key), Some(warm)) = (kept, ran.warm.take()) {
            self.shelf.keep(key, warm);
        }
        ran
    }

    /// A free instance slot, waited for until `deadline` at most, in a
    /// queue of bounded length: a call that cannot get one is `Busy`.
    async fn permit_by(
        &self,
        deadline: std::time::Instant,
        plugin: &Plugin,
        action: &str,
    ) -> Result<tokio::sync::SemaphorePermit<'_>> {
        use std::sync::atomic::Ordering;
        if let Ok(permit) = self.permits.try_acquire() {
            return Ok(permit);
        }
        let busy = |reason: String| Error::Busy { plugin: plugin.name().to_owned(), action: action.to_owned(), reason };
        if self.waiting.fetch_add(1, Ordering::SeqCst) >= self.max_queue {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            return Err(busy(format!("{} calls are already waiting for an instance slot", self.max_queue)));
        }
        let started = std::time::Instant::now();
        let waited = tokio::time::timeout_at(deadline.into(), self.permits.acquire()).await;
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        match waited {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => Err(Error::internal("runtime", "the host is shutting down")),
            Err(_) => Err(busy(format!(
                "every instance slot stayed busy for {} ms, the call's whole time limit",
                started.elapsed().as_millis()
            ))),
        }
    }
}

/// What one call runs, resolved before an instance is taken for it.
enum Target<'a> {
    /// The contract's `invoke`.
    Contract(&'a crate::contract::tool::ToolPre<crate::sandbox::GuestState>),
    /// A plain component's export, with its arguments lowered.
    Plain {
        pre: &'a wasmtime::component::InstancePre<crate::sandbox::GuestState>,
        index: &'a wasmtime::component::ComponentExportIndex,
        call: (&'a crate::load::plain::Func, Vec<wasmtime::component::Val>),
    },
}

/// Check `input` against the input schema of `spec`: a JSON object, and
/// every violation (a few) named with where it is.
fn validate(plugin: &Plugin, spec: &ActionSpec, input: &Value) -> Result<()> {
    if !input.is_object() {
        return Err(Error::InputNotJson {
            plugin: plugin.name().to_owned(),
            action: spec.name.clone(),
            reason: format!("got {}", crate::load::plain::values::kind_of(input)),
        });
    }
    let validator = spec
        .validator()
        .map_err(|reason| Error::InvalidManifest { plugin: plugin.name().to_owned(), reason: reason.to_owned() })?;
    let mut errors = crate::load::violations(validator, input);
    if !errors.is_empty() && takes_no_arguments(&spec.input_schema.value()) {
        errors = vec!["this tool takes no arguments: call it with {}".to_owned()];
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Error::InputSchema { plugin: plugin.name().to_owned(), action: spec.name.clone(), errors })
    }
}

/// Whether `schema` is that of an action with no input: a closed object
/// with no properties.
fn takes_no_arguments(schema: &Value) -> bool {
    schema.get("additionalProperties") == Some(&Value::Bool(false))
        && schema.get("properties").and_then(Value::as_object).is_none_or(serde_json::Map::is_empty)
}

impl Backend for WasmRuntime {
    fn definitions<'a>(&'a self, catalog: &'a Catalog, origin: &'a str) -> BoxFuture<'a, Result<Vec<ToolRecord>>> {
        Box::pin(async move {
            let plugin = catalog
                .get(origin)
                .ok_or_else(|| Error::UnknownPlugin { plugin: origin.to_owned(), known: catalog.names() })?;
            // A database instance's actions say which database they reach
            // (a model may see them as tools of their own, in legacy mode).
            let database = plugin.settings().grants.sql.database().map(|database| {
                let settings = database.settings();
                let about = settings.description.as_deref().unwrap_or(&plugin.stub().description);
                format!("{} ({} access). ", about.trim_end_matches('.').to_owned() + ".", settings.access)
            });
            let records = |manifest: &Manifest| -> Vec<ToolRecord> {
                let mut records: Vec<ToolRecord> =
                    catalog.tools_of(origin).iter().filter_map(|e| ToolRecord::of_action(e, manifest)).collect();
                if let Some(database) = &database {
                    records.iter_mut().for_each(|r| r.description.insert_str(0, database));
                }
                records
            };
            // Known without compiling (its manifest section): nothing to load.
            if let Some(manifest) = plugin.manifest() {
                return Ok(records(manifest));
            }
            Ok(records(&self.prepare(plugin).await?.manifest))
        })
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let (catalog, tool) = (call.catalog, call.tool);
            let mut facts = Facts::starting(tool, call.caller.agent.as_deref());
            let Some(plugin) = catalog.get(&tool.origin) else {
                let error = Error::UnknownPlugin { plugin: tool.origin.clone(), known: catalog.names() };
                return Answer { result: Err(error), facts };
            };
            let (result, statuses, usage) =
                self.invoke(plugin, &tool.action, &call.input, (call.caller, call.caller.ceiling_for(tool))).await;
            facts.http_statuses = statuses;
            facts.usage = usage;
            Answer { result: result.map(Output::Json), facts }
        })
    }
}
