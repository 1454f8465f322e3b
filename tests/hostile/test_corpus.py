"""The hostile-input corpus (tests/data/hostile/, written by make_corpus.py): every
command that reads a kind of file is run on each file of that kind. Each must be refused
with one line naming the file and the rule broken, the command's documented exit status,
no traceback, in bounded time and memory."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from conformance import cli as conformance_cli
from fakebroker import cli as fakebroker_cli
from fakebroker.protocol import Registry, default_registry, default_schema_dir
from fakebroker.exchange.transcript import load

HOSTILE = Path(__file__).resolve().parents[1] / "data" / "hostile"
MAX_CPU_SECONDS = 10.0  # CPU time, not wall: other processes' load does not count; each
# takes well under 1 s (the alias bomb took 30 s and 2.2 GB before the limits)
MAX_PEAK_BYTES = 64 * 1024 * 1024

# file -> what the refusal must name (the rule, or the reason where a command has no rule ids)
TARGETS = {
    "target-not-utf8.toml": "encoding", "target-huge-int.toml": "integer-too-long",
    "target-deep-array.toml": "nesting-too-deep", "target-deep-table.toml": "nesting-too-deep",
    "target-broken.toml": "toml",
}
TRANSCRIPTS = {
    "transcript-not-utf8.jsonl": "not UTF-8", "transcript-huge-int.jsonl": "integer-too-long",
    "transcript-deep.jsonl": "nesting-too-deep", "transcript-not-json.jsonl": "invalid JSON",
    "transcript-only-torn.jsonl": "truncated line",
}
PLANS = {
    "plan-huge-int.yaml": "integer-too-long", "plan-huge-int.json": "integer-too-long",
    "plan-deep.yaml": "nesting-too-deep", "plan-deep.json": "nesting-too-deep",
    "plan-match-int-key.yaml": "key-not-string", "plan-min-nan.yaml": "not a finite number",
    "plan-max-inf.json": "json-non-finite", "plan-not-utf8.yaml": "encoding",
    "plan-alias-bomb.yaml": "alias-expansion", "plan-alias-tall.yaml": "additionalProperties",
}
FRAMES = {  # `encode` documents exit 1 for invalid input
    "frame-not-utf8.json": "encoding", "frame-header-list.json": "header: must be an object",
    "frame-huge-int.json": "integer-too-long", "frame-deep.json": "nesting-too-deep",
    "frame-correlation-text.json": "CorrelationId",
}
SCHEMAS = {
    "schemas-field-self": "field-name-reserved", "schemas-field-collide": "field-attribute-collision",
    "schemas-broken-json": "json-syntax", "schemas-no-fields": "no-specs",
    "schemas-huge-int": "integer-too-long", "schemas-deep": "nesting-too-deep",
    "schemas-not-utf8": "not UTF-8", "schemas-file.json": "not-a-directory",
}


def _cases() -> list[tuple[str, list[str], int, str, str]]:
    """(id, argv, exit status, text the one line must hold, file it must name)."""
    out = []
    for name, rule in TARGETS.items():
        out.append((f"list-{name}", ["conformance", "list", "--target", name], 2, rule, name))
    for name, rule in TRANSCRIPTS.items():
        out += [(f"pcap-{name}", ["pcap", name, "-o", "{tmp}/x.pcap"], 2, rule, name),
                (f"replay-{name}", ["replay", name, "--against", "127.0.0.1:9"], 2, rule, name),
                (f"script-{name}", ["serve", "--port", "0", "--script", name], 2, rule, name)]
    for name, rule in PLANS.items():
        out.append((f"faults-{name}", ["serve", "--port", "0", "--faults", name], 2, rule, name))
    for name, rule in FRAMES.items():
        out.append((f"encode-{name}", ["encode", name], 1, rule, name))
    for name, rule in SCHEMAS.items():
        out.append((f"schemas-{name}", ["decode", "--schemas", name, "00000000"], 2, rule, name))
    for opt, value, rule in [("--port", "70000", "not a TCP port"),
                             ("--max-frame-bytes", "-5", "must be at least"),
                             ("--ready-file", "/nonexistent/d/f", "does not exist"),
                             ("--group-log", "127.0.0.1:1", "cannot connect")]:
        out.append((f"serve{opt}", ["serve", "--port", "0", opt, value], 2, rule, opt))
    return out


_BUNDLED: dict[str, Registry] = {}


@pytest.fixture(autouse=True)
def _bundled_registry_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command loads the bundled specs (seconds under tracemalloc): reuse the loaded
    registry for those; a --schemas case still loads its directory for real."""
    real = Registry.load

    def load(*dirs: Path | str) -> Registry:
        if [Path(d) for d in dirs] == [default_schema_dir()]:
            return _BUNDLED.setdefault("registry", real(*dirs))
        return real(*dirs)
    monkeypatch.setattr(Registry, "load", load)


def test_every_corpus_file_has_a_case() -> None:
    named = set(TARGETS) | set(TRANSCRIPTS) | set(PLANS) | set(FRAMES) | set(SCHEMAS) \
        | {"transcript-torn.jsonl"}
    assert {p.name for p in HOSTILE.iterdir()} == named


@pytest.mark.parametrize("argv,status,rule,names", [c[1:] for c in _cases()],
                         ids=[c[0] for c in _cases()])
def test_hostile_input_is_one_line_refusal(argv: list[str], status: int, rule: str, names: str,
                                           tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    args = [str(HOSTILE / a) if (HOSTILE / a).exists() and a != "." else a for a in args]
    measure = any(w in names for w in ("alias", "deep", "huge"))  # tracemalloc is slow
    if measure:
        tracemalloc.start()
    started = time.process_time()
    try:
        if args[0] == "conformance":
            code = conformance_cli.main(args[1:])
        else:
            code = fakebroker_cli.main(args)
        took = time.process_time() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if measure:
            tracemalloc.stop()
    out, err = capsys.readouterr()
    assert code == status, err
    assert "Traceback" not in err + out
    lines = [line for line in err.splitlines() if " INFO " not in line]
    # conformance prints its target header line, then one line per problem
    assert len(lines) == (2 if args[0] == "conformance" else 1), err
    assert names in err and rule in err, err
    assert took < MAX_CPU_SECONDS, f"took {took:.1f} s of CPU"
    assert peak < MAX_PEAK_BYTES, f"peak {peak / 1e6:.0f} MB"


def test_a_torn_last_line_is_left_out_with_a_warning(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    torn = HOSTILE / "transcript-torn.jsonl"
    t = load(torn, default_registry())
    complete = torn.read_text().count("\n")
    assert len(t.events) == complete - 1  # every complete line but the header
    assert t.warnings == [f"{torn}:{complete + 1}: the last line is torn (cut after "
                          f"{len(torn.read_text().splitlines()[-1])} characters, no newline): "
                          f"left out; kept {complete - 1} event(s) from the {complete} "
                          "complete line(s)"]
    assert fakebroker_cli.main(["pcap", str(torn), "-o", str(tmp_path / "t.pcap")]) == 0
    err = capsys.readouterr().err
    assert err == f"fakebroker pcap: warning: {t.warnings[0]}\n"
    assert (tmp_path / "t.pcap").stat().st_size > 0
