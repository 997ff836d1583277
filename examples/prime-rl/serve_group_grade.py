"""Serve group-grade from an example TOML's ``[env]`` and ``[serve]`` blocks with verifiers'
own ``serve_env`` (a single EnvServer, or a worker pool behind one address):

    python examples/prime-rl/serve_group_grade.py examples/prime-rl/group-grade.toml
"""

from __future__ import annotations

import argparse
import logging
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.configs.serve import pool_serve_kwargs
from verifiers.v1.serve.pool import serve_env
from verifiers.v1.utils.loaders import resolve_env_config


def serve_kwargs(config: dict[str, Any]) -> dict[str, Any]:
    """``serve_env`` keyword arguments from a parsed config."""
    serve = vf.ServeConfig.model_validate(config.get("serve", {}))
    return {
        **pool_serve_kwargs(serve.pool),
        "address": serve.address,
        "config": resolve_env_config(config["env"]),
        "max_concurrent": serve.max_concurrent,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", type=Path, help="a TOML with [env] and [serve] blocks")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    serve_env(**serve_kwargs(tomllib.loads(args.config.read_text())))


if __name__ == "__main__":
    main()
