//! Pre-initialisation: a plugin's start-up work done once, not per call.
//!
//! Each call runs in a fresh instance, so work a guest does before it can
//! answer (parsing a standard library, building tables) repeats on every
//! call. A component that exports the contract's [`INIT_EXPORT`] (the SDK's
//! `#[init]` function) has it run once here instead, in the sandbox, and
//! the state it leaves (linear memories and globals) becomes the initial
//! state of a rewritten component, marked with an [`INITIALIZED_SECTION`]
//! so that it is never initialised again; every instance starts from it.
//! The instrumentation and the rewrite are `wasmtime-wizer`'s; this module
//! runs the instrumented component under the plugin's limits with **no
//! grants** (no configuration values, no HTTP, no SQL: what a snapshot
//! keeps must not depend on where it was taken) and reads its state back.
//!
//! The export itself stays (wasmtime-wizer 48 removes it from the core
//! module but not the component's use of it when both have one name, as
//! `wit-bindgen` gives them); the host never calls it again.
//!
//! The compiler calls it through [`Initializer`] before compiling such a
//! component, so a bundled or dropped-in plugin is initialised once per
//! `.cwasm` cache; `quiver package` calls it to write the initialised
//! component to disk, so it is never initialised again.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::Semaphore;
use wasmparser::{ComponentExternalKind, Parser, Payload};
use wasmtime::component::{Component, ComponentExportIndex, Instance, Lift, WasmList};
use wasmtime::{Engine, Store, UpdateDeadline};
use wasmtime_wizer::{ComponentInstanceState, Wizer};

use crate::contract::{Access, INIT_EXPORT, INITIALIZED_SECTION};
use crate::load::compile::{InitFuture, Initializer};
use crate::sandbox::limits::Limits;
use crate::sandbox::{self, Grants, GuestState, Linkers};

/// Runs the initialisation of components that ask for it, for one engine.
pub(crate) struct Preinit {
    engine: Engine,
    linkers: Arc<Linkers>,
    /// The runtime's instance slots: an initialisation holds one.
    permits: Arc<Semaphore>,
}

impl Preinit {
    pub(crate) fn new(engine: Engine, linkers: Arc<Linkers>, permits: Arc<Semaphore>) -> Preinit {
        Preinit { engine, linkers, permits }
    }
}

impl Initializer for Preinit {
    fn wants(&self, wasm: &[u8]) -> bool {
        wants_init(wasm)
    }

    fn initialize(&self, plugin: &str, limits: Limits, wasm: Bytes) -> InitFuture {
        let (engine, linkers, permits) = (self.engine.clone(), self.linkers.clone(), self.permits.clone());
        let plugin = plugin.to_owned();
        Box::pin(async move {
            use futures_util::FutureExt as _;
            let started = Instant::now();
            // wasmtime-wizer asserts what it does not support (e.g. a component
            // start function): that is this component's failure, not the host's.
            let run = std::panic::AssertUnwindSafe(initialize(&engine, &linkers, &permits, &plugin, limits, &wasm))
                .catch_unwind()
                .await
                .unwrap_or_else(|panic| {
                    let message = panic
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "no message".to_owned());
                    Err(format!("wasmtime-wizer cannot rewrite it: {message}"))
                });
            let snapshot =
                run.map_err(|reason| format!("its `{INIT_EXPORT}` export (pre-initialisation) failed: {reason}"))?;
            let elapsed_ms = started.elapsed().as_millis() as u64;
            tracing::info!(plugin, elapsed_ms, bytes = snapshot.len(), "plugin pre-initialised");
            Ok(snapshot)
        })
    }
}

/// Whether component `wasm` asks to be initialised: it exports
/// [`INIT_EXPORT`] as a function at its outermost level and carries no
/// [`INITIALIZED_SECTION`] there (read from its sections; nothing is
/// compiled).
pub(crate) fn wants_init(wasm: &[u8]) -> bool {
    let (mut depth, mut exported) = (0usize, false);
    for payload in Parser::new(0).parse_all(wasm) {
        let Ok(payload) = payload else { return false };
        match payload {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentExportSection(exports) if depth == 0 => {
                exported |= exports
                    .into_iter()
                    .flatten()
                    .any(|e| e.name.name == INIT_EXPORT && e.kind == ComponentExternalKind::Func);
            }
            Payload::CustomSection(section) if depth == 0 && section.name() == INITIALIZED_SECTION => return false,
            _ => {}
        }
    }
    exported
}

/// Instrument `wasm`, instantiate it in a fresh sandbox store, call its
/// init export and rewrite it with the state that left.
async fn initialize(
    engine: &Engine,
    linkers: &Linkers,
    permits: &Semaphore,
    plugin: &str,
    limits: Limits,
    wasm: &[u8],
) -> Result<Vec<u8>, String> {
    let mut wizer = Wizer::new();
    wizer.keep_init_func(true);
    let (context, instrumented) = wizer.instrument_component(wasm).map_err(|e| format!("{e:#}"))?;
    let component = {
        let engine = engine.clone();
        tokio::task::spawn_blocking(move || Component::new(&engine, &instrumented))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("{e:#}"))?
    };
    let kind = Linkers::kind_of(engine, &component);
    let pre =
        linkers.instantiate_pre(engine, &component, kind, plugin, "pre-initialisation").map_err(|e| e.to_string())?;
    let _permit = permits.acquire().await.map_err(|_| "the host is shutting down".to_owned())?;
    let grants = Grants { limits, ..Grants::default() };
    let deadline = Instant::now() + limits.timeout();
    let mut store = sandbox::store(engine, plugin, &grants, Access::Read, deadline);
    let ran = tokio::time::timeout(limits.timeout() + std::time::Duration::from_millis(250), async {
        let instance = pre.instance_pre().instantiate_async(&mut store).await?;
        let init = instance.get_typed_func::<(), ()>(&mut store, INIT_EXPORT)?;
        init.call_async(&mut store, ()).await?;
        Ok::<_, wasmtime::Error>(instance)
    })
    .await;
    let ending = store.data_mut().finish();
    let instance = match ran {
        Ok(Ok(instance)) => instance,
        Err(_) => return Err(format!("it ran past the time limit ({} ms)", limits.timeout().as_millis())),
        Ok(Err(error)) if ending.memory_hit => {
            return Err(format!("it reached the memory limit ({} bytes): {error:#}", limits.memory_bytes()));
        }
        Ok(Err(error)) => {
            // As for a call: the panic message, else the last line on stderr, else the trap.
            let trap = error.downcast_ref::<wasmtime::Trap>().copied();
            let reason = (ending.last.panic)
                .or_else(|| trap.is_some().then_some(ending.last.stderr).flatten())
                .or_else(|| trap.map(|t| t.to_string()))
                .unwrap_or_else(|| format!("{error:#}"));
            tracing::debug!(plugin, error = %format!("{error:#}"), "pre-initialisation trapped");
            return Err(super::call::guest_text(&reason, super::call::MAX_ERROR_BYTES));
        }
    };
    // Reading the state back runs only the instrumentation's accessors.
    store.epoch_deadline_callback(|_| Ok(UpdateDeadline::Continue(1)));
    let mut state = State { store: &mut store, instance, failure: None };
    let snapshot = wizer.snapshot_component(&context, &mut state).await.map_err(|e| format!("{e:#}"))?;
    if let Some(failure) = state.failure {
        return Err(format!("reading its state back failed: {failure}"));
    }
    let mut snapshot = snapshot;
    let mark = format!("{INIT_EXPORT} ran in quiver {}", env!("CARGO_PKG_VERSION"));
    wasm_encoder::ComponentSection::append_to_component(
        &wasm_encoder::CustomSection { name: INITIALIZED_SECTION.into(), data: mark.as_bytes().into() },
        &mut snapshot,
    );
    Ok(snapshot)
}

/// The instrumented instance, as `wasmtime-wizer` reads its state: through
/// the accessor functions the instrumentation exported.
struct State<'a> {
    store: &'a mut Store<GuestState>,
    instance: Instance,
    /// The first accessor call that failed (the snapshot is then dropped).
    failure: Option<String>,
}

impl State<'_> {
    /// Call `func` of the exported `instance`, which returns one `R`.
    async fn call<R: Lift + Send + Sync + 'static>(&mut self, instance: &str, func: &str) -> Option<R> {
        let result: wasmtime::Result<R> = async {
            let index = |parent: Option<&ComponentExportIndex>, name: &str, store: &mut Store<GuestState>| {
                self.instance
                    .get_export_index(&mut *store, parent, name)
                    .ok_or_else(|| wasmtime::format_err!("no export `{name}`"))
            };
            let parent = index(None, instance, self.store)?;
            let func = index(Some(&parent), func, self.store)?;
            let func = self.instance.get_typed_func::<(), (R,)>(&mut *self.store, func)?;
            Ok(func.call_async(&mut *self.store, ()).await?.0)
        }
        .await;
        match result {
            Ok(value) => Some(value),
            Err(error) => {
                self.failure.get_or_insert_with(|| format!("{instance}#{func}: {error:#}"));
                None
            }
        }
    }
}

impl ComponentInstanceState for State<'_> {
    async fn call_func_ret_list_u8(&mut self, instance: &str, func: &str, contents: impl FnOnce(&[u8]) + Send) {
        if let Some(list) = self.call::<WasmList<u8>>(instance, func).await {
            contents(list.as_le_slice(&*self.store));
        }
    }

    async fn call_func_ret_s32(&mut self, instance: &str, func: &str) -> i32 {
        self.call(instance, func).await.unwrap_or_default()
    }

    async fn call_func_ret_s64(&mut self, instance: &str, func: &str) -> i64 {
        self.call(instance, func).await.unwrap_or_default()
    }

    async fn call_func_ret_f32(&mut self, instance: &str, func: &str) -> u32 {
        self.call::<f32>(instance, func).await.unwrap_or_default().to_bits()
    }

    async fn call_func_ret_f64(&mut self, instance: &str, func: &str) -> u64 {
        self.call::<f64>(instance, func).await.unwrap_or_default().to_bits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_outer_function_export_asks_for_initialisation() {
        let with = wat::parse_str(
            r#"(component
                (core module $m (func (export "f")))
                (core instance $i (instantiate $m))
                (func $f (canon lift (core func $i "f")))
                (export "wizer-initialize" (func $f)))"#,
        )
        .unwrap();
        assert!(wants_init(&with));
        let mut done = with.clone();
        wasm_encoder::ComponentSection::append_to_component(
            &wasm_encoder::CustomSection { name: INITIALIZED_SECTION.into(), data: b"".into() },
            &mut done,
        );
        assert!(!wants_init(&done), "initialised once is enough");
        let nested = wat::parse_str(
            r#"(component
                (component
                    (core module $m (func (export "f")))
                    (core instance $i (instantiate $m))
                    (func $f (canon lift (core func $i "f")))
                    (export "wizer-initialize" (func $f))))"#,
        )
        .unwrap();
        assert!(!wants_init(&nested));
        assert!(!wants_init(&wat::parse_str("(component (core module))").unwrap()));
        assert!(!wants_init(b"not wasm"));
    }
}
