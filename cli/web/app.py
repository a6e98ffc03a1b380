"""The Starlette application of `kata web`: its routes, behind the guard (cli/web/security.py),
with the grading process started and stopped with it."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from attnkata.cli.web import instructor, mock, practice
from attnkata.cli.web.grader import Grader
from attnkata.cli.web.pages import STATIC
from attnkata.cli.web.security import Guard


@dataclass
class Config:
    token: str
    port: int
    lang: str
    grader: Grader
    set_dir: Path | None = None
    grades_dir: Path | None = None
    started: float = field(default_factory=time.time)
    on_ready: Any = None  # called once the server answers (opens the browser)

    @property
    def instructor(self) -> bool:
        return self.set_dir is not None and self.grades_dir is not None


ROUTES = [
    Route("/", practice.list_page),
    Route("/kata/{kata}", practice.kata_page),
    Route("/api/kata/{kata}/file", practice.file_get, methods=["GET"]),
    Route("/api/kata/{kata}/file", practice.file_put, methods=["PUT"]),
    Route("/api/kata/{kata}/check", practice.check, methods=["POST"]),
    Route("/api/kata/{kata}/hint", practice.hint, methods=["POST"]),
    Route("/api/kata/{kata}/solution", practice.solution, methods=["POST"]),
    Route("/api/kata/{kata}/history", practice.history),
    Route("/mock", mock.start_page),
    Route("/api/mock/start", mock.start, methods=["POST"]),
    Route("/mock/{sid}", mock.session_page),
    Route("/mock/{sid}/replay", mock.replay_page),
    Route("/api/mock/{sid}/file", mock.file_put, methods=["PUT"]),
    Route("/api/mock/{sid}/paste", mock.paste, methods=["POST"]),
    Route("/api/mock/{sid}/run", mock.run, methods=["POST"]),
    Route("/api/mock/{sid}/submit", mock.submit, methods=["POST"]),
    Route("/api/mock/{sid}/hint", mock.hint, methods=["POST"]),
    Route("/api/mock/{sid}/finish", mock.finish, methods=["POST"]),
    Route("/api/mock/{sid}/answers", mock.answers, methods=["POST"]),
    Route("/instructor", instructor.instructor_page),
    Route("/api/instructor/stamp", instructor.stamp),
    Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
]


def build(config: Config) -> Guard:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # torch and the sandbox load while the first page is read.
        await config.grader.start()
        if config.on_ready is not None:
            config.on_ready()
        try:
            yield
        finally:
            await config.grader.close()

    app = Starlette(routes=ROUTES, lifespan=lifespan)
    app.state.config = config
    return Guard(app, config.token, config.port, config.lang)
