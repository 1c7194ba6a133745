"""The embedded demo's settings of the hubgrid service (``make run``).

jupyterhub_config.py hands this file to the service (``HUBGRID_CONFIG_FILE``).
It registers this machine as the demo's node with a DECLARED GPU inventory:
``$HUBGRID_DEMO_GPUS`` devices (2 unless set; 0: none) of the model
``demo-declared``, 16 GiB each, the way Backend.AI's mock accelerator serves
its demos. They are NOT real devices: sessions are placed on them and get
``CUDA_VISIBLE_DEVICES`` and their share's limits, but no GPU is there to
compute on (Docker sessions get no device requests: the engine has no NVIDIA
runtime). A machine whose GPUs NVML finds keeps its real ones and gets no
declared ones.

A real cluster declares its nodes the same way, through
``c.HubgridService.nodes`` (docs/config-reference.md). The node is added at
a first start (a state directory made before keeps the node it has: remove
the state directory, or PATCH ``nodes/<name>`` with ``devices`` as a
superadmin).

So that a class-sized group can try the demo on one machine, the node
DECLARES at least ``$HUBGRID_DEMO_CPUS`` CPUs (16 unless set; 0: the real
count), more than most machines have: the sessions share the real cores
(local processes are not limited; Docker sessions get their share as a CPU
quota). The demo's resource presets start on ``small`` (0.5 CPU, 1 GiB), so
32 sessions fit the declared CPUs, memory permitting (the node declares the
machine's real memory).

``$HUBGRID_DEMO_SERVICE_CONFIG``, when set (jupyterhub_config.py passes its
``HUBGRID_SERVICE_CONFIG`` there), names a config file read after this one: its
settings win, ``nodes`` and ``register_local_node`` included.
"""

import logging
import os

from quota_service.runtime.bootstrap import local_node_spec

c = get_config()  # noqa: F821 (traitlets' config loader provides it)
log = logging.getLogger("HubgridService")

DEMO_GPU_MODEL = "demo-declared"
DEMO_GPU_MEMORY = 16 * 2**30

#: the demo's sizes: small by default, so that many people fit
DEMO_PRESETS = [
    {"name": "small", "slots": {"cpu": "0.5", "mem": "1G"}, "default": True,
     "description": "a notebook and a terminal"},
    {"name": "medium", "slots": {"cpu": "1", "mem": "2G"}},
    {"name": "large", "slots": {"cpu": "2", "mem": "4G"}},
]
c.HubgridService.resource_presets = DEMO_PRESETS

count = int(os.environ.get("HUBGRID_DEMO_GPUS") or "0")
cpus = int(os.environ.get("HUBGRID_DEMO_CPUS") or "0")
node = local_node_spec()
declared = False
if count:
    if node["devices"]:
        log.info("demo: node %s has %d GPUs found with NVML; no declared demo GPUs",
                 node["name"], len(node["devices"]))
    else:
        node["devices"] = [{"index": i, "model": DEMO_GPU_MODEL, "memory": DEMO_GPU_MEMORY}
                           for i in range(count)]
        declared = True
        log.warning("demo: node %s declares %d GPUs of the model %r: they are NOT real "
                    "devices (HUBGRID_DEMO_GPUS=0 declares none)",
                    node["name"], count, DEMO_GPU_MODEL)
if cpus > int(node["capacity"]["cpu"]):
    log.warning("demo: node %s declares %d CPUs (this machine has %s): sessions share the "
                "real ones (HUBGRID_DEMO_CPUS=0 declares the real count)",
                node["name"], cpus, node["capacity"]["cpu"])
    node["capacity"]["cpu"] = str(cpus)
    declared = True
if declared:
    # this machine is registered by ``nodes`` (with what it declares), not
    # by the discovery at first start
    c.HubgridService.register_local_node = False
    c.HubgridService.nodes = [node]

extra = os.environ.get("HUBGRID_DEMO_SERVICE_CONFIG")
if extra:
    if not os.path.isfile(extra):
        raise FileNotFoundError(f"HUBGRID_SERVICE_CONFIG: no such file {extra!r}")
    load_subconfig(extra)  # noqa: F821 (traitlets' config loader provides it)
