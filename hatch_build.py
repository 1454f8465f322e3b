"""Wheel build hook: ship the specification documents the catalogue cites (``../shared``:
DESIGN.md and spec/) as ``conformance/_shared``, so an installed package finds them
(``conformance.catalogue.shared_dir``) for spec titles, digests and report links. They live
beside the checkout, not in it, so a build without them still succeeds (the certificate
then says they were not at hand)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class SharedDocsHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        shared = Path(self.root).resolve().parent / "shared"
        for name in ("spec", "DESIGN.md"):
            if (shared / name).exists():
                build_data["force_include"][str(shared / name)] = f"conformance/_shared/{name}"
