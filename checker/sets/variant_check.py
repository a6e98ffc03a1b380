"""A variant is handed out only once it is checked: the per-variant mutation matrix.

`kata set create --variants` refuses a variant unless, graded by the standard grader through
its adapter (checker/adapter.py), all in this process (trusted code, no sandbox):

1. its reference (the generated source `kata set solution` prints, checker/variant_text.py)
   passes every test of its own grader;
2. every catalogued mistake, written in the variant's conventions (each spelling of each
   mutant of reference/mutants/, wrapped to take the variant's inputs), fails the grader
   (one spelling per mistake is graded: the others behave alike) and behaves on every
   diagnosis probe exactly as the standard kata's mutant, so it is diagnosed with its own id
   as there (tests/test_mutation_matrix.py); and no other variant's conventions explain it,
   which would make the diagnosis name a convention instead (checker/diagnose/conventions.py)
   unless that convention's mistake is its own id (`mask-polarity-flipped`);
3. correct code in each nearby variant's conventions (the standard kata's among them) either
   passes (the difference is invisible to the grader) or fails and is diagnosed with exactly
   the conventions it kept: no two mistakes become indistinguishable in the variant.

Results are kept in the data dir's cache by the kata's content hash and the variant, so a
set made again (or another class with the same variants) is checked at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import types
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import torch

from attnkata.checker import driver, probes
from attnkata.checker import variants as vs
from attnkata.checker.adapter import Adapted, Conventions, NotExpressible, variant_namespace
from attnkata.checker.catalog import Kata
from attnkata.checker.diagnose import engine
from attnkata.checker.diagnose.behaviour import differs, flat
from attnkata.checker.diagnose.conventions import exact_mistake, follows, neighbours, observe
from attnkata.checker.diagnose.engine import CallBudget
from attnkata.checker.diagnose.subjects import one_thread
from attnkata.checker.local import LocalCandidate
from attnkata.checker.models import PASS, SKIP
from attnkata.checker.sets.manifest import kata_hash, reference_file
from attnkata.checker.variant_text import reference_source

CHECK_VERSION = 1  # of what the cache holds


@dataclass
class VariantCheck:
    """What checking one variant of one kata found."""

    kata: str
    variant: dict[str, str]
    key: str
    problems: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems


def load_reference(kata: Kata) -> types.ModuleType:
    """The variant's reference (generated source) as a module of this process: trusted code."""
    source = reference_source(kata)
    module = types.ModuleType(f"attnkata_variant_{kata.module_name}")
    module.__file__ = f"<{kata.id} variant {kata.variant_key}>"
    exec(compile(source, module.__file__, "exec"), module.__dict__)  # noqa: S102 - our own generated reference
    return module


def _grade(kata: Kata, candidate: Any, first_failure: bool = False) -> list[Any]:
    """The grader's results for `candidate`, in this process's kept pytest session."""
    with probes.salted(0), torch.random.fork_rng(devices=[]):
        _, collector, _ = driver.run(
            kata, reference_file(kata), candidate, keep_session=True, first_failure=first_failure
        )
    if collector.collect_errors:
        raise RuntimeError(f"the grader of {kata.id} is broken: {collector.collect_errors[0]}")
    return collector.results


def _failing(kata: Kata, results: list[Any]) -> list[str]:
    return [r.id for r in results if r.tier in kata.required_tiers and r.status not in (PASS, SKIP)]


def _catalogued(kata: Kata, code: Any) -> str | None:
    """The catalogued mistake that `code`, graded in `kata`'s variant, reproduces exactly."""
    budget = CallBudget(float("inf"))
    obs = observe(kata, code, kata.variant_values, budget)
    return exact_mistake(kata, obs) if obs is not None else None


def _same_on_probes(kata: Kata, candidate: Any, standard: list[Any]) -> tuple[list[str], bool]:
    """(the diagnosis probes on which `candidate` (adapted) behaves otherwise than the
    standard mutant's `standard` observations, whether the mistake cannot be written in the
    variant at all: its output has no form in the variant's convention)."""
    spec = engine.load_spec(kata.id)
    assert spec is not None
    out = []
    for probe, want in zip(spec.probes, standard, strict=True):
        got = spec.subject.candidate_call(candidate, probe)
        if got.error is not None and got.error[0] == NotExpressible.__name__:
            return [], True
        n = flat(want)
        size = n[1].size if n is not None else 0
        if differs(got, want, size).any():
            out.append(probe.name)
    return out, False


@cache
def _standard_fails(kata_id: str, mid: str) -> bool:
    """Does the standard kata's grader fail mistake `mid`'s first spelling? (A few mistakes
    only the diagnosis probes show: the grader passes them in every variant alike.)"""
    from attnkata.checker.sets.manifest import load_set_kata

    kata = load_set_kata(kata_id)
    spec = engine.load_spec(kata.id)
    assert spec is not None
    code = LocalCandidate(spec.subject.reference, spec.mutants[mid][0])
    return bool(_failing(kata, _grade(kata, code, first_failure=True)))


def check_variant(kata: Kata) -> VariantCheck:
    """Check `kata`'s variant (see the module docstring); problems are listed, not raised."""
    with one_thread():  # tiny tensors: OpenMP's threads only wait on each other
        return _check(kata)


def _check(kata: Kata) -> VariantCheck:
    t0 = time.perf_counter()
    report = VariantCheck(kata.id, kata.variant_values, kata.variant_key)
    conv = Conventions(kata)
    # 1. the reference passes its own grader
    reference = load_reference(kata)
    failing = _failing(kata, _grade(kata, Adapted(LocalCandidate(reference), conv)))
    if failing:
        report.problems.append(f"its reference fails its own grader: {', '.join(failing[:5])}")
    spec = engine.load_spec(kata.id)
    if spec is None:
        report.seconds = round(time.perf_counter() - t0, 3)
        return report
    _, muts = engine._local_observations(kata.id)
    standard = _standard(kata)
    # 2. every mistake fails as in the standard kata and keeps its own diagnosis
    graded = inapplicable = 0
    for mid, spellings in spec.mutants.items():
        for vi, mutant in enumerate(spellings):
            code = LocalCandidate(variant_namespace(standard, conv, mutant))
            adapted = Adapted(code, conv)
            moved, absent = _same_on_probes(kata, adapted, muts[mid][vi])
            if absent:
                inapplicable += 1  # e.g. a mask of the wrong shape where the variant's is (B, S)
                continue
            if moved:
                report.problems.append(
                    f"{mid}[{vi}] behaves otherwise than in the standard kata on {', '.join(moved[:3])}"
                )
            if vi == 0:
                graded += 1
                fails = bool(_failing(kata, _grade(kata, adapted, first_failure=True)))
                if not fails and _standard_fails(kata.id, mid):
                    report.problems.append(
                        f"the mistake {mid} passes the grader in this variant, but fails it in "
                        "the standard kata"
                    )
            kept = follows(kata, code)
            if kept is not None:  # (None: its own behaviour is a catalogued mistake's)
                ids = {
                    p.mistake for p in kata.variants if kept[p.name] != kata.variant_values[p.name]
                }
                report.problems.append(
                    f"{mid}[{vi}] would be diagnosed as the convention(s) {', '.join(sorted(i for i in ids if i))}"
                )
    # 3. correct code in nearby conventions (the generated reference of each) is named by
    # the conventions it kept, and by none it did not keep
    named = 0
    for other in neighbours(kata):
        near = kata.with_variant(other)
        code = LocalCandidate(load_reference(near))
        if not _failing(kata, _grade(kata, Adapted(code, conv), first_failure=True)):
            continue  # invisible to the grader: no mistake to name
        named += 1
        kept = follows(kata, code, reference_source(near))
        want = {p.name for p in kata.variants if other[p.name] != kata.variant_values[p.name]}
        got = (
            set()
            if kept is None
            else {p.name for p in kata.variants if kept[p.name] != kata.variant_values[p.name]}
        )
        if got - want:
            report.problems.append(
                f"code in the conventions {vs.key(kata.variants, other)} is diagnosed as "
                f"{vs.key(kata.variants, kept)}"
            )
        elif not got and _catalogued(kata, code) is None:
            report.problems.append(
                f"code in the conventions {vs.key(kata.variants, other)} fails, and neither a "
                "convention nor a catalogued mistake explains it"
            )
    report.counts = {
        "mistakes": len(spec.mutants),
        "spellings": sum(len(v) for v in spec.mutants.values()),
        "graded_mistakes": graded,
        "not_in_variant": inapplicable,
        "conventions": named,
    }
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def _standard(kata: Kata) -> Any:
    """The namespace the kata's mutants are written over (the reference, or its REFERENCE)."""
    spec = engine.load_spec(kata.id)
    assert spec is not None
    return spec.subject.reference


# -- the cache ---------------------------------------------------------------------------------
@cache
def _hash(kata_id: str) -> str:
    from attnkata.checker.sets.manifest import load_set_kata

    kata = load_set_kata(kata_id)
    h = hashlib.sha256(kata_hash(kata).encode())
    mutants = (
        Path(engine.__file__).resolve().parents[2]
        / "reference"
        / "mutants"
        / f"{kata.module_name}.py"
    )
    for path in (
        mutants,
        Path(__file__).resolve().parents[1] / "adapter.py",
        Path(__file__).resolve().parents[1] / "variant_text.py",
        Path(__file__).resolve().parents[1] / "diagnose" / "conventions.py",
    ):
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()[:24]


def _cache_file(kata: Kata) -> Path:
    from attnkata.checker.store import data_dir

    return data_dir() / "cache" / "variant-checks" / f"{kata.id}-{_hash(kata.id)}.json"


def checked(kata: Kata) -> VariantCheck:
    """check_variant, or its cached result for the same kata files and variant."""
    path = _cache_file(kata)
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stored = {}
    hit = stored.get(kata.variant_key) if stored.get("version") == CHECK_VERSION else None
    if isinstance(hit, dict):
        return VariantCheck(**{**hit, "cached": True})
    report = check_variant(kata)
    stored = stored if stored.get("version") == CHECK_VERSION else {"version": CHECK_VERSION}
    stored[kata.variant_key] = asdict(report)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(stored), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only data dir: checked again next time
    return report
