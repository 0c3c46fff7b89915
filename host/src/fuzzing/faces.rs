//! The MCP faces' parsers of outside input: the envelope check both
//! transports make, and the stdio face whole (line reader, envelope check,
//! rmcp's dispatch), fed lines as a client would.

use std::sync::OnceLock;
use std::time::Duration;

use crate::faces::envelope;
use crate::host::Host;

/// The envelope check: what passes, rmcp reads; what fails is `-32700` or
/// `-32600` with a one-line reason and an `id` that is a JSON-RPC id or
/// none.
pub fn envelope(data: &[u8]) {
    match envelope::check(data) {
        Ok(_) => {
            let text = std::str::from_utf8(data).expect("a message that passed is UTF-8 JSON");
            serde_json::from_str::<rmcp::model::ClientJsonRpcMessage>(text.trim_start_matches('\u{feff}'))
                .expect("a message the check passes is one rmcp reads");
        }
        Err(refusal) => {
            assert!(matches!(refusal.code, -32700 | -32600), "code {}", refusal.code);
            assert!(!refusal.message.contains(['\n', '\r']), "a reason on two lines: {:?}", refusal.message);
            if let Some(id) = &refusal.id {
                serde_json::from_str::<rmcp::model::RequestId>(id.get()).expect("an id echoed is a JSON-RPC id");
            }
        }
    }
}

struct Served {
    runtime: tokio::runtime::Runtime,
    host: Host,
}

/// The stdio face over `data` (lines a client sends, then end of input):
/// it ends; every line it writes is JSON; it answers at most once per line
/// and never a notification (a valid message without an `id` and with a
/// `method`).
pub fn stdio(data: &[u8]) {
    static SERVED: OnceLock<Served> = OnceLock::new();
    let served = SERVED.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let host = runtime.block_on(async { Host::builder().cache_dir(None).build().expect("a host with no plugins") });
        Served { runtime, host }
    });
    let input = data.to_vec();
    let (output, mut replies) = tokio::io::duplex(1 << 20);
    let written = served.runtime.block_on(async {
        let serve = crate::faces::stdio::serve_lines(&served.host, None, std::io::Cursor::new(input), output);
        let read = async {
            let mut all = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut replies, &mut all).await.map(|_| all)
        };
        tokio::time::timeout(Duration::from_secs(20), async { tokio::join!(serve, read) }).await
    });
    let (_, written) = written.expect("the stdio face ended within 20 s of its input's end");
    let written = written.expect("read the replies");
    let lines: Vec<&[u8]> = data.split(|b| *b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace)).collect();
    let notifications = lines
        .iter()
        .filter(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            envelope::check(line).is_ok_and(|m| m.id.is_none())
                || envelope::check(line).is_err_and(|refusal| refusal.notification)
        })
        .count();
    let mut answers = 0;
    for line in written.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let reply: serde_json::Value = serde_json::from_slice(line).expect("every line written is JSON");
        if reply.get("result").is_some() || reply.get("error").is_some() {
            answers += 1;
        }
    }
    assert!(
        answers <= lines.len() - notifications,
        "{answers} answers to {} lines, {notifications} of them notifications",
        lines.len()
    );
}
