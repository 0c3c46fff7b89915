//! Hot reload: plugins come, change and go under a running host, and no
//! call that was addressed to a served plugin fails.
//!
//! Readiness is awaited on the catalog version (`Host::subscribe`), never
//! with sleeps; the only pauses are a slow writer's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use quiver::ErrorKind;
use quiver_tests::TestHost;
use quiver_tests::builds::{self, advertised, publish, renamed, wait_for, with_broken_code};

async fn build_of(host: &quiver::Host, plugin: &str) -> quiver::Result<String> {
    let out = host.call(plugin, "build", "{}").await?;
    Ok(out["build"].as_str().expect("a build marker").to_owned())
}

/// Builds of the `versioned` fixture are added, replaced, renamed and
/// removed under a watched folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn versioned() {
    let t = TestHost::builder().build();
    let dir = t.plugins.path().to_owned();
    let host = &t.host;
    let _watcher = host.watch().unwrap();

    publish(&dir, "versioned.wasm", &builds::versioned(1));
    wait_for(host, |c| advertised(c, "versioned").as_deref() == Some("gen-0001")).await;
    assert_eq!(build_of(host, "versioned").await.unwrap(), "gen-0001");

    // In-place overwrite (like `cp`), not a rename.
    let before = host.catalog();
    std::fs::write(dir.join("versioned.wasm"), builds::versioned(2)).unwrap();
    wait_for(host, |c| advertised(c, "versioned").as_deref() == Some("gen-0002")).await;
    assert_eq!(build_of(host, "versioned").await.unwrap(), "gen-0002");
    let changes: Vec<String> = host.catalog().changes_from(&before).iter().map(ToString::to_string).collect();
    let file = dir.join("versioned.wasm").display().to_string();
    assert_eq!(changes, [format!("replaced `versioned` 0.1.0 → 0.1.0 from {file}")]);

    // A settings file beside the plugin reloads with it.
    std::fs::write(dir.join("versioned.toml"), "timeout_ms = 1234\n").unwrap();
    wait_for(host, |c| c.get("versioned").is_some_and(|p| p.settings().grants.limits.timeout_ms == 1234)).await;
    assert_eq!(build_of(host, "versioned").await.unwrap(), "gen-0002");

    // A rename within the folder keeps the plugin, now from the new file.
    std::fs::rename(dir.join("versioned.wasm"), dir.join("renamed.wasm")).unwrap();
    wait_for(host, |c| c.get("versioned").is_some_and(|p| p.origin().to_string().ends_with("renamed.wasm"))).await;
    assert_eq!(build_of(host, "versioned").await.unwrap(), "gen-0002");

    // Removing the file removes the plugin.
    let before = host.catalog();
    std::fs::remove_file(dir.join("renamed.wasm")).unwrap();
    wait_for(host, |c| c.get("versioned").is_none()).await;
    let changes: Vec<String> = host.catalog().changes_from(&before).iter().map(ToString::to_string).collect();
    assert_eq!(changes, ["removed `versioned` 0.1.0"]);
    assert_eq!(build_of(host, "versioned").await.unwrap_err().kind(), ErrorKind::UnknownPlugin);

    // The folder itself vanishes and comes back.
    std::fs::write(dir.join("other.wasm"), renamed("othername")).unwrap();
    wait_for(host, |c| c.get("othername").is_some()).await;
    std::fs::remove_dir_all(&dir).unwrap();
    wait_for(host, |c| c.is_empty()).await;
    std::fs::create_dir(&dir).unwrap();
    publish(&dir, "versioned.wasm", &builds::versioned(3));
    wait_for(host, |c| advertised(c, "versioned").as_deref() == Some("gen-0003")).await;
    assert_eq!(build_of(host, "versioned").await.unwrap(), "gen-0003");
    assert!(host.catalog().rejected().is_empty(), "{:?}", host.catalog().rejected());
}

#[tokio::test]
async fn a_broken_replacement_keeps_the_last_good_version_serving() {
    let t = TestHost::builder().file("versioned.wasm", builds::versioned(1)).keep_plugin_bytes().build();
    let (dir, host) = (t.plugins.path(), &t.host);
    let stale_kind = |host: &quiver::Host| {
        host.catalog().stale().find(|(name, _)| *name == "versioned").map(|(_, stale)| stale.error.kind())
    };

    // Never called yet: its bytes were kept (as on a watched host), so it still serves.
    std::fs::write(dir.join("versioned.wasm"), b"not wasm at all").unwrap();
    host.reload().await.unwrap();
    assert_eq!(stale_kind(host), Some(ErrorKind::NotWasm));
    assert_eq!(build_of(host, "versioned").await.unwrap(), "gen-0001");

    // Truncated while being copied.
    let mut half = builds::versioned(2);
    half.truncate(half.len() / 2);
    std::fs::write(dir.join("versioned.wasm"), half).unwrap();
    host.reload().await.unwrap();
    assert_eq!(stale_kind(host), Some(ErrorKind::NotWasm));
    assert_eq!(advertised(&host.catalog(), "versioned").as_deref(), Some("gen-0001"));

    // A valid stub over code that does not compile.
    std::fs::write(dir.join("versioned.wasm"), with_broken_code(&builds::versioned(3))).unwrap();
    host.reload().await.unwrap();
    assert_eq!(stale_kind(host), Some(ErrorKind::Compile));
    assert_eq!(build_of(host, "versioned").await.unwrap(), "gen-0001");
    // The failure is remembered: reloading the same bad file compiles nothing.
    let compiled = host.load_stats().compiled();
    let (version, revision) = (host.catalog().version(), host.catalog().revision());
    host.reload().await.unwrap();
    assert_eq!(host.load_stats().compiled(), compiled);
    assert_eq!(host.catalog().version(), version, "nothing changed, so no new version");
    assert_eq!(host.catalog().revision(), revision, "nor a new status");

    // A good version replaces it and clears the status.
    std::fs::write(dir.join("versioned.wasm"), builds::versioned(4)).unwrap();
    host.reload().await.unwrap();
    assert_eq!(stale_kind(host), None);
    assert_eq!(build_of(host, "versioned").await.unwrap(), "gen-0004");

    // A bad settings file is a failed replacement too.
    std::fs::write(dir.join("versioned.toml"), "timeout_ms = 0\n").unwrap();
    host.reload().await.unwrap();
    assert_eq!(stale_kind(host), Some(ErrorKind::Config));
    assert_eq!(build_of(host, "versioned").await.unwrap(), "gen-0004");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_written_in_pieces_is_picked_up_once_whole() {
    use std::io::Write;
    let t = TestHost::builder().build();
    let host = t.host.clone();
    let _watcher = host.watch().unwrap();

    // Record every catalog version published while the file is written.
    let mut versions = host.subscribe();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let recorder = {
        let (host, seen) = (host.clone(), seen.clone());
        tokio::spawn(async move {
            while versions.changed().await.is_ok() {
                let catalog = host.catalog();
                seen.lock().unwrap().push((std::time::Instant::now(), advertised(&catalog, "versioned")));
            }
        })
    };

    let bytes = builds::versioned(5);
    let path = t.plugins.path().join("versioned.wasm");
    let mut file = std::fs::File::create(&path).unwrap();
    // Seven pieces of a tenth, each followed by a pause longer than the
    // watcher's debounce and settle time, then the rest.
    let tenth = bytes.len() / 10;
    for piece in 0..7 {
        file.write_all(&bytes[piece * tenth..(piece + 1) * tenth]).unwrap();
        file.sync_data().unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    }
    // Whatever appears before the last piece is written would be a partial file.
    let last_piece = std::time::Instant::now();
    file.write_all(&bytes[7 * tenth..]).unwrap();
    file.sync_all().unwrap();
    drop(file);

    wait_for(&host, |c| advertised(c, "versioned").is_some()).await;
    assert_eq!(build_of(&host, "versioned").await.unwrap(), "gen-0005");
    recorder.abort();
    let seen = seen.lock().unwrap();
    let appearances: Vec<_> = seen.iter().filter(|(_, build)| build.is_some()).collect();
    assert!(!appearances.is_empty());
    assert!(appearances.iter().all(|(at, build)| *at >= last_piece && build.as_deref() == Some("gen-0005")));
    let first = seen.iter().position(|(_, build)| build.is_some()).unwrap();
    assert!(seen[first..].iter().all(|(_, build)| build.is_some()), "it appeared once and stayed: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_in_flight_never_fail_while_plugins_are_replaced() {
    const REPLACEMENTS: u32 = 100;
    const TASKS: usize = 16;
    // A serving host keeps the bytes of what it advertises (`serve` watches
    // its folders); without them a call that took a snapshot just before the
    // next replacement would find the file changed, and is refused by design
    // (`an_unwatched_host_refuses_a_file_changed_since_its_scan`).
    let t = TestHost::builder().file("versioned.wasm", builds::versioned(0)).keep_plugin_bytes().build();
    let dir = t.plugins.path().to_owned();
    let host = t.host.clone();
    let done = Arc::new(AtomicBool::new(false));

    // Each task calls in a loop: `versioned` must always answer, with a build
    // never older than the one it saw last; the extras come and go.
    let callers: Vec<_> = (0..TASKS)
        .map(|task| {
            let (host, done) = (host.clone(), done.clone());
            tokio::spawn(async move {
                let (mut calls, mut last) = (0u64, 0u32);
                while !done.load(Ordering::Relaxed) || calls < 1000 / TASKS as u64 {
                    let build = build_of(&host, "versioned").await.expect("a served plugin never fails");
                    let generation: u32 = build["gen-".len()..].parse().unwrap();
                    assert!(generation >= last, "task {task}: {build} after gen-{last:04}");
                    assert!(generation <= REPLACEMENTS);
                    last = generation;
                    let extra = format!("extra{:04}", calls % 8);
                    match build_of(&host, &extra).await {
                        Ok(build) => assert_eq!(build, "gen-0000"),
                        Err(e) => assert_eq!(e.kind(), ErrorKind::UnknownPlugin, "{e}"),
                    }
                    calls += 2;
                }
                (calls, last)
            })
        })
        .collect();

    for generation in 1..=REPLACEMENTS {
        publish(&dir, "versioned.wasm", &builds::versioned(generation));
        let extra = format!("extra{:04}", generation % 8);
        if generation % 2 == 0 {
            publish(&dir, &format!("{extra}.wasm"), &renamed(&extra));
        } else {
            let _ = std::fs::remove_file(dir.join(format!("extra{:04}.wasm", (generation + 4) % 8)));
        }
        let catalog = host.reload().await.unwrap();
        assert_eq!(advertised(&catalog, "versioned"), Some(format!("gen-{generation:04}")));
        assert_eq!(catalog.stale().count(), 0);
    }
    done.store(true, Ordering::Relaxed);
    let mut total = 0;
    for caller in callers {
        let (calls, _last) = caller.await.expect("a caller panicked");
        total += calls;
    }
    assert!(total >= 1000, "only {total} calls");
    assert_eq!(build_of(&host, "versioned").await.unwrap(), format!("gen-{REPLACEMENTS:04}"));
}

#[tokio::test]
async fn an_unwatched_host_refuses_a_file_changed_since_its_scan() {
    // Without kept bytes (a one-shot command), a file replaced between the
    // scan and the first use is refused, never compiled as if it were the
    // version the catalog advertised.
    let t = TestHost::builder().file("versioned.wasm", builds::versioned(1)).build();
    std::fs::write(t.plugins.path().join("versioned.wasm"), builds::versioned(2)).unwrap();
    let error = build_of(&t.host, "versioned").await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Io, "{error}");
    assert!(error.to_string().contains("changed since it was scanned"), "{error}");
    t.host.reload().await.unwrap();
    assert_eq!(build_of(&t.host, "versioned").await.unwrap(), "gen-0002");
}

/// A failed replacement changes the status, not what is served: the
/// catalog version (which clients cache the tool list by) stays, the
/// revision moves on.
#[tokio::test]
async fn a_failed_replacement_keeps_the_version() {
    let t = TestHost::builder().file("versioned.wasm", builds::versioned(1)).keep_plugin_bytes().build();
    let before = t.host.catalog();
    std::fs::write(t.plugins.path().join("versioned.wasm"), b"not wasm").unwrap();
    let after = t.host.reload().await.unwrap();
    assert_eq!(after.version(), before.version());
    assert_eq!(after.revision(), before.revision() + 1);
    assert_eq!(after.stale().count(), 1);
    assert!(after.get("versioned").is_some_and(|p| std::sync::Arc::ptr_eq(p, before.get("versioned").unwrap())));
    // A good file again: a new version.
    std::fs::write(t.plugins.path().join("versioned.wasm"), builds::versioned(2)).unwrap();
    assert_eq!(t.host.reload().await.unwrap().version(), before.version() + 1);
}

/// A folder plugin that replaced a bundled one of the same name keeps
/// serving its last good version when its file breaks, as it would without
/// a bundled twin; removing the file brings the bundled one back.
#[tokio::test]
async fn a_broken_folder_plugin_keeps_serving_over_its_bundled_twin() {
    let t = TestHost::builder()
        .embedded("versioned.wasm", builds::versioned(1))
        .file("dropped.wasm", builds::versioned(2))
        .keep_plugin_bytes()
        .build();
    let (dir, host) = (t.plugins.path(), &t.host);
    assert_eq!(advertised(&host.catalog(), "versioned").as_deref(), Some("gen-0002"));

    // Never called yet, then broken: the folder version serves on.
    std::fs::write(dir.join("dropped.wasm"), b"garbage").unwrap();
    host.reload().await.unwrap();
    assert_eq!(build_of(host, "versioned").await.unwrap(), "gen-0002");
    let stale: Vec<_> = host.catalog().stale().map(|(name, s)| (name.to_owned(), s.error.kind())).collect();
    assert_eq!(stale, [("versioned".to_owned(), ErrorKind::NotWasm)]);

    // Broken after it was called: the same.
    std::fs::write(dir.join("dropped.wasm"), builds::versioned(3)).unwrap();
    host.reload().await.unwrap();
    assert_eq!(build_of(host, "versioned").await.unwrap(), "gen-0003");
    std::fs::write(dir.join("dropped.wasm"), with_broken_code(&builds::versioned(4))).unwrap();
    host.reload().await.unwrap();
    assert_eq!(build_of(host, "versioned").await.unwrap(), "gen-0003");

    std::fs::remove_file(dir.join("dropped.wasm")).unwrap();
    host.reload().await.unwrap();
    assert_eq!(build_of(host, "versioned").await.unwrap(), "gen-0001");
    assert_eq!(host.catalog().stale().count(), 0);
}

/// A plugin that appears in a watched folder is compiled in the background
/// right after it is listed (compile on arrival), before any call; a call
/// that comes during that compile joins it instead of compiling again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_plugin_is_compiled_on_arrival() {
    let t = TestHost::builder().build();
    let host = &t.host;
    let _watcher = host.watch().unwrap();
    publish(t.plugins.path(), "versioned.wasm", &builds::versioned(7));
    wait_for(host, |c| advertised(c, "versioned").as_deref() == Some("gen-0007")).await;
    let plugin = host.catalog().get("versioned").unwrap().clone();
    // Nothing calls it: wait (bounded) for the background compile.
    let compiled = async {
        while !plugin.is_loaded() {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), compiled).await.expect("compiled on arrival");
    assert_eq!(host.load_stats().compiled(), 1);

    // Published and called at once: the call waits for the arrival's
    // compile (or the arrival for the call's): one compile in all.
    publish(t.plugins.path(), "second.wasm", &renamed("second-pl"));
    wait_for(host, |c| c.get("second-pl").is_some()).await;
    host.call("second-pl", "build", "{}").await.unwrap();
    assert_eq!(host.load_stats().compiled(), 2);
}

/// Finding M3: a connector plugin used by two instances (named to sort
/// before and after it) keeps the plugin and both instances across
/// rescans: an unchanged file is matched to the plugin read from it, never
/// to an instance that shares its origin.
#[tokio::test]
async fn a_plugin_used_by_two_instances_survives_rescans() {
    let config = "[connectors.alpha]\nplugin = \"fixture-connector\"\nbase_url = \"http://127.0.0.1:9\"\n\n\
                  [connectors.zeta]\nplugin = \"fixture-connector\"\nbase_url = \"http://127.0.0.1:9\"\n";
    let t = TestHost::builder().fixture("connector").config(config).build();
    let host = &t.host;
    let served = |host: &quiver::Host| {
        let catalog = host.catalog();
        let names: Vec<String> = catalog.plugins().map(|p| p.name().to_owned()).collect();
        let rejected: Vec<String> = catalog.rejected().iter().map(|r| r.error.to_string()).collect();
        (names, rejected)
    };
    let first = served(host);
    assert_eq!(first.0, ["alpha", "fixture-connector", "zeta"], "{first:?}");
    let plugin = host.catalog().get("fixture-connector").unwrap().clone();
    for round in 0..3 {
        host.reload().await.unwrap();
        assert_eq!(served(host), first, "after rescan {round}");
        let kept = host.catalog().get("fixture-connector").unwrap().clone();
        assert!(Arc::ptr_eq(&kept, &plugin), "the unchanged plugin is kept as it was (rescan {round})");
    }
}

/// A file rewritten with the bytes it had (`touch`, `cp -p`, a sync tool)
/// is not a new version: the catalog version, which clients cache the tool
/// list by (and which `list_changed` and the REST ETags follow), stays; new
/// bytes are a new version.
#[tokio::test]
async fn a_file_rewritten_with_the_same_bytes_is_the_same_version() {
    let t = TestHost::builder().file("versioned.wasm", builds::versioned(1)).keep_plugin_bytes().build();
    let path = t.plugins.path().join("versioned.wasm");
    let version = t.host.catalog().version();
    let plugin = t.host.catalog().get("versioned").cloned().unwrap();

    // Touched: a new modification time, the same bytes.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(later).unwrap();
    // Its settings file written as it would resolve anyway.
    std::fs::write(path.with_extension("toml"), "").unwrap();
    t.host.reload().await.unwrap();
    assert_eq!(t.host.catalog().version(), version, "a touched file is a new version");

    // Copied over itself (a new inode), as `cp -p` or rsync do.
    let copy = t.plugins.path().join(".versioned.wasm.tmp");
    std::fs::write(&copy, builds::versioned(1)).unwrap();
    std::fs::rename(&copy, &path).unwrap();
    t.host.reload().await.unwrap();
    assert_eq!(t.host.catalog().version(), version, "a copy of the same bytes is a new version");
    assert!(Arc::ptr_eq(t.host.catalog().get("versioned").unwrap(), &plugin), "the version was replaced");
    assert_eq!(build_of(&t.host, "versioned").await.unwrap(), "gen-0001");

    // New bytes are a new version.
    std::fs::write(&path, builds::versioned(2)).unwrap();
    t.host.reload().await.unwrap();
    assert!(t.host.catalog().version() > version);
    assert_eq!(build_of(&t.host, "versioned").await.unwrap(), "gen-0002");
}
