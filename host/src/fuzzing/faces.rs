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
/// it ends; every line it writes is JSON; every answer answers a line that
/// asked (its id matched to one request, `null` to one refused line whose
/// id cannot be read), at most once; no notification or response is
/// answered.
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
    // What may be answered, as the face reads its lines (a byte-order
    // mark and blank lines skipped): one answer per request, by its id,
    // and one `id: null` answer per refused line whose id cannot be read;
    // nothing for a notification or a response.
    let mut expected: Vec<serde_json::Value> = Vec::new();
    for line in data.split(|b| *b == b'\n') {
        let text = line.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(line).trim_ascii();
        if text.is_empty() {
            continue;
        }
        match envelope::check(text) {
            Ok(message) => expected.extend(message.id.and_then(|id| serde_json::from_str(id.get()).ok())),
            Err(refusal) if refusal.notification => {}
            Err(refusal) => {
                let id = refusal.id.and_then(|id| serde_json::from_str(id.get()).ok());
                expected.push(id.unwrap_or(serde_json::Value::Null));
            }
        }
    }
    for line in written.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let reply: serde_json::Value = serde_json::from_slice(line).expect("every line written is JSON");
        if reply.get("result").is_none() && reply.get("error").is_none() {
            continue;
        }
        let id = reply.get("id").cloned().unwrap_or(serde_json::Value::Null);
        match expected.iter().position(|asked| same_id(asked, &id)) {
            Some(at) => {
                expected.swap_remove(at);
            }
            None => panic!("an answer no line asked for (or a second one): {reply}"),
        }
    }
}

/// Whether a reply's `id` is the request's: the same string, or the same
/// number however it is written (`199999e9` is answered as
/// `199999000000000`, the same JSON value).
fn same_id(asked: &serde_json::Value, answered: &serde_json::Value) -> bool {
    match (asked.as_f64(), answered.as_f64()) {
        (Some(a), Some(b)) if asked.is_number() && answered.is_number() => a == b,
        _ => asked == answered,
    }
}
