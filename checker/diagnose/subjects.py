"""Running one probe on the candidate (in its child), the reference and the mutants (both
in this process: they are ours and trusted), with the same observations for all three.

Function katas call `entry(*args, **kwargs)`. Module katas construct `entry(*init)` with
the reference's weights (seeded by the probe), then call it; a mutants module can override
how a mutant module gets its weights with `load_mutant(mutant, reference)`.
"""

from __future__ import annotations

import contextlib
import copy
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from attnkata.checker.compare import clone_tree, unchanged
from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.proxy import Candidate, CandidateFailure, RemoteModule
from attnkata.checker.sandbox.autograd import backward
from attnkata.checker.sandbox.layouts import apply as apply_layouts
from attnkata.checker.sandbox.layouts import normal as normal_layouts


@dataclass
class Observed:
    """What one call produced: a value or an error, plus what the child saw on the way."""

    value: Any = None
    error: tuple[str, str] | None = None  # (exception type, message)
    failure: CandidateFailure | None = None  # the candidate's own failure object (lines, kind)
    mutated: list[str] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    trace: dict[str, Any] = field(default_factory=dict)
    second: Any = None  # the value of a repeated call (probe.repeat)
    seconds: float = 0.0
    cpu: float | None = None  # the candidate's CPU seconds for a call that returned
    # Where an error came from: "call" (the entry point), "new" (the module's constructor, on
    # arguments the contract allows), "init" (loading its state in the child) or "weights"
    # (no way to map the reference's weights).
    stage: str = "call"

    @property
    def ok(self) -> bool:
        return self.error is None


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Torch on one intra-op thread: probe tensors are tiny, and with several threads on a
    busy machine each op waits for its threads (about 10 ms per Linear instead of 20 us)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _layouts(probe: Probe) -> dict[str, Any]:
    return {"layouts": probe.layouts} if probe.layouts else {}


def call_local(fn: Any, probe: Probe) -> Observed:
    """Call a trusted callable (reference or mutant) on fresh copies of the probe's inputs."""
    args, kwargs = list(clone_tree(probe.args)), clone_tree(probe.kwargs)
    apply_layouts(args, kwargs, normal_layouts(probe.layouts))
    pristine = clone_tree((args, kwargs))
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if probe.grad is not None:
                wrt, grad_output = probe.grad
                for i in wrt:
                    args[i] = args[i].detach().clone().requires_grad_(True)
                out = fn(*args, **kwargs)
                # Exactly what the candidate's child does (checker/sandbox/child.py), so errors read the same.
                out_t = out[0] if isinstance(out, tuple | list) else out
                backward(out_t, grad_output)
                value: Any = tuple(args[i].grad for i in wrt)
            else:
                with torch.no_grad():
                    value = fn(*args, **kwargs)
            second = None
            if probe.repeat:
                with torch.no_grad():
                    second = fn(*clone_tree(probe.args), **clone_tree(probe.kwargs))
        except Exception as exc:  # noqa: BLE001 - a mutant that raises is an observation
            return Observed(error=(type(exc).__name__, str(exc)))
    mutated = [
        f"argument {i}"
        for i, (b, a) in enumerate(zip(pristine[0], args, strict=True))
        if probe.grad is None and not unchanged(b, a)
    ]
    mutated += [f"argument {k!r}" for k, b in pristine[1].items() if not unchanged(b, kwargs[k])]
    return Observed(
        value=value,
        mutated=mutated,
        second=second,
        seconds=time.perf_counter() - t0,
        warnings=[
            {"category": w.category.__name__, "message": str(w.message)[:300], "line": None}
            for w in caught
        ],
    )


class FunctionSubject:
    """A function kata: the entry points are top-level functions."""

    def __init__(self, reference: Any) -> None:
        self.reference = reference

    def reference_call(self, probe: Probe) -> Observed:
        return call_local(getattr(self.reference, probe.entry), probe)

    def mutant_call(self, mutant: dict[str, Any], probe: Probe) -> Observed:
        return call_local(mutant.get(probe.entry) or getattr(self.reference, probe.entry), probe)

    def candidate_call(self, candidate: Candidate, probe: Probe) -> Observed:
        try:
            if probe.grad is not None:
                wrt, grad_output = probe.grad
                out = candidate.call(
                    probe.entry, probe.args, probe.kwargs, grad_wrt=wrt, grad_output=grad_output
                )
                value: Any = tuple(out.grads)
            else:
                out = candidate.call(probe.entry, probe.args, probe.kwargs, **_layouts(probe))
                value = out.value
            second = (
                candidate.call(probe.entry, probe.args, probe.kwargs, **_layouts(probe)).value
                if probe.repeat
                else None
            )
        except CandidateFailure as exc:
            return Observed(
                error=(exc.exc_type or type(exc).__name__, exc.exc_message or exc.message),
                failure=exc,
            )
        return Observed(
            value=value,
            mutated=out.mutated,
            warnings=out.warnings,
            trace=out.trace,
            second=second,
            seconds=out.seconds,
            cpu=out.cpu,
        )


def _forward_only(cls: type, reference_cls: type) -> bool:
    """True when `cls` differs from the reference's class only in methods other than
    __init__ (so its parameters are laid out exactly like the reference's)."""
    base = next(
        (b for b in reference_cls.__mro__[1:] if issubclass(cls, b) and b is not object), None
    )
    if base is None or not issubclass(cls, torch.nn.Module):
        return False
    return all("__init__" not in k.__dict__ for k in cls.__mro__[: cls.__mro__.index(base)])


def _rebind(cls: type, reference: torch.nn.Module) -> torch.nn.Module:
    """An instance of `cls` sharing `reference`'s parameters and submodules."""
    module = cls.__new__(cls)
    module.__dict__ = reference.__dict__
    return module


class ModuleSubject:
    """A module kata: `entry` is an nn.Module class built with `probe.init` and the
    reference's weights. `load_mutant(mutant, reference)` (optional, from the mutants module)
    copies weights into a mutant whose parameters differ from the reference's."""

    def __init__(self, reference: Any, load_mutant: Any = None) -> None:
        self.reference = reference
        self.load_mutant = load_mutant
        self._refs: dict[tuple, torch.nn.Module] = {}
        self._remote: dict[tuple, RemoteModule] = {}
        self.mappings: dict[
            tuple, tuple[Candidate, int, Any]
        ] = {}  # key -> (candidate, generation, WeightMapping)
        self.force_layouts: dict[str, str] = {}  # {fused layer: layout} loaded without a trial

    def _key(self, probe: Probe) -> tuple:
        init_args, init_kwargs = probe.init or ((), {})
        return (
            probe.entry,
            repr(init_args),
            repr(sorted(init_kwargs.items())),
            probe.seed,
            str(probe.dtype),
        )

    def _remote_key(self, probe: Probe) -> tuple:
        return (*self._key(probe), repr(sorted(self.force_layouts.items())))

    def reference_module(self, probe: Probe) -> torch.nn.Module:
        key = self._key(probe)
        if key not in self._refs:
            init_args, init_kwargs = probe.init or ((), {})
            torch.manual_seed(probe.seed)
            module = getattr(self.reference, probe.entry)(*init_args, **init_kwargs)
            self._refs[key] = module.to(probe.dtype).eval()
        return self._refs[key]

    def reference_call(self, probe: Probe) -> Observed:
        return call_local(self.reference_module(probe), probe)

    def mutant_call(self, mutant: dict[str, Any], probe: Probe) -> Observed:
        cls = mutant.get(probe.entry)
        if cls is None:
            return self.reference_call(probe)
        reference = self.reference_module(probe)
        if self.load_mutant is None and _forward_only(cls, type(reference)):
            # A variant that only overrides forward() can run on the reference's own layers:
            # building and loading a module per probe costs ~10x the call itself.
            return call_local(_rebind(cls, reference), probe)
        init_args, init_kwargs = probe.init or ((), {})
        try:
            torch.manual_seed(probe.seed)
            module = cls(*init_args, **init_kwargs).to(probe.dtype).eval()
            if self.load_mutant is not None:
                self.load_mutant(module, reference)
            else:
                module.load_state_dict(copy.deepcopy(reference.state_dict()))
        except Exception as exc:  # noqa: BLE001 - e.g. a mutant sized differently
            return Observed(error=(type(exc).__name__, str(exc)))
        return call_local(module, probe)

    def layouts(self, candidate: Candidate) -> tuple[dict[str, list[str]], dict[str, str]]:
        """For `candidate`'s modules: ({fused layer: layouts tried, none agreeing}, {fused
        layer: layout kept})."""
        unfit: dict[str, list[str]] = {}
        kept: dict[str, str] = {}
        for owner, generation, mapping in self.mappings.values():
            if owner is candidate and generation == candidate.generation:
                unfit.update(mapping.unfit)
                kept.update(mapping.layouts)
        return unfit, kept

    def candidate_call(self, candidate: Candidate, probe: Probe) -> Observed:
        from attnkata.checker.weights import load_reference_weights

        key = self._remote_key(probe)
        stage = "new"
        try:
            remote = self._remote.get(key)
            # The spec (and this cache) outlives one candidate: a module built by another
            # candidate, even of the same generation, lives in a child that is gone.
            if (
                remote is None
                or remote.candidate is not candidate
                or remote.generation != candidate.generation
            ):
                init_args, init_kwargs = probe.init or ((), {})
                remote = candidate.new(probe.entry, init_args, init_kwargs, dtype=probe.dtype)
                stage = "weights"
                mapping = load_reference_weights(
                    remote,
                    self.reference_module(probe),
                    case=probe.name,
                    dtype=probe.dtype,
                    force=self.force_layouts,
                )
                self.mappings[key] = (candidate, candidate.generation, mapping)
                self._remote[key] = remote
            stage = "call"
            if probe.grad is not None:
                wrt, grad_output = probe.grad
                out = remote.call(probe.args, probe.kwargs, grad_wrt=wrt, grad_output=grad_output)
                value: Any = tuple(out.grads)
            else:
                out = remote.call(probe.args, probe.kwargs)
                value = out.value
            second = remote.call(probe.args, probe.kwargs).value if probe.repeat else None
        except CandidateFailure as exc:
            return Observed(
                error=(exc.exc_type or type(exc).__name__, exc.exc_message or exc.message),
                failure=exc,
                stage="init" if stage == "weights" else stage,
            )
        except AssertionError as exc:  # the weights did not fit the candidate's module
            return Observed(error=("AssertionError", str(exc)), stage="weights")
        return Observed(
            value=value,
            mutated=out.mutated,
            warnings=out.warnings,
            trace=out.trace,
            second=second,
            seconds=out.seconds,
            cpu=out.cpu,
        )
