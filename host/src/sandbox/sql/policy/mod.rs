//! The statement policy: the first of the `sql` capability's three layers
//! (then the database's own read-only mode and privileges, then the host's
//! limits).
//!
//! Every statement an adapter sends is parsed with `sqlparser`, in the
//! dialect of the connection, and checked against what the operator
//! granted, whatever the adapter did before. The policy is an allow-list
//! at every level; what it does not know is refused:
//!
//! * exactly one statement, of bounded length, of an allowed kind
//!   ([`statement`]): a query (`SELECT`, `WITH … SELECT`, `VALUES`,
//!   `TABLE`, `EXPLAIN` with output options only) at `read`; `INSERT`,
//!   `UPDATE`, `DELETE`, `MERGE` added at `write`; `CREATE`, `ALTER`,
//!   `DROP`, `TRUNCATE` at `admin`. Nothing else at any level; no
//!   data-modifying CTE, no `SELECT … INTO`, no locking clause under `read`;
//! * every expression of an allowed form, every operator a built-in one,
//!   every function on the engine's list for this access level
//!   ([`allowed`], data in `allowed.toml`) or the operator's
//!   `allow_functions`, every cast to a listed type (no `reg*`, `oid`,
//!   `xml`: they read the catalog), every FROM item a table, a subquery or
//!   an allowed function ([`walk`]);
//! * every table in this database's schema, not a system catalog, not
//!   hidden; every column reference resolved against the visible schema
//!   ([`schema`], [`scope`]): a hidden column is never named, a whole row
//!   (`t`, `t.*`, `ROW(t.*)`, `f(t.*)`) or `*` never covers one, attribute
//!   notation (`t.function`) is refused, and a name nobody knows is refused
//!   (the caller reads the schema again and asks once more, in case it
//!   changed).
//!
//! A refusal names the rule and how to rephrase, so a model can act on it.

mod allowed;
mod check;
mod dialect;
mod resolve;
mod schema;
mod scope;
mod statement;
#[cfg(test)]
mod tests;
mod verdict;
mod walk;
mod writes;

pub use self::allowed::{AllowList, EngineList, Functions, Policy, allow_list};
pub use self::check::{MAX_COMPOUND, MAX_STATEMENT_BYTES, check};
pub use self::dialect::Dialect;
pub use self::schema::{Hidden, Visible};
pub use self::verdict::{Effect, Refusal, Why};
