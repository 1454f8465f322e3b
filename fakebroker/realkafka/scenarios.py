"""Classic group scenarios for the differential checks: JoinGroup / SyncGroup / Heartbeat /
LeaveGroup flows and their error answers, DescribeGroups, ListGroups, static membership,
session and rebalance timeouts; plus ApiVersions of the group APIs.

Every scenario is deterministic on a real broker: a request expected to park is given
time to arrive (``Worker.submit`` settles), timeouts are short but leave a wide margin
(a 1 s session is checked 3 s later). Both brokers must be started with the settings of
``KafkaSettings()`` / ``twin_config()``: no initial rebalance delay, session timeouts
from 1 s.
"""

from __future__ import annotations

from .differential import Scenario, Script
from .settings import KafkaSettings
from ..protocol import default_registry

SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str):  # type: ignore[no-untyped-def]
    def register(fn: Scenario) -> Scenario:
        SCENARIOS[name] = fn
        return fn
    return register


def connect_metadata(url: str, offset: int = 5) -> bytes:
    mt = default_registry()["ConnectProtocolMetadata"]
    return mt.encode_versioned(mt.new(url=url, config_offset=offset, allocation=None), 1)


def connect_protocols(url: str) -> list[tuple[str, bytes]]:
    m = connect_metadata(url)
    return [("sessioned", m), ("compatible", m), ("default", m)]


async def stable_member(s: Script, w, group: str, **kw) -> tuple[str, int]:  # type: ignore[no-untyped-def]
    """A member alone in a new group: the two-step join, the leader's sync."""
    member, parked = await w.new_member(w.client_id, group, **kw)
    j = await w.result(parked)
    gen = j.generation_id
    await w.sync(f"{w.client_id}: leader sync", group, member, gen,
                 assignments={member: b"A-" + w.client_id.encode()},
                 protocol_name=j.protocol_name)
    return member, gen


async def two_member_group(s: Script, group: str, **kw) -> tuple:  # type: ignore[no-untyped-def]
    """w1 stable alone, then w2 joins; w1 learns from a heartbeat, rejoins; both sync."""
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1, gen = await stable_member(s, w1, group, **kw)
    m2, parked2 = await w2.new_member("w2", group, **kw)
    hb = await w1.heartbeat("w1: heartbeat during the rebalance", group, m1, gen)
    j1 = await w1.join("w1: rejoin", group, m1, **kw)
    j2 = await w2.result(parked2)
    gen2 = j1.generation_id
    follower = await w2.sync_later("w2: follower sync (parks)", group, m2, gen2,
                                   protocol_name=j1.protocol_name)
    await w1.sync("w1: leader sync", group, m1, gen2, assignments={m1: b"A1", m2: b"A2"},
                  protocol_name=j1.protocol_name)
    await w2.result(follower)
    assert hb is not None and j2 is not None
    return w1, w2, m1, m2, gen2


# ---------------------------------------------------------------------------- happy paths


@scenario("first-member")
async def first_member(s: Script) -> None:
    g = s.group()
    w1 = await s.client("w1")
    m1, gen = await stable_member(s, w1, g, protocols=connect_protocols("http://w1:8083/"))
    await w1.heartbeat("w1: heartbeat", g, m1, gen)
    await w1.describe("describe Stable", g)
    await w1.describe("describe v0", g, version=0)
    await w1.list_groups("list v5")
    await w1.list_groups("list v0", version=0)
    await w1.leave("w1: leave", g, m1)
    await w1.describe("describe after the last member left", g)
    await w1.heartbeat("w1: heartbeat after leaving", g, m1, gen)


@scenario("second-member-rebalance")
async def second_member(s: Script) -> None:
    g = s.group()
    w1, w2, m1, m2, gen = await two_member_group(s, g)
    await w1.heartbeat("w1: heartbeat", g, m1, gen)
    await w2.heartbeat("w2: heartbeat", g, m2, gen)
    await w1.describe("describe two members", g)
    await w2.leave("w2: leave", g, m2)
    await w1.heartbeat("w1: heartbeat after w2 left", g, m1, gen)
    j = await w1.join("w1: rejoin alone", g, m1)
    await w1.sync("w1: sync alone", g, m1, j.generation_id, assignments={m1: b"A1"})
    await w1.describe("describe one member", g)


@scenario("protocol-vote")
async def protocol_vote(s: Script) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    p1 = [("sessioned", b"s1"), ("compatible", b"c1"), ("default", b"d1")]
    p2 = [("compatible", b"c2"), ("default", b"d2")]
    m1, gen = await stable_member(s, w1, g, protocols=p1)
    m2, parked = await w2.new_member("w2", g, protocols=p2)
    j1 = await w1.join("w1: rejoin", g, m1, protocols=p1)
    await w2.result(parked)
    await w1.sync("w1: sync with the voted protocol", g, m1, j1.generation_id,
                  assignments={m1: b"x", m2: b"y"}, protocol_name=j1.protocol_name)
    await w1.describe("describe after the vote", g)


@scenario("follower-rejoin-and-leader-rejoin")
async def rejoins(s: Script) -> None:
    g = s.group()
    w1, w2, m1, m2, gen = await two_member_group(s, g)
    # A follower rejoining with unchanged metadata while Stable: answered at once.
    await w2.join("w2: rejoin unchanged (Stable)", g, m2)
    # The leader rejoining triggers a rebalance.
    parked = await w1.join_later("w1: leader rejoins (parks)", g, m1)
    await w2.heartbeat("w2: heartbeat sees the rebalance", g, m2, gen)
    await w2.join("w2: rejoin", g, m2)
    await w1.result(parked)
    await w1.describe("describe CompletingRebalance", g)


@scenario("metadata-change")
async def metadata_change(s: Script) -> None:
    g = s.group()
    w1, w2, m1, m2, gen = await two_member_group(s, g)
    parked = await w2.join_later("w2: rejoin with new metadata (parks)", g, m2,
                                 protocols=[("sessioned", b"\x00\x02changed")])
    await w1.heartbeat("w1: heartbeat sees the rebalance", g, m1, gen)
    j1 = await w1.join("w1: rejoin", g, m1)
    await w2.result(parked)
    assert j1 is not None


# ---------------------------------------------------------------------------- errors


async def member_errors(s: Script, w1, g: str, send, wrong_generation: int) -> tuple[str, int]:  # type: ignore[no-untyped-def]
    """``send`` (w1's sync or heartbeat) with an empty group id and to an unknown group; then,
    w1 stable alone in ``g``, as an unknown member and with a wrong generation (``gen +
    wrong_generation``). Returns w1's member id and generation."""
    await send("empty group id", "", "m", 1)
    await send("unknown group", s.group("none"), "m", 1)
    m1, gen = await stable_member(s, w1, g)
    await send("unknown member", g, "w1-unknown", gen)
    await send("wrong generation", g, m1, gen + wrong_generation)
    return m1, gen


@scenario("join-errors")
async def join_errors(s: Script) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    await w1.join("empty group id", "")
    await w1.join("session below the minimum", g, session_ms=500)
    await w1.join("session above the maximum", g, session_ms=2_000_000)
    await w1.join("unknown member id, new group", s.group("new"), "w1-unknown")
    await w1.join("empty protocol type", s.group("pt"), protocol_type="")
    await w1.join("no protocols", s.group("np"), protocols=[])
    m1, _ = await stable_member(s, w1, g)
    await w2.join("other protocol type", g, protocol_type="consumer")
    await w2.join("no common protocol", g, protocols=[("range", b"")])
    await w2.join("unknown member id, existing group", g, "w2-unknown")
    await w2.join("v3: no member id required", s.group("v3"), version=3)
    await w2.join("v0: a join without rebalance timeout", s.group("v0"), version=0)


@scenario("sync-errors")
async def sync_errors(s: Script) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1, gen = await member_errors(s, w1, g, w1.sync, wrong_generation=5)
    await w1.sync("other protocol type", g, m1, gen, protocol_type="consumer")
    await w1.sync("other protocol name", g, m1, gen, protocol_name="range")
    await w1.sync("no protocol type and name (v5 nulls)", g, m1, gen, protocol_type=None, protocol_name=None)
    await w1.sync("v0", g, m1, gen, version=0)
    m2, parked = await w2.new_member("w2", g)
    await w1.sync("sync during PreparingRebalance", g, m1, gen)
    await w1.join("w1: rejoin", g, m1)
    await w2.result(parked)


@scenario("heartbeat-errors")
async def heartbeat_errors(s: Script) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1, gen = await member_errors(s, w1, g, w1.heartbeat, wrong_generation=1)
    await w1.heartbeat("v0", g, m1, gen, version=0)
    m2, parked = await w2.new_member("w2", g)
    await w1.heartbeat("during PreparingRebalance", g, m1, gen)
    j1 = await w1.join("w1: rejoin", g, m1)
    await w2.result(parked)
    await w1.heartbeat("during CompletingRebalance, new generation", g, m1, j1.generation_id)
    await w1.heartbeat("during CompletingRebalance, old generation", g, m1, gen)


@scenario("leave-errors")
async def leave_errors(s: Script) -> None:
    g = s.group()
    w1 = await s.client("w1")
    await w1.leave("empty group id", "", "m")
    await w1.leave("unknown group (batch)", s.group("none"), "m")
    await w1.leave("unknown group (v0)", s.group("none"), "m", version=0)
    m1, gen = await stable_member(s, w1, g)
    await w1.leave("batch partly unknown", g, "w1-unknown", ("", "no-such-instance"))
    await w1.leave("v0 unknown member", g, "w1-unknown", version=0)
    await w1.leave("v0 the member", g, m1, version=0)
    await w1.describe("describe after a v0 leave", g)


@scenario("static-membership")
async def static_membership(s: Script) -> None:
    g = s.group()
    w1, w1b, w2 = await s.client("w1"), await s.client("w1b"), await s.client("w2")
    j = await w1.join("w1: static join", g, instance="instance-1")
    m1 = j.member_id
    await w1.sync("w1: leader sync", g, m1, j.generation_id, instance="instance-1",
                  assignments={m1: b"S1"})
    await w1.describe("describe a static member", g)
    # The same instance restarts: a new member id replaces the old one, no rebalance.
    j2 = await w1b.join("w1b: same instance, empty member id", g, instance="instance-1")
    await w1.heartbeat("old member id of the instance", g, m1, j.generation_id, instance="instance-1")
    await w1b.heartbeat("new member id of the instance", g, j2.member_id, j2.generation_id,
                        instance="instance-1")
    await w2.join("unknown instance with a member id", g, "w2-x", instance="instance-2")
    await w1b.leave("leave by instance id", g, ("", "instance-1"))
    await w1b.describe("describe after the static leave", g)


@scenario("session-expiry")
async def session_expiry(s: Script) -> None:
    g = s.group()
    w1 = await s.client("w1")
    m1, gen = await stable_member(s, w1, g, session_ms=1000)
    await s.sleep(3.0)
    await w1.describe("describe after the session expired", g)
    await w1.heartbeat("heartbeat after expiry", g, m1, gen)


@scenario("rebalance-timeout")
async def rebalance_timeout(s: Script) -> None:
    g = s.group()
    w1, w2, m1, m2, gen = await two_member_group(s, g, rebalance_ms=1500, session_ms=30_000)
    parked = await w2.join_later("w2: rejoin triggers a rebalance (parks)", g, m2,
                                 rebalance_ms=1500, session_ms=30_000)
    await s.sleep(3.0)  # w1 never rejoins: removed when the rebalance times out
    await w2.result(parked)
    await w1.heartbeat("w1: heartbeat after removal", g, m1, gen)
    await w1.describe("describe after the timeout", g)


@scenario("describe-and-list")
async def describe_and_list(s: Script) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    await w1.describe("unknown group v5", s.group("none"))
    await w1.describe("unknown group v6", s.group("none"), version=6)
    await w1.describe("empty group id v5", "")
    m1, gen = await stable_member(s, w1, g)
    m2, parked = await w2.new_member("w2", g)
    await w1.describe("batch: PreparingRebalance and unknown", g, s.group("none"))
    await w1.list_groups("list v4 filter PreparingRebalance", version=4, states=["PreparingRebalance"])
    await w1.join("w1: rejoin", g, m1)
    await w2.result(parked)
    await w1.describe("describe v6 with operations", g, version=6, ops=True)
    await w1.list_groups("list v5 filter CompletingRebalance", states=["CompletingRebalance"])
    await w1.list_groups("list v5 filter type classic", types=["classic"])
    await w1.list_groups("list v5 filter type consumer", types=["consumer"])
    await w1.list_groups("list v5 filter unknown state", states=["NoSuchState"])
    await w1.list_groups("list v3", version=3)


@scenario("api-versions")
async def api_versions(s: Script) -> None:
    w = await s.client("w1")
    await w.call("ApiVersions v3", "ApiVersions", 3, client_software_name="conformance",
                 client_software_version="1.0")
    await w.call("ApiVersions v0", "ApiVersions", 0)


# ---------------------------------------------------------------------------- consumer groups (KIP-848)

#: The topic consumer-group scenarios subscribe to; the real broker must create topics with
#: this many partitions (``num.partitions``) and the fake twin must serve it.
TOPIC = "events"
TOPIC_PARTITIONS = 3
#: The settings both brokers of a differential run get: the fixture's defaults (no initial
#: delay, sessions from 1 s), topics auto-created with the consumer scenarios' partition
#: count, and the consumer-group migration policy the fake models ("disabled").
DIFF_SETTINGS = KafkaSettings(properties={"num.partitions": TOPIC_PARTITIONS,
                                          "group.consumer.migration.policy": "disabled"})


def _cgh_fields(s: Script, group: str, member_id: str, epoch: int, *, topics: list[str] | None = None,
                owned: list[tuple[object, list[int]]] | None = None, assignor: str | None = None,
                rebalance_ms: int = 30_000, instance: str | None = None, regex: str | None = None) -> dict:
    cls = s.registry["ConsumerGroupHeartbeatRequest"].cls
    return dict(group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance,
                rack_id=None, rebalance_timeout_ms=rebalance_ms, subscribed_topic_names=topics,
                subscribed_topic_regex=regex, server_assignor=assignor,
                topic_partitions=None if owned is None else [
                    cls.TopicPartitions(topic_id=t, partitions=p) for t, p in owned])  # type: ignore[attr-defined]


def _owned(resp) -> list[tuple[object, list[int]]]:  # type: ignore[no-untyped-def]
    if resp is None or resp.assignment is None:
        return []
    return [(tp.topic_id, sorted(tp.partitions)) for tp in resp.assignment.topic_partitions]


@scenario("consumer-group-heartbeat")
async def consumer_group(s: Script) -> None:
    g = s.group()
    w1, w2 = await s.client("c1"), await s.client("c2")
    await w1.ensure_topic(TOPIC, TOPIC_PARTITIONS)
    m1, m2 = "c1-member-aaaaaaaaaaaaaaa", "c2-member-bbbbbbbbbbbbbbb"
    r1 = await w1.call("c1: join", "ConsumerGroupHeartbeat", 1, **_cgh_fields(s, g, m1, 0, topics=[TOPIC], owned=[]))
    owned1 = _owned(r1)
    r1 = await w1.call("c1: heartbeat owning its assignment", "ConsumerGroupHeartbeat", 1,
                       **_cgh_fields(s, g, m1, r1.member_epoch, owned=owned1))
    await w1.call("describe one member", "ConsumerGroupDescribe", 1, group_ids=[g],
                  include_authorized_operations=False)
    r2 = await w2.call("c2: join", "ConsumerGroupHeartbeat", 1, **_cgh_fields(s, g, m2, 0, topics=[TOPIC], owned=[]))
    r1 = await w1.call("c1: heartbeat after c2 joined", "ConsumerGroupHeartbeat", 1,
                       **_cgh_fields(s, g, m1, r1.member_epoch, owned=owned1))
    owned1 = _owned(r1) or owned1
    r1 = await w1.call("c1: heartbeat after revoking", "ConsumerGroupHeartbeat", 1,
                       **_cgh_fields(s, g, m1, r1.member_epoch, owned=owned1))
    r2 = await w2.call("c2: heartbeat", "ConsumerGroupHeartbeat", 1,
                       **_cgh_fields(s, g, m2, r2.member_epoch, owned=_owned(r2)))
    await w1.call("describe two members", "ConsumerGroupDescribe", 1, group_ids=[g],
                  include_authorized_operations=False)
    await w1.describe("DescribeGroups of a consumer group", g)
    await w1.list_groups("ListGroups type consumer", types=["consumer"])
    await w2.call("c2: leave", "ConsumerGroupHeartbeat", 1, **_cgh_fields(s, g, m2, -1))
    await w1.call("c1: heartbeat after c2 left", "ConsumerGroupHeartbeat", 1,
                  **_cgh_fields(s, g, m1, r1.member_epoch, owned=owned1))


@scenario("consumer-group-errors")
async def consumer_group_errors(s: Script) -> None:
    g = s.group()
    w = await s.client("c1")
    await w.ensure_topic(TOPIC, TOPIC_PARTITIONS)
    m = "c1-member-ccccccccccccccc"
    await w.call("empty group id", "ConsumerGroupHeartbeat", 1, **_cgh_fields(s, "", m, 0, topics=[TOPIC], owned=[]))
    await w.call("v1 join without member id", "ConsumerGroupHeartbeat", 1,
                 **_cgh_fields(s, g, "", 0, topics=[TOPIC], owned=[]))
    await w.call("join without subscription", "ConsumerGroupHeartbeat", 1, **_cgh_fields(s, g, m, 0, owned=[]))
    await w.call("join without owned partitions", "ConsumerGroupHeartbeat", 1,
                 **_cgh_fields(s, s.group("owned"), m, 0, topics=[TOPIC]))
    await w.call("unknown assignor", "ConsumerGroupHeartbeat", 1,
                 **_cgh_fields(s, g, m, 0, topics=[TOPIC], owned=[], assignor="no-such-assignor"))
    await w.call("negative rebalance timeout", "ConsumerGroupHeartbeat", 1,
                 **_cgh_fields(s, g, m, 0, topics=[TOPIC], owned=[], rebalance_ms=-5))
    await w.call("unknown member, epoch 3", "ConsumerGroupHeartbeat", 1,
                 **_cgh_fields(s, g, "c1-never-joined-ddddddddd", 3))
    r = await w.call("join", "ConsumerGroupHeartbeat", 1, **_cgh_fields(s, g, m, 0, topics=[TOPIC], owned=[]))
    await w.call("fenced: epoch ahead", "ConsumerGroupHeartbeat", 1,
                 **_cgh_fields(s, g, m, r.member_epoch + 5, owned=_owned(r)))
    await w.call("v0 join: the broker makes the member id", "ConsumerGroupHeartbeat", 0,
                 **{k: v for k, v in _cgh_fields(s, s.group("v0"), "", 0, topics=[TOPIC], owned=[]).items()
                    if k != "subscribed_topic_regex"})
    await w.call("describe unknown group", "ConsumerGroupDescribe", 1, group_ids=[s.group("none")],
                 include_authorized_operations=False)
    # A classic consumer (ConsumerProtocolSubscription v0: topics [events], no user data).
    subscription = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x06" + TOPIC.encode() + b"\xff\xff\xff\xff"
    j = await w.join("classic JoinGroup into a consumer group", g, protocol_type="consumer",
                     protocols=[("range", subscription)])
    if j is not None and j.error_code == 79:
        await w.join("classic JoinGroup into a consumer group, with the member id", g, j.member_id,
                     protocol_type="consumer", protocols=[("range", subscription)])
