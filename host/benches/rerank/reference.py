"""Reference vectors for the re-ranker's test: all-MiniLM-L6-v2 run by the
numpy forward pass of `minilm.py` (written apart from candle's) over a few
texts, into tests/data/minilm/reference.json. The candle model must give
the same vectors.

    target/rerank/venv/bin/pip install numpy tokenizers safetensors
    target/rerank/venv/bin/python host/benches/rerank/reference.py target/minilm
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import minilm  # noqa: E402  (loads the model in sys.argv[1])

TEXTS = [
    "is it going to rain in Lisbon tomorrow",
    "get forecast. Get the weather forecast for a city, by day, with temperatures and rain.",
    "send an email to my manager about the delay",
    "Évaluer une expression arithmétique — naïve café, 東京 😀",
    # Longer than the 128 tokens read: truncated the same way.
    "search repositories. Search for GitHub repositories by name, topic or language. " * 8,
]

if __name__ == "__main__":
    vectors = minilm.embed(TEXTS)
    out = os.path.join(HERE, "..", "..", "..", "tests", "data", "minilm", "reference.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    rows = [{"text": t, "vector": [round(float(x), 7) for x in v]} for t, v in zip(TEXTS, vectors)]
    with open(out, "w") as f:
        json.dump(rows, f, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {len(rows)} vectors to {os.path.normpath(out)}")
