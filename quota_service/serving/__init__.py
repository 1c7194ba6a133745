"""Model serving: what an inference endpoint runs and how it is
checked. The pure rules: the reading of a model folder's
``model-definition.yaml`` (``modeldef``, ``fields``, ``prestart``), bearer
tokens (``tokens``) and whether replicas fit the caller's limits (``fit``).
The IO edges: the endpoints manager (``endpoints``) and its checks before a
create (``checks``), which stand on the ledger, the registry and the folders
(tests/test_layout.py). Replicas, routing and the gateway build on these."""
