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

/// What kind of refusal a [`Refusal`] is: whether the caller may try
/// again with another statement, and whether the schema is read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// It needs more access than the caller has here: no rewording runs it
    /// (a write at `read` access).
    Access,
    /// A rule the statement can be rewritten around (one statement at a
    /// time, name the columns, a function off the list): the hint says how.
    Rephrase,
    /// The statement is malformed SQL: a mistake to fix.
    Malformed,
    /// It names a table, column or alias the schema as last read does not
    /// have: the schema may have changed since.
    Unknown,
    /// It names something hidden: refused as if it did not exist, without
    /// reading the schema again (no reading brings it back).
    Hidden,
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

/// A rule the statement breaks, and how to rewrite it.
pub(super) fn refuse(rule: impl Into<String>, hint: impl Into<String>) -> Refusal {
    Refusal { rule: rule.into(), hint: hint.into(), why: Why::Rephrase }
}

/// More access than the caller has here, and what it does allow.
pub(super) fn deny(rule: impl Into<String>, hint: impl Into<String>) -> Refusal {
    Refusal { rule: rule.into(), hint: hint.into(), why: Why::Access }
}
