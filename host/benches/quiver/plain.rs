//! Components that know nothing about Quiver (`load::plain`): the Rust,
//! JavaScript and Python ones the tests build, served from a plugins
//! folder with their `.wit` beside them: how long the scan that lists one
//! takes (its stub and schemas derived from its types, nothing compiled),
//! the same once `quiver package` wrote them into it, and its calls.

use std::fmt::Write as _;
use std::time::Instant;

use quiver::Host;

use crate::{Options, Stats, ms, us};

pub(crate) fn section(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Any component as a tool\n").unwrap();
    writeln!(
        report,
        "The components of `tests/components/wit/plain.wit` built with no Quiver SDK (Rust: plain wit-bindgen; \
         JavaScript: componentize-js 0.23.0; Python: componentize-py 0.25.1), each alone in a plugins folder \
         with its `.wit` beside it. Listed: building a host over that folder (the scan reads the file and \
         derives the stub and schemas from the component's types; nothing is compiled). Packaged: the same \
         component once `quiver package` wrote its stub and manifest into it, alone in a folder (the scan \
         reads its stub; its types are read at its first call). Calls: `text.count` \
         on a short text, the compile cache warm; each call runs in a fresh instance, or, in the last \
         column, with `instances = \"per-caller\"` in the instance the same caller's last call left.\n"
    )
    .unwrap();
    writeln!(
        report,
        "| component | size (KiB) | listed (ms) | listed, packaged (ms) | first call, cache warm (ms) | warm call p50 / p99 (µs) | kept per caller p50 / p99 (µs) |"
    )
    .unwrap();
    writeln!(report, "|---|---:|---:|---:|---:|---:|---:|").unwrap();
    let components = [
        ("Rust (wit-bindgen)", "plain-rust", std::fs::read(quiver_tests::fixtures::PLAIN_RUST).unwrap()),
        ("JavaScript (componentize-js)", "plain-js", std::fs::read(quiver_tests::guests::plain_js()).unwrap()),
        ("Python (componentize-py)", "plain-py", std::fs::read(quiver_tests::guests::plain_python()).unwrap()),
    ];
    let wit = std::fs::read(quiver_tests::guests::plain_wit()).unwrap();
    let cache = tempfile::tempdir().unwrap();
    for (language, name, bytes) in components {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join(format!("{name}.wasm")), &bytes).unwrap();
        std::fs::write(folder.path().join(format!("{name}.wit")), &wit).unwrap();
        let host =
            || Host::builder().plugins_dir(folder.path()).cache_dir(Some(cache.path().to_owned())).build().unwrap();
        let listed = listing(options, name, host);
        let packed = tempfile::tempdir().unwrap();
        let packaged = runtime.block_on(host().package(&folder.path().join(format!("{name}.wasm")))).unwrap();
        assert!(packaged.plain && packaged.changed, "{name} is packaged");
        std::fs::write(packed.path().join(format!("{name}.wasm")), &packaged.bytes).unwrap();
        let packaged =
            listing(options, name, || Host::builder().plugins_dir(packed.path()).cache_dir(None).build().unwrap());
        let input = r#"{"text": "two words\nand more"}"#;
        let (first, warm) = crate::loading::call_timings(options, runtime, host, (name, "text_count", input), 2000);
        let kept_host = || {
            let config = format!("[plugins.{name}]\ninstances = \"per-caller\"");
            let config = quiver::Config::parse(&config, folder.path()).unwrap();
            let builder = Host::builder().config(config).plugins_dir(folder.path());
            builder.cache_dir(Some(cache.path().to_owned())).build().unwrap()
        };
        let (_, kept) = crate::loading::call_timings(options, runtime, kept_host, (name, "text_count", input), 2000);
        writeln!(
            report,
            "| {language} | {} | {} | {} | {} | {} / {} | {} / {} |",
            bytes.len() / 1024,
            ms(listed.median()),
            ms(packaged.median()),
            ms(first.median()),
            us(warm.median()),
            us(warm.pct(0.99)),
            us(kept.median()),
            us(kept.pct(0.99))
        )
        .unwrap();
        eprintln!("measured {name}");
    }
    writeln!(report).unwrap();
}

/// How long building a host over a folder takes until `name` is listed,
/// with nothing compiled.
fn listing(options: &Options, name: &str, host: impl Fn() -> Host) -> Stats {
    Stats::new(
        (0..options.reps(20))
            .map(|_| {
                let start = Instant::now();
                let host = host();
                let elapsed = start.elapsed();
                assert!(host.catalog().get(name).is_some(), "{name} is listed");
                assert_eq!(host.load_stats().compiled() + host.load_stats().cache_hits(), 0);
                elapsed
            })
            .collect(),
    )
}
