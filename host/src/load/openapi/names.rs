//! Action names from operations: the `operationId` in snake_case, else the
//! method and the path; cut to the contract's length and made unique.

use std::collections::{HashMap, HashSet};

use crate::contract::MAX_ACTION_NAME;

/// Room kept for a suffix (`_` and up to six digits) when a taken name is
/// cut to make its numbered forms.
const SUFFIX_ROOM: usize = 7;

/// Hands out unique action names.
#[derive(Default)]
pub(super) struct Names {
    taken: HashSet<String>,
    /// The next number to try after each stem: the numbered forms of one
    /// stem are tried once each, however many operations share it.
    next: HashMap<String, usize>,
    /// Names tried so far (taken or not): the work done, which the tests
    /// bound.
    #[cfg_attr(not(test), allow(dead_code))]
    probes: usize,
}

impl Names {
    /// The name of an operation: `getPetById` → `get_pet_by_id`; without
    /// an id, `GET /pet/{petId}` → `get_pet_pet_id`. A name taken already
    /// gets `_2`, `_3`… (after its stem, cut to leave room for them).
    pub(super) fn of(&mut self, operation_id: Option<&str>, method: &str, path: &str) -> String {
        let base = match operation_id.map(snake_case).filter(|n| !n.is_empty()) {
            Some(name) => name,
            None => snake_case(&format!("{method} {path}")),
        };
        let base = if base.starts_with(|c: char| c.is_ascii_lowercase()) { base } else { format!("op_{base}") };
        let mut name = cut(&base, MAX_ACTION_NAME);
        self.probes += 1;
        if self.taken.contains(&name) {
            let stem = cut(&base, MAX_ACTION_NAME - SUFFIX_ROOM);
            let next = self.next.entry(stem.clone()).or_insert(2);
            loop {
                name = format!("{stem}_{next}");
                *next += 1;
                self.probes += 1;
                if !self.taken.contains(&name) {
                    break;
                }
            }
        }
        self.taken.insert(name.clone());
        name
    }
}

/// `listPets`, `repos/list-for-org`, `HTTPGet` → `list_pets`,
/// `repos_list_for_org`, `http_get`: words split at case changes and at
/// anything that is not a letter or digit.
pub(super) fn snake_case(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_alphanumeric() {
            let boundary = c.is_ascii_uppercase()
                && i > 0
                && (chars[i - 1].is_ascii_lowercase()
                    || chars[i - 1].is_ascii_digit()
                    || (chars[i - 1].is_ascii_uppercase() && chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase())));
            if boundary && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_owned()
}

/// `name` cut to at most `max` characters, at a word if one ends late
/// enough, never ending in `_`.
fn cut(name: &str, max: usize) -> String {
    if name.len() <= max {
        return name.to_owned();
    }
    let head = &name[..max];
    let at_word = head.rfind('_').filter(|&i| i >= max / 2).unwrap_or(max);
    head[..at_word].trim_end_matches('_').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::action_name_problem;

    #[test]
    fn operation_ids_become_snake_case() {
        for (id, expected) in [
            ("getBook", "get_book"),
            ("listPets", "list_pets"),
            ("repos/list-for-org", "repos_list_for_org"),
            ("HTTPGetURL", "http_get_url"),
            ("get_v2Items", "get_v2_items"),
            ("Find pets by ID", "find_pets_by_id"),
        ] {
            assert_eq!(snake_case(id), expected);
        }
    }

    #[test]
    fn names_are_valid_unique_and_short() {
        let mut names = Names::default();
        assert_eq!(names.of(None, "GET", "/pet/{petId}"), "get_pet_pet_id");
        assert_eq!(names.of(Some("getBook"), "GET", "/x"), "get_book");
        assert_eq!(names.of(Some("get-book"), "GET", "/y"), "get_book_2");
        assert_eq!(names.of(Some("123"), "GET", "/y"), "op_123");
        let long = "actions/list-self-hosted-runners-for-organization-and-more";
        let first = names.of(Some(long), "GET", "/a");
        let second = names.of(Some(long), "GET", "/b");
        for name in [&first, &second] {
            assert_eq!(action_name_problem(name), None, "{name}");
        }
        assert_ne!(first, second);
    }

    /// Many operations with one `operationId`, and many long ids whose
    /// suffixed forms are cut to one stem: each name is found in a bounded
    /// number of tries, not by trying every suffix taken before it.
    #[test]
    fn naming_is_linear_in_the_operations() {
        let mut names = Names::default();
        let mut all = HashSet::new();
        const SAME: usize = 5_000;
        for _ in 0..SAME {
            assert!(all.insert(names.of(Some("listPets"), "GET", "/pets")));
        }
        // 900 ids that differ only after the 30th character, eight of each:
        // their `_2`, `_3`... forms all cut to the same stem.
        let stem = format!("{}_{}", "p".repeat(20), "q".repeat(9));
        let alphabet: Vec<char> = ('a'..='z').chain('0'..='9').collect();
        let family: Vec<String> = (0..900).map(|i| format!("{stem}{}{}", alphabet[i / 36], alphabet[i % 36])).collect();
        for _ in 0..8 {
            for id in &family {
                let name = names.of(Some(id), "GET", "/x");
                assert_eq!(action_name_problem(&name), None, "{name}");
                assert!(all.insert(name));
            }
        }
        let named = SAME + 8 * family.len();
        assert!(names.probes <= 3 * named, "{} tries for {named} names", names.probes);
    }
}
