//! Fitting a large answer into the budget a connector's instance sets, so
//! that a model gets a useful part and a note on what was cut, not a flood
//! or a failure: the longest arrays lose their tail (a last element says
//! how many items were left out), then the longest strings are cut (with
//! the count of characters left out), until the answer's JSON fits.

use serde_json::Value;

/// The note closing a shortened array.
fn items_note(left_out: usize) -> String {
    format!(
        "… {left_out} more items left out to fit the answer budget; ask for fewer (filters, fields, a smaller page)"
    )
}

/// Shorten `value` until its JSON is at most `budget` bytes (or nothing
/// more can be cut). Returns whether anything was cut.
pub(crate) fn fit(value: &mut Value, budget: usize) -> bool {
    let mut cut = false;
    // Each round halves the largest array or string: a few dozen rounds
    // even for answers of megabytes.
    for _ in 0..256 {
        let size = size(value);
        if size <= budget {
            break;
        }
        let excess = size - budget;
        match largest(value) {
            Some(Largest::Array(array)) => {
                // A note from an earlier round counts what it left out.
                let earlier = match array.last() {
                    Some(last) if is_note(last) => {
                        let note = array.pop().and_then(|n| n.as_str().map(str::to_owned)).unwrap_or_default();
                        note.trim_start_matches("… ").split(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
                    }
                    _ => 0,
                };
                let keep = (array.len() / 2).max(1).min(array.len() - 1);
                let left_out = array.len() - keep + earlier;
                array.truncate(keep);
                array.push(Value::String(items_note(left_out)));
            }
            Some(Largest::String(text)) => {
                // Cut what the excess is in characters (escapes make JSON
                // longer than the text), plus room for the note.
                let chars = text.chars().count();
                let escaped = serde_json::to_string(text.as_str()).map_or(text.len(), |j| j.len()).max(1);
                let excess_chars = (excess + 80) * chars / escaped + 1;
                let keep = chars.saturating_sub(excess_chars).max(16).min(chars);
                let cut_at = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
                let left_out = chars - keep;
                if left_out == 0 {
                    break;
                }
                text.truncate(cut_at);
                text.push_str(&format!("… [{left_out} more characters cut to fit the answer budget]"));
            }
            None => break,
        }
        cut = true;
    }
    cut
}

/// The bytes of `value`'s JSON, counted as it is written, never kept.
pub(crate) fn size<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => 0,
    }
}

/// A writer that only counts.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

enum Largest<'a> {
    Array(&'a mut Vec<Value>),
    String(&'a mut String),
}

/// The array (of at least two items, not counting a note) or string
/// (longer than 64 characters) whose JSON is largest.
fn largest(value: &mut Value) -> Option<Largest<'_>> {
    let mut best: Option<(usize, Vec<PathStep>)> = None;
    let mut path = Vec::new();
    measure(value, &mut path, &mut best);
    let (_, path) = best?;
    let mut at = value;
    for step in path {
        at = match (at, step) {
            (Value::Array(items), PathStep::Index(i)) => &mut items[i],
            (Value::Object(map), PathStep::Key(k)) => map.get_mut(&k)?,
            _ => return None,
        };
    }
    match at {
        Value::Array(items) => Some(Largest::Array(items)),
        Value::String(text) => Some(Largest::String(text)),
        _ => None,
    }
}

#[derive(Clone)]
enum PathStep {
    Index(usize),
    Key(String),
}

fn measure(value: &Value, path: &mut Vec<PathStep>, best: &mut Option<(usize, Vec<PathStep>)>) -> usize {
    match value {
        Value::Array(items) => {
            let mut total = 2;
            for (i, item) in items.iter().enumerate() {
                path.push(PathStep::Index(i));
                total += measure(item, path, best) + 1;
                path.pop();
            }
            let real = items.iter().filter(|i| !is_note(i)).count();
            if real >= 2 && best.as_ref().is_none_or(|(b, _)| total > *b) {
                *best = Some((total, path.clone()));
            }
            total
        }
        Value::Object(map) => {
            let mut total = 2;
            for (key, item) in map {
                path.push(PathStep::Key(key.clone()));
                total += key.len() + 4 + measure(item, path, best);
                path.pop();
            }
            total
        }
        Value::String(text) => {
            let total = text.len() + 2;
            if text.chars().count() > 64
                && !text.ends_with("answer budget]")
                && best.as_ref().is_none_or(|(b, _)| total > *b)
            {
                *best = Some((total, path.clone()));
            }
            total
        }
        other => other.to_string().len(),
    }
}

fn is_note(value: &Value) -> bool {
    value.as_str().is_some_and(|s| s.starts_with('…') && s.contains("answer budget"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn small_answers_are_left_alone() {
        let mut value = json!({ "items": [1, 2, 3], "name": "x" });
        assert!(!fit(&mut value, 1024));
        assert_eq!(value, json!({ "items": [1, 2, 3], "name": "x" }));
    }

    #[test]
    fn long_arrays_lose_their_tail_with_a_count() {
        let items: Vec<Value> = (0..1000).map(|i| json!({ "id": i, "title": format!("book {i}") })).collect();
        let mut value = json!({ "total": 1000, "items": items });
        assert!(fit(&mut value, 4096));
        assert!(size(&value) <= 4096, "{}", size(&value));
        let items = value["items"].as_array().unwrap();
        let note = items.last().unwrap().as_str().unwrap();
        let kept = items.len() - 1;
        assert!(note.contains(&format!("{} more items left out", 1000 - kept)), "{note}");
        assert_eq!(items[0]["id"], 0, "the head is kept");
        assert_eq!(value["total"], 1000);
    }

    #[test]
    fn long_strings_are_cut_with_a_count() {
        let mut value = json!({ "status": 200, "body": "é".repeat(50_000) });
        assert!(fit(&mut value, 2048));
        assert!(size(&value) <= 2048, "{}", size(&value));
        let body = value["body"].as_str().unwrap();
        assert!(body.starts_with("éé") && body.contains("more characters cut"), "{body}");
    }

    #[test]
    fn a_string_a_little_over_loses_only_a_little() {
        let mut value = json!({ "body": "x".repeat(3000) });
        assert!(fit(&mut value, 2900));
        let kept = value["body"].as_str().unwrap().chars().take_while(|c| *c == 'x').count();
        assert!((2700..2900).contains(&kept), "{kept}");
    }

    #[test]
    fn what_cannot_shrink_is_returned_as_small_as_it_gets() {
        let mut value = json!({ "a": 1, "b": 2 });
        assert!(!fit(&mut value, 4));
        assert_eq!(value, json!({ "a": 1, "b": 2 }));
    }
}
