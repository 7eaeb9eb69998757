"""A kernel manager for headless notebook execution that cannot stall until the cell timeout.

The stall (the shape of jupyter/nbclient#312): executing a notebook under
nbclient, a cell whose ipywidgets ``Output`` captures output (``StrategyComparison`` in
``03_compare_strategies``) sometimes finished in the kernel at once but the client only went on
after exactly its cell timeout (300 s), without an error. Root cause (reproduced without a kernel in
``tests/widgets/test_kernel.py``):

1. nbclient waits for a cell's ``execute_reply`` with one ``await shell_channel.get_msg(timeout=T)``:
   a ``zmq.asyncio`` poll that wakes when the shell socket's ``zmq.FD`` becomes readable. That FD is
   *edge-triggered*: it signals once, and whoever next processes the socket's pending commands
   consumes the signal.
2. While that poll is pending, nbclient's mimic of the ``Output`` widget answers every captured output
   with a ``comm_msg`` "update" sent on the *same* shell socket (``OutputWidget.sync_state``).
   jupyter_client's ``Session.send`` sends through a *synchronous* shadow of the asyncio socket, so
   pyzmq's asyncio layer never re-checks ``zmq.EVENTS`` after that send.
3. When the reply has just arrived as that send happens (the client is a little behind the kernel:
   a loaded machine), the send's command processing consumes the FD's wake-up; the message sits in
   the socket and the poll is resolved only by its timeout timer (whose ``poll(0)`` then finds it).

Instrumented evidence (a cell that prints into an ``Output`` widget, run 20 times, cell timeout
10 s): 7 of 20 runs stalled; in every stall the ``execute_reply`` was sent by the kernel 0.01–0.04 s
after the poll began, picked up 10.0 s later, and the client had sent a shell ``comm_msg`` 1–34 ms
after the reply arrived. ``03_compare_strategies`` with each widget state sync delayed 0.3 s (a
lagging client) stalls by exactly the cell timeout on every run.

The workaround, where it lives (the client side; shared by the notebook tests and the papermill
sweeps): the shell and IOPub channels wait in slices of `SLICE_S`. Each slice ends with a real
``zmq_poll`` of the socket (pyzmq's timeout path), which sees a message whatever happened to the FD's
edge, so a lost wake-up costs at most one slice instead of the whole cell timeout. The overall
timeout is unchanged: `Empty` is raised only once the caller's deadline has passed.
"""

from __future__ import annotations

import time
from queue import Empty
from typing import Any

from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.manager import AsyncKernelManager
from traitlets import DottedObjectName, Type

__all__ = ["SLICE_S", "SlicedChannel", "StallFreeKernelClient", "StallFreeKernelManager", "client_kwargs"]

#: Longest a wake-up lost to the edge-triggered FD can delay a message.
SLICE_S = 0.25


class SlicedChannel(AsyncZMQSocketChannel):
    """An async channel whose ``get_msg`` polls in slices of `SLICE_S` up to the caller's timeout."""

    async def get_msg(self, timeout: float | None = None) -> dict[str, Any]:  # type: ignore[override]
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            step = SLICE_S if remaining is None else max(0.0, min(SLICE_S, remaining))
            try:
                return await super().get_msg(timeout=step)
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise


class StallFreeKernelClient(AsyncKernelClient):
    """`AsyncKernelClient` with `SlicedChannel` shell and IOPub channels."""

    shell_channel_class = Type(SlicedChannel)
    iopub_channel_class = Type(SlicedChannel)


class StallFreeKernelManager(AsyncKernelManager):
    """`AsyncKernelManager` whose clients are `StallFreeKernelClient` (pass it as nbclient's or
    papermill's ``kernel_manager_class``)."""

    # AsyncKernelManager gives ``client_factory`` a default of its own, so both traits are set here.
    client_class: DottedObjectName = DottedObjectName(f"{__name__}.StallFreeKernelClient")
    client_factory: Type[type[AsyncKernelClient], type[AsyncKernelClient]] = Type(
        default_value=StallFreeKernelClient, klass=AsyncKernelClient
    )


def client_kwargs() -> dict[str, Any]:
    """Keyword arguments for ``nbclient.NotebookClient`` / ``papermill.execute_notebook``."""
    return {"kernel_manager_class": StallFreeKernelManager}
