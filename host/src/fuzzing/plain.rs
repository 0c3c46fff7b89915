//! Plain components (`load::plain`): the types read out of any component,
//! and the JSON a model sends lowered by them.

use serde_json::Value;

use crate::load::plain::schema::{Schema, Way};
use crate::load::plain::types::{Named, Ty};
use crate::load::plain::values::{lift, lower};
use crate::load::plain::{Plain, output};

/// A component's exports read as a plain component's (the first byte 0),
/// or with a `.wit` beside it (1: two bytes of length, that many bytes of
/// WIT text, then the component). What reads gives a manifest that passes
/// the contract's rules (names, summaries, schemas that compile), and
/// every output schema compiles too.
pub fn plain_types(data: &[u8]) {
    let (mode, rest) = data.split_first().unwrap_or((&0, &[]));
    let (side, component) = match mode % 2 {
        0 => (None, rest),
        _ => {
            let Some((len, rest)) = rest.split_first_chunk::<2>() else { return };
            let len = usize::from(u16::from_le_bytes(*len)).min(rest.len());
            (std::str::from_utf8(&rest[..len]).ok(), &rest[len..])
        }
    };
    let Ok(plain) = Plain::derive(component, side) else { return };
    let manifest = plain.manifest("fuzz").expect("a derived manifest passes the contract's rules");
    manifest.stub().expect("a derived manifest gives a valid stub");
    for function in &plain.functions {
        if let Some(result) = &function.result {
            jsonschema::validator_for(&output(result).to_value()).expect("an output schema compiles");
        }
    }
}

/// JSON for the parameters of a function taking every kind of WIT type
/// (the first byte picks the parameter, the rest is its JSON). Lowering
/// never panics; what the schema accepts lowers; and what lowers lifts
/// back to JSON the output schema accepts.
pub fn plain_values(data: &[u8]) {
    let (pick, json) = data.split_first().unwrap_or((&0, &[]));
    let Ok(value) = serde_json::from_slice::<Value>(json) else { return };
    let types = every_type();
    let ty = &types[usize::from(*pick) % types.len()];
    let accepted = jsonschema::validator_for(&Schema::for_ty(ty, Way::In).to_value())
        .expect("an input schema compiles")
        .is_valid(&value);
    match lower(ty, &value, "") {
        Ok(val) => {
            let back = lift(ty, &val).expect("what lowers lifts back");
            let out = jsonschema::validator_for(&Schema::for_ty(ty, Way::Out).to_value()).expect("compiles");
            assert!(out.is_valid(&back), "{back} does not fit its own output schema");
        }
        Err(error) => assert!(!accepted, "the schema accepts {value}, which does not lower: {error}"),
    }
}

fn named<T>(name: &str, ty: T) -> Named<T> {
    Named { name: name.into(), ty, docs: None }
}

/// One of each kind of type, some nested.
fn every_type() -> Vec<Ty> {
    let boxed = Box::new;
    let scalars = vec![
        Ty::Bool,
        Ty::U8,
        Ty::U16,
        Ty::U32,
        Ty::U64,
        Ty::S8,
        Ty::S16,
        Ty::S32,
        Ty::S64,
        Ty::F32,
        Ty::F64,
        Ty::Char,
        Ty::String,
    ];
    let shape = Ty::Variant(vec![
        named("circle", Some(Ty::F64)),
        named("rect", Some(Ty::Tuple(vec![Ty::F32, Ty::F32]))),
        named("point", None),
    ]);
    let flags = Ty::Flags(vec![named("a", ()), named("b", ()), named("c", ())]);
    let record = Ty::Record(vec![
        named("n", Ty::U8),
        named("maybe", Ty::Option(boxed(Ty::String))),
        named("shape", shape.clone()),
        named("set", flags.clone()),
        named("inner", Ty::Record(vec![named("deep", Ty::Option(boxed(Ty::Option(boxed(Ty::S64)))))])),
    ]);
    let mut types = scalars;
    types.extend([
        Ty::List(boxed(Ty::U8)),
        Ty::Tuple(vec![Ty::U64, Ty::String, Ty::Bool]),
        Ty::Option(boxed(Ty::U32)),
        Ty::Option(boxed(Ty::Option(boxed(Ty::U32)))),
        Ty::Result { ok: Some(boxed(Ty::String)), err: None },
        Ty::Result { ok: None, err: Some(boxed(Ty::Enum(vec![named("x", ()), named("y-z", ())]))) },
        Ty::Enum(vec![named("one", ()), named("two", ())]),
        shape,
        flags,
        record.clone(),
        Ty::List(boxed(record)),
    ]);
    types
}

/// A policy file beside a component (`load::plain::request`): read as far
/// as it may be, never a panic; whatever it says, every text kept is
/// what the sanitiser leaves as it is, the lists stay within their caps,
/// with nothing granted nothing shows as granted, and with a folder, a
/// host and a variable granted only they show, each only for what holds
/// the ask, and never as all of a write or a wildcard.
pub fn policy(data: &[u8]) {
    use crate::contract::{Shape, sanitize};
    use crate::load::plain::request::{MAX_REQUESTS, MAX_UNREAD, Requests};
    let Ok(text) = std::str::from_utf8(data) else { return };
    let read = Requests::parse(text);
    assert!(read.asks.len() <= MAX_REQUESTS && read.unread.len() <= MAX_UNREAD + 1, "{read:?}");
    let status = read.status(&crate::sandbox::Grants::default(), true);
    let texts = status.asks.iter().map(|a| &a.what).chain(&status.unread).chain(&status.problem);
    for text in texts {
        assert_eq!(sanitize(text, Shape::Line), text.as_str(), "a text kept as it cannot be shown");
    }
    assert!(status.asks.iter().all(|a| a.granted.is_empty()), "granted with no grant: {status:?}");

    use crate::load::AskKind;
    use crate::sandbox::http::HttpGrant;
    use crate::sandbox::{Grants, WasiGrant};
    let grants = Grants {
        wasi: WasiGrant {
            folders: vec![("/srv/data".into(), "/data".into())],
            environment: vec![("GREETING".into(), "hi".into())],
        },
        http: HttpGrant::parse(&["https://api.example.com".into()]).expect("a valid origin"),
        ..Grants::default()
    };
    for ask in read.status(&grants, true).asks {
        let only = match ask.kind {
            AskKind::Storage => "/data",
            AskKind::Network => "https://api.example.com:443",
            AskKind::Environment => "GREETING",
        };
        assert!(ask.granted.iter().all(|g| g == only), "{ask:?}");
        let holds = match ask.kind {
            AskKind::Storage => ask.what == "/data" || ask.what.starts_with("/data/"),
            AskKind::Network => ask.what.eq_ignore_ascii_case("api.example.com") || ask.what.starts_with("*."),
            AskKind::Environment => ask.what == "GREETING",
        };
        assert!(ask.granted.is_empty() || holds, "granted for what it does not hold: {ask:?}");
        assert!(!ask.complete || (!ask.granted.is_empty() && !ask.write && !ask.what.starts_with("*.")), "{ask:?}");
    }
}
