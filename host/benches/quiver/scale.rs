//! Scale: start-up to Tier 1 with many plugins (lazy vs eager), discovery
//! latency, throughput.
//!
//! Catalogs of N plugins are made by copying the bundled `codec` plugin
//! under distinct names: every `codec` in its bytes (the stub, the name
//! `describe()` returns, paths in strings) becomes `c0001`, `c0002`...,
//! which have the same length, so nothing else moves. Each copy is a valid
//! plugin with its own name and its own content hash (its own compile).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use quiver::Host;
use quiver::disclosure::formats::ToolDef;

use crate::{Options, Stats, ms, us};

/// The sizes of the generated catalogs.
pub(crate) fn sizes(options: &Options) -> &'static [usize] {
    if options.smoke { &[10] } else { &[10, 100, 1000] }
}

/// Write `n` renamed copies of the bundled codec plugin into `dir`.
pub(crate) fn generate(dir: &Path, n: usize) {
    let codec = quiver_bundled::PLUGINS.iter().find(|p| p.file_name == "codec.wasm").expect("bundled codec").bytes;
    let at: Vec<usize> = codec.windows(5).enumerate().filter(|(_, w)| *w == b"codec").map(|(i, _)| i).collect();
    assert!(!at.is_empty());
    for i in 0..n {
        let mut bytes = codec.to_vec();
        let name = format!("c{i:04}");
        for &position in &at {
            bytes[position..position + 5].copy_from_slice(name.as_bytes());
        }
        std::fs::write(dir.join(format!("{name}.wasm")), bytes).unwrap();
    }
}

/// Run the `quiver` binary; its wall time and peak RSS (KiB).
///
/// Through a fresh copy of this bench binary (`--measure-child`): Linux
/// starts a child's peak RSS at its parent's RSS at fork, and this process
/// holds the corpora by now, so a direct child would report our size.
pub(crate) fn run(args: &[&str]) -> (Duration, u64) {
    let output = Command::new(std::env::current_exe().expect("the bench binary"))
        .arg("--measure-child")
        .arg(env!("CARGO_BIN_EXE_quiver"))
        .args(args)
        .output()
        .expect("run the measuring helper");
    let text = String::from_utf8_lossy(&output.stdout);
    let mut fields = text.split_whitespace().map(|f| f.parse::<u64>());
    match (output.status.success(), fields.next(), fields.next()) {
        (true, Some(Ok(nanos)), Some(Ok(kib))) => (Duration::from_nanos(nanos), kib),
        _ => panic!("quiver {args:?} failed: {}", String::from_utf8_lossy(&output.stderr)),
    }
}

/// The helper side of [`run`]: spawn `program args`, wait, print
/// `<wall nanoseconds> <peak RSS KiB>`; exit 1 if the program failed.
pub(crate) fn measure_child(program: &str, args: &[String]) -> ! {
    let start = Instant::now();
    let child = Command::new(program)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("spawn the measured program");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value; `wait4` fills it for our own child.
    #[allow(unsafe_code)]
    let (reaped, rusage) = unsafe {
        let mut rusage: libc::rusage = std::mem::zeroed();
        let reaped = libc::wait4(pid, &mut status, 0, &mut rusage);
        (reaped, rusage)
    };
    let elapsed = start.elapsed();
    // The child is reaped already; dropping `child` does not wait on it.
    drop(child);
    if reaped != pid || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        std::process::exit(1);
    }
    println!("{} {}", elapsed.as_nanos(), rusage.ru_maxrss);
    std::process::exit(0);
}

/// Process start to Tier 1, lazy (ours) and eager (compile everything).
pub(crate) fn startup(options: &Options, report: &mut String) {
    writeln!(report, "## Start-up and scale\n").unwrap();
    writeln!(
        report,
        "From process start to the Tier-1 prompt printed (`quiver --no-bundled --plugins DIR prompt`), \
         with N plugins (renamed copies of the 287 KiB `codec` plugin). *Lazy* is Quiver: stubs only. \
         *Eager, cold* compiles every plugin first with an empty cache (`quiver precompile`, what a host \
         that compiles at start-up does); *eager, cached* is the same with every `.cwasm` already cached. \
         Wall time is the median of several runs for lazy and one run for eager; peak RSS from \
         `wait4` (through a small launcher, so that the bench's own size does not leak into it).\n"
    )
    .unwrap();
    writeln!(
        report,
        "| plugins | lazy: Tier 1 (ms) | lazy: peak RSS (MiB) | eager, cold (s) | eager, cached (ms) | eager: peak RSS (MiB) | eager cold / lazy |"
    )
    .unwrap();
    writeln!(report, "|---:|---:|---:|---:|---:|---:|---:|").unwrap();
    for &n in sizes(options) {
        let dir = tempfile::tempdir().unwrap();
        generate(dir.path(), n);
        let plugins = dir.path().to_str().unwrap();
        let lazy_runs: Vec<(Duration, u64)> = (0..options.reps(7))
            .map(|_| run(&["--no-bundled", "--no-cache", "--plugins", plugins, "prompt"]))
            .collect();
        let lazy = Stats::new(lazy_runs.iter().map(|r| r.0).collect());
        let lazy_rss = lazy_runs.iter().map(|r| r.1).max().unwrap_or(0);
        let cache = tempfile::tempdir().unwrap();
        let cache = cache.path().to_str().unwrap().to_owned();
        let eager = ["--no-bundled", "--cache-dir", &cache, "--plugins", plugins, "precompile"];
        let (cold, cold_rss) = run(&eager);
        let (cached, cached_rss) = run(&eager);
        writeln!(
            report,
            "| {n} | {} | {:.1} | {:.1} | {} | {:.1} | {:.0}× |",
            ms(lazy.median()),
            lazy_rss as f64 / 1024.0,
            cold.as_secs_f64(),
            ms(cached),
            cold_rss.max(cached_rss) as f64 / 1024.0,
            cold.as_secs_f64() / lazy.median().as_secs_f64()
        )
        .unwrap();
        eprintln!("measured start-up with {n} plugins");
    }
    writeln!(report).unwrap();
    ranker_startup(options, report);
}

/// Start-up to Tier 1 with the default (hybrid) ranker against BM25 alone,
/// one plugin, runs interleaved: the embedding model is loaded by the first
/// search, so the two should differ by noise only.
fn ranker_startup(options: &Options, report: &mut String) {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), 1);
    let bm25 = dir.path().join("bm25.toml");
    std::fs::write(&bm25, "[search]\nranker = \"bm25\"\n").unwrap();
    let hybrid = dir.path().join("hybrid.toml");
    std::fs::write(&hybrid, "[search]\nranker = \"hybrid\"\n").unwrap();
    let plugins = dir.path().to_str().unwrap();
    let mut runs = [Vec::new(), Vec::new()];
    for _ in 0..options.reps(10) {
        for (config, runs) in [&hybrid, &bm25].into_iter().zip(runs.iter_mut()) {
            let config = config.to_str().unwrap();
            runs.push(run(&["--no-bundled", "--no-cache", "--config", config, "--plugins", plugins, "prompt"]));
        }
    }
    let [hybrid, bm25] = runs.map(|runs| {
        let rss = runs.iter().map(|r| r.1).max().unwrap_or(0) as f64 / 1024.0;
        (Stats::new(runs.into_iter().map(|r| r.0).collect()).median(), rss)
    });
    writeln!(
        report,
        "The ranker at start-up (one plugin, runs interleaved, median of {}): default `hybrid` {} ms, {:.1} MiB; \
         `ranker = \"bm25\"` {} ms, {:.1} MiB ({:.2}×, {:+.1} MiB). The embedding model is loaded by the first \
         search, not at start-up.\n",
        options.reps(10),
        ms(hybrid.0),
        hybrid.1,
        ms(bm25.0),
        bm25.1,
        hybrid.0.as_secs_f64() / bm25.0.as_secs_f64(),
        hybrid.1 - bm25.1
    )
    .unwrap();
}

/// Discovery in-process: names, summaries, one full schema.
pub(crate) fn discovery(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Discovery latency (in-process)\n").unwrap();
    writeln!(
        report,
        "The three levels as the library answers them, on a catalog of the bundled plugins plus N codec \
         copies (4 tools each): L1 every tool name, L2 every tool's name, kind and summary (both from \
         `Catalog::listing`, built once per catalog version), L3 the full definition of one tool of a \
         loaded plugin, serialized. Over loopback HTTP: the next table.\n"
    )
    .unwrap();
    writeln!(
        report,
        "| plugins | tools | L1 names p50 / p99 (µs) | L2 summaries p50 / p99 (µs) | L3 full p50 / p99 (µs) |"
    )
    .unwrap();
    writeln!(report, "|---:|---:|---:|---:|---:|").unwrap();
    for &n in sizes(options) {
        let dir = tempfile::tempdir().unwrap();
        generate(dir.path(), n);
        let host = Host::builder().bundled().plugins_dir(dir.path()).cache_dir(None).build().unwrap();
        runtime.block_on(host.describe("calc")).unwrap();
        let reps = options.reps(1000);
        let sample = |f: &dyn Fn()| {
            Stats::new(
                (0..reps)
                    .map(|_| {
                        let start = Instant::now();
                        f();
                        start.elapsed()
                    })
                    .collect(),
            )
        };
        let l1 = sample(&|| {
            let catalog = host.catalog();
            let names: Vec<&str> = catalog.tools().iter().map(|l| l.name.as_str()).collect();
            std::hint::black_box(names);
        });
        let l2 = sample(&|| {
            let catalog = host.catalog();
            let lines: Vec<(&str, &str, &str)> =
                catalog.tools().iter().map(|l| (l.name.as_str(), l.category.as_str(), l.summary.as_str())).collect();
            std::hint::black_box(lines);
        });
        let l3 = sample(&|| {
            let catalog = host.catalog();
            let record = catalog.tool("calc__evaluate").and_then(|e| catalog.record(e)).expect("calc is loaded");
            let def = ToolDef::of(&record).expect("a schema");
            std::hint::black_box(serde_json::to_string(&def.to_mcp()).unwrap());
        });
        let tools = host.catalog().tools().len();
        writeln!(
            report,
            "| {} | {tools} | {} / {} | {} / {} | {} / {} |",
            host.catalog().len(),
            us(l1.median()),
            us(l1.pct(0.99)),
            us(l2.median()),
            us(l2.pct(0.99)),
            us(l3.median()),
            us(l3.pct(0.99))
        )
        .unwrap();
    }
    writeln!(report).unwrap();
}

/// Trivial calls per second on every core, in-process.
pub(crate) fn throughput(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Throughput (in-process)\n").unwrap();
    let host = Host::builder().bundled().cache_dir(None).build().unwrap();
    runtime.block_on(host.call("calc", "evaluate", r#"{"expression": "1 + 1"}"#)).unwrap();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let window = if options.smoke { Duration::from_millis(200) } else { Duration::from_secs(5) };
    let calls = runtime.block_on(async {
        let deadline = Instant::now() + window;
        let workers: Vec<_> = (0..cores * 4)
            .map(|_| {
                let host = host.clone();
                tokio::spawn(async move {
                    let mut n = 0u64;
                    while Instant::now() < deadline {
                        host.call("calc", "evaluate", r#"{"expression": "1 + 1"}"#).await.unwrap();
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        let mut total = 0;
        for w in workers {
            total += w.await.unwrap();
        }
        total
    });
    writeln!(
        report,
        "`calc.evaluate(\"1 + 1\")` from {} concurrent tasks on {cores} cores for {:.1} s, each call a fresh \
         instance: **{:.0} calls/s**. Over HTTP: see the HTTP section.\n",
        cores * 4,
        window.as_secs_f64(),
        calls as f64 / window.as_secs_f64()
    )
    .unwrap();
}
