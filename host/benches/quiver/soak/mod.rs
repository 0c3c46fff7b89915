//! The soak (issue 36): three replicas behind nginx, sessions shared in
//! Redis, 1,000 MCP clients of both revisions calling plugin, database
//! and upstream tools for ten minutes while the plugins folder is
//! hot-reloaded 100 times, a replica's upstream server is killed and a
//! replica is restarted with SIGTERM. Every call is accounted for; the
//! memory and descriptors of the replicas that ran throughout are
//! sampled from minute 2 to the end (held from minute 4, once the
//! sessions' buffers are full).
//!
//! ```text
//! cargo bench -p quiver --bench quiver -- --only soak                      # ten minutes
//! cargo bench -p quiver --bench quiver -- --only soak --soak-minutes 1     # CI's step
//! cargo bench -p quiver --bench quiver -- --only replicas                  # 1 vs 3 replicas
//! ```
//!
//! The general smoke run skips both: the soak is its own CI step.

mod fleet;
mod load;

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use fleet::{Fleet, Usage};
use load::{Client, MIX, Revision, Tally};

use crate::{Options, Stats, ms};

/// Replicas in the fleet.
const REPLICAS: usize = 3;
/// The replica restarted with SIGTERM halfway, and the one whose upstream is killed.
const RESTARTED: usize = 2;
const UPSTREAM_KILLED: usize = 0;

/// What happens at a moment of the soak.
#[derive(Debug, Clone, Copy)]
enum Event {
    Sample,
    Reload(u32),
    KillUpstream,
    Restart,
}

fn http_client(clients: usize) -> reqwest::Client {
    // reqwest is built without a bundled crypto provider (plain http here).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .pool_max_idle_per_host(clients)
        .timeout(Duration::from_secs(120))
        .build()
        .expect("an HTTP client")
}

/// Start `clients` clients (alternating revisions) on `base` until `deadline`.
/// How the clients call.
struct Plan {
    clients: usize,
    pause: Duration,
    /// Whether half of them speak 2025-11-25 (the rest 2026-07-28).
    sessions: bool,
    mix: &'static [(&'static str, &'static str, &'static str)],
}

fn spawn_clients(
    runtime: &tokio::runtime::Runtime,
    base: &str,
    plan: &Plan,
    deadline: Instant,
    tally: &Arc<Tally>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let http = http_client(plan.clients);
    (0..plan.clients)
        .map(|index| {
            let revision = if plan.sessions && index % 2 == 1 { Revision::Session } else { Revision::Stateless };
            let (pause, mix) = (plan.pause, plan.mix);
            let client = Client { http: http.clone(), base: base.to_owned(), revision, index, pause, mix };
            let tally = tally.clone();
            runtime.spawn(async move { client.run(deadline, &tally).await })
        })
        .collect()
}

fn join(runtime: &tokio::runtime::Runtime, tasks: Vec<tokio::task::JoinHandle<()>>) {
    runtime.block_on(async {
        for task in tasks {
            tokio::time::timeout(Duration::from_secs(300), task)
                .await
                .expect("a client never finished its last call")
                .expect("a client panicked");
        }
    });
}

pub(crate) fn section(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    let Some(minutes) = options.soak_minutes.or((!options.smoke).then_some(10.0)) else {
        writeln!(
            report,
            "## Soak\n\nNot run in the smoke run: CI runs it as its own step (`--only soak --soak-minutes 1`).\n"
        )
        .unwrap();
        return;
    };
    let clients = options.soak_clients.unwrap_or(1000);
    let length = Duration::from_secs_f64(minutes * 60.0);
    let pause = Duration::from_secs(1);
    let reloads = ((100.0 * minutes / 10.0).round() as u32).max(10);
    let mut fleet = Fleet::start(REPLICAS);

    let mut events: Vec<(Duration, Event)> =
        (0..20).map(|i| (length.mul_f64(i as f64 / 20.0), Event::Sample)).collect();
    events.extend((0..reloads).map(|i| {
        let at = 0.05 + 0.9 * f64::from(i) / f64::from(reloads - 1);
        (length.mul_f64(at), Event::Reload(i + 1))
    }));
    events.push((length.mul_f64(0.3), Event::KillUpstream));
    events.push((length.mul_f64(0.5), Event::Restart));
    events.sort_by_key(|(at, _)| *at);

    let tally = Arc::new(Tally::default());
    let started = Instant::now();
    let deadline = started + length;
    let base = format!("http://{}", fleet.nginx.addr);
    let plan = Plan { clients, pause, sessions: true, mix: MIX };
    let tasks = spawn_clients(runtime, &base, &plan, deadline, &tally);
    let mut samples: Vec<(Duration, Vec<Usage>)> = Vec::new();
    let (mut killed, mut drained, mut restarted_at) = (None, None, None);
    for (at, event) in events {
        if let Some(wait) = (started + at).checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        match event {
            Event::Sample => samples.push((started.elapsed(), fleet.replicas.iter().map(|r| r.usage()).collect())),
            Event::Reload(generation) => fleet.reload(generation),
            Event::KillUpstream => killed = fleet.kill_upstream(UPSTREAM_KILLED),
            Event::Restart => {
                drained = Some(fleet.restart(RESTARTED));
                restarted_at = Some(started.elapsed());
            }
        }
    }
    join(runtime, tasks);
    let elapsed = started.elapsed();
    samples.push((elapsed, fleet.replicas.iter().map(|r| r.usage()).collect()));

    let answered: Vec<u64> = tally.answered.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    let total: u64 = answered.iter().sum();
    let failed = tally.failed.load(Ordering::Relaxed);
    let latencies = Stats::new(std::mem::take(&mut *tally.latencies.lock().unwrap()));
    writeln!(report, "## Soak\n").unwrap();
    writeln!(
        report,
        "{REPLICAS} `quiver serve --http` replicas (this build's profile, `MALLOC_ARENA_MAX=2` as the image sets) behind nginx (round robin, keep-alive to the \
         replicas), `[sessions]` in Redis, the plugins folder watched; {clients} clients on one `reqwest` pool, half \
         MCP 2026-07-28 (stateless), half 2025-11-25 (a session each, restored on whichever replica a request \
         lands), each calling in turn `calc__evaluate` (plugin), `chinook__query` (SQLite demo database), \
         `mcp` → `time.get_current_time` (upstream `mcp-server-time`, a process per replica) and `versioned__build` (the \
         hot-reloaded plugin), with a pause of 0–{} s between calls, for {minutes} min. Meanwhile: {reloads} hot \
         reloads (a new build of `versioned` renamed into the folder), the upstream server of replica {UPSTREAM_KILLED} \
         killed (SIGKILL) at 30 %, replica {RESTARTED} stopped with SIGTERM at 50 % and started again on its port. All \
         share this machine's cores.\n",
        2 * pause.as_secs()
    )
    .unwrap();
    writeln!(report, "| | |\n|---|---:|").unwrap();
    let rows = [
        ("calls answered (2026-07-28 / 2025-11-25)", format!("{} / {}", answered[0], answered[1])),
        ("sessions opened", tally.sessions.load(Ordering::Relaxed).to_string()),
        (
            "\"retry\" answers (503 + Retry-After, refused connection, host busy)",
            tally.retries.load(Ordering::Relaxed).to_string(),
        ),
        (
            "of which \"busy\" (a tool the host had no instance slot for in time)",
            tally.busy.load(Ordering::Relaxed).to_string(),
        ),
        ("calls answered after a retry", tally.retried.load(Ordering::Relaxed).to_string()),
        ("**failed calls**", format!("**{failed}**")),
        ("calls/s", format!("{:.0}", total as f64 / elapsed.as_secs_f64())),
        (
            "latency p50 / p95 / p99 (ms)",
            if total == 0 {
                "-".into()
            } else {
                format!("{} / {} / {}", ms(latencies.median()), ms(latencies.pct(0.95)), ms(latencies.pct(0.99)))
            },
        ),
        ("upstream killed", killed.map_or("none found".into(), |pid| format!("pid {pid}"))),
        ("SIGTERM to exit (drain)", drained.map_or("-".into(), |d| format!("{} ms", ms(d)))),
    ];
    for (what, value) in rows {
        writeln!(report, "| {what} | {value} |").unwrap();
    }
    // Memory and descriptors of the replicas that ran throughout, from 20 %
    // (minute 2 of 10) and from 40 % (minute 4, the end of the sessions'
    // warm-up) to the end.
    let at = |share: f64| {
        samples.iter().find(|(at, _)| *at >= length.mul_f64(share)).map(|(_, u)| u.clone()).expect("samples")
    };
    let (from, settled) = (at(0.2), at(0.4));
    let to = samples.last().map(|(_, u)| u.clone()).expect("samples");
    writeln!(report, "\nMemory and descriptors of each replica at 20 % of the run (minute 2 of 10), at 40 % (minute 4) and at its end (sockets follow the load; the other descriptors are files, pipes and event fds):\n\n| replica | RSS at 20 % / 40 % / end (MiB) | growth from 20 % | growth from 40 % | fds (not sockets) at 20 % / end | sockets at 20 % / end |\n|---|---:|---:|---:|---:|---:|").unwrap();
    let mib = |usage: &Usage| usage.rss_bytes as f64 / 1048576.0;
    let growth = |a: &Usage, b: &Usage| b.rss_bytes as f64 / a.rss_bytes.max(1) as f64 - 1.0;
    // The worst growth from 40 %, and the worst move of descriptors from 20 %.
    let mut worst = (0.0f64, 0i64);
    for (index, ((a, m), b)) in from.iter().zip(&settled).zip(&to).enumerate() {
        let note = if index == RESTARTED { " (restarted at 50 %)" } else { "" };
        writeln!(
            report,
            "| {index}{note} | {:.1} / {:.1} / {:.1} | {:+.1} % | {:+.1} % | {} / {} | {} / {} |",
            mib(a),
            mib(m),
            mib(b),
            growth(a, b) * 100.0,
            growth(m, b) * 100.0,
            a.fds,
            b.fds,
            a.sockets,
            b.sockets
        )
        .unwrap();
        if index != RESTARTED {
            worst = (worst.0.max(growth(m, b)), worst.1.max((b.fds as i64 - a.fds as i64).abs()));
        }
    }
    let _ = restarted_at;
    writeln!(report, "\nResident memory (MiB) every 5 % of the run:\n").unwrap();
    for index in 0..REPLICAS {
        let series: Vec<String> =
            samples.iter().map(|(_, usage)| format!("{:.0}", usage[index].rss_bytes as f64 / 1048576.0)).collect();
        writeln!(report, "- replica {index}: {}", series.join(", ")).unwrap();
    }
    writeln!(report).unwrap();
    let reasons = tally.reasons.lock().unwrap().clone();
    if !reasons.is_empty() {
        let kinds = tally.kinds.lock().unwrap().clone();
        writeln!(report, "Failed calls by kind: {kinds:?}. The first {}:\n", reasons.len()).unwrap();
        for reason in &reasons {
            writeln!(report, "- `{}`", reason.replace('`', "'")).unwrap();
        }
        writeln!(report).unwrap();
    }
    // What the soak holds to: each broken promise is said in the report,
    // which is written, and fails the run.
    let mut broken = Vec::new();
    if failed > 0 || total == 0 {
        let logs: String = fleet.replicas.iter().map(|r| format!("replica :{}\n{}\n", r.port, r.tail())).collect();
        eprintln!("nginx: {}\n{logs}", fleet.nginx.log());
        // Last, so that the end of a CI log says what failed.
        eprintln!("failed calls (the first {}):", reasons.len());
        for reason in &reasons {
            eprintln!("- {}", reason.lines().next().unwrap_or_default());
        }
        broken.push(format!("{failed} calls failed, {total} answered"));
    }
    // Until minute 4 each replica's memory follows its sessions' rmcp
    // buffers filling (see the operators' manual, "Memory"); a leak goes on
    // growing after it.
    if minutes >= 5.0 && worst.0 > 0.05 {
        broken.push(format!("resident memory grew {:.1} % from 40 % of the run (at most 5 %)", worst.0 * 100.0));
    }
    // Descriptors other than sockets: a leak of files or pipes shows in any run.
    if worst.1 > 10 {
        broken.push(format!("open descriptors (not sockets) moved by {} from 20 % of the run (at most 10)", worst.1));
    }
    for reason in broken {
        writeln!(report, "**Not held: {reason}.**\n").unwrap();
        crate::broken(reason);
    }
}

/// Throughput through nginx with 1 and with 3 replicas: closed-loop
/// stateless clients with no pause, calling `calc__evaluate`.
pub(crate) fn replicas(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    const CALC: &[(&str, &str, &str)] = &[("calc__evaluate", r#"{"expression": "6*7"}"#, "42")];
    let window = if options.smoke { Duration::from_secs(2) } else { Duration::from_secs(15) };
    let clients = 64;
    writeln!(report, "## Replicas behind nginx\n").unwrap();
    writeln!(
        report,
        "{clients} closed-loop MCP 2026-07-28 clients (no pause) calling `calc__evaluate` through nginx for \
         {:.0} s, after a warm-up call on each replica. Replicas, nginx and the clients all share this machine's {} \
         cores, so a second and third replica add no CPU: the figure says what routing through nginx and spreading \
         over processes costs, not how a fleet of machines scales.\n\n| replicas | calls/s | p50 (ms) | p99 (ms) |\n|---:|---:|---:|---:|",
        window.as_secs_f64(),
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    )
    .unwrap();
    for count in [1, 3] {
        let fleet = Fleet::start(count);
        let base = format!("http://{}", fleet.nginx.addr);
        // Warm: each replica compiles calc once (round robin reaches each).
        let warm = Arc::new(Tally::default());
        let plan = Plan { clients: count, pause: Duration::ZERO, sessions: false, mix: CALC };
        join(runtime, spawn_clients(runtime, &base, &plan, Instant::now() + Duration::from_millis(500), &warm));
        let tally = Arc::new(Tally::default());
        let plan = Plan { clients, pause: Duration::ZERO, sessions: false, mix: CALC };
        let started = Instant::now();
        join(runtime, spawn_clients(runtime, &base, &plan, started + window, &tally));
        let elapsed = started.elapsed();
        let failed = tally.failed.load(Ordering::Relaxed);
        assert_eq!(failed, 0, "{:?}", tally.reasons.lock().unwrap());
        let calls = tally.answered[0].load(Ordering::Relaxed);
        let latencies = Stats::new(std::mem::take(&mut *tally.latencies.lock().unwrap()));
        let rate = calls as f64 / elapsed.as_secs_f64();
        writeln!(report, "| {count} | {rate:.0} | {} | {} |", ms(latencies.median()), ms(latencies.pct(0.99))).unwrap();
    }
    writeln!(report).unwrap();
}
