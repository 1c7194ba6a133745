"""bench.gateway runs end to end (a few calls): real replicas' servers, real
haproxy, the gateway and configurable-http-proxy; every path answers and
its figures are printed."""

from __future__ import annotations

import shutil

import pytest

from bench.gateway.__main__ import PATHS, main


def test_the_gateway_benchmark_times_every_path(capsys):
    if shutil.which("configurable-http-proxy") is None:
        pytest.fail("configurable-http-proxy is not on PATH (source the test environment)")
    out = main(["--calls", "5", "--replicas", "2", "--stream"])
    for name in PATHS:
        assert out[name]["n"] == 5 and 0 < out[name]["p50"] <= out[name]["p99"]
    assert out["direct"]["added_p50"] == 0
    assert out["hub proxy"]["added_p50"] == out["hub proxy"]["p50"] - out["direct"]["p50"]
    printed = capsys.readouterr().out
    assert "streamed" in printed and all(name in printed for name in PATHS)


def test_bad_arguments_are_refused(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--calls", "many"])
    assert e.value.code == 2 and "invalid int value" in capsys.readouterr().err
