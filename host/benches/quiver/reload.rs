//! Hot reload: from a completed write (a rename into the watched folder) to
//! the change being visible, with the watcher's debounce and settle time.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quiver::{Catalog, Host};
use quiver_tests::builds::{publish, renamed, versioned};

use crate::{Options, Stats, ms};

/// Block until the catalog satisfies `condition`.
fn wait_for(runtime: &tokio::runtime::Runtime, host: &Host, condition: impl Fn(&Catalog) -> bool) {
    let mut versions = host.subscribe();
    runtime.block_on(async {
        let wait = async {
            while !condition(&host.catalog()) {
                versions.changed().await.expect("the host is alive");
            }
        };
        tokio::time::timeout(Duration::from_secs(120), wait).await.expect("the change never became visible");
    });
}

pub(crate) fn section(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Hot reload\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let host =
        Host::builder().plugins_dir(dir.path()).cache_dir(Some(cache.path().to_owned())).build().expect("a host");
    let _watcher = {
        let _in_runtime = runtime.enter();
        host.watch().expect("watch the folder")
    };
    publish(dir.path(), "versioned.wasm", &versioned(0));
    wait_for(runtime, &host, |c| c.get("versioned").is_some());
    runtime.block_on(host.call("versioned", "build", "{}")).expect("a first call");
    let reps = options.reps(30);
    let (mut visible, mut first_call, mut replaced) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..reps {
        // Add: a plugin no one has seen (its own bytes: its own compile).
        let name = format!("add{i:06}");
        let bytes = renamed(&name);
        let start = Instant::now();
        publish(dir.path(), &format!("{name}.wasm"), &bytes);
        wait_for(runtime, &host, |c| c.get(&name).is_some());
        visible.push(start.elapsed());
        runtime.block_on(host.call(&name, "build", "{}")).expect("the first call");
        first_call.push(start.elapsed());

        // Replace a plugin in use: the new build is compiled before the swap.
        let generation = i as u32 + 1;
        let previous = host.catalog().get("versioned").cloned().expect("served");
        let start = Instant::now();
        publish(dir.path(), "versioned.wasm", &versioned(generation));
        wait_for(runtime, &host, |c| c.get("versioned").is_some_and(|p| !Arc::ptr_eq(&previous, p)));
        replaced.push(start.elapsed());
        let out = runtime.block_on(host.call("versioned", "build", "{}")).expect("a call to the new build");
        assert_eq!(out["build"], format!("gen-{generation:04}"));
    }
    let row = |what: &str, samples: Vec<Duration>| {
        let stats = Stats::new(samples);
        format!("| {what} | {} | {} |\n", ms(stats.median()), ms(stats.pct(0.95)))
    };
    writeln!(
        report,
        "`Host::watch` on a folder ({} ms debounce, {} ms settle), {reps} repetitions; the clock starts \
         after the new file is written and synced under a hidden temporary name, just before it is \
         renamed into place. Plugins are builds of the small `versioned` test fixture (a first call \
         compiles it: tens of ms where a bundled plugin takes hundreds; see the loading table). The \
         replaced plugin has been called, so its new build is compiled, checked and `describe()`d \
         before the swap; calls running meanwhile finish on the old build.\n",
        quiver::reload::watch::DEBOUNCE.as_millis(),
        quiver::reload::watch::SETTLE.as_millis(),
    )
    .unwrap();
    writeln!(report, "| change | p50 (ms) | p95 (ms) |\n|---|---:|---:|").unwrap();
    report.push_str(&row("add: rename → in Tier 1", visible));
    report.push_str(&row("add: rename → first call answered", first_call));
    report.push_str(&row("replace a plugin in use: rename → new build serving", replaced));
    writeln!(report).unwrap();
    eprintln!("measured hot reload");
}
