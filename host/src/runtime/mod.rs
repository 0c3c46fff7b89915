//! Invocation: a fresh `Store` per call, under the plugin's limits.
//!
//! Each call instantiates the plugin from its `InstancePre` (microseconds
//! with the pooling allocator), runs one export under an epoch deadline and
//! a memory cap, and drops the store. A trap, timeout or OOM ends that store
//! only; nothing is shared between calls.

mod store;

use std::sync::Arc;
use std::time::Instant;

use wasmtime::{Store, Trap, UpdateDeadline};
use wasmtime_wasi_http::WasiHttpCtx;

pub(crate) use store::StoreData;

use crate::contract::{guest_error, tool::ToolPre};
use crate::load::{Manifest, Plugin};
use crate::sandbox::http::HttpPolicy;
use crate::sandbox::limits::Limiter;
use crate::sandbox::wasi::{self, GuestLog};
use crate::{Error, Result};

/// Extra wall-clock time past the CPU deadline before the call is dropped
/// (covers time blocked in host calls, which epochs cannot interrupt).
const WALL_GRACE: std::time::Duration = std::time::Duration::from_millis(250);

fn new_store(engine: &wasmtime::Engine, plugin: &Plugin) -> Store<StoreData> {
    let settings = plugin.settings();
    let log = GuestLog::new(Arc::from(plugin.name()), settings.limits.log_bytes());
    let data = StoreData {
        wasi: wasi::context(&log),
        http: WasiHttpCtx::new(),
        http_policy: HttpPolicy::new(settings.allow_http.clone()),
        table: wasmtime::component::ResourceTable::new(),
        limiter: Limiter::new(&settings.limits),
        log,
        config: settings.config.clone(),
    };
    let mut store = Store::new(engine, data);
    store.limiter(|data| &mut data.limiter);
    let deadline = Instant::now() + settings.limits.timeout();
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        Ok(if Instant::now() >= deadline { UpdateDeadline::Interrupt } else { UpdateDeadline::Yield(1) })
    });
    store
}

/// Run `describe()` in a fresh instance and check the manifest.
pub(crate) async fn describe(engine: &wasmtime::Engine, pre: &ToolPre<StoreData>, plugin: &Plugin) -> Result<Manifest> {
    let mut store = new_store(engine, plugin);
    let limit = plugin.settings().limits.timeout();
    let outcome = tokio::time::timeout(limit + WALL_GRACE, async {
        let instance = pre.instantiate_async(&mut store).await?;
        instance.quiver_plugin_plugin().call_describe(&mut store).await
    })
    .await;
    let manifest = settle(&mut store, plugin, "describe", outcome)?;
    Manifest::from_wit(manifest, plugin.name())
}

/// Run `invoke(action, input)` in a fresh instance; `input` was validated.
pub(crate) async fn invoke(
    engine: &wasmtime::Engine,
    pre: &ToolPre<StoreData>,
    plugin: &Plugin,
    action: &str,
    input: &str,
) -> Result<serde_json::Value> {
    let mut store = new_store(engine, plugin);
    let limits = plugin.settings().limits;
    let outcome = tokio::time::timeout(limits.timeout() + WALL_GRACE, async {
        let instance = pre.instantiate_async(&mut store).await?;
        instance.quiver_plugin_plugin().call_invoke(&mut store, action, input).await
    })
    .await;
    let output = settle(&mut store, plugin, action, outcome)?.map_err(|e| {
        let (kind, message) = guest_error(e);
        Error::Guest { plugin: plugin.name().to_owned(), action: action.to_owned(), kind, message }
    })?;
    if output.len() > limits.output_bytes() {
        return Err(Error::OutputTooLarge {
            plugin: plugin.name().to_owned(),
            action: action.to_owned(),
            size: output.len(),
            limit: limits.output_bytes(),
        });
    }
    serde_json::from_str(&output).map_err(|e| Error::InvalidOutput {
        plugin: plugin.name().to_owned(),
        action: action.to_owned(),
        reason: e.to_string(),
    })
}

/// Turn the outcome of a guest call into our result, naming the cause of a
/// failure: the deadline, the memory cap, or a crash (with the panic
/// message when the guest reported one).
fn settle<T>(
    store: &mut Store<StoreData>,
    plugin: &Plugin,
    action: &str,
    outcome: std::result::Result<wasmtime::Result<T>, tokio::time::error::Elapsed>,
) -> Result<T> {
    let log = store.data().log.clone();
    let mut log = log.lock().expect("guest log lock");
    log.finish();
    let limits = plugin.settings().limits;
    let timeout =
        || Error::Timeout { plugin: plugin.name().to_owned(), action: action.to_owned(), limit: limits.timeout() };
    let error = match outcome {
        Ok(Ok(value)) => return Ok(value),
        Err(_elapsed) => return Err(timeout()),
        Ok(Err(error)) => error,
    };
    if store.data().limiter.memory_hit {
        return Err(Error::MemoryLimit {
            plugin: plugin.name().to_owned(),
            action: action.to_owned(),
            limit_bytes: limits.memory_bytes(),
        });
    }
    let trap = error.downcast_ref::<Trap>().copied();
    if trap == Some(Trap::Interrupt) {
        return Err(timeout());
    }
    let message = log
        .panic
        .take()
        .or_else(|| trap.is_some().then(|| log.last_stderr.take()).flatten())
        .or_else(|| trap.map(|t| t.to_string()))
        .unwrap_or_else(|| format!("{error:#}"));
    tracing::warn!(plugin = plugin.name(), action, error = %format!("{error:#}"), "guest call failed");
    Err(Error::Trap { plugin: plugin.name().to_owned(), action: action.to_owned(), message })
}
