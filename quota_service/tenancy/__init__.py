"""Who is who: domains, projects, memberships, users and keypairs
(``accounts``), resource policies and the within-domain limit rule
(``policies``), the last-superadmin guard, the access log (``audit``) and the
mirror of all of it into JupyterHub's users and groups (``hubmirror``)."""
