"""The recording interface: what the broker's pipeline reports to a recorder attached with
``FakeBroker.record``. ``fakebroker.script.recorder.Recorder`` implements it (transcripts);
a test may attach anything with these methods."""

from __future__ import annotations

from typing import Any, Protocol

from ..protocol import Registry, Struct


class Recording(Protocol):
    requests_seen: int

    def begin(self, *, host: str, port: int, node_id: int, clock: str,
              coordinator: Any | None = None) -> None:
        """The broker listens (called once, before any frame)."""

    def request(self, registry: Registry, conn: int | str, frame: bytes, now_ms: int, *,
                header: Struct | None = None, body: dict[str, Any] | None = None,
                error: str | None = None, hooks: list[str] | None = None) -> Any:
        """A request frame as read (no size prefix), decoded (``body``: its JSON form
        before any hook edited it) or not (``error``)."""

    def response(self, registry: Registry, conn: int | str, api_key: int, version: int,
                 correlation_id: int, body: Struct, frame: bytes, now_ms: int,
                 hooks: list[str] | None = None) -> Any:
        """A response frame (size prefix included) about to be written."""

    def close(self, conn: int | str, by: str, now_ms: int, reason: str | None = None,
              hooks: list[str] | None = None) -> Any:
        """A connection closed (``by``: client or broker)."""

    def close_sink(self) -> None:
        """Recording stopped: release whatever it writes to."""
