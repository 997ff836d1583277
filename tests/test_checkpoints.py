"""The helpers a solver taskset and a trainer use: save a rollout's box, delete checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest
import verifiers.v1 as vf
from prime_sandboxes import AsyncSandboxClient, CreateSandboxRequest
from verifiers.v1.runtimes import provision_runtime
from verifiers.v1.runtimes.prime import PrimeConfig, PrimeRuntime

from group_grade.boxes import BoxError, backend_for, delete_checkpoints, save_checkpoint
from group_grade.data import GroupGradeData
from tests.fake_prime_api import FakePrimeAPI
from tests.traces import simple_trace


@pytest.mark.anyio
async def test_a_subprocess_rollout_box_becomes_a_local_checkpoint(boxes: Path, tmp_path: Path):
    trace = simple_trace(2, reward=1.0)
    async with provision_runtime(vf.SubprocessConfig()) as runtime:
        await runtime.write("calc.py", b"def add(a, b):\n    return a + b\n")
        checkpoint = await save_checkpoint(trace, runtime, local_dir=tmp_path / "ckpt")
    assert trace.info["checkpoint"] == checkpoint and checkpoint.startswith("local:")
    data = GroupGradeData.from_traces([trace, simple_trace(2, reward=0.0)], group_id="g")
    assert checkpoint in [c.checkpoint for c in data.candidates]
    box = await backend_for("local").restore(checkpoint)
    try:
        assert (await box.read("calc.py")).startswith(b"def add")
    finally:
        await box.close()
    report = await delete_checkpoints([checkpoint, "nonsense"], local_root=tmp_path / "ckpt")
    assert report.deleted == [checkpoint] and "nonsense" in report.failed
    assert not Path(checkpoint.removeprefix("local:")).exists()


@pytest.mark.anyio
async def test_a_local_checkpoint_needs_a_folder(boxes: Path):
    async with provision_runtime(vf.SubprocessConfig()) as runtime:
        with pytest.raises(BoxError, match="local_dir"):
            await save_checkpoint(simple_trace(1, reward=1.0), runtime)


@pytest.mark.anyio
async def test_a_prime_rollout_box_becomes_a_durable_checkpoint(fake: FakePrimeAPI):
    trace = simple_trace(2, reward=1.0)
    runtime = PrimeRuntime(PrimeConfig())
    async with AsyncSandboxClient() as client:
        sandbox = await client.create(
            CreateSandboxRequest(name="solver", docker_image="python:3.11")
        )
        await client.wait_for_creation(sandbox.id, max_attempts=10)
        runtime.info.id = sandbox.id  # what PrimeRuntime.start() records
        checkpoint = await save_checkpoint(trace, runtime)
        assert trace.info["checkpoint"] == checkpoint and checkpoint.startswith("prime:")
        assert fake.served_checkpoint_states[checkpoint.removeprefix("prime:")][-1] == "DURABLE"
        await client.delete(sandbox.id)
    report = await delete_checkpoints([checkpoint])
    assert report.deleted == [checkpoint]
