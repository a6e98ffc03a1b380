"""The diagnosis engine: gathers evidence (behaviour, runtime trace, crash signatures, source)
and turns it into at most a few catalogued verdicts with the candidate's own numbers.

Runs in the grading process after the grader, while the candidate's child is still alive.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import torch

from attnkata.checker import mistakes as cat
from attnkata.checker.catalog import Kata
from attnkata.checker.diagnose import pairs, peel, replay
from attnkata.checker.diagnose.ast_rules import Source, banned_references, locate
from attnkata.checker.diagnose.behaviour import FAMILY, Verdict, match, output_dtypes
from attnkata.checker.diagnose.crashes import classify
from attnkata.checker.diagnose.inputs import Probe, as_float32, grid_of
from attnkata.checker.diagnose.subjects import FunctionSubject, ModuleSubject, Observed, one_thread
from attnkata.checker.messages import msg
from attnkata.checker.models import ERROR, PASS, TIMEOUT, Diagnostic, Result, SourceRef
from attnkata.checker.probes import salted
from attnkata.checker.proxy import (
    Candidate,
    CandidateBanned,
    CandidateCrashed,
    CandidateExited,
    CandidateMemory,
    CandidateRaised,
    CandidateTimeout,
)
from attnkata.checker.weights import LAYOUT_TEXT

# Diagnosis probes get a shorter leash than tests: they are small, and diagnosis must stay fast.
# The budgets below count CPU seconds (the candidate's, or this process's), never the wall
# clock, so that the same file gets the same diagnosis on a busy machine (CallBudget).
PROBE_CALL_TIMEOUT = 2.0
PROBE_TIME_BUDGET = 2.0
# Searching pairs of mistakes runs combined variants locally: CPU seconds of this process.
PAIR_TIME_BUDGET = 0.6
# Peeling two or three mistakes off one at a time (combined variants run locally): CPU
# seconds of this process, so that a busy machine does not cut the search short.
PEEL_TIME_BUDGET = 1.5
# Other forms of the probes the code cannot take (float32, dv = d...): candidate CPU seconds.
ALT_TIME_BUDGET = 1.5
ALT_KEY = 1000  # peel's cache key of probe i's other form: ALT_KEY + i


@dataclass
class Finding:
    """Everything that points at one mistake, before it becomes a Diagnostic."""

    id: str
    strength: int  # 3 behaviour exact, 2 behaviour joint / trace / crash, 1 static only
    evidence: list[str] = field(default_factory=list)
    source: list[SourceRef] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    probe: Probe | None = None
    severity: str | None = None  # overrides the catalogue's (e.g. "informative": not certain)
    variant: int | None = None  # the mutant variant whose behaviour it reproduces, if one


class Findings(dict[str, Finding]):
    def copy_all(self) -> Findings:
        """A copy whose findings can be changed without changing these."""
        out = Findings()
        for k, f in self.items():
            out[k] = replace(
                f,
                evidence=list(f.evidence),
                source=list(f.source),
                params=dict(f.params),
                data=dict(f.data),
            )
        return out

    def add(
        self,
        mid: str,
        strength: int,
        evidence: str | None = None,
        *,
        source: list[SourceRef] | None = None,
        params: dict[str, Any] | None = None,
        probe: Probe | None = None,
    ) -> Finding:
        f = self.get(mid)
        if f is None:
            f = self[mid] = Finding(mid, strength, probe=probe)
        f.strength = max(f.strength, strength)
        if evidence and evidence not in f.evidence:
            f.evidence.append(evidence)
        for ref in source or []:
            if all(r.line != ref.line for r in f.source):
                f.source.append(ref)
        f.params.update(params or {})
        if f.probe is None:
            f.probe = probe
        return f


# -- the kata's mutants module ------------------------------------------------------------
@dataclass
class Spec:
    """A kata's behavioural diagnosis: probes, reference, mutants (id -> variants, each a
    {entry point: replacement} dict) and how to call them."""

    kata: str
    probes: list[Probe]
    mutants: dict[str, list[dict[str, Any]]]
    subject: FunctionSubject | ModuleSubject
    module: ModuleType


def _variants(value: Any, default_entry: str) -> list[dict[str, Any]]:
    items = value if isinstance(value, list) else [value]
    return [v if isinstance(v, dict) else {default_entry: v} for v in items]


@cache
def load_spec(kata_id: str) -> Spec | None:
    """`attnkata.reference.mutants.<module>` for the kata, or None when it has none yet."""
    from attnkata.checker.catalog import get_kata

    kata = get_kata(kata_id)
    name = f"attnkata.reference.mutants.{kata.module_name}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None
        raise
    reference = getattr(module, "REFERENCE", None) or importlib.import_module(
        f"attnkata.reference.{kata.module_name}"
    )
    entry = kata.entry_points[0]
    is_module = isinstance(getattr(reference, entry, None), type)
    subject = (
        ModuleSubject(reference, getattr(module, "load_mutant", None))
        if is_module
        else FunctionSubject(reference)
    )
    mutants = {mid: _variants(v, entry) for mid, v in module.MUTANTS.items()}
    with salted(0):  # the same probes in every check: only the graders' inputs are salted
        probes = list(module.probes())
    return Spec(kata_id, probes, mutants, subject, module)


@cache
def _local_observations(kata_id: str) -> tuple[list[Observed], dict[str, list[list[Observed]]]]:
    """Reference and mutant outputs on every probe: deterministic, so computed once per process."""

    spec = load_spec(kata_id)
    assert spec is not None
    with one_thread():
        ref = [spec.subject.reference_call(p) for p in spec.probes]
        muts = {
            mid: [[spec.subject.mutant_call(v, p) for p in spec.probes] for v in variants]
            for mid, variants in spec.mutants.items()
        }
    return ref, muts


def _alternative_forms(probe: Probe, hook: Any) -> list[Probe]:
    """Other forms of a probe, for code that cannot take it: float32 inputs, then the kata's
    own alternatives (and theirs in float32)."""
    forms = [as_float32(probe)] if probe.dtype == torch.float64 else []
    for alt in hook(probe) if hook is not None else []:
        forms += [alt, as_float32(alt)] if alt.dtype == torch.float64 else [alt]
    return forms


_ALT_OBS: dict[tuple[str, int, int], tuple[Observed, dict[str, list[Observed]]]] = {}


def _alternative_observations(
    kata_id: str, i: int, k: int, probe: Probe
) -> tuple[Observed, dict[str, list[Observed]]]:
    """The reference's and every mutant's output on form k of probe i (computed once)."""
    hit = _ALT_OBS.get((kata_id, i, k))
    if hit is None:
        spec = load_spec(kata_id)
        assert spec is not None
        with one_thread():
            hit = (
                spec.subject.reference_call(probe),
                {
                    mid: [spec.subject.mutant_call(v, probe) for v in variants]
                    for mid, variants in spec.mutants.items()
                },
            )
        _ALT_OBS[(kata_id, i, k)] = hit
    return hit


class CallBudget:
    """Seconds of candidate calls the diagnosis may spend, counted in the candidate's own CPU
    seconds for calls that returned (wall seconds for one that raised or hung): a busy
    machine slows the wall clock of every call, and a budget counted in wall seconds would
    give the same file a shorter diagnosis there (issue: verdicts that depend on load).
    The CPU figure is the child's own report: it may stretch a diagnosis, never a verdict,
    and every call stays under its wall-clock limit."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.spent = seconds, 0.0

    @property
    def used_up(self) -> bool:
        return self.spent > self.seconds

    def call(self, fn: Callable[..., Observed], *args: Any) -> Observed:
        t0 = time.perf_counter()
        obs = fn(*args)
        self.spent += obs.cpu if obs.ok and obs.cpu is not None else time.perf_counter() - t0
        return obs


# -- the engine ------------------------------------------------------------------------------
class Engine:
    def __init__(
        self, kata: Kata, path: Path, source: str, result: Result, candidate: Candidate, lang: str
    ) -> None:
        self.kata, self.path, self.result, self.candidate, self.lang = (
            kata,
            path,
            result,
            candidate,
            lang,
        )
        self.src = Source(source)
        self.findings = Findings()
        self.explained_runner: set[int] = set()  # indexes into result.diagnostics now covered
        self.spec = load_spec(kata.id)
        self.base_params = (
            dict(self.spec.probes[0].params) if self.spec and self.spec.probes else {}
        )
        self.verdict: Verdict | None = None
        self.cand_obs: list[Observed] = []
        self.ref_obs: list[Observed] = []
        self.alt_probes: list[Probe] = []  # other forms of probes the code could not take

    def probe_list(self, names: list[str], by_name: dict[str, Probe]) -> str:
        """Probe names quoted and joined as the reader's language writes a list."""
        return self.say("diag.list_sep").join(
            self.say("diag.quoted", name=self.pname(by_name[n]) if n in by_name else n)
            for n in names
        )

    def say(self, key: str, **params: Any) -> str:
        """A sentence of the diagnosis in the reader's language (checker/messages_diagnose.py)."""
        return msg(key, self.lang, **params)

    def pname(self, probe: Probe) -> str:
        return probe.name_zh if self.lang == "zh" and probe.name_zh else probe.name

    def applies(self, mid: str) -> bool:
        return mid in cat.catalogue() and (
            mid in self.kata.mistakes or cat.get(mid).applies_to(self.kata.id)
        )

    # -- evidence ----------------------------------------------------------------------
    def from_runner(self) -> None:
        """The grader's own failures: banned APIs and exceptions with a known signature."""
        for i, d in enumerate(self.result.diagnostics):
            if d.id == "banned-api":
                self.findings.add(
                    "banned-api", 2, d.explanation, params={"api": _api_name(d.explanation)}
                )
                self.explained_runner.add(i)
            elif d.id == "exception":
                mid = classify(d.explanation, self.kata.id, self.base_params)
                if mid and self.applies(mid):
                    self.findings.add(
                        mid,
                        2,
                        self.say("diag.tests_raised", detail=d.explanation),
                        source=list(d.source),
                    )
                    self.explained_runner.add(i)
        if self.candidate.load_banned:
            names = ", ".join(self.candidate.load_banned)
            self.findings.add(
                "banned-api", 2, self.say("diag.load_banned", names=names), params={"api": names}
            )

    def probe_candidate(self) -> None:
        assert self.spec is not None
        saved = self.candidate.limits
        total = saved.total_timeout
        saved_timed_out = set(self.candidate.timed_out)
        # A kata whose code runs slowly by nature (Triton's interpreter) sets its own leash,
        # and its own budgets for the searches below (its variants run interpreted too).
        call_timeout = getattr(self.spec.module, "PROBE_CALL_TIMEOUT", PROBE_CALL_TIMEOUT)
        seconds = getattr(self.spec.module, "PROBE_TIME_BUDGET", PROBE_TIME_BUDGET)
        if self.result.status == TIMEOUT:
            # Code too slow for the graders' sizes may still take the probes' tiny ones: each
            # call gets the probes' own leash, on top of what the tests used.
            self.candidate.timed_out.clear()
            total = max(total, self.candidate.used + seconds + call_timeout)
        self.candidate.limits = replace(
            saved, call_timeout=min(saved.call_timeout, call_timeout), total_timeout=total
        )
        budget = CallBudget(seconds)
        try:
            stop = ""
            for p in self.spec.probes:
                if budget.used_up:
                    stop = "diagnosis time budget used up"
                if stop:
                    self.cand_obs.append(Observed(error=("Skipped", stop)))
                    continue
                obs = budget.call(self.spec.subject.candidate_call, self.candidate, p)
                self.cand_obs.append(obs)
                # A child that died or hung once will do it again: the runner reports that.
                if isinstance(
                    obs.failure,
                    CandidateCrashed | CandidateExited | CandidateTimeout | CandidateMemory,
                ):
                    stop = f"stopped after {type(obs.failure).__name__}"
        finally:
            self.candidate.limits = saved
            self.candidate.timed_out |= saved_timed_out

    def _hangs_everywhere(self) -> bool:
        """The check timed out and so did every probe the candidate was given."""
        tried = [
            o
            for o in self.cand_obs
            if o.failure is not None or o.error is None or o.error[0] != "Skipped"
        ]
        return (
            self.result.status == TIMEOUT
            and bool(tried)
            and all(isinstance(o.failure, CandidateTimeout) for o in tried)
        )

    def from_behaviour(self) -> None:
        """Which catalogued mistakes the candidate's outputs reproduce. Each probe is judged on
        its own: a probe the code cannot take (it raises where no mutant does) is named as
        such and left out, so a mistake shown by the other probes is still found."""
        assert self.spec is not None
        ref, muts = _local_observations(self.kata.id)
        self.ref_obs = ref
        probes = self.spec.probes
        if self.nondeterministic:
            return  # every value differs at random: no behaviour can be matched
        applicable = {mid: variants for mid, variants in muts.items() if self.applies(mid)}
        usable = [
            i for i, o in enumerate(self.cand_obs) if o.error is None or o.error[0] != "Skipped"
        ]
        cannot = [i for i in usable if self._cannot_take(i, ref, applicable)]
        # A probe the code cannot take is tried again in the forms it may take (float32, dv = d...).
        alts = self._alternatives(cannot) if cannot else {}
        kept = [i for i in usable if i not in cannot or i in alts]
        self._name_unsupported(cannot, kept, judged=bool(alts))
        if not kept:
            return
        probes, cand_all, ref_all = list(probes), list(self.cand_obs), list(ref)
        muts = {mid: [list(v) for v in variants] for mid, variants in muts.items()}
        self.alt_probes = [alt for alt, _, _, _ in alts.values()]
        for i, (alt, c, r, m) in alts.items():
            probes[i], cand_all[i], ref_all[i] = alt, c, r
            for mid, variants in m.items():
                for vi, o in enumerate(variants):
                    muts[mid][vi][i] = o
        applicable = {mid: variants for mid, variants in muts.items() if self.applies(mid)}
        pick = lambda xs: [xs[i] for i in kept]  # noqa: E731
        cand, refs = pick(cand_all), pick(ref_all)
        picked = {mid: [pick(v) for v in variants] for mid, variants in applicable.items()}
        keys = [i if i not in alts else ALT_KEY + i for i in kept]
        verdict = match(pick(probes), cand, refs, picked)
        self.verdict = verdict
        if verdict.matched:
            strength = 3 if verdict.exact and not verdict.ambiguous else 2
            for f in self._add_matched(
                verdict.matched,
                strength,
                {mid: muts[mid][vi] for mid, vi in verdict.variant.items() if vi != FAMILY},
            ):
                f.variant = verdict.variant.get(f.id)
                if verdict.ambiguous:  # the probes left (others raised) cannot tell which one
                    f.severity = "informative"
            return
        if not verdict.deviates:
            return
        pair = pairs.search(
            pick(probes),
            cand,
            refs,
            picked,
            {mid: self.spec.mutants[mid] for mid in applicable},
            self.spec.subject,
            getattr(self.spec.module, "PAIR_TIME_BUDGET", PAIR_TIME_BUDGET),
        )
        if pair is not None:
            # A pair reproduces the candidate exactly: both mistakes are certain.
            both = [pair.first, pair.second]
            shares = {mid: pairs.explained_share(cand, refs, picked[mid][vi]) for mid, vi in both}
            both.sort(key=lambda m: -shares[m[0]])
            self.verdict = replace(
                verdict,
                matched={mid: pair.shown[mid] for mid, _ in both},
                variant=dict(both),
                exact=True,
                closest=None,
            )
            for f in self._add_matched(
                self.verdict.matched,
                3,
                {mid: muts[mid][vi] for mid, vi in both},
                shares=shares,
                together=self.say("diag.together", other="{other}"),
            ):
                f.variant = dict(both)[f.id]
            return
        if self._peel(pick(probes), keys, cand, refs, picked, muts, applicable):
            return
        for mid, (vi, share, shown) in verdict.partial.items():
            # Reproduced wherever it shows, but the rest of the deviation is something else:
            # worth saying, not certain enough to be the verdict.
            f = self._add_matched(
                {mid: shown},
                1,
                {mid: muts[mid][vi]} if vi != FAMILY else {},
                shares={mid: share},
                partial=True,
            )[0]
            f.severity, f.variant = "informative", vi

    def _peel(
        self,
        probes: list[Probe],
        keys: list[int],
        cand: list[Observed],
        refs: list[Observed],
        picked: dict[str, list[list[Observed]]],
        muts: dict[str, list[list[Observed]]],
        applicable: dict[str, Any],
    ) -> bool:
        """Two or three mistakes, or mistakes beside a quirk no mutant has: take them off one
        at a time (`peel.py`). Each names the probes it explains; it is essential only where
        it reproduces every element it changes."""
        assert self.spec is not None
        # The memory probes (large, slow to run as combined variants) are judged from the
        # trace; their values add little to what the other probes show.
        small = [j for j, p in enumerate(probes) if p.budget is None]
        if len(small) >= 3 and len(small) < len(probes):
            probes, keys, cand, refs = ([xs[j] for j in small] for xs in (probes, keys, cand, refs))
            picked = {mid: [[v[j] for j in small] for v in vs] for mid, vs in picked.items()}
        found = peel.peel(
            self.kata.id,
            probes,
            keys,
            cand,
            refs,
            picked,
            {mid: self.spec.mutants[mid] for mid in applicable},
            self.spec.subject,
            getattr(self.spec.module, "PEEL_TIME_BUDGET", PEEL_TIME_BUDGET),
        )
        if found is None or not any(s.certain for s in found.steps):
            return False
        by_name = {p.name: p for p in probes}
        for step in found.steps:
            f = self.findings.add(
                step.mid,
                3 if step.certain else 1,
                self.say("diag.peel_explains", names=self.probe_list(step.probes[:3], by_name)),
                probe=by_name.get(step.probes[0]) if step.probes else None,
            )
            f.variant = step.variant
            f.data["share"] = round(step.share, 3)
            f.data["explains_probes"] = list(step.probes)
            if not step.certain:
                f.severity = "informative"
                if step.alike:
                    f.evidence.append(self.say("diag.alike", names=", ".join(step.alike)))
            self._explain_errors(f, muts[step.mid][step.variant], 3 if step.certain else 1)
        if found.unexplained:
            for step in found.steps[:1]:
                self.findings[step.mid].evidence.append(
                    self.say(
                        "diag.unexplained_probes",
                        names=self.probe_list(found.unexplained[:3], by_name),
                    )
                )
        return True

    def count_explained(self) -> None:
        """How many of the failing tests each finding explains, in its evidence and in
        `data["explains"]`: a behavioural finding's mutant is graded on the failing tests
        (skipped when it is the only finding: it explains them all); `input-not-supported`
        explains the tests that raised its exception."""
        assert self.spec is not None
        failing = replay.failing_ids(self.result.tests)
        if not failing:
            return
        behavioural = [f for f in self.findings.values() if f.variant is not None]
        others = [f for f in self.findings.values() if f.variant is None and f.strength >= 2]
        counts: dict[str, int] = {}
        ids: dict[str, list[str]] = {}  # which tests: `kata check` folds them under the finding
        if len(behavioural) == 1 and not others and behavioural[0].severity != "informative":
            counts[behavioural[0].id] = len(failing)  # the one certain finding explains them all
            ids[behavioural[0].id] = list(failing)
        elif len(behavioural) > 1 or others:
            for f in behavioural:
                if f.variant == FAMILY or f.variant is None:
                    continue
                mutant = self.spec.mutants[f.id][f.variant]
                try:
                    got = replay.failing_tests(
                        self.kata, self.path, mutant, self.spec.subject.reference, failing
                    )
                except Exception:  # a count is extra: it must never cost the verdict itself
                    if os.environ.get("ATTNKATA_STRICT_DIAGNOSIS"):
                        raise
                    got = None
                if got is not None:
                    counts[f.id] = len(got & set(failing))
                    ids[f.id] = [t for t in failing if t in got]
        if "input-not-supported" in self.findings:
            raised = {
                c.error[1][:60]
                for i, c in enumerate(self.cand_obs)
                if c.error is not None
                and self.spec.probes[i].name
                in self.findings["input-not-supported"].data.get("unsupported_probes", [])
            }
            ids["input-not-supported"] = [
                t.id
                for t in self.result.tests
                if t.id in failing and any(r and r in t.message for r in raised)
            ]
            counts["input-not-supported"] = len(ids["input-not-supported"])
        for mid, n in counts.items():
            f = self.findings[mid]
            f.data["explains"] = {"tests": n, "failing": len(failing), "ids": ids.get(mid, [])}
            f.evidence.insert(0, self.say("diag.explains_tests", n=n, total=len(failing)))
            f.data["share"] = n / len(failing)  # orders findings of one strength

    def retry_layouts(self, before: Findings) -> None:
        """A fused layer that no row layout fitted on one token: another mistake shows even
        there (no output projection, softmax over heads), or the layout is unknown. Probe
        again with each layout loaded as is, and keep the first under which a catalogued
        mistake matches; else say that the weights could not be mapped (not certain)."""
        assert self.spec is not None
        subject = self.spec.subject
        if not isinstance(subject, ModuleSubject) or (
            self.verdict is not None and self.verdict.matched
        ):
            return
        unfit, _ = subject.layouts(self.candidate)
        if not unfit:
            return
        layer, tried = next(iter(unfit.items()))
        stacked = (self.cand_obs, self.findings, self.verdict, set(self.explained_runner))
        try:
            for layout in tried[1:]:  # the first, stacked, is what was just probed
                subject.force_layouts = {layer: layout}
                self.cand_obs, self.findings, self.verdict = [], before.copy_all(), None
                self.probe_candidate()
                self.from_behaviour()
                if self.verdict is not None and self.verdict.matched:
                    for f in self.findings.values():
                        if f.id in self.verdict.matched:
                            f.evidence.append(
                                self.say(
                                    "diag.layout_read", layer=layer, layout=LAYOUT_TEXT[layout]
                                )
                            )
                    return
        finally:
            subject.force_layouts = {}
        self.cand_obs, self.findings, self.verdict, self.explained_runner = stacked
        names = "; ".join(LAYOUT_TEXT[t] for t in tried)
        f = self.findings.add(
            "weights-unmappable",
            1,
            self.say("diag.fused_no_layout", layer=layer, names=names),
            params={"layer_note": self.say("diag.fused_layer_note", layer=layer, names=names)},
        )
        f.severity = "informative"
        f.data["layouts_tried"] = list(tried)

    @property
    def nondeterministic(self) -> bool:
        """Two identical calls of a repeat probe gave different outputs."""
        assert self.spec is not None
        return any(
            p.repeat and c.ok and c.second is not None and not _equal(c.value, c.second)
            for p, c in zip(self.spec.probes, self.cand_obs, strict=False)
        )

    def _cannot_take(
        self, i: int, ref: list[Observed], muts: dict[str, list[list[Observed]]]
    ) -> bool:
        """The candidate raised on probe i where the reference did not and no mutant raises
        the same: evidence about that input only (a crash of the child ends all probes)."""
        c = self.cand_obs[i]
        if c.ok or not ref[i].ok:
            return False
        if c.failure is None and c.stage == "call":
            return False
        if c.stage == "call":
            key = _norm(c.error[1]) if c.error else ""
            if any(
                o[i].error is not None and _norm(o[i].error[1]) == key
                for vs in muts.values()
                for o in vs
            ):
                return False
        return True

    def _alternatives(
        self, cannot: list[int]
    ) -> dict[int, tuple[Probe, Observed, Observed, dict[str, list[Observed]]]]:
        """For probes the code cannot take: the first other form of the probe it takes (the
        same inputs in float32; the kata's `alternatives(probe)`, e.g. dv = d), with the
        reference's and the mutants' outputs on it: index -> (probe, candidate, reference,
        {id: [variant outputs]})."""
        assert self.spec is not None
        out = {}
        hook = getattr(self.spec.module, "alternatives", None)
        budget = CallBudget(getattr(self.spec.module, "ALT_TIME_BUDGET", ALT_TIME_BUDGET))
        for i in cannot:
            c = self.cand_obs[i]
            if c.stage != "call" or not isinstance(c.failure, CandidateRaised):
                continue  # a crash or a timeout would only repeat; weights that do not fit stay so
            for k, alt in enumerate(_alternative_forms(self.spec.probes[i], hook)):
                if budget.used_up:
                    return out
                got = budget.call(self.spec.subject.candidate_call, self.candidate, alt)
                if got.failure is not None and not isinstance(got.failure, CandidateRaised):
                    return out
                if not got.ok:
                    continue
                r, m = _alternative_observations(self.kata.id, i, k, alt)
                if r.ok:
                    out[i] = (alt, got, r, m)
                break
        return out

    def _name_unsupported(self, cannot: list[int], kept: list[int], judged: bool = False) -> None:
        """`input-not-supported` for probes whose call raised (when others did not, or when
        another form of them was judged), and `weights-unmappable` when the reference's
        weights could not be loaded at all."""
        assert self.spec is not None
        probes = self.spec.probes
        weights = [i for i in cannot if self.cand_obs[i].stage == "weights"]
        if weights:
            self._weights_unmappable(weights)
        # Only exceptions the candidate's own code raised (the harness's "no gradients: ..."
        # is about the output, not the input), and none that names a mistake.
        raised = [
            i
            for i in cannot
            if self.cand_obs[i].stage in ("call", "new")
            and isinstance(self.cand_obs[i].failure, CandidateRaised)
            and self.cand_obs[i].failure.exc_type
            and classify(self.cand_obs[i].error[1], self.kata.id, probes[i].params) is None
        ]
        if not raised or not (judged or any(self.cand_obs[i].ok for i in kept)):
            return
        names = [self.pname(probes[i]) for i in raised]
        joined = self.say("diag.input_sep").join(names)
        f = self.findings.add(
            "input-not-supported", 2, params={"inputs": joined}, probe=probes[raised[0]]
        )
        for i in raised[:4]:
            c = self.cand_obs[i]
            f.evidence.append(
                self.evidence("trace.raised", probes[i], type=c.error[0], message=c.error[1][:160])
            )
            for ref_line in _frame_refs(c, self.src)[-1:]:
                if all(r.line != ref_line.line for r in f.source):
                    f.source.append(ref_line)
        f.data["unsupported_probes"] = [probes[i].name for i in raised]

    def _weights_unmappable(self, idx: list[int]) -> None:
        assert self.spec is not None
        c = self.cand_obs[idx[0]]
        message = c.error[1] if c.error else ""
        if classify(message, self.kata.id, self.spec.probes[idx[0]].params):
            return  # a catalogued mistake (e.g. a K/V projection sized d_model) says it better
        note = message.split(": ", 1)[-1].strip()
        f = self.findings.add(
            "weights-unmappable",
            2,
            self.say("diag.weights_said", message=message[:400]),
            params={"layer_note": note if note.endswith(".") else note + "."},
        )
        for i, d in enumerate(self.result.diagnostics):
            if d.id == "exception" and message[:60] in d.explanation:
                self.explained_runner.add(i)
        f.data["weights_message"] = message

    def _add_matched(
        self,
        matched: dict[str, list[str]],
        strength: int,
        outs_of: dict[str, list[Observed]],
        shares: dict[str, float] | None = None,
        together: str = "",
        partial: bool = False,
    ) -> list[Finding]:
        assert self.spec is not None
        by_name = {p.name: p for p in [*self.spec.probes, *self.alt_probes]}
        added = []
        for mid, shown in matched.items():
            shown_names = self.probe_list(shown[:3], by_name)
            outs = outs_of.get(mid)
            if outs is not None:
                ev = self.say("diag.reproduced", names=shown_names)
            elif partial:  # a family's shared behaviour, and other differences besides
                ev = self.say("diag.family_partial", names=shown_names)
            else:  # matched by what a family's spellings share: no one mutant
                ev = self.say("diag.family_exact", names=shown_names)
            f = self.findings.add(mid, strength, ev, probe=by_name.get(shown[0]) if shown else None)
            added.append(f)
            if together:
                other = ", ".join(m for m in matched if m != mid)
                f.evidence.append(together.format(other=other))
            if shares is not None:
                f.data["share"] = round(shares.get(mid, 0.0), 3)
            if outs is not None:
                self._explain_errors(f, outs, strength)
        return added

    def _explain_errors(self, f: Finding, outs: list[Observed], strength: int) -> None:
        """Errors the mutant raises too are part of this mistake: the runner's generic "your
        code raised ..." for them is explained, and its lines are the mistake's."""
        errors = {
            _norm(c.error[1])
            for i, c in enumerate(self.cand_obs)
            if c.error is not None and i < len(outs) and outs[i].error is not None
        }
        for i, d in enumerate(self.result.diagnostics):
            if d.id == "exception" and any(e and e in _norm(d.explanation) for e in errors):
                self.explained_runner.add(i)
                self.findings.add(
                    f.id,
                    strength,
                    self.say("diag.tests_raised", detail=d.explanation),
                    source=list(d.source),
                )
        for c in self.cand_obs:
            if c.error is not None and _norm(c.error[1]) in errors:
                for ref in _frame_refs(c, self.src):
                    if all(r.line != ref.line for r in f.source):
                        f.source.append(ref)

    def from_trace(self) -> None:
        """The trace checks (TRACE_RULES) on what the child observed for each probe: dtype,
        in-place writes, banned ops, warnings, nondeterminism, memory budget, crash
        signatures. A probe the code raised on is judged by its error alone."""
        if not self.spec:
            return
        refs = self.ref_obs or [None] * len(self.cand_obs)
        # A kata's mutants module may add checks of its own (the Triton katas: kernel bounds).
        rules = TRACE_RULES + tuple(getattr(self.spec.module, "TRACE_RULES", ()))
        for p, c, r in zip(self.spec.probes, self.cand_obs, refs, strict=False):
            for rule in rules:
                if rule(self, p, c, r):
                    break

    def evidence(self, key: str, p: Probe, **params: Any) -> str:
        """A trace check's evidence line (checker/messages_diagnose.py), naming the probe."""
        return msg(key, self.lang, probe=self.pname(p), **params)

    def _nondeterminism(self, p: Probe, c: Observed) -> None:
        """Two identical calls differ: dropout left on (module katas: the catalogue's
        `dropout-in-eval`), or randomness in a function (`nondeterministic-output`)."""
        mid = next(
            (m for m in ("dropout-in-eval", "nondeterministic-output") if self.applies(m)), None
        )
        if mid is None:
            return
        ops = [
            op
            for op in c.trace.get("ops", {})
            if "dropout" in op or "bernoulli" in op or "rand" in op
        ]
        note = self.say("diag.ran_ops", ops=", ".join(ops[:3])) if ops else ""
        self.findings.add(
            mid,
            2,
            self.evidence("trace.nondeterministic", p, note=note),
            probe=p,
            source=_op_lines("dropout", self.src) if ops else [],
        )

    def _arg_name(self, entry: str, label: str) -> str:
        """ "argument 0" -> "`q` (argument 0)", from the skeleton's signature of `entry`."""
        from attnkata.checker.static import signatures

        m = re.fullmatch(r"argument (\d+)", label)
        try:
            sig = signatures(ast.parse(self.kata.skeleton_path.read_text(encoding="utf-8"))).get(
                entry
            )
        except (OSError, SyntaxError):
            sig = None
        if m and sig is not None and sig.kind == "function" and int(m.group(1)) < len(sig.params):
            return f"`{sig.params[int(m.group(1))]}` ({label})"
        if m and sig is not None and sig.kind == "class":  # a module's call: forward's parameters
            forward = self._forward_params(entry)
            if int(m.group(1)) < len(forward):
                return f"`{forward[int(m.group(1))]}` ({label})"
        return label

    def _forward_params(self, entry: str) -> list[str]:
        """The skeleton's `entry.forward` parameters after self (e.g. x, cache)."""
        try:
            tree = ast.parse(self.kata.skeleton_path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError):
            return []
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == entry:
                for fn in node.body:
                    if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
                        return [a.arg for a in fn.args.args[1:]]
        return []

    def _values_match(self, c: Observed, r: Observed) -> bool:
        from attnkata.checker.diagnose.behaviour import differs, flatten

        f = flatten(r.value)
        return c.ok and f is not None and not differs(c, r, f[1].size).any()

    def from_source(self) -> None:
        """Banned APIs the probes never reached (an import, a branch not taken)."""
        if "banned-api" in self.findings:
            return
        refs = banned_references(self.src)
        if refs:
            names = ", ".join(sorted({n for _, n in refs}))
            f = self.findings.add(
                "banned-api",
                1,
                self.say("diag.static_banned", names=names),
                source=[r for r, _ in refs],
                params={"api": names},
            )
            f.data["static_only"] = True

    # -- verdict ---------------------------------------------------------------------------
    def diagnostics(self) -> list[Diagnostic]:
        out: list[Diagnostic] = []
        # Catalogued mistakes first (most certain, then most explaining); what the code cannot
        # take comes after every mistake it makes.
        for f in sorted(
            self.findings.values(),
            key=lambda f: (f.id == "input-not-supported", -f.strength, -f.data.get("share", 0.0)),
        ):
            if f.id not in cat.catalogue():
                continue
            m = cat.get(f.id)
            params = cat.derived_params(
                {**(f.probe.params if f.probe else self.base_params), **f.params}
            )
            data = {k: v for k, v in f.data.items() if k != "share"}  # "share" only orders findings
            if m.grid:
                data.update(self._grids(f, params))
            # A kata's mutants module may add pictures of its own (e.g. GQA's head map).
            extra = getattr(self.spec.module, "finding_data", None) if self.spec else None
            if extra is not None and self.cand_obs:
                data.update(extra(f.id, self.spec.probes, self.cand_obs, self.spec.subject) or {})
            if not f.source:
                # A form of the mistake first, else the kata's own rules (`<id>/<kata>`).
                f.source = locate(f.id, self.src, variant=_variant(f.id, params) or self.kata.id)
            f.source = _merge_refs(f.source, self.src)
            severity = f.severity or (m.severity if f.strength >= 2 else "actionable")
            explanation = m.render("explanation", self.lang, params, kata=self.kata.id)
            quoted = [
                k for k in _SIZE_NAMES if k in m.params and k in (f.probe.params if f.probe else {})
            ]
            if quoted and f.probe is not None:
                # The numbers are the diagnosis probe's, not the failing tests' (whose sizes differ).
                sizes = ", ".join(f"{k} = {f.probe.params[k]}" for k in quoted)
                explanation += self.say("diag.probe_sizes", probe=self.pname(f.probe), sizes=sizes)
            out.append(
                Diagnostic(
                    id=f.id,
                    severity=severity,
                    title=m.render("title", self.lang, params, kata=self.kata.id),
                    explanation=explanation,
                    fix=m.render("fix", self.lang, params, kata=self.kata.id),
                    evidence=f.evidence[:4],
                    source=f.source[:3],
                    link=m.link(self.kata.id, self.lang),
                    data=data,
                )
            )
        if self.verdict is not None and self.verdict.ambiguous:
            names = ", ".join(self.verdict.ambiguous)
            for d in out:
                if d.id in self.verdict.ambiguous:
                    d.evidence.append(self.say("diag.cannot_tell", names=names))
        if not any(d.is_error for d in out) and self._unexplained_failure():
            out.append(self._no_match())
        return out

    def _grids(self, finding: Finding, params: dict[str, Any]) -> dict[str, Any]:
        """The expected and the candidate's effective mask on a grid probe: the finding's own
        probe if it is one, else the first grid probe where the candidate differs."""
        if not self.spec or not self.cand_obs or not self.ref_obs:
            return {}
        triples = [
            (p, c, r)
            for p, c, r in zip(self.spec.probes, self.cand_obs, self.ref_obs, strict=False)
            if p.grid and r.ok
        ]
        triples.sort(
            key=lambda t: (
                t[0] is not finding.probe,
                _equal(t[1].value, t[2].value) if t[1].ok else False,
            )
        )
        for p, c, r in triples:
            want = grid_of(r.value, p.grid or "mask")
            if want is None:
                continue
            data: dict[str, Any] = {"mask_expected": want, "grid_probe": p.name}
            got = grid_of(c.value, p.grid or "mask") if c.ok else None
            if (
                got is not None
                and len(got) == len(want)
                and all(len(a) == len(b) for a, b in zip(got, want, strict=True))
            ):
                data["mask_got"] = got
                counts = [sum(1 for x in row if x) for row in got]
                params.setdefault("got_keys", max(counts) if counts else 0)
            return data
        return {}

    def _unexplained_failure(self) -> bool:
        failing = [t for t in self.result.tests if t.status not in (PASS, "skip")]
        if not failing:
            return False
        runner_errors = [
            d
            for i, d in enumerate(self.result.diagnostics)
            if d.is_error and i not in self.explained_runner
        ]
        return any(t.status not in (ERROR, TIMEOUT) for t in failing) or not runner_errors

    def _no_match(self) -> Diagnostic:
        m = cat.get(cat.NO_MATCH)
        closest = ""
        if self.verdict is not None and self.verdict.closest and self.verdict.closest[1] >= 0.5:
            mid, share = self.verdict.closest
            title = cat.get(mid).render("title", self.lang)
            closest = self.say("diag.closest", title=title, mid=mid, share=share)
        failing = [t for t in self.result.tests if t.status not in (PASS, "skip")]
        evidence = [self.say("diag.failing", test=t.id) for t in failing[:3]]
        if self.verdict is not None and self.verdict.failing_probes:
            by_name = (
                {p.name: p for p in [*self.spec.probes, *self.alt_probes]} if self.spec else {}
            )
            names = [
                self.pname(by_name[n]) if n in by_name else n
                for n in self.verdict.failing_probes[:4]
            ]
            evidence.append(
                self.say("diag.probes_differ", names=self.say("diag.list_sep").join(names))
            )
        return Diagnostic(
            id=m.id,
            severity=m.severity,
            title=m.render("title", self.lang),
            explanation=m.render("explanation", self.lang, {"closest": closest}).strip(),
            fix=m.render("fix", self.lang),
            evidence=evidence,
            link=m.link(self.kata.id, self.lang),
        )

    def run(self) -> list[Diagnostic]:
        self.from_runner()
        if self.spec is not None and self.candidate.load_error is None:
            self.probe_candidate()
            # The probes are tiny: code that hangs on them too teaches nothing the mistakes'
            # variants could match (computing those costs ~0.4 s of the hang's verdict).
            if not self._hangs_everywhere():
                before = self.findings.copy_all()
                self.from_behaviour()
                self.retry_layouts(before)
                self.from_trace()
                self.count_explained()
        self.from_source()
        diags = self.diagnostics()
        mine = {d.id for d in diags}
        # The runner's generic diagnostics that a catalogued one now explains would only repeat it.
        self.result.diagnostics[:] = [
            d
            for i, d in enumerate(self.result.diagnostics)
            if i not in self.explained_runner and d.id not in mine
        ]
        return diags


# -- trace checks ---------------------------------------------------------------------------
# One function per check: (engine, probe, the candidate's observation, the reference's or None)
# -> True when the probe needs no further check. Each adds its findings to engine.findings.
TraceRule = Callable[["Engine", Probe, Observed, Observed | None], bool]


def _banned(e: Engine, p: Probe, c: Observed, r: Observed | None) -> bool:
    if c.failure is not None and isinstance(c.failure, CandidateBanned):
        e.findings.add(
            "banned-api",
            2,
            e.evidence("trace.banned", p, detail=c.failure.message),
            params={"api": _api_name(c.failure.message)},
        )
    return False


def _crash_signature(e: Engine, p: Probe, c: Observed, r: Observed | None) -> bool:
    """An error whose message names a mistake; either way, an error ends this probe's checks."""
    if c.error is None or c.error[0] == "Skipped":
        return False
    mid = classify(c.error[1], e.kata.id, p.params)
    if mid and e.applies(mid):
        e.findings.add(
            mid,
            2,
            e.evidence("trace.raised", p, type=c.error[0], message=c.error[1][:160]),
            source=_frame_refs(c, e.src),
            probe=p,
        )
    return True


def _warning_signature(e: Engine, p: Probe, c: Observed, r: Observed | None) -> bool:
    for w in c.warnings:
        mid = classify(w["message"], e.kata.id, p.params)
        if mid and e.applies(mid):
            line = [SourceRef(w["line"], text=_line(e.src, w["line"]))] if w.get("line") else []
            e.findings.add(
                mid,
                2,
                e.evidence("trace.warned", p, message=w["message"][:120]),
                source=line,
                probe=p,
            )
    return False


def _return_type(e: Engine, p: Probe, c: Observed, r: Observed | None) -> bool:
    if r is not None and r.ok and c.ok and not (e.verdict and e.verdict.matched):
        want, got = _kind(r.value), _kind(c.value)
        if want != got and e.applies("wrong-return-type"):
            e.findings.add(
                "wrong-return-type",
                2,
                e.evidence("trace.return_type", p, got=got, want=want),
                params={"got_type": got, "want_type": want},
                probe=p,
            )
    return False


def _dtype(e: Engine, p: Probe, c: Observed, r: Observed | None) -> bool:
    if r is not None and r.ok:
        # Every part of the output counts: a flash kernel's lse kept in float32 for float64
        # inputs is as much a changed dtype as its output's.
        pairs = list(zip(output_dtypes(r), output_dtypes(c), strict=False))
        want, got = next(((w, g) for w, g in pairs if w != g), (None, None))
        if want and got and e.applies("dtype-not-preserved"):
            e.findings.add(
                "dtype-not-preserved",
                2,
                e.evidence("trace.dtype", p, want=want, got=got),
                params={"in_dtype": want, "out_dtype": got},
                probe=p,
            )
    return False


def _numpy_warning(e: Engine, p: Probe, c: Observed, r: Observed | None) -> bool:
    """Right values, but NumPy warned (an overflow or 0/0 on the way)."""
    if r is not None and r.ok and e.applies("numpy-float-warning") and e._values_match(c, r):
        runtime = [w for w in c.warnings if w["category"] == "RuntimeWarning"]
        if runtime:
            w = runtime[0]
            line = [SourceRef(w["line"], text=_line(e.src, w["line"]))] if w.get("line") else []
            e.findings.add(
                "numpy-float-warning",
                2,
                e.evidence("trace.numpy_warning", p, message=w["message"]),
                source=line,
                params={"warning": w["message"]},
                probe=p,
            )
    return False


def _mutated(e: Engine, p: Probe, c: Observed, r: Observed | None) -> bool:
    if c.mutated and e.applies("input-mutated"):
        ops = sorted({x["op"] for x in c.trace.get("inplace_on_inputs", [])})
        which = ", ".join(e._arg_name(p.entry, m) for m in c.mutated)
        note = e.say("diag.paren", text=", ".join(ops)) if ops else ""
        e.findings.add(
            "input-mutated",
            2,
            e.evidence("trace.mutated", p, which=which),
            params={"which": which, "op_note": note},
            probe=p,
        )
    return False


def _repeat(e: Engine, p: Probe, c: Observed, r: Observed | None) -> bool:
    if p.repeat and c.ok and c.second is not None and not _equal(c.value, c.second):
        e._nondeterminism(p, c)
    return False


def _budget(e: Engine, p: Probe, c: Observed, r: Observed | None) -> bool:
    """The largest intermediate tensor over the probe's memory budget."""
    if p.budget is None or not c.ok:
        return False
    mid, limit = p.budget
    largest = c.trace.get("largest", {})
    if largest.get("elements", 0) >= limit and e.applies(mid):
        shape = "x".join(str(s) for s in largest.get("shape", []))
        e.findings.add(
            mid,
            2,
            e.evidence(
                "trace.largest",
                p,
                shape=shape,
                elements=largest.get("elements"),
                op=largest.get("op"),
            ),
            params={
                "elements": largest.get("elements"),
                "shape": f"({', '.join(str(s) for s in largest.get('shape', []))})",
                "op": largest.get("op"),
            },
            probe=p,
            # The line that allocated it when the child saw one (else the likeliest by its op).
            source=(
                [SourceRef(largest["line"], text=_line(e.src, largest["line"]))]
                if largest.get("line")
                else _op_lines(str(largest.get("op", "")), e.src)
            ),
        )
    return False


TRACE_RULES: tuple[TraceRule, ...] = (
    _banned,
    _crash_signature,
    _warning_signature,
    _return_type,
    _dtype,
    _numpy_warning,
    _mutated,
    _repeat,
    _budget,
)


# Sizes a catalogue text may quote from a probe (the explanation then says whose they are).
_SIZE_NAMES = ("B", "L", "S", "D", "d", "H", "Hkv", "W", "dv", "r", "P", "g", "block", "N")


def _variant(mid: str, params: dict[str, Any]) -> str | None:
    """Which form of the mistake the behaviour showed, where that changes the line to show."""
    got, want = params.get("got_keys"), params.get("W")
    if (
        mid == "window-off-by-one"
        and isinstance(got, int)
        and isinstance(want, int)
        and got != want
    ):
        return "wider" if got > want else "narrower"
    return None


_MATMUL_OPS = {"bmm", "mm", "matmul", "baddbmm", "addmm", "einsum", "_unsafe_view", "mul", "expand"}


def _op_lines(op: str, src: Source) -> list[SourceRef]:
    """The lines that most likely ran an aten op (aten::bmm -> the `@` line, aten::ones -> `ones(`)."""
    short = op.split("::")[-1].split(".")[0].rstrip("_")
    pattern = r"@|matmul|einsum|bmm" if short in _MATMUL_OPS else rf"\b{re.escape(short)}\b"
    return [src.ref(s) for s in src.find(pattern)[:2]] if short else []


def _merge_refs(refs: list[SourceRef], src: Source) -> list[SourceRef]:
    """Adjacent or overlapping lines become one range (shown as one snippet)."""
    out: list[SourceRef] = []
    for ref in sorted(refs, key=lambda r: r.line):
        end = ref.end_line or ref.line
        if out and ref.line <= (out[-1].end_line or out[-1].line) + 1:
            last = out[-1]
            last.end_line = max(last.end_line or last.line, end)
            continue
        out.append(
            SourceRef(line=ref.line, end_line=ref.end_line, text=ref.text or _line(src, ref.line))
        )
    return out


def _kind(value: Any) -> str:
    """What kind of object an output is, in the words of the contract."""
    if isinstance(value, torch.Tensor):
        return "a torch.Tensor"
    if isinstance(value, np.ndarray):
        return "a numpy.ndarray"
    if isinstance(value, tuple | list):
        return f"a {type(value).__name__} of {len(value)}"
    if value is None:
        return "None"
    return f"a {getattr(value, 'type_name', type(value).__name__)}"


def _norm(message: str) -> str:
    return re.sub(r"\d+", "#", message).strip()[:200]


def _api_name(message: str) -> str:
    for name in (
        "scaled_dot_product_attention",
        "multi_head_attention_forward",
        "MultiheadAttention",
        "flex_attention",
        "_native_multi_head_attention",
        "aten::_scaled_dot_product",
    ):
        if name in message:
            return name
    return message.split(":")[-1].strip()[:80] or "a banned API"


def _line(src: Source, line: int | None) -> str:
    return src.lines[line - 1].strip() if line and 0 < line <= len(src.lines) else ""


def _frame_refs(obs: Observed, src: Source) -> list[SourceRef]:
    frames = obs.failure.frames if obs.failure is not None else []
    return [
        SourceRef(line=f["line"], text=_line(src, f["line"]) or f.get("text", ""))
        for f in frames[-2:]
    ]


def _equal(a: Any, b: Any) -> bool:
    from attnkata.checker.diagnose.behaviour import flatten

    if isinstance(a, torch.Tensor) and isinstance(
        b, torch.Tensor
    ):  # compared as they are (no float64 copy)
        if a.shape != b.shape or a.dtype != b.dtype or a.is_complex():
            return a.shape == b.shape and a.dtype == b.dtype and bool((a == b).all())
        a, b = a.detach().cpu(), b.detach().cpu()
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    fa, fb = flatten(a), flatten(b)
    if fa is None or fb is None:
        return a is b
    return fa[1].shape == fb[1].shape and bool(
        ((fa[1] == fb[1]) | (fa[1] != fa[1]) & (fb[1] != fb[1])).all()
    )


def diagnose(
    kata: Kata, path: Path, source: str, result: Result, candidate: Candidate, lang: str
) -> list[Diagnostic]:
    return Engine(kata, path, source, result, candidate, lang).run()
