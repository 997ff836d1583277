"""Prime boxes against a local fake of the Prime API, driven by the unpatched SDK; plus one
smoke test against the real service when ``PRIME_API_KEY`` is set."""

from __future__ import annotations

import os
import time

import anyio
import pytest
from prime_sandboxes import AsyncSandboxClient, CommandTimeoutError, CreateSandboxRequest

from group_grade.boxes.base import BoxError
from group_grade.boxes.prime import (
    PrimeBackend,
    checkpoint_runtime,
    make_prime_checkpoint,
    prime_client,
)
from tests.fake_prime_api import FakePrimeAPI

LIVE_API_KEY = os.environ.get("PRIME_API_KEY")
"""Read at import, before any test's monkeypatching."""


async def _source_sandbox(client: AsyncSandboxClient) -> str:
    """A running sandbox made from an image, with files in /app."""
    sandbox = await client.create(
        CreateSandboxRequest(name="solver", docker_image="python:3.11-slim")
    )
    assert sandbox.status == "PENDING"
    await client.wait_for_creation(sandbox.id, max_attempts=10)
    assert (await client.get(sandbox.id)).status == "RUNNING"
    await client.upload_bytes(sandbox.id, "/app/hello.txt", b"hello\n", filename="hello.txt")
    result = await client.execute_command(
        sandbox.id, "mkdir -p pkg && echo one > pkg/v.txt", working_dir="/app"
    )
    assert result.exit_code == 0, result
    return sandbox.id


async def _checkpoint(fake: FakePrimeAPI) -> str:
    """``prime:<id>`` of a DURABLE checkpoint whose source sandbox is deleted again."""
    async with AsyncSandboxClient() as client:
        source = await _source_sandbox(client)
        checkpoint = await make_prime_checkpoint(source, client=client, timeout=30)
        await client.delete(source)
    return checkpoint


@pytest.mark.anyio
async def test_checkpoint_restore_run_read_write(fake: FakePrimeAPI) -> None:
    checkpoint = await _checkpoint(fake)
    cid = checkpoint.removeprefix("prime:")
    assert checkpoint.startswith("prime:")
    states = fake.served_checkpoint_states[cid]  # create, then the SDK's polls
    assert states[:2] == ["PENDING", "PENDING"] and states[-1] == "DURABLE", states

    backend = PrimeBackend(workdir="/app", start_timeout=30)
    box1 = await backend.restore(checkpoint)
    box2 = await backend.restore(checkpoint)
    try:
        for request in fake.create_requests[-2:]:
            assert request["checkpoint_id"] == cid
            assert request["network_allowlist"] == []
            assert "network_denylist" not in request
            assert "docker_image" not in request and "disk_size_gb" not in request
        assert box1.id != box2.id

        result = await box1.run("cat hello.txt pkg/v.txt", timeout=10)
        assert (result.exit_code, result.output, result.timed_out) == (0, "hello\none\n", False)

        # changes persist within a box, boxes are independent
        assert (await box1.run("echo changed > hello.txt", timeout=10)).exit_code == 0
        assert (await box1.run("cat hello.txt", timeout=10)).output == "changed\n"
        assert await box1.read("hello.txt") == b"changed\n"
        assert (await box2.run("cat hello.txt", timeout=10)).output == "hello\n"

        # stdout and stderr merged in order, exit code, env and workdir
        result = await box1.run("echo out; echo err >&2; echo out2; exit 3", timeout=10)
        assert (result.exit_code, result.output) == (3, "out\nerr\nout2\n")
        result = await box1.run(
            "echo $GG_VAR; pwd", timeout=10, env={"GG_VAR": "x y"}, workdir="pkg"
        )
        assert result.output.splitlines()[0] == "x y"
        assert result.output.splitlines()[1].endswith("/app/pkg")

        # binary write / read, relative and absolute paths, parents created
        payload = bytes(range(256)) * 4
        await box2.write("data/blob.bin", payload)
        assert await box2.read("/app/data/blob.bin") == payload
        assert (await box2.run("wc -c < data/blob.bin", timeout=10)).output.strip() == "1024"
        with pytest.raises(BoxError, match=r"missing\.txt"):
            await box2.read("missing.txt")
    finally:
        await box1.close()
        await box2.close()
        await box1.close()  # idempotent
    assert fake.sandboxes[box1.id].status == fake.sandboxes[box2.id].status == "TERMINATED"
    with pytest.raises(BoxError, match="closed"):
        await box1.run("true", timeout=5)
    await backend.aclose()


@pytest.mark.anyio
async def test_timeout_kills_the_command(fake: FakePrimeAPI) -> None:
    backend = PrimeBackend(start_timeout=30)
    box = await backend.restore(await _checkpoint(fake))
    try:
        started = time.monotonic()
        result = await box.run("echo begun; (sleep 2; touch late) & sleep 30", timeout=1)
        assert time.monotonic() - started < 5
        assert result.timed_out
        assert result.exit_code == 124
        assert result.output == "begun\n"
        await anyio.sleep(2)
        assert (await box.run("ls late", timeout=10)).exit_code != 0  # process group killed
        # a command that exits with 124 by itself did not time out
        assert not (await box.run("exit 124", timeout=10)).timed_out
    finally:
        await box.close()
        await backend.aclose()


@pytest.mark.anyio
async def test_sdk_deadline_is_reported_and_kills(fake: FakePrimeAPI) -> None:
    """The fake honours the Connect deadline the SDK sends, as the SDK expects."""
    async with AsyncSandboxClient() as client:
        sandbox_id = await _source_sandbox(client)
        with pytest.raises(CommandTimeoutError):
            await client.execute_command(sandbox_id, "sleep 2; touch late", timeout=1)
        await anyio.sleep(1.5)
        assert not (fake.sandbox_root(sandbox_id) / "late").exists()
        await client.delete(sandbox_id)


@pytest.mark.anyio
async def test_delete_checkpoints_waits_for_restored_boxes(fake: FakePrimeAPI) -> None:
    checkpoint = await _checkpoint(fake)
    backend = PrimeBackend(start_timeout=30)
    box = await backend.restore(checkpoint)
    try:
        report = await backend.delete_checkpoints([checkpoint])
        assert (report.deleted, report.retry_later, report.failed) == ([], [checkpoint], {})
    finally:
        await box.close()
    report = await backend.delete_checkpoints([checkpoint])
    assert (report.deleted, report.retry_later, report.failed) == ([checkpoint], [], {})
    assert checkpoint.removeprefix("prime:") not in fake.checkpoints
    report = await backend.delete_checkpoints([checkpoint])  # already gone
    assert "404" in report.failed[checkpoint]
    await backend.aclose()


@pytest.mark.anyio
async def test_delete_pending_checkpoint_is_retried_later(fake: FakePrimeAPI) -> None:
    fake.checkpoint_pending_seconds = 600
    backend = PrimeBackend(client=prime_client())
    async with backend.client() as client:
        source = await _source_sandbox(client)
        pending = await client.checkpoint(source)
        assert pending.state == "PENDING"
        checkpoint = f"prime:{pending.id}"
        report = await backend.delete_checkpoints([checkpoint])
        assert report.retry_later == [checkpoint]
        with pytest.raises(BoxError, match="PENDING"):  # not restorable either
            await backend.restore(checkpoint)
        fake.make_durable(pending.id)
        report = await backend.delete_checkpoints([checkpoint])
        assert report.retry_later == [checkpoint]  # the source's active tip
        await client.delete(source)
        report = await backend.delete_checkpoints([checkpoint])
        assert report.deleted == [checkpoint]


@pytest.mark.anyio
async def test_delete_unknown_or_foreign_checkpoints_fail(fake: FakePrimeAPI) -> None:
    backend = PrimeBackend()
    ids = ["prime:ckpt-nope", "local:/tmp/x.tar.gz", "bare"]
    report = await backend.delete_checkpoints(ids)
    assert report.deleted == [] and report.retry_later == []
    assert set(report.failed) == set(ids)
    assert "HTTP 404" in report.failed["prime:ckpt-nope"]
    assert "ckpt-nope not found" in report.failed["prime:ckpt-nope"]
    assert "not a prime checkpoint" in report.failed["local:/tmp/x.tar.gz"]
    await backend.aclose()


@pytest.mark.anyio
async def test_restore_failures_raise_box_error(fake: FakePrimeAPI) -> None:
    backend = PrimeBackend(start_timeout=30)
    with pytest.raises(BoxError, match=r"HTTP 404: Checkpoint ckpt-missing not found"):
        await backend.restore("prime:ckpt-missing")
    with pytest.raises(BoxError, match="not a prime checkpoint"):
        await backend.restore("local:/tmp/x.tar.gz")
    with pytest.raises(BoxError):
        await backend.restore("prime:" + "x" * 65)  # the SDK's id length limit
    assert all(s.status == "TERMINATED" for s in fake.sandboxes.values())
    await backend.aclose()


@pytest.mark.anyio
async def test_restore_start_timeout_deletes_the_sandbox(fake: FakePrimeAPI) -> None:
    checkpoint = await _checkpoint(fake)
    fake.sandbox_start_seconds = 600
    backend = PrimeBackend(start_timeout=1.5)
    started = time.monotonic()
    with pytest.raises(BoxError, match=r"did not start: not running within 1\.5s"):
        await backend.restore(checkpoint)
    assert time.monotonic() - started < 5
    cid = checkpoint.removeprefix("prime:")
    restored = [s for s in fake.sandboxes.values() if s.request.get("checkpoint_id") == cid]
    assert len(restored) == 1 and restored[0].status == "TERMINATED"
    await backend.aclose()


@pytest.mark.anyio
async def test_wrong_key_and_missing_sandbox(
    fake: FakePrimeAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(BoxError, match="not found"):
        await make_prime_checkpoint("no-such-sandbox")
    monkeypatch.setenv("PRIME_API_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    backend = PrimeBackend(api_key="wrong-key", base_url=fake.base_url + "/api/v1")
    with pytest.raises(BoxError, match="unauthorized"):  # reached the fake, key refused
        await backend.restore("prime:ckpt-x")
    assert fake.requests[-1] == ("POST", "/api/v1/sandbox")
    await backend.aclose()
    monkeypatch.delenv("PRIME_API_KEY")
    backend = PrimeBackend(base_url=fake.base_url + "/api/v1")  # constructing needs no key
    with pytest.raises(BoxError, match="No API key"):
        await backend.restore("prime:ckpt-x")
    await backend.aclose()


@pytest.mark.anyio
async def test_checkpoint_runtime(fake: FakePrimeAPI) -> None:
    from verifiers.v1.runtimes.prime import PrimeConfig, PrimeRuntime

    runtime = PrimeRuntime(PrimeConfig())
    with pytest.raises(BoxError, match="not started"):
        await checkpoint_runtime(runtime)
    async with AsyncSandboxClient() as client:
        runtime.info.id = await _source_sandbox(client)  # what PrimeRuntime.start() records
        checkpoint = await checkpoint_runtime(runtime, client=client, timeout=30)
        assert fake.checkpoints[checkpoint.removeprefix("prime:")].state == "DURABLE"
        await client.delete(runtime.info.id)


@pytest.mark.anyio
@pytest.mark.skipif(not LIVE_API_KEY, reason="needs PRIME_API_KEY (real Prime service)")
async def test_live_prime_smoke() -> None:
    """Real service: tiny sandbox -> files -> checkpoint -> restore -> run -> delete."""
    backend = PrimeBackend(workdir="/app", start_timeout=900, timeout_minutes=30)
    client = backend.client()
    checkpoint = None
    with anyio.fail_after(1800):
        source = await client.create(
            CreateSandboxRequest(
                name="group-grade-smoke",
                docker_image="python:3.11-slim",
                cpu_cores=1,
                memory_gb=1,
                disk_size_gb=2,
                timeout_minutes=30,
                labels=["group-grade-smoke"],
            )
        )
        try:
            await client.wait_for_creation(source.id, max_attempts=300)
            await client.upload_bytes(source.id, "/app/hello.txt", b"hello\n", filename="h.txt")
            checkpoint = await make_prime_checkpoint(source.id, client=client, timeout=900)
        finally:
            await client.delete(source.id)
        box = await backend.restore(checkpoint)
        try:
            result = await box.run("cat hello.txt; echo err >&2", timeout=60)
            assert (result.exit_code, result.output) == (0, "hello\nerr\n")
            no_egress = "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), 5)\""
            assert (await box.run(no_egress, timeout=60)).exit_code != 0
            result = await box.run("(sleep 3; touch late) & sleep 60", timeout=2)
            assert result.timed_out
            await anyio.sleep(3)
            assert (await box.run("ls late", timeout=30)).exit_code != 0
            report = await backend.delete_checkpoints([checkpoint])
            assert report.retry_later == [checkpoint], report
        finally:
            await box.close()
        for _ in range(30):  # the platform may take a moment to see the box gone
            report = await backend.delete_checkpoints([checkpoint])
            if report.deleted:
                break
            assert report.retry_later == [checkpoint], report
            await anyio.sleep(2)
        assert report.deleted == [checkpoint], report
    await backend.aclose()
