"""``hubgrid serve`` end to end: bob, with his hub token as in a
session, makes an endpoint of the echo-chat stand-in from his folder on
the shared Docker hub's inference group (serving_fixtures.serving), the
serving controller starts its replica on the real Docker engine, a token
made with --quiet calls it through the real gateway (haproxy), so does his
hub token streamed, the replica's log has its pre-start action; a second
endpoint of the real all-MiniLM-L6-v2 model, waited for with scale
--wait, answers embeddings; the deletes wait until the replicas are
stopped and the endpoints gone."""

from __future__ import annotations

import io
import json
import re

from jupyterlab_hubgrid.cli import main
from session_fixtures import eventually

NAME = "cli-chat"
EMB = "cli-emb"


def run(env: dict, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), env=env, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_create_call_logs_and_delete_through_the_real_replica_and_gateway(serving):
    hub = serving.hub
    env = {"HUBGRID_API_URL": hub.api, "JUPYTERHUB_API_TOKEN": hub.token("bob")}
    # the embeddings model starts meanwhile (its replica is waited for below)
    code, out, err = run(env, "serve", "create", EMB, "minilm", "-p", "ml", "-g", "serve",
                         "--cpu", "0.5", "--mem", "512M")
    assert code == 0, err
    code, out, err = run(env, "serve", "create", NAME, "echo", "-p", "ml", "-g", "serve",
                         "--cpu", "0.5", "--mem", "512M", "--wait", "--timeout", "180",
                         "--json")
    try:
        assert code == 0, (out, err, run(env, "serve", "show", NAME))
        e = json.loads(out)  # as it serves, once --wait saw it
        assert (e["state"], e["running_replicas"]) == ("running", 1)
        code, out, _ = run(env, "serve", "show", NAME)
        assert re.search(r"state\s+running", out) and re.search(r"model\s+cli-chat", out)

        code, secret, err = run(env, "serve", "token", "create", NAME, "--quiet", "--days", "1")
        assert code == 0 and re.fullmatch(r"hge_\S+\n", secret), err
        # the gateway routes the replica within a sync (~2 s)
        def called():
            code, out, _ = run(env, "serve", "call", NAME, "hello", "world", "--token",
                               secret.strip())
            return out if code == 0 else None
        assert eventually(called, timeout=60, interval=0.5) == "echo: hello world\n"
        # the hub token opens the endpoints bob may use; streamed word by word
        code, out, err = run(env, "serve", "call", NAME, "one two three", "--stream",
                             "--max-tokens", "2")
        assert (code, out) == (0, "echo: one\n"), err  # "echo:" and "one": 2 tokens
        code, out, err = run(env, "serve", "call", NAME, "x", "--token", "hge_nope")
        assert code == 1 and "the gateway: invalid token" in err and "(HTTP 401)" in err

        code, out, err = run(env, "serve", "logs", NAME, "0")
        assert code == 0 and "hubgrid: pre-start:" in out, (out, err)

        # scale --wait: until its one replica serves; then real embeddings
        code, out, err = run(env, "serve", "scale", EMB, "1", "--wait", "--timeout", "180")
        assert code == 0 and out.endswith(f"endpoint {EMB}: running, 1 of 1 replica(s) "
                                          "serving\n"), (out, err)
        tries = []

        def embedded():
            tries.append(run(env, "serve", "call", EMB, "--embed", "a sentence"))
            return tries[-1][1] if tries[-1][0] == 0 else None
        assert eventually(embedded, timeout=60, interval=0.5) == \
            "embedding 0: 384 dimensions\n", tries[-1]
    finally:
        deleted = [run(env, "serve", "delete", name, "--timeout", "120") for name in (NAME, EMB)]
    for code, out, err in deleted:
        assert code == 0 and out.endswith(": deleted\n"), (out, err)
    assert run(env, "serve", "show", NAME)[0] == 2
