//! Fuzz targets' logic (feature `fuzzing`): one public function per parser
//! of outside input, each asserting its oracle and panicking when it is
//! broken. The `cargo-fuzz` targets under `fuzz/` call these, and
//! `tests/all/fuzzing.rs` replays every committed corpus entry and every
//! crash found through them in the plain build, so a fixed crash stays
//! fixed.
//!
//! Every target takes arbitrary bytes and must never panic outside its
//! oracle: a parser's error is a typed error, never a crash, and no input
//! may take memory or time out of proportion to its size.

mod auth;
mod faces;
mod guard;
mod oci;
mod parsers;
mod plain;
mod sql;
mod trace;

pub use self::auth::{ACCESS_TOKEN_KEY, AUDIENCE, ISSUER, KID, access_token, jwks, jwks_document, sign_in};
pub use self::faces::{envelope, stdio};
pub use self::guard::guard;
pub use self::oci::{oci_bundle, oci_credentials, oci_manifest, oci_signature};
pub use self::parsers::{config, manifest, mcp_tools, openapi, skill, stub, token_count};
pub use self::plain::{plain_types, plain_values, policy};
pub use self::sql::{HIDDEN, SqlHarness, schema, sql};
pub use self::trace::trace_context;
