"""The hub and a local Jupyter server start without compiling
rfc3987_syntax's Lark grammars (scripts/install.sh leaves it out, as the
session images do): 1.4-1.6 CPU seconds at every start, for JSON-schema
formats ("iri") that no JupyterHub or Jupyter schema uses."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = (
    "import sys, importlib; importlib.import_module(sys.argv[1]); "
    "print(sorted(m for m in ('rfc3987_syntax', 'lark') if m in sys.modules))"
)


@pytest.mark.parametrize("module", ["jupyterhub.app", "jupyter_server.serverapp", "jupyter_events"])
def test_starting_imports_no_lark_grammar(module):
    out = subprocess.run([sys.executable, "-c", PROBE, module], capture_output=True,
                         text=True, check=True, timeout=120).stdout
    assert out.strip() == "[]", f"{module} imports {out.strip()}"


def test_iri_formats_unchecked_instead_of_failing():
    """Without it jsonschema leaves the iri formats unchecked: a schema that
    names one still loads and validates (types are still checked)."""
    import jsonschema
    from jupyter_events.validators import draft7_format_checker

    schema = {"type": "string", "format": "iri"}
    jsonschema.validate("http://example.invalid/\u00fc", schema, format_checker=draft7_format_checker)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(3, schema, format_checker=draft7_format_checker)
