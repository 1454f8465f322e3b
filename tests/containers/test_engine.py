"""The project's clean-up in place of testcontainers' reaper: ``cleanup`` removes the
containers whose process has ended and leaves a live process's alone."""

from __future__ import annotations

import os
import subprocess
import sys

from fakebroker.containers.engine import MANAGED_LABEL, OWNER_LABEL, client


def test_cleanup_removes_the_containers_of_ended_processes_only(fakebroker_image: str) -> None:
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    c = client()
    made = {owner: c.containers.create(fakebroker_image, labels={MANAGED_LABEL: "true", OWNER_LABEL: owner})
            for owner in (ended.stdout.strip(), str(os.getpid()))}
    try:
        res = subprocess.run([sys.executable, "-m", "fakebroker.containers", "cleanup"],
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        left = {x.id for x in c.containers.list(all=True, filters={"label": f"{MANAGED_LABEL}=true"})}
        assert made[ended.stdout.strip()].id not in left and made[str(os.getpid())].id in left
        assert made[ended.stdout.strip()].short_id in res.stdout
    finally:
        for x in made.values():
            try:
                x.remove(force=True)
            except Exception:  # noqa: BLE001 - removed by the cleanup under test
                pass
