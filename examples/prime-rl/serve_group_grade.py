"""Serve group-grade from an example TOML's [env] and [serve] blocks with verifiers' own
env server (one EnvServer, or a worker pool behind one address):

    python examples/prime-rl/serve_group_grade.py examples/prime-rl/group-grade.toml

The grader's runtime needs its credentials where this runs: the prime runtime (the default)
needs `prime login` or PRIME_API_KEY, docker a reachable Docker daemon. The judge's key is
read from the variable [env.agent.client] api_key_var names. If the server or any of its
workers stops (a runtime that cannot start, say), this exits with code 1 and the reason.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.configs.serve import pool_serve_kwargs
from verifiers.v1.utils.loaders import resolve_env_config

from group_grade.serving import ServeFailure, serve


def serve_kwargs(config: dict[str, Any]) -> dict[str, Any]:
    """``serve_env`` keyword arguments from a parsed config."""
    serve_config = vf.ServeConfig.model_validate(config.get("serve", {}))
    return {
        **pool_serve_kwargs(serve_config.pool),
        "address": serve_config.address,
        "config": resolve_env_config(config["env"]),
        "max_concurrent": serve_config.max_concurrent,
    }


def log_setup() -> None:
    """Logging for this process and every worker (spawned workers inherit no handlers)."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="serve_group_grade.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("config", type=Path, help="a TOML with [env] and [serve] blocks")
    args = parser.parse_args(argv)
    try:
        kwargs = serve_kwargs(tomllib.loads(args.config.read_text()))
    except (OSError, tomllib.TOMLDecodeError, ValueError, KeyError) as e:
        print(f"serve_group_grade.py: {args.config}: {e}", file=sys.stderr)
        return 2
    client = kwargs["config"].agent.client
    key_var = getattr(client, "api_key_var", None)
    if key_var and not os.environ.get(key_var):
        print(
            f"serve_group_grade.py: warning: ${key_var} ([env.agent.client] api_key_var) is not "
            "set here: the judge will refuse every grading request",
            file=sys.stderr,
        )
    log_setup()
    try:
        serve(**kwargs, log_setup=log_setup)
    except ServeFailure as e:
        runtime = kwargs["config"].agent.runtime
        print(f"serve_group_grade.py: stopped serving: {e}", file=sys.stderr)
        print(
            f"  (the grader's runtime is {getattr(runtime, 'type', type(runtime).__name__)!r}; "
            "the README's trainer section lists what each runtime needs)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
