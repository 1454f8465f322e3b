"""Sub-commands of the scripting layer: ``pcap``, ``replay``, and the
``serve`` options ``--record``, ``--faults`` and ``--script``.

Exit statuses, for every command here: 0 success; 1 a divergence (or a transcript that
cannot be exported); 2 usage errors and invalid input files (transcripts, plans and scripts
are refused with their line and the reason); 3 the peer could not be reached (BROKEN).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..protocol import Registry
from ..exchange.transcript import Transcript, TranscriptError, load_transcript

EXIT_OK, EXIT_DIVERGED, EXIT_USAGE, EXIT_BROKEN = 0, 1, 2, 3


def add_parsers(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "pcap", parents=[common], help="write a transcript as a pcap for Wireshark / tshark",
        description="Write the frames of a transcript (JSON Lines, as 'serve --record' writes) "
                    "as a pcap of loopback TCP: one stream per connection, with handshakes, "
                    "consistent sequence numbers and FINs where connections closed, so tshark "
                    "reassembles and dissects Kafka. Exit 0 on success, 2 on an invalid "
                    "transcript (its line and the reason are printed).")
    p.add_argument("transcript", type=Path, help="the transcript (.jsonl)")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="FILE",
                   help="the pcap file to write")
    p.add_argument("--server-port", type=int, default=9092, metavar="PORT",
                   help="the broker's TCP port in the capture; 9092 is tshark's Kafka port "
                        "(others need: tshark -d tcp.port==PORT,kafka)")
    p.set_defaults(func=cmd_pcap)

    r = sub.add_parser(
        "replay", parents=[common], help="replay transcripts against a coordinator and compare",
        description="Send each transcript's requests to the coordinator at HOST:PORT (same "
                    "connections, correlation ids and client ids; captured ids substituted) and "
                    "compare its responses with the recorded ones, with the transcript's "
                    "matchers for what legitimately varies. Waits follow the recording's time "
                    "steps on the wall clock, each capped. Prints PASS / FAIL / SKIP / BROKEN "
                    "per transcript; a failure shows the step, the message, the field, expected "
                    "and actual. Exit 0 all passed (or skipped), 1 a divergence, 2 usage or an "
                    "invalid transcript, 3 the coordinator could not be reached.")
    r.add_argument("transcripts", type=Path, nargs="+", metavar="FILE",
                   help="transcripts (.jsonl) or directories of them (e.g. fixtures/golden)")
    r.add_argument("--against", required=True, metavar="HOST:PORT", help="the coordinator")
    r.add_argument("--timeout", type=float, default=10.0, metavar="S",
                   help="longest wait for one response, or for a close, after its time step")
    r.add_argument("--max-step", type=float, default=30.0, metavar="S",
                   help="longest wait between two steps; a transcript that needs more is skipped")
    r.add_argument("--gap-ms", type=int, default=50, metavar="MS",
                   help="pause after a request when the next event is on another connection, so "
                        "the coordinator sees requests in the recorded order")
    r.add_argument("--keep-groups", action="store_true",
                   help="use the recorded group ids (by default each run gets its own suffix)")
    r.add_argument("--include-virtual-only", action="store_true",
                   help="also replay transcripts marked virtual-only (they wait long on real time)")
    r.set_defaults(func=cmd_replay)


def _fail(cmd: str, message: str, status: int) -> int:
    print(f"fakebroker {cmd}: {message}", file=sys.stderr)
    return status


def cmd_pcap(args: argparse.Namespace, registry: Registry) -> int:
    try:
        from .export import write_transcript_pcap
    except ImportError as e:  # scapy is an optional dependency (the test extra)
        return _fail("pcap", f"needs scapy ({e}); install it: pip install 'scapy>=2.6,<3'", EXIT_USAGE)
    if not 0 < args.server_port < 65536:
        return _fail("pcap", f"--server-port {args.server_port} is not a TCP port", EXIT_USAGE)
    from ..exchange.transcript import iter_events, open_lines
    # Streamed: events are read, checked and written one by one, so a huge transcript
    # costs flat memory and a fault in it (or too many connections) stops the export at
    # the line where it is found, leaving no output file.
    transcript = Transcript(None, [], str(args.transcript))
    try:
        frames, conns = write_transcript_pcap(
            transcript, registry, args.output, args.server_port,
            events=iter_events(open_lines(args.transcript), registry, transcript))
    except TranscriptError as e:
        return _fail("pcap", str(e), EXIT_USAGE)
    except ValueError as e:
        return _fail("pcap", f"{args.transcript}: {e}", EXIT_DIVERGED)
    except OSError as e:
        return _fail("pcap", f"cannot write {args.output}: {e.strerror or e}", EXIT_USAGE)
    for w in transcript.warnings:
        print(f"fakebroker pcap: warning: {w}", file=sys.stderr)
    print(f"{args.output}: {frames} frame(s) on {conns} connection(s), "
          f"broker port {args.server_port}")
    return EXIT_OK


# ---------------------------------------------------------------------------- serve

def extend_serve(sub: argparse._SubParsersAction) -> None:
    """Add the scripting options to the ``serve`` sub-command defined in server/serve_cli."""
    p = sub.choices["serve"]
    g = p.add_argument_group("scripting")
    g.add_argument("--record", type=Path, metavar="DIR",
                   help="write a transcript of this run (every frame, JSON Lines) to a new "
                        "file in DIR; its path is logged at start")
    g.add_argument("--faults", type=Path, metavar="FILE",
                   help="inject the faults of a plan (YAML or JSON, see "
                        "schemas/faultplan.schema.json); an invalid plan is refused, naming "
                        "its line and rule, before the server starts")
    g.add_argument("--script", type=Path, metavar="FILE",
                   help="instead of coordinating, play the broker's half of a transcript to "
                        "whatever client connects, compare the client's requests with the "
                        "transcript's, report the first divergence and exit (0: the client "
                        "followed the script, 1: it diverged or stalled)")
    g.add_argument("--script-timeout", type=float, default=30.0, metavar="S",
                   help="with --script: give up when the client sends nothing the script "
                        "waits for within S seconds")
    g.add_argument("--strict-topics", action="store_true",
                   help="the offset APIs know only the --topic topics, as a real broker: "
                        "others get UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID (the golden "
                        "transcripts expect this, with --topic events:3)")
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace, registry: Registry) -> int:
    from ..server import serve_cli
    if not (args.record or args.faults or args.script or args.strict_topics):
        return int(serve_cli.cmd_serve(args, registry))
    from . import serving
    return serving.run(args, registry)


def _collect(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        out += sorted(p.glob("*.jsonl")) if p.is_dir() else [p]
    return out


def serve_flags(header: dict[str, Any]) -> list[str]:
    """The ``fakebroker serve`` options that give a broker the one a transcript was recorded
    on: its coordinator settings other than Kafka's defaults, the topics it knew and, for a
    golden transcript, strict topics (goldens are recorded on a broker that answers
    UNKNOWN_TOPIC_OR_PARTITION for any other topic: golden_broker.golden_broker)."""
    from .golden_broker import KAFKA_DEFAULTS
    settings = header.get("coordinator") or {}
    flags = [f"--{k.replace('_', '-')} {v}" for k, v in settings.items()
             if k in SERVE_SETTINGS and KAFKA_DEFAULTS.get(k) != v]
    if header.get("origin") == "golden":
        flags.append("--strict-topics")
    topics = (header.get("meta") or {}).get("topics") or {}
    flags += [f"--topic {name}:{partitions}" for name, partitions in topics.items()]
    return flags


#: Coordinator settings of a transcript's header that ``fakebroker serve`` takes as a flag of
#: the same name (``--initial-rebalance-delay-ms``...): what a failed replay tells to paste.
SERVE_SETTINGS = ("initial_rebalance_delay_ms", "min_session_timeout_ms", "max_session_timeout_ms", "max_group_size")


def cmd_replay(args: argparse.Namespace, registry: Registry) -> int:
    import asyncio

    from .replay import Report, replay_all
    host, sep, port = args.against.rpartition(":")
    if not sep or not host or not port.isdigit():
        return _fail("replay", f"--against {args.against!r}: expected HOST:PORT", EXIT_USAGE)
    if args.timeout <= 0 or args.max_step <= 0 or args.gap_ms < 0:
        return _fail("replay", "--timeout and --max-step must be positive, --gap-ms not negative",
                     EXIT_USAGE)
    files = _collect(args.transcripts)
    if not files:
        return _fail("replay", "no transcripts given (a directory without *.jsonl?)", EXIT_USAGE)
    transcripts = []
    for f in files:
        try:
            transcripts.append(load_transcript("replay", f, registry))
        except TranscriptError as e:
            return _fail("replay", str(e), EXIT_USAGE)
    from .golden_broker import KAFKA_DEFAULTS
    print(f"replaying {len(transcripts)} transcript(s) against {args.against}, one at a time", flush=True)

    async def each() -> list[Report]:
        """One transcript per replay_all call, so each result is printed as it finishes."""
        reports: list[Report] = []
        for i, t in enumerate(transcripts, 1):
            for r in await replay_all([t], args.against, registry, timeout_s=args.timeout,
                                      max_step_s=args.max_step, gap_s=args.gap_ms / 1000,
                                      unique=not args.keep_groups,
                                      include_virtual_only=args.include_virtual_only):
                reports.append(r)
                print(f"[{i}/{len(transcripts)}] {r.render(registry)}", flush=True)
                settings = (t.header or {}).get("coordinator") or {}
                unusual = {k: v for k, v in settings.items() if KAFKA_DEFAULTS.get(k) != v}
                if r.status == "FAIL" and unusual:
                    print("  recorded on a coordinator with "
                          + ", ".join(f"{k}={v}" for k, v in unusual.items()), flush=True)
                flags = serve_flags(t.header or {})
                if r.status == "FAIL" and flags:
                    print(f"  to serve it as recorded: fakebroker serve {' '.join(flags)}", flush=True)
                if r.broken:  # the coordinator is unreachable: the rest would be too
                    return reports
        return reports

    reports = asyncio.run(each())
    counts = {s: sum(1 for r in reports if r.status == s) for s in ("PASS", "FAIL", "SKIP", "BROKEN")}
    untried = len(transcripts) - len(reports)
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped"
          + (f", stopped: the coordinator is unreachable ({untried} not tried)" if counts["BROKEN"] else ""))
    if counts["BROKEN"]:
        return EXIT_BROKEN
    return EXIT_DIVERGED if counts["FAIL"] else EXIT_OK
