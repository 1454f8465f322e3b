"""The group coordinator: requests and virtual time in, replies and events out.

    coord = GroupCoordinator(registry, CoordinatorConfig())
    result = coord.handle(ctx, join_request, now_ms=0)  # result.reply: None, the join is parked
    result = coord.tick(3000)       # the initial delay ends: result.replies answers the join
    result.next_deadline            # when to call tick() next
    result.events                   # MemberJoined, StateChanged, ...

Every input (``handle``, ``tick``, ``mark_dead``) returns one ``CoordinatorResult``: the
answer to the request handled (handed back directly, never through an outbox), the answers
to requests parked earlier, the records written, the events and the next deadline.

Group types share one namespace of group ids (``groups``): classic groups, KIP-848
consumer groups and the draft's connect groups (``modern/``). ``api_keys`` lists the APIs of
the protocols ``CoordinatorConfig.rebalance_protocols`` enables.

It never touches a socket or a clock. Time only moves forward; every input first fires
the timers due by its ``now_ms`` (each at its own deadline), so a request and an expiry
at the same instant see the expiry first. Timers a request sets for its own instant fire
before ``handle`` returns.

Extension points, for variants of the coordinator (the suite's mutant coordinators, which
must change one decision without patching methods); set them before the first request:

- ``apis``: API key -> ``dispatch.Api``, this coordinator's copy of the dispatch table;
  ``wrap(name, around)`` puts a handler inside another;
- ``classic_group_class``: the class of the classic groups it creates;
- ``connect_group_class``: the class of the connect groups it creates or loads (a classic
  group converted to a connect group is built by ``migration``);
- ``use_rebalancer(cls)``: the classic groups' ``Rebalancer``, as a subclass;
- ``config`` and ``connect_store``: the settings and where connect groups write records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from ..protocol import Registry, Struct, default_registry
from .apis import heartbeat as heartbeat_api
from .classic.group import ClassicGroup
from .classic.rebalance import Rebalancer
from .config import CoordinatorConfig
from .context import RequestContext
from .dispatch import Api, Handler, dispatch_table
from .env import Env
from .events import GroupCreated, GroupDeleted
from .group import Group

_NONE: tuple[()] = ()  # a result's empty parts (most inputs: no other reply, record or event)
from .modern import ConnectGroup, ConsumerGroup, ModernGroup
from .offsets import OffsetStore
from .reconcile.records import Record, RecordStore
from .result import CoordinatorResult
from .topics import FixedTopics, OpenTopics, TopicCatalog
from .view import CoordinatorView


class GroupCoordinator:
    def __init__(self, registry: Registry | None = None, config: CoordinatorConfig | None = None,
                 *, topics: TopicCatalog | None = None,
                 cluster: TopicCatalog | None = None,
                 connect_store: RecordStore | None = None) -> None:
        """``topics`` answers the offset APIs' topic checks (default: every topic exists).
        ``cluster`` is the cluster's topics as consumer groups assign them (names, ids,
        partition counts); it defaults to ``topics`` when that is given, else to no
        topics at all (a consumer group then has nothing to assign). ``connect_store``:
        where every connect group's engine writes its records (default: one in-memory
        store per group), e.g. ``realkafka.group_log.KafkaGroupLog``; see
        ``restore_connect_groups`` for the way back."""
        self.registry = registry if registry is not None else default_registry()
        self.env = Env(self.registry, config if config is not None else CoordinatorConfig())
        # One namespace for every group type, as in Kafka.
        self.groups: dict[str, Group] = {}
        self.offsets = OffsetStore()
        self.topics: TopicCatalog = topics if topics is not None else OpenTopics()
        self.cluster: TopicCatalog = (cluster if cluster is not None
                                      else topics if topics is not None else FixedTopics({}))
        self.rebalancer = Rebalancer(self.env, self.classic_group)
        self.connect_store = connect_store
        self.apis: dict[int, Api] = dispatch_table(self.registry)
        self.classic_group_class: type[ClassicGroup] = ClassicGroup
        self.connect_group_class: type[ConnectGroup] = ConnectGroup
        self._heartbeat_key = next((k for k, a in self.apis.items() if a.name == "Heartbeat"), None)
        # ``handle``'s checks passed once per (API key, version) under ``config``: the
        # handler and the body class it takes (every request would repeat them).
        self._routes: dict[tuple[int, int], tuple[Any, type[Struct]]] = {}

    def wrap(self, api_name: str, around: Callable[[Handler, RequestContext, Struct, object | None], None]) -> None:
        """The handler of ``api_name`` becomes ``around(inner, ctx, body, prepared)``, where
        ``inner`` is the handler it had (an extension point: see the module's docstring)."""
        key = self.registry.by_api_name(api_name)
        api = self.apis[key]
        inner = api.handle

        def handle(coord: CoordinatorView, ctx: RequestContext, body: Struct,
                   prepared: object | None = None) -> None:
            around(inner, ctx, body, prepared)
        self.apis[key] = dataclasses.replace(api, handle=handle)
        self._routes.clear()

    def use_rebalancer(self, cls: type[Rebalancer]) -> Rebalancer:
        """Drive classic groups with ``cls`` (a ``Rebalancer`` subclass), before the first
        request; returns it."""
        if self.groups:
            raise RuntimeError("the rebalancer is chosen before any group exists")
        self.rebalancer = cls(self.env, self.classic_group)
        return self.rebalancer

    @property
    def config(self) -> CoordinatorConfig:
        """The coordinator's settings; the groups read the same object through ``env``."""
        return self.env.config

    @config.setter
    def config(self, config: CoordinatorConfig) -> None:
        # The routes were checked against the old settings (its enabled protocols).
        self.env.config = config
        self._routes.clear()

    # ------------------------------------------------------------------ inputs

    def api_keys(self) -> list[int]:
        """The APIs this coordinator answers: those of the enabled rebalance protocols."""
        enabled = set(self.config.rebalance_protocols)
        return sorted(k for k, api in self.apis.items() if api.protocol in enabled)

    def prepare(self, api_key: int, api_version: int, body: Struct) -> object | None:
        """The handler's view of a request (None if its API has none), built from the
        request alone: safe on any thread, so a broker builds it off its event loop for
        a big frame and hands it to ``handle``."""
        api = self.apis.get(api_key)
        return api.prepare(body, api_version) if api is not None and api.prepare is not None else None

    def handle(self, ctx: RequestContext, body: Struct, now_ms: int,
               prepared: object | None = None) -> CoordinatorResult:
        """Handle one request. Its answer is ``reply`` if ready now, else (a parked JoinGroup
        or SyncGroup) it comes later in the ``replies`` of the input that completes it;
        ``replies`` holds the answers to requests parked earlier that are ready now (a join
        completing a phase answers every parked join). ``prepared``: what ``prepare``
        returned for this very body, if anything."""
        route = self._routes.get((ctx.api_key, ctx.api_version))
        if route is None or type(body) is not route[1]:
            route = self._route(ctx, body)
        env = self.env
        self._advance(now_ms)
        env.handling = ctx.request_id
        try:
            route[0](self, ctx, body, prepared)
            self._advance(now_ms)  # a timer the request set for "now" (e.g. a zero delay) fires too
        finally:
            env.handling = None
            answer, env.answer = env.answer, None  # (also when the handler raised)
        return self._result(answer)

    def heartbeat(self, api_version: int, group_id: str, generation_id: int, member_id: str,
                  group_instance_id: str | None, now_ms: int) -> tuple[int, CoordinatorResult | None] | None:
        """A Heartbeat given by its fields, for a server's fast path: what ``handle`` does
        for a Heartbeat body (the same rules: ``apis.heartbeat.decide``), answered with its
        error code and the result of the input (its ``reply`` is None: the caller builds
        the answer from the error code), or None for a result that would hold nothing but
        the next deadline (most heartbeats: no result to make). None, with nothing done,
        until ``handle`` has served a Heartbeat of this version under this config (its
        checks passed), or while a timer is due: then go through ``handle``."""
        if (self._heartbeat_key, api_version) not in self._routes:
            return None
        if not self.env.timers.idle_until(now_ms):
            return None
        self.env.now_ms = now_ms
        error = heartbeat_api.decide(self, group_id, generation_id, member_id, group_instance_id)
        self._advance(now_ms)  # as ``handle``: a timer the heartbeat set for "now" fires too
        env = self.env
        return int(error), (self._result(None) if env.replies or env.events or env.records else None)

    def _result(self, reply: Struct | None) -> CoordinatorResult:
        """The input's result; the outboxes start empty for the next one."""
        env = self.env
        replies, records, events = env.replies, env.records, env.events
        if replies:
            env.replies = []
        if records:
            env.records = []
        if events:
            env.events = []
        return CoordinatorResult(reply, replies or _NONE, records or _NONE, events or _NONE,
                                 env.timers.next_deadline())

    def _route(self, ctx: RequestContext, body: Struct) -> tuple[Any, type[Struct]]:
        """``handle``'s checks of a request: its API, body type and version (remembered)."""
        api = self.apis.get(ctx.api_key)
        if api is None or api.protocol not in self.config.rebalance_protocols:
            raise ValueError(f"API key {ctx.api_key} is not a group coordinator API"
                             + ("" if api is None else " of an enabled protocol"))
        mt = self.registry.request(ctx.api_key)
        if type(body) is not mt.cls:
            raise TypeError(f"expected a {mt.name}, got {type(body).__name__}")
        if not mt.supports(ctx.api_version):
            raise ValueError(f"{mt.name} has no version {ctx.api_version}")
        route = self._routes[(ctx.api_key, ctx.api_version)] = (api.handle, mt.cls)
        return route

    def tick(self, now_ms: int) -> CoordinatorResult:
        """Fire every timer due by ``now_ms``; its result holds the replies they produce."""
        self._advance(now_ms)
        return self._result(None)

    def next_deadline(self) -> int | None:
        return self.env.timers.next_deadline()

    def mark_dead(self, group_id: str, now_ms: int) -> CoordinatorResult:
        """Unload a classic group as Kafka does when its coordinator moves: it becomes Dead,
        its parked requests get NOT_COORDINATOR and its timers stop."""
        self._advance(now_ms)
        group = self.classic_group(group_id)
        if group is None:
            raise KeyError(f"no classic group {group_id!r}")
        self.rebalancer.unload(group)
        return self._result(None)

    # ------------------------------------------------------------------ groups

    def classic_group(self, group_id: str) -> ClassicGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, ClassicGroup) else None

    def create_classic_group(self, group_id: str) -> ClassicGroup:
        if group_id in self.groups:
            raise ValueError(f"group {group_id!r} already exists")
        group = self.classic_group_class(group_id, self.env)
        self.groups[group_id] = group
        self.env.emit(GroupCreated(group_id, self.env.now_ms, group.type))
        return group

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, ConsumerGroup) else None

    def connect_group(self, group_id: str) -> ConnectGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, ConnectGroup) else None

    def new_consumer_group(self, group_id: str) -> ConsumerGroup:
        """A consumer group not yet in ``groups``: ``adopt`` it once a request created it
        (Kafka materialises a new group only when its records are written)."""
        return ConsumerGroup(group_id, self.env, self.cluster)

    def new_connect_group(self, group_id: str) -> ConnectGroup:
        """A connect group not yet in ``groups`` (see ``new_consumer_group``)."""
        return self.connect_group_class(group_id, self.env, store=self.connect_store)

    def restore_connect_groups(self, records: Iterable[Record], now_ms: int) -> list[str]:
        """Load every connect group ``records`` (a log of engine records, in order, or its
        compacted form) mention, as Kafka loads its groups when it becomes coordinator:
        each rebuilt at ``now_ms`` with fresh session timeouts (and rebalance timeouts for
        pending revocations), its timer armed, writing on to ``connect_store``. Returns
        the group ids, in order of first appearance; an id already taken is a ValueError."""
        by_group: dict[str, list[Record]] = {}
        for record in records:
            by_group.setdefault(record.group_id, []).append(record)
        taken = sorted(g for g in by_group if g in self.groups)
        if taken:
            raise ValueError(f"groups already loaded: {', '.join(taken)}")
        self._advance(now_ms)
        for gid, recs in by_group.items():
            self.adopt(self.connect_group_class(gid, self.env, recs, store=self.connect_store))
        return list(by_group)

    def adopt(self, group: ModernGroup, *, converting: bool = False) -> None:  # type: ignore[type-arg]
        """Register a new heartbeat-driven group under its id, replacing an empty group of
        another type there (Kafka deletes an empty classic group a consumer member joins),
        or - ``converting`` - the classic group it was converted from (``migration.py``)."""
        gid = group.group_id
        previous = self.groups.get(gid)
        if previous is group:
            return
        if previous is not None:
            if not previous.is_empty() and not converting:
                raise ValueError(f"group {gid!r} is not empty")
            self.drop_group(gid, replaced_by=group.type)
        self.groups[gid] = group
        self.env.emit(GroupCreated(gid, self.env.now_ms, group.type))
        group.arm()  # a group rebuilt from records comes with its members' deadlines

    def drop_group(self, group_id: str, replaced_by: str) -> None:
        """Delete an empty group (its committed offsets stay: they belong to the id)."""
        group = self.groups.pop(group_id)
        if isinstance(group, ModernGroup):
            group.disarm()
        else:
            self.env.timers.cancel_where(
                lambda k: isinstance(k, tuple) and len(k) >= 2 and k[1] == group_id)
        self.env.emit(GroupDeleted(group_id, self.env.now_ms, group.type, replaced_by))

    # ------------------------------------------------------------------ time

    def _advance(self, now_ms: int) -> None:
        timers = self.env.timers
        if timers.idle_until(now_ms):  # (most requests: nothing due)
            self.env.now_ms = now_ms
            return
        for deadline, action in timers.due(now_ms):
            self.env.now_ms = max(deadline, self.env.now_ms)
            action()
        self.env.now_ms = now_ms
