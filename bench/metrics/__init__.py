"""The Prometheus endpoint's answer time with a thousand running sessions."""
