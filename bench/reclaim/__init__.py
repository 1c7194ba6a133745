"""How late idle reclamation stops sessions after their deadline."""
