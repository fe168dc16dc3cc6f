"""``codeloop batch --ray ADDRESS``: the tasks as Ray tasks on a Ray cluster (issue 39).

Ray schedules; codeloop writes no scheduler. Each task is a Ray task (``num_cpus`` per task,
``max_retries``: a task whose worker or node is lost runs again elsewhere), and results come
back as they finish (``ray.wait``). Ray is an optional extra: ``pip install 'codeloop[ray]'``.

Each node keeps its own directories (``CODELOOP_BATCH_WORK_DIR`` in the environment of its
``ray start``), so the session log of a task must not depend on a shared disk: the batch
process owns a :class:`LogKeeper` actor, pinned to its own node, that every task streams its
log lines and workspace patch to (:mod:`codeloop.batch.log_mirror`) and writes them under the
batch's directory. A retried task, on whatever node, starts from what the keeper holds.
When the batch process's node is lost, the batch is lost with it; run it again and it
resumes from the keeper's files.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeloop.batch.log_mirror import MirroredLog
from codeloop.batch.tasks import TaskSpec

DEFAULT_MAX_RETRIES = 3
"""Times a task runs again after its worker or node was lost."""


class RayUnavailableError(RuntimeError):
    """Ray is not installed or the cluster cannot be reached; the message says how to fix it."""


class LogKeeper:
    """The batch's store of every task's session log (a Ray actor on the batch's node).

    Files: ``<root>/<task id>/<session id>.jsonl`` and ``<root>/<task id>/patch``."""

    def __init__(self, root: str) -> None:
        self.root = Path(root)

    def push(self, task_id: str, name: str, offset: int, data: bytes, patch: str) -> None:
        folder = self.root / task_id
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        with open(path, "ab") as handle:
            handle.truncate(offset)  # a repeated push replaces what it sent before
            handle.write(data)
            handle.flush()
        tmp = folder / "patch.tmp"
        tmp.write_text(patch, "utf-8")
        tmp.replace(folder / "patch")

    def restore(self, task_id: str) -> MirroredLog | None:
        folder = self.root / task_id
        logs = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
        if not logs:
            return None
        patch = folder / "patch"
        return MirroredLog(logs[0].name, logs[0].read_bytes(), patch.read_text("utf-8") if patch.is_file() else "")


class KeeperStore:
    """The worker's side of the keeper (:class:`~codeloop.batch.log_mirror.LogStore`)."""

    def __init__(self, keeper: Any) -> None:
        self.keeper = keeper

    def push(self, task_id: str, name: str, offset: int, data: bytes, patch: str) -> None:
        import ray

        ray.get(self.keeper.push.remote(task_id, name, offset, data, patch))

    def restore(self, task_id: str) -> MirroredLog | None:
        import ray

        result: MirroredLog | None = ray.get(self.keeper.restore.remote(task_id))
        return result


class RayCluster:
    """Runs ``run(task, options, cost_cap, store)`` as Ray tasks on the cluster at ``address``."""

    def __init__(self, address: str, run: Callable[..., dict[str, Any]], options: Any, *, mirror_dir: Path,
                 num_cpus: float = 1.0, max_retries: int = DEFAULT_MAX_RETRIES, workers: int | None = None) -> None:
        try:
            import ray
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        except ImportError:
            raise RayUnavailableError("--ray needs Ray: pip install 'codeloop[ray]'") from None
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise RayUnavailableError(f"cannot connect to the Ray cluster at {address}: {exc}") from None
        self.ray, self.options = ray, options
        here = ray.get_runtime_context().get_node_id()
        self.keeper = ray.remote(num_cpus=0)(LogKeeper).options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False)).remote(str(mirror_dir))
        self.store = KeeperStore(self.keeper)
        self.remote = ray.remote(num_cpus=num_cpus, max_retries=max_retries, retry_exceptions=False)(run)
        cpus = float(ray.cluster_resources().get("CPU", 1.0))  # type: ignore[no-untyped-call]
        self._slots = workers or max(1, int(cpus // num_cpus) if num_cpus > 0 else int(cpus))

    @property
    def slots(self) -> int:
        return self._slots

    def submit(self, task: TaskSpec, cost_cap: float | None) -> Any:
        return self.remote.remote(task, self.options, cost_cap, self.store)

    def wait(self, handles: list[Any], timeout: float) -> list[tuple[Any, dict[str, Any] | BaseException]]:
        ready, _ = self.ray.wait(handles, num_returns=1, timeout=timeout)
        out: list[tuple[Any, dict[str, Any] | BaseException]] = []
        for ref in ready:
            try:
                out.append((ref, self.ray.get(ref)))
            except Exception as exc:  # the task was lost more often than max_retries allows
                out.append((ref, exc))
        return out

    def close(self) -> None:
        self.ray.shutdown()
