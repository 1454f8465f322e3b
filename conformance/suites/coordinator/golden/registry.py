"""The golden transcripts' scenarios, by the catalogue id of the transcript they record.

A scenario records one transcript of a requirement of the catalogue
(``schemas/requirements.json``): its id is that requirement's id (``CLS-SYNC-01``,
``C848-HB-VAL-05``), with ``.N`` for the Nth transcript of one requirement
(``C848-HB-VAL-05.2``); the id names its transcript (``fixtures/golden/<ID>.jsonl``). Which
requirements a transcript is a case of, and what source states them, is the catalogue's
alone (each requirement's ``transcripts`` and ``source``): this registry holds only how to
record it. Never renumber: retire an id and add a new one; ``schemas/id-renames.json`` maps
the ids of the former golden catalogue (``CLASSIC-*``, ``CONNECT-*``) onto these. The title
says what the transcript shows; the requirement's statement is the catalogue's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ....catalogue.requirements import Requirement, default_catalogue

Scenario = Callable[[Any], Awaitable[None]]


class NotInCatalogue(ValueError):
    """A scenario's id names no transcript the catalogue lists for that requirement."""


@dataclass(frozen=True)
class Golden:
    id: str  # the transcript's id: its requirement's, .N for a further one
    api: str
    title: str
    expect: str  # an error name, or NONE for a successful behaviour
    settings: dict[str, Any] = field(default_factory=dict)  # coordinator settings it needs
    virtual_only: str | None = None  # why it cannot run on real time, or None
    fn: Scenario | None = None
    # API -> field paths the requirement pins that are unpinned by default (annotate.py)
    pins: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def transcript(self) -> str:
        return f"{self.id}.jsonl"

    @property
    def requirement(self) -> Requirement:
        """The requirement the id names; it must list this transcript."""
        own = self.id.split(".")[0]
        cat = default_catalogue()
        if own not in cat or self.transcript not in cat[own].transcripts:
            raise NotInCatalogue(f"golden scenario {self.id}: schemas/requirements.json does not list "
                                 f"{self.transcript} in the transcripts of {own}")
        return cat[own]

    @property
    def requirements(self) -> list[str]:
        """The requirements this transcript is a case of, as the catalogue lists them: its
        own, then the others that list it."""
        own = self.requirement.id
        return [own, *sorted(r.id for r in default_catalogue()
                             if r.id != own and self.transcript in r.transcripts)]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "transcript": self.transcript, "requirements": self.requirements,
                "api": self.api, "title": self.title, "expect": self.expect,
                "source": self.requirement.source.short,
                "settings": self.settings, "virtual_only": self.virtual_only,
                "pins": {api: list(paths) for api, paths in self.pins.items()}}


GOLDENS: dict[str, Golden] = {}


def golden(id: str, api: str, expect: str, title: str, *,
           settings: dict[str, Any] | None = None, virtual_only: str | None = None,
           pins: dict[str, tuple[str, ...]] | None = None) -> Callable[[Scenario], Scenario]:
    """Register the scenario that records transcript ``id``."""
    def register(fn: Scenario) -> Scenario:
        if id in GOLDENS:
            raise ValueError(f"golden scenario {id} is defined twice")
        GOLDENS[id] = Golden(id, api, title, expect, dict(settings or {}), virtual_only, fn,
                             dict(pins or {}))
        return fn
    return register
