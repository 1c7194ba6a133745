"""The usage query's time over a year of sessions, on SQLite and PostgreSQL."""
