"""Mutants declared once, as data: ``fixtures/mutants/workers.toml`` (the bundled workers run
with ``--mutant NAME``) and ``fixtures/mutants/coordinators.toml`` (the fake broker with
``[fakebroker] mutant = NAME``).

Each table is one mutant, keyed by its defect's name: ``base``, the bundled target
(``fixtures/targets/<base>.toml``) it is made from; ``defect``, one line on the obligation it
breaks; ``refused_by``, the catalogue id whose case must refuse it; optionally ``via`` (the
case that leads a worker into a defect an invariant refuses, run in its stead), ``survives``
(the written reason a mutant may survive), and ``target``, the handful of target fields
that differ from the base. Its target is generated in memory from that: ``load_target``
takes ``mutant:NAME``. Nothing here imports the suite, so the target loader can.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]  # the checkout (conformance/harness/ is two down)
MUTANT_DIR = ROOT / "fixtures" / "mutants"
TARGET_DIR = ROOT / "fixtures" / "targets"
#: ``load_target("mutant:NAME")``: the target of a declared mutant.
PREFIX = "mutant:"
#: The declarations (a mutant's kind, worker or coordinator, is its base's).
FILES = ("workers.toml", "coordinators.toml")
FIELDS = frozenset({"base", "defect", "refused_by", "via", "survives", "target"})
REQUIRED = ("base", "defect", "refused_by")


class DeclarationError(ValueError):
    """A declaration that cannot make a target: one line naming the file, the mutant, the field and the rule."""


@dataclass(frozen=True)
class DeclaredMutant:
    name: str
    kind: str            # "worker" or "coordinator"
    base: str            # the bundled target's stem in fixtures/targets/
    defect: str          # one line: the obligation it breaks
    refused_by: str      # the catalogue id whose case must refuse it
    via: str = ""        # the case that leads into a defect an invariant refuses
    survives: str = ""   # a written reason, when no case can refuse it
    target: Mapping[str, Any] = field(default_factory=dict)

    @property
    def first_case(self) -> str:
        return self.via or self.refused_by

    @property
    def reference(self) -> str:
        """What ``load_target`` takes for this mutant's target."""
        return PREFIX + self.name

    @property
    def group_log(self) -> bool:
        """A coordinator mutant writing a group log (it needs a real Kafka)."""
        return "group_log" in base_data(self.base)

    def target_data(self) -> dict[str, Any]:
        """The target: the base's, with this mutant's fields and its defect switched on."""
        data = {**base_data(self.base), **self.target}
        data["name"] = f"{'worker-' if self.kind == 'worker' else ''}mutant-{self.name}"
        data["description"] = f"MUTANT {self.name} of {self.base}: {self.defect}."
        impl = dict(data.get("implementation", {}))
        if self.kind == "worker":
            impl["name"] = f"{impl.get('name', self.base)} (mutant {self.name})"
            data["start"] = {**data["start"], "command": f"{data['start']['command']} --mutant {self.name}"}
        else:
            data["fakebroker"] = {**data.get("fakebroker", {}), "mutant": self.name}
        data["implementation"] = impl
        return data


@cache
def base_data(stem: str) -> dict[str, Any]:
    with (TARGET_DIR / f"{stem}.toml").open("rb") as f:
        return tomllib.load(f)


def _declared(file: Path) -> list[DeclaredMutant]:
    with file.open("rb") as f:
        tables = tomllib.load(f)
    out = []
    for name, t in tables.items():
        where = f"{file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}: [{name}]"
        unknown = sorted(set(t) - FIELDS)
        if unknown:
            raise DeclarationError(f"{where}.{unknown[0]}: not a mutant field; known: {', '.join(sorted(FIELDS))} "
                                   f"(rule mutant-fields)")
        missing = [k for k in REQUIRED if not t.get(k)]
        if missing:
            raise DeclarationError(f"{where}.{missing[0]}: every mutant names it (rule mutant-fields)")
        if not (TARGET_DIR / f"{t['base']}.toml").is_file():
            raise DeclarationError(f"{where}.base: no bundled target fixtures/targets/{t['base']}.toml "
                                   f"(rule mutant-base)")
        out.append(DeclaredMutant(name, base_data(t["base"])["kind"], t["base"], t["defect"], t["refused_by"],
                                  t.get("via", ""), t.get("survives", ""), t.get("target", {})))
    return out


@cache
def declared_mutants(directory: Path = MUTANT_DIR) -> dict[str, DeclaredMutant]:
    """Every declared mutant by name, workers' then coordinators', in file order."""
    out: dict[str, DeclaredMutant] = {}
    for file in FILES:
        for m in _declared(directory / file):
            if m.name in out:
                raise DeclarationError(f"{file}: [{m.name}] is declared twice (rule mutant-unique)")
            out[m.name] = m
    return out


def mutants_of(kind: str, directory: Path = MUTANT_DIR) -> list[DeclaredMutant]:
    return [m for m in declared_mutants(directory).values() if m.kind == kind]


def mutant_target_data(reference: str) -> dict[str, Any]:
    """The target data of ``mutant:NAME``."""
    name = reference.removeprefix(PREFIX)
    known = declared_mutants()
    if name not in known:
        raise DeclarationError(f"{reference}: no mutant of that name is declared in fixtures/mutants/*.toml "
                               f"(rule mutant-known)")
    return known[name].target_data()
