//! Names shown to models: `[A-Za-z0-9_-]{1,64}`, deterministic, unique.
//!
//! Providers reject other names (OpenAI and Anthropic both cap at 64
//! characters of letters, digits, `_` and `-`). A qualified id such as
//! `zereight-mcp-gitlab` + `list_merge_request_diffs` is joined with `__`,
//! other characters become `_`, and a name that is still too long keeps
//! its first characters plus a short hash of the full id. The scan leaves
//! out (and reports) a tool whose cleaned name another tool already has;
//! should two ids still map to one name, they are told apart by a hash
//! too, so names never depend on the order resources were found in.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::contract::NAME_SEPARATOR;

/// Longest name providers accept (the contract's tool-name limit).
pub const MAX_NAME: usize = crate::contract::MAX_TOOL_NAME;

/// Characters of the hash suffix (`_` + 8 hex digits).
const SUFFIX: usize = 9;

/// The model-facing name of `parts` joined with the contract's separator
/// (`__`), before collisions are considered.
pub fn model_name(parts: &[&str]) -> String {
    let joined = parts.join(NAME_SEPARATOR);
    let clean: String =
        joined.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    let clean = if clean.is_empty() { "_".to_owned() } else { clean };
    if clean.len() <= MAX_NAME { clean } else { with_hash(&clean, &joined) }
}

/// `name` (ASCII) cut to leave room for `_` and 8 hex digits of a hash of `id`.
fn with_hash(name: &str, id: &str) -> String {
    let digest = hex::encode(&Sha256::digest(id.as_bytes())[..4]);
    let keep = name.len().min(MAX_NAME - SUFFIX);
    format!("{}_{digest}", &name[..keep])
}

/// Model-facing names for a set of qualified ids (each a list of parts),
/// unique across the set: where several ids map to one name, each gets
/// that name plus a hash of its full id instead.
pub fn assign(ids: &[Vec<String>]) -> Vec<String> {
    let names: Vec<String> =
        ids.iter().map(|parts| model_name(&parts.iter().map(String::as_str).collect::<Vec<_>>())).collect();
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for name in &names {
        *count.entry(name).or_default() += 1;
    }
    names
        .iter()
        .zip(ids)
        .map(
            |(name, parts)| {
                if count[name.as_str()] == 1 { name.clone() } else { with_hash(name, &parts.join("\u{0}")) }
            },
        )
        .collect()
}

/// Whether `name` is acceptable to every provider.
pub fn is_valid(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&[&str]]) -> Vec<Vec<String>> {
        list.iter().map(|p| p.iter().map(|s| s.to_string()).collect()).collect()
    }

    #[test]
    fn short_names_are_joined_and_cleaned() {
        assert_eq!(model_name(&["calc", "evaluate"]), "calc__evaluate");
        assert_eq!(model_name(&["stripe-mcp-0.2.5", "create.customer"]), "stripe-mcp-0_2_5__create_customer");
    }

    #[test]
    fn long_names_are_cut_with_a_hash() {
        let long = model_name(&["zereight-mcp-gitlab", "list_merge_request_diffs_with_a_very_long_suffix_indeed"]);
        assert_eq!(long.len(), MAX_NAME);
        assert!(is_valid(&long));
        assert_eq!(
            long,
            model_name(&["zereight-mcp-gitlab", "list_merge_request_diffs_with_a_very_long_suffix_indeed"])
        );
        assert_ne!(
            long,
            model_name(&["zereight-mcp-gitlab", "list_merge_request_diffs_with_a_very_long_suffix_other"])
        );
    }

    #[test]
    fn collisions_get_distinct_deterministic_names() {
        let names = assign(&ids(&[&["a", "b.c"], &["a", "b_c"], &["x", "y"]]));
        assert_eq!(names[2], "x__y");
        assert_ne!(names[0], names[1]);
        assert!(names[0].starts_with("a__b_c_") && names[1].starts_with("a__b_c_"));
        assert!(names.iter().all(|n| is_valid(n)));
        // The same ids in another order get the same names.
        let reversed = assign(&ids(&[&["x", "y"], &["a", "b_c"], &["a", "b.c"]]));
        assert_eq!(reversed, [names[2].clone(), names[1].clone(), names[0].clone()]);
    }
}
