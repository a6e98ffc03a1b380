"""Conventions as adapters at the grader's boundary: how a variant is graded.

A variant (checker/variants.py) changes conventions that a transform at the boundary can
carry: tensor layout, mask polarity, argument and layer names, a scale that is a temperature,
an inverted flag, a mask's shape. `Adapted` wraps the grader's handle on a candidate
(`proxy.Candidate`, or `local.LocalCandidate`) and gives the grader, the diagnosis and the
public samples the standard kata's API: every input goes to the candidate in the variant's
convention, every output (and gradient) comes back in the standard one. So the standard
reference, grader, mutants and diagnosis grade every variant unchanged, and a mistake is
relative to the variant: code that keeps PyTorch's mask polarity under a variant whose masks
mean "masked out" gets its mask flipped by the adapter and behaves, in the standard frame,
exactly like the `mask-polarity-flipped` mutant. The transforms run in the grading process,
never in the candidate's: the candidate sees only its own convention.

The other direction (`variant_namespace`) wraps standard code so that it takes the variant's
inputs: the mutants written in a variant's conventions (the per-variant mutation matrix,
checker/sets/variant_check.py) and code that keeps another variant's conventions (the
diagnosis' convention search, checker/diagnose/conventions.py).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from attnkata.checker import variants as vs
from attnkata.checker.catalog import Kata
from attnkata.checker.messages import phrase
from attnkata.checker.proxy import CandidateFailure, Outcome, RemoteModule


class NotExpressible(Exception):
    """Standard code's output that the variant's convention cannot express (a (B, 1, S, 1)
    mask where the variant returns (B, S)): that mistake does not exist in the variant."""


class ConventionMismatch(CandidateFailure):
    """An output that cannot be in the variant's convention (e.g. a (B, 1, 1, S) mask where
    the variant returns (B, S)): the test fails, as on a wrong value."""

    status = "fail"


@functools.lru_cache(maxsize=256)
def _parameter_names(obj: Any, init: bool) -> list[str]:
    if isinstance(obj, type):
        obj = obj.__init__ if init else obj.forward
    try:
        params = list(inspect.signature(obj).parameters) if obj is not None else []
    except (TypeError, ValueError):
        params = []
    return [n for n in params if n != "self"]


def _is_array(v: Any) -> bool:
    return isinstance(v, torch.Tensor | np.ndarray)


def _swap(t: Any, a: int, b: int) -> Any:
    if isinstance(t, np.ndarray):
        return np.ascontiguousarray(np.swapaxes(t, a, b))
    return t.transpose(a, b).contiguous()


def _each(v: Any, fn: Callable[[Any], Any]) -> Any:
    """fn on a tensor, or on each tensor of a tuple / list (a KV cache (k, v))."""
    if isinstance(v, tuple | list):
        return type(v)(_each(x, fn) for x in v)
    return fn(v) if _is_array(v) else v


def _invert(v: Any) -> Any:
    if isinstance(v, torch.Tensor) and v.dtype == torch.bool:
        return ~v
    if isinstance(v, np.ndarray) and v.dtype == np.bool_:
        return ~v
    return v


class Conventions:
    """The transforms of one kata's variant, entry point by entry point."""

    def __init__(
        self, kata: Kata, variant: Mapping[str, str] | None = None, reference: Any = None
    ) -> None:
        self.kata = kata
        self.variant = vs.complete(
            kata.variants, variant if variant is not None else kata.variant_values
        )
        self.changed = [p for p in kata.variants if self.variant[p.name] != p.default]
        self.reference = reference or importlib.import_module(
            f"attnkata.reference.{kata.module_name}"
        )
        self._names: dict[tuple[str, bool], list[str]] = {}
        renames: dict[str, str] = {}
        for p in self.changed:
            if p.kind != "layers":
                renames.update(p.rename_map(self.variant[p.name]))
        self.renames = renames  # standard argument name -> the variant's
        self.back = {v: k for k, v in renames.items()}
        layers: dict[str, str] = {}
        for p in self.changed:
            if p.kind == "layers":
                layers.update(p.rename_map(self.variant[p.name]))
        self.layers = layers  # standard layer name -> the variant's

    @property
    def standard(self) -> bool:
        return not self.changed

    @property
    def key(self) -> str:
        return vs.key(self.kata.variants, self.variant)

    # -- signatures --------------------------------------------------------------------------
    def names(self, entry: str, init: bool = False) -> list[str]:
        """The standard parameter names of `entry` (a class: its forward, or its __init__)."""
        k = (entry, init)
        if k not in self._names:
            self._names[k] = _parameter_names(getattr(self.reference, entry, None), init)
        return self._names[k]

    def _params_of(self, name: str) -> list[vs.Param]:
        return [p for p in self.changed if name in p.arguments]

    def _returns(self, entry: str) -> list[tuple[int | None, vs.Param]]:
        out = []
        for p in self.changed:
            for r in p.returns:
                owner, _, index = r.partition(".")
                if owner == entry:
                    out.append((int(index) if index else None, p))
        return out

    # -- one value ---------------------------------------------------------------------------
    @staticmethod
    def _value(p: vs.Param, v: Any) -> Any:
        """An input of `p`'s arguments in the other convention. Every transform is its own
        inverse: a transpose, a logical not, 1 / x, `not`. A 2-D (L, d) input has no heads
        axis to move and stays as it is."""
        if p.kind == "layout":
            return _each(v, lambda t: _swap(t, -3, -2) if t.ndim >= 3 else t)
        if p.kind == "sequence-first":
            return _each(v, lambda t: _swap(t, 0, 1) if t.ndim == 3 else t)
        if p.kind == "polarity":
            return _each(v, _invert)
        if p.kind == "scale" and isinstance(v, int | float) and not isinstance(v, bool) and v:
            return 1.0 / v
        if p.kind == "flag" and isinstance(v, bool):
            return not v
        return v

    def _out_to_standard(self, p: vs.Param, v: Any, entry: str) -> Any:
        if p.kind == "mask-shape":
            if not _is_array(v):
                return v
            if v.ndim != 2:
                raise ConventionMismatch(
                    phrase(
                        "variant.mismatch_shape", entry=entry, shape=tuple(v.shape), want="(B, S)"
                    )
                )
            return v[:, None, None, :]
        return self._value(p, v)

    def _out_to_variant(self, p: vs.Param, v: Any) -> Any:
        if p.kind == "mask-shape" and _is_array(v):
            if v.ndim != 4 or v.shape[1] != 1 or v.shape[2] != 1:
                raise NotExpressible(f"a {tuple(v.shape)} mask has no (B, S) form")
            return v.reshape(v.shape[0], v.shape[-1])
        return self._value(p, v)

    def _convert(self, entry: str, value: Any, one: Callable[[vs.Param, Any], Any]) -> Any:
        """`one` on the parts of an output that the variant's parameters change."""
        for index, p in self._returns(entry):
            if index is None:
                value = one(p, value)
            elif isinstance(value, tuple | list) and index < len(value):
                parts = list(value)
                parts[index] = one(p, parts[index])
                value = type(value)(parts)
        return value

    def _inputs(
        self,
        entry: str,
        args: tuple,
        kwargs: Mapping[str, Any] | None,
        init: bool,
        names: dict[str, str],
    ) -> tuple[tuple, dict[str, Any]]:
        """Arguments in the other convention; keywords renamed by `names`."""
        if self.standard:
            return tuple(args), dict(kwargs or {})
        params = self.names(entry, init)
        out_args = []
        for i, v in enumerate(args):
            for p in [] if init or i >= len(params) else self._params_of(params[i]):
                v = self._value(p, v)
            out_args.append(v)
        out_kwargs = {}
        for k, v in (kwargs or {}).items():
            if names is self.back and k in self.renames and k not in self.back:
                # Code written in the variant's names has no parameter of the standard name.
                raise TypeError(f"{entry}() got an unexpected keyword argument {k!r}")
            std = self.back.get(k, k) if names is self.back else k  # the standard name
            for p in [] if init else self._params_of(std):
                v = self._value(p, v)
            out_kwargs[names.get(k, k)] = v
        return tuple(out_args), out_kwargs

    # -- calls: the standard frame -> the candidate's (the adapter around a candidate) -----
    def to_variant(
        self, entry: str, args: tuple, kwargs: Mapping[str, Any] | None, *, init: bool = False
    ) -> tuple[tuple, dict[str, Any]]:
        return self._inputs(entry, args, kwargs, init, self.renames)

    def output_to_standard(self, entry: str, value: Any) -> Any:
        return self._convert(entry, value, lambda p, v: self._out_to_standard(p, v, entry))

    def grads_to_standard(self, entry: str, grads: Any, wrt: tuple[int, ...]) -> Any:
        """Gradients w.r.t. the arguments at `wrt`, from the variant's layout to the standard."""
        if not isinstance(grads, tuple | list):
            return grads
        names = self.names(entry)
        out = []
        for pos, g in zip(wrt, grads, strict=False):
            for p in self._params_of(names[pos]) if pos < len(names) else []:
                if p.kind in ("layout", "sequence-first"):
                    g = self._value(p, g)
            out.append(g)
        return tuple(out)

    def grad_output_to_variant(self, entry: str, g: Any) -> Any:
        """The gradient of the loss w.r.t. the output (its first part, for a tuple)."""
        for index, p in self._returns(entry):
            if index in (None, 0) and p.kind in ("layout", "sequence-first"):
                g = self._value(p, g)
        return g

    # -- calls: the variant's frame -> the standard (standard code in a variant's clothes) --
    def to_standard(
        self, entry: str, args: tuple, kwargs: Mapping[str, Any] | None, *, init: bool = False
    ) -> tuple[tuple, dict[str, Any]]:
        return self._inputs(entry, args, kwargs, init, self.back)

    def output_to_variant(self, entry: str, value: Any) -> Any:
        return self._convert(entry, value, self._out_to_variant)

    # -- modules' layers ---------------------------------------------------------------------
    def layer_names(self, structure: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        """(`structure` with the variant's layer names read as the standard ones, {standard
        parameter name: the module's own}). Names the variant does not use stay as they are:
        as in the standard kata, a layer is recognised by its role, not only by its name."""
        if not self.layers:
            return structure, {}
        back = {v: k for k, v in self.layers.items()}

        def std(name: str) -> str:
            return ".".join(back.get(part, part) for part in name.split("."))

        params = dict(structure.get("params", {}))
        mapping = {std(n): n for n in params}
        out = dict(structure)
        out["params"] = {std(n): s for n, s in params.items()}
        out["modules"] = [
            {**m, "name": std(m["name"])} if "name" in m else m
            for m in structure.get("modules", [])
        ]
        return out, {k: v for k, v in mapping.items() if k != v}


# -- the adapter around a candidate ------------------------------------------------------------
class _Pending:
    """A candidate's Pending whose result comes back in the standard convention."""

    def __init__(self, inner: Any, convert: Callable[[Any], Any]) -> None:
        self.inner, self.convert = inner, convert

    def __enter__(self) -> _Pending:
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self.inner.__exit__(*exc)

    def result(self) -> Any:
        return self.convert(self.inner.result())


class Adapted:
    """A candidate written in a variant's conventions, seen in the standard kata's: the
    grader's handle (`CandidateAPI`). Everything else (limits, time used, load errors, the
    process) is the wrapped candidate's, read and written through."""

    _OWN = ("inner", "conventions")

    def __init__(self, inner: Any, conventions: Conventions) -> None:
        object.__setattr__(self, "inner", inner)
        object.__setattr__(self, "conventions", conventions)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.inner, name, value)

    def has(self, name: str) -> bool:
        return self.inner.has(name)

    def _outcome(self, name: str, out: Outcome, wrt: tuple[int, ...]) -> Outcome:
        conv = self.conventions
        out.value = conv.output_to_standard(name, out.value)
        if wrt and out.grads is not None:
            out.grads = conv.grads_to_standard(name, out.grads, wrt)
        return out

    def call(
        self, name: str, args: tuple = (), kwargs: Any = None, memory_mb: Any = None, **grad: Any
    ) -> Outcome:
        """`Candidate.call` (`grad` = grad_wrt, grad_output), in the standard convention."""
        if memory_mb is not None:
            a, k = self.conventions.to_variant(name, args, kwargs)
            return self._outcome(name, self.inner.call(name, a, k, memory_mb=memory_mb), ())
        with self.submit(name, args, kwargs, **grad) as pending:
            pass
        return pending.result()

    def submit(self, name: str, args: tuple = (), kwargs: Any = None, **grad: Any) -> _Pending:
        """`Candidate.submit` (`grad` = grad_wrt, grad_output), in the standard convention."""
        a, k = self.conventions.to_variant(name, args, kwargs)
        return self._submit(name, lambda g: self.inner.submit(name, a, k, **g), grad)

    def _submit(self, entry: str, send: Callable[[dict], Any], grad: dict[str, Any]) -> _Pending:
        wrt = tuple(grad.get("grad_wrt") or ())
        if wrt:  # the gradient of the output arrives in the standard layout too
            grad = {
                **grad,
                "grad_output": self.conventions.grad_output_to_variant(
                    entry, grad.get("grad_output")
                ),
            }
        return _Pending(send(grad), lambda out: self._outcome(entry, out, wrt))

    def new(
        self, name: str, args: tuple = (), kwargs: dict[str, Any] | None = None, dtype: Any = None
    ) -> AdaptedModule:
        with self.new_later(name, args, kwargs, dtype) as building:
            pass
        return building.result()

    def new_later(
        self, name: str, args: tuple = (), kwargs: dict[str, Any] | None = None, dtype: Any = None
    ) -> _Pending:
        a, k = self.conventions.to_variant(name, args, kwargs, init=True)
        inner = self.inner.new_later(name, a, k, dtype)
        return _Pending(inner, lambda module: AdaptedModule(module, self))

    def close(self) -> None:
        self.inner.close()


class AdaptedModule(RemoteModule):
    """A candidate's module (RemoteModule or LocalModule) seen in the standard convention:
    standard layer names in its structure and state, standard inputs and outputs."""

    def __init__(self, inner: RemoteModule, owner: Adapted) -> None:  # noqa: D107 - no dataclass init
        self.inner, self.owner = inner, owner

    @property  # type: ignore[override]
    def candidate(self) -> Adapted:
        return self.owner

    @property  # type: ignore[override]
    def handle(self) -> int:
        return self.inner.handle

    @property  # type: ignore[override]
    def generation(self) -> int:
        return self.inner.generation

    @property  # type: ignore[override]
    def name(self) -> str:
        return self.inner.name

    @property  # type: ignore[override]
    def structure(self) -> dict[str, Any]:
        return self.owner.conventions.layer_names(self.inner.structure)[0]

    def to(self, dtype: Any) -> AdaptedModule:
        self.inner.to(dtype)
        return self

    def load_state(self, state: dict[str, Any]) -> None:
        _, own = self.owner.conventions.layer_names(self.inner.structure)
        self.inner.load_state({own.get(k, k): v for k, v in state.items()})

    def submit(
        self, args: tuple = (), kwargs: Any = None, method: str | None = None, **grad: Any
    ) -> _Pending:
        """`RemoteModule.submit`, in the standard convention (`call` is RemoteModule's)."""
        if method is not None:  # another method than forward: its own convention is not declared
            return _Pending(self.inner.submit(args, kwargs, method=method, **grad), lambda out: out)
        entry = self.inner.name
        a, k = self.owner.conventions.to_variant(entry, args, kwargs)
        return self.owner._submit(entry, lambda g: self.inner.submit(a, k, **g), grad)


def conventions_of(kata: Kata) -> Conventions | None:
    """The adapter's transforms for `kata`'s own variant; None for the standard kata."""
    return Conventions(kata) if kata.variant else None


def adapt(candidate: Any, kata: Kata) -> Any:
    """`candidate` as the standard grader sees it under `kata`'s variant (itself for the
    standard kata): the one place every grading path goes through (runner.check)."""
    conv = conventions_of(kata)
    return candidate if conv is None else Adapted(candidate, conv)


# -- standard code in a variant's conventions ------------------------------------------------
def wrap_function(fn: Callable[..., Any], entry: str, conv: Conventions) -> Callable[..., Any]:
    """`fn` (standard) as a function that takes and returns the variant's convention."""

    def variant_fn(*args: Any, **kwargs: Any) -> Any:
        a, k = conv.to_standard(entry, args, kwargs)
        return conv.output_to_variant(entry, fn(*a, **k))

    variant_fn.__name__ = variant_fn.__qualname__ = entry
    return variant_fn


def wrap_class(cls: type, entry: str, conv: Conventions) -> type:
    """`cls` (a standard nn.Module) as a class built and called in the variant's convention
    (its layers keep their standard names: layer names are never enforced)."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        a, k = conv.to_standard(entry, args, kwargs, init=True)
        cls.__init__(self, *a, **k)

    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        a, k = conv.to_standard(entry, args, kwargs)
        return conv.output_to_variant(entry, cls.forward(self, *a, **k))

    return type(cls.__name__, (cls,), {"__init__": __init__, "forward": forward})


def variant_namespace(
    namespace: Any, conv: Conventions, overrides: Mapping[str, Any] | None = None
) -> SimpleNamespace:
    """The kata's entry points from `overrides` (a mutant) or `namespace` (the reference),
    each taking the variant's inputs and returning the variant's outputs."""
    out = SimpleNamespace()
    for entry in conv.kata.entry_points:
        obj = (overrides or {}).get(entry) or getattr(namespace, entry)
        setattr(
            out,
            entry,
            wrap_class(obj, entry, conv)
            if isinstance(obj, type)
            else wrap_function(obj, entry, conv),
        )
    return out
