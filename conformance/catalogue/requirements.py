"""The requirement catalogue: ``schemas/requirements.json``, validated, as dataclasses.

    cat = load_catalogue()
    req = cat["CLS-JOIN-01"]          # Requirement(level="MUST", source=Source(...), ...)
    req.source.link                  # the public document and section it cites, as a URL
    cat.for_suite("coordinator")     # the entries a coordinator target is certified on

Validation is the JSON Schema (``schemas/requirements.schema.json``) plus the named rules
below; every problem is reported with the entry id and the rule. Sources are public
documents by id (``schemas/sources.json``: KIP-415, CLASSIC, CONNECT-848, ...); a MUST cites
one of kind ``spec``, never Apache Kafka's behaviour alone (rule must-cites-spec).

One id scheme: ids retired by a merge or a rename (the former golden catalogue's
``CLASSIC-*`` and ``CONNECT-*``) are listed in ``schemas/id-renames.json`` and stay accepted
as aliases where a user names requirements (``-k``, ``conformance list``): ``cat.resolve(id)``.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from fakebroker.protocol import default_schema_dir

CATALOGUE_FILE = "requirements.json"
SCHEMA_FILE = "requirements.schema.json"
RENAMES_FILE = "id-renames.json"  # retired id -> the requirement that holds its rule now
SOURCES_FILE = "sources.json"     # the public documents sources cite, by id
SOURCES_SCHEMA_FILE = "sources.schema.json"
SPEC = "spec"                     # a source kind a MUST may cite (vs "reference-implementation")
_ID = re.compile(r"[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*-[0-9]{2}")
LEVELS = ("MUST", "SHOULD", "MAY")


class CatalogueError(ValueError):
    """The catalogue breaks its schema or a rule; ``problems`` lists every one."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid requirement catalogue:\n  " + "\n  ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Document:
    id: str        # "KIP-415"
    kind: str      # "spec" or "reference-implementation"
    title: str
    url: str


@dataclass(frozen=True)
class Source:
    doc: Document
    section: str   # headings, outermost first, " > " between them

    @property
    def short(self) -> str:
        return f"{self.doc.id} § {self.section}"

    @property
    def link(self) -> str:
        """Where to read it: a message definition's file below the folder's URL; else the
        document with a text fragment for the innermost heading (browsers that support
        fragments scroll to it, the others open the document). Apache Kafka's behaviour has
        no section to point into: its tree."""
        heading = self.section.split(" > ")[-1]
        if self.doc.kind != SPEC:
            return self.doc.url
        if heading.endswith(".json"):
            return f"{self.doc.url}/{urllib.parse.quote(heading)}"
        return f"{self.doc.url}#:~:text={urllib.parse.quote(heading)}"


@dataclass(frozen=True, repr=False)
class Requirement:
    id: str
    level: str
    feature: str
    binds: tuple[str, ...]
    protocols: tuple[str, ...]
    source: Source
    statement: str
    needs: tuple[str, ...] = ()
    untestable: str | None = None
    errata: tuple[int, ...] = ()
    transcripts: tuple[str, ...] = ()  # golden transcripts replayed as cases (conformance.harness.golden)
    # The API versions the statement applies to: (api, lowest, highest or None: open).
    versions: tuple[tuple[str, int, int | None], ...] = ()

    def __repr__(self) -> str:  # short: pytest and Allure show it as the parameter's value
        return self.id

    @property
    def version_needs(self) -> dict[str, tuple[int, int | None]]:
        """API -> the version range the statement applies to (fakebroker.negotiation.Need)."""
        return {api: (lo, hi) for api, lo, hi in self.versions}

    @property
    def family(self) -> str:
        return self.id.split("-")[0]


@dataclass(frozen=True)
class Catalogue:
    requirements: tuple[Requirement, ...]
    renames: dict[str, str] = field(default_factory=dict)  # retired id -> current id
    documents: dict[str, Document] = field(default_factory=dict)  # sources.json, by id

    def cited(self) -> list[Document]:
        """The documents the requirements cite, in the order of sources.json."""
        ids = {r.source.doc.id for r in self.requirements}
        return [d for d in self.documents.values() if d.id in ids]

    def __iter__(self) -> Iterator[Requirement]:
        return iter(self.requirements)

    def __len__(self) -> int:
        return len(self.requirements)

    def __getitem__(self, req_id: str) -> Requirement:
        for r in self.requirements:
            if r.id == req_id:
                return r
        raise KeyError(f"no requirement {req_id!r} in the catalogue")

    def __contains__(self, req_id: object) -> bool:
        return any(r.id == req_id for r in self.requirements)

    def resolve(self, req_id: str) -> str:
        """The current id of ``req_id`` (itself, or what a retired id was merged or renamed into)."""
        return self.renames.get(req_id, req_id)

    def aliases(self, req_id: str) -> list[str]:
        """The retired ids that now name ``req_id``."""
        return sorted(old for old, new in self.renames.items() if new == req_id)

    def resolve_ids_in(self, text: str) -> str:
        """``text`` (a -k expression) with every retired id replaced by its current one."""
        return _ID.sub(lambda m: self.resolve(m.group(0)), text)

    def for_suite(self, suite: str) -> list[Requirement]:
        """The entries binding ``suite`` ("coordinator" or "worker"); "all" gives every one."""
        if suite == "all":
            return list(self.requirements)
        return [r for r in self.requirements if suite in r.binds]


# ---------------------------------------------------------------- rules

def rule_schema(data: Any, schema: dict[str, Any], sep: str = "/", top: str = "(top)") -> list[str]:
    """The JSON Schema, every violation with its path (its parts joined by ``sep``; ``top``
    for the document itself)."""
    v = jsonschema.Draft202012Validator(schema)
    out = []
    for e in sorted(v.iter_errors(data), key=lambda e: list(e.absolute_path)):
        where = sep.join(str(p) for p in e.absolute_path) or top
        out.append(f"{where}: {e.message} (rule schema)")
    return out


def rule_unique_ids(entries: list[dict[str, Any]]) -> list[str]:
    """An id names one statement, once."""
    seen: set[str] = set()
    out = []
    for e in entries:
        if e["id"] in seen:
            out.append(f"{e['id']}: used twice (rule unique-ids)")
        seen.add(e["id"])
    return out


def rule_source_known(entries: list[dict[str, Any]], documents: dict[str, Document]) -> list[str]:
    """Each source names a document of sources.json."""
    return [f"{e['id']}: source.doc {e['source']['doc']!r} is not in {SOURCES_FILE} (rule source-known)"
            for e in entries if e["source"]["doc"] not in documents]


def rule_must_cites_spec(entries: list[dict[str, Any]], documents: dict[str, Document]) -> list[str]:
    """A MUST cites a statement of a specification; what only Apache Kafka does is at most a
    SHOULD (issue #25's catalogue hygiene)."""
    return [f"{e['id']}: a MUST cites {e['source']['doc']}, which is not a specification "
            f"(kind {documents[e['source']['doc']].kind}) (rule must-cites-spec)"
            for e in entries if e["level"] == "MUST" and e["source"]["doc"] in documents
            and documents[e["source"]["doc"]].kind != SPEC]


def rule_untestable_has_no_needs_mismatch(entries: list[dict[str, Any]]) -> list[str]:
    """An untestable entry explains itself in words, not only by a missing capability."""
    return [f"{e['id']}: 'untestable' must say why (rule untestable-reason)"
            for e in entries if "untestable" in e and len(e["untestable"].split()) < 5]


def rule_versions_known(entries: list[dict[str, Any]]) -> list[str]:
    """A version range names an API of the codec, lowest first, and shares a version with
    the codec's (a statement's range may reach versions the codec no longer speaks)."""
    from fakebroker.protocol import default_registry
    reg = default_registry()
    out = []
    for e in entries:
        for api, (lo, hi) in (e.get("versions") or {}).items():
            key = f"{api}Request"
            if key not in reg:
                out.append(f"{e['id']}: versions names {api!r}, not an API (rule versions-known)")
                continue
            mt = reg[key]
            top = mt.highest if hi is None else hi
            if not (lo <= top and lo <= mt.highest and top >= mt.lowest):
                out.append(f"{e['id']}: versions {api} [{lo}, {hi}] is not a range, lowest first, "
                           f"that shares a version with {api} {mt.lowest}-{mt.highest} "
                           "(rule versions-known)")
    return out


def rule_renames_resolve(entries: list[dict[str, Any]], renames: dict[str, str]) -> list[str]:
    """A retired id names a current requirement and is not itself reused."""
    ids = {e["id"] for e in entries}
    return ([f"{old}: renamed to {new}, which is not in the catalogue (rule renames)"
             for old, new in sorted(renames.items()) if new not in ids]
            + [f"{old}: retired (id-renames) but still a requirement's id (rule renames)"
               for old in sorted(renames) if old in ids])


def validate_catalogue_data(data: Any, schema: dict[str, Any],
                            documents: dict[str, Document] | None = None) -> list[str]:
    problems = rule_schema(data, schema)
    if problems:
        return problems
    entries = data["requirements"]
    docs = load_documents() if documents is None else documents
    return (rule_unique_ids(entries) + rule_source_known(entries, docs) + rule_must_cites_spec(entries, docs)
            + rule_untestable_has_no_needs_mismatch(entries) + rule_versions_known(entries))


# ---------------------------------------------------------------- loading

def load_documents(path: Path | None = None) -> dict[str, Document]:
    """The sources table (``schemas/sources.json``), by id; a CatalogueError names what is wrong."""
    schemas = default_schema_dir()
    path = path or schemas / SOURCES_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    schema = json.loads((schemas / SOURCES_SCHEMA_FILE).read_text(encoding="utf-8"))
    problems = [f"{path.name}: {p}" for p in rule_schema(data, schema)]
    ids = [d["id"] for d in data.get("sources", [])] if not problems else []
    problems += [f"{path.name}: {i}: used twice (rule unique-ids)" for i in sorted({i for i in ids if ids.count(i) > 1})]
    if problems:
        raise CatalogueError(problems)
    return {d["id"]: Document(d["id"], d["kind"], d["title"], d["url"]) for d in data["sources"]}


def _from_entry(e: dict[str, Any], documents: dict[str, Document]) -> Requirement:
    return Requirement(
        id=e["id"], level=e["level"], feature=e["feature"], binds=tuple(e["binds"]),
        protocols=tuple(e["protocols"]), source=Source(documents[e["source"]["doc"]], e["source"]["section"]),
        statement=e["statement"], needs=tuple(e.get("needs", ())), untestable=e.get("untestable"),
        errata=tuple(e.get("errata", ())), transcripts=tuple(e.get("transcripts", ())),
        versions=tuple((api, lo, hi) for api, (lo, hi) in (e.get("versions") or {}).items()))


def load_catalogue(path: Path | str | None = None) -> Catalogue:
    schemas = default_schema_dir()
    path = Path(path) if path is not None else schemas / CATALOGUE_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    schema = json.loads((schemas / SCHEMA_FILE).read_text(encoding="utf-8"))
    documents = load_documents()
    problems = validate_catalogue_data(data, schema, documents)
    renames = load_renames(path.parent / RENAMES_FILE)
    if not problems:
        problems = rule_renames_resolve(data["requirements"], renames)
    if problems:
        raise CatalogueError(problems)
    return Catalogue(tuple(_from_entry(e, documents) for e in data["requirements"]), renames, documents)


def load_renames(path: Path) -> dict[str, str]:
    """The retired ids (``requirements`` of id-renames.json); {} when the file is absent."""
    if not path.is_file():
        return {}
    return dict(json.loads(path.read_text(encoding="utf-8"))["requirements"])


_DEFAULT: Catalogue | None = None


def default_catalogue() -> Catalogue:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = load_catalogue()
    return _DEFAULT
