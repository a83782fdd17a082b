"""A 0.0 in a loss printed at d decimals is a value below half the rounding step, not an
exact zero: HF Trainer before 4.46 logs ``round(loss, 4)``, so a fine-tune at its floor
logs 0.0001, 0.0002 and 0.0. Generated variants at 4 and 6 decimals, 30 to 2,000 points,
zeros at the end and mixed in; the negatives are the zero-loss failures the rules exist
for (a NaN hidden as 0 after an ordinary level, masked batches among ordinary losses, a
loss that is 0 throughout), which rounding does not explain."""

from __future__ import annotations

import numpy as np
import pytest

from trainproof.rules._stats import rounding_step

from conftest import judge_cols


def test_rounding_step_is_the_coarsest_decimal_step_the_values_fit():
    assert rounding_step(np.array([0.1234, 2.5, 0.0001, 0.0])) == pytest.approx(1e-4)
    assert rounding_step(np.array([1.234567, 0.000001, 3.0])) == pytest.approx(1e-6)
    assert rounding_step(np.array([2.0, 3.0, 1.0])) == 1.0
    assert rounding_step(np.array([0.12345678912, 1.0, 2.0])) is None  # full precision
    assert rounding_step(np.array([np.float32(0.3), 0.1, 0.2])) is None  # a float32 value
    assert rounding_step(np.array([0.1, np.nan])) is None  # fewer than 3 finite values
    # the same decimals stored as float32 (a TensorBoard event file: 0.0001 is 9.99999974e-05)
    assert rounding_step(np.float32([0.1234, 2.5, 0.0001, 0.0]).astype(float)) == pytest.approx(1e-4)
    assert rounding_step(np.float32([0.986, 0.25, 1.5]).astype(float)) == pytest.approx(1e-3)
    # float32 values at full precision fit no step coarser than float32's own digits
    full = np.float32(np.random.default_rng(0).uniform(0.01, 5.0, 200)).astype(float)
    assert rounding_step(full) is None or rounding_step(full) <= 1e-7


def _floor_run(n, decimals, seed, zeros_at_end):
    """A fine-tune falling to a floor of a few rounding steps, printed at ``decimals``."""
    rng = np.random.default_rng(seed)
    q = 10.0**-decimals
    t = np.arange(n) / n
    loss = (0.8 * np.exp(-25 * t) + 1.2 * q) * np.exp(0.4 * rng.standard_normal(n))
    loss = np.round(loss, decimals)
    if zeros_at_end:
        loss[-max(5, n // 10) :] = np.round(rng.uniform(0, 0.49 * q, max(5, n // 10)), decimals)
    else:  # batches at the floor whose loss is under half a step, among ones just above it
        loss[n // 2 :: 7] = np.round(rng.uniform(0, 0.49 * q, loss[n // 2 :: 7].size), decimals)
    return loss


@pytest.mark.parametrize("n", [30, 200, 2000])
@pytest.mark.parametrize("decimals", [4, 6])
@pytest.mark.parametrize("zeros_at_end", [True, False])
@pytest.mark.parametrize("stored", [np.float64, np.float32])
def test_zeros_of_a_rounded_loss_at_its_floor_are_not_zero_loss_failures(n, decimals, zeros_at_end, stored):
    # float32: HF's TensorBoard callback writes the same rounded values into an event file
    # (a corpus log rewritten by SummaryWriter FAILed TP-ZERO-LOSS-ONSET where its JSON PASSed)
    loss = _floor_run(n, decimals, n + decimals, zeros_at_end).astype(stored).astype(float)
    assert (loss == 0).sum() >= 3
    rep = judge_cols(loss=loss.tolist())
    assert not {"TP-ZERO-LOSS-ONSET", "TP-ZERO-LOSS-MIXED", "TP-ZERO-LOSS"} & set(rep.ids()), rep.ids()
    assert rep.verdict.value in ("PASS", "WARN"), rep.ids()  # judged, not left NOT-CHECKED
    assert any("below the rounding step" in n for n in rep.notes)


@pytest.mark.parametrize("decimals", [2, 4])
@pytest.mark.parametrize("n", [40, 300])
def test_a_loss_that_walks_down_the_print_steps_to_zero_is_rounding(decimals, n):
    # A full-batch LBFGS fit converging below half a step, printed at `decimals`: ...,
    # 4, 3, 2, 1 steps, then 0.0 held for most of the run (a new user's regression printed
    # with {:.4f} FAILed TP-ZERO-LOSS-ONSET). The values right next to the zeros are one step.
    q = 10.0**-decimals
    loss = np.round(
        np.r_[0.16 * np.exp(-np.arange(12) / 1.2) + 4 * q * np.exp(-np.arange(12) / 3), np.zeros(n - 12)], decimals
    )
    loss[loss > 0] = np.maximum(loss[loss > 0], q)
    assert q in loss and (loss == 0).sum() > n // 2
    rep = judge_cols(loss=loss.tolist())
    assert not {"TP-ZERO-LOSS-ONSET", "TP-ZERO-LOSS-MIXED", "TP-ZERO-LOSS"} & set(rep.ids()), rep.ids()
    assert any("below the rounding step" in x for x in rep.notes)
    # the same descent that stops two steps up and drops to 0.0 in one log still fails
    jump = loss.copy()
    jump[jump == q] = 2 * q
    jump = np.round(np.where((jump > 0) & (jump < 3 * q), 3 * q, jump), decimals)
    assert "TP-ZERO-LOSS-ONSET" in judge_cols(loss=jump.tolist()).ids()


@pytest.mark.parametrize(
    "case,rule",
    [
        ("hidden_nan", "TP-ZERO-LOSS-ONSET"),
        ("masked_batches", "TP-ZERO-LOSS-MIXED"),
        ("all_zero", "TP-ZERO-LOSS"),
        ("onset_from_a_few_steps", "TP-ZERO-LOSS-ONSET"),
        ("onset_from_ten_steps", "TP-ZERO-LOSS-ONSET"),
    ],
)
def test_zeros_that_rounding_cannot_explain_still_fail(case, rule):
    rng = np.random.default_rng(4)
    n = 200
    loss = np.round(2.0 * np.exp(-np.arange(n) / 150) * np.exp(0.05 * rng.standard_normal(n)), 4)
    if case == "hidden_nan":  # HF's NaN filter writes 0.0 after an ordinary level
        loss[150:] = 0.0
    elif case == "masked_batches":
        loss[rng.choice(n, 20, replace=False)] = 0.0
    elif case == "all_zero":
        loss[:] = 0.0
    else:
        # a loss held 3-4 steps (0.003-0.004 at 3 decimals) or 10 steps (0.10 at 2) above 0
        # that drops to 0.0 in one log and stays: no value below half a step explains it
        d, level = (3, 0.0035) if case == "onset_from_a_few_steps" else (2, 0.10)
        loss = np.round(np.r_[np.linspace(2.0, level, 60), level * np.exp(0.1 * rng.standard_normal(80))], d)
        loss[140:] = 0.0
        loss = np.r_[loss, np.zeros(60)]
    rep = judge_cols(loss=loss.tolist())
    assert rule in rep.ids() and rep.verdict.value == "FAIL"
    assert not any("below the rounding step" in x for x in rep.notes)


@pytest.mark.parametrize("zeros_at_end", [True, False])
def test_a_rounded_floor_written_by_summary_writer_is_judged_as_its_json(tmp_path, zeros_at_end):
    # HF's TensorBoard callback logs round(loss, 4) through a real SummaryWriter: float32
    from trainproof.api import judge

    tb = pytest.importorskip("torch.utils.tensorboard")
    loss = _floor_run(300, 4, 7, zeros_at_end)
    w = tb.SummaryWriter(str(tmp_path / "runs"))
    for i, x in enumerate(loss):
        w.add_scalar("train/loss", float(x), 10 * (i + 1))
    w.close()
    (event,) = (tmp_path / "runs").glob("events.out.tfevents.*")
    rep = judge(event)
    assert not {"TP-ZERO-LOSS-ONSET", "TP-ZERO-LOSS-MIXED", "TP-ZERO-LOSS"} & set(rep.ids()), rep.ids()
    assert any("below the rounding step" in x for x in rep.notes)
