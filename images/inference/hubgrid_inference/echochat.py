"""hubgrid-echo-chat: a deterministic stand-in for an OpenAI-compatible chat server.

    hubgrid-echo-chat --model-name NAME --port 8000 [--unix SOCK]

No language model runs on the CPUs of hubgrid's test machines, so this
server stands in for one where an endpoint, its routing, its tokens and
the gateway are tested: it is NOT a model. Its answer is a function of the
prompt alone: ``echo: `` followed by the last user message (of a chat) or
the prompt (of a completion), cut to ``max_tokens`` words (finish_reason
``length``, else ``stop``). Tokens are words here: usage counts the
whitespace-separated words of the prompt and of the answer.

Routes, in OpenAI's shapes: ``GET /health``, ``GET /v1/models``,
``POST /v1/chat/completions`` and ``POST /v1/completions``, both with
``"stream": true`` as server-sent events (one word a chunk, then
``data: [DONE]``). Python's standard library only.
"""

from __future__ import annotations

import hashlib
import sys
import time

from hubgrid_inference.httpbase import ApiError, arguments, serve

PREFIX = "echo:"


def answer_words(prompt: str, max_tokens: int | None) -> tuple[list[str], str]:
    """The answer's words and its finish reason: the pure heart of the stand-in."""
    words = [PREFIX] + prompt.split()
    if max_tokens is not None and len(words) > max_tokens:
        return words[:max_tokens], "length"
    return words, "stop"


def _text_of(content) -> str:
    """A message's text: a string, or OpenAI's list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content
                        if isinstance(p, dict) and p.get("type") == "text"
                        and isinstance(p.get("text"), str))
    raise ApiError(400, "a message's content must be a string or a list of parts",
                   param="messages")


class EchoChatApp:
    name = "hubgrid-echo-chat"

    def __init__(self, model: str):
        self.model = model
        self.created = int(time.time())
        self.routes = {("GET", "/health"): self.health, ("GET", "/v1/models"): self.models,
                       ("POST", "/v1/chat/completions"): self.chat,
                       ("POST", "/v1/completions"): self.completions}

    def health(self, handler, body):
        return {"status": "ok", "model": self.model}

    def models(self, handler, body):
        return {"object": "list", "data": [{"id": self.model, "object": "model",
                                            "created": self.created, "owned_by": "hubgrid"}]}

    def _common(self, body) -> tuple[int | None, bool]:
        model = body.get("model")
        if model is not None and model != self.model:
            raise ApiError(404, f"the model {model!r} is not served here (this server "
                           f"serves {self.model!r})", param="model", code="model_not_found")
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 1):
            raise ApiError(400, "max_tokens must be a positive integer", param="max_tokens")
        stream = body.get("stream", False)
        if not isinstance(stream, bool):
            raise ApiError(400, "stream must be true or false", param="stream")
        return limit, stream

    def chat(self, handler, body):
        limit, stream = self._common(body)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(
                isinstance(m, dict) for m in messages):
            raise ApiError(400, "messages must be a non-empty list of messages",
                           param="messages")
        users = [_text_of(m.get("content", "")) for m in messages if m.get("role") == "user"]
        prompt_words = sum(len(_text_of(m.get("content", "")).split()) for m in messages)
        words, reason = answer_words(users[-1] if users else "", limit)
        rid = "chatcmpl-" + _digest(body)
        usage = {"prompt_tokens": prompt_words, "completion_tokens": len(words),
                 "total_tokens": prompt_words + len(words)}
        if not stream:
            return {"id": rid, "object": "chat.completion", "created": int(time.time()),
                    "model": self.model, "usage": usage,
                    "choices": [{"index": 0, "finish_reason": reason, "logprobs": None,
                                 "message": {"role": "assistant",
                                             "content": " ".join(words)}}]}
        base = {"id": rid, "object": "chat.completion.chunk", "created": int(time.time()),
                "model": self.model}
        handler.start_events()
        handler.send_event({**base, "choices": [{"index": 0, "finish_reason": None,
                                                 "delta": {"role": "assistant", "content": ""}}]})
        for i, w in enumerate(words):
            handler.send_event({**base, "choices": [{"index": 0, "finish_reason": None,
                                                     "delta": {"content": (" " if i else "") + w}}]})
        handler.send_event({**base, "choices": [{"index": 0, "finish_reason": reason,
                                                 "delta": {}}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            handler.send_event({**base, "choices": [], "usage": usage})
        handler.send_event("[DONE]")
        return None

    def completions(self, handler, body):
        limit, stream = self._common(body)
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            prompt = prompt[0]
        if not isinstance(prompt, str):
            raise ApiError(400, "prompt must be a string (or a list of one string)",
                           param="prompt")
        words, reason = answer_words(prompt, limit)
        rid = "cmpl-" + _digest(body)
        prompt_words = len(prompt.split())
        usage = {"prompt_tokens": prompt_words, "completion_tokens": len(words),
                 "total_tokens": prompt_words + len(words)}
        if not stream:
            return {"id": rid, "object": "text_completion", "created": int(time.time()),
                    "model": self.model, "usage": usage,
                    "choices": [{"index": 0, "text": " ".join(words), "finish_reason": reason,
                                 "logprobs": None}]}
        base = {"id": rid, "object": "text_completion", "created": int(time.time()),
                "model": self.model}
        handler.start_events()
        for i, w in enumerate(words):
            handler.send_event({**base, "choices": [{"index": 0, "text": (" " if i else "") + w,
                                                     "finish_reason": None, "logprobs": None}]})
        handler.send_event({**base, "choices": [{"index": 0, "text": "", "finish_reason": reason,
                                                 "logprobs": None}]})
        handler.send_event("[DONE]")
        return None


def _digest(body) -> str:
    return hashlib.sha256(repr(sorted(body.items())).encode()).hexdigest()[:24]


def main(argv=None) -> None:
    p = arguments("a deterministic OpenAI-compatible chat stand-in (not a model)")
    p.add_argument("--model-name", required=True, help="the name /v1/models lists")
    args = p.parse_args(argv)
    app = EchoChatApp(args.model_name)
    sys.stderr.write(f"{app.name}: a deterministic stand-in, not a language model\n")
    serve(app, args)


if __name__ == "__main__":
    main()
