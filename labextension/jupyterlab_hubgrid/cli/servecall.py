"""``hubgrid serve call``: one call of an endpoint through the gateway, as
any OpenAI client makes it: a chat completion (streamed with --stream) or
embeddings (--embed).

The credential, in this order: ``--token`` or ``HUBGRID_ENDPOINT_TOKEN``
(an endpoint token), else your hub token (``JUPYTERHUB_API_TOKEN``, set in
every session: the gateway opens the endpoints the service shows you). The
model is the endpoint's id in the gateway's ``v1/models`` for that
credential (its name, or ``project/name`` where that is not enough).
"""

from __future__ import annotations

import json

import httpx

from ..client import ClientError, ServiceUnreachable
from .base import UsageError, command
from .output import safe_log
from .serveview import find_endpoint, gateway_root

TIMEOUT = 120.0


def credential(ctx, args) -> str:
    """The Authorization header for the gateway."""
    token = args.token or (ctx.env.get("HUBGRID_ENDPOINT_TOKEN") or "").strip()
    if token:
        return f"Bearer {token}"
    hub_token = ctx.client.settings.hub_token
    if hub_token:
        return f"token {hub_token}"
    raise UsageError("no credential for the gateway: --token or HUBGRID_ENDPOINT_TOKEN (make "
                     "one with 'hubgrid serve token create ENDPOINT --quiet'), or "
                     "JUPYTERHUB_API_TOKEN (set in every session)")


def refusal(resp: httpx.Response) -> ClientError:
    """The gateway's OpenAI-shaped error (``{"error": {"message"}}``) as a ClientError."""
    try:
        err = resp.json().get("error") or {}
        message = err.get("message") if isinstance(err, dict) else str(err)
    except (ValueError, AttributeError):
        message = None
    return ClientError(resp.status_code, f"the gateway: {message or resp.text[:200] or 'error'}")


def model_of(http: httpx.Client, root: str, auth: str, e: dict) -> str:
    """The endpoint's model id among those the credential opens."""
    resp = http.get(f"{root}v1/models", headers={"Authorization": auth})
    if resp.status_code >= 400:
        raise refusal(resp)
    ids = [m.get("id") for m in resp.json().get("data") or []]
    for mid in (e["name"], f"{e['project']}/{e['name']}",
                f"{e['domain']}/{e['project']}/{e['name']}"):
        if mid in ids:
            return mid
    raise ClientError(404, f"the gateway offers this credential no model of endpoint "
                      f"{e['name']!r} (it offers: {', '.join(map(str, ids)) or 'none'}); "
                      "a token of another endpoint, or its replicas not routed yet?")


def stream_chat(ctx, http: httpx.Client, url: str, auth: str, body: dict) -> None:
    """Print the answer's words as the server-sent events bring them."""
    with http.stream("POST", url, headers={"Authorization": auth}, json=body) as resp:
        if resp.status_code >= 400:
            resp.read()
            raise refusal(resp)
        for line in resp.iter_lines():
            data = line.removeprefix("data:").strip() if line.startswith("data:") else None
            if not data or data == "[DONE]":
                continue
            for choice in json.loads(data).get("choices") or []:
                text = (choice.get("delta") or {}).get("content") or ""
                if text:
                    ctx.out.write(safe_log(text))
                    ctx.out.flush()
    ctx.out.write("\n")
    ctx.out.flush()


def call(ctx, args) -> None:
    if args.stream and (ctx.json or args.embed):
        raise UsageError("--stream prints a chat answer as it comes: leave out "
                         "--json and --embed")
    text = " ".join(args.text)
    e = find_endpoint(ctx, args.endpoint)
    root = gateway_root(ctx.env, ctx.client.settings.api_url)
    if root is None:
        raise UsageError("where is the gateway? Set HUBGRID_GATEWAY_URL")
    auth = credential(ctx, args)
    try:
        with httpx.Client(timeout=TIMEOUT) as http:
            model = model_of(http, root, auth, e)
            if args.embed:
                url, body = f"{root}v1/embeddings", {"model": model, "input": text}
            else:
                url = f"{root}v1/chat/completions"
                body = {"model": model, "messages": [{"role": "user", "content": text}]}
                if args.max_tokens is not None:
                    body["max_tokens"] = args.max_tokens
                if args.stream:
                    body["stream"] = True
                    return stream_chat(ctx, http, url, auth, body)
            resp = http.post(url, headers={"Authorization": auth}, json=body)
            if resp.status_code >= 400:
                raise refusal(resp)
            answer = resp.json()
    except httpx.TransportError as err:
        raise ServiceUnreachable(f"cannot reach the gateway at {root}: "
                                 f"{err or type(err).__name__}") from None

    def render(a: dict) -> str:
        if args.embed:
            return "\n".join(f"embedding {d.get('index')}: {len(d.get('embedding') or [])} "
                             f"dimensions" for d in a.get("data") or [])
        choices = a.get("choices") or [{}]
        return safe_log(str((choices[0].get("message") or {}).get("content") or ""))

    ctx.emit(answer, render)


def register(subs, common) -> None:
    p = command(subs, "call", common, call, "one call through the gateway: a chat "
                "completion, or embeddings (--embed)", description=__doc__.split("\n\n", 1)[1])
    p.add_argument("endpoint", metavar="ENDPOINT", help="name, project/name or id")
    # "+", not "*": a "*" list after ENDPOINT would take nothing when an option comes
    # between them (argparse), and the words after it would be refused
    p.add_argument("text", nargs="+", metavar="TEXT", help="the message (or the text to embed)")
    p.add_argument("--embed", action="store_true", help="embeddings of TEXT instead of a chat")
    p.add_argument("--stream", action="store_true", help="print the answer as it comes")
    p.add_argument("--max-tokens", type=int, help="at most this many tokens in the answer")
    p.add_argument("--token", help="an endpoint token (default: HUBGRID_ENDPOINT_TOKEN, "
                   "else your hub token)")

