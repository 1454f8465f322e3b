"""The ``fakebroker`` command: one sub-command per job."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import codec_cli
from .cli_text import add_version
from .exit_codes import EXIT_USAGE
from .realkafka import serve_group_log
from .script import cli as script_cli
from .server import serve_cli
from .protocol import Registry, SpecError, default_schema_dir


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--schemas", action="append", type=Path, metavar="DIR",
                        help="also load specs from DIR, after the bundled schemas/ (repeatable). "
                             "A spec file for a new API needs no code.")
    parser = argparse.ArgumentParser(
        prog="fakebroker",
        description="A scriptable fake Kafka broker for Kafka Connect's group protocols, "
                    "and tools for the Kafka wire format.",
        epilog="exit codes: 0 ok, 1 failed (a difference, malformed bytes), 2 usage error, "
               "3 broken (see docs/running.md, Exit codes)")
    add_version(parser, "fakebroker")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve_cli.add_parser(sub, common)
    codec_cli.add_parsers(sub, common)
    script_cli.add_parsers(sub, common)
    script_cli.extend_serve(sub)
    serve_group_log.extend_serve(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        registry = Registry.load(default_schema_dir(), *(args.schemas or []))
    except SpecError as e:
        print(f"fakebroker: invalid spec: {e}", file=sys.stderr)
        return EXIT_USAGE
    return int(args.func(args, registry))


if __name__ == "__main__":
    sys.exit(main())
