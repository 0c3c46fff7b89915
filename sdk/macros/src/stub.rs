//! The `quiver:stub` custom section: the Tier-1 metadata the host reads
//! without compiling the component, built and checked with the same
//! `quiver_contract::Stub` the host parses it with.

use quiver_contract::{Kind, Stub, StubAction};

use crate::parse::Action;

/// The JSON of the stub section, or why the plugin's declarations break a
/// rule the host would enforce at load time.
pub(crate) fn encode(
    name: &str,
    version: &str,
    kind: Kind,
    description: &str,
    categories: &[String],
    actions: &[Action],
) -> Result<Vec<u8>, String> {
    let mut stub = Stub::new(name, version, kind, description);
    stub.categories = categories.to_vec();
    stub.actions = actions
        .iter()
        .map(|a| StubAction { name: a.name.clone(), summary: a.summary.clone(), access: a.access })
        .collect();
    stub.validate()?;
    Ok(stub.to_json())
}
