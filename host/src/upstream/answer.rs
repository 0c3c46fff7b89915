//! An upstream `CallToolResult` as Quiver passes it on: the protocol's own
//! `_meta` keys dropped, and cut to the server's answer budget
//! (`max_answer_kb`) the way a connector's answer is
//! ([`invoke::fit`](crate::invoke::fit)), while it stays a valid result.
//!
//! An image, an audio clip or an embedded binary resource cannot be cut:
//! each is kept whole or left out, a text block naming its type and size in
//! its place; the largest are left out while together they take more than
//! half the budget. The rest of the budget is shared by the texts (text
//! blocks, embedded text resources) and `structuredContent`: what fits
//! whole stays whole, and each larger one is cut to an equal share, long
//! strings losing their tail and long arrays their last items, each with a
//! note saying how much. Should that not be enough (thousands of blocks),
//! the last blocks are left out, with a note.

use rmcp::model::CallToolResult;
use serde_json::{Map, Value};

use crate::invoke::fit;

/// `result` as Quiver passes it on: the protocol's own `_meta` keys
/// (`io.modelcontextprotocol/...`, which describe the upstream connection,
/// such as its `serverInfo`) are dropped; everything else is kept. The
/// result type is set by the face for the client's protocol version.
pub(crate) fn passed_on(mut result: CallToolResult) -> CallToolResult {
    if let Some(meta) = result.meta.as_mut() {
        meta.0.retain(|key, _| !key.starts_with("io.modelcontextprotocol/"));
        if meta.0.is_empty() {
            result.meta = None;
        }
    }
    result.result_type = None;
    result
}

/// Cut `result`, a `CallToolResult` as JSON, until it is at most `budget`
/// bytes (or nothing more can be cut). Returns whether anything was cut.
pub(crate) fn fit_result(result: &mut Value, budget: usize) -> bool {
    if fit::size(result) <= budget {
        return false;
    }
    leave_out_binaries(result, budget / 2);
    cut_texts(result, budget);
    if fit::size(result) > budget {
        leave_out_last_blocks(result, budget);
    }
    if fit::size(result) > budget {
        // What is left is neither content nor structured (a huge `_meta`).
        fit::fit(result, budget);
    }
    true
}

fn content(result: &mut Value) -> Option<&mut Vec<Value>> {
    result.get_mut("content").and_then(Value::as_array_mut)
}

/// The base64 payload of `block`, if it is an image, audio or a binary resource.
fn binary(block: &Value) -> Option<&str> {
    match block.get("type").and_then(Value::as_str)? {
        "image" | "audio" => block.get("data")?.as_str(),
        "resource" => block.get("resource")?.get("blob")?.as_str(),
        _ => None,
    }
}

/// A text block saying `text`.
fn text_block(text: String) -> Value {
    let mut block = Map::new();
    block.insert("type".into(), "text".into());
    block.insert("text".into(), text.into());
    Value::Object(block)
}

/// Leave out the largest binary blocks while together they are over `share`.
fn leave_out_binaries(result: &mut Value, share: usize) {
    let Some(blocks) = content(result) else { return };
    let mut binaries: Vec<(usize, usize)> =
        blocks.iter().enumerate().filter_map(|(i, b)| binary(b).map(|data| (i, data.len()))).collect();
    let mut total: usize = binaries.iter().map(|(_, bytes)| bytes).sum();
    binaries.sort_by_key(|(_, bytes)| std::cmp::Reverse(*bytes));
    for (i, bytes) in binaries {
        if total <= share {
            break;
        }
        let block = &blocks[i];
        let kind = block["type"].as_str().unwrap_or("binary");
        let mime = block.get("mimeType").or_else(|| block["resource"].get("mimeType")).and_then(Value::as_str);
        let what = mime.map_or_else(|| kind.to_owned(), |mime| format!("{kind} ({mime})"));
        blocks[i] = text_block(format!(
            "[an {what} of {bytes} bytes of base64 was left out to fit the answer budget; ask for a smaller one]"
        ));
        total -= bytes;
    }
}

/// Share what the budget leaves after everything else among the texts and
/// `structuredContent`: each over its share is cut to it.
fn cut_texts(result: &mut Value, budget: usize) {
    let total = fit::size(result);
    let Some(map) = result.as_object_mut() else { return };
    let mut parts: Vec<&mut Value> = Vec::new();
    for (key, value) in map.iter_mut() {
        match (key.as_str(), value) {
            ("structuredContent", value) => parts.push(value),
            ("content", Value::Array(blocks)) => {
                for block in blocks.iter_mut().filter(|b| binary(b).is_none()) {
                    let text = match block.get("type").and_then(Value::as_str) {
                        Some("text") => block.get_mut("text"),
                        Some("resource") => block.get_mut("resource").and_then(|r| r.get_mut("text")),
                        _ => None,
                    };
                    parts.extend(text);
                }
            }
            _ => {}
        }
    }
    let mut sizes: Vec<(usize, usize)> = parts.iter().map(|p| fit::size(p)).enumerate().collect();
    let fixed = total - sizes.iter().map(|(_, size)| size).sum::<usize>();
    let mut left = budget.saturating_sub(fixed);
    // Smallest first: what fits its share whole stays whole, and leaves
    // more for the larger ones.
    sizes.sort_by_key(|(_, size)| *size);
    let count = sizes.len();
    for (done, (i, size)) in sizes.into_iter().enumerate() {
        let share = left / (count - done);
        if size > share {
            fit::fit(parts[i], share);
        }
        left = left.saturating_sub(fit::size(parts[i]));
    }
}

/// Leave out the last content blocks (keeping the first) until `result`
/// fits, with a note.
fn leave_out_last_blocks(result: &mut Value, budget: usize) {
    let excess = fit::size(result).saturating_sub(budget);
    let Some(blocks) = content(result) else { return };
    let (mut freed, mut left_out) = (0, 0);
    // Room for the note, about 120 bytes.
    while blocks.len() > 1 && freed < excess + 120 {
        freed += blocks.pop().map_or(0, |b| fit::size(&b) + 1);
        left_out += 1;
    }
    if left_out > 0 {
        blocks.push(text_block(format!(
            "… {left_out} more content blocks left out to fit the answer budget; ask for fewer"
        )));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn texts(result: &Value) -> Vec<&str> {
        result["content"].as_array().unwrap().iter().filter_map(|b| b["text"].as_str()).collect()
    }

    #[test]
    fn a_result_within_its_budget_is_left_alone() {
        let mut result = json!({"content": [{"type": "text", "text": "short"}], "isError": false});
        let before = result.clone();
        assert!(!fit_result(&mut result, 1024));
        assert_eq!(result, before);
    }

    #[test]
    fn texts_share_the_budget_and_what_fits_stays_whole() {
        let items: Vec<Value> = (0..5000).map(|i| json!({"id": i})).collect();
        let mut result = json!({
            "content": [
                {"type": "text", "text": "small and whole"},
                {"type": "text", "text": "a".repeat(100_000)},
                {"type": "resource", "resource": {"uri": "file:///x", "text": "b".repeat(100_000)}},
            ],
            "structuredContent": {"items": items},
        });
        assert!(fit_result(&mut result, 8192));
        assert!(fit::size(&result) <= 8192, "{}", fit::size(&result));
        let texts = texts(&result);
        assert_eq!(texts[0], "small and whole");
        assert!(texts[1].starts_with("aaa") && texts[1].contains("more characters cut"), "{}", texts[1]);
        let resource = result["content"][2]["resource"]["text"].as_str().unwrap();
        assert!(resource.starts_with("bbb") && resource.contains("more characters cut"), "{resource}");
        let items = result["structuredContent"]["items"].as_array().unwrap();
        assert!(items.last().unwrap().as_str().unwrap().contains("more items left out"));
        // The three share it: none took it all.
        for part in [texts[1].len(), resource.len(), fit::size(&result["structuredContent"])] {
            assert!((1000..4096).contains(&part), "{part}");
        }
    }

    #[test]
    fn images_are_kept_whole_or_left_out_with_their_type_and_size() {
        let mut result = json!({"content": [
            {"type": "text", "text": "here"},
            {"type": "image", "data": "A".repeat(50_000), "mimeType": "image/png"},
            {"type": "audio", "data": "B".repeat(1_000), "mimeType": "audio/wav"},
        ]});
        assert!(fit_result(&mut result, 4096));
        assert!(fit::size(&result) <= 4096);
        assert_eq!(result["content"][0]["text"], "here");
        let note = result["content"][1]["text"].as_str().unwrap();
        assert!(note.contains("image (image/png) of 50000 bytes") && note.contains("left out"), "{note}");
        assert_eq!(result["content"][2]["data"], "B".repeat(1_000), "the small one is kept whole");
    }

    #[test]
    fn thousands_of_blocks_lose_their_tail_with_a_count() {
        let blocks: Vec<Value> = (0..5000).map(|i| json!({"type": "text", "text": format!("line {i}")})).collect();
        let mut result = json!({"content": blocks});
        assert!(fit_result(&mut result, 4096));
        assert!(fit::size(&result) <= 4096, "{}", fit::size(&result));
        let texts = texts(&result);
        assert_eq!(texts[0], "line 0");
        assert!(texts.last().unwrap().contains("more content blocks left out"), "{:?}", texts.last());
    }
}
