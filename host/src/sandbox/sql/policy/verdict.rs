//! What the policy answers: what a statement does when it may run, or
//! why it may not (the rule, and how to rephrase).

/// What a statement does, once it passed the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// It reads (a query, or `EXPLAIN` of one).
    Read,
    /// It changes rows (DML).
    Write,
    /// It changes the schema (DDL).
    Admin,
}

/// What kind of refusal a [`Refusal`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The policy forbids it.
    Denied,
    /// The statement is malformed SQL: a mistake to fix.
    Malformed,
    /// It names a table, column or alias the schema as last read does not
    /// have: the schema may have changed since.
    Unknown,
}

/// Why a statement is refused: the rule, and how to rephrase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The rule it breaks.
    pub rule: String,
    /// What to do instead.
    pub hint: String,
    /// What kind of refusal this is.
    pub why: Why,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; {}", self.rule, self.hint)
    }
}

pub(super) fn refuse(rule: impl Into<String>, hint: impl Into<String>) -> Refusal {
    Refusal { rule: rule.into(), hint: hint.into(), why: Why::Denied }
}
