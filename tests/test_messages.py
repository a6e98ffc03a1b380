"""One catalogue of user-facing messages (checker/messages.py and its data modules), one lookup.

Every key has an English and a Chinese text with the same placeholders, and no code outside the
catalogue translates inline (`lang == "zh"`, `{"en": ..., "zh": ...}` literals): a new sentence
goes into the catalogue and is looked up with `msg`."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from attnkata.checker import messages, messages_mock, messages_sets, messages_ui
from attnkata.checker.messages import MESSAGES, both, label, msg, phrase

ROOT = Path(__file__).resolve().parent.parent


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


@pytest.mark.parametrize("key", sorted(MESSAGES))
def test_every_key_has_both_languages_with_the_same_placeholders(key):
    entry = MESSAGES[key]
    assert isinstance(entry, tuple) and len(entry) == 2, key
    en, zh = entry
    assert isinstance(en, str) and isinstance(zh, str), key
    assert en.strip() and zh.strip(), f"{key}: an empty text"
    assert _fields(en) == _fields(zh), f"{key}: {_fields(en)} in English, {_fields(zh)} in Chinese"


def test_the_data_modules_make_one_key_space():
    parts = [messages_mock.MESSAGES, messages_sets.MESSAGES, messages_ui.MESSAGES]
    total = sum(len(p) for p in parts)
    assert all(p.keys() <= MESSAGES.keys() for p in parts)
    for i, a in enumerate(parts):
        for b in parts[i + 1 :]:
            assert not a.keys() & b.keys()
    # The engine's own sentences plus the parts, none defined twice.
    assert len(MESSAGES) > total


def test_msg_formats_in_either_language_and_falls_back_to_english():
    assert msg("mock.cli.about", "en", n=3) == "~3 min"
    assert msg("mock.cli.about", "zh", n=3) == "约 3 分钟"
    assert msg("mock.cli.about", "fr", n=3) == "~3 min"
    assert both("render.same_as", test="t1") == {
        "en": "(same message as t1)",
        "zh": "（信息同 t1）",
    }
    assert phrase("doing_call", name="f").render("zh") == "调用 f 时"
    nested = both(
        "scorecard.rule.lean_no",
        why=phrase("scorecard.rule.why", n_pass=1, n=2),
        total=60,
        lean_total=50,
        hire_total=70,
    )
    assert nested["en"].startswith("lean no: 1 of 2 problem(s) pass;")
    assert nested["zh"].startswith("倾向不录用：2 道题中通过 1 道；")
    assert label("report.statuses", "pass", "zh") == "通过"
    assert label("report.statuses", "weird", "zh") == "weird"


# -- no inline translation outside the catalogue ------------------------------------------------
# Out of scope: the diagnosis engine and the mistake catalogue (checker/mistakes.py renders its
# own en/zh content from mistakes.toml), and the static policy; the message catalogue itself
# holds the one `lang == "zh"` of `msg`.
SKIP = (
    "checker/diagnose/",
    "checker/mistakes.py",
    "checker/policy.py",
    "checker/messages.py",
    "checker/messages_",
)

# Branches on the language that are not translations: (file, the line's text, why).
ALLOWED = [
    (
        "checker/catalog.py",
        'return self.zh if lang == "zh" else self.en',
        "Text.get picks a kata's own text from kata.toml, not an engine message",
    ),
    (
        "checker/catalog.py",
        '("statement.zh.md" if lang == "zh" else "statement.md")',
        "the name of the statement's file in that language",
    ),
    (
        "checker/catalog.py",
        'name = "conventions.zh.md" if lang == "zh" else "conventions.md"',
        "the name of the conventions' file in that language",
    ),
    (
        "checker/sets/report.py",
        'doc_lang = "zh" if cr.lang == "zh" else "en"',
        "the HTML document's lang attribute",
    ),
    (
        "checker/sets/handout.py",
        'doc_lang = "zh" if langs == ["zh"] else "en"',
        "the HTML document's lang attribute",
    ),
    (
        "cli/console.py",
        'return "zh" if value.lower().startswith("zh") else "en"',
        "the language named by a locale variable",
    ),
    (
        "cli/console.py",
        'return "zh" if loc.lower().startswith("zh") else "en"',
        "the language of the system's locale",
    ),
    (
        "checker/sets/grade.py",
        'lang = opts.lang or ("zh" if manifest.options.get("lang") == "zh" else "en")',
        "which language to grade in, from the options",
    ),
]

# `lang == "zh"`, `x.lang != "en"`, `"zh" if ...`, `... if zh else ...`: a choice between two
# texts by language.
BRANCH = re.compile(r"""[!=]=\s*["'](zh|en)["']|["']zh["']\s+if\b|\bif\s+zh\b""")
# {"en": "...", "zh": "..."} or Text(en="...", zh="..."): a pair of literal texts.
PAIR = re.compile(
    r"""["']en["']\s*:\s*f?["'].*["']zh["']\s*:\s*f?["']|\ben\s*=\s*f?["'].*\bzh\s*=\s*f?["']"""
)
# A table per language: {"en": {...}, "zh": {...}} (its "zh" line opening a dict, list or tuple).
TABLE = re.compile(r"""^\s*["']zh["']\s*:\s*[{\[(]""")


def _sources() -> list[Path]:
    files = sorted((ROOT / "checker").rglob("*.py")) + sorted((ROOT / "cli").rglob("*.py"))
    return [f for f in files if not any(f.relative_to(ROOT).as_posix().startswith(s) for s in SKIP)]


def test_no_inline_translation_outside_the_catalogue():
    allowed = {(path, text) for path, text, _why in ALLOWED}
    used: set[tuple[str, str]] = set()
    found = []
    for f in _sources():
        rel = f.relative_to(ROOT).as_posix()
        lines = f.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines, 1):
            # Two lines at once: a pair of texts is often split after its English half.
            pair_text = line + " " + (lines[n].strip() if n < len(lines) else "")
            if not (BRANCH.search(line) or TABLE.search(line) or PAIR.search(pair_text)):
                continue
            hit = next(((p, t) for p, t in allowed if p == rel and t in line), None)
            if hit:
                used.add(hit)
            else:
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "translate with checker.messages.msg and a catalogue key:\n" + "\n".join(
        found
    )
    assert used == allowed, f"exceptions that no longer occur: {allowed - used}"


def test_the_retired_tables_are_gone():
    assert not (ROOT / "checker" / "mock" / "text.py").exists()
    for f in _sources():
        text = f.read_text(encoding="utf-8")
        assert not re.search(
            r"^(LABELS|L10N|L|_LABELS|GRID_LABELS|_WORDS|SCREEN_TEXT|TEXT)\s*[:=]", text, re.M
        ), f


def test_the_catalogue_has_no_unused_module():
    # messages.py merges every data module beside it.
    for f in (ROOT / "checker").glob("messages_*.py"):
        assert f.stem in vars(messages), f"{f.name} is not merged by checker/messages.py"
