//! Plugins in other languages: the Python and JavaScript examples, built
//! from source (componentize-py, componentize-js) and packaged, beside a
//! Rust plugin of the same kind; and what compile on arrival saves.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use quiver::Host;
use quiver::load::cache::ArtifactCache;
use quiver::load::stub;
use quiver::sandbox::limits::{self, EngineSettings};
use quiver_tests::builds::{publish, wait_for};

use crate::{Options, Stats, ms, time, us};

/// (language, plugin, action, input) of each measured guest.
const CALLS: &[(&str, &str, &str, &str)] = &[
    ("Rust (quiver-sdk)", "text", "slugify", r#"{"text": "Hello, World!"}"#),
    ("Python (componentize-py 0.25.1)", "stats", "summarize", r#"{"numbers": [1, 2, 2, 3, 10]}"#),
    ("JavaScript (componentize-js 0.23.0)", "url", "parse", r#"{"url": "https://example.com:8080/a?x=1#top"}"#),
];

pub(crate) fn section(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Plugins in Python and JavaScript\n").unwrap();
    writeln!(
        report,
        "The examples `examples/python-stats` and `examples/js-url`, built from source and packaged \
         (`quiver package`: stub and manifest sections), beside the bundled Rust `text` plugin. Columns as \
         in the loading table; core instances: the core modules one call instantiates; kept per caller: \
         warm calls with `instances = \"per-caller\"`, each in the instance the same caller's last call left.\n"
    )
    .unwrap();
    writeln!(
        report,
        "| language | plugin | size (KiB) | core instances | stub read (µs) | cold compile (ms) | `.cwasm` load (ms) | first call, cache warm (ms) | warm call p50 / p99 (µs) | kept per caller p50 / p99 (µs) |"
    )
    .unwrap();
    writeln!(report, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|").unwrap();

    let packager = Host::builder().cache_dir(None).build().unwrap();
    let package = |path: &std::path::Path| runtime.block_on(packager.package(path)).unwrap().bytes;
    let text = quiver_bundled::PLUGINS.iter().find(|p| p.file_name == "text.wasm").unwrap().bytes;
    let guests: Vec<(usize, Vec<u8>)> = vec![
        // As `cargo build` leaves it: the bundle's build appends the manifest section.
        (0, without_manifest_section(text)),
        (1, package(quiver_tests::guests::python_stats())),
        (2, package(quiver_tests::guests::js_url())),
    ];
    let engine = limits::engine(&EngineSettings::default()).unwrap();
    let no_cache = ArtifactCache::new(&engine, None, &Default::default()).unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = ArtifactCache::new(&engine, Some(cache_dir.path().to_owned()), &Default::default()).unwrap();
    for (index, bytes) in &guests {
        let (language, plugin, action, input) = CALLS[*index];
        let reads = options.reps(500);
        let stub_read =
            Stats::new((0..reads).map(|_| time(|| std::hint::black_box(stub::read(bytes, "x").unwrap())).1).collect());
        let cold = Stats::new(
            (0..options.reps(3)).map(|_| time(|| no_cache.load_or_compile(&engine, bytes).unwrap()).1).collect(),
        );
        cache.load_or_compile(&engine, bytes).unwrap();
        let cached = Stats::new(
            (0..options.reps(20)).map(|_| time(|| cache.load_or_compile(&engine, bytes).unwrap()).1).collect(),
        );
        let file_name: &'static str = Box::leak(format!("{plugin}.wasm").into_boxed_str());
        let bytes: &'static [u8] = Box::leak(bytes.clone().into_boxed_slice());
        let host =
            || Host::builder().embedded(file_name, bytes).cache_dir(Some(cache_dir.path().to_owned())).build().unwrap();
        let (first, warm) = crate::loading::call_timings(options, runtime, host, (plugin, action, input), 2000);
        let kept_host = || {
            let config = format!("[plugins.{plugin}]\ninstances = \"per-caller\"");
            let config = quiver::Config::parse(&config, cache_dir.path()).unwrap();
            let builder = Host::builder().config(config).embedded(file_name, bytes);
            builder.cache_dir(Some(cache_dir.path().to_owned())).build().unwrap()
        };
        let (_, kept) = crate::loading::call_timings(options, runtime, kept_host, (plugin, action, input), 2000);
        writeln!(
            report,
            "| {language} | {plugin} | {} | {} | {} | {} | {} | {} | {} / {} | {} / {} |",
            bytes.len() / 1024,
            core_instances(bytes),
            us(stub_read.median()),
            ms(cold.median()),
            ms(cached.median()),
            ms(first.median()),
            us(warm.median()),
            us(warm.pct(0.99)),
            us(kept.median()),
            us(kept.pct(0.99))
        )
        .unwrap();
        eprintln!("measured {plugin}");
    }
    writeln!(report).unwrap();
    first_listing(options, runtime, &guests, report);
    arrival(runtime, &guests[1].1, report);
}

/// The first full tool list (an MCP `tools/list` under the selection
/// threshold: every schema) of a new host serving one plugin, empty cache:
/// unpackaged, the plugin is compiled for its schemas; packaged, they come
/// from its `quiver:manifest` section.
fn first_listing(
    options: &Options,
    runtime: &tokio::runtime::Runtime,
    guests: &[(usize, Vec<u8>)],
    report: &mut String,
) {
    let packager = Host::builder().cache_dir(None).build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("text.wasm");
    std::fs::write(&text, &guests[0].1).unwrap();
    let packaged_text = runtime.block_on(packager.package(&text)).unwrap().bytes;
    let first_list = |bytes: &[u8]| -> Stats {
        let bytes: &'static [u8] = Box::leak(bytes.to_vec().into_boxed_slice());
        Stats::new(
            (0..options.reps(5))
                .map(|_| {
                    let host = Host::builder().embedded("plugin.wasm", bytes).cache_dir(None).build().unwrap();
                    let start = Instant::now();
                    let turn = runtime.block_on(host.session(None).unwrap().listed_tools());
                    let elapsed = start.elapsed();
                    assert!(turn.tools.iter().any(|t| !t.meta), "the plugin's tools are listed");
                    elapsed
                })
                .collect(),
        )
    };
    // A component without a stub is not served at all: only packaged.
    let rows = [
        ("Rust `text`", Some(first_list(&guests[0].1)), first_list(&packaged_text)),
        ("Python `stats`", None, first_list(&guests[1].1)),
        ("JavaScript `url`", None, first_list(&guests[2].1)),
    ];
    writeln!(
        report,
        "First full tool list (every schema, as an MCP `tools/list` under the selection threshold) of a new host \
         serving one plugin, no cache (median): unpackaged, the plugin is compiled for its schemas; packaged, \
         they are read from its `quiver:manifest` section.\n"
    )
    .unwrap();
    writeln!(report, "| plugin | unpackaged (ms) | packaged (ms) |\n|---|---:|---:|").unwrap();
    for (name, unpackaged, packaged) in rows {
        let unpackaged = unpackaged.map_or_else(|| "— (not served without a stub)".to_owned(), |u| ms(u.median()));
        writeln!(report, "| {name} | {unpackaged} | {} |", ms(packaged.median())).unwrap();
    }
    writeln!(report).unwrap();
}

/// From the file dropped into a watched folder to answers: when it is
/// listed, when its background compile is done, and the first call made at
/// listing (it joins the compile) or after the compile (what compile on
/// arrival gives a model that calls a moment later; without it, every
/// first call pays the compile, as the call at listing does).
fn arrival(runtime: &tokio::runtime::Runtime, bytes: &[u8], report: &mut String) {
    let (plugin, action, input) = ("stats", "summarize", CALLS[1].3);
    let drop_and_call = |wait_for_compile: bool| -> (Duration, Duration, Duration) {
        let plugins = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let host =
            Host::builder().plugins_dir(plugins.path()).cache_dir(Some(cache.path().to_owned())).build().unwrap();
        runtime.block_on(async {
            let _watcher = host.watch().unwrap();
            let dropped = Instant::now();
            publish(plugins.path(), "stats.wasm", bytes);
            wait_for(&host, |c| c.get(plugin).is_some()).await;
            let listed = dropped.elapsed();
            if wait_for_compile {
                let served = host.catalog().get(plugin).unwrap().clone();
                while !served.is_loaded() {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }
            let compiled = dropped.elapsed();
            let start = Instant::now();
            host.call(plugin, action, input).await.unwrap();
            (listed, compiled, start.elapsed())
        })
    };
    let (listed, _, at_listing) = drop_and_call(false);
    let (_, compiled, after) = drop_and_call(true);
    writeln!(
        report,
        "Compile on arrival, the Python plugin dropped into a watched folder (empty cache): listed after {} ms, \
         compiled in the background after {} ms; a first call made at listing answers in {} ms (it joins that \
         compile, as every first call would without compile on arrival); one made after it, in {} ms.\n",
        ms(listed),
        ms(compiled),
        ms(at_listing),
        ms(after)
    )
    .unwrap();
}

/// How many core modules the component instantiates.
fn core_instances(bytes: &[u8]) -> usize {
    wasmparser::Parser::new(0)
        .parse_all(bytes)
        .filter_map(Result::ok)
        .map(|payload| match payload {
            wasmparser::Payload::InstanceSection(reader) => {
                reader.into_iter().filter(|i| matches!(i, Ok(wasmparser::Instance::Instantiate { .. }))).count()
            }
            _ => 0,
        })
        .sum()
}

/// `component` without the `quiver:manifest` section the bundle's build
/// script appended (its last section), as the guest build produced it.
fn without_manifest_section(component: &[u8]) -> Vec<u8> {
    let mut last = None;
    for payload in wasmparser::Parser::new(0).parse_all(component) {
        if let Ok(wasmparser::Payload::CustomSection(section)) = payload
            && section.name() == quiver::contract::MANIFEST_SECTION
            && section.range().end == component.len()
        {
            last = Some(section.range());
        }
    }
    let range = last.expect("the bundled text plugin ends with its manifest section");
    // The section's id (1 byte) and size (LEB128) come before its contents.
    let mut size = Vec::new();
    wasm_encoder::Encode::encode(&(range.len() as u32), &mut size);
    component[..range.start - 1 - size.len()].to_vec()
}
