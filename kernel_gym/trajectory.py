"""The trajectory log: one JSON record per step, appended, flushed and fsynced, so a killed run loses nothing."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any


class TrajectoryLog:
    """Appends step records to `<log_dir>/<name>.jsonl`; several envs may share a folder (one file each)."""

    def __init__(self, log_dir: str | Path, name: str | None = None):
        self.dir = Path(log_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / f"{name or f'trajectories-{os.getpid()}-{time.time_ns()}'}.jsonl"
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, record: dict[str, Any]) -> None:
        data = (json.dumps(record, default=str, ensure_ascii=False) + "\n").encode("utf-8", errors="replace")
        view = memoryview(data)
        while view:  # O_APPEND: each write lands at the end, even with other writers
            n = os.write(self._fd, view)
            view = view[n:]
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read_log(path: str | Path) -> list[dict[str, Any]]:
    """All records of a log; a last line cut off by a crash is skipped."""
    records = []
    with open(path, encoding="utf-8", errors="replace") as f:  # a binary file reads as no records, not a crash
        for line in f:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                records.append(record)
    return records
