//! What search matches: each tool, skill and resource as a [`Document`]
//! (the texts of both arms) and the [`Entry`] a hit on it returns.

use serde_json::Value;

use crate::catalog::{Category, Skill, ToolEntry, ToolRecord};
use crate::contract::one_line;

use super::lexical::split_identifiers;

/// What a search hit points at.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Model-facing tool name, or the skill's name.
    pub name: String,
    /// Its category.
    pub category: Category,
    /// The plugin, server or skill it belongs to.
    pub origin: String,
    /// One line on what it does.
    pub summary: String,
    /// It is a resource (a database, a connector, an MCP server), reached
    /// through its meta-tool, not a tool called by name.
    pub resource: bool,
    /// The same for equivalent entries, which search shows once: tools
    /// with the same action, description and input schema (one tool that
    /// several servers or plugin copies serve); distinct otherwise. A
    /// database's or connector's tools and every resource are their own:
    /// two instances are configured apart (another database, another
    /// account), never the same.
    pub kin: u64,
}

/// A stable digest of `parts` (the same on every run and machine).
pub(crate) fn kin_of(parts: &[&str]) -> u64 {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    let digest = hasher.finalize();
    u64::from_le_bytes(digest[..8].try_into().expect("eight bytes"))
}

/// What a tool or skill is matched by.
#[derive(Debug, Clone)]
pub struct Document {
    /// What a hit on it returns.
    pub entry: Entry,
    /// Text for BM25: names repeated for weight, description, parameters.
    pub lexical: String,
    /// Text for the embedding: name and description.
    pub semantic: String,
}

/// Longest part of a description that is indexed (the start says the most).
const MAX_DESCRIPTION_CHARS: usize = 1200;

/// Longest part of a description that is embedded.
const MAX_EMBEDDED_CHARS: usize = 400;

impl Entry {
    /// The entry of a tool record.
    pub fn of_record(record: &ToolRecord) -> Entry {
        Entry {
            name: record.name.clone(),
            category: record.category,
            origin: record.origin.clone(),
            summary: record.summary.clone(),
            resource: false,
            kin: match record.category {
                Category::Database | Category::Connector => kin_of(&["own", &record.name]),
                _ => kin_of(&[
                    "tool",
                    &record.action,
                    &record.description,
                    &record.input_schema.as_ref().map(Value::to_string).unwrap_or_default(),
                ]),
            },
        }
    }

    /// The entry of a catalog tool.
    pub fn of_entry(entry: &ToolEntry) -> Entry {
        Entry {
            name: entry.name.clone(),
            category: entry.category,
            origin: entry.origin.clone(),
            summary: entry.summary.clone(),
            resource: false,
            kin: match entry.category {
                Category::Database | Category::Connector => kin_of(&["own", &entry.name]),
                // A stub says too little to call two tools the same (two
                // plugins may each have a `format` that says "Format a
                // value"): known by their stubs alone, tools are their own.
                _ => kin_of(&["stub", &entry.origin, &entry.action]),
            },
        }
    }

    /// The entry of a skill.
    pub fn of_skill(skill: &Skill) -> Entry {
        Entry {
            name: skill.name.clone(),
            category: Category::Skill,
            origin: skill.name.clone(),
            summary: one_line(&skill.description, crate::catalog::SUMMARY_CHARS),
            resource: false,
            kin: kin_of(&["skill", &skill.name]),
        }
    }
}

impl Document {
    /// A tool known by its full record.
    pub fn of_record(record: &ToolRecord) -> Document {
        Document {
            entry: Entry::of_record(record),
            lexical: document_text(record),
            semantic: semantic_text(&record.action, &record.description),
        }
    }

    /// A tool known from its stub.
    pub fn of_entry(entry: &ToolEntry) -> Document {
        Document {
            entry: Entry::of_entry(entry),
            lexical: entry_text(entry),
            semantic: semantic_text(&entry.action, &entry.summary),
        }
    }

    /// A skill.
    pub fn of_skill(skill: &Skill) -> Document {
        Document {
            entry: Entry::of_skill(skill),
            lexical: format!("{0} {0} {1}", skill.name, skill.description),
            semantic: semantic_text(&skill.name, &skill.description),
        }
    }
}

/// What the semantic arm embeds: the action's words, then the start of the
/// description.
fn semantic_text(action: &str, description: &str) -> String {
    let mut text = split_identifiers(action).into_owned();
    text.push_str(". ");
    text.extend(description.chars().take(MAX_EMBEDDED_CHARS));
    text
}

/// The text a tool is matched by: its action name (twice, for weight), its
/// origin, its description, and its parameters (names, descriptions and
/// allowed values, nested ones included).
fn document_text(record: &ToolRecord) -> String {
    let mut text = String::new();
    for _ in 0..NAME_WEIGHT {
        text.push_str(&record.action);
        text.push(' ');
    }
    text.push_str(&record.origin);
    text.push(' ');
    text.extend(record.description.chars().take(MAX_DESCRIPTION_CHARS));
    if let Some(schema) = &record.input_schema {
        parameters_text(schema, 0, &mut text);
    }
    text
}

/// The text a tool known from its stub is matched by: its action name
/// (twice), its origin and its summary.
fn entry_text(entry: &ToolEntry) -> String {
    let mut text = String::new();
    for _ in 0..NAME_WEIGHT {
        text.push_str(&entry.action);
        text.push(' ');
    }
    text.push_str(&entry.origin);
    text.push(' ');
    text.push_str(&entry.summary);
    text
}

/// How many times the action name is repeated in its document.
const NAME_WEIGHT: usize = 2;

/// Characters of each parameter description that are indexed.
const MAX_PARAMETER_CHARS: usize = 300;

fn parameters_text(schema: &Value, depth: usize, text: &mut String) {
    if depth > 3 {
        return;
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            text.push(' ');
            text.push_str(name);
            if let Some(d) = property.get("description").and_then(Value::as_str) {
                text.push(' ');
                text.extend(d.chars().take(MAX_PARAMETER_CHARS));
            }
            if let Some(values) = property.get("enum").and_then(Value::as_array) {
                for v in values.iter().filter_map(Value::as_str).take(20) {
                    text.push(' ');
                    text.push_str(v);
                }
            }
            parameters_text(property, depth + 1, text);
        }
    }
    if let Some(items) = schema.get("items") {
        parameters_text(items, depth + 1, text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Access;

    /// Two tools known only by their stubs are never equivalents, however
    /// alike the stubs: a stub has no schema to compare.
    #[test]
    fn tools_known_by_their_stubs_are_their_own() {
        let entry = |origin: &str| ToolEntry {
            name: format!("{origin}__format"),
            origin: origin.into(),
            action: "format".into(),
            category: Category::Builtin,
            summary: "Format a value".into(),
            access: Access::Read,
        };
        assert_ne!(Entry::of_entry(&entry("dates")).kin, Entry::of_entry(&entry("numbers")).kin);
        assert_eq!(Entry::of_entry(&entry("dates")).kin, Entry::of_entry(&entry("dates")).kin);
    }
}
