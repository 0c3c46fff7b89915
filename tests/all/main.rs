//! Quiver's integration tests: one binary, and one module per thing a
//! reader looks for, in three groups.
//!
//! 1. **A stage of the data path**, in the order a call meets them (the
//!    host's own module map): `load` (stubs, rejections), `cache` and
//!    `preinit` (the compiled form), `reload`, `sandbox` (what a guest may
//!    reach), `calls` (a call's input and failures), `disclosure` and
//!    `retrieval` (what a model sees and finds), `faces` (MCP, REST, HTTP).
//! 2. **A kind of resource end to end**, against the real server it
//!    fronts: `guests` and `bundled` (plugins in three languages),
//!    `connectors`, `openapi` and `egress` (HTTP APIs), `databases`,
//!    `database_schema` and `sql_allow_list` (SQLite and PostgreSQL), `oci` (plugins
//!    from a registry), `upstream` and
//!    `upstream_hostile` (MCP servers).
//! 3. **A check of the whole product**: `golden` (what a model is shown
//!    stays byte-identical), `docs` (the README's and the book's examples run),
//!    `fuzzing` (every corpus replayed), `hostile_http` (clients that do
//!    not play by the rules).
//!
//! A test goes where its subject is, not where its resource is (a refusal
//! of the SQL policy is `databases`, the sandbox's `sql` linking is
//! `sandbox`). Helpers two modules need live in the harness
//! (`quiver_tests`), never copied.

// 1. Stages.
mod cache;
mod calls;
mod disclosure;
mod faces;
mod load;
mod preinit;
mod reload;
mod rerank;
mod retrieval;
mod sandbox;
mod scale;

// 2. Resources, end to end.
mod bundled;
mod connectors;
mod database_schema;
mod databases;
mod egress;
mod guests;
mod oci;
mod openapi;
mod plain;
mod sql_allow_list;
mod upstream;
mod upstream_hostile;

// 3. The whole product.
mod docs;
mod fuzzing;
mod golden;
mod hostile_http;

/// Every fixture component has a test named after it in the module its
/// Cargo.toml names: a fixture without one does not compile.
macro_rules! assert_test_exists {
    ($suite:ident, $fixture:ident) => {
        #[allow(unused_imports)]
        use crate::$suite::$fixture as _;
    };
}
quiver_tests::foreach_fixture!(assert_test_exists);
