//! Which contract a plugin is built against, and which contracts this
//! host runs.

/// The WIT package and version this contract describes.
pub const CONTRACT: &str = "quiver:plugin@0.1.1";

/// The stub format written by the SDK and read by the host.
pub const STUB_FORMAT: u32 = 1;

/// Whether a plugin built against `contract` runs on this contract: the
/// same package and, for 0.x versions, the same minor version.
pub fn contract_compatible(contract: &str) -> bool {
    let prefix = |c: &str| c.rsplit_once('.').map(|(prefix, _)| prefix.to_owned());
    prefix(contract).is_some_and(|p| Some(p) == prefix(CONTRACT))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The WIT files are the other place the contract's version is
    /// written (their syntax needs it literally): they say [`CONTRACT`].
    #[test]
    fn the_wit_package_is_this_contract() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit");
        for file in ["types.wit", "worlds.wit"] {
            let text = std::fs::read_to_string(dir.join(file)).unwrap();
            let package = text.lines().find_map(|l| l.trim().strip_prefix("package ")).unwrap();
            assert_eq!(package.trim_end_matches(';'), CONTRACT, "{file}");
        }
    }

    #[test]
    fn contract_versions_match_on_minor() {
        // 0.1.1 added `tables` and `dialect` to the `sql` import: plugins
        // built against 0.1.0 run unchanged.
        assert!(contract_compatible("quiver:plugin@0.1.0"));
        assert!(contract_compatible("quiver:plugin@0.1.1"));
        assert!(contract_compatible("quiver:plugin@0.1.7"));
        assert!(!contract_compatible("quiver:plugin@0.2.0"));
        assert!(!contract_compatible("other:plugin@0.1.0"));
    }
}
