"""The benchmark command runs on tiny sizes and reports every figure. No timing is asserted:
the numbers of a shared test machine mean nothing; only that each one is produced."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ("1. ", "2. ", "3a. ", "3b. ", "3c. ", "4a. ", "4b. ", "5. ")


def test_the_benchmark_runs_on_tiny_sizes_and_reports_every_row(tmp_path: Path):
    raw = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "bench.py"), "--quick", "--json", str(raw)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    table = [line for line in out.splitlines() if line.startswith("| ")]
    # The headline table: every figure, each with a target and a mark.
    for figure in FIGURES:
        rows = [line for line in table if line.startswith(f"| {figure}")]
        assert len(rows) == 1, f"figure {figure!r} missing from:\n{out}"
        cells = [cell.strip() for cell in rows[0].strip("|").split("|")]
        assert len(cells) == 4 and all(cells), rows[0]
        assert cells[3] in ("pass", "**FAIL**", "-"), rows[0]
    # The detail tables.
    for heading in ("Pipeline steps", "Scaling", "Staging", "Restores", "wall time:"):
        assert heading in out
    for step in ("from_traces", "wire", "prompt", "check", "citations", "advantages"):
        assert f"| {step} |" in out

    results = json.loads(raw.read_text())
    assert set(results) >= {
        "main",
        "grid",
        "exponent",
        "step_exponents",
        "staging",
        "restores",
        "memory",
        "wall_s",
    }
    settings = results["settings"]
    assert len(results["grid"]) == len(settings["grid_n"]) * len(settings["grid_t"])
    for cell in [results["main"], *results["grid"]]:
        assert cell["pipeline_s"] and cell["floor_s"] and cell["turns_json_complete"]
        assert cell["prompt_bytes"] > 0 and all(b > 0 for b in cell["digest_bytes"])
    assert results["staging"]["setup_s"] and results["staging"]["plain_write_s"]
    for mode in ("no_prefetch", "prefetch"):
        assert len(results["restores"][mode]["call_latency_median_s"]) == settings["restore_ks"]
    assert results["memory"]["peak_rss_bytes"] > 0
