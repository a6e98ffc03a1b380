"""The Triton track (triton-softmax, flash-attention-triton): the interpreter's guard (bands,
address tracing, NaN outputs, the GPU's tl.dot sizes, bfloat16 refused), layouts, the policy's
Triton allowance, what happens without the extra, the trace checks of the diagnosis, the
`speed` tier (on a GPU only), and the replies' Triton fields.

The katas themselves are in the shared tests: tests/test_katas.py (reference passes,
skeleton fails), tests/test_mutation_matrix.py (every fixture named, every alternative
clean) and tests/test_diagnose.py (every mutant shows and is told apart)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from typer.testing import CliRunner

from attnkata.checker import catalog, replies, triton_support
from attnkata.checker.catalog import get_kata
from attnkata.checker.sandbox.layouts import arrange
from attnkata.checker.static import check_source
from attnkata.cli.app import app

pytestmark = pytest.mark.skipif(not triton_support.available(), reason="needs attnkata[triton]")

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
runner = CliRunner()


@pytest.fixture(scope="module")
def kernels():
    """A tiny kernel module, interpreted, with knobs for unmasked loads and stores."""
    triton, tl = triton_support.load()

    @triton_support.jit
    def copy_rows(
        x_ptr,
        y_ptr,
        n_cols,
        sx,
        sy,
        BLOCK: tl.constexpr,
        LOAD_MASK: tl.constexpr,
        STORE_MASK: tl.constexpr,
    ):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        ok = cols < n_cols
        if LOAD_MASK:
            x = tl.load(x_ptr + row * sx + cols, mask=ok, other=0.0)
        else:
            x = tl.load(x_ptr + row * sx + cols)
        if STORE_MASK:
            tl.store(y_ptr + row * sy + cols, x * 2, mask=ok)
        else:
            tl.store(y_ptr + row * sy + cols, x * 2)

    @triton_support.jit
    def small_dot(a_ptr, b_ptr, c_ptr, K: tl.constexpr):
        i = tl.arange(0, 16)
        k = tl.arange(0, K)
        a = tl.load(a_ptr + i[:, None] * K + k[None, :])
        b = tl.load(b_ptr + k[:, None] * 16 + i[None, :])
        tl.store(c_ptr + i[:, None] * 16 + i[None, :], tl.dot(a, b))

    def run(x, load_mask=True, store_mask=True):
        y = torch.empty_like(x)
        copy_rows[(x.shape[0],)](
            x,
            y,
            x.shape[1],
            x.stride(0),
            y.stride(0),
            BLOCK=8,
            LOAD_MASK=load_mask,
            STORE_MASK=store_mask,
        )
        return y

    return SimpleNamespace(run=run, copy_rows=copy_rows, small_dot=small_dot)


def guarded(fn, *args, **kwargs):
    with triton_support.guarded(list(args), kwargs) as report:
        value = fn(*args, **kwargs)
    return value, report


def test_masked_kernel_stays_inside_and_outputs_start_as_nan(kernels):
    run = kernels.run
    x = torch.arange(10.0).view(2, 5)
    y, report = guarded(run, x)
    assert torch.equal(y, 2 * x) and report["launches"] == 1 and report["outside"] == []
    assert report["loaded"]["argument 0"] == 10  # the active lanes inside x
    with triton_support.guarded([], {}):
        assert torch.empty(3).isnan().all()  # what no program writes stays NaN


def test_unmasked_load_reads_the_band_and_is_named_with_its_line(kernels):
    run = kernels.run
    x = torch.arange(10.0).view(2, 5)
    y, report = guarded(run, x, load_mask=False)
    events = [e for e in report["outside"] if e["op"] == "load"]
    assert len(events) == 1
    e = events[0]
    assert e["region"] == "after" and e["label"] == "argument 0" and not e["masked"]
    assert e["lanes"] == 3 and e["program"] == [1, 0, 0]  # row 1's lanes 5..7; row 0's are row 1
    assert e["line"] is not None and "tl.load(x_ptr + row * sx + cols)" in _line(e["line"])
    assert y[1].isnan().sum() == 0  # the stores were masked: the band's NaN went nowhere


def test_unmasked_store_lands_in_the_band_and_the_output_is_right(kernels):
    run = kernels.run
    x = torch.arange(10.0).view(2, 5)
    y, report = guarded(run, x, store_mask=False)
    assert torch.equal(y, 2 * x)  # the stray lanes of row 0 were rewritten by row 1's program
    (e,) = [e for e in report["outside"] if e["op"] == "store"]
    assert e["region"] == "after" and e["lanes"] == 3 and "tl.store" in _line(e["line"])


def test_padding_between_rows_is_a_gap_not_the_band(kernels):
    run = kernels.run
    x = arrange(torch.arange(10.0).view(2, 5), "pad:3")  # rows 8 apart: lanes 5..7 are padding
    assert x.stride() == (8, 1)
    _, report = guarded(run, x, load_mask=False)
    # row 0's lanes 5..7 are the padding before row 1; row 1's run past the view's last element
    regions = {e["region"]: e["program"] for e in report["outside"]}
    assert regions == {"gap": [0, 0, 0], "after": [1, 0, 0]}


def test_a_read_far_outside_every_tensor_is_not_performed(kernels):
    x = torch.arange(10.0).view(2, 5)
    y = torch.empty_like(x)
    with triton_support.guarded([x], {}) as report:
        # a row stride of 10**7 elements: program 1 points ~40 MB past x, outside any buffer;
        # performed, that load would read raw memory (or fault): it is recorded and skipped
        kernels.copy_rows[(2,)](x, y, 5, 10**7, 5, BLOCK=8, LOAD_MASK=True, STORE_MASK=True)
    assert {(e["op"], e["region"]) for e in report["outside"]} == {("load", "outside")}
    assert torch.equal(y[0], 2 * x[0]) and torch.equal(y[1], torch.zeros(5))  # (other=0.0)


def test_gpu_dot_sizes_and_bfloat16(kernels):
    small_dot = kernels.small_dot
    a16, b16 = torch.ones(16, 8, dtype=torch.float16), torch.ones(8, 16, dtype=torch.float16)
    c = torch.empty(16, 16, dtype=torch.float32)
    with pytest.raises(Exception, match=r"K >= 16"), triton_support.guarded([a16, b16], {}):
        small_dot[(1,)](a16, b16, c, K=8)  # fp16 with K = 8: NVIDIA's backend refuses it
    a32, b32 = a16.float(), b16.float()
    with triton_support.guarded([a32, b32], {}):
        small_dot[(1,)](a32, b32, c, K=8)  # float32 needs K >= 8 only
    assert torch.equal(c, torch.full((16, 16), 8.0))
    with pytest.raises(TypeError, match="bfloat16"), triton_support.guarded([], {}):
        small_dot[(1,)](a16.bfloat16(), b16.bfloat16(), c, K=8)


def test_layouts_keep_values_and_change_strides():
    t = torch.randn(2, 3, 4, 5)
    for spec, stride in (("swap:1,2", (60, 5, 15, 1)), ("pad:3", (96, 32, 8, 1))):
        u = arrange(t, spec)
        assert torch.equal(u, t) and u.stride() == stride
    u = arrange(t, "offset:7")
    assert torch.equal(u, t) and u.storage_offset() == 7


def _line(n: int) -> str:
    src = (Path(__file__)).read_text().splitlines()
    return src[n - 1]


# -- the policy -------------------------------------------------------------------------------
TRITON_SOURCE = (REPO / "reference" / "triton_softmax.py").read_text()


def _policy_ids(kata_id: str, source: str) -> set[str]:
    return {
        d.id for d in check_source(get_kata(kata_id), source, "en") if d.id.startswith("policy")
    }


def test_triton_is_allowed_for_the_triton_katas_only():
    assert _policy_ids("triton-softmax", TRITON_SOURCE) == set()
    assert _policy_ids("sdpa", TRITON_SOURCE) == {"policy-import"}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("f = torch.compile(lambda x: x)", "policy-dynamic-code"),
        ("from torch import compile", "policy-dynamic-code"),
        ("import triton.runtime.interpreter", "policy-import"),
        ("k = triton.knobs.runtime", "policy-private-api"),
        ("import flash_attn", "policy-import"),
        ("y = torch.nn.functional.scaled_dot_product_attention", None),
    ],
)
def test_the_triton_katas_policy_still_bans(line: str, expected: str | None):
    ids = _policy_ids("flash-attention-triton", TRITON_SOURCE + "\n" + line + "\n")
    assert ids == ({expected} if expected else set())  # (SDPA: the sandbox refuses it at run time)


# -- without the extra ------------------------------------------------------------------------
def test_without_the_extra_list_says_so_and_check_exits_3(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(catalog.EXTRAS, "triton", "attnkata_no_such_module")
    res = runner.invoke(
        app, ["check", "triton-softmax", str(REPO / "reference" / "triton_softmax.py")]
    )
    assert res.exit_code == 3, res.output
    assert "needs attnkata[triton]" in res.stderr and 'pip install "attnkata[triton]"' in res.stderr
    rows = {r["id"]: r for r in json.loads(runner.invoke(app, ["list", "--json"]).stdout)}
    assert rows["flash-attention-triton"]["missing"] == ["triton"] and rows["sdpa"]["missing"] == []
    assert "needs attnkata[triton]" in runner.invoke(app, ["list"]).stdout
    zh = runner.invoke(app, ["check", "triton-softmax", "x.py", "--lang", "zh"])
    assert zh.exit_code == 3 and "需要 attnkata[triton]" in zh.stderr


# -- the diagnosis' trace checks ------------------------------------------------------------
def test_causal_blocks_not_skipped_is_informative_and_the_reference_has_none():
    from attnkata.checker.diagnose import diagnose_as_passing

    kata = get_kata("flash-attention-triton")
    found = diagnose_as_passing(kata, FIXTURES / "triton" / "causal_blocks_not_skipped.py")
    assert [(d.id, d.severity) for d in found] == [("causal-blocks-not-skipped", "informative")]
    assert "with is_causal=True" in found[0].evidence[0]


def test_the_lanes_picture_and_line_of_an_unmasked_load():
    from attnkata.checker.runner import check

    path = FIXTURES / "mistakes" / "triton-softmax" / "missing-load-mask.py"
    result = check(get_kata("triton-softmax"), path, maxfail=1, lang="zh")
    top = result.diagnostics[0]
    assert top.id == "missing-load-mask" and top.source[0].line == 10
    assert "tl.load" in top.source[0].text
    got, expected = top.data["mask_got"], top.data["mask_expected"]
    assert all(got[0]) and expected[0].count(False) == 4  # 128 lanes, 8 a cell: 4 cells past C
    assert "分块" in top.data["grid_caption"]["zh"] and any("第 10 行" in e for e in top.evidence)


# -- the `speed` tier -------------------------------------------------------------------------
def test_the_speed_tier_says_why_it_did_not_run():
    from attnkata.checker.runner import check

    result = check(get_kata("triton-softmax"), REPO / "reference" / "triton_softmax.py")
    (speed,) = [t for t in result.tests if t.tier == "speed"]
    if torch.cuda.is_available():
        assert speed.status == "pass" and "TFLOP/s" in speed.message
        assert result.timings["speed_speedup"] > 0
    else:
        assert speed.status == "skip" and speed.message == "not run: no CUDA device"
        assert "speed_ms" not in result.timings
    assert result.passed


@pytest.mark.skipif(not torch.cuda.is_available(), reason="not run: no CUDA device")
@pytest.mark.slow
def test_the_speed_tier_times_the_kernel_on_the_gpu_and_keeps_the_best():
    from attnkata.checker.api import check as api_check
    from attnkata.checker.store import History

    result = api_check(
        "flash-attention-triton", path=REPO / "reference" / "flash_attention_triton.py", record=True
    )
    (speed,) = [t for t in result.tests if t.tier == "speed"]
    assert speed.status == "pass", speed.message
    assert result.timings["speed_ms"] > 0 and result.timings["speed_tflops"] > 0
    with History() as h:
        assert h.best_speeds()["flash-attention-triton"]["speed_ms"] == result.timings["speed_ms"]


def test_the_speed_tiers_process_compiles_for_the_gpu_not_the_interpreter():
    """What a machine without a GPU can check of the tier: its candidate process (the native
    zygote's) loads the file with compiled, not interpreted, kernels (a CPU launch then finds
    no GPU driver), and timing is refused there without CUDA and anywhere in an interpreting
    process."""
    from attnkata.checker.proxy import Candidate, CandidateRaised, Limits

    path = REPO / "reference" / "triton_softmax.py"
    x = torch.randn(4, 10)
    with Candidate(path, Limits(call_timeout=60, total_timeout=120), native=True) as native:
        native.start()
        assert native.load_error is None and native.isolation["backend"]
        # (without a GPU: no driver; with one: a CPU tensor its compiled kernel cannot read)
        with pytest.raises(CandidateRaised, match="active drivers|cannot be accessed|cpu"):
            native.call("softmax_triton", (x,))
        if not torch.cuda.is_available():
            with pytest.raises(CandidateRaised, match="no CUDA device"):
                native.speed("softmax_triton", (x,))
    with Candidate(path, Limits()) as interpreting:
        with pytest.raises(CandidateRaised, match="compiles for the GPU"):
            interpreting.speed("softmax_triton", (x,))
        assert interpreting.call("softmax_triton", (x,)).trace["triton"]["launches"] == 1


def test_history_keeps_the_best_speed_per_kata():
    from attnkata.checker.store import History

    with History() as h:
        h.record_attempt("flash-attention-triton", "pass", 13, 14, 9.0, "f.py")
        h.record_speed(
            "flash-attention-triton", {"speed_ms": 2.0, "speed_speedup": 0.5, "load": 1.0}
        )
        h.record_speed("flash-attention-triton", {"speed_ms": 1.5, "speed_speedup": 0.7})
        best = h.best_speeds()
    assert best == {"flash-attention-triton": {"speed_ms": 1.5, "speed_speedup": 0.7}}
    res = runner.invoke(app, ["history"])
    assert "flash-attention-triton 1.500 ms (0.70x" in res.stdout


# -- the replies ------------------------------------------------------------------------------
def test_a_hostile_triton_report_is_clipped_or_refused():
    event = {
        "op": "load",
        "line": 3,
        "tensor": "x" * 5000,
        "label": "argument 0",
        "region": "after",
        "masked": False,
        "lanes": 2,
        "programs": 1,
        "program": [0, 0, 0, 9, 9],
        "shape": [8],
        "lane_map": [[True] * 100] * 100,
        "active_map": [],
    }
    reply = {"ok": True, "value": 1, "trace": {"triton": {"launches": 1, "outside": [event]}}}
    clean = replies.clean(reply, "call")["trace"]["triton"]
    e = clean["outside"][0]
    assert len(e["tensor"]) <= replies.NAME_CHARS and e["program"] == [0, 0, 0]
    assert len(e["lane_map"]) == 16 and len(e["lane_map"][0]) == 16
    for bad in ({"launches": "many"}, {"outside": [{"lanes": "x"}]}, {"loaded": {"k": 1.5}}):
        with pytest.raises(replies.BadReply):
            replies.clean({"ok": True, "trace": {"triton": bad}}, "call")
