"""When a batch session's command may start: once the hub has found its
server up and routed it, so that a command that ends at once does not end
the session while the hub still waits for it. A backend that gives its
sessions ``HUBGRID_BATCH_GO_FILE`` overrides ``batch_go`` (it creates that
file; the session's command waits for it, at most ``HUBGRID_BATCH_WAIT``).
"""

from __future__ import annotations

import asyncio


class BatchGoMixin:
    """For HubgridSpawnerMixin (``session_env``, ``ready``, ``http_timeout``)."""

    async def batch_go(self) -> None:
        """Create the session's ``HUBGRID_BATCH_GO_FILE`` (a backend that sets
        that variable overrides this): the batch command starts then."""

    def start_polling(self):
        # start() has returned: the go comes once the hub has routed the server
        super().start_polling()
        if self.session_env.get("HUBGRID_BATCH_GO_FILE"):
            task = asyncio.ensure_future(self._go_when_ready())
            task.add_done_callback(self._batch_go_done)

    async def _go_when_ready(self) -> None:
        deadline = asyncio.get_running_loop().time() + self.http_timeout + 60
        while not self.ready:
            if self.server is None or asyncio.get_running_loop().time() > deadline:
                return  # the start failed or was abandoned: nothing to start
            await asyncio.sleep(0.2)
        await self.batch_go()

    def _batch_go_done(self, task) -> None:
        if not task.cancelled() and task.exception() is not None:
            self.log.warning("could not start the batch command of %s: %s (it starts "
                             "after HUBGRID_BATCH_WAIT)", self._log_name, task.exception())
