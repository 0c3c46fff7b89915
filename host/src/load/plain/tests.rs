//! Derivation from components made from WIT text (wit-component's dummy
//! module: the type information a toolchain's component carries, with no
//! function bodies), and lowering and lifting by the types derived.

use serde_json::{Value, json};
use wasmtime::component::Val;
use wasmtime::component::wit_parser::{ManglingAndAbi, Resolve};

use super::schema::{Schema, Way};
use super::types::Ty;
use super::values::{lift, lower};
use super::*;

/// A component implementing `world` of the package `wit`, with no doc
/// comments in it (as toolchains build them).
pub(crate) fn component(wit: &str, world: &str) -> Vec<u8> {
    let mut resolve = Resolve::default();
    let package = resolve.push_source("test.wit", wit).expect("the test's WIT parses");
    let world = resolve.select_world(&[package], Some(world)).expect("the world");
    let mut module = wit_component::dummy_module(&resolve, world, ManglingAndAbi::Standard32);
    wit_component::embed_component_metadata(&mut module, &resolve, world, wit_component::StringEncoding::UTF8)
        .expect("metadata");
    wit_component::ComponentEncoder::default().module(&module).expect("module").validate(true).encode().expect("encode")
}

const PLAIN: &str = include_str!("../../../../tests/components/wit/plain.wit");

fn native() -> Plain {
    Plain::derive(&component(PLAIN, "native"), Some(PLAIN)).expect("plain")
}

#[test]
fn every_function_becomes_an_action_named_by_its_interface() {
    let plain = native();
    let actions: Vec<&str> = plain.functions.iter().map(|f| f.action.as_str()).collect();
    assert_eq!(
        actions,
        [
            "hello",
            "text_count",
            "text_recase",
            "text_repeat",
            "probe_read_file",
            "probe_env_var",
            "probe_calls",
            "shapes_area",
            "shapes_style_names",
            "shapes_checksum",
            "shapes_widen",
            "shapes_flatten",
        ]
    );
    let read = plain.function("probe_read_file").unwrap();
    assert_eq!(read.export, Export { interface: Some("acme:plain/probe@0.1.0".into()), function: "read-file".into() });
    assert_eq!(plain.function("hello").unwrap().export.interface, None);
    assert_eq!(plain.version, "0.1.0");
    assert!(plain.skipped.is_empty(), "{:?}", plain.skipped);
}

#[test]
fn docs_come_from_the_wit_beside_the_component_else_from_the_names() {
    let bytes = component(PLAIN, "native");
    let with = Plain::derive(&bytes, Some(PLAIN)).unwrap();
    assert_eq!(with.function("text_count").unwrap().description, "Count the words, lines and characters of a text.");
    let manifest = with.manifest("plain").unwrap();
    let count = manifest.action("text_count").unwrap();
    let output = count.output_schema.as_ref().unwrap().value().into_owned();
    assert_eq!(output["properties"]["words"]["description"], "Words: runs of characters between whitespace.");
    assert_eq!(with.function("hello").unwrap().description, "Greet someone by name.");
    // Doc text is outside text (a component's `package-docs` section can
    // hold anything; WIT's own lexer refuses control characters).
    let hostile = wasmtime::component::wit_parser::Docs { contents: Some("Greet \u{1b}[2J\u{202e} someone.".into()) };
    assert_eq!(super::types::docs(&hostile).unwrap(), "Greet \\u{1b}[2J\\u{202e} someone.");

    let without = Plain::derive(&bytes, None).unwrap();
    assert_eq!(
        without.function("text_repeat").unwrap().description,
        "`text.repeat`, a function of a WebAssembly component.\n\n`text.repeat(text: string, times: u8, separator: \
         option<string>) -> result<string, string>`"
    );
    assert_eq!(without.description, "A WebAssembly component's functions: text, probe, shapes.");
    // A `.wit` that declares a function otherwise lends it nothing.
    let other = PLAIN.replace("count: func(text: string) -> counts;", "count: func(text: string, n: u8) -> counts;");
    let mismatched = Plain::derive(&bytes, Some(&other)).unwrap();
    assert!(mismatched.function("text_count").unwrap().description.starts_with("`text.count`, a function"));
    assert_eq!(mismatched.function("text_recase").unwrap().description, "Change the case of every letter of a text.");
}

#[test]
fn schemas_follow_the_type_mapping() {
    let manifest = native().manifest("plain").unwrap();
    let input = |action: &str| manifest.action(action).unwrap().input_schema.value().into_owned();
    assert_eq!(
        input("text_repeat"),
        json!({"type": "object", "properties": {
            "text": {"type": "string"},
            "times": {"type": "integer", "minimum": 0, "maximum": 255},
            "separator": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            "required": ["text", "times"], "additionalProperties": false})
    );
    assert_eq!(
        input("shapes_area")["properties"]["shape"]["oneOf"][1],
        json!({"type": "object", "description": "A rectangle of this width and height.", "properties": {
            "tag": {"type": "string", "const": "rect"},
            "value": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}],
                      "items": false, "minItems": 2, "maxItems": 2}},
            "required": ["tag", "value"], "additionalProperties": false})
    );
    assert_eq!(
        input("shapes_style_names")["properties"]["style"],
        json!({"type": "array", "items": {"type": "string", "enum": ["bold", "italic", "underline"]}, "uniqueItems": true})
    );
    let widen = input("shapes_widen");
    assert_eq!(
        widen["properties"]["huge"],
        json!({"type": "integer", "minimum": 0, "maximum": 18446744073709551615u64})
    );
    assert_eq!(widen["properties"]["letter"], json!({"type": "string", "minLength": 1, "maxLength": 1}));
    assert_eq!(
        input("shapes_flatten")["properties"]["value"]["anyOf"][0]["properties"]["some"],
        json!({"anyOf": [{"type": "integer", "minimum": 0, "maximum": 4294967295u32}, {"type": "null"}]})
    );
    // A result's output is its `ok` type; a float may come back as a name.
    let area = manifest.action("shapes_area").unwrap();
    assert_eq!(area.output_schema.as_ref().unwrap().value().into_owned(), json!({"type": ["number", "string"]}));
    let stub = manifest.stub().unwrap();
    assert_eq!(stub.actions.len(), 12);
}

#[test]
fn what_json_cannot_carry_is_skipped_with_its_reason() {
    let wit = r#"package acme:odd@1.0.0;
        interface files {
            resource handle { read: func() -> string; }
            open: func(path: string) -> handle;
            size: func(path: string) -> u64;
            later: async func() -> u32;
        }
        interface deep { type t0 = tuple<u8, u8>; type t1 = tuple<t0, t0>; type t2 = tuple<t1, t1>;
            type t3 = tuple<t2, t2>; type t4 = tuple<t3, t3>; type t5 = tuple<t4, t4>; type t6 = tuple<t5, t5>;
            type t7 = tuple<t6, t6>; type t8 = tuple<t7, t7>; type t9 = tuple<t8, t8>; type t10 = tuple<t9, t9>;
            big: func(x: t10); }
        world odd { export files; export deep; export wasi:cli/run@0.2.0; }
        package wasi:cli@0.2.0 { interface run { run: func() -> result; } }"#;
    let plain = Plain::derive(&component(wit, "odd"), None).unwrap();
    let actions: Vec<&str> = plain.functions.iter().map(|f| f.action.as_str()).collect();
    assert_eq!(actions, ["files_size"]);
    let reasons: Vec<String> = plain.skipped.iter().map(|(e, why)| format!("{e}: {why}")).collect();
    let has = |needle: &str| reasons.iter().any(|r| r.contains(needle));
    assert!(has("acme:odd/files@1.0.0#[method]handle.read: a resource's method"), "{reasons:#?}");
    assert!(has("files@1.0.0#open: it passes a handle to the resource `handle`, which lives"), "{reasons:#?}");
    assert!(has("#later: an async function"), "{reasons:#?}");
    assert!(has("#big: its types have more than 2000 parts"), "{reasons:#?}");
    assert!(has("wasi:cli/run@0.2.0: a WASI interface"), "{reasons:#?}");

    let nothing = r#"package acme:none@1.0.0; world none { export wasi:cli/run@0.2.0; }
        package wasi:cli@0.2.0 { interface run { run: func() -> result; } }"#;
    assert!(matches!(Plain::derive(&component(nothing, "none"), None), Err(NotPlain::Nothing(why)) if why.len() == 1));
    let contract = r#"package quiver:plugin@0.1.0; interface plugin { describe: func() -> string; }
        world tool { export plugin; }"#;
    assert_eq!(Plain::derive(&component(contract, "tool"), None).unwrap_err(), NotPlain::Contract);
    assert!(matches!(Plain::derive(b"\0asm\x0d\x00\x01\x00junk", None), Err(NotPlain::Unreadable(_))));
}

#[test]
fn names_that_collide_or_run_long_are_skipped() {
    let wit = r#"package acme:a@1.0.0;
        interface text { count: func() -> u32; }
        world w { export text; export acme:b/text@1.0.0; export a-function-whose-name-runs-far-too-long: func(); }
        package acme:b@1.0.0 { interface text { count: func() -> u32; size: func() -> u32; } }"#;
    let plain = Plain::derive(&component(wit, "w"), None).unwrap();
    let actions: Vec<&str> = plain.functions.iter().map(|f| f.action.as_str()).collect();
    assert_eq!(actions, ["text_size"]);
    let reasons: Vec<&str> = plain.skipped.iter().map(|(_, why)| why.as_str()).collect();
    assert_eq!(reasons.iter().filter(|r| r.contains("also be the action `text_count`")).count(), 2, "{reasons:?}");
    assert!(reasons.iter().any(|r| r.contains("must be 1-32 characters")), "{reasons:?}");
}

fn ty_of(action: &str, param: usize) -> Ty {
    native().function(action).unwrap().params[param].1.clone()
}

#[test]
fn json_lowers_to_values_and_values_lift_back() {
    let shape = ty_of("shapes_area", 0);
    let rect = lower(&shape, &json!({"tag": "rect", "value": [2, 3.5]}), "/shape").unwrap();
    assert_eq!(
        rect,
        Val::Variant("rect".into(), Some(Box::new(Val::Tuple(vec![Val::Float64(2.0), Val::Float64(3.5)]))))
    );
    assert_eq!(lift(&shape, &rect).unwrap(), json!({"tag": "rect", "value": [2.0, 3.5]}));
    let point = lower(&shape, &json!({"tag": "point"}), "").unwrap();
    assert_eq!(lift(&shape, &point).unwrap(), json!({"tag": "point"}));

    let nested = ty_of("shapes_flatten", 0);
    for value in [json!(null), json!({"some": null}), json!({"some": 7})] {
        assert_eq!(lift(&nested, &lower(&nested, &value, "").unwrap()).unwrap(), value);
    }
    let huge = ty_of("shapes_widen", 2);
    assert_eq!(lower(&huge, &json!(18446744073709551615u64), "").unwrap(), Val::U64(u64::MAX));
    assert_eq!(lower(&ty_of("shapes_widen", 1), &json!(3.0), "").unwrap(), Val::S64(3));
    let flags = ty_of("shapes_style_names", 0);
    assert_eq!(lower(&flags, &json!(["bold", "bold"]), "").unwrap(), Val::Flags(vec!["bold".into()]));
    // Floats JSON has no number for come back named.
    assert_eq!(lift(&Ty::F32, &Val::Float32(f32::NAN)).unwrap(), json!("NaN"));
    assert_eq!(lift(&Ty::F64, &Val::Float64(f64::NEG_INFINITY)).unwrap(), json!("-Infinity"));
    let bytes = Ty::List(Box::new(Ty::U8));
    assert_eq!(lift(&bytes, &lower(&bytes, &json!([0, 255]), "").unwrap()).unwrap(), json!([0, 255]));
}

#[test]
fn what_does_not_fit_is_named_where_it_is() {
    let error = |ty: &Ty, json: Value| lower(ty, &json, "/x").unwrap_err();
    assert_eq!(
        error(&Ty::U8, json!(256)),
        "/x: expected an integer of u8, out of range (out of range integral type conversion attempted)"
    );
    assert_eq!(error(&Ty::S8, json!(1.5)), "/x: expected s8, got a number");
    assert_eq!(error(&Ty::F32, json!(1e300)), "/x: 1e+300 is out of the range of an f32");
    assert_eq!(error(&Ty::Char, json!("ab")), "/x: expected a string of one character, got a string");
    let shape = ty_of("shapes_area", 0);
    assert_eq!(error(&shape, json!({"tag": "square"})), "/x/tag: `square` is not one of circle, rect, point");
    assert_eq!(error(&shape, json!({"tag": "circle"})), "/x: the case `circle` needs a `value`");
    assert_eq!(error(&shape, json!({"tag": "rect", "value": [1, "2"]})), "/x/value/1: expected a number, got a string");
    let counts = native().function("text_count").unwrap().result.clone().unwrap();
    assert_eq!(error(&counts, json!({"words": 1, "lines": 1})), "/x: the field `chars` is missing");
    assert_eq!(error(&counts, json!({"words": 1, "lines": 1, "chars": 1, "more": 0})), "/x: no field `more` here");
    // A value of another type than declared is an error, not a panic.
    assert!(lift(&Ty::String, &Val::U8(1)).unwrap_err().contains("a integer value where a string was expected"));
}

#[test]
fn schemas_accept_what_lowers() {
    // Every example a model could send per the schema lowers, and the
    // schema refuses what lowering refuses.
    let plain = native();
    let manifest = plain.manifest("plain").unwrap();
    let cases = [
        ("text_repeat", json!({"text": "a", "times": 3})),
        ("text_repeat", json!({"text": "a", "times": 3, "separator": null})),
        ("shapes_widen", json!({"small": -128, "big": 9007199254740993i64, "huge": 0, "ratio": 0.5, "letter": "é"})),
        ("shapes_style_names", json!({"style": []})),
        ("shapes_flatten", json!({"value": {"some": 3}})),
    ];
    for (action, input) in cases {
        let spec = manifest.action(action).unwrap();
        assert!(spec.validator().unwrap().is_valid(&input), "{action}: {input}");
        let f = plain.function(action).unwrap();
        for (name, ty) in &f.params {
            let value = input.get(name).unwrap_or(&Value::Null);
            lower(ty, value, &format!("/{name}")).unwrap_or_else(|e| panic!("{action}: {e}"));
        }
    }
    let refused = [("text_repeat", json!({"text": "a", "times": 256})), ("shapes_widen", json!({"letter": "ab"}))];
    for (action, input) in refused {
        assert!(!manifest.action(action).unwrap().validator().unwrap().is_valid(&input), "{action}: {input}");
    }
    assert_eq!(Schema::for_ty(&Ty::F64, Way::In).to_value(), json!({"type": "number"}));
}

#[test]
fn budgets_hold_for_wide_types_and_many_functions() {
    let cases: Vec<String> = (0..3_000).map(|i| format!("c{i}")).collect();
    let wide = format!(
        "package acme:wide@1.0.0; interface w {{ enum e {{ {} }} pick: func(x: e); ok: func(); }} world wide {{ export w; }}",
        cases.join(", ")
    );
    let plain = Plain::derive(&component(&wide, "wide"), None).unwrap();
    assert_eq!(plain.functions.iter().map(|f| f.action.as_str()).collect::<Vec<_>>(), ["w_ok"]);
    assert!(plain.skipped[0].1.contains("more than 2000 parts"), "{:?}", plain.skipped);

    let functions: Vec<String> = (0..300).map(|i| format!("call{i}: func();")).collect();
    let many = format!("package acme:many@1.0.0; interface m {{ {} }} world w {{ export m; }}", functions.join(" "));
    let plain = Plain::derive(&component(&many, "w"), None).unwrap();
    assert_eq!(plain.functions.len(), crate::contract::MAX_ACTIONS);
    assert_eq!(plain.skipped.len(), 300 - crate::contract::MAX_ACTIONS);
    assert!(plain.skipped[0].1.contains("past the 256 actions"), "{:?}", plain.skipped[0]);
    plain.manifest("many").unwrap().stub().unwrap();
}

#[test]
fn a_component_that_imports_http_is_write() {
    let wit = r#"package acme:net@1.0.0;
        interface api { get: func(url: string) -> result<string, string>; }
        world w { import wasi:http/outgoing-handler@0.2.0; export api; }
        package wasi:http@0.2.0 { interface outgoing-handler { handle: func(); } }"#;
    let manifest = Plain::derive(&component(wit, "w"), None).unwrap().manifest("net").unwrap();
    assert_eq!(manifest.action("api_get").unwrap().access, Access::Write);
    assert_eq!(native().manifest("plain").unwrap().action("text_count").unwrap().access, Access::Read);
}

#[test]
fn integral_floats_lower_as_integers_within_the_type() {
    assert_eq!(lower(&Ty::U64, &json!(1e19), "").unwrap(), Val::U64(10_000_000_000_000_000_000));
    assert!(lower(&Ty::U64, &json!(1e20), "").is_err());
    assert!(lower(&Ty::S8, &json!(-1e300), "").is_err());
}

/// The `.wit` beside a component is read only as a regular file of at
/// most 1 MiB, directly or through a link: a FIFO under that name would
/// block the scan for ever, a huge file would be read whole.
#[test]
fn only_a_small_regular_file_is_read_as_the_wit_beside() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small.wit");
    std::fs::write(&small, PLAIN).unwrap();
    assert_eq!(side_text(&small, MAX_SIDE_WIT), Ok(Some(PLAIN.to_owned())));
    assert_eq!(side_text(&dir.path().join("none.wit"), MAX_SIDE_WIT), Ok(None), "no file is no text");
    let big = dir.path().join("big.wit");
    std::fs::write(&big, format!("{PLAIN}{}", "/// padding\n".repeat(100_000))).unwrap();
    assert_eq!(side_text(&big, MAX_SIDE_WIT), Err("it is larger than 1024 KiB".into()), "a 1.2 MB .wit was read");
    let binary = dir.path().join("binary.wit");
    std::fs::write(&binary, b"\xff\xfe").unwrap();
    assert_eq!(side_text(&binary, MAX_SIDE_WIT), Err("it is not UTF-8 text".into()));
    let fifo = dir.path().join("fifo.wit");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success(), "mkfifo");
    assert_eq!(side_text(&fifo, MAX_SIDE_WIT), Err("it is not a regular file".into()), "a FIFO was opened");
    let link = dir.path().join("link.wit");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    assert!(side_text(&link, MAX_SIDE_WIT).is_err(), "a link to a FIFO was opened");
    let link = dir.path().join("small-link.wit");
    std::os::unix::fs::symlink(&small, &link).unwrap();
    assert_eq!(
        side_text(&link, MAX_SIDE_WIT),
        Ok(Some(PLAIN.to_owned())),
        "a link to a regular file (a mounted ConfigMap) is read"
    );
    // A link out of the folder is never followed: a shipped link to the
    // host's own files would show them.
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.wit");
    std::fs::write(&secret, PLAIN).unwrap();
    let link = dir.path().join("out.wit");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let out = Err("it links out of the component's folder".to_owned());
    assert_eq!(side_text(&link, MAX_SIDE_WIT), out, "a link out of the folder was followed");
    let link = dir.path().join("environ.wit");
    std::os::unix::fs::symlink("/proc/self/environ", &link).unwrap();
    assert_eq!(side_text(&link, MAX_SIDE_WIT), out, "/proc/self/environ was read");
}
