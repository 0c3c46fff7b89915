//! The `.cwasm` cache: a second host loads what the first compiled, and a
//! corrupt entry is a miss, never a crash; replicas read a shared one.

use quiver_tests::TestHost;

fn cache_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    files.sort();
    files
}

async fn echo(t: &TestHost) {
    assert_eq!(t.host.call("misbehave", "echo", r#"{"text": "hi"}"#).await.unwrap(), "hi");
}

#[tokio::test]
async fn a_second_host_loads_from_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let first = TestHost::builder().fixture("misbehave").cache_dir(cache.path()).build();
    echo(&first).await;
    assert_eq!((first.host.load_stats().compiled(), first.host.load_stats().cache_hits()), (1, 0));
    assert_eq!(cache_files(cache.path()).len(), 1);

    let second = TestHost::builder().fixture("misbehave").cache_dir(cache.path()).build();
    echo(&second).await;
    assert_eq!((second.host.load_stats().compiled(), second.host.load_stats().cache_hits()), (0, 1));
}

#[tokio::test]
async fn a_corrupt_cache_entry_is_recompiled() {
    let cache = tempfile::tempdir().unwrap();
    echo(&TestHost::builder().fixture("misbehave").cache_dir(cache.path()).build()).await;
    let entry = cache_files(cache.path()).pop().unwrap();
    let good = std::fs::read(&entry).unwrap();

    type Corruption = fn(&mut Vec<u8>);
    let corruptions: [(&str, Corruption); 3] = [
        ("truncated", |b| b.truncate(b.len() / 2)),
        ("flipped byte", |b| {
            let i = b.len() - 100;
            b[i] ^= 0xff;
        }),
        ("garbage", |b| *b = b"not a cache entry".to_vec()),
    ];
    for (what, corrupt) in corruptions {
        let mut bytes = good.clone();
        corrupt(&mut bytes);
        std::fs::write(&entry, &bytes).unwrap();
        let t = TestHost::builder().fixture("misbehave").cache_dir(cache.path()).build();
        echo(&t).await;
        assert_eq!(t.host.load_stats().compiled(), 1, "{what}: the entry must be a miss");
        assert_eq!(std::fs::read(&entry).unwrap().len(), good.len(), "{what}: the entry is rewritten");
    }
}

#[tokio::test]
async fn without_a_cache_dir_nothing_is_written() {
    let t = TestHost::builder().fixture("misbehave").build();
    echo(&t).await;
    assert!(cache_files(t.cache.path()).len() <= 1);
    let plain = quiver::Host::builder().plugins_dir(t.plugins.path()).cache_dir(None).build().unwrap();
    assert_eq!(plain.call("misbehave", "echo", r#"{"text": "x"}"#).await.unwrap(), "x");
    assert_eq!(plain.load_stats().compiled(), 1);
}

/// Hardening row 1: an entry proves where it came from. Generation 1's
/// native code copied to generation 2's entry (what anyone able to write
/// the folder could do) is a miss: generation 2 is compiled, and its own
/// code runs.
#[tokio::test]
async fn an_entry_copied_from_another_component_is_a_miss() {
    use quiver_tests::builds::versioned;
    let cache = tempfile::tempdir().unwrap();
    let describe = |generation: u32| {
        let t = TestHost::builder().file("versioned.wasm", versioned(generation)).cache_dir(cache.path()).build();
        async move {
            let t = t; // the whole test host, folders included (not only `t.host`)
            let manifest = t.host.describe("versioned").await.unwrap();
            (serde_json::to_string(&manifest).unwrap(), t.host.load_stats().compiled())
        }
    };
    describe(1).await;
    let first = cache_files(cache.path());
    describe(2).await;
    let second: Vec<_> = cache_files(cache.path()).into_iter().filter(|p| !first.contains(p)).collect();
    std::fs::copy(&first[0], &second[0]).unwrap();
    let (manifest, compiled) = describe(2).await;
    assert_eq!(compiled, 1, "the copied entry must be a miss");
    assert!(
        manifest.contains("gen-0002") && !manifest.contains("gen-0001"),
        "generation 2's own code runs: {manifest}"
    );
}

/// The folder holds native code the host runs: it is created 0700 with a
/// 0600 key, and a folder other users can write is refused, naming it.
#[tokio::test]
async fn the_cache_folder_is_private_and_a_shared_one_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("cache");
    echo(&TestHost::builder().fixture("misbehave").cache_dir(&dir).build()).await;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(&dir), mode(&dir.join("key"))), (0o700, 0o600));

    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let error = TestHost::builder().fixture("misbehave").cache_dir(&dir).try_build().err().expect("refused");
    let message = error.to_string();
    assert!(message.contains(&dir.display().to_string()) && message.contains("writable by other users"), "{message}");
    assert!(error.remedy().is_some() || message.contains("--no-cache"), "{message}");
}

/// Hardening row 8: a request that gives up on a compile does not throw it
/// away: the next request joins it (or finds it in the cache), and the
/// plugin is compiled once.
#[tokio::test]
async fn a_compile_given_up_on_is_finished_and_shared() {
    let t = TestHost::builder().fixture("misbehave").build();
    let gave_up = tokio::time::timeout(std::time::Duration::from_millis(1), t.host.describe("misbehave")).await;
    assert!(gave_up.is_err(), "the compile takes longer than a millisecond");
    t.host.describe("misbehave").await.unwrap();
    assert_eq!(t.host.load_stats().compiled(), 1, "compiled twice");
}

/// The files of `dir` with their sizes and modification times.
fn listing(dir: &std::path::Path) -> Vec<(std::path::PathBuf, u64, std::time::SystemTime)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let meta = e.as_ref().unwrap().metadata().unwrap();
            (e.unwrap().path(), meta.len(), meta.modified().unwrap())
        })
        .collect();
    files.sort();
    files
}

/// Replicas share compiled components (issue 36): a builder signs its
/// entries with the key of a key file (a mounted Secret); a host given
/// that key reads them from a shared folder it never writes (a hit,
/// nothing compiled); with another key, or no folder of its own, it
/// compiles, and writes only its own folder, or nothing.
#[tokio::test]
async fn replicas_read_a_shared_cache_signed_with_their_key_and_never_write_it() {
    let secrets = tempfile::tempdir().unwrap();
    let key = |name: &str, digit: char| {
        let path = secrets.path().join(name);
        std::fs::write(&path, format!("{}\n", digit.to_string().repeat(64))).unwrap();
        path
    };
    let (ours, theirs) = (key("ours", 'a'), key("theirs", '7'));
    let shared = tempfile::tempdir().unwrap();
    let builder = TestHost::builder()
        .fixture("misbehave")
        .cache_dir(shared.path())
        .config(&format!("[cache]\nkey_file = {ours:?}"))
        .build();
    echo(&builder).await;
    assert_eq!(builder.host.load_stats().compiled(), 1);
    assert_eq!(cache_files(shared.path()).len(), 1);
    assert!(!shared.path().join("key").exists(), "a given key is never written into the folder");
    let before = listing(shared.path());

    let replica = |key: &std::path::Path| {
        let config = format!("[cache]\nshared = {:?}\nkey_file = {key:?}", shared.path());
        TestHost::builder().fixture("misbehave").config(&config).build()
    };
    let t = replica(&ours);
    echo(&t).await;
    assert_eq!((t.host.load_stats().compiled(), t.host.load_stats().cache_hits()), (0, 1));
    assert!(cache_files(t.cache.path()).is_empty(), "a shared hit is not copied");
    let t = replica(&theirs);
    echo(&t).await;
    assert_eq!((t.host.load_stats().compiled(), t.host.load_stats().cache_hits()), (1, 0), "another key: a miss");
    assert_eq!(cache_files(t.cache.path()).len(), 1, "compiled into its own folder");

    let config = format!("[cache]\nshared = {:?}\nkey_file = {theirs:?}", shared.path());
    let config = quiver::Config::parse(&config, secrets.path()).unwrap();
    let alone = quiver::Host::builder().config(config).plugins_dir(t.plugins.path()).cache_dir(None).build().unwrap();
    assert_eq!(alone.call("misbehave", "echo", r#"{"text": "x"}"#).await.unwrap(), "x");
    assert_eq!(alone.load_stats().compiled(), 1, "no folder of its own: compiled in memory");
    assert_eq!(listing(shared.path()), before, "nothing was written to the shared folder");
}

/// A shared folder needs the key it was signed with, and a key file that
/// holds no key is refused without showing what it holds.
#[tokio::test]
async fn a_shared_cache_needs_a_key_that_reads_as_one() {
    let shared = tempfile::tempdir().unwrap();
    let config = format!("[cache]\nshared = {:?}", shared.path());
    let error = TestHost::builder().config(&config).try_build().err().expect("refused");
    assert_eq!(error.kind(), quiver::ErrorKind::Config, "{error}");
    assert!(error.to_string().contains("`shared` needs `key_file`"), "{error}");
    let key = shared.path().join("key.txt");
    std::fs::write(&key, "hunter2-not-hex").unwrap();
    let error = TestHost::builder().config(&format!("[cache]\nkey_file = {key:?}")).try_build().err().unwrap();
    assert!(error.to_string().contains("64 hex digits") && !error.to_string().contains("hunter2"), "{error}");
}
