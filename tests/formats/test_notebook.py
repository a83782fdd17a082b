"""Jupyter notebooks (trainproof.formats.notebook): written and validated by nbformat, the
library Jupyter and Colab write them with. A notebook's cells' outputs are read as a
console capture: stream prints, HF Trainer's notebook table (HTML), a traceback; its code
and markdown are not; a notebook that trained nothing is no log."""

from __future__ import annotations

import math
import os
import random
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
from nbformat import v4  # noqa: E402

from trainproof.api import judge, read_runlog  # noqa: E402
from trainproof.formats import detect  # noqa: E402

from conftest import run_cli  # noqa: E402


def _losses(n: int, seed: int = 0, noise: float = 0.03) -> list[float]:
    rnd = random.Random(seed)
    return [(2.0 * math.exp(-i / (n / 4)) + 0.6) * (1 + rnd.gauss(0, noise)) for i in range(n)]


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    """The HTML transformers' NotebookProgressCallback displays: a progress line, then a
    pandas-style table (``<table border="1" class="dataframe">``, one ``<tr>`` per row)."""
    head = "".join(f"      <th>{h}</th>\n" for h in header)
    body = "".join("    <tr>\n" + "".join(f"      <td>{c}</td>\n" for c in r) + "    </tr>\n" for r in rows)
    return (
        "\n    <div>\n      \n      <progress value='60' max='60' style='width:300px; height:20px; "
        "vertical-align: middle;'></progress>\n      [60/60 00:45, Epoch 0/1]\n    </div>\n"
        '    <table border="1" class="dataframe">\n  <thead>\n <tr style="text-align: left;">\n'
        f"{head}    </tr>\n  </thead>\n  <tbody>\n{body}  </tbody>\n</table><p>"
    )


def _write(tmp_path: Path, cells: list, name: str = "train.ipynb") -> Path:
    nb = v4.new_notebook(cells=cells)
    nbformat.validate(nb)
    p = tmp_path / name
    nbformat.write(nb, str(p))
    return p


def _setup_cells() -> list:
    return [
        v4.new_markdown_cell("# Fine-tune\nSet `lr = 0` to freeze the model (loss: 0.0)."),
        v4.new_code_cell("lr = 2e-4\nprint('loss', 0.0)", outputs=[]),
        v4.new_code_cell(
            "model = load()",
            outputs=[v4.new_output("stream", name="stderr", text="Loading checkpoint shards: 100%|█| 2/2\n")],
        ),
    ]


def _hf_table_cell(losses: list[float]) -> object:
    rows = [[str(i), f"{v:.6f}"] for i, v in enumerate(losses, 1)]
    html = _html_table(["Step", "Training Loss"], rows)
    out = v4.new_output("display_data", data={"text/html": html, "text/plain": "<IPython.core.display.HTML object>"})
    return v4.new_code_cell("trainer.train()", outputs=[out])


@pytest.mark.parametrize("n", [40, 300])
@pytest.mark.parametrize("seed", [0, 1])
def test_hf_notebook_table_is_read_and_a_healthy_run_passes(tmp_path: Path, n: int, seed: int) -> None:
    p = _write(tmp_path, _setup_cells() + [_hf_table_cell(_losses(n, seed))])
    assert detect(p).name == "notebook"
    r = judge(p)
    assert (r.format, r.records, r.verdict) == ("notebook", n, "PASS"), [f.id for f in r.findings]


def test_hf_notebook_table_with_nan_fails(tmp_path: Path) -> None:
    losses = _losses(100)[:60] + [float("nan")] * 40
    r = judge(_write(tmp_path, _setup_cells() + [_hf_table_cell(losses)]))
    assert r.verdict == "FAIL" and "TP-NAN" in [f.id for f in r.findings]


def test_stream_prints_of_a_plain_loop_are_read(tmp_path: Path) -> None:
    losses = _losses(50, 2)
    text = "".join(f"epoch {i // 25} step {i * 10} loss {v:.4f}\n" for i, v in enumerate(losses))
    cell = v4.new_code_cell("train()", outputs=[v4.new_output("stream", name="stdout", text=text)])
    run = read_runlog(_write(tmp_path, _setup_cells() + [cell]))
    loss = run.get("loss")
    assert loss is not None and len(loss.values) == 50
    assert loss.steps[-1] == 490


def test_hf_log_dicts_with_lr_zero_fail_zero_lr(tmp_path: Path) -> None:
    rnd = random.Random(3)
    lines = "".join(
        f"{{'loss': {2.3 + rnd.gauss(0, 0.02):.4f}, 'grad_norm': 0.91, 'learning_rate': 0.0, 'epoch': {i / 30:.2f}}}\n"
        for i in range(1, 31)
    )
    cell = v4.new_code_cell("trainer.train()", outputs=[v4.new_output("stream", name="stdout", text=lines)])
    r = judge(_write(tmp_path, [cell]))
    assert r.verdict == "FAIL" and "TP-ZERO-LR" in [f.id for f in r.findings]


def test_an_error_output_after_the_prints_is_the_crash(tmp_path: Path) -> None:
    text = "".join(f"step {i * 10} loss {v:.4f}\n" for i, v in enumerate(_losses(40, 4)))
    err = v4.new_output(
        "error",
        ename="OutOfMemoryError",
        evalue="CUDA out of memory. Tried to allocate 2.00 GiB",
        traceback=[
            "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
            "\x1b[0;31mOutOfMemoryError\x1b[0m                          Traceback (most recent call last)",
            "Cell \x1b[0;32mIn[7], line 1\x1b[0m\n\x1b[0;32m----> 1\x1b[0m trainer\x1b[38;5;241m.\x1b[39mtrain()",
        ],
    )
    stream = v4.new_output("stream", name="stdout", text=text)
    r = judge(_write(tmp_path, [v4.new_code_cell("train()", outputs=[stream, err])]))
    assert "TP-RUN-CRASHED" in [f.id for f in r.findings], [f.id for f in r.findings]


def test_code_and_markdown_are_not_read(tmp_path: Path) -> None:
    """A notebook that only defines a loop (no outputs) is no log, though its source and
    its markdown print-like lines name a loss."""
    cells = [
        v4.new_markdown_cell("step 10 loss 2.31\nstep 20 loss 2.10\n" * 10),
        v4.new_code_cell("for step in range(100):\n    print(f'step {step} loss {loss:.4f}')"),
    ]
    p = _write(tmp_path, cells, "analysis.ipynb")
    assert judge(p).verdict == "NOT-CHECKED"


def test_doctor_skips_a_notebook_that_trained_nothing(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    cells = [
        v4.new_code_cell("df.describe()", outputs=[v4.new_output("execute_result", data={"text/plain": "count 3"})])
    ]
    _write(root, cells, "explore.ipynb")
    _write(root, _setup_cells() + [_hf_table_cell(_losses(60))], "finetune.ipynb")
    code, _, _, doc = run_cli("doctor", str(root), "--json")
    files = {os.path.basename(r["file"]): r["verdict"] for r in doc["reports"]}
    assert files == {"finetune.ipynb": "PASS"}, files
    assert code == 0


def test_a_notebook_over_the_cap_is_not_read(tmp_path: Path, monkeypatch) -> None:
    from trainproof.formats import notebook

    p = _write(tmp_path, _setup_cells() + [_hf_table_cell(_losses(60))])
    monkeypatch.setattr(notebook, "MAX_BYTES", p.stat().st_size - 1)
    r = judge(p)
    assert r.verdict == "NOT-CHECKED" and "MiB is not read" in (r.error or ""), r.error


def test_a_json_config_is_not_taken_for_a_notebook(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    p.write_text('{"cells": [1, 2, 3], "loss": [0.5, 0.4]}')
    assert detect(p) is None or detect(p).name != "notebook"
