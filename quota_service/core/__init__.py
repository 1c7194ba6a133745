"""The service's shared core, the bottom floor (it imports nothing of the
packages above it): the database and its models, typed errors, name, slot
and image-label rules, the request schemas, keys, and the authorization rules
(``authz``: the one home of every role decision), and which paths an
endpoint's URL passes on (``urlpaths``). Hub-side packages may import
``slots``, ``names``, ``schemas``, ``forwarded``, ``sharecheck`` and
``urlpaths`` from here, nothing else of the service."""
