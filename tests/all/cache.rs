//! The `.cwasm` cache: a second host loads what the first compiled, and a
//! corrupt entry is a miss, never a crash.

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
