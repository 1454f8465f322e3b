"""A scripted session: the clients of one script on one broker, its group ids, and what is
done around each request. One class serves the three scripted runs; each subclass keeps
only its own policy:

- golden generation (``conformance.suites.coordinator.golden.session``): a virtual-clock broker that is
  settled after every request, so what it records is deterministic;
- the differential run (``fakebroker.realkafka.differential``): every request is a step of
  the trace compared between Apache Kafka and the fake broker; a missing answer is recorded;
- the conformance harness (``conformance.harness.context``): recorded connections, and a
  missing answer is the target's violation.

    s = ScriptedSession(bootstrap, registry, token="my-run")
    w1 = await s.client("w1")
    member, parked = await w1.new_member(s.group())
"""

from __future__ import annotations

from typing import Any

from ..client import ClientError, KafkaConnection
from ..negotiation import ApiRanges, Need, VersionUnavailable, negotiate, own_ranges
from ..protocol import Registry, Struct
from .client import ClientDefaults, Pending, ScriptedClient


class ScriptedSession:
    defaults: ClientDefaults = ClientDefaults()
    # Each client's connection starts with ApiVersions (fakebroker.negotiation); off only
    # where the broker is our own and the record must hold the script's requests alone.
    negotiates: bool = True

    def __init__(self, bootstrap: str, registry: Registry, token: str, *,
                 timeout_s: float = 15.0) -> None:
        self.bootstrap = bootstrap
        self.registry = registry
        self.token = token
        self.timeout_s = timeout_s
        self.clients: list[ScriptedClient] = []
        self.groups: dict[str, str] = {}  # binding name (group.<name>) -> group id
        self.needs: dict[str, Need] = {}  # API -> the version range the script applies to
        self.who = "the script"  # who needs a version, in a VersionUnavailable's reason
        self.caps: dict[str, int] = {}  # API -> the highest version to send (a target's own cap)

    def group(self, name: str = "g") -> str:
        """A group id for this run (``<token>-<name>``), bound as ``group.<name>``."""
        gid = f"{self.token}-{name}"
        self.groups[f"group.{name}"] = gid
        return gid

    async def open(self, client_id: str) -> KafkaConnection:
        """A connection to the broker for one client."""
        return await KafkaConnection.open(self.bootstrap, client_id=client_id,
                                          registry=self.registry, timeout_s=self.timeout_s)

    async def client(self, client_id: str) -> ScriptedClient:
        conn = await self.open(client_id)
        try:
            ranges = (await negotiate(conn) if self.negotiates else own_ranges(self.registry)).capped(self.caps)
        except ClientError as e:
            await conn.close()
            self.no_versions(e)
            raise
        c = ScriptedClient(self, conn, client_id, ranges)
        self.clients.append(c)
        return c

    def version(self, ranges: ApiRanges, api: str, wanted: int | None = None) -> int:
        """The version ``api`` goes out at: ``wanted``, or the highest the connection's
        ``ranges`` allow within the script's needs and what the client builds."""
        lo, hi = self.needs.get(api, (0, None))
        top = self.defaults.highest.get(api)
        if top is not None:
            hi = top if hi is None else min(hi, top)
        try:
            return ranges.pick(api, lo, hi, wanted=wanted, who=self.who)
        except VersionUnavailable as e:
            self.unavailable(e)
            raise

    async def close(self) -> None:
        for c in self.clients:
            await c.close()

    # ------------------------------------------------------------------ the policy

    def sending(self, label: str, api: str, version: int, body: Struct) -> Any:
        """A request is about to be sent; returns what the session keeps of it (``step``)."""
        return None

    def sent(self, pending: Pending) -> None:
        """A request was handed to its connection."""

    def send_failed(self, pending: Pending, error: ClientError) -> None:
        """The connection refused the request (closed)."""
        raise error

    async def after_submit(self, pending: Pending) -> None:
        """What ``submit`` waits for once a request is sent (nothing by default)."""

    async def answer(self, pending: Pending, timeout_s: float | None) -> Any:
        """The response, bounded by ``timeout_s`` (None: the connection's timeout)."""
        try:
            ex = await pending.client.conn.wait(pending.future, timeout_s=timeout_s)
        except ClientError as e:
            return self.no_answer(pending, e)
        return self.answered(pending, ex.response)

    def answered(self, pending: Pending, response: Any) -> Any:
        return response

    def no_answer(self, pending: Pending, error: ClientError) -> Any:
        raise error

    async def close_client(self, client: ScriptedClient) -> None:
        await client.conn.close()

    def no_versions(self, error: ClientError) -> None:
        """The broker answered no ApiVersions on a new connection (raised by default)."""

    def unavailable(self, error: VersionUnavailable) -> None:
        """No version of an API the script sends is usable (raised by default)."""

    def unexpected(self, what: str, expected: Any, actual: Any) -> None:
        """A step a script relies on went otherwise (e.g. no MEMBER_ID_REQUIRED)."""
        raise AssertionError(f"{what}: expected {expected}, got {actual}")
