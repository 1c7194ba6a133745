"""The service process: first-start set-up, the periodic passes (queue,
hub reconciliation, log purge, folder usage), and its life next to the hub
that manages it (pid file, exiting with the parent)."""
