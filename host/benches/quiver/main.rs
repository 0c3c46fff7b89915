//! The benchmark runner: measures the host and rewrites `BENCHMARKS.md`.
//!
//! ```text
//! cargo bench -p quiver --bench quiver                 # full run, writes BENCHMARKS.md
//! cargo bench -p quiver --bench quiver -- --smoke --out /tmp/b.md   # seconds; CI runs this
//! cargo bench -p quiver --bench quiver -- --only client --out /tmp/b.md   # one section
//! ```
//!
//! Every figure is a median (with p95/p99 where latency matters) over many
//! repetitions, measured in this run on this machine.

mod at_scale;
mod auth;
mod client;
mod connectors;
mod dashboard;
mod databases;
mod disclosure;
mod fuzzing;
mod guests;
mod http;
mod loading;
mod metrics;
mod oci;
mod openapi;
mod plain;
mod reload;
mod report;
mod rerank;
mod scale;
mod soak;
mod traces;
mod upstream;

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// One action per bundled plugin, with a realistic input, for call timings.
pub(crate) const SAMPLE_CALLS: &[(&str, &str, &str)] = &[
    ("calc", "evaluate", r#"{"expression": "2 * (3 + 4) ^ 2"}"#),
    ("codec", "hash", r#"{"data": "abc", "algorithm": "sha256"}"#),
    ("datetime", "convert", r#"{"timestamp": "2024-06-01T12:00:00Z", "to_time_zone": "Europe/Paris"}"#),
    ("json", "query", r#"{"filter": ".items[] | .name", "input": {"items": [{"name": "a"}, {"name": "b"}]}}"#),
    ("template", "render", r#"{"template": "Hello {{ name }}!", "context": {"name": "Ada"}}"#),
    ("text", "slugify", r#"{"text": "Hello, World!"}"#),
];

pub(crate) struct Options {
    pub(crate) smoke: bool,
    out: PathBuf,
    /// Only these sections (`--only NAME`, repeatable); all when empty.
    only: Vec<String>,
    /// The soak's length (`--soak-minutes`; ten in a full run, none in a smoke run).
    pub(crate) soak_minutes: Option<f64>,
    /// The soak's clients (`--soak-clients`, default 1,000).
    pub(crate) soak_clients: Option<usize>,
}

impl Options {
    fn parse() -> Options {
        let mut options = Options {
            smoke: false,
            out: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../BENCHMARKS.md")),
            only: Vec::new(),
            soak_minutes: None,
            soak_clients: None,
        };
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--smoke" => options.smoke = true,
                "--out" => options.out = PathBuf::from(args.next().expect("--out needs a path")),
                "--only" => options.only.push(args.next().expect("--only needs a section name")),
                "--soak-minutes" => {
                    options.soak_minutes =
                        Some(args.next().and_then(|m| m.parse().ok()).expect("--soak-minutes needs a number"))
                }
                "--soak-clients" => {
                    options.soak_clients =
                        Some(args.next().and_then(|n| n.parse().ok()).expect("--soak-clients needs a number"))
                }
                "--bench" => {}
                other => eprintln!("ignoring argument {other}"),
            }
        }
        options
    }

    /// Whether section `name` runs.
    pub(crate) fn runs(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == name)
    }

    /// `full` repetitions normally, a handful in smoke mode.
    pub(crate) fn reps(&self, full: usize) -> usize {
        if self.smoke { full.clamp(1, 3) } else { full }
    }
}

/// What a section found not held (the soak's promises): the report is
/// written all the same, then the run fails.
static BROKEN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Say that a promise the run checks is not held.
pub(crate) fn broken(reason: String) {
    eprintln!("not held: {reason}");
    BROKEN.lock().unwrap().push(reason);
}

/// Percentiles of a set of samples.
pub(crate) struct Stats {
    samples: Vec<Duration>,
}

impl Stats {
    /// Its samples, sorted.
    pub(crate) fn samples(self) -> Vec<Duration> {
        self.samples
    }

    pub(crate) fn new(mut samples: Vec<Duration>) -> Stats {
        samples.sort();
        Stats { samples }
    }

    pub(crate) fn pct(&self, p: f64) -> Duration {
        let i = ((self.samples.len() as f64 - 1.0) * p).round() as usize;
        self.samples[i.min(self.samples.len() - 1)]
    }

    pub(crate) fn median(&self) -> Duration {
        self.pct(0.5)
    }
}

pub(crate) fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

/// Resident memory of this process, from /proc (0 where there is none).
pub(crate) fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm.split_whitespace().nth(1).and_then(|pages| pages.parse::<usize>().ok()).unwrap_or(0) * 4096
}

pub(crate) fn time<T>(f: impl FnOnce() -> T) -> (T, Duration) {
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
    let profile = if cfg!(debug_assertions) { "dev (debug assertions on)" } else { "release" };
    format!("{cpu}, {cores} cores; {rustc}; profile {profile}")
}

/// The time now, to the minute (`YYYY-MM-DD HH:MM UTC`).
fn now() -> String {
    std::process::Command::new("date")
        .arg("-u")
        .arg("+%Y-%m-%d %H:%M UTC")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--measure-child") {
        scale::measure_child(&args[2], &args[3..]);
    }
    if args.get(1).map(String::as_str) == Some("--traces-child") {
        traces::child(&args[2], &args[3], args[4].parse().expect("a count"));
    }
    let options = Options::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let header = "# Benchmarks\n\nRegenerate with `cargo bench -p quiver --bench quiver` (writes this file; `-- --only NAME` \
                  re-measures one section and replaces it here). Each section says when and on what it was measured.\n";
    let machine = machine();
    let smoke =
        if options.smoke { " **Smoke run: repetitions too few for the figures to mean anything.**" } else { "" };
    type Section = fn(&Options, &tokio::runtime::Runtime, &mut String);
    let sections: [(&str, Section); 26] = [
        ("loading", loading::section),
        ("guests", guests::section),
        ("plain", plain::section),
        ("tokens", |_, runtime, report| disclosure::tokens(runtime, report)),
        ("retrieval", disclosure::retrieval),
        ("rerank", rerank::section),
        ("at-scale", at_scale::at_scale),
        ("startup", |options, _, report| scale::startup(options, report)),
        ("discovery", scale::discovery),
        ("http", http::section),
        ("client", client::section),
        ("per-request", client::per_request),
        ("throughput", scale::throughput),
        ("databases", databases::section),
        ("connectors", connectors::section),
        ("openapi", openapi::section),
        ("upstream", upstream::section),
        ("reload", reload::section),
        ("oci", oci::section),
        ("metrics", metrics::section),
        ("traces", traces::section),
        ("dashboard", dashboard::section),
        ("auth", auth::section),
        ("replicas", soak::replicas),
        ("soak", soak::section),
        ("fuzzing", fuzzing::section),
    ];
    let mut fresh = Vec::new();
    for (name, section) in sections {
        if options.runs(name) {
            let mut body = String::new();
            section(&options, &runtime, &mut body);
            let measured = format!("{} on {machine}{smoke}", now());
            fresh.push(report::Block { name: name.to_owned(), measured, body });
        }
    }
    // A partial run keeps the sections it did not measure as they were.
    let earlier = match options.only.is_empty() {
        true => Vec::new(),
        false => std::fs::read_to_string(&options.out).map(|text| report::parse(&text)).unwrap_or_default(),
    };
    let names: Vec<&str> = sections.iter().map(|(name, _)| *name).collect();
    let text = report::render(header, &report::merge(&names, fresh, earlier));
    report::check_round_trip(&text, header);
    std::fs::write(&options.out, &text).expect("write the report");
    eprintln!("wrote {}", options.out.display());
    let broken = BROKEN.lock().unwrap();
    if !broken.is_empty() {
        eprintln!("not held: {}", broken.join("; "));
        std::process::exit(1);
    }
}
