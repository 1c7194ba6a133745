"""Idle reclamation: the rules that decide when a session is
reclaimed (pure: ``rules``, ``window``, ``activity``), where their facts come
from (``sources``: Docker stats, GPU sources, the hub), and the periodic pass
that warns, records and stops (``store``, ``reclaimpass``)."""
