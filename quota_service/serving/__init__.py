"""Model serving (issue 23): what an inference endpoint runs and how it is
checked. For now the pure reading of a model folder's ``model-definition.yaml``
(``modeldef``); endpoints, replicas, routing, tokens and the gateway build on it.
Imports only ``core`` (tests/test_layout.py)."""
