//! Plugins from OCI registries, by digest: the `[[oci]]` entries and their
//! lock file ([`source`]), what an artifact holding a component looks like
//! ([`layout`]), the content-addressed store pulled components are listed
//! from ([`store`]), the registry client ([`registry`]) and the state of
//! each configured artifact ([`pulls`]).
//!
//! A pulled component is a folder plugin whose folder is the store: it is
//! listed from its stub without compiling, and served only while its bytes
//! have the digest its manifest names.

pub mod bundle;
pub mod layout;
pub mod pulls;
pub mod registry;
pub mod signature;
pub mod source;
pub mod store;

pub use pulls::{OciStatus, Phase, Pulled, Pulls};
pub use registry::Registry;
pub use source::{LOCK_FILE, OciLock, OciSource, RawOci};
pub use store::Store;
