"""The service's shared core: the database and its models, typed errors,
name and slot rules, the request schemas, keys, and the authorization rules
(``authz``: the one home of every role decision). Hub-side packages may
import ``slots``, ``names``, ``schemas`` and ``forwarded`` from here, nothing else
of the service."""
