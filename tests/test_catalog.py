"""kata.toml is validated on load, with errors that name the file and the field."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from attnkata.checker import catalog
from attnkata.checker.errors import KataDefinitionError, UnknownKataError


def test_every_bundled_kata_loads():
    katas = catalog.all_katas()
    assert "sdpa" in katas
    for k in katas.values():
        assert len(k.progressive_hints) >= 3
        assert k.grader_path.is_file() and k.skeleton_path.is_file()
        for lang in ("en", "zh"):
            text = k.statement(lang)
            assert catalog.CONVENTIONS_MARK not in text
            assert ("Conventions" if lang == "en" else "约定") in text


def copy_kata(tmp_path: Path, slug: str = "sdpa") -> Path:
    dst = tmp_path / slug
    shutil.copytree(catalog.get_kata(slug).folder, dst)
    return dst


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda t: t.replace('difficulty = "easy"', 'difficulty = "trivial"'), "difficulty"),
        (lambda t: t.replace("minutes = 15", 'minutes = "15"'), "minutes"),
        (lambda t: t.replace('id = "sdpa"', 'id = "other"'), "id"),
        (lambda t: t.replace('zh = "缩放点积注意力（PyTorch）"', ""), "title.zh"),
        (
            lambda t: t.replace(
                'required_tiers = ["core", "edge"]', 'required_tiers = ["core", "fast"]'
            ),
            "required_tiers",
        ),
        (lambda t: t.replace("correct = 2", "correct = 9"), "followups[2].correct"),
        (
            lambda t: t.replace('formula = "L * S * d"', 'formula = "L * S * nope"'),
            "followups[1].formula",
        ),
    ],
)
def test_a_broken_field_is_named(tmp_path, edit, field):
    folder = copy_kata(tmp_path)
    toml = folder / "kata.toml"
    toml.write_text(edit(toml.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(KataDefinitionError) as exc:
        catalog.load_kata(folder)
    assert str(toml) in exc.value.message
    assert f"field '{field}'" in exc.value.message


def test_too_few_hints_is_refused(tmp_path):
    folder = copy_kata(tmp_path)
    toml = folder / "kata.toml"
    text = toml.read_text(encoding="utf-8")
    first = text.index("[[hints]]")
    second = text.index("[[hints]]", first + 1)
    toml.write_text(
        text[:first]
        + text[second:].split("[[hints]]", 2)[0]
        + "[[followups]]"
        + text.split("[[followups]]", 1)[1],
        encoding="utf-8",
    )
    with pytest.raises(KataDefinitionError, match="field 'hints'"):
        catalog.load_kata(folder)


def test_invalid_toml_names_the_file(tmp_path):
    folder = copy_kata(tmp_path)
    (folder / "kata.toml").write_text("id = \n", encoding="utf-8")
    with pytest.raises(KataDefinitionError, match="not valid TOML"):
        catalog.load_kata(folder)


def test_unknown_kata_suggests_the_closest():
    with pytest.raises(UnknownKataError) as exc:
        catalog.get_kata("spda")
    assert exc.value.suggestions[0] == "sdpa"
    assert "did you mean 'sdpa'" in exc.value.hint


def test_underscores_are_accepted_for_dashes():
    assert catalog.get_kata("SDPA").id == "sdpa"


def _cjk(ch: str) -> bool:
    return "\u3000" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef"


@pytest.mark.parametrize("kata_id", catalog.kata_ids())
def test_chinese_statements_have_no_soft_breaks_between_characters(kata_id):
    """Markdown renders a newline inside a paragraph as a space: visible between CJK characters."""
    text = catalog.get_kata(kata_id).statement("zh")
    fence = False
    lines = text.split("\n")
    for before, after in zip(lines, lines[1:], strict=False):
        if before.startswith("```"):
            fence = not fence
        if (
            not fence
            and before
            and after
            and _cjk(before[-1])
            and _cjk(after.lstrip()[:1] or "a")
            and not after.lstrip().startswith(("-", "|", "#", "*", ">"))
            and not after.lstrip()[:1].isdigit()
        ):
            raise AssertionError(
                f"{kata_id}: soft line break inside a Chinese paragraph: {before[-20:]!r} / {after[:20]!r}"
            )
