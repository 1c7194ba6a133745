"""Answer times of the admin pages' listings (issue #13)."""
