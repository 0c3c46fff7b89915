//! Quiver's integration tests: one binary, one module per stage.

mod bundled;
mod cache;
mod calls;
mod disclosure;
mod docs;
mod faces;
mod kinds;
mod load;
mod reload;
mod retrieval;

use quiver_tests::fixtures;

/// Every fixture component is exercised by some test (add the new name
/// here only together with its test).
#[test]
fn every_fixture_has_a_test() {
    let tested = ["connector", "database", "liar", "misbehave", "no-stub", "sneaky", "versioned", "wrong-world"];
    let built: Vec<&str> = fixtures::ALL.iter().map(|(name, _)| *name).collect();
    assert_eq!(built, tested, "a fixture was added or removed: update its tests");
}
