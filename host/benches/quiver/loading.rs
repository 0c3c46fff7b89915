//! Loading and calling the bundled plugins.

use std::fmt::Write as _;
use std::time::Instant;

use quiver::Host;
use quiver::load::cache::ArtifactCache;
use quiver::load::stub;
use quiver::sandbox::limits::{self, EngineSettings};

use crate::{Options, SAMPLE_CALLS, Stats, ms, time, us};

/// Per bundled plugin: stub read, cold compile, cached load, first and warm calls.
pub(crate) fn section(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Loading and calling the bundled plugins\n").unwrap();
    writeln!(
        report,
        "Stub read: the `quiver:stub` section parsed from the bytes in memory, no compilation (median). \
         Cold compile: Cranelift, no cache (median). `.cwasm` load: a verified cache entry deserialized \
         (median). First call, no cache: a new host with an empty cache, from build to the first result \
         (compile, and for a plugin with an `#[init]` function its pre-initialisation: instrument, \
         compile, run the init, snapshot, compile the snapshot; median of 3). First call: a new host \
         with a warm cache, from build to the first result (load, `describe()` check, call; median). \
         Warm call: `Host::call` on a loaded plugin: schema check, a fresh store and instance from the \
         `InstancePre`, the call, output parsing (p50 / p99). The `.cwasm` load and both first calls \
         read the entries the host wrote (for `json`, the pre-initialised component).\n"
    )
    .unwrap();
    writeln!(
        report,
        "| plugin | size (KiB) | stub read (µs) | cold compile (ms) | first call, no cache (ms) | `.cwasm` load (ms) | first call, cache warm (ms) | warm call p50 / p99 (µs) |"
    )
    .unwrap();
    writeln!(report, "|---|---:|---:|---:|---:|---:|---:|---:|").unwrap();

    let engine = limits::engine(&EngineSettings::default()).unwrap();
    let no_cache = ArtifactCache::new(&engine, None, &Default::default()).unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = ArtifactCache::new(&engine, Some(cache_dir.path().to_owned()), &Default::default()).unwrap();

    // (plugin, warm call p50 / p99 without and with pre-initialisation)
    let mut initialized = Vec::new();
    for bundled in quiver_bundled::PLUGINS {
        let bytes = bundled.bytes;
        let stub = stub::read(bytes, bundled.file_name).expect("bundled stub");
        let reads = options.reps(2000);
        let stub_read =
            Stats::new((0..reads).map(|_| time(|| std::hint::black_box(stub::read(bytes, "x").unwrap())).1).collect());
        let cold = Stats::new(
            (0..options.reps(5)).map(|_| time(|| no_cache.load_or_compile(&engine, bytes).unwrap()).1).collect(),
        );
        let sample = SAMPLE_CALLS.iter().find(|(p, _, _)| *p == stub.name);
        let (uncached, first, warm) = match sample {
            Some(&(plugin, action, input)) => {
                let host = |dir: &std::path::Path| {
                    Host::builder().embedded(bundled.file_name, bytes).cache_dir(Some(dir.to_owned())).build().unwrap()
                };
                let mut was_initialized = false;
                let uncached = Stats::new(
                    (0..options.reps(3))
                        .map(|_| {
                            let empty = tempfile::tempdir().unwrap();
                            let start = Instant::now();
                            let fresh = host(empty.path());
                            runtime.block_on(fresh.call(plugin, action, input)).unwrap();
                            was_initialized = fresh.load_stats().initialized() > 0;
                            start.elapsed()
                        })
                        .collect(),
                );
                if was_initialized {
                    // A/B: the same bytes compiled as built, so every instance
                    // does the `#[init]` work itself.
                    let plain = tempfile::tempdir().unwrap();
                    ArtifactCache::new(&engine, Some(plain.path().to_owned()), &Default::default())
                        .unwrap()
                        .load_or_compile(&engine, bytes)
                        .unwrap();
                    let (_, warm) =
                        call_timings(options, runtime, || host(plain.path()), (plugin, action, input), 3000);
                    initialized.push((plugin, warm));
                }
                // The host fills the cache with what it makes of the bytes.
                runtime.block_on(host(cache_dir.path()).call(plugin, action, input)).unwrap();
                let (first, warm) =
                    call_timings(options, runtime, || host(cache_dir.path()), (plugin, action, input), 3000);
                (ms(uncached.median()), ms(first.median()), format!("{} / {}", us(warm.median()), us(warm.pct(0.99))))
            }
            None => {
                cache.load_or_compile(&engine, bytes).unwrap();
                ("—".into(), "—".into(), "—".into())
            }
        };
        let cached = Stats::new(
            (0..options.reps(50)).map(|_| time(|| cache.load_or_compile(&engine, bytes).unwrap()).1).collect(),
        );
        writeln!(
            report,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            stub.name,
            bytes.len() / 1024,
            us(stub_read.median()),
            ms(cold.median()),
            uncached,
            ms(cached.median()),
            first,
            warm
        )
        .unwrap();
        eprintln!("measured {}", stub.name);
    }
    writeln!(report).unwrap();
    for (plugin, plain) in initialized {
        writeln!(
            report,
            "`{plugin}` has an `#[init]` function, so the host pre-initialises it before its first compile (the \
             \"first call, no cache\" column: two compiles and the init). The same bytes compiled as built, \
             with every instance doing that work itself: warm call {} / {} µs (p50 / p99).\n",
            us(plain.median()),
            us(plain.pct(0.99))
        )
        .unwrap();
    }
}

/// The first call on a new host from `host` (build to first result, cache
/// warm; median of a few) and warm calls on one loaded host (`warm_reps`).
pub(crate) fn call_timings(
    options: &Options,
    runtime: &tokio::runtime::Runtime,
    host: impl Fn() -> Host,
    (plugin, action, input): (&str, &str, &str),
    warm_reps: usize,
) -> (Stats, Stats) {
    let first = Stats::new(
        (0..options.reps(5))
            .map(|_| {
                let start = Instant::now();
                runtime.block_on(host().call(plugin, action, input)).unwrap();
                start.elapsed()
            })
            .collect(),
    );
    let host = host();
    runtime.block_on(host.call(plugin, action, input)).unwrap();
    let warm = runtime.block_on(async {
        let mut samples = Vec::new();
        for _ in 0..options.reps(warm_reps) {
            let start = Instant::now();
            std::hint::black_box(host.call(plugin, action, input).await.unwrap());
            samples.push(start.elapsed());
        }
        Stats::new(samples)
    });
    (first, warm)
}
