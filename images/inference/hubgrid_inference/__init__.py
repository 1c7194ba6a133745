"""hubgrid's inference servers (images/inference/, docs/serving.md)."""
