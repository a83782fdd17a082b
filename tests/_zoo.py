"""A zoo of generated training runs: healthy shapes calibrated on the shared corpus, and
broken kinds with a known onset, to judge the rules on distributions of runs, not on files.

Public API:

* :func:`healthy` ``(rng, shape=None) -> GeneratedRun``: a healthy run of one of
  :data:`HEALTHY_SHAPES` (drawn when ``shape`` is ``None``).
* :func:`broken` ``(kind, rng, onset_share) -> GeneratedRun``: a run of one of
  :data:`BROKEN_KINDS`, broken from its onset on; ``onset_share`` is the share of the run's
  points after the onset (ignored by the kinds broken from the first step: ``lr_zero``).
* :func:`to_runlog` ``(run) -> RunLog``: the run as trainproof's reader stream gives it
  (the record stream through :func:`trainproof.runlog.build_runlog`), to judge in-process.
* :func:`write` ``(run, fmt, dir) -> Path``: the run written as a real log
  (:data:`FORMATS`: JSONL, CSV, HF ``trainer_state.json``, console text).
* :func:`measure` ``(steps, loss, eval_steps)``: the calibration measures of one loss curve,
  the same function ``bench/zoo_calibrate.py`` runs over the corpus.

A run is a stream of logged rows in the order written (steps may go back: a resumed run),
each row carrying some of the metrics ``loss``, ``learning_rate``, ``grad_norm`` and
``eval_loss`` (:attr:`GeneratedRun.cols`, with :attr:`GeneratedRun.has` saying which rows
hold each: a metric absent from a row is not NaN). Every random draw comes from the
``rng`` given, and every drawn parameter is kept in :attr:`GeneratedRun.params`, so a run is
reproduced from its seed and read from its parameters.

Calibration: ``PYTHONPATH=src python bench/zoo_calibrate.py`` measured the 103 healthy
corpus files that have a positive train loss (of 110 labelled healthy; the table is in
``evidence/zoo.md``). Each parameter range below cites the corpus measure it comes from as
``[pXX..pYY]`` (percentiles over those files) of that measure.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# --- calibration measures (shared with bench/zoo_calibrate.py) --------------------------

#: The measures, in print order, and what each one is.
MEASURES = {
    "points": "finite train-loss points",
    "log_every": "median step interval between loss points",
    "eval_points": "eval-loss points (0: none)",
    "eval_every_logs": "median eval interval / loss interval (runs with >= 2 evals)",
    "noise": "relative noise: 1.4826*MAD of log-loss residuals around a rolling median of the neighbours",
    "noise_diff": "relative noise as the rules read it: 1.4826*MAD of first differences of log-loss / sqrt 2",
    "noise_std": "std of the same residuals (heavier tails show here)",
    "ac1": "lag-1 autocorrelation of the residuals",
    "spike_rate": "share of points more than 4 robust sigmas above the rolling median",
    "fall": "ln(first level / last level), levels = median of the first / last 5% (>= 3 pts)",
    "fall_over_noise": "fall / noise_diff",
    "fast_share": "share of the run (steps) until the smoothed log-loss has done 80% of its fall",
    "late_fall": "share of the fall done in the second half of the run (plateau: near 0)",
    "loss_level": "median loss (scale)",
}


def rolling_median(x: np.ndarray, w: int, leave_out: bool = False) -> np.ndarray:
    """Centred running median of odd width ``w`` (edges padded with the edge values);
    ``leave_out``: of the ``w - 1`` neighbours only, so that a short window's residuals are
    not exactly 0 at the points that are their window's median."""
    h = w // 2
    p = np.concatenate([np.full(h, x[0]), x, np.full(h, x[-1])])
    win = np.lib.stride_tricks.sliding_window_view(p, w)
    if leave_out:
        win = np.delete(win, h, axis=1)
    return np.median(win, axis=1)


def window_of(n: int) -> int:
    """The rolling-median width for ``n`` points: about 5% of the run, odd, in [5, 51]."""
    return int(min(51, max(5, (n // 20) | 1)))


def measure(steps: np.ndarray, loss: np.ndarray, eval_steps: np.ndarray | None = None) -> dict[str, float]:
    """The calibration measures (:data:`MEASURES`) of one train-loss curve.

    Args:
        steps, loss: shape ``(n,)``, the finite points, sorted by step.
        eval_steps: steps of the finite eval-loss points, or ``None``.

    Returns:
        measure name -> value; NaN where it cannot be measured (the noise and shape measures
        of a loss with values <= 0, which has no logarithm, or of fewer than 10 points; the
        shape measures of a run whose fall is within the noise of its end levels).
    """
    n = loss.size
    out = dict.fromkeys(MEASURES, float("nan"))
    out["points"] = float(n)
    out["loss_level"] = float(np.median(loss)) if n else float("nan")
    d = np.diff(steps)
    d = d[d > 0]
    out["log_every"] = float(np.median(d)) if d.size else float("nan")
    ne = 0 if eval_steps is None else int(eval_steps.size)
    out["eval_points"] = float(ne)
    if ne >= 2 and d.size:
        de = np.diff(eval_steps)
        de = de[de > 0]
        if de.size:
            out["eval_every_logs"] = float(np.median(de) / np.median(d))
    if n < 10 or np.any(loss <= 0):
        return out
    x = np.log(loss)
    w = window_of(n)
    r = x - rolling_median(x, w, leave_out=True)
    mad = 1.4826 * float(np.median(np.abs(r - np.median(r))))
    out["noise"] = mad
    out["noise_std"] = float(np.std(r))
    dx = np.diff(x)
    nd = 1.4826 * float(np.median(np.abs(dx - np.median(dx)))) / math.sqrt(2)
    out["noise_diff"] = nd
    rc = r - r.mean()
    den = float(np.dot(rc, rc))
    out["ac1"] = float(np.dot(rc[1:], rc[:-1]) / den) if den > 0 else float("nan")
    out["spike_rate"] = float(np.mean(r > 4 * mad)) if mad > 0 else 0.0
    k = max(3, int(round(0.05 * n)))
    first, last = float(np.median(x[:k])), float(np.median(x[-k:]))
    fall = first - last
    out["fall"] = fall
    out["fall_over_noise"] = fall / nd if nd > 0 else float("nan")
    # The shape measures need a fall larger than the noise of the two end levels.
    if fall > 3 * mad * 1.25 / math.sqrt(k):
        smooth = rolling_median(x, w)
        target = first - 0.8 * (first - float(smooth.min()))
        i = int(np.argmax(smooth <= target))
        span = float(steps[-1] - steps[0]) or 1.0
        out["fast_share"] = float((steps[i] - steps[0]) / span)
        mid = int(np.searchsorted(steps, steps[0] + span / 2))
        mid_level = float(np.median(x[max(0, mid - k // 2) : mid + k // 2 + 1]))
        out["late_fall"] = float((mid_level - last) / fall)
    return out


#: Each generator parameter, the range used, and the corpus measure it comes from
#: (``[pXX..pYY]``: percentiles over the healthy corpus files; evidence/zoo.md prints it).
PARAMETER_SOURCES = (
    (
        "points n",
        "80% log-normal (median 150, sd 1.5 in log), 20% log-uniform 5..100,000",
        "points p10..p90 = 25..2,000, median 150, max 24,000",
    ),
    ("log interval", "1, 2, 5, 10, 20, 25, 50, 100, 200, 500 steps", "log_every min..p90 = 1..100, median 10"),
    (
        "eval cadence",
        "every 1, 2, 4, 5, 10, 13, 20, 50, 100 points (40% of runs; >= 4 evals)",
        "eval_every_logs min..p90 = 1..100, median 5; 47% of files evaluate",
    ),
    (
        "noise sigma (log)",
        "80% log-uniform 0.005..0.25, 10% 0.0007..0.005, 10% 0.25..0.6",
        "noise_diff p10..p90 = 0.0075..0.225, min 0.00075, max 0.63",
    ),
    (
        "AR(1) phi",
        "90% 0..0.3, 10% 0.6..0.85 (then sigma <= 0.1)",
        "ac1 p10..p90 = -0.39..0.06, max 0.75 (white noise reads -0.1..-0.3)",
    ),
    ("heavy tails", "50% Student-t, df 2.5..10", "noise_std / noise median 1.24, p90 2.5"),
    (
        "isolated spikes",
        "30% of runs: rate 1e-4..0.02, 1.5x..(2..30)x, recovering at once",
        "spike_rate p75..p90 = 0.011..0.058, max 0.15; GPT/PINN jumps 3.7-28x",
    ),
    (
        "fall (decays)",
        "log-uniform 0.15..8 (and >= 4 s.e. of the 10% end levels)",
        "fall p10..max = 0.09..8.9, median 0.85",
    ),
    ("decay time tau", "exp 0.02..0.6; power 0.003..0.2, exponent 0.5..2", "fast_share p10..p90 = 0.19..0.78"),
    (
        "slow learner",
        "fall ln(1/0.95)..ln(1/0.9), sigma <= fall/4, n >= 30",
        "gpt2-poem fall 0.084 / noise 0.039; nsllm 0.049 / 0.0016",
    ),
    (
        "at the floor",
        "drift -1%..+3%, 1-3 first points still coming down",
        "qwen-lora-plateau 0.022, vits-bangla-resume -0.012, unsloth-restarts 0.041",
    ),
    (
        "loss scale",
        "end level log-uniform 1e-4..1e3; NLL: A 0.5..1000, offset -0.2A..-2A",
        "loss_level min..max = 1e-4..36 (and ELBO ~1000, GRPO 1e-4)",
    ),
    (
        "peak lr",
        "log-uniform 5e-6..0.3, warm-up 0..10% (60% of runs)",
        "above tiny_lr 1e-7; warm-up 3-10% (dead_min_schedule_share)",
    ),
    (
        "grad norm level",
        "log-uniform 0.01..1e5, first norm 1-20x",
        "LoRA 0.1, Whisper 17.9, TrOCR 2e5; big first norms in most files",
    ),
    ("eval gap / noise", "gap 0..30%, sd 0.002..0.05", "median change between evals 2.2%, quartiles 0.8%..6.8%"),
)

# --- the run ----------------------------------------------------------------------------

#: Metric keys as the logs write them (HF's names); ``loss`` is the train loss.
KEYS = ("loss", "learning_rate", "grad_norm", "eval_loss", "eval_accuracy")

HEALTHY_SHAPES = (
    "exp",  # exponential decay: a fast first drop, then a plateau
    "power",  # power-law decay
    "slow",  # a slow learner: 5-10% fall over the whole run, steadily
    "floor",  # a fine-tune at its floor: the loss fell before the first log, then holds
    "stepdown",  # one step down (a distillation loss, a loss-weight switch), then holds
    "staircase",  # step lr schedule: a drop at each lr step
    "restarts",  # cosine with warm restarts: the loss bumps up at each restart
    "cyclic",  # cyclic / sawtooth lr: the loss ripples with it
    "negative",  # an NLL of a continuous density: crosses 0 and ends negative
)
#: Draw weights of the healthy shapes (the decays are most of the corpus).
SHAPE_WEIGHTS = (0.22, 0.18, 0.1, 0.1, 0.06, 0.08, 0.08, 0.08, 0.1)

#: Broken kinds and the verdict they should get: FAIL kinds must FAIL, WARN kinds WARN or FAIL.
BROKEN_KINDS = {
    "diverge": "FAIL",
    "nan": "FAIL",
    "lr_zero": "FAIL",
    "chance": "FAIL",
    "frozen": "FAIL",
    "overfit": "WARN",
    "spike": "WARN",
}

FORMATS = ("jsonl", "csv", "hf", "console")


@dataclass
class GeneratedRun:
    """One generated run as the stream of rows a logger wrote.

    Attributes:
        kind: ``"healthy"`` or a key of :data:`BROKEN_KINDS`.
        shape: the healthy shape the run is (or was, before it broke).
        params: every drawn parameter (JSON-able), ``seed`` among them when the run was made
            by :func:`from_seed`.
        steps: float64 ``(rows,)``, the step of each row in the order written.
        cols: key -> float64 ``(rows,)`` values (meaningful only where ``has``).
        has: key -> bool ``(rows,)``: the rows that log the key.
        onset_share: share of the points after the onset (0 for healthy runs).
        onset_step: the first broken step, or ``None``.
        meta: declared intent a real log would carry (HF ``max_steps``).
    """

    kind: str
    shape: str
    params: dict
    steps: np.ndarray
    cols: dict[str, np.ndarray]
    has: dict[str, np.ndarray]
    onset_share: float = 0.0
    onset_step: float | None = None
    meta: dict = field(default_factory=dict)

    @property
    def expected(self) -> str:
        """``PASS`` (no FAIL expected), ``FAIL``, ``WARN`` or ``NONE`` (not scored). A run
        stuck at chance is a FAIL only where the log can say so: an accuracy at 1/k for k up
        to 10 (the classes TP-CHANCE-LEVEL names); a loss at ln k alone is a WARN (a loss of
        another kind settles there too: ``chance_fail_max_classes``); above 10 classes
        nothing in the log names the level (ln 11 / ln 10 = 1.04), and a loss that fell to
        it and holds is the shape of a healthy run at its floor: not scored."""
        if self.kind == "healthy":
            return "PASS"
        if self.kind == "chance" and self.params["classes"] > 10:
            return "NONE"
        if self.kind == "chance" and "eval_examples" not in self.params:
            return "WARN"
        return BROKEN_KINDS[self.kind]

    def series(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, values)`` of ``key`` as a reader keeps it: rows logging it, a resumed
        segment's rows replacing the earlier rows of the same steps, sorted by step."""
        m = self.has.get(key)
        if m is None or not m.any():
            return np.empty(0), np.empty(0)
        st, v = self.steps[m], self.cols[key][m]
        seg = np.concatenate([[0], np.cumsum(np.diff(self.steps) < 0)])[m]
        keep = np.ones(st.size, dtype=bool)
        for s in np.unique(seg)[1:]:
            lo = st[seg == s].min()
            keep &= ~((seg < s) & (st >= lo))
        order = np.argsort(st[keep], kind="stable")
        return st[keep][order], v[keep][order]

    def describe(self) -> str:
        """One line with the shape and the parameters that most decide a verdict."""
        p = self.params
        keys = ("seed", "n", "every", "fall", "sigma", "phi", "df", "spike_rate", "scale", "lr_schedule")
        keys += _KIND_KEYS.get(self.kind, ())
        shown = ", ".join(f"{k}={_short(p[k])}" for k in keys if k in p)
        return f"{self.kind}/{self.shape}: {shown}"


#: The parameters of each broken kind that :meth:`GeneratedRun.describe` shows too.
_KIND_KEYS = {
    "diverge": ("rise", "ramp_share"),
    "lr_zero": ("lr_value",),
    "chance": ("classes", "chance_sigma", "start_factor", "eval_examples"),
    "frozen": ("frozen_exact", "frozen_rel"),
    "overfit": ("eval_rise", "eval_every", "train_fall_after"),
    "spike": ("burst_points", "spike_log", "settle"),
}


def _short(v) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


# --- drawing helpers --------------------------------------------------------------------


def _logu(rng, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _draw_points(rng, lo: int = 5) -> int:
    """Points of loss: 80% like the corpus (log-normal, median 150, 10%..90% about 25..2,000:
    corpus ``points`` [p10..p90] = [25..2000], median 150), 20% log-uniform over 5..100,000
    (the task's range; the corpus's longest is 24,000)."""
    if rng.random() < 0.8:
        n = int(round(math.exp(rng.normal(math.log(150), 1.5))))
    else:
        n = int(round(_logu(rng, 5, 100_000)))
    return int(min(100_000, max(lo, n)))


#: Logging intervals (steps between loss points): corpus ``log_every`` [min..p90] = [1..100],
#: median 10, max 8,192; 500 is the largest the task asks for.
LOG_EVERY = (1, 1, 1, 2, 5, 10, 10, 20, 25, 50, 100, 200, 500)
#: Evaluation cadence in loss points: corpus ``eval_every_logs`` [min..p90] = [1..100].
EVAL_EVERY = (1, 1, 2, 4, 5, 10, 13, 20, 50, 100)


def _draw_noise(rng) -> dict:
    """The noise parameters of a run (log-space, relative to the level).

    * ``sigma``: robust sd of the log-loss noise. Corpus ``noise_diff`` [p10..p90] =
      [0.0075..0.225], min 0.00075, max 0.63: 80% log-uniform over [0.005, 0.25], 10% over
      the low tail [0.0007, 0.005], 10% over the high tail [0.25, 0.6].
    * ``phi``: AR(1) coefficient of the noise. Corpus ``ac1`` of residuals [p10..p90] =
      [-0.39..0.06] (white noise around a rolling median of the neighbours gives about
      -0.1..-0.3), max 0.75 (a PINN and a running-average loss): 90% in [0, 0.3], 10% in
      [0.6, 0.85].
    * ``df``: Student-t degrees of freedom of the innovations (heavy tails; ``0`` = normal).
      Corpus ``noise_std`` / ``noise`` median 1.24, p90 2.5 (heavier than normal's 1.0 in most
      files): 50% t with df in [2.5, 10], 50% normal.
    * ``spike_rate``, ``spike_max``: isolated spikes that recover at once. Corpus
      ``spike_rate`` (points > 4 robust sigmas up) [p75..p90] = [0.011..0.058], max 0.15,
      and the healthy GPT and PINN runs jump 3.7-28x their trailing level: 30% of runs get
      spikes at a rate log-uniform in [1e-4, 0.02], each 1.5x to ``spike_max`` in [2, 30]x.
    """
    u = rng.random()
    if u < 0.1:
        sigma = _logu(rng, 0.0007, 0.005)
    elif u < 0.9:
        sigma = _logu(rng, 0.005, 0.25)
    else:
        sigma = _logu(rng, 0.25, 0.6)
    phi = float(rng.uniform(0.0, 0.3) if rng.random() < 0.9 else rng.uniform(0.6, 0.85))
    if phi >= 0.6:
        # The corpus's two strongly autocorrelated files (csv-pinn-headerless-3col, ac1 0.83;
        # csv-oedometer-mse-3000-epochs, 0.75) have noise 0.08-0.12: a wandering loss is
        # not also a very noisy one there.
        sigma = min(sigma, 0.1)
    df = float(rng.uniform(2.5, 10.0)) if rng.random() < 0.5 else 0.0
    spiky = rng.random() < 0.3
    return {
        "sigma": sigma,
        "phi": phi,
        "df": df,
        "spike_rate": _logu(rng, 1e-4, 0.02) if spiky else 0.0,
        "spike_max": _logu(rng, 2.0, 30.0) if spiky else 0.0,
    }


def _noise(rng, n: int, p: dict) -> np.ndarray:
    """AR(1) noise of robust sd ``sigma`` (Student-t innovations when ``df``), plus the
    isolated spikes, in log space."""
    if p["df"]:
        e = rng.standard_t(p["df"], n)
        e /= 1.4826 * np.median(np.abs(e)) if n > 1 else 1.0  # robust unit scale
    else:
        e = rng.standard_normal(n)
    phi = p["phi"]
    if phi:
        # AR(1), scaled so that its stationary sd is that of the innovations.
        c = math.sqrt(1 - phi * phi)
        out = e.tolist()
        prev = out[0]
        for i in range(1, n):
            prev = phi * prev + c * out[i]
            out[i] = prev
        e = np.asarray(out)
    z = p["sigma"] * e
    if p["spike_rate"]:
        hit = np.flatnonzero(rng.random(n) < p["spike_rate"])
        z[hit] += rng.uniform(math.log(1.5), math.log(p["spike_max"]), hit.size)
    return z


def _lr_schedule(rng, t: np.ndarray, kind: str) -> tuple[np.ndarray, dict]:
    """A learning-rate schedule over ``t`` in [0, 1] and its parameters.

    Peak lr log-uniform over [5e-6, 0.3] (above TP-DEAD-RUN's tiny_lr 1e-7: the corpus's
    fine-tunes run 1e-5..3e-4, the Keras and PINN runs up to 1e-2); warm-up over the first
    0..10% (warm-up takes 3-10% of the steps, thresholds.dead_min_schedule_share).
    """
    peak = _logu(rng, 5e-6, 0.3)
    warm = float(rng.uniform(0, 0.1)) if rng.random() < 0.6 else 0.0
    p = {"lr_schedule": kind, "lr_peak": peak, "warmup": warm}
    u = np.clip((t - warm) / max(1 - warm, 1e-9), 0, 1)
    if kind == "constant":
        f = np.ones_like(t)
    elif kind == "cosine":
        f = 0.5 * (1 + np.cos(np.pi * u))
    elif kind == "linear":
        f = 1 - u
    elif kind == "step":
        k = int(rng.integers(1, 4))
        at = np.sort(rng.uniform(0.25, 0.9, k))
        p["lr_steps"] = [float(a) for a in at]
        f = 0.1 ** np.searchsorted(at, t, side="right")
    elif kind == "restarts":
        period = float(rng.uniform(0.1, 0.5))
        mult = int(rng.choice([1, 2]))
        p.update(restart_period=period, restart_mult=mult)
        ph = np.empty_like(u)
        start, length = 0.0, period
        for i, x in enumerate(u):
            while x >= start + length and length > 0:
                start, length = start + length, length * mult
            ph[i] = (x - start) / length
        f = 0.5 * (1 + np.cos(np.pi * ph))
    elif kind in ("triangular", "sawtooth"):
        period = float(rng.uniform(0.05, 0.3))
        p["lr_period"] = period
        ph = (u / period) % 1.0
        f = 1 - ph if kind == "sawtooth" else 1 - np.abs(2 * ph - 1)
        f = 0.1 + 0.9 * f
    else:
        raise ValueError(kind)
    if warm:
        f = np.where(t < warm, t / warm, f)
    return peak * f, p


def _level(rng, shape: str, t: np.ndarray, p: dict) -> np.ndarray:
    """The noiseless log-loss level of a healthy shape over ``t`` in [0, 1], ending near 0
    (the scale is applied after), and its parameters written into ``p``."""
    sigma, n = p["sigma"], t.size
    # The least fall a decay is drawn with: 4 standard errors of the difference of its
    # first and last 10% levels, so that the run shows its learning at its own resolution.
    resolvable = 4 * sigma * 1.25 * math.sqrt(2 / max(1.0, 0.1 * n))
    if shape in ("exp", "power", "staircase", "restarts", "cyclic"):
        # Corpus ``fall`` [p10..max] = [0.09..8.9], median 0.85.
        fall = max(_logu(rng, 0.15, 8.0), resolvable)
        p["fall"] = fall
        if shape == "power":
            tau, a = _logu(rng, 0.003, 0.2), float(rng.uniform(0.5, 2.0))
            p.update(tau=tau, power=a)
            g = (1 + t / tau) ** -a
        else:
            # Corpus ``fast_share`` [p10..p90] = [0.19..0.78]: tau 0.02..0.6 spans it.
            tau = _logu(rng, 0.02, 0.6)
            p["tau"] = tau
            g = np.exp(-t / tau)
        g = (g - g[-1]) / (g[0] - g[-1]) if g[0] != g[-1] else np.zeros_like(g)
        x = fall * g
        if shape == "staircase":
            # The staircase of a step lr: a drop at each lr step (p["lr_steps"]).
            for at in p.get("lr_steps", []):
                d = _logu(rng, 0.05, 0.5)
                x = x - d * (t >= at)
            x = x - x[-1]
            p["fall"] = float(x[0])
        return x
    if shape == "slow":
        # Slow learner: 5-10% over the run (ln 1/0.95..ln 1/0.9), steadily: noise at most a
        # quarter of the fall. Corpus: tfevents-hf-gpt2-poem (fall 0.084, noise 0.039, 2,800
        # points) and jsonl-llamafactory-nsllm (0.049, 0.0016).
        fall = float(rng.uniform(-math.log(0.95), -math.log(0.9)))
        p["fall"] = fall
        p["sigma"] = min(sigma, _logu(rng, 0.001, fall / 4))
        curv = float(rng.uniform(0.5, 1.5))
        p["curvature"] = curv
        return fall * (1 - t**curv)
    if shape == "floor":
        # Near its floor from the first log: a drift of -1%..+3% over the run (corpus:
        # hf-qwen-lora-plateau fall 0.022, coqui-vits-bangla-resume-plateau -0.012,
        # hf-unsloth-lr-restarts 0.041), after 1-3 first points still coming down. Each of
        # the corpus's floor runs shows that it trained: qwen's first log (an average over
        # the logging window that held the drop) sits 10% above its plateau, the vits log
        # starts past its own span (a resume), unsloth logs its learning rate; a log flat
        # from its first point with none of these is the shape of a dead run, not of the
        # corpus's healthy ones, so the first points here always come down.
        drift = float(rng.uniform(-0.01, 0.03))
        head = int(rng.integers(1, 4))
        p.update(fall=drift, head_points=head)
        x = drift * (1 - t)
        if head:
            x[:head] += np.linspace(_logu(rng, 0.05, 0.5), 0, head + 1)[:head]
        return x
    if shape == "stepdown":
        at, drop = float(rng.uniform(0.2, 0.8)), max(_logu(rng, 0.1, 1.0), resolvable)
        width = float(rng.uniform(0, 0.03))
        p.update(step_at=at, fall=drop, step_width=width)
        return drop * (1 - np.clip((t - at) / max(width, 1e-9), 0, 1))
    raise ValueError(shape)


def _schedule_for(rng, shape: str) -> str:
    if shape == "staircase":
        return "step"
    if shape == "restarts":
        return "restarts"
    if shape == "cyclic":
        return str(rng.choice(["triangular", "sawtooth"]))
    return str(rng.choice(["constant", "cosine", "cosine", "linear"]))


def _grad_norm(rng, t: np.ndarray, p: dict) -> np.ndarray:
    """Gradient norms: a level log-uniform over [0.01, 1e5] (corpus: 0.09-0.18 for a LoRA,
    median 17.9 for Whisper-small, 2e5 for TrOCR), larger early, log-normal noise, the
    first logged norm 1-20x (big first norms are in most corpus files)."""
    g0 = _logu(rng, 0.01, 1e5)
    p["grad_norm_level"] = g0
    gn = g0 * (1 + 3 * np.exp(-t / 0.05)) * np.exp(rng.normal(0, 0.3, t.size))
    gn[0] *= _logu(rng, 1, 20)
    return gn


# --- healthy runs -----------------------------------------------------------------------


def healthy(rng: np.random.Generator, shape: str | None = None, *, resume: bool = True, **fixed) -> GeneratedRun:
    """A healthy run: one of :data:`HEALTHY_SHAPES`, with noise, scale, length, logging and
    evaluation cadence, lr schedule and optional columns drawn from the calibrated ranges.

    Args:
        rng: the only source of randomness.
        shape: the shape, or ``None`` to draw one (:data:`SHAPE_WEIGHTS`).
        resume: whether the run may be resumed (10% of the runs of 20 points or more).
        fixed: parameters to impose instead of drawing them (``n``, ``every``, ``sigma``…).

    Returns:
        A :class:`GeneratedRun` of kind ``healthy``; no FAIL rule should fire on it.
    """
    if shape is None:
        shape = str(rng.choice(HEALTHY_SHAPES, p=SHAPE_WEIGHTS))
    p: dict = {"n": _draw_points(rng, lo=30 if shape == "slow" else 5), "every": int(rng.choice(LOG_EVERY))}
    p.update(_draw_noise(rng))
    # Loss scale: the level at the end of the run, log-uniform over 1e-4..1e3 (corpus
    # ``loss_level`` [min..max] = [1e-4..36], a GRPO loss at 1e-4, an ELBO at 1008).
    p["scale"] = _logu(rng, 1e-4, 1e3)
    p.update(fixed)
    n, every = p["n"], p["every"]
    t = np.linspace(0.0, 1.0, n) if n > 1 else np.zeros(1)
    sched = _schedule_for(rng, shape)
    lr, lp = _lr_schedule(rng, t, sched)
    p.update(lp)
    level = _level(rng, shape, t, p) if shape != "negative" else None
    if shape in ("restarts", "cyclic"):
        # The loss follows the lr: higher while the lr is high (a bump at each restart).
        amp = _logu(rng, 0.02, 0.3)
        p["lr_ripple"] = amp
        level = level + amp * lr / p["lr_peak"]
    steps = every * np.arange(1, n + 1, dtype=float)
    if shape == "negative":
        # NLL of a continuous density (a flow, a VAE's Gaussian NLL): A*g(t) + c with c < 0,
        # so the loss crosses 0; the noise is additive, sigma of the fall's size.
        a = _logu(rng, 0.5, 1000.0)
        c = -a * float(rng.uniform(0.2, 2.0))
        tau = _logu(rng, 0.02, 0.6)
        p.update(fall=a, offset=c, tau=tau)
        g = np.exp(-t / tau)
        loss = a * g + c + a * p["sigma"] * 0.2 * _noise(rng, n, {**p, "sigma": 1.0})
        x_level = None
    else:
        x_level = level
        loss = p["scale"] * np.exp(level + _noise(rng, n, p))
    cols = {"loss": loss}
    has = {"loss": np.ones(n, dtype=bool)}
    _optional_columns(rng, p, t, lr, cols, has, x_level)
    run = GeneratedRun("healthy", shape, p, steps, cols, has)
    if resume and shape != "negative" and n >= 20 and rng.random() < 0.1:
        _resume(rng, run, x_level)
    return run


def _optional_columns(rng, p, t, lr, cols, has, x_level) -> None:
    """lr (70% of runs; 15% of those sparse), grad_norm (60%), eval_loss (40%, every
    :data:`EVAL_EVERY` points, on its own rows as HF writes it)."""
    n = t.size
    if rng.random() < 0.7:
        m = np.ones(n, dtype=bool)
        if rng.random() < 0.15:
            k = int(rng.integers(2, 11))
            m[:] = False
            m[::k] = True
            p["lr_every_rows"] = k
        cols["learning_rate"], has["learning_rate"] = lr, m
    else:
        p["lr_schedule"] = "not logged"
    if rng.random() < 0.6:
        cols["grad_norm"], has["grad_norm"] = _grad_norm(rng, t, p), np.ones(n, dtype=bool)
    if rng.random() < 0.4 and n >= 4:
        k = int(rng.choice(EVAL_EVERY))
        k = min(k, max(1, n // 4))
        m = np.zeros(n, dtype=bool)
        m[k - 1 :: k] = True
        # Eval loss: the train level (smoothed) plus a generalisation gap of 0-30%, and
        # evaluation noise: corpus median change between consecutive evaluations 2.2%
        # (quartiles 0.8%, 6.8%; thresholds.eval_diverge_min_evals) -> sd 0.002..0.05.
        gap, es = float(rng.uniform(0, 0.3)), _logu(rng, 0.002, 0.05)
        p.update(eval_every=k, eval_gap=gap, eval_sigma=es)
        if x_level is None:  # negative NLL: additive, on the train curve
            ev = cols["loss"] + abs(p["fall"]) * (gap + es * rng.standard_normal(n))
        else:
            ev = p["scale"] * np.exp(x_level + gap + es * rng.standard_normal(n))
        cols["eval_loss"], has["eval_loss"] = ev, m
    p["eval_every"] = p.get("eval_every", 0)


def _resume(rng, run: GeneratedRun, x_level) -> None:
    """A resumed run: after point ``k`` the logger starts again at point ``j < k`` (the
    last checkpoint) and re-logs ``j..n-1`` with fresh noise; the reader keeps the later
    segment (corpus: jsonl-llamafactory-interleaved-restart, coqui-vits-bangla-resume)."""
    n = run.steps.size
    k = int(n * rng.uniform(0.3, 0.9))
    j = max(1, k - max(1, int(n * rng.uniform(0.05, 0.3))))
    run.params.update(resume_from=int(k), resume_to=int(j))
    idx = np.concatenate([np.arange(k + 1), np.arange(j, n)])
    redo = np.zeros(idx.size, dtype=bool)
    redo[k + 1 :] = True
    run.steps = run.steps[idx]
    for key in list(run.cols):
        v = run.cols[key][idx].copy()
        if key in ("loss", "eval_loss") and x_level is not None:
            # A fresh draw of the noise on the re-logged rows, same level.
            v[redo] = v[redo] * np.exp(run.params["sigma"] * 0.5 * rng.standard_normal(int(redo.sum())))
        run.cols[key] = v
        run.has[key] = run.has[key][idx]


# --- broken runs ------------------------------------------------------------------------


def broken(kind: str, rng: np.random.Generator, onset_share: float) -> GeneratedRun:
    """A run of a broken kind (:data:`BROKEN_KINDS`), broken from its onset on.

    Kinds (the base is a healthy decaying run: an ``exp``, ``power``, ``staircase`` or
    ``cyclic`` shape, without resumes, of at least 30 points):

    * ``diverge``: from the onset the loss climbs to ``rise`` above its level there (in
      log: at least ln 2 and 10 noise sigmas, up to 100 times more), over a ramp of
      2-100% of the rest of the run, then stays up; gradient norms grow with it, and the
      eval loss climbs by the same factor from its value at the onset.
    * ``nan``: loss (and gradient norm, eval loss) NaN from the onset on; an Inf now and then.
    * ``lr_zero``: the whole run at lr 0 (or a tiny lr <= 1e-7), logged; the loss flat with
      the run's noise and no drift (no weight moves).
    * ``chance``: the loss sits at ln k (k 2..1000) with small noise (0.2-5%) and a drift
      within +-0.5%, after a fall onto that level from up to 1.5x above it over the first
      0-5% of the run (``onset_share`` is not used: 0.95-1).
    * ``frozen``: from the onset the loss is bit-identical (half the runs) or flat to a
      relative 1e-6..3e-4; the gradient norm is exactly 0 there.
    * ``overfit`` (WARN): the eval loss follows the train loss to its minimum at the onset
      and rises 1.3-3x by the end, while the train loss keeps falling (a further 10-100%
      in log).
    * ``spike`` (WARN): at the onset a burst of 1-5 points 5-100x the level (and at least
      8 noise sigmas), after which the loss comes back down but settles 1.2-2x above its
      level before the burst.

    Args:
        kind: a key of :data:`BROKEN_KINDS`.
        rng: the only source of randomness.
        onset_share: share of the points after the onset, in (0, 1].

    Returns:
        A :class:`GeneratedRun` of that kind with ``onset_share`` and ``onset_step`` set.
    """
    if kind not in BROKEN_KINDS:
        raise ValueError(f"unknown kind {kind!r}; known: {', '.join(BROKEN_KINDS)}")
    shape = str(rng.choice(["exp", "power", "staircase", "cyclic"]))
    base = healthy(rng, shape, resume=False, n=_draw_points(rng, lo=30))
    n = base.params["n"]
    if kind == "lr_zero":
        onset_share = 1.0
    elif kind == "chance":
        # Stuck from the start: the first 0-5% fall onto ln k (the class prior is all the
        # model learns), so most of the run sits at chance whatever onset_share says.
        onset_share = 1.0 - float(rng.uniform(0.0, 0.05))
    i0 = min(n - 1, max(0, int(round(n * (1 - onset_share)))))
    p = base.params
    p["kind"] = kind
    p["onset_index"] = i0
    loss = base.cols["loss"].astype(float).copy()
    x = np.log(loss)
    sigma = p["sigma"]
    t = np.linspace(0, 1, n)
    tail = np.arange(n) >= i0
    cols, has = base.cols, base.has
    if kind == "diverge":
        rise = _logu(rng, max(math.log(2), 10 * sigma), 100 * max(math.log(2), 10 * sigma))
        rise = min(rise, math.log(1e6))
        ramp = float(rng.uniform(0.02, 1.0))
        curv = float(rng.uniform(0, 5))
        p.update(rise=rise, ramp_share=ramp, ramp_curvature=curv)
        u = np.clip((np.arange(n) - i0) / max(1.0, ramp * (n - i0)), 0, 1)
        h = (np.expm1(curv * u) / math.expm1(curv)) if curv > 1e-3 else u
        # Relative to the level reached at the onset: the base keeps its noise.
        # From the level held at the onset, with the run's own noise on top.
        hold = float(np.median(x[max(0, i0 - 5) : i0 + 1]))
        x = np.where(tail, hold + rise * h, x)
        x[tail] += _noise(rng, int(tail.sum()), p)
        loss = np.exp(x)
        if "grad_norm" in cols:
            cols["grad_norm"] = cols["grad_norm"] * np.exp(0.5 * rise * h * tail)
        if "eval_loss" in cols:
            # The held-out loss climbs from where it stood at the onset, as the train loss
            # does: a diverging model does not go on improving on held-out data.
            ev = cols["eval_loss"]
            ev_hold = float(ev[i0]) * np.exp(rise * h + p.get("eval_sigma", 0.0) * rng.standard_normal(n))
            cols["eval_loss"] = np.where(tail, ev_hold, ev)
    elif kind == "nan":
        bad = np.where(rng.random(n) < 0.05, np.inf, np.nan)
        loss = np.where(tail, bad, loss)
        if "grad_norm" in cols and rng.random() < 0.7:
            cols["grad_norm"] = np.where(tail, np.nan, cols["grad_norm"])
        if "eval_loss" in cols:
            cols["eval_loss"] = np.where(tail, np.nan, cols["eval_loss"])
    elif kind == "lr_zero":
        tiny = rng.random() < 0.4
        lr_val = _logu(rng, 1e-10, 1e-7) if tiny else 0.0
        # lr 0 moves no weight: the expected loss is constant, only the batches vary.
        drift = 0.0
        p.update(lr_value=lr_val, drift=drift, fall=-drift)
        cols["learning_rate"] = np.full(n, lr_val)
        has["learning_rate"] = np.ones(n, dtype=bool)
        p["lr_schedule"] = "zero" if not tiny else "tiny"
        loss = p["scale"] * np.exp(drift * t + _noise(rng, n, p))
        if "eval_loss" in cols:
            cols["eval_loss"] = p["scale"] * np.exp(p.get("eval_gap", 0.1) + 0.01 * rng.standard_normal(n))
    elif kind == "chance":
        # 70% of the runs 2..10 classes (the levels TP-CHANCE-LEVEL names), the rest up to
        # 1,000 (ImageNet's; a language model's vocabulary is larger still).
        k = int(rng.integers(2, 11)) if rng.random() < 0.7 else int(round(_logu(rng, 11, 1000)))
        cs = _logu(rng, 0.002, 0.05)
        drift = float(rng.uniform(-0.005, 0.005))
        start = float(rng.uniform(1.05, 1.5))
        p.update(classes=k, chance_sigma=cs, drift=drift, start_factor=start, scale=math.log(k))
        lvl = np.log(math.log(k)) + drift * np.clip((t - t[i0]) / max(1e-9, 1 - t[i0]), 0, 1)
        head = np.log(math.log(k) * start) + (np.log(1.0 / start)) * (np.arange(n) / max(1, i0))
        x = np.where(tail, lvl, head) + _noise(rng, n, {**p, "sigma": cs, "spike_rate": 0.0})
        loss = np.exp(x)
        if "eval_loss" in cols:
            cols["eval_loss"] = np.exp(np.where(tail, lvl, head) + 0.01 + 0.005 * rng.standard_normal(n))
        # Half the runs log an eval accuracy, as a classifier's evaluation does: correct
        # answers out of N examples (N log-uniform 32..5,000; the corpus's chance-level
        # runs evaluate 32 graphs to 7,600 news items), a guess right 1/k of the time.
        if rng.random() < 0.5:
            n_eval = int(round(_logu(rng, 32, 5000)))
            every = max(1, min(int(rng.choice(EVAL_EVERY)), n // 8))
            m = np.zeros(n, dtype=bool)
            m[every - 1 :: every] = True
            cols["eval_accuracy"] = rng.binomial(n_eval, 1.0 / k, size=n) / n_eval
            has["eval_accuracy"] = m
            p.update(eval_examples=n_eval, accuracy_every=every)
    elif kind == "frozen":
        exact = rng.random() < 0.5
        rel = 0.0 if exact else _logu(rng, 1e-6, 3e-4)
        p.update(frozen_exact=exact, frozen_rel=rel)
        v0 = float(np.median(loss[max(0, i0 - 3) : i0 + 1]))
        loss = np.where(tail, v0 * (1 + rel * rng.standard_normal(n)), loss)
        gn = cols["grad_norm"] if "grad_norm" in cols else _grad_norm(rng, t, p)
        cols["grad_norm"] = np.where(tail, 0.0, gn)
        has["grad_norm"] = np.ones(n, dtype=bool)
        if "eval_loss" in cols:
            e0 = float(np.median(cols["eval_loss"][max(0, i0 - 3) : i0 + 1]))
            cols["eval_loss"] = np.where(tail, e0, cols["eval_loss"])
    elif kind == "overfit":
        rise = _logu(rng, math.log(1.3), math.log(3.0))
        k = int(rng.choice([1, 2, 4, 5, 10]))
        k = min(k, max(1, n // 20))
        m = np.zeros(n, dtype=bool)
        m[k - 1 :: k] = True
        es = _logu(rng, 0.002, 0.03)
        p.update(eval_rise=rise, eval_every=k, eval_sigma=es)
        smooth = np.log(p["scale"]) + _level_of(base)
        lvl = np.where(tail, smooth[i0] + rise * (t - t[i0]) / max(1e-9, 1 - t[i0]), smooth)
        cols["eval_loss"] = np.exp(lvl + 0.1 + es * rng.standard_normal(n))
        has["eval_loss"] = m
        # ... while the train loss keeps falling (memorising): a further 10-100% in log.
        more = _logu(rng, 0.1, 1.0)
        p["train_fall_after"] = more
        loss = loss * np.exp(-more * np.clip((t - t[i0]) / max(1e-9, 1 - t[i0]), 0, 1))
    elif kind == "spike":
        burst = int(rng.integers(1, 6))
        mag = max(_logu(rng, math.log(5), math.log(100)), 8 * sigma)
        settle = _logu(rng, 1.2, 2.0)
        p.update(burst_points=burst, spike_log=mag, settle=settle)
        b = slice(i0, min(n, i0 + burst))
        x[b] += mag
        x[i0 + burst :] += math.log(settle)
        loss = np.exp(x)
    cols["loss"] = loss
    return GeneratedRun(kind, shape, p, base.steps, cols, has, float(onset_share), float(base.steps[i0]))


def _level_of(run: GeneratedRun) -> np.ndarray:
    """The smoothed log-loss of a run relative to its scale (a rolling median)."""
    x = np.log(run.cols["loss"]) - math.log(run.params["scale"])
    return rolling_median(x, window_of(x.size))


def from_seed(seed: int, kind: str = "healthy", onset_share: float | None = None) -> GeneratedRun:
    """The run the bench makes for ``seed``: :func:`healthy` on ``default_rng(seed)`` for
    ``kind="healthy"``, else :func:`broken` with ``onset_share`` (drawn from the same rng
    uniform over [0.05, 1] when ``None``). ``params["seed"]`` is set."""
    rng = np.random.default_rng(seed)
    if kind == "healthy":
        run = healthy(rng)
    else:
        share = float(rng.uniform(0.05, 1.0)) if onset_share is None else onset_share
        run = broken(kind, rng, share)
    run.params["seed"] = int(seed)
    return run


# --- to trainproof ------------------------------------------------------------------------


def _f32(a: np.ndarray) -> np.ndarray:
    """What ``tensor.item()`` of a float32 gives."""
    with np.errstate(over="ignore"):
        return a.astype(np.float32).astype(np.float64)


def to_runlog(run: GeneratedRun, path: str = "zoo.jsonl"):
    """The run as a :class:`trainproof.runlog.RunLog`: its rows as one
    :class:`trainproof.runlog.Rows` batch through :func:`trainproof.runlog.build_runlog`,
    as a JSONL reader would yield them (values as float32, as loggers write tensors)."""
    from trainproof.runlog import Rows, build_runlog

    keys = [k for k in KEYS if k in run.cols]
    rows = run.steps.size
    sig = np.zeros(rows, dtype=np.int64)
    for b, k in enumerate(keys):
        sig |= run.has[k].astype(np.int64) << b
    groups = []
    for s in np.unique(sig):
        if s == 0:
            continue
        ks = tuple(k for b, k in enumerate(keys) if s >> b & 1)
        pos = np.flatnonzero(sig == s)
        vals = np.stack([_f32(run.cols[k][pos]) for k in ks], axis=1)
        groups.append((ks, pos.astype(np.int64), vals))
    batch = Rows(run.steps.astype(float), np.arange(1, rows + 1, dtype=np.int64), groups)
    return build_runlog([batch], path, "jsonl", meta=dict(run.meta))


# --- real formats -------------------------------------------------------------------------

FILE_NAMES = {"jsonl": "metrics.jsonl", "csv": "metrics.csv", "hf": "trainer_state.json", "console": "train.log"}


def _num(v: float) -> str:
    """A float as Python's json writes it (NaN, Infinity)."""
    if v != v:
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return repr(v)


def _rows(run: GeneratedRun):
    keys = [k for k in KEYS if k in run.cols]
    vals = {k: _f32(run.cols[k]).tolist() for k in keys}
    has = {k: run.has[k].tolist() for k in keys}
    for i, st in enumerate(run.steps.tolist()):
        yield int(st), {k: vals[k][i] for k in keys if has[k][i]}


def write(run: GeneratedRun, fmt: str, dir: Path) -> Path:
    """Write the run as a real log of format ``fmt`` (:data:`FORMATS`) in ``dir``.

    * ``jsonl``: one object per row, ``{"step", <keys>}``, NaN as ``NaN``;
    * ``csv``: ``step`` and one column per key, an empty cell where a row does not log it,
      a NaN as ``nan``;
    * ``hf``: ``trainer_state.json``, train rows ``{loss, learning_rate, grad_norm, step}``
      and eval rows ``{eval_loss, step}`` in ``log_history``, ``indent=2, sort_keys``;
    * ``console``: ``step=<s> loss=<v> learning_rate=<v> grad_norm=<v>`` lines and
      ``step=<s> eval_loss=<v>`` lines.

    Returns:
        The path written (``dir / FILE_NAMES[fmt]``).
    """
    dir = Path(dir)
    dir.mkdir(parents=True, exist_ok=True)
    path = dir / FILE_NAMES[fmt]
    keys = [k for k in KEYS if k in run.cols]
    lines: list[str] = []
    if fmt == "jsonl":
        for st, row in _rows(run):
            lines.append(json.dumps({"step": st, **row}))
    elif fmt == "csv":
        lines.append(",".join(["step", *keys]))
        for st, row in _rows(run):
            cells = ["" if k not in row else ("nan" if row[k] != row[k] else repr(row[k])) for k in keys]
            lines.append(",".join([str(st), *cells]))
    elif fmt == "hf":
        hist = []
        for st, row in _rows(run):
            train = {k: row[k] for k in ("loss", "learning_rate", "grad_norm") if k in row}
            if train:
                hist.append({**train, "step": st})
            ev = {k: row[k] for k in ("eval_loss", "eval_accuracy") if k in row}
            if ev:
                hist.append({**ev, "step": st})
        state = {
            "global_step": int(run.steps.max()),
            "is_world_process_zero": True,
            "log_history": hist,
            "max_steps": int(run.steps.max()),
        }
        path.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return path
    elif fmt == "console":
        for st, row in _rows(run):
            train = [f"{k}={_num(row[k])}" for k in ("loss", "learning_rate", "grad_norm") if k in row]
            if train:
                lines.append(f"step={st} " + " ".join(train))
            ev = [f"{k}={_num(row[k])}" for k in ("eval_loss", "eval_accuracy") if k in row]
            if ev:
                lines.append(f"step={st} " + " ".join(ev))
    else:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
