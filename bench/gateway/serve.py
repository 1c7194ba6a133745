"""The gateway with a fixed route table, for bench.gateway (a child process):

    python -m bench.gateway.serve PORT RUN_DIR TABLE_JSON

The product's gateway reads its table from the service (gateway/sync.py);
here the table is given, so what is timed is the gateway and haproxy alone.
Prints "ready" once haproxy serves the table.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from gateway import table as tablelib
from gateway.app import State, make_app
from gateway.balancer import Balancer


async def main(port: int, run_dir: str, table_file: str) -> None:
    balancer = Balancer(Path(run_dir))
    state = State(balancer.socket_of, max_age=float("inf"))  # its table is set once, never refreshed
    t = tablelib.read(json.loads(Path(table_file).read_text()))
    await balancer.apply(t.routes)
    await state.set_table(t)
    make_app("/services/hubgrid-gateway/", state).listen(port, "127.0.0.1")
    print("ready", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await balancer.stop()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3]))
