//! An upstream `CallToolResult` as Quiver passes it on, typed as rmcp
//! read it: the protocol's own `_meta` keys dropped, and cut to the
//! server's answer budget
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

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

use crate::invoke::fit;

/// `result` as Quiver passes it on: the protocol's own `_meta` keys
/// (`io.modelcontextprotocol/...`, which describe the upstream connection,
/// such as its `serverInfo`) are dropped; everything else is kept as the
/// server sent it. Each face writes it for its own protocol.
pub(crate) fn passed_on(mut result: CallToolResult) -> CallToolResult {
    if let Some(meta) = result.meta.as_mut() {
        meta.0.retain(|key, _| !key.starts_with("io.modelcontextprotocol/"));
        if meta.0.is_empty() {
            result.meta = None;
        }
    }
    result
}

/// Cut `result` until its JSON is at most `budget` bytes (or nothing more
/// can be cut). Returns whether anything was cut.
pub(crate) fn fit_result(result: &mut CallToolResult, budget: usize) -> bool {
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
        cut_meta(result, budget);
    }
    true
}

/// The kind, MIME type and base64 payload of `block`, if it is an image,
/// audio or a binary resource.
fn binary(block: &ContentBlock) -> Option<(&'static str, Option<&str>, &str)> {
    match block {
        ContentBlock::Image(image) => Some(("image", Some(&image.mime_type), &image.data)),
        ContentBlock::Audio(audio) => Some(("audio", Some(&audio.mime_type), &audio.data)),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::BlobResourceContents { mime_type, blob, .. } => {
                Some(("resource", mime_type.as_deref(), blob))
            }
            _ => None,
        },
        _ => None,
    }
}

/// Leave out the largest binary blocks while together they are over `share`.
fn leave_out_binaries(result: &mut CallToolResult, share: usize) {
    let blocks = &mut result.content;
    let mut binaries: Vec<(usize, usize)> =
        blocks.iter().enumerate().filter_map(|(i, b)| binary(b).map(|(_, _, data)| (i, data.len()))).collect();
    let mut total: usize = binaries.iter().map(|(_, bytes)| bytes).sum();
    binaries.sort_by_key(|(_, bytes)| std::cmp::Reverse(*bytes));
    for (i, bytes) in binaries {
        if total <= share {
            break;
        }
        let Some((kind, mime, _)) = binary(&blocks[i]) else { continue };
        let what = mime.map_or_else(|| kind.to_owned(), |mime| format!("{kind} ({mime})"));
        blocks[i] = ContentBlock::text(format!(
            "[an {what} of {bytes} bytes of base64 was left out to fit the answer budget; ask for a smaller one]"
        ));
        total -= bytes;
    }
}

/// A text or structured part of a result, which may be cut.
enum Part<'a> {
    Text(&'a mut String),
    Json(&'a mut Value),
}

impl Part<'_> {
    fn size(&self) -> usize {
        match self {
            Part::Text(text) => fit::size(text.as_str()),
            Part::Json(value) => fit::size(*value),
        }
    }

    fn fit(&mut self, share: usize) {
        match self {
            Part::Text(text) => {
                let mut value = Value::String(std::mem::take(*text));
                fit::fit(&mut value, share);
                **text = match value {
                    Value::String(cut) => cut,
                    other => other.to_string(),
                };
            }
            Part::Json(value) => {
                fit::fit(value, share);
            }
        }
    }
}

/// Share what the budget leaves after everything else among the texts and
/// `structuredContent`: each over its share is cut to it.
fn cut_texts(result: &mut CallToolResult, budget: usize) {
    let total = fit::size(result);
    let mut parts: Vec<Part<'_>> = Vec::new();
    parts.extend(result.structured_content.as_mut().map(Part::Json));
    for block in result.content.iter_mut() {
        match block {
            ContentBlock::Text(text) => parts.push(Part::Text(&mut text.text)),
            ContentBlock::Resource(embedded) => {
                if let ResourceContents::TextResourceContents { text, .. } = &mut embedded.resource {
                    parts.push(Part::Text(text));
                }
            }
            _ => {}
        }
    }
    let mut sizes: Vec<(usize, usize)> = parts.iter().map(Part::size).enumerate().collect();
    let fixed = total - sizes.iter().map(|(_, size)| size).sum::<usize>();
    let mut left = budget.saturating_sub(fixed);
    // Smallest first: what fits its share whole stays whole, and leaves
    // more for the larger ones.
    sizes.sort_by_key(|(_, size)| *size);
    let count = sizes.len();
    for (done, (i, size)) in sizes.into_iter().enumerate() {
        let share = left / (count - done);
        if size > share {
            parts[i].fit(share);
        }
        left = left.saturating_sub(parts[i].size());
    }
}

/// Leave out the last content blocks (keeping the first) until `result`
/// fits, with a note.
fn leave_out_last_blocks(result: &mut CallToolResult, budget: usize) {
    let excess = fit::size(result).saturating_sub(budget);
    let blocks = &mut result.content;
    let (mut freed, mut left_out) = (0, 0);
    // Room for the note, about 120 bytes.
    while blocks.len() > 1 && freed < excess + 120 {
        freed += blocks.pop().map_or(0, |b| fit::size(&b) + 1);
        left_out += 1;
    }
    if left_out > 0 {
        blocks.push(ContentBlock::text(format!(
            "… {left_out} more content blocks left out to fit the answer budget; ask for fewer"
        )));
    }
}

/// Cut the result's `_meta` to what the budget leaves it.
fn cut_meta(result: &mut CallToolResult, budget: usize) {
    let Some(meta) = result.meta.take() else { return };
    let rest = fit::size(result);
    let mut value = Value::Object(meta.0);
    // `,"_meta":` and the braces around it.
    fit::fit(&mut value, budget.saturating_sub(rest + 10));
    if let Value::Object(map) = value {
        result.meta = Some(rmcp::model::MetaObject(map));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `result` after fitting it to `budget`, as JSON, and whether it was cut.
    fn fitted(result: Value, budget: usize) -> (Value, bool) {
        let mut typed: CallToolResult = serde_json::from_value(result).unwrap();
        let cut = fit_result(&mut typed, budget);
        (serde_json::to_value(typed).unwrap(), cut)
    }

    fn texts(result: &Value) -> Vec<&str> {
        result["content"].as_array().unwrap().iter().filter_map(|b| b["text"].as_str()).collect()
    }

    #[test]
    fn a_result_within_its_budget_is_left_alone() {
        let before = json!({"content": [{"type": "text", "text": "short"}], "isError": false});
        let (result, cut) = fitted(before.clone(), 1024);
        assert!(!cut);
        assert_eq!(result, before);
    }

    #[test]
    fn texts_share_the_budget_and_what_fits_stays_whole() {
        let items: Vec<Value> = (0..5000).map(|i| json!({"id": i})).collect();
        let (result, cut) = fitted(
            json!({
                "content": [
                    {"type": "text", "text": "small and whole"},
                    {"type": "text", "text": "a".repeat(100_000)},
                    {"type": "resource", "resource": {"uri": "file:///x", "text": "b".repeat(100_000)}},
                ],
                "structuredContent": {"items": items},
            }),
            8192,
        );
        assert!(cut);
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
        let (result, cut) = fitted(
            json!({"content": [
                {"type": "text", "text": "here"},
                {"type": "image", "data": "A".repeat(50_000), "mimeType": "image/png"},
                {"type": "audio", "data": "B".repeat(1_000), "mimeType": "audio/wav"},
            ]}),
            4096,
        );
        assert!(cut);
        assert!(fit::size(&result) <= 4096);
        assert_eq!(result["content"][0]["text"], "here");
        let note = result["content"][1]["text"].as_str().unwrap();
        assert!(note.contains("image (image/png) of 50000 bytes") && note.contains("left out"), "{note}");
        assert_eq!(result["content"][2]["data"], "B".repeat(1_000), "the small one is kept whole");
    }

    #[test]
    fn a_huge_meta_is_cut_last() {
        let (result, cut) =
            fitted(json!({"content": [{"type": "text", "text": "ok"}], "_meta": {"log": "z".repeat(10_000)}}), 2048);
        assert!(cut && fit::size(&result) <= 2048, "{}", fit::size(&result));
        assert_eq!(texts(&result), ["ok"]);
        assert!(result["_meta"]["log"].as_str().unwrap().contains("more characters cut"));
    }

    #[test]
    fn the_protocols_own_meta_stays_behind() {
        let result: CallToolResult = serde_json::from_value(json!({
            "content": [],
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "x"}, "trace": "t"}
        }))
        .unwrap();
        let meta = passed_on(result).meta.unwrap();
        assert_eq!(meta.0.keys().collect::<Vec<_>>(), ["trace"]);
    }

    #[test]
    fn thousands_of_blocks_lose_their_tail_with_a_count() {
        let blocks: Vec<Value> = (0..5000).map(|i| json!({"type": "text", "text": format!("line {i}")})).collect();
        let (result, cut) = fitted(json!({"content": blocks}), 4096);
        assert!(cut);
        assert!(fit::size(&result) <= 4096, "{}", fit::size(&result));
        let texts = texts(&result);
        assert_eq!(texts[0], "line 0");
        assert!(texts.last().unwrap().contains("more content blocks left out"), "{:?}", texts.last());
    }
}
