"""Diagnosis: name the well-known mistake behind a failing result.

`checker/runner.py` calls `diagnose_result(...)` for a failing result while the candidate's
child process is still alive. The verdict combines four kinds of evidence:

- behaviour (`behaviour.py`): the candidate, the reference and the wrong variants of each
  catalogued mistake (*mutants*: a family of spellings, e.g. every finite fill value) run on
  probe inputs built to separate them. A mistake is named when the candidate matches one of
  its spellings, or has what all its spellings share (changes where they all change, to
  their common value where they agree on one), alone or jointly with other mistakes that
  together explain every difference; two mistakes that interact are found by running their
  combined variant (`pairs.py`). Two or three mistakes, or mistakes beside a quirk no mutant
  has, are peeled off one at a time (`peel.py`: the mistake whose variant reproduces the
  most of the deviation, then "reference + m1 + m2"...); each carries the probes it
  explains and is essential only where it reproduces every element it changes. A mistake
  reproduced where it shows but leaving part of the deviation unexplained is otherwise only
  informative. Each probe is judged on its own: a probe the code cannot take (it raises
  where no mutant does) becomes `input-not-supported`, and is tried again in the forms the
  code may take (float32; the kata's `alternatives(probe)`, e.g. dv = d) before it is left
  out of the matching. An output far larger than the reference's is "differs" without being
  converted. `replay.py` grades a found mistake's mutant on the failing tests to say how
  many it explains;
- the runtime trace (`engine.Engine.from_trace`): output dtypes, in-place writes to inputs,
  banned ops, NumPy RuntimeWarnings, nondeterminism (a `repeat` probe called twice:
  `dropout-in-eval` in modules, `nondeterministic-output` in functions; its values are then
  not matched), the largest intermediate tensor;
- weight loading (`checker/weights.py`): a module whose layers cannot take the reference's
  weights is `weights-unmappable`; a fused projection is tried in each known row layout;
- crash and warning signatures (`crashes.py`): messages that name a mistake;
- the source (`ast_rules.py`): only to point at the lines, or for a banned import no probe
  reached. A static hit alone never fails a correct solution.

Texts, severities and links come from the catalogue (`checker/mistakes.toml`, `checker/mistakes.py`).
Mistakes no evidence explains give one informative `no-known-mistake`.

Adding a kata's diagnosis
-------------------------
Write one file, `reference/mutants/<kata_module>.py` (e.g. `gqa.py` for kata `gqa`):

    from attnkata.checker.diagnose.inputs import Probe
    from attnkata.reference import gqa as ref

    class RepeatNotInterleave(ref.GroupedQueryAttention):   # one small wrong variant
        ...

    MUTANTS = {                      # catalogue id -> variant, or a list of variants
        "kv-repeat-instead-of-interleave": [RepeatNotInterleave, TileNotInterleave],
    }                                # (a dict {entry point: variant} for katas with several)

    def probes() -> list[Probe]:     # inputs that make each mutant visible
        return [Probe("H=8, Hkv=2", "GroupedQueryAttention", (x,), params={"H": 8, "Hkv": 2, ...},
                      init=((D, 8, 2), {}), seed=0, repeat=True), ...]

    def load_mutant(mutant, reference):   # optional: when a mutant's parameters differ
        ...

    def finding_data(mid, probes, observed, subject):   # optional: extra Diagnostic.data
        ...                              # for one mistake (GQA: head_map_expected/_got)

    def alternatives(probe) -> list[Probe]:   # optional: other forms of a probe for code
        ...                              # that cannot take it (dv = d, whole tiles...)

Function katas: mutants are functions with the entry point's signature. Module katas: the
entry point is a class; each probe's `init` builds the reference (seeded by `probe.seed`)
whose weights go into both the candidate's module and the mutants. `REFERENCE` (optional)
replaces `attnkata.reference.<kata_module>` as the namespace the entry point is taken from.
`params` are the sizes the catalogue texts quote (d, D, H, Hkv, L, S, W, ...);
`grid="weights"` or `"mask"` marks a probe whose output is drawn as a mask grid;
`budget=(id, elements)` flags a too-large intermediate tensor; `repeat=True` calls twice
(dropout left on); `grad=(wrt, grad_output)` compares gradients; `name_zh` names the probe
in Chinese evidence. A finding may carry `data["head_map_expected"/"head_map_got"]`.
Shared probe builders live in `checker/diagnose/inputs.py`.

Rules of thumb: a mutant is the reference with one knob turned (so an exact match means
that mistake and nothing else); add a variant for every spelling that behaves differently
(e.g. `torch.softmax` vs a guarded softmax on empty rows); tests/test_diagnose.py fails
when a mutant equals the reference on every probe or two mistakes cannot be told apart.
Make variants composable, so two mistakes can be searched together: `functools.partial`s
of one knobbed function, or classes made with `module_probes.remakeable` (`family_variant`
does it).

Then add one fixture per mistake, `tests/fixtures/mistakes/<kata>/<mistake-id>.py` (variants:
`<mistake-id>--<variant>.py`): `tests/test_mutation_matrix.py` finds them, checks that the
grader fails each and that the diagnosis names exactly that id first, and that every
reference and `tests/fixtures/alt/<kata>/*.py` solution gets no essential diagnosis.
`python bench/diagnosis_report.py` prints coverage and accuracy per kata.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch stays out of `kata mistakes` / `kata explain`
    from attnkata.checker.catalog import Kata
    from attnkata.checker.models import Diagnostic, Result
    from attnkata.checker.proxy import Candidate


def diagnose_result(
    kata: Kata, path: Path, source: str, result: Result, candidate: Candidate, lang: str
) -> list[Diagnostic]:
    """Catalogued diagnoses for a failing result, most certain first.

    May also drop from `result.diagnostics` the runner's generic entries (an exception, a
    banned API) that a catalogued diagnosis now explains, so nothing is said twice."""
    try:
        from attnkata.checker.diagnose.engine import diagnose

        return diagnose(kata, path, source, result, candidate, lang)
    except Exception as exc:  # a bug in the diagnosis must never cost the candidate their grade
        if os.environ.get("ATTNKATA_STRICT_DIAGNOSIS"):
            raise
        from attnkata.checker import mistakes
        from attnkata.checker.messages import msg
        from attnkata.checker.models import Diagnostic

        m = mistakes.get(mistakes.NO_MATCH)
        note = msg("diag.failed", lang, type=type(exc).__name__, detail=exc)
        return [
            Diagnostic(
                id=m.id,
                severity=m.severity,
                title=m.render("title", lang),
                explanation=m.render("explanation", lang).strip(),
                fix=m.render("fix", lang),
                evidence=[note],
            )
        ]


def diagnose_as_passing(kata: Kata, path: Path, lang: str = "en") -> list[Diagnostic]:
    """The diagnosis of a file as if it had passed (the runner skips it then): what the
    probes, the trace and the source rules say on their own. The measure of false
    diagnoses on correct files (tests, bench/diagnosis_report.py)."""
    from attnkata.checker import models
    from attnkata.checker.proxy import Candidate

    result = models.Result(
        kata=kata.id,
        solution=str(path),
        status=models.PASS,
        tests=[models.TestResult("all", "core", models.PASS)],
        required_tiers=list(kata.required_tiers),
    )
    with Candidate(path) as candidate:
        candidate.start()
        source = path.read_text(encoding="utf-8-sig")
        if kata.variant:  # graded in a variant: through its adapter, as the runner does
            from attnkata.checker.adapter import adapt
            from attnkata.checker.diagnose.conventions import diagnose_variant

            graded = adapt(candidate, kata)
            return diagnose_variant(kata, path, source, result, candidate, graded, lang)
        return diagnose_result(kata, path, source, result, candidate, lang)
