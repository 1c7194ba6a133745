"""Benchmarks that print figures (not timed tests); see bench/openb."""
