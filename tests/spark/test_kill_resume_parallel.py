"""test_kill_resume.py with four tables' statements applied at once: kills also land while other tables'
statements are in flight. A module of its own, so that test processes run the two long runs side by side."""

from __future__ import annotations

from pathlib import Path

from .test_kill_resume import sigkilled_apply_resumes_and_converges


def test_sigkilled_parallel_apply_resumes_and_converges(tmp_path: Path) -> None:
    sigkilled_apply_resumes_and_converges(tmp_path, parallel=4, least_kills=3)
