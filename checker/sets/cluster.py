"""`kata set grade --dask ADDRESS`: the same grading on a Dask distributed cluster.

The grading process keeps everything that decides the outcome: the task list, the resume
journal, the scores and the outputs (`grade_set` hands its `on_reply` to `run_dask` exactly as
it does to the local pool). A worker only runs `grade_one` (sets/worker.py), the local workers' own function,
on a copy of the file it is sent:

- Dask workers are daemonic and cannot start `multiprocessing` children; the sandbox does not
  need to: its zygote is a `subprocess` (namespaces, limits, pid 1 of its own tree), started
  once per worker process and kept warm between tasks, as a local worker's is.
- pytest and the redirected output are per process: a worker grades one file at a time (run
  workers with `--nthreads 1`; a lock makes extra threads wait rather than mix results).
- A worker whose attnkata differs (another kata hash) refuses to grade: it would not be the
  same grader.

Needs the optional extra: `pip install "attnkata[cluster]"`.
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attnkata.checker.errors import UsageError
from attnkata.checker.sets.worker import FileRules

LOCAL = re.compile(r"^local(?::(\d+))?$")
REMOTE = re.compile(r"^(tcp|tls|ucx|inproc)://[^\s/]+(:\d+)?/?$")
_GRADING = threading.Lock()


def check_address(address: str) -> None:
    """A usage error (exit 2), not a traceback, for a bad address or a missing extra."""
    if not (LOCAL.match(address) or REMOTE.match(address)):
        raise UsageError(
            f"bad --dask address {address!r}",
            "use a scheduler address such as tcp://10.0.0.5:8786, or local[:N] for N local workers",
        )
    m = LOCAL.match(address)
    if m and m.group(1) is not None and int(m.group(1)) < 1:
        raise UsageError("--dask local:N needs at least one worker")
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise UsageError(
            "--dask needs Dask's distributed scheduler, which is not installed",
            'install it with: python -m pip install "attnkata[cluster]"',
        ) from None


def grade_remote(
    kata_id: str,
    name: str,
    source: bytes,
    kata_hash: str,
    limits: tuple[float, float, int],
    lang: str,
    rules: FileRules,
    variant: dict[str, str] | None = None,
    fixes: bool = False,
) -> dict[str, Any]:
    """Runs on a Dask worker: grade `source` (saved as `name`) like a local grading worker
    (`variant`: the student's, None for the standard kata)."""
    from attnkata.checker.proxy import Limits
    from attnkata.checker.runner import check
    from attnkata.checker.sets.manifest import kata_hash as hash_of
    from attnkata.checker.sets.manifest import load_set_kata
    from attnkata.checker.sets.worker import grade_one

    with _GRADING:
        try:
            mine = hash_of(load_set_kata(kata_id))
        except Exception as exc:  # noqa: BLE001 - reported to the grading process, not raised
            mine = f"unavailable ({exc})"
        if mine != kata_hash:
            return {
                "ok": False,
                "kind": "grader-broken",
                "seconds": 0.0,
                "message": f"the Dask worker's {kata_id} is not the set's ({mine[:19]}...): install the "
                f"same attnkata on every worker",
            }
        lim = Limits(call_timeout=limits[0], total_timeout=limits[1], memory_mb=limits[2])
        with tempfile.TemporaryDirectory(prefix="attnkata-dask-") as tmp:
            path = Path(tmp) / name
            path.write_bytes(source)
            reply = grade_one(check, kata_id, path, lim, lang, rules, variant, fixes=fixes)
            reply["worker_path"] = str(path.resolve())
        return reply


def warm_worker(kata_ids: list[str]) -> str:
    """Runs once on every worker before grading: import what grading needs and start the
    sandbox's zygote, so no student's time limit pays for a cold worker."""
    from attnkata.checker.sandbox import host
    from attnkata.checker.sets.worker import preload

    with _GRADING:
        preload(kata_ids)
        import torch

        torch.set_num_threads(1)
        return host.zygote().mode


def _relocate(reply: dict[str, Any], path: str) -> dict[str, Any]:
    """The worker graded a copy: name the submission's own path, as local grading does."""
    worker_path = reply.pop("worker_path", None)
    if not worker_path or not reply.get("ok"):
        return reply
    text = json.dumps(reply, ensure_ascii=False)
    return json.loads(text.replace(json.dumps(worker_path)[1:-1], json.dumps(path)[1:-1]))


def _connect(address: str, jobs: int) -> tuple[Any, Any]:
    from distributed import Client, LocalCluster

    m = LOCAL.match(address)
    if m is None:
        return Client(address, timeout="30s"), None
    cluster = LocalCluster(
        n_workers=int(m.group(1) or jobs),
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    return Client(cluster), cluster


def run_dask(
    tasks: list[Any],
    *,
    address: str,
    kata_hashes: dict[str, str],
    jobs: int,
    limits: tuple[float, float, int],
    lang: str,
    log_path: Path,
    watchdog: float,
    on_reply: Callable[[Any, dict[str, Any]], None],
    tick: Callable[[], None] = lambda: None,
    kata_ids: list[str] | None = None,
    rules: FileRules = FileRules(),
) -> None:
    """`run_pool`'s contract on a Dask cluster: `on_reply(task, reply)` runs here, per task."""
    if not tasks:
        return
    check_address(address)
    from distributed.client import FutureCancelledError

    try:
        client, cluster = _connect(address, jobs)
    except OSError as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    try:
        client.run(warm_worker, kata_ids or sorted({t.kata for t in tasks}))
        futures = {}
        for t in tasks:
            source = Path(t.path).read_bytes()
            fut = client.submit(
                grade_remote,
                t.kata,
                Path(t.path).name,
                source,
                kata_hashes[t.kata],
                limits,
                lang,
                rules,
                t.variant,
                t.fixes,
                pure=False,
                key=f"attnkata-grade-{t.index}-{t.sha256[:16]}",
            )
            futures[fut] = t
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        # Queued tasks wait for a worker: the watchdog covers the whole queue, not one task.
        deadline = time.monotonic() + watchdog * (len(tasks) // workers + 2)
        pending = dict(futures)
        while pending:
            for fut in [f for f in pending if f.done()]:
                task = pending.pop(fut)
                try:
                    reply = _relocate(fut.result(), task.path)
                except FutureCancelledError:
                    reply = {
                        "ok": False,
                        "kind": "grader-internal-error",
                        "message": "the Dask task was cancelled",
                    }
                except Exception as exc:  # noqa: BLE001 - KilledWorker, a lost connection: never stop the batch
                    killed = type(exc).__name__ == "KilledWorker"
                    reply = {
                        "ok": False,
                        "kind": "grader-process-died" if killed else "grader-internal-error",
                        "message": f"{type(exc).__name__}: {exc}"[:1500],
                    }
                on_reply(task, reply)
            if pending and time.monotonic() > deadline:
                for fut, task in list(pending.items()):
                    fut.cancel()
                    on_reply(
                        task,
                        {
                            "ok": False,
                            "kind": "watchdog",
                            "message": f"the Dask cluster did not finish grading within {watchdog:g} s per "
                            f"task; stopped",
                        },
                    )
                pending.clear()
            tick()
            if pending:
                time.sleep(0.1)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
