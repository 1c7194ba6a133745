"""hubgrid-embed-server: OpenAI-compatible text embeddings on the CPU.

    hubgrid-embed-server --model-dir /models --model-name NAME --port 8000 [--unix SOCK]

Loads a sentence-embedding model from a folder (the model folder, mounted
read-only at /models): ``model.onnx`` (a BERT-style encoder taking
input_ids, attention_mask and token_type_ids and giving last_hidden_state,
run by onnxruntime), ``tokenizer.json`` (Hugging Face tokenizers), and
optionally ``hubgrid-embed.json`` ({"max_tokens": 256, "pooling": "mean",
"normalize": true}). Each input is truncated to max_tokens, its token
vectors are mean-pooled over the attention mask and L2-normalized, as
sentence-transformers does for all-MiniLM-L6-v2.

Routes: ``GET /health`` (200 once the model is loaded: it is loaded before
the server listens), ``GET /v1/models``, ``POST /v1/embeddings`` (``input``:
a string or a list of strings; ``encoding_format``: float or base64, the
openai client's default; ``dimensions`` is refused).
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from hubgrid_inference.httpbase import ApiError, arguments, serve

MAX_INPUTS = 256
MAX_INPUT_CHARS = 64 * 1024


class EmbedApp:
    name = "hubgrid-embed-server"

    def __init__(self, model_dir: Path, model: str, threads: int):
        settings = {"max_tokens": 256, "pooling": "mean", "normalize": True}
        extra = model_dir / "hubgrid-embed.json"
        if extra.exists():
            settings.update(json.loads(extra.read_text()))
        if settings["pooling"] != "mean":
            raise SystemExit(f"{self.name}: pooling {settings['pooling']!r}: only 'mean' is built in")
        for f in ("model.onnx", "tokenizer.json"):
            if not (model_dir / f).is_file():
                raise SystemExit(f"{self.name}: {model_dir / f} is missing (the model folder "
                                 "needs model.onnx and tokenizer.json)")
        self.model = model
        self.normalize = bool(settings["normalize"])
        self.created = int(time.time())
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(int(settings["max_tokens"]))
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(model_dir / "model.onnx"), opts,
                                            providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.dimensions = int(self.embed(["warm-up"])[0].shape[1])
        self.routes = {("GET", "/health"): self.health, ("GET", "/v1/models"): self.models,
                       ("POST", "/v1/embeddings"): self.embeddings}

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        """The texts' vectors and how many tokens they had."""
        enc = self.tokenizer.encode_batch(texts)
        feed = {"input_ids": np.array([e.ids for e in enc], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64)}
        hidden = self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0]
        mask = feed["attention_mask"][..., None].astype(hidden.dtype)
        vectors = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        if self.normalize:
            vectors /= np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
        return vectors.astype(np.float32), int(feed["attention_mask"].sum())

    # ------------------------------------------------------------ routes
    def health(self, handler, body):
        return {"status": "ok", "model": self.model}

    def models(self, handler, body):
        return {"object": "list", "data": [{"id": self.model, "object": "model",
                                            "created": self.created, "owned_by": "hubgrid"}]}

    def embeddings(self, handler, body):
        model = body.get("model")
        if model is not None and model != self.model:
            raise ApiError(404, f"the model {model!r} is not served here (this server "
                           f"serves {self.model!r})", param="model", code="model_not_found")
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            raise ApiError(400, "input must be a string or a non-empty list of strings "
                           "(token arrays are not accepted)", param="input")
        if len(texts) > MAX_INPUTS:
            raise ApiError(400, f"at most {MAX_INPUTS} inputs per request", param="input")
        if any(len(t) > MAX_INPUT_CHARS for t in texts):
            raise ApiError(400, f"an input is over {MAX_INPUT_CHARS} characters", param="input")
        fmt = body.get("encoding_format") or "float"
        if fmt not in ("float", "base64"):
            raise ApiError(400, "encoding_format must be float or base64",
                           param="encoding_format")
        if body.get("dimensions") not in (None, self.dimensions):
            raise ApiError(400, f"this model gives {self.dimensions} dimensions only",
                           param="dimensions")
        vectors, tokens = self.embed(texts)
        data = [{"object": "embedding", "index": i,
                 "embedding": (base64.b64encode(v.astype("<f4").tobytes()).decode()
                               if fmt == "base64" else [float(x) for x in v])}
                for i, v in enumerate(vectors)]
        return {"object": "list", "data": data, "model": self.model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def main(argv=None) -> None:
    p = arguments("OpenAI-compatible embeddings from an ONNX sentence encoder")
    p.add_argument("--model-dir", default="/models", type=Path)
    p.add_argument("--model-name", required=True, help="the name /v1/models lists")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                   help="onnxruntime's threads (default: the CPUs this process may use)")
    args = p.parse_args(argv)
    app = EmbedApp(args.model_dir, args.model_name, max(1, args.threads))
    sys.stderr.write(f"{app.name}: {args.model_dir} loaded ({app.dimensions} dimensions)\n")
    serve(app, args)


if __name__ == "__main__":
    main()
