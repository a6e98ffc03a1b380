"""The notebook front end, in a real Jupyter kernel (nbclient): `%load_ext attnkata`, `%%kata`
cells with a wrong and a right solution, the Python API, and a cell that never ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "practice.ipynb"


def _text(cell) -> str:  # noqa: ANN001
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out["text"])
        for mime in ("text/html", "text/plain", "text/markdown"):
            if mime in out.get("data", {}):
                parts.append(out["data"][mime])
    return "\n".join(parts)


@pytest.mark.slow
def test_the_example_notebook_runs_in_a_kernel_and_names_the_mistake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KATA_HOME", str(tmp_path / "home"))
    nb = nbformat.read(EXAMPLE, as_version=4)
    # Beyond the example: a cell that never ends, then proof the kernel still answers.
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "%%kata sdpa --timeout 1\ndef scaled_dot_product_attention(q, k, v, mask=None, scale=None):\n"
            "    return q\n\n\nwhile True:\n    pass\n"
        )
    )
    nb.cells.append(
        nbformat.v4.new_code_cell("print('kernel alive', GroupedQueryAttention.__name__)")
    )
    client = nbclient.NotebookClient(
        nb, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    cells = [c for c in nb.cells if c.cell_type == "code"]
    statement, wrong, fixed, api, loop, alive = (_text(cells[i]) for i in range(1, 7))
    assert "Grouped" in statement or "GQA" in statement
    assert "kv-repeat-instead-of-interleave" in wrong and "FAIL" in wrong and "<table" in wrong
    assert "repeat(1, n_rep, 1, 1)" in wrong  # the candidate's own line, shown
    assert "PASS" in fixed and "kv-repeat" not in fixed
    assert api.strip().splitlines()[-1].startswith("fail ['fully-masked-row-uniform'")
    assert "TIMEOUT" in loop and "not run in the kernel" in loop
    assert "kernel alive GroupedQueryAttention" in alive  # the fixed cell also ran in the kernel

    from attnkata.checker.store import History

    with History(tmp_path / "home" / "history.sqlite3") as h:
        modes = {(a["kata"], a["mode"], a["status"]) for a in h.attempts(limit=20)}
    assert ("gqa", "notebook", "fail") in modes and ("gqa", "notebook", "pass") in modes


def test_magic_usage_errors_are_messages_not_tracebacks(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("IPython")
    from IPython.testing.globalipapp import get_ipython

    from attnkata.cli.notebook import KataMagics

    ip = get_ipython()
    magics = KataMagics(ip)
    magics.kata("frobnicate")
    magics.kata("show no-such-kata")
    magics.kata("", "x = 1")
    out = capsys.readouterr().out
    assert "usage: %kata" in out and "usage: %%kata KATA" in out
    assert "Traceback" not in out
    json.dumps(out)  # plain text
