"""Mock interview logic without grading: picking, follow-ups, scoring, the snapshot rule,
hints and the reference lock. Nothing here imports torch."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnkata.checker import catalog
from attnkata.checker.catalog import FollowUp, Text
from attnkata.checker.errors import UsageError
from attnkata.checker.mock import followups, grading, picker, scorecard
from attnkata.checker.mock import session as sess
from attnkata.checker.store import KataStats, connect
from attnkata.cli.app import app

SDPA = catalog.get_kata("sdpa")
runner = CliRunner()


def numeric(formula: str = "L * S * d", tolerance: float = 0.001) -> FollowUp:
    return FollowUp(
        id="flops",
        kind="numeric",
        prompt=Text("L={L} S={S} d={d} {not_a_param}", "L={L}"),
        params={"L": (512.0, 1024.0, 2048.0), "S": (512.0, 4096.0), "d": (64.0, 128.0)},
        formula=formula,
        tolerance=tolerance,
        unit="multiply-adds",
    )


# -- follow-ups ------------------------------------------------------------------------------
def test_numeric_questions_follow_the_seed():
    fu = numeric()
    a, b = followups.instantiate("sdpa", fu, 1), followups.instantiate("sdpa", fu, 1)
    assert a == b
    p = a["params"]
    assert a["expected"] == p["L"] * p["S"] * p["d"]
    assert a["prompt"]["en"] == f"L={int(p['L'])} S={int(p['S'])} d={int(p['d'])} {{not_a_param}}"
    drawn = {
        tuple(followups.instantiate("sdpa", fu, seed)["params"].values()) for seed in range(20)
    }
    assert len(drawn) > 3, "different sessions must ask different numbers"


def test_numeric_grading():
    q = followups.instantiate("sdpa", numeric(), 5)
    e = q["expected"]
    assert followups.grade(q, e)["points"] == 2
    assert followups.grade(q, f"{e:,.0f} multiply-adds")["status"] == "correct"
    p = q["params"]
    assert followups.grade(q, f"{int(p['L'])}*{int(p['S'])}*{int(p['d'])}")["points"] == 2
    assert followups.grade(q, f"{e / 1e6:.4f}M")["points"] == 2
    close = followups.grade(q, e * 1.05)
    assert (close["points"], close["status"]) == (1, "partial")
    doubled = followups.grade(q, 2 * e)
    assert doubled["points"] == 0 and "factor of 2" in doubled["feedback"]["en"]
    assert "1000 or 1024" in followups.grade(q, e / 1024)["feedback"]["en"]
    bad = followups.grade(q, "lots")
    assert (bad["points"], bad["status"]) == (0, "invalid") and "not a number" in bad["feedback"][
        "en"
    ]
    assert followups.grade(q, "")["status"] == "unanswered"


def test_choice_and_order_questions_are_shuffled_and_checked():
    by_kind = {f.kind: f for f in SDPA.followups}
    choice = followups.instantiate("sdpa", by_kind["choice"], 3)
    fu = by_kind["choice"]
    assert choice["options"][choice["correct"]]["en"] == fu.options[fu.correct].en
    letter = followups.LETTERS[choice["correct"]]
    assert followups.grade(choice, letter)["points"] == 2
    assert followups.grade(choice, letter.upper())["points"] == 2
    assert followups.grade(choice, choice["correct"] + 1)["points"] == 2  # 1-based number
    assert followups.grade(choice, fu.options[fu.correct].en)["points"] == 2  # the option's text
    wrong = followups.LETTERS[(choice["correct"] + 1) % len(choice["options"])]
    assert followups.grade(choice, wrong)["points"] == 0
    assert followups.grade(choice, "z")["status"] == "invalid"

    order_fu = by_kind["order"]
    for seed in range(10):
        q = followups.instantiate("sdpa", order_fu, seed)
        assert q["order"] != list(range(len(q["options"]))), "never shown already solved"
        shown_in_order = [q["options"][i]["en"] for i in q["order"]]
        assert shown_in_order == [o.en for o in order_fu.options]
    right = [followups.LETTERS[i] for i in q["order"]]
    assert followups.grade(q, " ".join(right))["points"] == 2
    assert followups.grade(q, right)["points"] == 2
    assert followups.grade(q, "".join(right))["points"] == 2
    swapped = right[:]
    swapped[0], swapped[3] = swapped[3], swapped[0]
    assert (followups.grade(q, ",".join(swapped))["points"]) == 1
    assert followups.grade(q, list(reversed(right)))["points"] == 0
    assert followups.grade(q, "a a b c d")["status"] == "invalid"


def test_open_questions_are_self_rated():
    q = followups.instantiate("sdpa", next(f for f in SDPA.followups if f.kind == "open"), 1)
    assert followups.grade(q, {"answer": "variance", "rating": 2})["points"] == 2
    assert followups.grade(q, 1)["points"] == 1
    unrated = followups.grade(q, "because variance grows")
    assert (unrated["points"], unrated["status"]) == (0, "unrated")
    assert followups.grade(q, {"answer": "x", "rating": 5})["status"] == "invalid"


def test_selection_keeps_a_numeric_question_and_the_kata_order():
    extra = tuple(
        FollowUp(id=f"o{i}", kind="open", prompt=Text("p", "p"), answer=Text("a", "a"))
        for i in range(4)
    )
    kata = SDPA.__class__(**{**SDPA.__dict__, "followups": SDPA.followups + extra})
    for seed in range(8):
        chosen = followups.select(kata, seed)
        assert len(chosen) == followups.PER_PROBLEM
        assert any(f.kind == "numeric" for f in chosen)
        ids = [f.id for f in kata.followups]
        assert [ids.index(f.id) for f in chosen] == sorted(ids.index(f.id) for f in chosen)


def test_answers_files(tmp_path: Path):
    qs = followups.questions_for(SDPA, 4)
    toml = tmp_path / "a.toml"
    toml.write_text(
        'sdpa.score-flops = 5\n"sdpa.why-sqrt-d" = { answer = "x", rating = 1 }\n', encoding="utf-8"
    )
    loaded = followups.load_answers(toml)
    assert loaded == {"sdpa.score-flops": 5, "sdpa.why-sqrt-d": {"answer": "x", "rating": 1}}
    js = tmp_path / "a.json"
    js.write_text(json.dumps({"score-flops": 5}), encoding="utf-8")
    matched = followups.match_answers(qs, followups.load_answers(js))
    assert list(matched) == ["sdpa.score-flops"]
    with pytest.raises(UsageError, match="unknown question"):
        followups.match_answers(qs, {"sdpa.nope": 1})
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(UsageError, match="not valid JSON"):
        followups.load_answers(tmp_path / "bad.json")


# -- picking ---------------------------------------------------------------------------------
def fake(kata_id: str, minutes: int, mistakes: tuple[str, ...] = ()) -> catalog.Kata:
    return SDPA.__class__(
        **{**SDPA.__dict__, "id": kata_id, "minutes": minutes, "mistakes": mistakes}
    )


def test_picker_is_reproducible_and_prefers_weak_spots():
    katas = [fake("a", 15), fake("b", 15, ("mask-polarity-flipped",)), fake("c", 15), fake("d", 20)]
    stats = {"a": KataStats("a", 5, 3, 60.0, 0), "c": KataStats("c", 4, 0, None, 3)}
    mistakes = {"mask-polarity-flipped": 6}
    first = [p.kata.id for p in picker.pick(katas, stats, mistakes, seed=9, count=2)]
    assert first == [p.kata.id for p in picker.pick(katas, stats, mistakes, seed=9, count=2)]
    counts = {k.id: 0 for k in katas}
    for seed in range(400):
        counts[picker.pick(katas, stats, mistakes, seed=seed, count=1)[0].kata.id] += 1
    assert counts["a"] == min(counts.values()), counts  # passed before: least likely
    assert counts["b"] > counts["d"], counts  # tests a mistake the candidate keeps making
    assert counts["c"] > counts["a"], counts  # attempted, never passed
    reason = {k.id: picker.weigh(k, stats.get(k.id), mistakes)[1] for k in katas}
    assert "mask-polarity-flipped" in reason["b"]["en"] and "not passed" in reason["c"]["en"]
    assert reason["a"]["zh"].startswith("以前通过过")


def test_picker_fills_the_time_budget():
    katas = [fake("a", 15), fake("b", 20), fake("c", 25), fake("d", 40)]
    for seed in range(20):
        picks = picker.pick(katas, {}, {}, seed=seed, minutes=45)
        assert 1 <= len(picks) <= 3 and sum(p.kata.minutes for p in picks) <= 45
    assert [p.kata.id for p in picker.pick(katas, {}, {}, seed=0, minutes=5)] == ["a"]
    with pytest.raises(UsageError, match="only 2"):
        picker.pick(katas[:2], {}, {}, seed=0, count=3)
    with pytest.raises(UsageError, match="between 1 and 3"):
        picker.pick(katas, {}, {}, seed=0, count=4)
    with pytest.raises(UsageError, match="unknown difficulty"):
        picker.candidates("impossible")
    with pytest.raises(UsageError, match="twice"):
        picker.chosen_by_user(["sdpa", "sdpa"])


# -- scoring ----------------------------------------------------------------------------------
def test_tier_score_weights():
    assert scorecard.tier_score({"core": [10, 10], "edge": [5, 5]}) == 100
    assert scorecard.tier_score({"core": [10, 10], "edge": [0, 5]}) == pytest.approx(100 * 60 / 90)
    assert scorecard.tier_score(
        {"core": [5, 10], "edge": [5, 5], "efficient": [0, 2]}
    ) == pytest.approx(60)
    assert scorecard.tier_score({}) == 0


@pytest.mark.parametrize(
    ("passed", "total", "fu", "hints", "verdict"),
    [
        ([True, True], 90, 80.0, 1, "strong hire"),
        ([True, True], 90, 80.0, 2, "hire"),
        ([True], 86, 50.0, 0, "hire"),
        ([True], 86, None, 0, "strong hire"),
        ([True, False], 60, 100.0, 0, "lean no"),
        ([False], 55, 0.0, 0, "lean no"),
        ([True, False, False], 20, 0.0, 0, "lean no"),
        ([False], 40, 100.0, 0, "no hire"),
    ],
)
def test_verdict_rules(passed, total, fu, hints, verdict):
    got, rule = scorecard.decide([{"passed": p} for p in passed], total, fu, hints)
    assert got == verdict
    assert rule["en"].startswith(verdict + ":") and f"{total:.0f}" in rule["en"]
    assert rule["zh"].startswith(scorecard.verdict_name(verdict, "zh"))


# -- the session on disk ------------------------------------------------------------------------
def start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: str = "+0") -> sess.Session:
    monkeypatch.setenv(sess.NOW_ENV, at)
    return sess.create([SDPA], {}, minutes=30, seed=5, lang="en", folder=tmp_path / "s")


def test_create_layout_and_single_open_session(tmp_path, monkeypatch):
    s = start(tmp_path, monkeypatch)
    assert (s.folder / "sdpa.py").read_bytes() == SDPA.skeleton_path.read_bytes()
    assert "{{conventions}}" not in (s.folder / "sdpa.statement.md").read_text(encoding="utf-8")
    assert "30 minutes" in (s.folder / "README.md").read_text(encoding="utf-8")
    assert s.deadline - s.started == 1800
    assert sess.find().id == s.id and sess.find(s.id[:10]).id == s.id
    with pytest.raises(UsageError, match="not finished"):
        sess.create([SDPA], {}, minutes=30, seed=1, lang="en", folder=tmp_path / "t")
    with pytest.raises(UsageError, match="no mock session with id"):
        sess.find("nope")
    monkeypatch.setenv(sess.NOW_ENV, "soon")
    with pytest.raises(UsageError, match="KATA_MOCK_NOW"):
        sess.now()


def test_late_edit_without_a_check_grades_the_skeleton(tmp_path, monkeypatch):
    s = start(tmp_path, monkeypatch)
    path = s.folder / "sdpa.py"
    path.write_text("# written after the deadline\n", encoding="utf-8")
    late = s.deadline + 60
    os.utime(path, (late, late))
    monkeypatch.setenv(sess.NOW_ENV, str(s.deadline + 120))
    s = sess.close_if_due(s.folder)
    assert s.state == sess.SUBMITTED and s.submit_reason == "deadline" and s.submitted == s.deadline
    assert s.snapshot_path(s.problems[0]).read_bytes() == SDPA.skeleton_path.read_bytes()
    assert "after the deadline" in s.problems[0].snapshot_note
    assert not sess.attempted(s, s.problems[0])


def test_file_saved_before_the_deadline_is_taken_as_is(tmp_path, monkeypatch):
    s = start(tmp_path, monkeypatch)
    (s.folder / "sdpa.py").write_text("# mine\n", encoding="utf-8")
    monkeypatch.setenv(sess.NOW_ENV, "+1900")
    s = sess.close_if_due(s.folder)
    assert s.snapshot_path(s.problems[0]).read_text(encoding="utf-8") == "# mine\n"
    assert s.problems[0].snapshot_note == ""
    (s.folder / "sdpa.py").write_text("# changed later\n", encoding="utf-8")
    assert (
        sess.close_if_due(s.folder).snapshot_path(s.problems[0]).read_text(encoding="utf-8")
        == "# mine\n"
    )


def test_hints_cost_points_and_follow_mistakes(tmp_path, monkeypatch):
    s = start(tmp_path, monkeypatch)
    with sess.mutate(s.folder) as cur:
        cur.problems[0].checks.append(
            {
                "t": 1.0,
                "status": "fail",
                "passed": 0,
                "total": 1,
                "tiers": {},
                "diagnoses": ["fully-masked-row-nan", "input-mutated", "no-such-id"],
                "titles": {},
            }
        )
    seen, texts = [], []
    while (got := sess.take_hint(s.folder, "sdpa")) is not None:
        seen.append(got[1])
        texts.append(got[2])
    # the kata's own hint for a diagnosed mistake first, then the catalogue's fix for one the
    # kata has no hint for, then the progressive hints; an unknown id gives nothing
    assert SDPA.hint_for("fully-masked-row-nan") and not SDPA.hint_for("input-mutated")
    levels = [f"level:{i}" for i in range(1, len(SDPA.progressive_hints) + 1)]
    assert seen == ["mistake:fully-masked-row-nan", "mistake:input-mutated"] + levels
    assert texts[0] == SDPA.hint_for("fully-masked-row-nan").text.en
    s = sess.load(s.folder)
    assert s.problems[0].hints == seen
    with connect() as conn:
        assert conn.execute("SELECT COUNT(*) FROM events WHERE kind = 'mock-hint'").fetchone()[
            0
        ] == len(seen)
        assert conn.execute("SELECT COUNT(*) FROM events WHERE kind = 'hint'").fetchone()[0] == 0
    # scoring: a passing problem with hints loses HINT_COST each
    with sess.mutate(s.folder) as cur:
        sess.submit(cur, sess.now(), "manual")
        cur.results["sdpa"] = {
            "status": "pass",
            "required_tiers": ["core", "edge"],
            "diagnostics": [],
            "tests": [
                {"id": "a", "tier": "core", "status": "pass"},
                {"id": "b", "tier": "edge", "status": "pass"},
            ],
        }
    (s.folder / ".mock" / "snapshot" / "sdpa.py").write_text("# changed\n", encoding="utf-8")
    card = scorecard.build(sess.load(s.folder))
    p = card["problems"][0]
    assert p["raw_score"] == 100 and p["score"] == max(0, 100 - scorecard.HINT_COST * len(seen))


def test_solution_is_refused_during_a_mock(tmp_path, monkeypatch):
    s = start(tmp_path, monkeypatch)
    res = runner.invoke(app, ["solution", "sdpa", "--yes"])
    assert res.exit_code == 2
    assert "not available during a mock interview" in res.output and s.id in res.output
    res = runner.invoke(app, ["hint", "sdpa"])  # free hints would bypass the mock's cost
    assert res.exit_code == 2 and "kata mock hint sdpa" in res.output
    res = runner.invoke(app, ["mock", "abandon", "--yes"])
    assert res.exit_code == 0 and "abandoned" in res.output
    assert sess.load(s.folder).state == sess.ABANDONED
    res = runner.invoke(app, ["solution", "sdpa", "--yes"])
    assert res.exit_code == 0 and "def scaled_dot_product_attention" in res.output


def test_status_history_and_card_without_torch(tmp_path, monkeypatch):
    s = start(tmp_path, monkeypatch)
    res = runner.invoke(app, ["mock", "status", "--json"])
    assert res.exit_code == 0
    data = json.loads(res.stdout)
    assert data["id"] == s.id and data["seconds_left"] == pytest.approx(1800, abs=5)
    assert data["problems"][0]["status"] == "unchecked"
    monkeypatch.setenv(sess.NOW_ENV, "+1801")
    res = runner.invoke(app, ["mock", "status"])
    assert res.exit_code == 0 and "submitted" in res.output and "kata mock submit" in res.output
    res = runner.invoke(app, ["mock", "check"])
    assert res.exit_code == 2 and "is over" in res.output
    res = runner.invoke(app, ["mock", "history", "--json"])
    assert json.loads(res.stdout)["sessions"][0]["state"] == "submitted"
    assert runner.invoke(app, ["mock", "card"]).exit_code == 2  # nothing graded yet
    # none of these may import torch (they must answer instantly)
    code = (
        "import sys; from typer.testing import CliRunner; from attnkata.cli.app import app; "
        "r = CliRunner().invoke(app, ['mock', 'status']); r2 = CliRunner().invoke(app, ['mock', 'history']); "
        "assert r.exit_code == 0, r.output; assert 'torch' not in sys.modules"
    )
    import subprocess

    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ.copy())


def test_markdown_in_chinese(tmp_path, monkeypatch):
    s = start(tmp_path, monkeypatch)
    with sess.mutate(s.folder) as cur:
        sess.submit(cur, sess.now(), "manual")
        cur.results["sdpa"] = {
            "status": "fail",
            "required_tiers": ["core", "edge"],
            "tests": [
                {"id": "a", "tier": "core", "status": "pass"},
                {"id": "b", "tier": "edge", "status": "fail"},
                {"id": "c", "tier": "edge", "status": "pass"},
            ],
            "diagnostics": [
                {"id": "mask-ignored", "severity": "essential", "title": "Mask ignored"}
            ],
        }
        cur.questions = followups.questions_for(SDPA, cur.seed)
        cur.state = sess.FOLLOWUPS
    untouched = scorecard.build(sess.load(s.folder))["problems"][0]
    assert (untouched["attempted"], untouched["score"], untouched["mistakes"]) == (False, 0, [])
    (s.folder / ".mock" / "snapshot" / "sdpa.py").write_text("# an attempt\n", encoding="utf-8")
    s = grading.answer(s.folder, {}, finalize=True)
    assert s.state == sess.DONE
    md = scorecard.to_markdown(s.card, "zh")
    assert "模拟面试评分卡" in md and "结论" in md and "`mask-ignored`" in md and "`b`" in md
    assert "未作答" in md  # unanswered follow-ups
    # core 1/1, edge 1/2 -> 100 * (60 + 15) / 90; nothing passes, follow-ups score 0
    assert s.card["coding"] == pytest.approx(83.3)
    assert s.card["total"] == pytest.approx(0.75 * 83.3, abs=0.1)
    assert s.card["verdict"] == "lean no" and "倾向不录用" in md
    assert (s.folder / "scorecard.md").is_file() and json.loads(
        (s.folder / "scorecard.json").read_text()
    ) == s.card


class FakeGrader:
    """Stands in for the grading worker: remembers requests, replies when told to."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, Path]] = []
        self.pending: list[dict] = []

    def submit(self, kata: str, path: Path, lang: str) -> None:
        self.requests.append((kata, path))

    def drain(self) -> list[dict]:
        out, self.pending = self.pending, []
        return out


def test_screen_controller_keys_checks_and_deadline(tmp_path, monkeypatch):
    from attnkata.checker.mock.live import DEADLINE, QUIT, Controller, clock_text

    t0 = 1_700_000_000.0
    monkeypatch.setenv(sess.NOW_ENV, str(t0))
    s = sess.create([SDPA], {}, minutes=30, seed=5, lang="en", folder=tmp_path / "s")
    grader = FakeGrader()
    ctl = Controller(s.folder, grader)

    ctl.on_key("h")
    assert "costs 10 points" in ctl.message.title and sess.load(s.folder).problems[0].hints == []
    ctl.on_key("x")  # anything else cancels
    ctl.on_key("h")
    ctl.on_key("h")
    assert sess.load(s.folder).problems[0].hints == ["level:1"] and ctl.message.body

    monkeypatch.setenv(sess.NOW_ENV, str(t0 + 90))
    (s.folder / "sdpa.py").write_text("# attempt\n", encoding="utf-8")
    ctl.on_key("c")
    assert grader.requests == [("sdpa", s.folder / ".mock" / "checkpoints" / "sdpa.py")]
    ctl.on_saved({(s.folder / "sdpa.py").resolve()})  # same content as the checkpoint: no new check
    assert len(grader.requests) == 1
    grader.pending.append(
        {
            "ok": True,
            "result": {
                "status": "pass",
                "diagnostics": [],
                "tests": [{"id": "a", "tier": "core", "status": "pass"}],
            },
        }
    )
    monkeypatch.setenv(sess.NOW_ENV, str(t0 + 100))
    ctl.tick()
    p = sess.load(s.folder).problems[0]
    assert [c["status"] for c in p.checks] == [
        "pass"
    ] and p.first_pass == t0 + 90  # when it was taken
    assert ctl.checking is None

    ctl.on_key("s")
    assert "Press s again" in ctl.message.title and ctl.ended is None
    ctl.on_key("c")  # cancels the submit, checks instead
    assert ctl.ended is None and len(grader.requests) == 2
    monkeypatch.setenv(sess.NOW_ENV, str(t0 + 1800))
    ctl.tick()
    assert ctl.ended == DEADLINE
    done = sess.load(s.folder)
    assert (done.state, done.submit_reason, done.submitted) == (
        sess.SUBMITTED,
        "deadline",
        t0 + 1800,
    )
    assert clock_text(65) == "01:05" and clock_text(3725) == "1:02:05" and QUIT == "quit"


@pytest.mark.parametrize("kata_id", list(catalog.all_katas()))
def test_every_katas_followups_can_be_asked_and_answered(kata_id):
    kata = catalog.get_kata(kata_id)
    for seed in range(5):
        for q in followups.questions_for(kata, seed):
            for lang in ("en", "zh"):
                for name in q["params"]:
                    assert "{" + name + "}" not in q["prompt"][lang], q["id"]
            right = {
                "numeric": q["expected"],
                "open": 2,
                "choice": followups.LETTERS[q["correct"] or 0],
                "order": [followups.LETTERS[i] for i in q["order"] or []],
            }[q["kind"]]
            graded = followups.grade(q, right)
            assert graded["points"] == followups.MAX_POINTS, (q["id"], graded)
