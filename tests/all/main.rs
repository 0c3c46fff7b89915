//! Quiver's integration tests: one binary, one module per stage.

mod bundled;
mod cache;
mod calls;
mod connectors;
mod databases;
mod disclosure;
mod docs;
mod egress;
mod faces;
mod fuzzing;
mod golden;
mod guests;
mod hostile_http;
mod load;
mod openapi;
mod preinit;
mod reload;
mod retrieval;
mod sandbox;
mod sql_allow_list;
mod upstream;
mod upstream_hostile;

/// Every fixture component has a test named after it in the module its
/// Cargo.toml names: a fixture without one does not compile.
macro_rules! assert_test_exists {
    ($suite:ident, $fixture:ident) => {
        #[allow(unused_imports)]
        use crate::$suite::$fixture as _;
    };
}
quiver_tests::foreach_fixture!(assert_test_exists);
