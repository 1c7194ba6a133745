"""hubgrid/inference:latest on the real Docker engine (images/inference/,
docs/serving.md), started as an inference replica will be: the example model
folder bind-mounted read-only at /models, the ``start_command`` of its
``model-definition.yaml`` (read by quota_service/serving/modeldef.py) as the
session user, ``--network none``, reached on a Unix socket in a mounted
directory (as isolated sessions are), with the openai Python client.

The embedding server runs a real model (all-MiniLM-L6-v2 as ONNX; its files
are copied out of the image into the folder, as the example's README says),
so two sentences that mean the same are closer than two that do not. The
chat server is the deterministic stand-in. Both containers are removed.
"""

from __future__ import annotations

import io
import math
import os
import shutil
import tarfile
import time
import uuid
from pathlib import Path

import httpx
import openai
import pytest

from docker_fixtures import HOSTS, require_image
from hub_fixtures import require
from quota_service.serving import modeldef

IMAGE = "hubgrid/inference:latest"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "models"
SOCKET_DIR = "/run/hubgrid-service"
MODEL_FILES = "/opt/hubgrid/models/all-minilm-l6-v2"
LABEL = "hubgrid.test"
#: this run's containers (another run of this file may share the engine)
RUN = f"inference-image-{uuid.uuid4().hex[:12]}"


class Replica:
    """One container of the image serving a model folder's definition."""

    def __init__(self, client, folder: Path, workdir: Path):
        self.definition = modeldef.parse((folder / "model-definition.yaml").read_bytes())
        (self.model,) = self.definition.servable()
        self.sockdir = workdir / "sock"
        self.sockdir.mkdir()
        if os.geteuid() == 0:
            os.chown(self.sockdir, 1000, 100)  # the session user writes its socket here
        else:
            self.sockdir.chmod(0o777)
        self.socket = self.sockdir / "service.sock"
        self.client = client
        self.id = client.create_container(
            IMAGE, command=list(self.model.service.argv), user="1000:100",
            name=f"hubgrid-test-inference-{uuid.uuid4().hex[:10]}",
            environment={"HUBGRID_SERVICE_SOCKET": f"{SOCKET_DIR}/service.sock"},
            labels={LABEL: RUN},
            host_config=client.create_host_config(
                network_mode="none", cap_drop=["ALL"], security_opt=["no-new-privileges"],
                mem_limit="1g", pids_limit=256,
                binds={str(folder): {"bind": "/models", "mode": "ro"},
                       str(self.sockdir): {"bind": SOCKET_DIR, "mode": "rw"}}))["Id"]
        client.start(self.id)

    def http(self) -> httpx.Client:
        return httpx.Client(transport=httpx.HTTPTransport(uds=str(self.socket)),
                            base_url="http://replica", timeout=30)

    def openai(self) -> openai.OpenAI:
        return openai.OpenAI(api_key="unused", base_url="http://replica/v1",
                             http_client=self.http(), max_retries=0)

    def wait_healthy(self, deadline: float) -> httpx.Response:
        """The first answer to the definition's health path (the server is up)."""
        path = self.model.service.health_check.path
        while time.monotonic() < deadline:
            if self.client.inspect_container(self.id)["State"]["Status"] == "exited":
                break
            if self.socket.exists():
                try:
                    with self.http() as h:
                        return h.get(path)
                except httpx.TransportError:
                    pass
            time.sleep(0.1)
        logs = self.client.logs(self.id).decode(errors="replace")
        pytest.fail(f"{self.model.name} did not answer {path} on {self.socket}:\n{logs}")

    def remove(self) -> None:
        self.client.remove_container(self.id, force=True)


def _copy_model_files(client, dest: Path) -> None:
    """The model's files out of the image (docker cp, as the example's README does)."""
    cid = client.create_container(IMAGE, command=["true"], labels={LABEL: RUN})["Id"]
    try:
        stream, _ = client.get_archive(cid, MODEL_FILES + "/.")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            for member in tar.getmembers():
                if member.isfile():
                    member.name = Path(member.name).name
                    tar.extract(member, dest, filter="data")
    finally:
        client.remove_container(cid, force=True)


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    require("Docker engines (HUBGRID_TEST_DOCKER_HOSTS)", bool(HOSTS), "run `make test`")
    client = require_image(HOSTS[0], IMAGE)
    made = {}
    try:
        for name in ("all-minilm-l6-v2", "echo-chat"):
            work = tmp_path_factory.mktemp(name)
            folder = work / "models"
            shutil.copytree(EXAMPLES / name, folder)
            if name == "all-minilm-l6-v2":
                _copy_model_files(client, folder)
            folder.chmod(0o755)
            made[name] = Replica(client, folder, work)
        yield made
    finally:
        for r in made.values():
            r.remove()
    left = client.containers(all=True, filters={"label": f"{LABEL}={RUN}"})
    assert left == []


def test_the_replicas_run_isolated_as_the_session_user(replicas):
    for r in replicas.values():
        r.wait_healthy(time.monotonic() + 30)
        info = r.client.inspect_container(r.id)
        assert info["HostConfig"]["NetworkMode"] == "none"
        assert info["Config"]["User"] == "1000:100"
        mounts = {m["Destination"]: m for m in info["Mounts"]}
        assert mounts["/models"]["RW"] is False
        top = r.client.top(r.id, ps_args="-o pid,uid,args")
        uids = {line[top["Titles"].index("UID")] for line in top["Processes"]}
        assert uids == {"1000"}, top


def test_embedding_server_health_and_models(replicas):
    r = replicas["all-minilm-l6-v2"]
    answer = r.wait_healthy(time.monotonic() + 30)
    assert answer.status_code == r.model.service.health_check.expected_status_code
    with r.openai() as client:
        listed = [m.id for m in client.models.list().data]
    assert listed == [r.model.name]


def _cosine(a, b) -> float:
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(
        sum(x * x for x in a) * sum(y * y for y in b))


def test_embeddings_of_a_real_model(replicas):
    r = replicas["all-minilm-l6-v2"]
    r.wait_healthy(time.monotonic() + 30)
    texts = ["A man is playing a guitar.", "Someone plays the guitar.",
             "The stock market fell sharply today."]
    with r.openai() as client:  # base64 vectors: the client's default
        got = client.embeddings.create(model=r.model.name, input=texts)
    vectors = [d.embedding for d in sorted(got.data, key=lambda d: d.index)]
    assert [len(v) for v in vectors] == [384] * 3
    same, other = _cosine(vectors[0], vectors[1]), _cosine(vectors[0], vectors[2])
    assert same > 0.6 and other < 0.3 and same > other + 0.4, (same, other)
    assert got.usage.prompt_tokens > 0
    # the same through encoding_format float, on plain HTTP
    with r.http() as h:
        plain = h.post("/v1/embeddings", json={"model": r.model.name, "input": texts[0],
                                               "encoding_format": "float"}).json()
    assert abs(_cosine(plain["data"][0]["embedding"], vectors[0]) - 1) < 1e-5


def test_embedding_server_refusals(replicas):
    r = replicas["all-minilm-l6-v2"]
    r.wait_healthy(time.monotonic() + 30)
    with r.openai() as client, pytest.raises(openai.NotFoundError, match="not served here"):
        client.embeddings.create(model="gpt-4", input="x")
    with r.http() as h:
        for body, param in (({"input": [1, 2]}, "input"), ({"input": []}, "input"),
                            ({"input": "x", "encoding_format": "int8"}, "encoding_format"),
                            ({"input": "x", "dimensions": 10}, "dimensions")):
            answer = h.post("/v1/embeddings", json=body)
            assert answer.status_code == 400 and answer.json()["error"]["param"] == param
        assert h.post("/v1/embeddings", content=b"{").status_code == 400
        assert h.get("/v1/nothing").status_code == 404
        assert h.get("/v1/embeddings").status_code == 405


def test_echo_chat_stand_in(replicas):
    r = replicas["echo-chat"]
    answer = r.wait_healthy(time.monotonic() + 30)
    assert answer.status_code == r.model.service.health_check.expected_status_code
    with r.openai() as client:
        _chat(client)


def _chat(client):
    assert [m.id for m in client.models.list().data] == ["echo-chat"]
    messages = [{"role": "system", "content": "be brief"},
                {"role": "user", "content": "hello there"}]
    done = client.chat.completions.create(model="echo-chat", messages=messages)
    assert done.choices[0].message.content == "echo: hello there"
    assert done.choices[0].finish_reason == "stop"
    assert done.usage.completion_tokens == 3 and done.usage.prompt_tokens == 4
    # streamed: the same words, one chunk each, then [DONE]
    chunks = list(client.chat.completions.create(model="echo-chat", messages=messages,
                                                 stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "echo: hello there" and len(chunks) == 5
    assert chunks[-1].choices[0].finish_reason == "stop"
    # deterministic: the same prompt, the same answer
    again = client.chat.completions.create(model="echo-chat", messages=messages)
    assert again.choices[0].message.content == done.choices[0].message.content
    cut = client.completions.create(model="echo-chat", prompt="one two three", max_tokens=2)
    assert (cut.choices[0].text, cut.choices[0].finish_reason) == ("echo: one", "length")
    streamed = "".join(c.choices[0].text for c in client.completions.create(
        model="echo-chat", prompt="one two", stream=True))
    assert streamed == "echo: one two"
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="llama", messages=messages)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="echo-chat", messages=[])


def test_a_folder_without_the_model_files_fails_with_the_reason(tmp_path):
    """The README's copy step skipped: the server exits and says what is missing."""
    require("Docker engines (HUBGRID_TEST_DOCKER_HOSTS)", bool(HOSTS), "run `make test`")
    client = require_image(HOSTS[0], IMAGE)
    folder = tmp_path / "models"
    shutil.copytree(EXAMPLES / "all-minilm-l6-v2", folder)
    folder.chmod(0o755)
    r = Replica(client, folder, tmp_path)
    try:
        assert client.wait(r.id, timeout=30)["StatusCode"] != 0
        logs = client.logs(r.id).decode(errors="replace")
        assert "/models/model.onnx is missing" in logs, logs
        assert not r.socket.exists()
    finally:
        r.remove()
