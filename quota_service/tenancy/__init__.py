"""tenancy."""
