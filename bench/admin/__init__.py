"""Answer times of the admin pages' listings."""
