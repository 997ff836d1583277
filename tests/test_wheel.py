"""The wheel carries the package and its prompt templates and works outside the source tree."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_installs_into_a_fresh_venv_and_renders_prompts(tmp_path: Path):
    out = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            "-q",
        ],
        check=True,
        timeout=300,
        cwd=tmp_path,
    )
    (wheel,) = out.glob("group_grade-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for template in (
        "grader.md",
        "policy.md",
        "rank_passing.md",
        "rank_all.md",
        "verdict_format.md",
    ):
        assert f"group_grade/prompts/{template}" in names
    assert "group_grade/data.py" in names

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        timeout=300,
    )
    # Dependencies come from this interpreter's site-packages; group_grade from the wheel only.
    deps = sysconfig.get_paths()["purelib"]
    script = (
        "import group_grade, group_grade.prompts as p\n"
        "from group_grade.data import Candidate, GroupGradeData\n"
        "d = GroupGradeData(group_id='g', candidates=[Candidate(label='c01', reward=1.0)])\n"
        "print(group_grade.__file__)\n"
        "print(p.prompts_dir())\n"
        "print(len(p.render_prompt(d, grade_root='/grade')))\n"
    )
    result = subprocess.run(
        [python, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PYTHONPATH": deps, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    module_file, templates, length = result.stdout.split()
    assert module_file.startswith(str(env_dir)) and templates.startswith(str(env_dir))
    assert int(length) > 1000
