"""The REST API: thin tornado handlers over the managers, one module per
domain, the route table (``routes``) and the OpenAPI document built from
it. Handlers parse, call one manager function off the event loop, and
answer; every decision is made below them."""
