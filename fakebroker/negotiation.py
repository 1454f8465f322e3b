"""API version negotiation: the one place that learns what a broker speaks and picks the
version each request goes out at.

Every suite connection starts with ApiVersions (KIP-35; KIP-511 for v3). The broker's
advertised ranges, intersected with the codec's, are ``ApiRanges``; a request is sent at
the highest version both sides support within what the case needs (``pick``). Outside that
range the request is not sent at all (``VersionUnavailable``): the caller reports the case
NOT-APPLICABLE with the reason, never a failure of the broker.

    ranges = await negotiate(conn)               # once per connection
    v = ranges.pick("JoinGroup", lo=4, hi=9)     # 6 on a broker advertising JoinGroup 0-6

The pure part (``ApiRanges``, ``from_advertised``, ``pick``, ``need_text``) does no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .protocol import Registry

if TYPE_CHECKING:
    from .client import KafkaConnection

API_VERSIONS = "ApiVersions"
UNSUPPORTED_VERSION = 35
# What the suite says of itself in ApiVersions v3 (KIP-511 asks for a name and a version).
SOFTWARE_NAME = "connect-conformance"
SOFTWARE_VERSION = "1"

Range = tuple[int, int]
Need = tuple[int, "int | None"]  # a requirement's range: (lowest, highest or None: open)


class VersionUnavailable(Exception):
    """No version of ``api`` both sides support lies within what is needed; ``str(e)`` is
    the reason a case is NOT-APPLICABLE for ("broker supports JoinGroup 0-6; needs v7+")."""

    def __init__(self, api: str, reason: str) -> None:
        super().__init__(reason)
        self.api = api


@dataclass(frozen=True)
class ApiRanges:
    """What a broker advertised (``advertised``, by API name, as it said it) and what both
    sides support (``usable``: the advertised range cut to the codec's)."""

    advertised: Mapping[str, Range] = field(default_factory=dict)
    usable: Mapping[str, Range] = field(default_factory=dict)
    via: int = 3  # the ApiVersions version that was answered
    caps: Mapping[str, int] = field(default_factory=dict)  # the target's own maxima (capped)

    def describe(self, api: str) -> str:
        """``broker supports JoinGroup 0-6`` / ``broker does not advertise DescribeGroups``
        (``, certified up to v5`` when the target caps it)."""
        r = self.advertised.get(api)
        if r is None:
            return f"broker does not advertise {api}"
        cap = f", certified up to v{self.caps[api]} (the target's max_versions)" if api in self.caps else ""
        return f"broker supports {api} {r[0]}-{r[1]}{cap}"

    def capped(self, caps: Mapping[str, int]) -> ApiRanges:
        """These ranges with the target's declared maximum versions (``[max_versions]``: a
        version a broker advertises but does not handle, certified separately)."""
        if not caps:
            return self
        usable = {api: (lo, min(hi, caps.get(api, hi))) for api, (lo, hi) in self.usable.items()
                  if lo <= caps.get(api, hi)}
        return ApiRanges(self.advertised, usable, self.via, {**self.caps, **caps})

    def pick(self, api: str, lo: int = 0, hi: int | None = None, *, wanted: int | None = None,
             who: str = "the case") -> int:
        """The version to send ``api`` at: ``wanted`` if given and usable, else the highest
        usable one in [lo, hi]; raises ``VersionUnavailable`` with the reason (naming ``who``
        needs it) otherwise."""
        r = self.usable.get(api)
        if wanted is not None:
            if r is not None and r[0] <= wanted <= r[1]:
                return wanted
            raise VersionUnavailable(api, f"{self.describe(api)}; {who} needs {api} v{wanted}")
        if r is None or min(r[1], r[1] if hi is None else hi) < max(lo, r[0]):
            raise VersionUnavailable(api, f"{self.describe(api)}; {who} needs {need_text(api, (lo, hi))}")
        return r[1] if hi is None else min(r[1], hi)


def gap(ranges: ApiRanges, needs: Mapping[str, Need], who: str) -> str | None:
    """Why a statement that applies to ``needs`` cannot be checked on a broker of
    ``ranges`` (the NOT-APPLICABLE reason), or None."""
    for api, (lo, hi) in needs.items():
        try:
            ranges.pick(api, lo, hi, who=who)
        except VersionUnavailable as e:
            return str(e)
    return None


def refusal(ranges: ApiRanges, api: str, version: int, how: str) -> tuple[bool, str]:
    """One outcome per cause: a broker that refused a request at ``version`` (``how``:
    "closed the connection after", "answered UNSUPPORTED_VERSION to") either was sent a
    version it did not advertise (True: NOT-APPLICABLE, the suite's choice) or broke its
    own advertisement (False: BROKEN). Never a FAIL of the requirement under test."""
    r = ranges.advertised.get(api)
    if r is None or not r[0] <= version <= r[1]:
        return True, f"{ranges.describe(api)}; the broker {how} {api} v{version}"
    return False, (f"the broker {how} {api} v{version}, which it advertises ({api} {r[0]}-{r[1]}; "
                   "a target's [max_versions] certifies it below a version it does not handle)")


def need_text(api: str, need: Need) -> str:
    """``JoinGroup v4+``, ``SyncGroup v0-4``, ``LeaveGroup v3``."""
    lo, hi = need
    if hi is None:
        return f"{api} v{lo}+"
    return f"{api} v{lo}" if lo == hi else f"{api} v{lo}-{hi}"


def from_advertised(advertised: Mapping[int, Range], registry: Registry, via: int = 3) -> ApiRanges:
    """The ranges of an ApiVersions answer (api key -> (min, max)) against the codec's;
    keys the codec does not know are left out."""
    named: dict[str, Range] = {}
    usable: dict[str, Range] = {}
    for key, (bmin, bmax) in sorted(advertised.items()):
        try:
            mt = registry.request(key)
        except KeyError:
            continue
        api = registry.api_name(key)
        named[api] = (bmin, bmax)
        lo, hi = max(bmin, mt.lowest), min(bmax, mt.highest)
        if lo <= hi:
            usable[api] = (lo, hi)
    return ApiRanges(named, usable, via)


def own_ranges(registry: Registry) -> ApiRanges:
    """Every API at the codec's full range: for a peer known to speak what we speak (the
    in-process broker golden generation records on)."""
    out: dict[str, Range] = {}
    for key, mt in registry.requests.items():
        out[registry.api_name(key)] = (mt.lowest, mt.highest)
    return ApiRanges(out, out)


def advertised_of(response: Any) -> dict[int, Range]:
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}


def request(registry: Registry, version: int) -> Any:
    f: dict[str, Any] = {}
    if version >= 3:
        f = dict(client_software_name=SOFTWARE_NAME, client_software_version=SOFTWARE_VERSION)
    return registry[f"{API_VERSIONS}Request"].new(**f)


def request_frame(registry: Registry, version: int, correlation_id: int) -> bytes:
    """An ApiVersions request frame (size prefix included), for a raw connection."""
    from .protocol.framing import encode_request
    return encode_request(registry, request(registry, version), version, correlation_id,
                          SOFTWARE_NAME, size_prefix=True)


def answer_of(registry: Registry, frame: bytes, version: int) -> ApiRanges | None:
    """The ranges an ApiVersions answer frame (size prefix included) at ``version`` gives;
    None when the broker refused that version (ask again at v0)."""
    from .protocol import DecodeError
    from .protocol.framing import decode_response
    try:
        r = decode_response(registry, frame[4:], registry[f"{API_VERSIONS}Request"].api_key or 18,
                            version, base=4).body
    except DecodeError:
        return None
    return from_advertised(advertised_of(r), registry, version) if r.error_code == 0 else None


async def probe(bootstrap: str, registry: Registry, caps: Mapping[str, int] | None = None,
                timeout_s: float = 10.0) -> ApiRanges:
    """A broker's ranges (with the target's ``caps``), on a connection of their own."""
    from .client import KafkaConnection
    async with await KafkaConnection.open(bootstrap, client_id=SOFTWARE_NAME, registry=registry,
                                          timeout_s=timeout_s) as conn:
        return (await negotiate(conn)).capped(caps or {})


async def negotiate(conn: KafkaConnection) -> ApiRanges:
    """ApiVersions on ``conn``: v3, then v0 when the broker refuses v3 (KIP-511: it answers
    UNSUPPORTED_VERSION in v0's layout, which need not decode as v3). Raises ClientError
    when the broker answers neither."""
    from .client import ClientError
    reg = conn.registry
    try:
        r = (await conn.send(request(reg, 3), 3)).response
        if r.error_code == 0:
            return from_advertised(advertised_of(r), reg, 3)
        if r.error_code != UNSUPPORTED_VERSION:
            raise ClientError(f"ApiVersions v3 answered with error code {r.error_code}")
    except ClientError as e:
        if not str(e).startswith("undecodable"):
            raise
    r = (await conn.send(request(reg, 0), 0)).response
    if r.error_code != 0:
        raise ClientError(f"ApiVersions v0 answered with error code {r.error_code}")
    return from_advertised(advertised_of(r), reg, 0)
