"""The admin pages' figures in a real Chromium through the real hub."""
