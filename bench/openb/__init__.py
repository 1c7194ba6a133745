"""The openb benchmark: the service's placement code over the FGD paper's trace.

See ``python -m bench.openb --help`` and shared/data/openb/PROTOCOL.md.
"""
