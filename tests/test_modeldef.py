"""``model-definition.yaml`` as quota_service/serving/modeldef.py reads it:
Backend.AI's format and defaults, every field's valid and invalid forms,
the pre-start actions hubgrid runs and those it refuses, the example model
folders, and (hypothesis) nothing but the typed error on arbitrary input."""

from __future__ import annotations

import copy
import dataclasses
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck as HypothesisHealthCheck, given, settings, strategies as st

from quota_service.serving import modeldef
from quota_service.serving.modeldef import FieldProblem, ModelDefinitionError, parse

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "models"

MINIMAL = {"models": [{"name": "m", "model_path": "/models/m",
                       "service": {"start_command": ["serve"], "port": 8000}}]}


def doc(**changes) -> dict:
    """MINIMAL with ``changes``: dotted paths into models[0] (value None deletes)."""
    d = copy.deepcopy(MINIMAL)
    for path, value in changes.items():
        node = d["models"][0]
        keys = path.split("__")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        if value is None:
            node.pop(keys[-1], None)
        else:
            node[keys[-1]] = value
    return d


def problems(data) -> dict[str, str]:
    text = data if isinstance(data, (str, bytes)) else yaml.safe_dump(data)
    with pytest.raises(ModelDefinitionError) as e:
        parse(text)
    assert all(isinstance(p, FieldProblem) and isinstance(p, ValueError) for p in e.value.problems)
    return {p.path: p.message for p in e.value.problems}


# ---------------------------------------------------------------- Backend.AI's own examples
BACKENDAI_VLLM = """
models:
  - name: "Llama-2-7b-chat-hf"
    model_path: "/models/Llama-2-7b-chat-hf"
    service:
      pre_start_actions: []
      start_command:
        - python
        - -m
        - vllm.entrypoints.openai.api_server
        - --model
        - /models/Llama-2-7b-chat-hf
        - --served-model-name
        - llama-2-7b
        - --tensor-parallel-size
        - "1"
      port: 8000
      health_check:
        path: /v1/models
        max_retries: 500
    metadata:
      author: Meta
      title: Llama 2 7B Chat
      version: 2
      created: 2023-07-18
      last_modified: 2023-07-18
      description: Llama 2 chat model served by vLLM
      task: text-generation
      category: LLM
      architecture: LlamaForCausalLM
      framework: [vllm, pytorch]
      label: [llama, chat]
      license: llama2
      min_resource:
        cuda.shares: 4
"""

BACKENDAI_CUSTOM = """
models:
  - name: "simple-http-server"
    model_path: "/models"
    service:
      pre_start_actions:
        - action: write_file
          args:
            filename: /home/jovyan/index.html
            body: "<h1>Hello</h1>"
            mode: "644"
        - action: run_command
          args:
            command: ["echo", "ready"]
      start_command: python3 -m http.server 8000 --directory /home/jovyan
      port: 8000
      health_check:
        path: /
        interval: 2.5
        initial_delay: 0
"""


def test_backendai_vllm_example():
    d = parse(BACKENDAI_VLLM)
    (m,) = d.models
    assert (m.name, m.model_path) == ("Llama-2-7b-chat-hf", "/models/Llama-2-7b-chat-hf")
    assert m.service.argv[:3] == ("python", "-m", "vllm.entrypoints.openai.api_server")
    assert m.service.port == 8000 and m.service.pre_start_actions == ()
    hc = m.service.health_check
    assert (hc.path, hc.max_retries) == ("/v1/models", 500)
    # the rest are Backend.AI's defaults
    assert (hc.interval, hc.max_wait_time, hc.initial_delay, hc.expected_status_code) == (
        Decimal(10), Decimal(15), Decimal(60), 200)
    md = m.metadata
    assert (md.version, md.created, md.framework, md.label) == (
        2, "2023-07-18", ("vllm", "pytorch"), ("llama", "chat"))
    assert md.min_resource == {"cuda.shares": 4}
    assert d.servable() == (m,)


def test_backendai_custom_command_example():
    (m,) = parse(BACKENDAI_CUSTOM).models
    s = m.service
    assert s.start_command == "python3 -m http.server 8000 --directory /home/jovyan"
    assert s.argv == ("/bin/bash", "-c", s.start_command)  # Backend.AI's default shell
    assert [a.action for a in s.pre_start_actions] == ["write_file", "run_command"]
    assert dict(s.pre_start_actions[0].args) == {
        "filename": "/home/jovyan/index.html", "body": "<h1>Hello</h1>", "mode": "644",
        "append": False}
    assert dict(s.pre_start_actions[1].args) == {"command": ("echo", "ready")}
    assert s.health_check.interval == Decimal("2.5") and s.health_check.initial_delay == 0


@pytest.mark.parametrize("folder", sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir()))
def test_every_example_folder_is_accepted(folder):
    d = parse((EXAMPLES / folder / "model-definition.yaml").read_bytes())
    (m,) = d.servable()
    assert m.model_path.startswith("/models") and m.service.health_check is not None
    assert m.metadata.title and m.metadata.license and m.metadata.min_resource


def test_the_example_folders_are_the_documented_three():
    assert sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir()) == [
        "all-minilm-l6-v2", "echo-chat", "vllm-llama-3.1-8b"]
    chat = parse((EXAMPLES / "echo-chat" / "model-definition.yaml").read_text()).models[0]
    assert chat.service.argv[:2] == ("/bin/sh", "-c")
    assert chat.metadata.min_resource["cpu"] == Decimal("0.5")


# ---------------------------------------------------------------- the result
def test_minimal_definition_and_defaults():
    (m,) = parse(yaml.safe_dump(MINIMAL)).models
    assert m.service == modeldef.ServiceConfig(start_command=("serve",), port=8000)
    assert m.service.shell == "/bin/bash" and m.service.health_check is None
    assert m.metadata is None


def test_results_are_frozen():
    d = parse(BACKENDAI_CUSTOM)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.models[0].service.port = 1
    with pytest.raises(TypeError):
        d.models[0].service.pre_start_actions[0].args["mode"] = "777"


def test_a_model_without_service_parses_but_is_not_servable():
    d = parse(yaml.safe_dump({"models": [{"name": "a", "model_path": "/models"},
                                         {"name": "b", "model_path": "/models/b",
                                          "service": {"start_command": "x", "port": 1}}]}))
    assert [m.name for m in d.servable()] == ["b"]


def test_bytes_and_text_read_the_same():
    assert parse(BACKENDAI_VLLM.encode()) == parse(BACKENDAI_VLLM)


def test_null_health_values_mean_the_defaults():
    hc = parse(yaml.safe_dump(doc(service__health_check={
        "path": "/h", "interval": None, "max_retries": None}))).models[0].service.health_check
    assert (hc.interval, hc.max_retries) == (Decimal(10), 10)


# ---------------------------------------------------------------- every field, invalid
INVALID = [
    # (changes to models[0], field path, part of the message)
    ({"name": None}, "models[0].name", "required"),
    ({"name": 5}, "models[0].name", "must be a string, not an integer"),
    ({"name": "  "}, "models[0].name", "must not be empty"),
    ({"name": "a\nb"}, "models[0].name", "control characters"),
    ({"name": "x" * 129}, "models[0].name", "at most 128"),
    ({"model_path": None}, "models[0].model_path", "required"),
    ({"model_path": "/etc/passwd"}, "models[0].model_path", "under /models"),
    ({"model_path": "/models/../etc"}, "models[0].model_path", "without '..'"),
    ({"model_path": "models/x"}, "models[0].model_path", "absolute"),
    ({"model_path": "/modelsx"}, "models[0].model_path", "under /models"),
    ({"model_path": ["/models"]}, "models[0].model_path", "must be a string"),
    ({"service": "serve"}, "models[0].service", "must be a mapping, not a string"),
    ({"service__start_command": None}, "models[0].service.start_command", "required"),
    ({"service__start_command": []}, "models[0].service.start_command", "must name a program"),
    ({"service__start_command": ["a", 1]}, "models[0].service.start_command[1]",
     "must be a string, not an integer"),
    ({"service__start_command": {"a": 1}}, "models[0].service.start_command",
     "must be a string, not a mapping"),
    ({"service__start_command": ""}, "models[0].service.start_command", "must not be empty"),
    ({"service__shell": "bash"}, "models[0].service.shell", "absolute path"),
    ({"service__port": None}, "models[0].service.port", "required"),
    ({"service__port": 0}, "models[0].service.port", "must be an integer 1..65535"),
    ({"service__port": 65536}, "models[0].service.port", "must be an integer 1..65535"),
    ({"service__port": 8000.0}, "models[0].service.port", "not a number"),
    ({"service__port": "8000"}, "models[0].service.port", "not a string"),
    ({"service__port": True}, "models[0].service.port", "not a boolean"),
    ({"service__health_check": {}}, "models[0].service.health_check.path", "required"),
    ({"service__health_check": {"path": "health"}}, "models[0].service.health_check.path",
     "starting with /"),
    ({"service__health_check": {"path": "/a b"}}, "models[0].service.health_check.path",
     "without spaces"),
    ({"service__health_check": {"path": "/", "interval": 0}},
     "models[0].service.health_check.interval", "more than 0"),
    ({"service__health_check": {"path": "/", "interval": "10s"}},
     "models[0].service.health_check.interval", "not a string"),
    ({"service__health_check": {"path": "/", "interval": float("inf")}},
     "models[0].service.health_check.interval", "number of seconds"),
    ({"service__health_check": {"path": "/", "max_wait_time": 86401}},
     "models[0].service.health_check.max_wait_time", "up to 86400"),
    ({"service__health_check": {"path": "/", "initial_delay": -1}},
     "models[0].service.health_check.initial_delay", "0 up to"),
    ({"service__health_check": {"path": "/", "max_retries": 0}},
     "models[0].service.health_check.max_retries", "integer 1..1000"),
    ({"service__health_check": {"path": "/", "max_retries": 2.5}},
     "models[0].service.health_check.max_retries", "integer 1..1000"),
    ({"service__health_check": {"path": "/", "expected_status_code": 99}},
     "models[0].service.health_check.expected_status_code", "integer 100..599"),
    ({"service__health_check": {"path": "/", "expected_status_code": 200.0}},
     "models[0].service.health_check.expected_status_code", "not a number"),
    ({"service__health_check": {"path": "/", "timeout": 3}},
     "models[0].service.health_check.timeout", "unknown field"),
    ({"service__ports": [1]}, "models[0].service.ports", "unknown field"),
    ({"servce": {}}, "models[0].servce", "unknown field"),
    ({"metadata": []}, "models[0].metadata", "must be a mapping, not a list"),
    ({"metadata": {"title": 3}}, "models[0].metadata.title", "must be a string"),
    ({"metadata": {"version": 1.5}}, "models[0].metadata.version", "integer or a string"),
    ({"metadata": {"framework": "vllm"}}, "models[0].metadata.framework", "list of strings"),
    ({"metadata": {"label": [1]}}, "models[0].metadata.label[0]", "must be a string"),
    ({"metadata": {"min_resource": {"cpu": -1}}}, "models[0].metadata.min_resource.cpu",
     "0 or more"),
    ({"metadata": {"min_resource": {"cpu": [1]}}}, "models[0].metadata.min_resource.cpu",
     "must be an amount"),
    ({"metadata": {"min_resource": {"cpu": -0.5}}}, "models[0].metadata.min_resource.cpu",
     "finite amount"),
    ({"metadata": {"min_resource": 4}}, "models[0].metadata.min_resource", "must be a mapping"),
    ({"metadata": {"created": "a", "created_at": "b"}}, "models[0].metadata.created_at",
     "given twice"),
    ({"metadata": {"extra": 1}}, "models[0].metadata.extra", "reserved"),
]


@pytest.mark.parametrize(("changes", "path", "message"), INVALID,
                         ids=[f"{p}:{m}" for _, p, m in INVALID])
def test_invalid_field(changes, path, message):
    found = problems(doc(**changes))
    assert path in found, found
    assert message in found[path]
    assert str(ModelDefinitionError([FieldProblem(path, found[path])])).startswith(f"{path}: ")


def test_the_port_message_reads_as_documented():
    assert problems(doc(service__port=70000)) == {
        "models[0].service.port": "must be an integer 1..65535"}


def test_several_problems_are_reported_together():
    found = problems(doc(name=1, model_path="/tmp", service__port=0,
                         service__health_check={"path": "x", "interval": -1}))
    assert set(found) == {"models[0].name", "models[0].model_path", "models[0].service.port",
                          "models[0].service.health_check.path",
                          "models[0].service.health_check.interval"}
    with pytest.raises(ModelDefinitionError) as e:
        parse(yaml.safe_dump(doc(name=1, service__port=0)))
    assert e.value.detail() == [
        {"field": "models[0].name", "message": "must be a string, not an integer"},
        {"field": "models[0].service.port", "message": "must be an integer 1..65535"}]


def test_problems_in_several_models_carry_their_index():
    d = {"models": [MINIMAL["models"][0], {"name": "m", "model_path": "/x"}]}
    found = problems(d)
    assert found["models[1].name"] == "'m' is also the name of models[0]"
    assert "under /models" in found["models[1].model_path"]


def test_model_path_is_normalised():
    assert parse(yaml.safe_dump(doc(model_path="/models//a/./b/"))).models[0].model_path == \
        "/models/a/b"


@pytest.mark.parametrize(("value", "expected"), [
    (5, Decimal(5)), (0.25, Decimal("0.25")), (0.1, Decimal("0.1")), (86400, Decimal(86400))])
def test_durations_are_exact_decimals(value, expected):
    hc = parse(yaml.safe_dump(doc(service__health_check={"path": "/", "interval": value}))
               ).models[0].service.health_check
    assert hc.interval == expected and isinstance(hc.interval, Decimal)


# ---------------------------------------------------------------- the document as a whole
@pytest.mark.parametrize(("text", "message"), [
    ("", "is empty"),
    ("- a\n- b\n", "must be a mapping, not a list"),
    ("models: []\n", "non-empty list"),
    ("models: {}\n", "non-empty list of models, not a mapping"),
    ("other: 1\n", "unknown field"),
    ("models: [\n", "not valid YAML at line"),
    ("a: &x [1]\nb: *x\n", "aliases"),
    ("models:\n  - name: m\n    model_path: /models\n    metadata: {created: 2024-13-45}\n",
     "not valid YAML"),
    ("{1: 2}\n", "keys must be strings"),
])
def test_invalid_documents(text, message):
    found = problems(text)
    assert any(message in m for m in found.values()), found


def test_required_models_key():
    assert problems("{}\n") == {"models": "required (a list of models)"}


def test_too_many_models():
    d = {"models": [dict(copy.deepcopy(MINIMAL["models"][0]), name=f"m{i}") for i in range(33)]}
    assert "at most 32" in problems(d)["models"]


def test_size_limit():
    big = yaml.safe_dump(doc(metadata={"description": "x" * 100})) + "#" * modeldef.MAX_BYTES
    assert "at most 65536" in problems(big)[""]
    assert parse(big, max_bytes=len(big.encode())).models[0].name == "m"


def test_not_utf8():
    assert "not UTF-8" in problems(b"models: \xff\xfe\n")[""]


def test_the_type_of_input_is_checked():
    with pytest.raises(TypeError):
        parse(MINIMAL)


def test_only_safe_yaml_is_read():
    """Python tags are not constructed: yaml.safe_load only."""
    found = problems("models: !!python/object/apply:os.system ['true']\n")
    assert "not valid YAML" in found[""]


# ---------------------------------------------------------------- pre-start actions
def actions(*items):
    return doc(service__pre_start_actions=list(items))


def test_accepted_actions():
    s = parse(yaml.safe_dump(actions(
        {"action": "run_command", "args": {"command": ["pip", "list"]}},
        {"action": "mkdir", "args": {"path": "/tmp/cache/./cache2/"}},
        {"action": "write_file", "args": {"filename": "/home/jovyan/a.txt", "body": "",
                                          "mode": "600", "append": True}},
        {"action": "log", "args": {"body": "hi", "debug": True}},
    ))).models[0].service
    got = [(a.action, dict(a.args)) for a in s.pre_start_actions]
    assert got == [("run_command", {"command": ("pip", "list")}),
                   ("mkdir", {"path": "/tmp/cache/cache2"}),
                   ("write_file", {"filename": "/home/jovyan/a.txt", "body": "", "mode": "600",
                                   "append": True}),
                   ("log", {"body": "hi", "debug": True})]
    assert set(modeldef.PRE_START_ACTIONS) == {"run_command", "mkdir", "write_file", "log"}


@pytest.mark.parametrize(("action", "path", "message"), [
    ({"action": "write_tempfile", "args": {"body": "x"}}, "[0].action", "variable substitution"),
    ({"action": "exec_on_host", "args": {}}, "[0].action", "not a pre-start action hubgrid runs"),
    ({"args": {}}, "[0].action", "required: one of run_command"),
    ({"action": "run_command", "args": {}}, "[0].args.command", "required"),
    ({"action": "run_command", "args": {"command": "ls -l"}}, "[0].args.command",
     "list of strings"),
    ({"action": "run_command", "args": {"command": []}}, "[0].args.command",
     "must name a program"),
    ({"action": "run_command", "args": {"command": ["ls"], "user": "root"}}, "[0].args.user",
     "unknown argument"),
    ({"action": "mkdir", "args": {"path": "/models/cache"}}, "[0].args.path",
     "under /home/jovyan or /tmp"),
    ({"action": "mkdir", "args": {"path": "/tmp/../etc"}}, "[0].args.path", "without '..'"),
    ({"action": "write_file", "args": {"filename": "/etc/profile", "body": "x"}},
     "[0].args.filename", "under /home/jovyan or /tmp"),
    ({"action": "write_file", "args": {"filename": "/tmp/a"}}, "[0].args.body", "required"),
    ({"action": "write_file", "args": {"filename": "/tmp/a", "body": "x", "mode": 644}},
     "[0].args.mode", "in quotes"),
    ({"action": "write_file", "args": {"filename": "/tmp/a", "body": "x", "mode": "7777"}},
     "[0].args.mode", "octal"),
    ({"action": "write_file", "args": {"filename": "/tmp/a", "body": "x", "append": "yes"}},
     "[0].args.append", "true or false"),
    ({"action": "log", "args": {"body": "x", "debug": 1}}, "[0].args.debug", "true or false"),
    ({"action": "log", "args": None}, "[0].args", "must be a mapping, not null"),
    ("log", "[0]", "must be a mapping, not a string"),
])
def test_refused_actions(action, path, message):
    found = problems(actions(action))
    key = "models[0].service.pre_start_actions" + path
    assert key in found, found
    assert message in found[key]


def test_actions_must_be_a_short_list():
    assert "list of actions" in problems(doc(service__pre_start_actions={"a": 1}))[
        "models[0].service.pre_start_actions"]
    many = [{"action": "log", "args": {"body": "x"}} for _ in range(33)]
    assert "at most 32" in problems(actions(*many))["models[0].service.pre_start_actions"]


# ---------------------------------------------------------------- metadata
def test_metadata_aliases_dates_and_extras():
    md = parse("""
models:
  - name: m
    model_path: /models
    metadata:
      created_at: 2024-05-01
      modified_at: "yesterday"
      version: "1.0"
      homepage: https://example.org
      min_resource: {cpu: 1.5, mem: 8G, gpu.shares: 0.25}
      description: null
""").models[0].metadata
    assert (md.created, md.last_modified, md.version) == ("2024-05-01", "yesterday", "1.0")
    assert dict(md.extra) == {"homepage": "https://example.org"}
    assert md.min_resource == {"cpu": Decimal("1.5"), "mem": "8G", "gpu.shares": Decimal("0.25")}
    assert md.description is None


# ---------------------------------------------------------------- arbitrary input
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20))
keys = st.sampled_from(["models", "name", "model_path", "service", "start_command", "port",
                        "health_check", "path", "interval", "max_retries", "metadata",
                        "pre_start_actions", "action", "args", "command", "min_resource",
                        "filename", "body", "mode", "shell", "version", "x"])
trees = st.recursive(scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(st.one_of(keys, st.text(max_size=5)), kids,
                                                max_size=5)), max_leaves=30)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HypothesisHealthCheck.too_slow])
@given(trees)
def test_arbitrary_yaml_gives_a_definition_or_the_typed_error(tree):
    try:
        parse(yaml.safe_dump(tree, allow_unicode=True))
    except ModelDefinitionError as e:
        assert e.problems and all(isinstance(p, FieldProblem) for p in e.problems)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200)))
def test_arbitrary_text_gives_a_definition_or_the_typed_error(data):
    try:
        parse(data)
    except ModelDefinitionError as e:
        assert e.problems


@settings(max_examples=200, deadline=None)
@given(st.fixed_dictionaries({}, optional={
    "service__port": scalars, "service__start_command": st.one_of(scalars, st.lists(scalars)),
    "service__health_check": st.dictionaries(keys, scalars, max_size=4),
    "model_path": scalars, "name": scalars,
    "metadata": st.dictionaries(keys, st.one_of(scalars, st.lists(scalars)), max_size=4)}))
def test_mutated_definitions_give_a_definition_or_the_typed_error(changes):
    try:
        d = parse(yaml.safe_dump(doc(**{k: v for k, v in changes.items() if v is not None})))
    except ModelDefinitionError as e:
        assert all(p.path.startswith("models[0]") for p in e.problems), e.problems
    else:
        s = d.models[0].service
        assert isinstance(s.port, int) and 1 <= s.port <= 65535
