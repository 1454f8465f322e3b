"""What the user named on the command line: files, folders and globs, sorted into
transcripts, pcaps and report folders, each with its content hash. Problems are one-line
messages, never exceptions."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..provenance import sha256_file

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


def _add(out: Inputs, path: Path, named: bool) -> None:
    name = path.name.lower()
    try:
        if path.is_dir():
            if (path / "results.json").is_file():
                out.reports[str(path.resolve())] = sha256_file(path / "results.json")
            for child in sorted(path.iterdir()):
                if child.is_dir() or child.name.lower().endswith(TRANSCRIPT_EXT + PCAP_EXT):
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
