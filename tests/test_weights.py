"""checker.weights: the reference's weights reach the candidate's layers whatever common names
they use (canonical, by name, fused, by shape and definition order), biases follow, and an
undecidable or mis-shaped module gets a message saying what was expected and what was found.

Most tests plan the mapping for a local module (its structure is what the child would
report); the last ones load through a real candidate child and compare outputs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from attnkata.checker.proxy import Candidate
from attnkata.checker.sandbox.child import _structure
from attnkata.checker.weights import (
    BY_NAME,
    BY_NAME_AND_ORDER,
    BY_ORDER,
    CANONICAL,
    PER_GROUP,
    PER_HEAD,
    STACKED,
    load_reference_weights,
    plan_weights,
    role_of,
    seeded_,
)
from attnkata.reference import gqa as ref_gqa
from attnkata.reference import mha as ref_mha
from attnkata.reference import mqa as ref_mqa

D, H, HKV = 24, 4, 2
HD = D // H


class Layers(nn.Module):
    """A module with the given Linear layers (name -> (in, out)), defined in that order;
    a dotted name makes a nested module (`to_out.0` is a Sequential's first layer)."""

    def __init__(self, layers: dict[str, tuple[int, int]], bias: bool = True) -> None:
        super().__init__()
        for name, (i, o) in layers.items():
            if "." in name:
                parent, _ = name.split(".", 1)
                self.add_module(parent, nn.Sequential(nn.Linear(i, o, bias=bias), nn.Dropout(0.0)))
            else:
                self.add_module(name, nn.Linear(i, o, bias=bias))


def plan(layers: dict[str, tuple[int, int]], reference: nn.Module, bias: bool = True):
    return plan_weights(_structure(Layers(layers, bias)), reference, case="case")


def mha_ref(bias: bool = True) -> nn.Module:
    return seeded_(ref_mha.MultiHeadAttention(D, H, bias=bias), 1)


def gqa_ref() -> nn.Module:
    return seeded_(ref_gqa.GroupedQueryAttention(D, H, HKV), 2)


SQUARE = (D, D)


@pytest.mark.parametrize(
    ("name", "role"),
    [
        *[
            (n, "q")
            for n in (
                "W_Q",
                "W_q",
                "w_q",
                "wq",
                "query",
                "W_query",
                "to_q",
                "q_linear",
                "linear_q",
                "q_proj",
            )
        ],
        *[(n, "k") for n in ("W_K", "key", "W_key", "to_k", "k_proj", "wk")],
        *[(n, "v") for n in ("W_V", "value", "W_value", "to_v", "v_proj", "wv")],
        *[
            (n, "o")
            for n in (
                "out_proj",
                "W_O",
                "W_o",
                "wo",
                "to_out",
                "to_out.0",
                "c_proj",
                "o_linear",
                "fc_out",
                "dense",
                "o_proj",
                "W_0",
                "attn.out_proj",
            )
        ],
        *[
            (n, "qkv")
            for n in ("c_attn", "qkv", "qkv_proj", "to_qkv", "W_qkv", "in_proj", "W_pack")
        ],
        *[(n, "kv") for n in ("kv", "kv_proj", "to_kv", "W_kv")],
        *[(n, None) for n in ("linears.0", "a", "mix", "heads")],
    ],
)
def test_role_of_common_names(name, role):
    assert role_of(name) == role


def test_canonical_names_map_to_themselves():
    ref = mha_ref()
    state, mapping = plan(
        {"q_proj": SQUARE, "k_proj": SQUARE, "v_proj": SQUARE, "o_proj": SQUARE}, ref
    )
    assert mapping.how == CANONICAL and mapping.canonical and mapping.note() == ""
    assert dict(mapping) == {n: n for n in ref.state_dict()}
    for name, tensor in ref.state_dict().items():
        assert torch.equal(state[name], tensor)


@pytest.mark.parametrize(
    "names",
    [
        ("W_Q", "W_K", "W_V", "W_O"),
        ("query", "key", "value", "out_proj"),
        ("to_q", "to_k", "to_v", "to_out.0"),
        ("wq", "wk", "wv", "wo"),
        ("q_linear", "k_linear", "v_linear", "fc_out"),
        ("W_query", "W_key", "W_value", "dense"),
    ],
)
def test_separate_projections_by_name(names):
    ref = mha_ref()
    state, mapping = plan(dict.fromkeys(names, SQUARE), ref)
    assert mapping.how == BY_NAME
    for cand, canon in zip(names, ("q_proj", "k_proj", "v_proj", "o_proj"), strict=True):
        for p in ("weight", "bias"):
            assert torch.equal(state[f"{cand}.{p}"], ref.state_dict()[f"{canon}.{p}"])
            assert mapping[f"{cand}.{p}"] == f"{canon}.{p}"
    assert f"{names[0]} <- q_proj" in mapping.note()


@pytest.mark.parametrize("fused", ["c_attn", "qkv", "qkv_proj", "to_qkv", "W_qkv", "in_proj"])
def test_fused_qkv_is_split_in_q_k_v_order(fused):
    ref = mha_ref()
    state, mapping = plan({fused: (D, 3 * D), "c_proj": SQUARE}, ref)
    sd = ref.state_dict()
    assert torch.equal(
        state[f"{fused}.weight"],
        torch.cat([sd["q_proj.weight"], sd["k_proj.weight"], sd["v_proj.weight"]]),
    )
    assert torch.equal(
        state[f"{fused}.bias"], torch.cat([sd["q_proj.bias"], sd["k_proj.bias"], sd["v_proj.bias"]])
    )
    assert torch.equal(state["c_proj.weight"], sd["o_proj.weight"])
    assert mapping[f"{fused}.weight"] == "q_proj.weight + k_proj.weight + v_proj.weight"
    assert "fused" in mapping.describe()


def test_fused_gqa_projection_has_d_plus_two_kv_heads_rows():
    ref = gqa_ref()
    state, _ = plan({"W_pack": (D, D + 2 * HKV * HD), "o_proj": SQUARE}, ref)
    assert state["W_pack.weight"].shape == (D + 2 * HKV * HD, D)
    assert torch.equal(state["W_pack.weight"][D : D + HKV * HD], ref.state_dict()["k_proj.weight"])
    with pytest.raises(AssertionError, match=r"expected Linear\(24 -> 48\)"):
        plan({"c_attn": (D, 3 * D), "o_proj": SQUARE}, ref)  # an MHA-sized fused layer


def test_fused_kv_for_mqa():
    ref = seeded_(ref_mqa.MultiQueryAttention(D, H), 3)
    state, mapping = plan({"wq": SQUARE, "kv": (D, 2 * HD), "wo": SQUARE}, ref)
    sd = ref.state_dict()
    assert torch.equal(state["kv.weight"], torch.cat([sd["k_proj.weight"], sd["v_proj.weight"]]))
    assert mapping.how == BY_NAME


def test_anonymous_layers_by_shape_and_definition_order():
    ref = gqa_ref()
    kv = (D, HKV * HD)
    state, mapping = plan({"a": SQUARE, "b": kv, "c": kv, "d": SQUARE}, ref)
    assert mapping.how == BY_ORDER
    assert [m for m, _ in mapping.layers] == ["a", "b", "c", "d"]
    assert torch.equal(state["c.weight"], ref.state_dict()["v_proj.weight"])
    # Three layers: the middle one can only be a fused k|v.
    state, mapping = plan({"lin1": SQUARE, "lin2": (D, 2 * HKV * HD), "lin3": SQUARE}, ref)
    assert mapping.layers[1] == ("lin2", ("k_proj", "v_proj"))
    # Annotated-Transformer style ModuleList: names say nothing, order decides.
    m = nn.Module()
    m.linears = nn.ModuleList([nn.Linear(D, D) for _ in range(4)])
    _, mapping = plan_weights(_structure(m), mha_ref(), case="case")
    assert [c for c, _ in mapping.layers] == ["linears.0", "linears.1", "linears.2", "linears.3"]


def test_names_first_then_order_for_the_rest():
    ref = mha_ref()
    # `out` is recognised by name although it is defined first; the rest go in order.
    _, mapping = plan({"out": SQUARE, "x1": SQUARE, "x2": SQUARE, "x3": SQUARE}, ref)
    assert mapping.how == BY_NAME_AND_ORDER
    assert dict(mapping.layers) == {
        "x1": ("q_proj",),
        "x2": ("k_proj",),
        "x3": ("v_proj",),
        "out": ("o_proj",),
    }


def test_bias_false_is_respected():
    ref = mha_ref(bias=False)
    state, _ = plan({"W_Q": SQUARE, "W_K": SQUARE, "W_V": SQUARE, "W_O": SQUARE}, ref, bias=False)
    assert set(state) == {"W_Q.weight", "W_K.weight", "W_V.weight", "W_O.weight"}
    with pytest.raises(
        AssertionError, match="has a bias, but the module was built with bias=False"
    ):
        plan({"W_Q": SQUARE, "W_K": SQUARE, "W_V": SQUARE, "W_O": SQUARE}, ref, bias=True)
    with pytest.raises(
        AssertionError, match="q_proj has a bias, but the module was built with bias=False"
    ):
        plan(
            {"q_proj": SQUARE, "k_proj": SQUARE, "v_proj": SQUARE, "o_proj": SQUARE}, ref, bias=True
        )
    with pytest.raises(
        AssertionError, match="has no bias, but the module was built with bias=True"
    ):
        plan(
            {"W_Q": SQUARE, "W_K": SQUARE, "W_V": SQUARE, "W_O": SQUARE},
            mha_ref(bias=True),
            bias=False,
        )


def test_wrong_kv_size_is_named():
    ref = gqa_ref()
    with pytest.raises(
        AssertionError, match=r"k_proj.weight should have shape \(12, 24\), yours has \(24, 24\)"
    ):
        plan({"q_proj": SQUARE, "k_proj": SQUARE, "v_proj": SQUARE, "o_proj": SQUARE}, ref)
    with pytest.raises(
        AssertionError,
        match=r"`W_K` looks like the key projection but is Linear\(24 -> 24\); "
        r"expected Linear\(24 -> 12\)",
    ):
        plan({"W_Q": SQUARE, "W_K": SQUARE, "W_V": SQUARE, "W_O": SQUARE}, ref)


def test_two_layers_claiming_one_role():
    with pytest.raises(
        AssertionError, match="both `W_Q` and `query` look like the query projection"
    ):
        plan(
            {"W_Q": SQUARE, "query": SQUARE, "W_K": SQUARE, "W_V": SQUARE, "W_O": SQUARE}, mha_ref()
        )


def test_missing_output_projection_is_named():
    with pytest.raises(
        AssertionError,
        match=r"no layer for the output projection: expected o_proj "
        r"Linear\(24 -> 24, bias\)\. Found: q_proj",
    ):
        plan({"q_proj": SQUARE, "k_proj": SQUARE, "v_proj": SQUARE}, mha_ref())


def test_undecidable_module_says_what_was_expected_and_found():
    with pytest.raises(AssertionError) as info:
        plan({"heads_a": (D, HD), "heads_b": (D, HD), "mix": SQUARE}, mha_ref())
    text = str(info.value)
    assert text.startswith(
        "case: cannot tell which of your layers hold the query, key, value, output weights"
    )
    assert "q_proj Linear(24 -> 24, bias)" in text and "c_attn/qkv/in_proj" in text
    assert "heads_a Linear(24 -> 6, bias)" in text and "mix Linear(24 -> 24, bias)" in text
    raw = nn.Module()
    raw.W_Q = nn.Parameter(torch.zeros(D, D))
    with pytest.raises(
        AssertionError, match="no nn.Linear layers; other parameters: W_Q \\(24, 24\\)"
    ):
        plan_weights(_structure(raw), mha_ref(), case="case")


def test_non_attention_reference_keeps_the_canonical_message():
    class Latent(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.latents = nn.Parameter(torch.zeros(3, D))
            self.kv_a = nn.Linear(D, 8)

    other = nn.Module()
    other.kv_a = nn.Linear(D, 8)
    with pytest.raises(
        AssertionError, match="your module has no parameter 'latents' of shape \\(3, 24\\)"
    ):
        plan_weights(_structure(other), Latent(), case="case")


MODULE_FILE = '''
import torch
from torch import nn


class Fused(nn.Module):
    """MHA with nanoGPT's fused c_attn, written independently of the reference."""

    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        self.h = n_heads
        self.c_attn = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.c_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x):
        B, L, D = x.shape
        q, k, v = self.c_attn(x).split(D, dim=-1)
        q, k, v = (t.view(B, L, self.h, -1).transpose(1, 2) for t in (q, k, v))
        w = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
        return self.c_proj((w @ v).transpose(1, 2).reshape(B, L, D))
'''


@pytest.fixture(scope="module")
def candidate(tmp_path_factory: pytest.TempPathFactory):
    path: Path = tmp_path_factory.mktemp("weights") / "fused.py"
    path.write_text(MODULE_FILE, encoding="utf-8")
    with Candidate(path) as c:
        c.start()
        yield c


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_loaded_fused_module_reproduces_the_reference(candidate, dtype):
    ref = mha_ref()
    module = candidate.new("Fused", (D, H))
    if dtype != torch.float32:
        module.to(dtype)
    mapping = load_reference_weights(module, ref, case="fused")
    assert mapping.how == BY_NAME and "c_attn <- q_proj + k_proj + v_proj" in mapping.note()
    x = torch.randn(2, 5, D, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    got = module.call((x.to(dtype),)).value
    assert got.dtype == dtype
    with torch.no_grad():
        want = ref(x)
    assert torch.allclose(got.double(), want, atol=1e-5 if dtype == torch.float32 else 1e-12)


def test_loading_a_mis_shaped_module_raises_before_running_it(candidate):
    module = candidate.new("Fused", (D, H))
    with pytest.raises(AssertionError, match=r"expected Linear\(24 -> 48\)"):
        load_reference_weights(module, gqa_ref(), case="gqa weights into an MHA")


# -- fused row layouts (GPT-NeoX per head, Megatron per KV group, per-head k|v) ---------------
def test_fused_layouts_offered_where_the_shapes_allow_them():
    ref = mha_ref()
    sd = ref.state_dict()
    state, mapping = plan({"query_key_value": (D, 3 * D), "dense": SQUARE}, ref)
    options = mapping.alternatives["query_key_value"]
    assert list(options) == [STACKED, PER_HEAD]
    neox = options[PER_HEAD]["query_key_value.weight"].view(H, 3, HD, D)
    assert torch.equal(neox[:, 0], sd["q_proj.weight"].view(H, HD, D))
    assert torch.equal(neox[:, 2], sd["v_proj.weight"].view(H, HD, D))
    bias = options[PER_HEAD]["query_key_value.bias"].view(H, 3, HD)
    assert torch.equal(bias[:, 1], sd["k_proj.bias"].view(H, HD))
    assert torch.equal(state["query_key_value.weight"], options[STACKED]["query_key_value.weight"])

    g = gqa_ref()
    gsd = g.state_dict()
    _, mapping = plan({"W_pack": (D, D + 2 * HKV * HD), "o_proj": SQUARE}, g)
    grouped = mapping.alternatives["W_pack"][PER_GROUP]["W_pack.weight"].view(
        HKV, H // HKV + 2, HD, D
    )
    assert torch.equal(grouped[:, :-2].reshape(D, D), gsd["q_proj.weight"])
    assert torch.equal(grouped[:, -1], gsd["v_proj.weight"].view(HKV, HD, D))
    _, mapping = plan({"wq": SQUARE, "kv": (D, 2 * HKV * HD), "wo": SQUARE}, g)
    assert list(mapping.alternatives["kv"]) == [STACKED, PER_HEAD]
    # One KV head: every layout is the stacked one, nothing to try.
    _, mapping = plan(
        {"wq": SQUARE, "kv": (D, 2 * HD), "wo": SQUARE},
        seeded_(ref_mqa.MultiQueryAttention(D, H), 3),
    )
    assert not mapping.alternatives


NEOX_FILE = '''
import torch
from torch import nn


class NeoX(nn.Module):
    """GPT-NeoX's fused query_key_value, rows per head [q_h | k_h | v_h]."""

    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        self.h = n_heads
        self.query_key_value = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.dense = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x):
        B, L, D = x.shape
        qkv = self.query_key_value(x).view(B, L, self.h, -1).transpose(1, 2)
        q, k, v = qkv.chunk(3, dim=-1)
        w = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
        return self.dense((w @ v).transpose(1, 2).reshape(B, L, D))


class KVPerHead(nn.Module):
    """GQA with a fused k|v laid out per KV head [k_j | v_j]."""

    def __init__(self, d_model, n_heads, n_kv):
        super().__init__()
        self.h, self.kv_heads, self.d = n_heads, n_kv, d_model // n_heads
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * n_kv * self.d)
        self.o = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, L, D = x.shape
        q = self.q(x).view(B, L, self.h, self.d).transpose(1, 2)
        k, v = self.kv(x).view(B, L, self.kv_heads, 2 * self.d).transpose(1, 2).chunk(2, dim=-1)
        k, v = (t.repeat_interleave(self.h // self.kv_heads, dim=1) for t in (k, v))
        w = torch.softmax(q @ k.transpose(-2, -1) / self.d ** 0.5, dim=-1)
        return self.o((w @ v).transpose(1, 2).reshape(B, L, D))
'''


@pytest.fixture(scope="module")
def layouts(tmp_path_factory: pytest.TempPathFactory):
    path: Path = tmp_path_factory.mktemp("layouts") / "neox.py"
    path.write_text(NEOX_FILE, encoding="utf-8")
    with Candidate(path) as c:
        c.start()
        yield c


@pytest.mark.parametrize(
    ("cls", "reference", "init", "layer", "layout"),
    [
        ("NeoX", mha_ref, (D, H), "query_key_value", PER_HEAD),
        ("KVPerHead", gqa_ref, (D, H, HKV), "kv", PER_HEAD),
        ("Fused", mha_ref, (D, H), "c_attn", STACKED),
    ],
)
def test_the_layout_that_fits_is_found_by_calling_the_module(
    layouts, candidate, cls, reference, init, layer, layout
):
    owner = candidate if cls == "Fused" else layouts
    ref = reference()
    module = owner.new(cls, init).to(torch.float64)
    mapping = load_reference_weights(module, ref, case="layouts", dtype=torch.float64)
    assert mapping.layouts == {layer: layout} and not mapping.unfit
    x = torch.randn(2, 5, D, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert torch.allclose(module.call((x,)).value, ref(x), atol=1e-10)


def test_no_fitting_layout_is_reported_not_raised(layouts):
    class Broken(ref_mha.MultiHeadAttention):  # a reference the module cannot agree with
        def forward(self, x, attn_mask=None, is_causal=False):
            return super().forward(x) * 2

    ref = seeded_(Broken(D, H), 1)
    module = layouts.new("NeoX", (D, H)).to(torch.float64)
    mapping = load_reference_weights(module, ref, case="layouts", dtype=torch.float64)
    assert (
        mapping.unfit == {"query_key_value": [STACKED, PER_HEAD]}
        and mapping.layouts["query_key_value"] == STACKED
    )
