"""``python -m group_grade.reference --port N``: serve the reference grader."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Sequence

from group_grade.chat_server import ChatServer
from group_grade.reference.responder import ReferenceGrader


async def serve(port: int) -> None:
    async with ChatServer(ReferenceGrader(), model="reference", port=port) as server:
        print(server.base_url, flush=True)
        await asyncio.Event().wait()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m group_grade.reference",
        description="Serve the reference grader as an OpenAI-compatible endpoint on 127.0.0.1.",
    )
    parser.add_argument("--port", type=int, default=0, help="port (0: any free port)")
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.port))


if __name__ == "__main__":
    main()
