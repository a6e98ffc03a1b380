"""The web server's handle on its grading process (cli/web/worker.py): started with the server,
so torch and the sandbox are warm by the time the first Check is clicked; requests and replies
are JSON lines; a request superseded by a newer one with the same key is cancelled (the same
text asked twice, from two tabs, shares one check instead)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LINE_LIMIT = 256 * 1024 * 1024  # a reply carries a Result and the graded text


@dataclass
class _InFlight:
    future: asyncio.Future[dict[str, Any]]
    share: str | None
    waiting: int = 1


@dataclass
class Grader:
    log: Path
    process: asyncio.subprocess.Process | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    _next: int = 0
    _pending: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    _by_key: dict[str, tuple[int, _InFlight]] = field(default_factory=dict)
    _reader: asyncio.Task[None] | None = None
    _start_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _tasks: set[asyncio.Future[Any]] = field(default_factory=set)

    async def start(self) -> None:
        async with self._start_lock:
            if self.alive:
                return
            self.log.parent.mkdir(parents=True, exist_ok=True)
            self.ready.clear()
            with open(self.log, "ab") as log:
                # A session of its own: Ctrl-C in the server's terminal stops the server, which
                # then ends this process (and with it every sandboxed one) in `close`.
                self.process = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "attnkata.cli.web.worker",
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=log,
                    start_new_session=True,
                    limit=LINE_LIMIT,
                )
            self._reader = asyncio.create_task(self._read(self.process))

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def _read(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        while line := await process.stdout.readline():
            try:
                reply = json.loads(line)
            except json.JSONDecodeError:
                continue
            if reply.get("ready"):
                self.ready.set()
                continue
            future = self._pending.pop(reply.get("id"), None)
            if future is not None and not future.done():
                future.set_result(reply)
        await process.wait()
        for future in self._pending.values():
            if not future.done():
                future.set_result({"ok": False, "dead": True, "error": f"log: {self.log}"})
        self._pending.clear()

    async def request(
        self, op: str, *, key: str | None = None, share: str | None = None, **fields: Any
    ) -> dict[str, Any]:
        """Send one request and wait for its reply. With `key`, an earlier request under the
        same key that is still running is cancelled, unless it was made with the same `share`
        token (the same text): then both wait for that one."""
        if key is not None and key in self._by_key:
            old_id, old = self._by_key[key]
            if share is not None and old.share == share and not old.future.done():
                old.waiting += 1
                return await asyncio.shield(old.future)
            await self._send({"op": "cancel", "target": old_id})
        if not self.alive:
            await self.start()
        self._next += 1
        req_id = self._next
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[req_id] = future
        if key is not None:
            self._by_key[key] = (req_id, _InFlight(future, share))
        try:
            await self._send({"id": req_id, "op": op, **fields})
            return await asyncio.shield(future)
        finally:
            if key is not None and self._by_key.get(key, (None,))[0] == req_id:
                del self._by_key[key]

    def background(self, op: str, key: str | None = None, **fields: Any) -> None:
        """A request whose reply nobody waits for (warming up, making samples ahead of time)."""
        task = asyncio.ensure_future(self.request(op, key=key, **fields))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def warm(self, kata: str) -> None:
        """Have the sandbox load what `kata`'s grader needs, without waiting for it."""
        self.background("warm", key="warm", kata=kata)

    async def _send(self, req: dict[str, Any]) -> None:
        if not self.alive:
            return
        assert self.process is not None and self.process.stdin is not None
        try:
            self.process.stdin.write((json.dumps(req) + "\n").encode("utf-8"))
            await self.process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass

    async def close(self) -> None:
        """End the grading process and every sandboxed process it started: SIGINT first (a
        running check kills its candidate on the way out), then the whole process group."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGINT)
            if process.stdin is not None:
                with contextlib.suppress(Exception):
                    process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), 5)
            except TimeoutError:
                pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), 5)
        if self._reader is not None:
            self._reader.cancel()
