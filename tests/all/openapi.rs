//! OpenAPI connectors: an operator's document served with no code, by the
//! bundled generic connector, against real servers nobody here wrote:
//! json-server (full CRUD, a real 401) behind a YAML document of ours, and
//! Prism mocking real documents from `@readme/oas-examples` (Petstore,
//! every security scheme, every HTTP status).

use serde_json::{Value, json};

use quiver::{Error, ErrorKind, GuestErrorKind};
use quiver_tests::TestHost;
use quiver_tests::servers::{JsonServer, Prism, TokenEndpoint};

const TOKEN: &str = "s3cret-books-token";

fn secret_file(dir: &tempfile::TempDir, name: &str, secret: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, format!("{secret}\n")).unwrap();
    path.display().to_string()
}

fn books_document() -> String {
    quiver_tests::data("openapi/books.yaml").display().to_string()
}

fn example(name: &str) -> String {
    Prism::example(name).display().to_string()
}

async fn call(t: &TestHost, instance: &str, action: &str, input: Value) -> quiver::Result<Value> {
    t.host.call_json(instance, action, &input).await
}

/// The kind and message of an error the connector returned.
fn guest_error(result: quiver::Result<Value>) -> (GuestErrorKind, String) {
    match result {
        Err(Error::Guest { kind, message, .. }) => (kind, message),
        other => panic!("not the connector's typed error: {other:?}"),
    }
}

/// The issue's own example: `books` from a document, a bearer token the
/// host holds, `get_book` for `getBook`; full CRUD on json-server; the
/// server's 401 for a wrong token and 404 for a missing book as typed
/// errors; the instance's `access` and its selection by tag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_is_a_connector_with_no_code() {
    let server = JsonServer::start(
        &json!({ "books": [
            { "id": 1, "title": "The Dispossessed", "author": "Ursula K. Le Guin", "year": 1974 },
            { "id": 7, "title": "Piranesi", "author": "Susanna Clarke", "year": 2020 }
        ] }),
        TOKEN,
    );
    let secrets = tempfile::tempdir().unwrap();
    let (good, bad) = (secret_file(&secrets, "token", TOKEN), secret_file(&secrets, "bad", "guess"));
    let config = format!(
        r#"
[connectors.books]
openapi = "{doc}"
base_url = "{url}"
auth = {{ kind = "bearer", token_file = "{good}" }}
access = "admin"

[connectors.library]
openapi = "{doc}"
base_url = "{url}"
auth = {{ kind = "bearer", token_file = "{bad}" }}
exclude_tags = ["admin"]
"#,
        doc = books_document(),
        url = server.url
    );
    let t = TestHost::builder().config(&config).build();
    let prompt = t.host.session(None).unwrap().system_prompt();
    assert!(
        prompt.contains("- books: Books: A library's catalogue of books and their authors. Actions: list_books, create_book, get_book, delete_book, update_book"),
        "{prompt}"
    );
    assert!(prompt.contains("- library: Books:"), "{prompt}");
    assert_eq!(t.host.load_stats().compiled(), 0, "Tier 1 compiles nothing");

    let book = call(&t, "books", "get_book", json!({ "bookId": 7 })).await.unwrap();
    assert_eq!(book["title"], "Piranesi", "{book}");
    let by_author = call(&t, "books", "list_books", json!({ "author": "Ursula K. Le Guin" })).await.unwrap();
    assert_eq!(by_author.as_array().map(Vec::len), Some(1), "{by_author}");
    let created =
        call(&t, "books", "create_book", json!({ "body": { "title": "Kindred", "author": "Octavia E. Butler" } }))
            .await
            .unwrap();
    let id = created["id"].as_i64().unwrap_or_else(|| panic!("{created}"));
    let updated = call(&t, "books", "update_book", json!({ "bookId": id, "body": { "year": 1979 } })).await.unwrap();
    assert_eq!((updated["title"].as_str(), updated["year"].as_i64()), (Some("Kindred"), Some(1979)), "{updated}");
    call(&t, "books", "delete_book", json!({ "bookId": id })).await.unwrap();
    let (kind, message) = guest_error(call(&t, "books", "get_book", json!({ "bookId": id })).await);
    assert_eq!(kind, GuestErrorKind::NotFound, "{message}");
    assert!(message.contains("HTTP 404") && message.contains("`GET /books/{bookId}`"), "{message}");

    // The host checks inputs against the document's schemas first.
    let error = call(&t, "books", "get_book", json!({ "bookId": "seven" })).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InputSchema, "{error}");
    let error = call(&t, "books", "create_book", json!({ "body": { "author": "nobody" } })).await.unwrap_err();
    assert!(error.to_string().contains("title"), "{error}");

    // `library` holds a wrong token (the server's 401), may only read, and
    // does not serve the operations tagged `admin`.
    let (kind, message) = guest_error(call(&t, "library", "get_book", json!({ "bookId": 7 })).await);
    assert_eq!(kind, GuestErrorKind::Denied, "{message}");
    assert!(message.contains("HTTP 401") && message.contains("`auth`"), "{message}");
    let error = call(&t, "library", "create_book", json!({ "body": { "title": "x" } })).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::AboveCeiling, "{error}");
    let error = call(&t, "library", "delete_book", json!({ "bookId": 1 })).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::UnknownAction, "{error}");

    // `discover` gives the document's schemas, references included.
    let mut session = t.host.session(None).unwrap();
    let found = session.call("connector", json!({ "subcommand": "discover", "connector": "books" })).await;
    let found = found.value().cloned().unwrap();
    let action = |name: &str| found["actions"].as_array().unwrap().iter().find(|a| a["name"] == name).unwrap().clone();
    let get = action("get_book");
    assert_eq!(get["input_schema"]["properties"]["bookId"]["description"], "The book's id.");
    assert_eq!((get["access"].as_str(), get["callable"].as_bool()), (Some("read"), Some(true)));
    let create = action("create_book");
    assert_eq!(create["input_schema"]["properties"]["body"]["$ref"], "#/$defs/NewBook", "{create}");
    assert_eq!(action("delete_book")["access"], "admin");
    assert!(get["description"].as_str().unwrap().starts_with("Get one book by its id"), "{get}");
}

/// Petstore, the real document, mocked by Prism: path, query-array and
/// JSON-body operations (the body's schema a `$ref` to `requestBodies`);
/// the document's `apiKey` scheme tells the host where the key goes; one
/// instance holds both schemes' credentials (the pet operations want the
/// OAuth2 token, `getPetById` the key); one without any gets Prism's 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn petstore_from_its_document() {
    let prism = Prism::start(&Prism::example("3.0/json/petstore.json"));
    let secrets = tempfile::tempdir().unwrap();
    let token = secret_file(&secrets, "token", "pet-token");
    let key = secret_file(&secrets, "key", "pet-key");
    let config = format!(
        r#"
[connectors.pets]
openapi = "{doc}"
base_url = "{url}"
auth = [{{ kind = "bearer", token_file = "{token}" }}, {{ kind = "api_key", key_file = "{key}" }}]
access = "write"

[connectors.store]
openapi = "{doc}"
base_url = "{url}"
auth = {{ kind = "api_key", key_file = "{key}" }}
tags = ["pet", "store"]

[connectors.keyless]
openapi = "{doc}"
base_url = "{url}"
"#,
        doc = example("3.0/json/petstore.json"),
        url = prism.url
    );
    let t = TestHost::builder().config(&config).build();
    let prompt = t.host.session(None).unwrap().system_prompt();
    assert!(prompt.contains("- pets: Swagger Petstore"), "{prompt}");

    let found = call(&t, "pets", "find_pets_by_status", json!({ "status": ["available", "sold"] })).await.unwrap();
    assert!(found.as_array().is_some_and(|pets| pets.iter().all(|p| p["name"].is_string())), "{found}");
    let order = call(&t, "pets", "place_order", json!({ "body": { "petId": 1, "quantity": 2, "status": "placed" } }))
        .await
        .unwrap();
    assert!(order["id"].is_i64() && order["status"].is_string(), "{order}");
    // The document gives `addPet` no 2xx answer, only `405 Invalid input`:
    // Prism sends that, and the model reads it.
    let (kind, message) = guest_error(
        call(&t, "pets", "add_pet", json!({ "body": { "name": "Rex", "photoUrls": ["https://example.com/rex.png"] } }))
            .await,
    );
    assert_eq!(kind, GuestErrorKind::Failed, "{message}");
    assert!(message.contains("HTTP 405") && message.contains("`POST /pet`"), "{message}");
    let error = call(&t, "pets", "add_pet", json!({ "body": { "photoUrls": [] } })).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InputSchema, "the document's `required` holds: {error}");
    let pet = call(&t, "pets", "get_pet_by_id", json!({ "petId": 1 })).await.unwrap();
    assert!(pet["id"].is_i64() && pet["name"].is_string(), "{pet}");
    let error = call(&t, "pets", "delete_pet", json!({ "petId": 1 })).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::AboveCeiling, "{error}");

    let pet = call(&t, "store", "get_pet_by_id", json!({ "petId": 1 })).await.unwrap();
    assert!(pet["id"].is_i64() && pet["name"].is_string(), "{pet}");
    let inventory = call(&t, "store", "get_inventory", json!({})).await.unwrap();
    assert!(inventory.is_object(), "{inventory}");
    let error = call(&t, "store", "create_user", json!({ "body": {} })).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::UnknownAction, "`user` is not selected: {error}");

    let (kind, message) = guest_error(call(&t, "keyless", "get_pet_by_id", json!({ "petId": 1 })).await);
    assert_eq!(kind, GuestErrorKind::Denied, "{message}");
    assert!(message.contains("HTTP 401"), "{message}");
}

/// `security.json` declares every kind of scheme; each instance holds one
/// credential, the host puts it where the document says, and Prism lets
/// the matching operation through (and refuses another scheme's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_security_scheme_is_a_host_held_credential() {
    let prism = Prism::start(&Prism::example("3.0/json/security.json"));
    let oauth = TokenEndpoint::start("quiver", "client-secret", "issued-token");
    let secrets = tempfile::tempdir().unwrap();
    let secret = secret_file(&secrets, "secret", "s3cret");
    let client = secret_file(&secrets, "client", "client-secret");
    let instance = |name: &str, auth: &str| {
        format!(
            "[connectors.{name}]\nopenapi = \"{}\"\nbase_url = \"{}\"\naccess = \"admin\"\nauth = {{ {auth} }}\n",
            example("3.0/json/security.json"),
            prism.url
        )
    };
    let config = [
        instance("by_query", &format!(r#"kind = "api_key", scheme = "apiKey_query", key_file = "{secret}""#)),
        instance("by_header", &format!(r#"kind = "api_key", scheme = "apiKey_header", key_file = "{secret}""#)),
        instance("by_cookie", &format!(r#"kind = "api_key", scheme = "apiKey_cookie", key_file = "{secret}""#)),
        instance("basic", &format!(r#"kind = "basic", username = "ann", password_file = "{secret}""#)),
        instance("bearer", &format!(r#"kind = "bearer", token_file = "{secret}""#)),
        instance(
            "client",
            &format!(
                r#"kind = "oauth2", token_url = "{}", client_id = "quiver", client_secret_file = "{client}""#,
                oauth.url
            ),
        ),
    ]
    .join("\n");
    let t = TestHost::builder().config(&config).build();
    for (instance, action) in [
        ("by_query", "get_anything_api_key"),
        ("by_cookie", "post_anything_api_key"),
        ("by_header", "put_anything_api_key"),
        ("basic", "post_anything_basic"),
        ("bearer", "post_anything_bearer"),
        ("bearer", "put_anything_bearer"),
        ("bearer", "post_anything_open_id_connect"),
        ("client", "put_anything_oauth2"),
    ] {
        let answer = call(&t, instance, action, json!({})).await;
        assert!(answer.is_ok(), "{instance}.{action}: {answer:?}");
    }
    assert!(oauth.issued() >= 1, "the host asked the token endpoint");
    let (kind, message) = guest_error(call(&t, "by_query", "post_anything_bearer", json!({})).await);
    assert_eq!(kind, GuestErrorKind::Denied, "another scheme's operation: {message}");

    // With several apiKey schemes, the document cannot say which: the
    // section must, and the error lists them.
    let ambiguous = instance("keys", &format!(r#"kind = "api_key", key_file = "{secret}""#));
    let error = TestHost::builder().config(&ambiguous).refused("[connectors.keys]");
    assert!(
        error.contains("[connectors.keys]")
            && error.contains("several apiKey schemes")
            && error.contains("apiKey_cookie"),
        "{error}"
    );
}

/// Prism answering each status a real API may send: the model gets a
/// typed error it can act on, quoting the route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_failures_are_typed_errors() {
    let prism = Prism::start(&Prism::example("3.0/json/http-status-codes.json"));
    let config = format!(
        "[connectors.statuses]\nopenapi = \"{}\"\nbase_url = \"{}\"\naccess = \"admin\"\n",
        example("3.0/json/http-status-codes.json"),
        prism.url
    );
    let t = TestHost::builder().config(&config).build();
    assert_eq!(call(&t, "statuses", "get_status_204", json!({})).await.unwrap(), json!({ "status": 204 }));

    // 89 operations: `discover` lists them without schemas, and gives one
    // action's schema when asked.
    let mut session = t.host.session(None).unwrap();
    let listed = session.call("connector", json!({ "subcommand": "discover", "connector": "statuses" })).await;
    let listed = listed.value().cloned().unwrap();
    assert_eq!(listed["actions"].as_array().unwrap().len(), 89);
    assert!(listed["actions"][0].get("input_schema").is_none(), "{}", listed["actions"][0]);
    assert!(listed["note"].as_str().unwrap().contains("`action`"), "{listed}");
    let one = session
        .call("connector", json!({ "subcommand": "discover", "connector": "statuses", "action": "get_status_404" }))
        .await;
    let one = one.value().cloned().unwrap();
    assert_eq!(one["actions"].as_array().unwrap().len(), 1);
    assert_eq!(one["actions"][0]["input_schema"]["type"], "object", "{one}");
    let typo = session
        .call("connector", json!({ "subcommand": "discover", "connector": "statuses", "action": "get_status_999" }))
        .await;
    assert!(typo.is_error && typo.text.contains("(89 in all)"), "{}", typo.text);
    for (status, expected) in [
        (400, GuestErrorKind::InvalidInput),
        (422, GuestErrorKind::InvalidInput),
        (401, GuestErrorKind::Denied),
        (403, GuestErrorKind::Denied),
        (404, GuestErrorKind::NotFound),
        (429, GuestErrorKind::Unavailable),
        (500, GuestErrorKind::Unavailable),
        (503, GuestErrorKind::Unavailable),
        (418, GuestErrorKind::Failed),
    ] {
        let (kind, message) = guest_error(call(&t, "statuses", &format!("get_status_{status}"), json!({})).await);
        assert_eq!(kind, expected, "{status}: {message}");
        assert!(message.contains(&format!("HTTP {status}")) && message.contains("/status/"), "{message}");
    }
}

/// What cannot be served is an error at start-up naming the section and
/// what to fix.
#[test]
fn sections_that_do_not_fit_say_why() {
    let doc = books_document();
    for (section, expected) in [
        (
            format!(
                "openapi = \"{doc}\"\nbase_url = \"http://127.0.0.1:9\"\nauth = {{ kind = \"bearer\", token_env = \"QUIVER_TEST_UNSET_BOOKS_TOKEN\" }}"
            ),
            "QUIVER_TEST_UNSET_BOOKS_TOKEN",
        ),
        ("openapi = \"no-such.json\"\nbase_url = \"http://127.0.0.1:9\"".into(), "no-such.json"),
        (
            format!("openapi = \"{doc}\"\nbase_url = \"http://127.0.0.1:9\"\nexclude_operations = [\"getBok\"]"),
            "getBok",
        ),
        (format!("openapi = \"{doc}\"\nbase_url = \"http://127.0.0.1:9\"\ntags = [\"pets\"]"), "`pets`"),
        (
            format!(
                "openapi = \"{doc}\"\nbase_url = \"http://127.0.0.1:9\"\nauth = {{ kind = \"api_key\", key_env = \"K\" }}"
            ),
            "no apiKey scheme",
        ),
    ] {
        let config = format!("[connectors.books]\n{section}\n");
        let error = TestHost::builder().config(&config).refused("[connectors.books]");
        assert!(error.contains("[connectors.books]") && error.contains(expected), "{expected}: {error}");
    }
}

/// A document whose parameters refer to each other in a cycle (284 bytes)
/// refuses its connector at start-up, naming the section, the document
/// and the cycle; the process goes on (it used to overflow its stack and
/// abort).
#[test]
fn a_reference_cycle_is_refused_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cycle.json");
    let text = r##"{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"parameters":[{"$ref":"#/components/parameters/A"}],"responses":{"200":{"description":"ok"}}}}},"components":{"parameters":{"A":{"$ref":"#/components/parameters/B"},"B":{"$ref":"#/components/parameters/A"}}}}"##;
    std::fs::write(&path, text).unwrap();
    let config = format!("[connectors.cyclic]\nopenapi = \"{}\"\nbase_url = \"http://127.0.0.1:9\"\n", path.display());
    let error = TestHost::builder().config(&config).refused("[connectors.cyclic]");
    for expected in ["[connectors.cyclic]", "cycle.json", "#/components/parameters/A → #/components/parameters/B"] {
        assert!(error.contains(expected), "{expected}: {error}");
    }
}

/// Every OpenAPI 3.0 and 3.1 JSON document of `@readme/oas-examples`
/// (circular references, every parameter style, polymorphism...) becomes
/// actions whose input schemas compile.
#[test]
fn every_example_document_becomes_actions() {
    let mut served = 0;
    let mut failed = Vec::new();
    for version in ["3.0/json", "3.1/json"] {
        let dir = Prism::example(version);
        let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        for file in files.iter().filter(|f| f.extension().is_some_and(|e| e == "json")) {
            let text = std::fs::read_to_string(file).unwrap();
            match quiver::load::openapi::Api::parse(&text, &file.display().to_string()) {
                Ok(api) => {
                    let api = std::sync::Arc::new(api);
                    let connector = api.select(&Default::default(), "[connectors.example]").unwrap();
                    for action in connector.manifest("example").actions {
                        if let Err(e) = action.validator() {
                            failed.push(format!("{}: {e}", file.display()));
                        }
                    }
                    served += 1;
                }
                Err(error) => failed.push(error.to_string()),
            }
        }
    }
    assert!(served >= 49, "{served} documents served");
    // Its only paths are webhooks (requests the API sends): nothing to call.
    let expected = ["3.1/json/webhooks.json: not an OpenAPI 3.0 or 3.1 document: it has no operations"];
    assert!(
        failed.len() == expected.len() && failed.iter().zip(expected).all(|(f, e)| f.ends_with(e)),
        "{} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// Every string of `value` (keys too), and whether any holds a control
/// character a terminal or a prompt would act on.
fn raw_control(value: &Value) -> Option<String> {
    let bad = |s: &str| s.chars().any(|c| c.is_control() && c != '\n' && c != '\t');
    match value {
        Value::String(s) if bad(s) => Some(s.clone()),
        Value::Array(items) => items.iter().find_map(raw_control),
        Value::Object(fields) => fields.iter().find_map(|(k, v)| if bad(k) { Some(k.clone()) } else { raw_control(v) }),
        _ => None,
    }
}

/// A hostile document (ESC, NUL and BEL in its descriptions, summaries,
/// titles, a parameter's and a property's description, an enum value's
/// description) and a real server (Prism) answering its example error
/// with the same characters: what the model is shown (`discover`, the
/// connector's error) has them escaped, visibly, never raw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_text_from_a_document_or_an_api_reaches_the_model_escaped() {
    let hostile = "evil\u{1b}[2J\u{0}\u{7}";
    let document = json!({
        "openapi": "3.1.0",
        "info": { "title": format!("Hostile {hostile}"), "version": "1.0.0", "description": format!("About {hostile}\nmore") },
        "paths": { "/things/{id}": { "get": {
            "operationId": "getThing",
            "summary": format!("Get {hostile}"),
            "description": format!("Long {hostile}\r\n- forged: line"),
            "parameters": [
                { "name": "id", "in": "path", "required": true, "schema": { "type": "string" }, "description": format!("Id {hostile}") },
                { "name": "mode", "in": "query", "schema": { "oneOf": [
                    { "const": "fast", "title": format!("Fast {hostile}"), "description": format!("Quick {hostile}") } ] } }
            ],
            "responses": { "400": { "description": "bad", "content": { "application/json": {
                "schema": { "$ref": "#/components/schemas/Problem" },
                "example": { "message": format!("refused {hostile}") } } } } }
        } } },
        "components": { "schemas": { "Problem": { "type": "object", "title": format!("Problem {hostile}"),
            "properties": { "message": { "type": "string", "description": format!("What {hostile}") } } } } }
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.json");
    std::fs::write(&path, document.to_string()).unwrap();
    let prism = Prism::start(&path);
    let config = format!("[connectors.hostile]\nopenapi = \"{}\"\nbase_url = \"{}\"\n", path.display(), prism.url);
    let t = TestHost::builder().config(&config).build();
    let prompt = t.host.session(None).unwrap().system_prompt();
    assert!(prompt.contains("- hostile: Hostile evil\\u{1b}[2J\\u{0}\\u{7}"), "{prompt}");

    let mut session = t.host.session(None).unwrap();
    let found = session
        .call("connector", json!({ "subcommand": "discover", "connector": "hostile", "action": "get_thing" }))
        .await
        .value()
        .cloned()
        .unwrap();
    assert_eq!(raw_control(&found), None, "{found}");
    let action = &found["actions"][0];
    assert!(action["description"].as_str().unwrap().contains("Long evil\\u{1b}[2J"), "{action}");
    assert_eq!(action["input_schema"]["properties"]["id"]["description"], "Id evil\\u{1b}[2J\\u{0}\\u{7}");

    let (kind, message) = guest_error(call(&t, "hostile", "get_thing", json!({ "id": "7" })).await);
    assert_eq!(kind, GuestErrorKind::InvalidInput, "{message}");
    assert!(message.contains("refused evil\\u{1b}[2J\\u{0}\\u{7}"), "{message}");
    assert!(!message.contains(['\u{1b}', '\u{0}', '\u{7}']), "{message:?}");
}

/// A path parameter may not move the request to another path: `..`, `.`
/// or an empty value as a whole segment (`GET /user/..` is `GET /`, with
/// the instance's credential) is the model's invalid input, refused
/// before anything is sent; Prism (Petstore) answers the same operation
/// with a real name, and with dots inside one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_parameter_cannot_leave_its_segment() {
    let prism = Prism::start(&Prism::example("3.0/json/petstore.json"));
    let config = format!(
        "[connectors.pets]\nopenapi = \"{}\"\nbase_url = \"{}\"\n",
        example("3.0/json/petstore.json"),
        prism.url
    );
    let t = TestHost::builder().config(&config).build();
    for name in ["user1", "a..b", "..."] {
        let user = call(&t, "pets", "get_user_by_name", json!({ "username": name })).await;
        assert!(user.as_ref().is_ok_and(|u| u["username"].is_string()), "{name}: {user:?}");
    }
    for name in ["..", ".", ""] {
        let (kind, message) = guest_error(call(&t, "pets", "get_user_by_name", json!({ "username": name })).await);
        assert_eq!(kind, GuestErrorKind::InvalidInput, "{name:?}: {message}");
        assert!(message.contains("`username`") && message.contains("segment"), "{message}");
    }
}
