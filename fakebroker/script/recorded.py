"""A wire connection that records every request as it is sent, and its response when
(if ever) it arrives, in a ``Recorder``: the client's side of the one transcript format.

A request is recorded before any answer, so a peer that never answers still leaves the
request in the transcript (and the pcap made from it); the connection dying is a close
event (by the broker, with the reason), the client closing it one by the client.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..client import Exchange, KafkaConnection
from ..protocol import Struct
from .recorder import Recorder


class RecordedConnection(KafkaConnection):
    def __init__(self, host: str, port: int, *, name: str, recorder: Recorder,
                 now_ms: Callable[[], int], **kwargs: Any) -> None:
        """``name``: the connection's label in the transcript; ``now_ms``: the clock its
        events are stamped with (``vtime_ms``)."""
        super().__init__(host, port, **kwargs)
        self.name = name
        self.recorder = recorder
        self.now_ms = now_ms
        self._close_recorded = False

    def sent(self, body: Struct, version: int, correlation_id: int, frame: bytes) -> None:
        self.recorder.sent(self.registry, self.name, body, version, correlation_id,
                           self.client_id, frame, self.now_ms())

    def received(self, exchange: Exchange) -> None:
        self.recorder.response(self.registry, self.name, exchange.api_key, exchange.version,
                               exchange.correlation_id, exchange.response,
                               exchange.response_frame, self.now_ms())

    def failed(self, reason: str) -> None:
        self._record_close("broker", reason)

    async def close(self) -> None:
        self._record_close("client", None)
        await super().close()

    def _record_close(self, by: str, reason: str | None) -> None:
        if not self._close_recorded:
            self._close_recorded = True
            self.recorder.close(self.name, by, self.now_ms(), reason)
