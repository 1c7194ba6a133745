"""hubgrid's serving data plane: the gateway that callers of
endpoints talk to, and the load balancer under it.

It owns no fact: endpoints, replicas and tokens live in the service, which
hands this process a route table (``GET serving/routes``, internal token).
It decides only who may call which endpoint with which token
(``access``), and sends each call to a healthy replica through haproxy
(``haproxycfg`` renders the balancer's configuration, ``balancer`` runs
it). Like the hub-side packages it imports nothing of the service but its
shared core, and talks to the service over HTTP.
"""
