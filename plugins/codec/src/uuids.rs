//! UUID generation with the `uuid` crate.

use quiver_sdk::prelude::*;
use uuid::Uuid;

/// Most UUIDs one call makes.
const MAX_UUIDS: u32 = 100;

/// A UUID version.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Default, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
pub enum UuidVersion {
    /// Random.
    #[default]
    V4,
    /// Time-ordered: millisecond Unix time then random bits; sorts by creation time.
    V7,
    /// SHA-1 of `namespace` + `name`: the same inputs always give the same UUID.
    V5,
    /// MD5 of `namespace` + `name` (prefer v5).
    V3,
}

/// Input of `uuid`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MakeUuid {
    /// UUID version.
    #[serde(default)]
    pub version: UuidVersion,
    /// How many UUIDs (v4 and v7 only), at most 100.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 100))]
    pub count: u32,
    /// For v3/v5: `dns`, `url`, `oid`, `x500`, or any UUID such as
    /// `6ba7b810-9dad-11d1-80b4-00c04fd430c8`.
    pub namespace: Option<String>,
    /// For v3/v5: the name within the namespace, e.g. `example.com` for `dns`.
    pub name: Option<String>,
}

fn one() -> u32 {
    1
}

/// Generated UUIDs.
#[derive(Serialize, JsonSchema)]
pub struct Uuids {
    /// UUIDs in hyphenated lower-case form.
    pub uuids: Vec<String>,
}

/// The namespace of a v3/v5 UUID.
fn namespace(name: &str) -> Result<Uuid, ToolError> {
    match name.to_ascii_lowercase().as_str() {
        "dns" => Ok(Uuid::NAMESPACE_DNS),
        "url" => Ok(Uuid::NAMESPACE_URL),
        "oid" => Ok(Uuid::NAMESPACE_OID),
        "x500" => Ok(Uuid::NAMESPACE_X500),
        _ => Uuid::parse_str(name).map_err(|e| {
            ToolError::invalid_input(format!("namespace `{name}` is not dns, url, oid, x500 or a UUID: {e}"))
        }),
    }
}

/// Make UUIDs as `input` asks.
pub fn make_uuids(input: MakeUuid) -> Result<Vec<Uuid>, ToolError> {
    let count = input.count;
    if !(1..=MAX_UUIDS).contains(&count) {
        return Err(ToolError::invalid_input(format!("count must be 1 to {MAX_UUIDS}")));
    }
    let random = matches!(input.version, UuidVersion::V4 | UuidVersion::V7);
    if random && (input.namespace.is_some() || input.name.is_some()) {
        return Err(ToolError::invalid_input("namespace and name are for v3 and v5 only"));
    }
    match input.version {
        UuidVersion::V4 => Ok((0..count).map(|_| Uuid::new_v4()).collect()),
        UuidVersion::V7 => Ok((0..count).map(|_| Uuid::now_v7()).collect()),
        UuidVersion::V5 | UuidVersion::V3 => {
            let (Some(ns), Some(name)) = (&input.namespace, &input.name) else {
                return Err(ToolError::invalid_input("v3 and v5 need both `namespace` and `name`"));
            };
            if count != 1 {
                return Err(ToolError::invalid_input("v3 and v5 UUIDs are deterministic: count must be 1"));
            }
            let ns = namespace(ns)?;
            Ok(vec![if input.version == UuidVersion::V5 {
                Uuid::new_v5(&ns, name.as_bytes())
            } else {
                Uuid::new_v3(&ns, name.as_bytes())
            }])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_based_uuids() {
        let input = MakeUuid {
            version: UuidVersion::V5,
            count: 1,
            namespace: Some("dns".into()),
            name: Some("example.com".into()),
        };
        assert_eq!(make_uuids(input).unwrap()[0].to_string(), "cfbff0d1-9375-5685-968c-48ce8b15ae17");
    }
}
