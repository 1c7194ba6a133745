"""The service process: first-start set-up (``bootstrap``), the periodic
passes and background work (``passes``: queue, hub reconciliation, log purge,
folder usage, image scan, container exits), the entry points the handlers and
passes call over the service's settings (``service``), and its life next to
the hub that manages it (``lifecycle``: pid file, exiting with the parent)."""
