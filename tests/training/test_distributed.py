"""Two CPU processes under torchrun (gloo): different data, identical weights at every step."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("budget", ["steps", "minutes"])  # minutes: saves mid-run once hung under torchrun
def test_two_processes_stay_in_sync_on_different_shards(tmp_path, budget):
    worker = os.path.join(os.path.dirname(__file__), "ddp_worker.py")
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                          "--standalone", worker, str(tmp_path), budget],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0]["world_size"] == ranks[1]["world_size"] == 2
    assert len(ranks[0]["checksums"]) == 6
    assert ranks[0]["checksums"] == ranks[1]["checksums"]  # in sync after every step
    assert len(set(ranks[0]["checksums"])) == 6  # and the weights did move
    assert ranks[0]["final"] == ranks[1]["final"]
    assert not set(ranks[0]["examples"]) & set(ranks[1]["examples"])  # each saw its own shard
    assert (tmp_path / "run" / "model.safetensors").exists()
