"""What the user named on the command line: files, folders and globs, sorted into
transcripts, pcaps and report folders, each with its content hash. Problems are one-line
messages, never exceptions."""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..reports.provenance import sha256_file
from ..reports.results_file import ResultsError
from ..reports.results_file import read as read_results

TRANSCRIPT_EXT = (".jsonl",)
PCAP_EXT = (".pcap", ".pcapng")
REPORT_FILES = ("results.json",)


@dataclass
class Inputs:
    transcripts: dict[str, str] = field(default_factory=dict)  # path -> sha256
    pcaps: dict[str, str] = field(default_factory=dict)
    reports: dict[str, str] = field(default_factory=dict)  # folder -> sha256 of results.json
    problems: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.transcripts or self.pcaps or self.reports)

    def hashes(self) -> set[str]:
        return {*self.transcripts.values(), *self.pcaps.values(), *self.reports.values()}


def _attached_pcap(path: Path) -> bool:
    """A case's pcap in Allure's results: the same frames as its transcript attachment
    (``transcript.jsonl``, read instead), so a report folder's traffic counts once."""
    return path.parent.name == "allure-results" and path.name.endswith("-attachment.pcap")


def _add(out: Inputs, path: Path, named: bool) -> None:
    name = path.name.lower()
    try:
        if path.is_dir():
            if (path / "results.json").is_file():
                out.reports[str(path.resolve())] = sha256_file(path / "results.json")
            for child in sorted(path.iterdir()):
                if child.is_dir() or child.name.lower().endswith(TRANSCRIPT_EXT + PCAP_EXT):
                    if not _attached_pcap(child):
                        _add(out, child, False)
        elif name.endswith(TRANSCRIPT_EXT):
            out.transcripts[str(path.resolve())] = sha256_file(path)
        elif name.endswith(PCAP_EXT):
            out.pcaps[str(path.resolve())] = sha256_file(path)
        elif name in REPORT_FILES:
            _add(out, path.parent, named)
        elif named:
            out.problems.append(f"{path}: not a transcript (.jsonl), capture (.pcap, .pcapng) "
                                "or report folder (with results.json)")
    except OSError as e:
        out.problems.append(f"{path}: cannot read: {e.strerror or e}")


def resolve(paths: list[str]) -> Inputs:
    out = Inputs()
    for p in paths:
        matches = sorted(glob.glob(p, recursive=True)) if glob.has_magic(p) else [p]
        if not matches or not all(os.path.exists(m) for m in matches):
            out.problems.append(f"{p}: no such file or folder")
            continue
        for m in matches:
            before = len(out.transcripts) + len(out.pcaps) + len(out.reports)
            _add(out, Path(m), True)
            if os.path.isdir(m) and len(out.transcripts) + len(out.pcaps) + len(out.reports) == before:
                out.problems.append(f"{m}: a folder with no transcript (.jsonl), capture (.pcap, "
                                    ".pcapng) or report folder (with results.json) in it")
    return out


# A transcript starts with a JSON object on its first non-blank line; a capture with a pcap
# or pcapng magic number. Checked on the driver before Spark starts (a few bytes per file),
# so input that is not what it claims is refused in well under a second.
PCAP_MAGIC = (b"\xa1\xb2\xc3\xd4", b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\x3c\x4d", b"\x4d\x3c\xb2\xa1",
              b"\x0a\x0d\x0d\x0a")
FIRST_LINE_MAX = 1 << 20


def precheck(inputs: Inputs) -> None:
    """Move every transcript, capture or results.json that cannot be one into ``problems``
    (one line each, naming the file, the line or field, and the rule); empty files stay, for
    the rejects table."""
    for path in list(inputs.transcripts):
        problem = _first_line_problem(path)
        if problem:
            inputs.problems.append(f"{path}:{problem}")
            del inputs.transcripts[path]
    for path in list(inputs.pcaps):
        try:
            with open(path, "rb") as f:
                magic = f.read(4)
        except OSError as e:
            inputs.problems.append(f"{path}: cannot read: {e.strerror}")
            del inputs.pcaps[path]
            continue
        if magic and magic not in PCAP_MAGIC:
            inputs.problems.append(f"{path}: not a pcap or pcapng capture (magic {magic.hex()})")
            del inputs.pcaps[path]
    for folder in list(inputs.reports):
        try:
            read_results(os.path.join(folder, "results.json"))
        except ResultsError as e:
            inputs.problems.append(str(e))
            del inputs.reports[folder]


def _first_line_problem(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            for n, raw in enumerate(f, 1):
                if raw.strip():
                    break
                if n > 1000:
                    return None
            else:
                return None  # empty: the rejects table says so
            raw = raw[:FIRST_LINE_MAX]
    except OSError as e:
        return f" cannot read: {e.strerror}"
    try:
        doc = json.loads(raw)
    except ValueError as e:
        return f"line {n}: invalid JSON ({e.msg} at column {e.colno}): not a transcript (JSON lines)"
    if not isinstance(doc, dict):
        return f"line {n}: a JSON {type(doc).__name__}, not an object: not a transcript (JSON lines)"
    return None
