//! What a model learns of a database's schema beyond the adapter's own
//! answer, from the host's reading (the adapter's contract is unchanged):
//! views are marked, unique column sets and defaults are shown, and none of
//! it names a hidden column. On SQLite and PostgreSQL.

use serde_json::{Value, json};

use quiver::Session;
use quiver_tests::TestHost;
use quiver_tests::databases::{Engine, TestDatabase};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite() {
    views_unique_sets_and_defaults_are_shown(Engine::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres() {
    views_unique_sets_and_defaults_are_shown(Engine::Postgres).await
}

/// A table with a unique constraint, a unique index over two columns, a
/// partial unique index (unique over some rows only: not shown), a unique
/// index that names a hidden column (not shown), defaults (one on a hidden
/// column: not shown), and a view over it.
const SCHEMA: &str = "
CREATE TABLE coupon (
    coupon_id INTEGER PRIMARY KEY,
    code VARCHAR(20) NOT NULL UNIQUE,
    shop VARCHAR(20) NOT NULL,
    batch INTEGER NOT NULL DEFAULT 1,
    status VARCHAR(10) NOT NULL DEFAULT 'new',
    secret_hash VARCHAR(64) DEFAULT 'unset'
);
CREATE UNIQUE INDEX coupon_shop_batch ON coupon (shop, batch);
CREATE UNIQUE INDEX coupon_one_new ON coupon (shop) WHERE status = 'new';
CREATE UNIQUE INDEX coupon_secret ON coupon (secret_hash);
CREATE VIEW open_coupon AS SELECT coupon_id, code FROM coupon WHERE status = 'new';
";

async fn call(session: &mut Session, args: Value) -> Value {
    let outcome = session.call("database", args.clone()).await;
    assert!(!outcome.is_error, "database({args}) failed: {}", outcome.text);
    outcome.value().cloned().unwrap()
}

async fn views_unique_sets_and_defaults_are_shown(engine: Engine) {
    let db = TestDatabase::new(engine);
    db.execute(SCHEMA);
    let section = db.section("shop", "").replace("hidden = [", "hidden = [\"coupon.secret_hash\", ");
    let t = TestHost::builder().config(&section).build();
    let mut s = t.host.session(None).unwrap();

    let tables = call(&mut s, json!({ "subcommand": "list_tables", "database": "shop" })).await;
    let table = |name: &str| tables.as_array().unwrap().iter().find(|t| t["name"] == name).cloned().unwrap();
    assert_eq!(table("open_coupon")["view"], true, "{tables}");
    assert_eq!(table("coupon").get("view"), None, "a table is not marked");

    let coupon = call(&mut s, json!({ "subcommand": "discover", "database": "shop", "table": "coupon" })).await;
    assert_eq!(coupon["primary_key"], json!(["coupon_id"]));
    assert_eq!(coupon["unique"], json!([["code"], ["shop", "batch"]]), "{coupon}");
    assert_eq!(coupon.get("view"), None);
    let column = |name: &str| coupon["columns"].as_array().unwrap().iter().find(|c| c["name"] == name).cloned();
    assert_eq!(column("batch").unwrap()["default"], "1");
    assert!(column("status").unwrap()["default"].as_str().unwrap().starts_with("'new'"), "{coupon}");
    assert_eq!(column("code").unwrap().get("default"), None, "no default, no key");
    assert!(column("secret_hash").is_none(), "a hidden column is not listed");
    assert!(!coupon.to_string().contains("secret"), "nothing names the hidden column: {coupon}");

    let view = call(&mut s, json!({ "subcommand": "discover", "database": "shop", "table": "open_coupon" })).await;
    assert_eq!(view["view"], true, "{view}");
    assert_eq!(view.get("unique"), None);

    // Every table at once carries the same.
    let all = call(&mut s, json!({ "subcommand": "discover", "database": "shop" })).await;
    let open = all.as_array().unwrap().iter().find(|t| t["name"] == "open_coupon").unwrap();
    assert_eq!(open["view"], true);
}
