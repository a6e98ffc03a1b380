"""Per-student variants (issue 27): every kata declares the conventions a variant may change,
each a transform the grading process applies at the grader's boundary (checker/adapter.py),
and a variant's texts (statement, skeleton, reference) follow it. Fast tests: declarations,
the transforms, texts, the draw, the convention search on a few trusted files. The
per-variant mutation matrix is tests/test_variant_matrix*.py; the CLI end to end is
tests/test_variant_sets.py."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from attnkata.checker import variants as vs
from attnkata.checker.adapter import (
    Adapted,
    ConventionMismatch,
    Conventions,
    variant_namespace,
)
from attnkata.checker.catalog import all_katas, get_kata
from attnkata.checker.diagnose.conventions import follows, names_followed
from attnkata.checker.local import LocalCandidate
from attnkata.checker.mistakes import catalogue
from attnkata.checker.skeleton import reference_path
from attnkata.checker.variant_text import reference_source, skeleton, wrap_source

KATAS = list(all_katas())


def _last(kata_id: str) -> dict[str, str]:
    """The variant with every parameter at its last value: every convention changed."""
    return {p.name: p.values[-1] for p in get_kata(kata_id).variants}


def _module(source: str, name: str = "variant") -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, name, "exec"), module.__dict__)  # noqa: S102 - our own generated code
    return module


# -- declarations ------------------------------------------------------------------------------
@pytest.mark.parametrize("kata_id", KATAS)
def test_every_kata_declares_three_parameters_or_says_why_not(kata_id):
    kata = get_kata(kata_id)
    graded = [p for p in kata.variants if p.mistake is not None]
    assert len(kata.variants) >= 3 or kata.variants_left_out, kata_id
    # Layer names are never enforced: a kata relying on them says so.
    assert len(graded) >= 3 or kata.variants_left_out, kata_id
    for p in kata.variants:
        assert p.mistake is None or p.mistake in catalogue(), p.mistake
    # Enough variants to share out: a class of 30 draws from a pool of 12 by default.
    # (A kata without variants says why, and every student gets the standard kata.)
    assert vs.space_size(kata.variants) - 1 >= 8 or not kata.variants, kata_id
    assert kata.variants or kata.variants_left_out, kata_id


@pytest.mark.parametrize("kata_id", KATAS)
def test_declared_arguments_and_outputs_exist_in_the_reference(kata_id):
    kata = get_kata(kata_id)
    ref = importlib.import_module(f"attnkata.reference.{kata.module_name}")
    params = set()
    for entry in kata.entry_points:
        obj = getattr(ref, entry)
        fns = [obj.__init__, obj.forward] if isinstance(obj, type) else [obj]
        for fn in fns:
            params |= set(inspect.signature(fn).parameters) - {"self"}
    for p in kata.variants:
        missing = [a for a in p.arguments if a not in params]
        assert not missing, f"{kata_id}.{p.name}: no argument {missing}"
        for value in p.values:
            if p.kind == "names":
                assert set(p.rename_map(value)) <= params, (p.name, value)
        for r in p.returns:
            assert r.split(".")[0] in kata.entry_points, r


def test_a_declaration_error_names_the_field(tmp_path):
    with pytest.raises(Exception, match=r"variants.layout.kind"):
        vs.parse({"layout": {"kind": "diagonal"}}, tmp_path / "kata.toml")
    with pytest.raises(Exception, match="both rename"):
        vs.parse(
            {
                "a": {"kind": "names", "x": {"mask": "m"}},
                "b": {"kind": "names", "y": {"mask": "n"}},
            },
            tmp_path / "kata.toml",
        )


def test_variant_specs_parse_with_the_closest_name_on_a_typo():
    params = get_kata("sdpa").variants
    got = vs.parse_spec(params, "layout=blhd,mask=masked", "sdpa")
    assert got == {"layout": "blhd", "mask": "masked", "names": "standard", "scale": "multiply"}
    assert vs.parse_spec(params, "random", "sdpa") != vs.complete(params, {})
    with pytest.raises(Exception, match="did you mean 'layout'"):
        vs.parse_spec(params, "layot=blhd", "sdpa")
    with pytest.raises(Exception, match="takes bhld, blhd"):
        vs.parse_spec(params, "layout=bhdl", "sdpa")


def test_the_draw_is_stable_per_student_and_independent_of_the_roster():
    params = get_kata("gqa").variants
    pool = vs.ordering(params, "secret", "gqa")[:12]
    assert vs.complete(params, {}) not in pool  # every student gets a real variant
    a = vs.pick(pool, "secret", "gqa", "alice")
    assert a == vs.pick(pool, "secret", "gqa", "alice")
    assert pool == vs.ordering(params, "secret", "gqa")[:12]
    assert vs.ordering(params, "other", "gqa")[:12] != pool
    class_of_30 = {json.dumps(vs.pick(pool, "secret", "gqa", f"s{i:02d}")) for i in range(30)}
    assert len(class_of_30) >= 8


# -- the adapter's transforms ------------------------------------------------------------------
def test_every_transform_is_undone_exactly_on_the_way_back():
    kata = get_kata("flash-attention")
    conv = Conventions(kata, _last("flash-attention"))
    q, k, v = (torch.randn(2, 3, 5, 4, dtype=torch.float64) for _ in range(3))
    mask = torch.rand(2, 1, 5, 5) < 0.5
    args, kwargs = conv.to_variant("flash_attention", (q, k, v), {"mask": mask, "scale": 0.3})
    assert args[0].shape == (2, 5, 3, 4) and args[0].is_contiguous()
    assert set(kwargs) == {"attn_mask", "temperature"}  # renamed: the torch names, a temperature
    assert torch.equal(kwargs["attn_mask"], ~mask) and kwargs["temperature"] == pytest.approx(
        1 / 0.3
    )
    back_args, back_kwargs = conv.to_standard("flash_attention", args, kwargs)
    assert all(torch.equal(a, b) for a, b in zip(back_args, (q, k, v), strict=True))
    assert torch.equal(back_kwargs["mask"], mask) and back_kwargs["scale"] == pytest.approx(0.3)
    # out is moved back, lse (B, H, L) is the same in every layout
    out, lse = torch.randn(2, 5, 3, 4), torch.randn(2, 3, 5)
    std = conv.output_to_standard("flash_attention", (out, lse))
    assert std[0].shape == (2, 3, 5, 4) and std[1] is lse


def test_a_2d_input_has_no_heads_axis_to_move():
    conv = Conventions(get_kata("sdpa"), {"layout": "blhd"})
    q = torch.randn(5, 8)
    (got,), _ = conv.to_variant("scaled_dot_product_attention", (q,), {})
    assert got.shape == (5, 8)
    (got,), _ = conv.to_variant("scaled_dot_product_attention", (np.zeros((4, 5, 8)),), {})
    assert got.shape == (5, 4, 8) and isinstance(got, np.ndarray)


def test_an_output_that_cannot_be_in_the_variants_shape_fails_as_a_mismatch():
    conv = Conventions(get_kata("causal-mask"), {"padding": "flat"})
    flat = torch.ones(3, 6, dtype=torch.bool)
    assert conv.output_to_standard("padding_mask", flat).shape == (3, 1, 1, 6)
    with pytest.raises(ConventionMismatch, match=r"\(B, S\)"):
        conv.output_to_standard("padding_mask", flat[:, None, None, :])


def test_layer_names_are_read_as_the_standard_ones_and_loaded_under_the_modules_own():
    conv = Conventions(get_kata("mha"), {"layers": "llama"})
    structure = {
        "params": {"wq.weight": [8, 8], "k_proj.weight": [8, 8]},
        "modules": [{"name": "wq", "in_features": 8}],
    }
    std, own = conv.layer_names(structure)
    assert set(std["params"]) == {"q_proj.weight", "k_proj.weight"}  # standard names still load
    assert own == {"q_proj.weight": "wq.weight"}
    assert std["modules"][0]["name"] == "q_proj"


def test_code_in_a_variants_names_has_no_parameter_of_the_standard_name():
    kata = get_kata("sdpa")
    conv = Conventions(kata, {"names": "torch"})
    ref = importlib.import_module("attnkata.reference.sdpa")
    fn = variant_namespace(ref, conv).scaled_dot_product_attention
    q = torch.randn(2, 3, 4)
    with pytest.raises(TypeError, match="unexpected keyword argument 'mask'"):
        fn(q, q, q, mask=None)
    assert fn(q, q, q, attn_mask=None).shape == (2, 3, 4)


# -- texts -------------------------------------------------------------------------------------
@pytest.mark.parametrize("kata_id", KATAS)
def test_a_variants_reference_skeleton_and_statement_follow_it(kata_id):
    kata = get_kata(kata_id).with_variant(_last(kata_id))
    source = reference_source(kata)
    ast.parse(source)
    tree = ast.parse(skeleton(kata))
    renames = {}
    for p in kata.variants:
        if p.kind in ("names", "scale", "flag"):
            renames |= p.rename_map(kata.variant_values[p.name])
    entries = [n for n in tree.body if getattr(n, "name", None) in kata.entry_points]
    params = {
        a.arg
        for entry in entries
        for node in ast.walk(entry)
        if isinstance(node, ast.FunctionDef)
        for a in node.args.args
    }
    assert {new for old, new in renames.items() if old in params or new in params} <= params
    assert not ({old for old in renames} & params - set(renames.values())), "a standard name left"
    assert "raise NotImplementedError" in skeleton(kata)  # solutions blanked, as any skeleton
    for lang in ("en", "zh"):
        text = kata.statement(lang)
        if not kata.variants:  # no variant: the standard statement, as it is
            assert text == get_kata(kata_id).statement(lang)
            continue
        assert text.count("\n- ") >= len(kata.variants)  # every convention stated
        assert ("你的约定" if lang == "zh" else "Your conventions") in text
        assert "## Worked example" not in text  # its conventions are the standard ones


def test_a_standard_kata_is_its_own_variant():
    kata = get_kata("sdpa").with_variant({})
    assert not kata.variant and kata.variant_key == "standard"
    assert reference_source(kata) == reference_path("sdpa").read_text(encoding="utf-8")
    assert kata.skeleton_path == get_kata("sdpa").skeleton_path


def test_a_file_wrapped_in_a_variant_behaves_as_the_file():
    kata = get_kata("mha").with_variant(_last("mha"))
    std = _module(reference_path("mha").read_text(encoding="utf-8"), "std")
    wrapped = _module(wrap_source(kata, reference_path("mha").read_text(encoding="utf-8")))
    conv = Conventions(kata)
    torch.manual_seed(0)
    ref = std.MultiHeadAttention(8, 2).double().eval()
    mine = wrapped.MultiHeadAttention(
        *conv.to_variant("MultiHeadAttention", (8, 2), {}, init=True)[0]
    )
    mine.load_state_dict(ref.state_dict())
    mine.double().eval()
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    mask = torch.rand(2, 1, 5, 5) < 0.6
    a, k = conv.to_variant("MultiHeadAttention", (x,), {"attn_mask": mask, "is_causal": True})
    got = conv.output_to_standard("MultiHeadAttention", mine(*a, **k))
    torch.testing.assert_close(got, ref(x, attn_mask=mask, is_causal=True))


# -- the convention search (trusted code in this process) ---------------------------------------
@pytest.mark.parametrize(
    ("kata_id", "spec", "kept"),
    [
        ("sdpa", "layout=blhd", {"layout"}),
        ("sdpa", "layout=blhd,scale=temperature", {"layout", "scale"}),
        ("mha", "batch=sequence-first,names=torch", {"batch", "names"}),
        ("rope", "pairs=inverted", {"pairs"}),
        ("kv-cache", "batch=sequence-first", {"batch"}),
    ],
)
def test_standard_code_in_a_variant_is_named_by_the_conventions_it_kept(kata_id, spec, kept):
    base = get_kata(kata_id)
    kata = base.with_variant(vs.parse_spec(base.variants, spec, kata_id))
    standard = importlib.import_module(f"attnkata.reference.{base.module_name}")
    source = reference_path(kata_id).read_text(encoding="utf-8")
    got = follows(kata, LocalCandidate(standard), source)
    assert got is not None
    assert {p.name for p in kata.variants if got[p.name] != kata.variant_values[p.name]} == kept


def test_a_kept_convention_that_is_a_catalogued_mistake_is_named_as_the_catalogue_knows_it():
    # HF's (B, Hkv, P, d) cache where the variant's is (B, P, Hkv, d): concatenated along the
    # variant's heads axis, exactly the catalogued mistake, which is true in the variant too.
    from attnkata.checker.diagnose.conventions import exact_mistake, observe
    from attnkata.checker.diagnose.engine import CallBudget

    kata = get_kata("kv-cache").with_variant({"cache": "blhd"})
    code = LocalCandidate(importlib.import_module("attnkata.reference.kv_cache"))
    assert follows(kata, code) is None
    obs = observe(kata, code, kata.variant_values, CallBudget(float("inf")))
    assert exact_mistake(kata, obs) == "cache-concat-wrong-dim"


def test_names_are_read_from_the_signature_even_when_probes_pass_them_by_position():
    kata = get_kata("causal-mask").with_variant({"names": "hf"})
    assert names_followed(kata, reference_path("causal-mask").read_text()) == {"names": "standard"}
    assert names_followed(kata, reference_source(kata)) == {"names": "hf"}


def test_the_variants_own_reference_follows_its_own_conventions():
    kata = get_kata("gqa").with_variant(_last("gqa"))
    module = _module(reference_source(kata))
    assert follows(kata, LocalCandidate(module), reference_source(kata)) is None
    graded = Adapted(LocalCandidate(module), Conventions(kata))
    from attnkata.checker import driver

    _, collector, _ = driver.run(kata, Path("gqa.py"), graded)
    assert {r.status for r in collector.results} <= {"pass", "skip"}
