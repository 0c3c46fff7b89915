//! The benchmark runner: measures the host and rewrites `BENCHMARKS.md`.
//!
//! ```text
//! cargo bench -p quiver --bench quiver                 # full run, writes BENCHMARKS.md
//! cargo bench -p quiver --bench quiver -- --smoke --out /tmp/b.md   # seconds; CI runs this
//! ```
//!
//! Every figure is a median (with p95/p99 where latency matters) over many
//! repetitions, measured in this run on this machine.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use quiver::load::cache::ArtifactCache;
use quiver::sandbox::limits::{self, EngineSettings};
use quiver::{Host, Stub};

/// One action per bundled plugin, with a realistic input, for call timings.
const SAMPLE_CALLS: &[(&str, &str, &str)] = &[
    ("calc", "evaluate", r#"{"expression": "2 * (3 + 4) ^ 2"}"#),
    ("codec", "hash", r#"{"data": "abc", "algorithm": "sha256"}"#),
    ("datetime", "convert", r#"{"timestamp": "2024-06-01T12:00:00Z", "to_time_zone": "Europe/Paris"}"#),
    ("json", "query", r#"{"filter": ".items[] | .name", "input": {"items": [{"name": "a"}, {"name": "b"}]}}"#),
    ("template", "render", r#"{"template": "Hello {{ name }}!", "context": {"name": "Ada"}}"#),
    ("text", "slugify", r#"{"text": "Hello, World!"}"#),
];

struct Options {
    smoke: bool,
    out: PathBuf,
}

impl Options {
    fn parse() -> Options {
        let mut options =
            Options { smoke: false, out: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../BENCHMARKS.md")) };
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--smoke" => options.smoke = true,
                "--out" => options.out = PathBuf::from(args.next().expect("--out needs a path")),
                "--bench" => {}
                other => eprintln!("ignoring argument {other}"),
            }
        }
        options
    }

    /// `full` repetitions normally, a handful in smoke mode.
    fn reps(&self, full: usize) -> usize {
        if self.smoke { full.clamp(1, 3) } else { full }
    }
}

/// Percentiles of a set of samples.
struct Stats {
    samples: Vec<Duration>,
}

impl Stats {
    fn new(mut samples: Vec<Duration>) -> Stats {
        samples.sort();
        Stats { samples }
    }

    fn pct(&self, p: f64) -> Duration {
        let i = ((self.samples.len() as f64 - 1.0) * p).round() as usize;
        self.samples[i.min(self.samples.len() - 1)]
    }

    fn median(&self) -> Duration {
        self.pct(0.5)
    }
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

fn time<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed())
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let rustc = std::process::Command::new("rustc")
        .arg("-V")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let date = std::process::Command::new("date")
        .arg("-u")
        .arg("+%Y-%m-%d %H:%M UTC")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let profile = if cfg!(debug_assertions) { "dev (debug assertions on)" } else { "release" };
    format!("{cpu}, {cores} cores; {rustc}; profile {profile}; {date}")
}

fn main() {
    let options = Options::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let mut report = String::new();
    writeln!(report, "# Benchmarks\n").unwrap();
    writeln!(
        report,
        "Regenerate with `cargo bench -p quiver --bench quiver` (writes this file). \
         Machine: {}.{}\n",
        machine(),
        if options.smoke { " **Smoke run: repetitions too few for the figures to mean anything.**" } else { "" }
    )
    .unwrap();
    loading(&options, &runtime, &mut report);
    std::fs::write(&options.out, &report).expect("write the report");
    eprintln!("wrote {}", options.out.display());
}

/// Per bundled plugin: stub read, cold compile, cached load, first and warm calls.
fn loading(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Loading and calling the bundled plugins\n").unwrap();
    writeln!(
        report,
        "Stub read: the `quiver:stub` section parsed from the bytes in memory, no compilation (median). \
         Cold compile: Cranelift, no cache (median). `.cwasm` load: a verified cache entry deserialized \
         (median). First call: a new host with a warm cache, from build to the first result (load, \
         `describe()` check, call; median). Warm call: `Host::call` on a loaded plugin: schema check, \
         a fresh store and instance from the `InstancePre`, the call, output parsing (p50 / p99).\n"
    )
    .unwrap();
    writeln!(
        report,
        "| plugin | size (KiB) | stub read (µs) | cold compile (ms) | `.cwasm` load (ms) | first call, cache warm (ms) | warm call p50 / p99 (µs) |"
    )
    .unwrap();
    writeln!(report, "|---|---:|---:|---:|---:|---:|---:|").unwrap();

    let engine = limits::engine(&EngineSettings::default()).unwrap();
    let no_cache = ArtifactCache::new(&engine, None);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = ArtifactCache::new(&engine, Some(cache_dir.path().to_owned()));

    for bundled in quiver_bundled::PLUGINS {
        let bytes = bundled.bytes;
        let stub = Stub::read(bytes, bundled.file_name).expect("bundled stub");
        let reads = options.reps(2000);
        let stub_read =
            Stats::new((0..reads).map(|_| time(|| std::hint::black_box(Stub::read(bytes, "x").unwrap())).1).collect());
        let cold = Stats::new(
            (0..options.reps(5)).map(|_| time(|| no_cache.load_or_compile(&engine, bytes).unwrap()).1).collect(),
        );
        cache.load_or_compile(&engine, bytes).unwrap();
        let cached = Stats::new(
            (0..options.reps(50)).map(|_| time(|| cache.load_or_compile(&engine, bytes).unwrap()).1).collect(),
        );
        let sample = SAMPLE_CALLS.iter().find(|(p, _, _)| *p == stub.name);
        let (first, warm) = match sample {
            Some((plugin, action, input)) => {
                let host = || {
                    Host::builder()
                        .embedded(bundled.file_name, bytes)
                        .cache_dir(Some(cache_dir.path().to_owned()))
                        .build()
                        .unwrap()
                };
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
                    for _ in 0..options.reps(3000) {
                        let start = Instant::now();
                        std::hint::black_box(host.call(plugin, action, input).await.unwrap());
                        samples.push(start.elapsed());
                    }
                    Stats::new(samples)
                });
                (ms(first.median()), format!("{} / {}", us(warm.median()), us(warm.pct(0.99))))
            }
            None => ("—".into(), "—".into()),
        };
        writeln!(
            report,
            "| {} | {} | {} | {} | {} | {} | {} |",
            stub.name,
            bytes.len() / 1024,
            us(stub_read.median()),
            ms(cold.median()),
            ms(cached.median()),
            first,
            warm
        )
        .unwrap();
        eprintln!("measured {}", stub.name);
    }
    writeln!(report).unwrap();
}
