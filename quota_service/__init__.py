"""The hubgrid service: the single owner of tenancy, resource policies, the
allocation ledger, the scheduler, vfolders, usage and audit, served as a
hub-managed JupyterHub service (docs/architecture.md).

- ``core``: the shared vocabulary -- database, models, errors, names, slots,
  request schemas, keys and the authorization rules;
- ``tenancy``: domains, projects, users, keypairs, policies, audit, hub mirror;
- ``scheduling``: admission, queue order, inventory, placement, the ledger;
- ``sessions``: session images and their registry, session logs, Docker events;
- ``storage``: vfolders, their hosts, shares, mounts and files;
- ``api``: the REST handlers and the route table;
- ``runtime``: the process -- first start, periodic passes, life next to the hub;
- ``app``: the settings (traitlets) and the wiring.
"""
