//! CPU, memory and output limits, and the one `Engine` they rely on.
//!
//! * CPU: epoch interruption. A ticker thread advances the engine's epoch
//!   every [`TICK`]; each call sets a deadline and is interrupted with a
//!   clean [`Timeout`](crate::error::Error::Timeout) once it passes.
//! * Memory: a [`ResourceLimiter`] caps each linear memory; growing past it
//!   traps, and the host reports [`MemoryLimit`](crate::error::Error::MemoryLimit).
//! * Instances come from a pooling allocator with copy-on-write memory
//!   images, so a fresh instance per call costs microseconds.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, ResourceLimiter};

/// Bytes of each pooled linear memory kept resident between instances
/// (reset in place rather than unmapped): what a small tool's call touches.
const KEEP_RESIDENT: usize = 1 << 20;

/// Period of the epoch ticker: the granularity of timeouts.
pub const TICK: Duration = Duration::from_millis(10);

/// Per-call limits of a plugin. Defaults suit pure tools; operators raise
/// them per plugin in the config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Wall-clock budget of one call (instantiation included), in ms.
    pub timeout_ms: u64,
    /// Maximum size of each linear memory, in MiB.
    pub memory_mb: u64,
    /// Largest output accepted from the plugin, in KiB.
    pub max_output_kb: u64,
    /// Budget of log and stdout/stderr bytes per call, in KiB; the rest is dropped.
    pub max_log_kb: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self { timeout_ms: 5_000, memory_mb: 64, max_output_kb: 1_024, max_log_kb: 64 }
    }
}

impl Limits {
    /// The timeout as a `Duration`.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// The memory cap in bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.memory_mb.saturating_mul(1024 * 1024)
    }

    /// The output cap in bytes.
    pub fn output_bytes(&self) -> usize {
        usize::try_from(self.max_output_kb.saturating_mul(1024)).unwrap_or(usize::MAX)
    }

    /// The log budget in bytes.
    pub fn log_bytes(&self) -> usize {
        usize::try_from(self.max_log_kb.saturating_mul(1024)).unwrap_or(usize::MAX)
    }
}

/// Settings of the shared engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineSettings {
    /// Instances that may run at once; further calls wait their turn,
    /// within their own deadline.
    pub max_concurrency: u32,
    /// Calls that may wait for an instance slot at once; past it a call is
    /// refused at once as busy.
    pub max_queue: u32,
    /// Use the pooling allocator (reserves address space up front; falls
    /// back to on-demand allocation if the reservation fails).
    pub pooling: bool,
    /// Largest memory any plugin may be configured with, in MiB.
    pub max_memory_mb: u64,
    /// Instances kept between calls for plugins whose calls share one per
    /// caller (`instances = "per-caller"`), in pool slots on top of
    /// `max_concurrency`; past it the one kept longest ago is dropped.
    pub max_kept_instances: u32,
}

impl Default for EngineSettings {
    fn default() -> Self {
        Self { max_concurrency: 64, max_queue: 256, pooling: true, max_memory_mb: 1024, max_kept_instances: 16 }
    }
}

/// Core instances one call may use: the pool holds this many per
/// concurrent call, and a component that instantiates more core modules is
/// refused when it is loaded (it could not run, or would take another
/// call's slots). A Rust component instantiates 1 to 4; a Python one
/// (componentize-py 0.25: CPython, libc and their shims linked as
/// separate modules) 14. A slot reserves address space, not memory.
pub const CORE_INSTANCES_PER_CALL: u32 = 20;

/// Build the engine: epochs on, copy-on-write images, pooling if possible.
pub fn engine(settings: &EngineSettings) -> wasmtime::Result<Engine> {
    let mut config = Config::new();
    config.epoch_interruption(true);
    config.memory_init_cow(true);
    config.max_wasm_stack(1 << 20);
    if settings.pooling {
        // Slots for the calls running at once, and for the instances kept
        // between calls (which hold theirs while idle).
        let n = settings.max_concurrency.max(1).saturating_add(settings.max_kept_instances);
        let mut pool = PoolingAllocationConfig::new();
        // A Rust component has a main module plus small adapter shims; a
        // Python or JavaScript one links its interpreter's modules too.
        pool.total_component_instances(n)
            .total_core_instances(n * CORE_INSTANCES_PER_CALL)
            .total_memories(n * 2)
            .total_tables(n * 8)
            .total_stacks(n)
            .max_memories_per_module(2)
            .max_tables_per_module(4)
            .max_memory_size(usize::try_from(settings.max_memory_mb << 20).unwrap_or(usize::MAX))
            .max_unused_warm_slots(n.min(16))
            // Reset a used slot by rewriting the pages it dirtied (found with
            // Linux's PAGEMAP_SCAN where the kernel has it) instead of
            // unmapping them: the next call on the slot takes no page faults,
            // and no TLB shootdown crosses the cores. Bounded per slot.
            .pagemap_scan(Enabled::Auto)
            .linear_memory_keep_resident(KEEP_RESIDENT)
            .table_keep_resident(KEEP_RESIDENT / 16);
        let mut pooled = config.clone();
        pooled.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        match Engine::new(&pooled) {
            Ok(engine) => return Ok(spawn_ticker(engine)),
            Err(e) => tracing::warn!(error = %e, "pooling allocator unavailable; using on-demand allocation"),
        }
    }
    Ok(spawn_ticker(Engine::new(&config)?))
}

/// Advance the engine's epoch every [`TICK`] until the engine is dropped.
fn spawn_ticker(engine: Engine) -> Engine {
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("quiver-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(TICK);
            }
        })
        .expect("spawn the epoch ticker thread");
    engine
}

/// The per-store resource limiter: caps memories and records whether the
/// cap was hit, so the host can tell an out-of-memory trap from other traps.
pub(crate) struct Limiter {
    memory_bytes: usize,
    /// Set when a memory tried to grow past the cap.
    pub(crate) memory_hit: bool,
}

impl Limiter {
    pub(crate) fn new(limits: &Limits) -> Self {
        Self { memory_bytes: usize::try_from(limits.memory_bytes()).unwrap_or(usize::MAX), memory_hit: false }
    }
}

/// Elements a table may grow to.
const MAX_TABLE_ELEMENTS: usize = 100_000;

impl ResourceLimiter for Limiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes {
            self.memory_hit = true;
            wasmtime::bail!("memory limit of {} bytes reached (wanted {desired})", self.memory_bytes);
        }
        Ok(maximum.is_none_or(|m| desired <= m))
    }

    fn table_growing(&mut self, _current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS && maximum.is_none_or(|m| desired <= m))
    }

    fn instances(&self) -> usize {
        32
    }

    fn tables(&self) -> usize {
        64
    }

    fn memories(&self) -> usize {
        8
    }
}
