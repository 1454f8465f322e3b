"""Classic group scenarios for the differential checks: JoinGroup / SyncGroup / Heartbeat /
LeaveGroup flows and their error answers, DescribeGroups, ListGroups, static membership,
session and rebalance timeouts; plus ApiVersions of the group APIs.

Every scenario is deterministic on a real broker: a request expected to park is given
time to arrive (``Script.after_submit`` settles), timeouts are short but leave a wide margin
(a 1 s session is checked 3 s later). Both brokers must be started with the settings of
``KafkaSettings()`` / ``twin_config()``: no initial rebalance delay, session timeouts
from 1 s.
"""

from __future__ import annotations

from .differential import Scenario, Script, ensure_topic
from .settings import KafkaSettings
from ..protocol import default_registry

SCENARIOS: dict[str, Scenario] = {}
#: Scenario -> the ids of the conformance catalogue (schemas/requirements.json) whose behaviour
#: its steps exercise: the one name of each behaviour (kept as strings: the broker does not
#: import the suite; tests/conformance/test_behaviour_ids.py checks them). () for APIs the
#: catalogue states nothing of (ApiVersions, the consumer group type).
REQUIREMENTS: dict[str, tuple[str, ...]] = {}


def scenario(name: str, requirements: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    def register(fn: Scenario) -> Scenario:
        SCENARIOS[name] = fn
        REQUIREMENTS[name] = requirements
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
    member, parked = await w.new_member(group, **kw, label=w.client_id)
    j = await w.result(parked)
    gen = j.generation_id
    await w.sync(group, member, gen,
                 assignments={member: b"A-" + w.client_id.encode()},
                 protocol_name=j.protocol_name, label=f"{w.client_id}: leader sync")
    return member, gen


async def two_member_group(s: Script, group: str, **kw) -> tuple:  # type: ignore[no-untyped-def]
    """w1 stable alone, then w2 joins; w1 learns from a heartbeat, rejoins; both sync."""
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1, gen = await stable_member(s, w1, group, **kw)
    m2, parked2 = await w2.new_member(group, **kw, label="w2")
    hb = await w1.heartbeat(group, m1, gen, label="w1: heartbeat during the rebalance")
    j1 = await w1.join(group, m1, **kw, label="w1: rejoin")
    j2 = await w2.result(parked2)
    gen2 = j1.generation_id
    follower = await w2.sync_later(group, m2, gen2,
                                   protocol_name=j1.protocol_name, label="w2: follower sync (parks)")
    await w1.sync(group, m1, gen2, assignments={m1: b"A1", m2: b"A2"},
                  protocol_name=j1.protocol_name, label="w1: leader sync")
    await w2.result(follower)
    assert hb is not None and j2 is not None
    return w1, w2, m1, m2, gen2


# ---------------------------------------------------------------------------- happy paths


@scenario("first-member", requirements=("CLS-JOIN-01", "CLS-JOIN-25", "CLS-HB-04", "CLS-STATE-03",
                        "CLS-LIST-01", "CLS-LIST-04", "CLS-LEAVE-05", "CLS-LEAVE-03"))
async def first_member(s: Script) -> None:
    g = s.group()
    w1 = await s.client("w1")
    m1, gen = await stable_member(s, w1, g, protocols=connect_protocols("http://w1:8083/"))
    await w1.heartbeat(g, m1, gen, label="w1: heartbeat")
    await w1.describe(g, label="describe Stable")
    await w1.describe(g, version=0, label="describe v0")
    await w1.list_groups(label="list v5")
    await w1.list_groups(version=0, label="list v0")
    await w1.leave(g, m1, label="w1: leave")
    await w1.describe(g, label="describe after the last member left")
    await w1.heartbeat(g, m1, gen, label="w1: heartbeat after leaving")


@scenario("second-member-rebalance", requirements=("CLS-HB-02", "CLS-JOIN-26", "CLS-SYNC-05",
                        "CLS-HB-04", "CLS-LEAVE-01", "CLS-STATE-03"))
async def second_member(s: Script) -> None:
    g = s.group()
    w1, w2, m1, m2, gen = await two_member_group(s, g)
    await w1.heartbeat(g, m1, gen, label="w1: heartbeat")
    await w2.heartbeat(g, m2, gen, label="w2: heartbeat")
    await w1.describe(g, label="describe two members")
    await w2.leave(g, m2, label="w2: leave")
    await w1.heartbeat(g, m1, gen, label="w1: heartbeat after w2 left")
    j = await w1.join(g, m1, label="w1: rejoin alone")
    await w1.sync(g, m1, j.generation_id, assignments={m1: b"A1"}, label="w1: sync alone")
    await w1.describe(g, label="describe one member")


@scenario("protocol-vote", requirements=("CLS-VOTE-01", "CLS-VOTE-02", "CLS-META-02"))
async def protocol_vote(s: Script) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    p1 = [("sessioned", b"s1"), ("compatible", b"c1"), ("default", b"d1")]
    p2 = [("compatible", b"c2"), ("default", b"d2")]
    m1, gen = await stable_member(s, w1, g, protocols=p1)
    m2, parked = await w2.new_member(g, protocols=p2, label="w2")
    j1 = await w1.join(g, m1, protocols=p1, label="w1: rejoin")
    await w2.result(parked)
    await w1.sync(g, m1, j1.generation_id,
                  assignments={m1: b"x", m2: b"y"}, protocol_name=j1.protocol_name,
                  label="w1: sync with the voted protocol")
    await w1.describe(g, label="describe after the vote")


@scenario("follower-rejoin-and-leader-rejoin", requirements=("CLS-JOIN-15", "CLS-JOIN-16",
                        "CLS-HB-02", "CLS-DESC-04"))
async def rejoins(s: Script) -> None:
    g = s.group()
    w1, w2, m1, m2, gen = await two_member_group(s, g)
    # A follower rejoining with unchanged metadata while Stable: answered at once.
    await w2.join(g, m2, label="w2: rejoin unchanged (Stable)")
    # The leader rejoining triggers a rebalance.
    parked = await w1.join_later(g, m1, label="w1: leader rejoins (parks)")
    await w2.heartbeat(g, m2, gen, label="w2: heartbeat sees the rebalance")
    await w2.join(g, m2, label="w2: rejoin")
    await w1.result(parked)
    await w1.describe(g, label="describe CompletingRebalance")


@scenario("metadata-change", requirements=("CLS-JOIN-17", "CLS-JOIN-27", "CLS-HB-07",
                        "CLS-META-03"))
async def metadata_change(s: Script) -> None:
    g = s.group()
    w1, w2, m1, m2, gen = await two_member_group(s, g)
    parked = await w2.join_later(g, m2,
                                 protocols=[("sessioned", b"\x00\x02changed")],
                                 label="w2: rejoin with new metadata (parks)")
    await w1.heartbeat(g, m1, gen, label="w1: heartbeat sees the rebalance")
    j1 = await w1.join(g, m1, label="w1: rejoin")
    await w2.result(parked)
    assert j1 is not None


# ---------------------------------------------------------------------------- errors


async def member_errors(s: Script, w1, g: str, send, wrong_generation: int) -> tuple[str, int]:  # type: ignore[no-untyped-def]
    """``send`` (w1's sync or heartbeat) with an empty group id and to an unknown group; then,
    w1 stable alone in ``g``, as an unknown member and with a wrong generation (``gen +
    wrong_generation``). Returns w1's member id and generation."""
    await send("", "m", 1, label="empty group id")
    await send(s.group("none"), "m", 1, label="unknown group")
    m1, gen = await stable_member(s, w1, g)
    await send(g, "w1-unknown", gen, label="unknown member")
    await send(g, m1, gen + wrong_generation, label="wrong generation")
    return m1, gen


@scenario("join-errors", requirements=("CLS-JOIN-06", "CLS-JOIN-03", "CLS-JOIN-04", "CLS-JOIN-18",
                        "CLS-JOIN-19", "CLS-JOIN-20", "CLS-JOIN-08", "CLS-JOIN-09", "CLS-JOIN-07",
                        "CLS-JOIN-12"))
async def join_errors(s: Script) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    await w1.join("", label="empty group id")
    await w1.join(g, session_ms=500, label="session below the minimum")
    await w1.join(g, session_ms=2_000_000, label="session above the maximum")
    await w1.join(s.group("new"), "w1-unknown", label="unknown member id, new group")
    await w1.join(s.group("pt"), protocol_type="", label="empty protocol type")
    await w1.join(s.group("np"), protocols=[], label="no protocols")
    m1, _ = await stable_member(s, w1, g)
    await w2.join(g, protocol_type="consumer", label="other protocol type")
    await w2.join(g, protocols=[("range", b"")], label="no common protocol")
    await w2.join(g, "w2-unknown", label="unknown member id, existing group")
    await w2.join(s.group("v3"), version=3, label="v3: no member id required")
    await w2.join(s.group("v0"), version=0, label="v0: a join without rebalance timeout")


@scenario("sync-errors", requirements=("CLS-SYNC-10", "CLS-SYNC-12", "CLS-SYNC-02", "CLS-SYNC-01",
                        "CLS-SYNC-08", "CLS-SYNC-11", "CLS-SYNC-03"))
async def sync_errors(s: Script) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1, gen = await member_errors(s, w1, g, w1.sync, wrong_generation=5)
    await w1.sync(g, m1, gen, protocol_type="consumer", label="other protocol type")
    await w1.sync(g, m1, gen, protocol_name="range", label="other protocol name")
    await w1.sync(g, m1, gen, protocol_type=None, protocol_name=None, label="no protocol type and name (v5 nulls)")
    await w1.sync(g, m1, gen, version=0, label="v0")
    m2, parked = await w2.new_member(g, label="w2")
    await w1.sync(g, m1, gen, label="sync during PreparingRebalance")
    await w1.join(g, m1, label="w1: rejoin")
    await w2.result(parked)


@scenario("heartbeat-errors", requirements=("CLS-HB-06", "CLS-HB-08", "CLS-HB-03", "CLS-HB-01",
                        "CLS-HB-02", "CLS-HB-05"))
async def heartbeat_errors(s: Script) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1, gen = await member_errors(s, w1, g, w1.heartbeat, wrong_generation=1)
    await w1.heartbeat(g, m1, gen, version=0, label="v0")
    m2, parked = await w2.new_member(g, label="w2")
    await w1.heartbeat(g, m1, gen, label="during PreparingRebalance")
    j1 = await w1.join(g, m1, label="w1: rejoin")
    await w2.result(parked)
    await w1.heartbeat(g, m1, j1.generation_id, label="during CompletingRebalance, new generation")
    await w1.heartbeat(g, m1, gen, label="during CompletingRebalance, old generation")


@scenario("leave-errors", requirements=("CLS-LEAVE-06", "CLS-LEAVE-07", "CLS-LEAVE-08",
                        "CLS-LEAVE-04", "CLS-LEAVE-02", "CLS-LEAVE-10", "CLS-LEAVE-05"))
async def leave_errors(s: Script) -> None:
    g = s.group()
    w1 = await s.client("w1")
    await w1.leave("", "m", label="empty group id")
    await w1.leave(s.group("none"), "m", label="unknown group (batch)")
    await w1.leave(s.group("none"), "m", version=0, label="unknown group (v0)")
    m1, gen = await stable_member(s, w1, g)
    await w1.leave(g, "w1-unknown", ("", "no-such-instance"), label="batch partly unknown")
    await w1.leave(g, "w1-unknown", version=0, label="v0 unknown member")
    await w1.leave(g, m1, version=0, label="v0 the member")
    await w1.describe(g, label="describe after a v0 leave")


@scenario("static-membership", requirements=("CLS-STATIC-01", "CLS-JOIN-28", "CLS-STATIC-02",
                        "CLS-HB-09", "CLS-JOIN-23", "CLS-LEAVE-11"))
async def static_membership(s: Script) -> None:
    g = s.group()
    w1, w1b, w2 = await s.client("w1"), await s.client("w1b"), await s.client("w2")
    j = await w1.join(g, instance="instance-1", label="w1: static join")
    m1 = j.member_id
    await w1.sync(g, m1, j.generation_id, instance="instance-1",
                  assignments={m1: b"S1"}, label="w1: leader sync")
    await w1.describe(g, label="describe a static member")
    # The same instance restarts: a new member id replaces the old one, no rebalance.
    j2 = await w1b.join(g, instance="instance-1", label="w1b: same instance, empty member id")
    await w1.heartbeat(g, m1, j.generation_id, instance="instance-1", label="old member id of the instance")
    await w1b.heartbeat(g, j2.member_id, j2.generation_id,
                        instance="instance-1", label="new member id of the instance")
    await w2.join(g, "w2-x", instance="instance-2", label="unknown instance with a member id")
    await w1b.leave(g, ("", "instance-1"), label="leave by instance id")
    await w1b.describe(g, label="describe after the static leave")


@scenario("session-expiry", requirements=("CLS-SESS-01",))
async def session_expiry(s: Script) -> None:
    g = s.group()
    w1 = await s.client("w1")
    m1, gen = await stable_member(s, w1, g, session_ms=1000)
    await s.sleep(3.0)
    await w1.describe(g, label="describe after the session expired")
    await w1.heartbeat(g, m1, gen, label="heartbeat after expiry")


@scenario("rebalance-timeout", requirements=("CLS-REB-01", "CLS-HB-03"))
async def rebalance_timeout(s: Script) -> None:
    g = s.group()
    w1, w2, m1, m2, gen = await two_member_group(s, g, rebalance_ms=1500, session_ms=30_000)
    parked = await w2.join_later(g, m2,
                                 rebalance_ms=1500, session_ms=30_000, label="w2: rejoin triggers a rebalance (parks)")
    await s.sleep(3.0)  # w1 never rejoins: removed when the rebalance times out
    await w2.result(parked)
    await w1.heartbeat(g, m1, gen, label="w1: heartbeat after removal")
    await w1.describe(g, label="describe after the timeout")


@scenario("describe-and-list", requirements=("CLS-DESC-01", "CLS-DESC-02", "CLS-DESC-03",
                        "CLS-DESC-05", "CLS-LIST-02", "CLS-LIST-03", "CLS-LIST-04"))
async def describe_and_list(s: Script) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    await w1.describe(s.group("none"), label="unknown group v5")
    await w1.describe(s.group("none"), version=6, label="unknown group v6")
    await w1.describe("", label="empty group id v5")
    m1, gen = await stable_member(s, w1, g)
    m2, parked = await w2.new_member(g, label="w2")
    await w1.describe(g, s.group("none"), label="batch: PreparingRebalance and unknown")
    await w1.list_groups(version=4, states=["PreparingRebalance"], label="list v4 filter PreparingRebalance")
    await w1.join(g, m1, label="w1: rejoin")
    await w2.result(parked)
    await w1.describe(g, version=6, ops=True, label="describe v6 with operations")
    await w1.list_groups(states=["CompletingRebalance"], label="list v5 filter CompletingRebalance")
    await w1.list_groups(types=["classic"], label="list v5 filter type classic")
    await w1.list_groups(types=["consumer"], label="list v5 filter type consumer")
    await w1.list_groups(states=["NoSuchState"], label="list v5 filter unknown state")
    await w1.list_groups(version=3, label="list v3")


@scenario("api-versions")
async def api_versions(s: Script) -> None:
    w = await s.client("w1")
    await w.call("ApiVersions", 3, client_software_name="conformance",
                 client_software_version="1.0", label="ApiVersions v3")
    await w.call("ApiVersions", 0, label="ApiVersions v0")


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
    await ensure_topic(w1, TOPIC, TOPIC_PARTITIONS)
    m1, m2 = "c1-member-aaaaaaaaaaaaaaa", "c2-member-bbbbbbbbbbbbbbb"
    r1 = await w1.call("ConsumerGroupHeartbeat", 1, **_cgh_fields(s, g, m1, 0, topics=[TOPIC], owned=[]),
                       label="c1: join")
    owned1 = _owned(r1)
    r1 = await w1.call("ConsumerGroupHeartbeat", 1,
                       **_cgh_fields(s, g, m1, r1.member_epoch, owned=owned1),
                       label="c1: heartbeat owning its assignment")
    await w1.call("ConsumerGroupDescribe", 1, group_ids=[g],
                  include_authorized_operations=False, label="describe one member")
    r2 = await w2.call("ConsumerGroupHeartbeat", 1, **_cgh_fields(s, g, m2, 0, topics=[TOPIC], owned=[]),
                       label="c2: join")
    r1 = await w1.call("ConsumerGroupHeartbeat", 1,
                       **_cgh_fields(s, g, m1, r1.member_epoch, owned=owned1), label="c1: heartbeat after c2 joined")
    owned1 = _owned(r1) or owned1
    r1 = await w1.call("ConsumerGroupHeartbeat", 1,
                       **_cgh_fields(s, g, m1, r1.member_epoch, owned=owned1), label="c1: heartbeat after revoking")
    r2 = await w2.call("ConsumerGroupHeartbeat", 1,
                       **_cgh_fields(s, g, m2, r2.member_epoch, owned=_owned(r2)), label="c2: heartbeat")
    await w1.call("ConsumerGroupDescribe", 1, group_ids=[g],
                  include_authorized_operations=False, label="describe two members")
    await w1.describe(g, label="DescribeGroups of a consumer group")
    await w1.list_groups(types=["consumer"], label="ListGroups type consumer")
    await w2.call("ConsumerGroupHeartbeat", 1, **_cgh_fields(s, g, m2, -1), label="c2: leave")
    await w1.call("ConsumerGroupHeartbeat", 1,
                  **_cgh_fields(s, g, m1, r1.member_epoch, owned=owned1), label="c1: heartbeat after c2 left")


@scenario("consumer-group-errors")
async def consumer_group_errors(s: Script) -> None:
    g = s.group()
    w = await s.client("c1")
    await ensure_topic(w, TOPIC, TOPIC_PARTITIONS)
    m = "c1-member-ccccccccccccccc"
    await w.call("ConsumerGroupHeartbeat", 1, **_cgh_fields(s, "", m, 0, topics=[TOPIC], owned=[]),
                 label="empty group id")
    await w.call("ConsumerGroupHeartbeat", 1,
                 **_cgh_fields(s, g, "", 0, topics=[TOPIC], owned=[]), label="v1 join without member id")
    await w.call("ConsumerGroupHeartbeat", 1, **_cgh_fields(s, g, m, 0, owned=[]), label="join without subscription")
    await w.call("ConsumerGroupHeartbeat", 1,
                 **_cgh_fields(s, s.group("owned"), m, 0, topics=[TOPIC]), label="join without owned partitions")
    await w.call("ConsumerGroupHeartbeat", 1,
                 **_cgh_fields(s, g, m, 0, topics=[TOPIC], owned=[], assignor="no-such-assignor"),
                 label="unknown assignor")
    await w.call("ConsumerGroupHeartbeat", 1,
                 **_cgh_fields(s, g, m, 0, topics=[TOPIC], owned=[], rebalance_ms=-5),
                 label="negative rebalance timeout")
    await w.call("ConsumerGroupHeartbeat", 1,
                 **_cgh_fields(s, g, "c1-never-joined-ddddddddd", 3), label="unknown member, epoch 3")
    r = await w.call("ConsumerGroupHeartbeat", 1, **_cgh_fields(s, g, m, 0, topics=[TOPIC], owned=[]), label="join")
    await w.call("ConsumerGroupHeartbeat", 1,
                 **_cgh_fields(s, g, m, r.member_epoch + 5, owned=_owned(r)), label="fenced: epoch ahead")
    await w.call("ConsumerGroupHeartbeat", 0,
                 **{k: v for k, v in _cgh_fields(s, s.group("v0"), "", 0, topics=[TOPIC], owned=[]).items()
                    if k != "subscribed_topic_regex"}, label="v0 join: the broker makes the member id")
    await w.call("ConsumerGroupDescribe", 1, group_ids=[s.group("none")],
                 include_authorized_operations=False, label="describe unknown group")
    # A classic consumer (ConsumerProtocolSubscription v0: topics [events], no user data).
    subscription = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x06" + TOPIC.encode() + b"\xff\xff\xff\xff"
    j = await w.join(g, protocol_type="consumer",
                     protocols=[("range", subscription)], label="classic JoinGroup into a consumer group")
    if j is not None and j.error_code == 79:
        await w.join(g, j.member_id,
                     protocol_type="consumer", protocols=[("range", subscription)],
                     label="classic JoinGroup into a consumer group, with the member id")
