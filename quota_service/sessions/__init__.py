"""What a compute session runs and leaves behind: the image registry (who
may use which image; scans of the Docker hosts, read with ``core.images``),
per-session logs, and following the Docker engines' container exits to
release allocations."""
