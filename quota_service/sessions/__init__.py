"""What a compute session runs and leaves behind: session images (labels,
the registry, scans of the Docker hosts), per-session logs, and following
the Docker engines' container exits to release allocations."""
