"""Load and validate `katas/<slug>/kata.toml`, the single source of truth for a kata.

Only stdlib here (tomllib, difflib): `kata list`, `show` and `hint` import this module
and must answer without importing torch.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from attnkata.checker.errors import KataDefinitionError, UnknownKataError

DIFFICULTIES = ("easy", "medium", "hard")
TIERS = ("core", "edge", "efficient")
# Timed on a GPU against a baseline, where one is present (the Triton katas): informative,
# never required, never scored (not in TIERS).
SPEED_TIER = "speed"
# Optional parts of attnkata a kata may need (kata.toml `requires`): pip extra -> the module
# whose presence means it is installed.
EXTRAS = {"triton": "triton"}
LANGS = ("en", "zh")
FOLLOWUP_KINDS = ("open", "choice", "numeric", "order")


@dataclass(frozen=True)
class Text:
    """A user-facing string in both languages."""

    en: str
    zh: str

    def get(self, lang: str) -> str:
        return self.zh if lang == "zh" else self.en


class Hint(NamedTuple):
    text: Text
    mistake: str | None = None  # a hint written for one diagnosed mistake


@dataclass(frozen=True)
class FollowUp:
    """An interviewer's follow-up question; `kind` decides which optional fields are set."""

    id: str
    kind: str
    prompt: Text
    answer: Text | None = None  # model answer (open) or explanation shown after answering
    options: tuple[Text, ...] = ()  # choice: the options; order: the items in correct order
    correct: int | None = None  # choice: index into options
    params: dict[str, tuple[float, ...]] = field(
        default_factory=dict
    )  # numeric: choices per parameter
    formula: str | None = None  # numeric: arithmetic over params
    tolerance: float = 0.01  # numeric: relative tolerance
    unit: str = ""


@dataclass(frozen=True)
class Kata:
    id: str
    title: Text
    difficulty: str
    minutes: int
    tags: tuple[str, ...]
    entry_points: tuple[str, ...]
    solution_file: str
    required_tiers: tuple[str, ...]
    hints: tuple[Hint, ...]
    followups: tuple[FollowUp, ...]
    mistakes: tuple[str, ...]
    folder: Path
    requires: tuple[str, ...] = ()  # extras (EXTRAS) the kata needs installed
    # The static policy for this kata's files: modules it may import beyond the policy's list
    # (exactly these, not their submodules) and API paths it may not use.
    allow_imports: tuple[str, ...] = ()
    ban: tuple[str, ...] = ()
    # The conventions a per-student variant may change (`[variants]`, checker/variants.py),
    # why some are left out ({en, zh} or None), and this object's variant: the parameters
    # that differ from the standard kata (empty: the standard kata).
    variants: tuple[Any, ...] = ()
    variants_left_out: dict[str, str] | None = None
    variant: tuple[tuple[str, str], ...] = ()

    @property
    def module_name(self) -> str:
        return self.id.replace("-", "_")

    @property
    def variant_values(self) -> dict[str, str]:
        """Every variant parameter's value (the standard kata's where this one keeps it)."""
        from attnkata.checker import variants

        return variants.complete(self.variants, dict(self.variant))

    @property
    def variant_key(self) -> str:
        from attnkata.checker import variants

        return variants.key(self.variants, dict(self.variant))

    def with_variant(self, variant: dict[str, str] | None) -> Kata:
        """This kata in `variant`'s conventions (None or {}: the standard kata)."""
        import dataclasses

        from attnkata.checker import variants

        diff = variants.changes(self.variants, variant)
        return dataclasses.replace(self, variant=tuple(diff.items()))

    @property
    def standard(self) -> Kata:
        return self.with_variant(None) if self.variant else self

    @property
    def grader_path(self) -> Path:
        return self.folder / f"test_{self.module_name}.py"

    @property
    def skeleton_path(self) -> Path:
        """The file `kata start` copies; a variant's is generated (checker/variant_text.py)
        into the data dir's cache the first time it is asked for."""
        if not self.variant:
            return self.folder / "skeleton.py"
        return _variant_skeleton(self)

    def statement_path(self, lang: str) -> Path:
        return self.folder / ("statement.zh.md" if lang == "zh" else "statement.md")

    def statement(self, lang: str) -> str:
        """The statement with the shared conventions spliced in at `{{conventions}}` (a
        variant's with its own conventions first)."""
        text = statement(self.id, lang)[1]
        if self.variant:
            from attnkata.checker import variant_text

            text = variant_text.statement(self, text, lang)
        return text

    def hint_for(self, mistake: str) -> Hint | None:
        return next((h for h in self.hints if h.mistake == mistake), None)

    @property
    def progressive_hints(self) -> tuple[Hint, ...]:
        return tuple(h for h in self.hints if h.mistake is None)


CONVENTIONS_MARK = "{{conventions}}"


def _variant_skeleton(kata: Kata) -> Path:
    """Write (when missing or stale) and return the skeleton file of `kata`'s variant."""
    import hashlib
    import tempfile

    from attnkata.checker import variant_text
    from attnkata.checker.store import data_dir

    text = variant_text.skeleton(kata)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    for root in (
        data_dir() / "cache" / "variants",
        Path(tempfile.gettempdir()) / "attnkata-variants",
    ):
        path = root / kata.id / digest / "skeleton.py"
        try:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".skeleton.{os.getpid()}.tmp")
                tmp.write_text(text, encoding="utf-8")
                os.replace(tmp, path)
            return path
        except OSError:
            continue  # a read-only data dir: the temp dir then
    raise KataDefinitionError(f"{kata.id}: cannot write the skeleton of variant {kata.variant_key}")


def conventions(lang: str) -> str:
    name = "conventions.zh.md" if lang == "zh" else "conventions.md"
    return (katas_root() / name).read_text(encoding="utf-8").strip()


def katas_root() -> Path:
    """The kata folders: `katas/` beside `checker/`, in a checkout and in an installed wheel
    alike (found by path, not by importing the package: the catalog sits below everything)."""
    return Path(__file__).resolve().parent.parent / "katas"


class _Fields:
    """Typed access to one toml table that names the file and the field on any error."""

    def __init__(self, path: Path, data: dict[str, Any], prefix: str = "") -> None:
        self.path, self.data, self.prefix = path, data, prefix

    def fail(self, name: str, problem: str) -> KataDefinitionError:
        return KataDefinitionError(f"{self.path}: field '{self.prefix}{name}': {problem}")

    def get(self, name: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
        if name not in self.data:
            if default is ...:
                raise self.fail(name, "missing")
            return default
        value = self.data[name]
        if isinstance(value, bool) and kind in (int, float, (int, float)):
            raise self.fail(name, f"expected a number, got {value!r}")
        if not isinstance(value, kind):
            expected = getattr(kind, "__name__", None) or " or ".join(k.__name__ for k in kind)
            raise self.fail(name, f"expected {expected}, got {type(value).__name__}")
        return value

    def text(self, name: str, default: Any = ...) -> Text | None:
        value = self.get(name, dict, default)
        return None if value is None else self.sub(value, name).text_value()

    def text_value(self) -> Text:
        """This table itself as a {en, zh} text."""
        for lang in LANGS:
            if not isinstance(self.data.get(lang), str) or not self.data[lang].strip():
                raise self.fail(lang, "missing or empty text")
        return Text(en=self.data["en"], zh=self.data["zh"])

    def strings(self, name: str, default: Any = ...) -> tuple[str, ...]:
        value = self.get(name, list, default)
        if not all(isinstance(v, str) for v in value):
            raise self.fail(name, "expected a list of strings")
        return tuple(value)

    def sub(self, value: Any, name: str) -> _Fields:
        if not isinstance(value, dict):
            raise self.fail(name, "expected a table")
        return _Fields(self.path, value, f"{self.prefix}{name}.")


def _parse_followup(f: _Fields) -> FollowUp:
    kind = f.get("kind", str)
    if kind not in FOLLOWUP_KINDS:
        raise f.fail("kind", f"must be one of {', '.join(FOLLOWUP_KINDS)}, got {kind!r}")
    options = tuple(
        f.sub(o, f"options[{i}]").text_value() for i, o in enumerate(f.get("options", list, []))
    )
    params = {k: tuple(float(x) for x in v) for k, v in f.get("params", dict, {}).items()}
    fu = FollowUp(
        id=f.get("id", str),
        kind=kind,
        prompt=f.text("prompt"),
        answer=f.text("answer", None),
        options=options,
        correct=f.get("correct", int, None),
        params=params,
        formula=f.get("formula", str, None),
        tolerance=float(f.get("tolerance", (int, float), 0.01)),
        unit=f.get("unit", str, ""),
    )
    if kind == "choice" and (
        fu.correct is None or not 0 <= fu.correct < len(options) or len(options) < 2
    ):
        raise f.fail("correct", "a choice question needs >= 2 options and a valid `correct` index")
    if kind == "order" and len(options) < 3:
        raise f.fail("options", "an order question needs >= 3 items")
    if kind == "numeric":
        if not fu.formula or not fu.params:
            raise f.fail("formula", "a numeric question needs `params` and `formula`")
        from attnkata.checker.arith import ArithmeticError_, evaluate

        try:
            evaluate(fu.formula, {k: v[0] for k, v in params.items()})
        except ArithmeticError_ as exc:
            raise f.fail("formula", str(exc)) from None
    if kind == "open" and fu.answer is None:
        raise f.fail("answer", "an open question needs a model answer")
    return fu


def load_kata(folder: Path) -> Kata:
    import tomllib  # here: `kata list` and `stats` usually read the cached summaries instead

    path = folder / "kata.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KataDefinitionError(f"{path}: file missing") from None
    except tomllib.TOMLDecodeError as exc:
        raise KataDefinitionError(f"{path}: not valid TOML: {exc}") from None
    f = _Fields(path, data)
    kata_id = f.get("id", str)
    if kata_id != folder.name:
        raise f.fail("id", f"{kata_id!r} does not match the folder name {folder.name!r}")
    difficulty = f.get("difficulty", str)
    if difficulty not in DIFFICULTIES:
        raise f.fail("difficulty", f"must be one of {', '.join(DIFFICULTIES)}")
    minutes = f.get("minutes", int)
    if not 1 <= minutes <= 180:
        raise f.fail("minutes", "must be between 1 and 180")
    tiers = f.strings("required_tiers", ("core", "edge"))
    if bad := [t for t in tiers if t not in TIERS]:
        raise f.fail("required_tiers", f"unknown tier(s) {bad}; known: {', '.join(TIERS)}")
    requires = f.strings("requires", ())
    if bad := [r for r in requires if r not in EXTRAS]:
        raise f.fail("requires", f"unknown extra(s) {bad}; known: {', '.join(EXTRAS)}")
    hints = tuple(
        Hint(text=f.sub(h, f"hints[{i}]").text_value(), mistake=h.get("mistake"))
        for i, h in enumerate(f.get("hints", list))
    )
    if sum(1 for h in hints if h.mistake is None) < 3:
        raise f.fail("hints", "at least 3 progressive hints (without `mistake`) are required")
    followups = tuple(
        _parse_followup(f.sub(q, f"followups[{i}]"))
        for i, q in enumerate(f.get("followups", list, []))
    )
    entry_points = f.strings("entry_points")
    if not entry_points:
        raise f.fail("entry_points", "at least one entry point is required")
    from attnkata.checker import variants

    params, left_out = variants.parse(data.get("variants"), path)
    solution_file = f.get("solution_file", str)
    if not solution_file.endswith(".py") or "/" in solution_file:
        raise f.fail("solution_file", "must be a plain file name ending in .py")
    kata = Kata(
        id=kata_id,
        title=f.text("title"),
        difficulty=difficulty,
        minutes=minutes,
        tags=f.strings("tags", ()),
        entry_points=entry_points,
        solution_file=solution_file,
        required_tiers=tiers,
        hints=hints,
        followups=followups,
        mistakes=f.strings("mistakes", ()),
        folder=folder,
        requires=requires,
        allow_imports=f.strings("allow_imports", ()),
        ban=f.strings("ban", ()),
        variants=params,
        variants_left_out=left_out,
    )
    for lang in LANGS:
        if not kata.statement_path(lang).is_file():
            raise KataDefinitionError(f"{kata.statement_path(lang)}: statement missing")
        if CONVENTIONS_MARK not in kata.statement_path(lang).read_text(encoding="utf-8"):
            raise KataDefinitionError(
                f"{kata.statement_path(lang)}: must include {CONVENTIONS_MARK}"
            )
    if not kata.grader_path.is_file():
        raise KataDefinitionError(f"{kata.grader_path}: grader missing")
    return kata


@cache
def all_katas() -> dict[str, Kata]:
    """Every bundled kata, keyed by id, in a stable teaching order (difficulty, then id)."""
    found = sorted((get_kata(kata_id) for kata_id in kata_ids()), key=_teaching_order)
    return {k.id: k for k in found}


def _teaching_order(k: Kata | KataSummary) -> tuple[int, int, str]:
    return DIFFICULTIES.index(k.difficulty) if k.difficulty in DIFFICULTIES else 9, k.minutes, k.id


class KataSummary(NamedTuple):
    """What listings need (`kata list`, `stats`, `next`), read without the hints and follow-ups."""

    id: str
    title: Text
    difficulty: str
    minutes: int
    mistakes: tuple[str, ...]
    requires: tuple[str, ...] = ()


SUMMARIES_VERSION = 2  # of the cached file's layout


@cache
def summaries() -> dict[str, KataSummary]:
    """Every kata's summary in teaching order. A kata.toml's head (everything before its first
    array of tables, `[[hints]]`) holds these fields, and parsing only the head keeps `kata
    list` fast; a file laid out otherwise is loaded in full. The result is kept in the data
    dir while no kata.toml changes (size and mtime), so most starts parse no TOML at all."""
    root, ids = katas_root(), kata_ids()
    stamp = [str(root), SUMMARIES_VERSION]
    for kata_id in ids:
        st = (root / kata_id / "kata.toml").stat()
        stamp.append([kata_id, st.st_mtime_ns, st.st_size])
    cached = _read_summaries(stamp)
    if cached is not None:
        return cached
    found = sorted((_summary(kata_id) for kata_id in ids), key=_teaching_order)
    _write_summaries(stamp, found)
    return {k.id: k for k in found}


def _summary(kata_id: str) -> KataSummary:
    import tomllib

    text = (katas_root() / kata_id / "kata.toml").read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text.split("\n[[", 1)[0])
        title = data["title"]
        return KataSummary(
            kata_id,
            Text(en=title["en"], zh=title["zh"]),
            data["difficulty"],
            int(data["minutes"]),
            tuple(data.get("mistakes", ())),
            tuple(data.get("requires", ())),
        )
    except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError):
        k = get_kata(kata_id)
        return KataSummary(k.id, k.title, k.difficulty, k.minutes, k.mistakes, k.requires)


def _summaries_file() -> Path:
    from attnkata.checker.store import data_dir

    return data_dir() / "cache" / "summaries.json"


def _read_summaries(stamp: list[Any]) -> dict[str, KataSummary] | None:
    try:
        data = json.loads(_summaries_file().read_text(encoding="utf-8"))
        if data["stamp"] != stamp:
            return None
        return {
            k["id"]: KataSummary(
                k["id"],
                Text(**k["title"]),
                k["difficulty"],
                k["minutes"],
                tuple(k["mistakes"]),
                tuple(k.get("requires", ())),
            )
            for k in data["katas"]
        }
    except (OSError, ValueError, KeyError, TypeError):
        return None  # none yet, another version's, or damaged: parse the katas again


def _write_summaries(stamp: list[Any], found: list[KataSummary]) -> None:
    """Best effort (a read-only data dir only costs the parse next time); written whole, then
    renamed, so a reader never sees half a file."""
    path = _summaries_file()
    data = {
        "stamp": stamp,
        "katas": [
            {
                "id": k.id,
                "title": {"en": k.title.en, "zh": k.title.zh},
                "difficulty": k.difficulty,
                "minutes": k.minutes,
                "mistakes": list(k.mistakes),
                "requires": list(k.requires),
            }
            for k in found
        ],
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass


def kata_ids() -> list[str]:
    """Ids of the bundled katas, without loading (or validating) them."""
    return sorted(p.name for p in katas_root().iterdir() if (p / "kata.toml").is_file())


def resolve_id(name: str) -> str:
    """The kata id that `name` means (case and `_` forgiven); unknown: the closest ids."""
    ids = kata_ids()
    for candidate in (name, name.strip().lower().replace("_", "-")):
        if candidate in ids:
            return candidate
    raise UnknownKataError(name, suggest(name, ids))


@cache
def get_kata(name: str) -> Kata:
    """Load one kata by id; only that kata's files are read and validated."""
    return load_kata(katas_root() / resolve_id(name))


def statement(name: str, lang: str) -> tuple[str, str]:
    """(kata id, statement in `lang`) without loading the kata.toml: `kata show` reads only the
    statement (an unknown name still gets the closest ids)."""
    kata_id = resolve_id(name)
    path = katas_root() / kata_id / ("statement.zh.md" if lang == "zh" else "statement.md")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        raise KataDefinitionError(f"{path}: statement missing") from None
    return kata_id, text.replace(CONVENTIONS_MARK, conventions(lang))


def suggest(name: str, choices: list[str]) -> list[str]:
    """The ids `name` begins (`flash` -> flash-attention, flash-attention-backward: a prefix is
    what a user types, and difflib alone ranks `mla` above them); else the closest ids, then
    substring matches for short typos."""
    typed = name.strip().lower().replace("_", "-")
    prefixed = [c for c in choices if typed and c.startswith(typed)]
    if prefixed:
        return prefixed
    close = difflib.get_close_matches(typed, choices, n=3, cutoff=0.5)
    extra = [c for c in choices if c not in close and (typed in c or c in typed)]
    return close + extra


def missing_extras(kata: Kata | KataSummary) -> list[str]:
    """The extras `kata` requires that are not installed here (found by module, without
    importing it: `kata list` stays fast)."""
    import importlib.util

    missing = []
    for extra in kata.requires:
        try:
            found = importlib.util.find_spec(EXTRAS[extra]) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(extra)
    return missing


def require_extras(kata: Kata, lang: str = "en") -> None:
    """Raise MissingExtra (exit 3) when `kata` needs an extra that is not installed."""
    missing = missing_extras(kata)
    if missing:
        from attnkata.checker.errors import MissingExtra
        from attnkata.checker.messages import msg

        extras = ",".join(missing)
        raise MissingExtra(
            msg("extra.missing", lang, kata=kata.id, extras=extras),
            msg("extra.install", lang, extras=extras),
        )
