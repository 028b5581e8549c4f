"""Differential test of the ingest path: every fixture log and every simulated run of the
accuracy sweep gives the same records (field for field, attribution labels included), run info,
accounting, line table and JSON report as recorded in ``tests/data/ingest_digest.json``.

A change that moves any of them on purpose regenerates the file
(``PYTHONPATH=src python tests/_digest.py --update``) and says why in its commit.
"""

from __future__ import annotations

import json

import pytest

from _digest import DIGESTS, digest_all


@pytest.fixture(scope="module")
def digests(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    return digest_all(tmp_path_factory.mktemp("sweep"))


def test_every_input_is_digested(digests: dict[str, dict]) -> None:
    want = json.loads(DIGESTS.read_text())
    assert sorted(digests) == sorted(want)
    assert len(want) > 300  # 46 fixture logs and 256 simulated runs


def test_ingest_output_is_unchanged(digests: dict[str, dict]) -> None:
    want = json.loads(DIGESTS.read_text())
    differ = {
        name: {k: (want[name].get(k), got.get(k)) for k in got if want[name].get(k) != got.get(k)}
        for name, got in digests.items()
        if name in want and want[name] != got
    }
    assert not differ, f"{len(differ)} inputs differ: " + json.dumps(dict(list(differ.items())[:5]))
