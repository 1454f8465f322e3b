"""Installed as a wheel, outside the checkout, the suite finds its catalogue, golden
transcripts and spec documents: ``conformance run`` on the bundled fake broker target
certifies with the same counts as in the checkout.

The wheel is built with pip (build isolation: hatchling from the pip cache or the index) and
installed with ``--no-deps`` into a fresh venv that borrows the project venv's dependencies
through a ``.pth`` line (not its editable install: a path line added that way does not run
the ``.pth`` hooks inside it), and is run from a folder outside the checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from conformance.catalogue import default_catalogue
from conformance.scope import scope_ids
from conformance.target import load_target

ROOT = Path(__file__).resolve().parents[2]
FAKEBROKER = ROOT / "fixtures" / "targets" / "fakebroker.toml"


def clean_env() -> dict[str, str]:
    """No PYTHONPATH (it would import the checkout) and no CI variables."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "CONFORMANCE_GOLDEN_DIR", "FAKEBROKER_SCHEMAS")}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(base / "dist"),
                            str(ROOT)], capture_output=True, text=True, timeout=600, env=clean_env())
    if built.returncode != 0:
        pytest.fail(f"the wheel did not build (pip needs hatchling from its cache or the index):\n"
                    f"{built.stderr[-3000:]}")
    wheel = next((base / "dist").glob("connect_conformance-*.whl"))
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "borrowed-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    inst = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
                           str(wheel)], capture_output=True, text=True, timeout=300, env=clean_env())
    assert inst.returncode == 0, inst.stderr[-3000:]
    return env_dir


def test_the_installed_wheel_certifies_with_the_checkouts_counts(installed: Path, tmp_path: Path) -> None:
    where = subprocess.run([str(installed / "bin" / "python"), "-c", "import conformance; print(conformance.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, env=clean_env())
    assert str(installed) in where.stdout, f"imported from elsewhere: {where.stdout} {where.stderr}"
    reports = tmp_path / "reports"
    r = subprocess.run([str(installed / "bin" / "conformance"), "run", "--target", str(FAKEBROKER), "-n", "2",
                        "--no-html", "--reports", str(reports)],
                       capture_output=True, text=True, timeout=900, cwd=tmp_path, env=clean_env())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cert = json.loads((reports / "certificate.json").read_text())
    target = load_target(FAKEBROKER)
    assert cert["verdict"] == "CERTIFIED" and cert["left_out"] == []
    assert len(cert["requirements"]) == len(scope_ids(target))
    # every transcript case the catalogue lists is found in the wheel (a requirement can list several)
    with_transcripts = [r for r in default_catalogue().for_suite("coordinator") if r.transcripts]
    assert cert["goldens"]["requirements"] == len(with_transcripts) > 0
    assert cert["goldens"]["recorded"] == sum(len(r.transcripts) for r in with_transcripts)
    docs = cert["provenance"]["spec_documents"]  # public documents, by URL: nothing from ../shared
    assert docs and all(d["url"].startswith("https://") for d in docs), docs
    assert all(r["source_url"].startswith("https://") for r in cert["requirements"])
    assert cert["provenance"]["suite"]["commit"] is None  # not a checkout
