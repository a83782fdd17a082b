"""Fault-injection rig for the Hugging Face ``transformers`` Trainer (gallery, issue 8).

A tiny GPT-2 causal LM (built from a config: 2 layers, n_embd 32, 2 heads, vocabulary 64,
no download) learns synthetic "text": token sequences of length 32 drawn from a fixed
first-order Markov chain (each token has 4 successors with probabilities
0.6/0.25/0.1/0.05, chosen with a Zipf(0.7) skew so the token frequencies are uneven). The
best possible loss is the chain's conditional entropy (1.03 nats), the best loss without
looking at the inputs its unigram entropy (2.74 nats); a uniform guess is ln 64 = 4.16.
Data are fixed (data seed 1234); ``--seed`` sets the model init and the Trainer's data
order.

Every run is a real ``transformers.Trainer`` run on CPU: AdamW, linear schedule with 10
warm-up steps, max_grad_norm 1.0 (so HF logs ``grad_norm``), ``logging_steps=1``,
``logging_first_step=True``, ``eval_strategy="steps"`` every 20 steps on 256 held-out
sequences, ``report_to=["tensorboard"]``. The Trainer writes ``runs/<date>_<host>/
events.out.tfevents.*`` itself and ``trainer_state.json`` through ``trainer.save_state()``
(what HF does at the end of its example scripts); no checkpoint or weights are saved.
A Trainer subclass adds two keys to every train log row through ``Trainer.log`` (so they
land in ``log_history`` and in TensorBoard as ``train/step_time`` / ``train/data_time``):
``step_time``, the mean wall time per optimizer step since the last log (evaluation time
excluded), and ``data_time``, the part of it spent waiting for the next batch
(``get_batch_samples``).

Configurations (what is broken and how):

* ``healthy``  lr 3e-3, batch 16, 200 steps: the loss falls from ~4.2 to ~1.2 and settles.
* ``lr_hot``  lr 10.0 (over 3000x the healthy 3e-3): within a few steps the loss jumps from
  ~4 to ~100 and stays there (no NaN: AdamW's step is bounded by the lr, grads are clipped
  at 1.0). In trial runs lower rates were milder: lr 1.0 (333x) spiked to ~10 and recovered
  to ~1.7, lr 3.0 ended at ~2.4x its start (diverged, but less clearly).
* ``lr_zero``  ``learning_rate=0.0``: the weights never change.
* ``frozen``  graph severed: ``compute_loss`` returns ``loss.detach() + 0 * anchor``
  (``anchor`` a dummy scalar parameter registered on the model), so backward runs but
  every gradient is None or exactly 0: HF logs ``grad_norm`` 0.0 and nothing is learned.
  (Freezing every parameter outright is refused by the Trainer: AdamW gets an empty
  parameter list.)
* ``bad_labels``  each sequence is paired with another sequence's tokens as labels (a
  fixed permutation), train and eval: the model can only learn token frequencies; its loss
  still falls (4.2 -> ~2.6, about the chain's unigram entropy), so on its own it looks like
  learning; ``compare`` against ``healthy`` shows a floor far above.
* ``overfit``  8 training sequences, batch 8, 300 steps (300 epochs), held-out eval: the
  train loss goes towards 0 while the eval loss climbs far above its minimum.
* ``masked_labels``  every label is -100 (train and eval). HF's causal-LM loss is a sum
  divided by the number of unmasked labels (0/0 = NaN); the Trainer's
  ``logging_nan_inf_filter`` (default True) replaces each NaN step loss with the mean of
  the previous logged losses, which is 0 from the start, so ``loss`` is logged as 0.0 on
  every step. The gradient is exactly 0 (cross-entropy's backward zeroes ignored targets
  even under a NaN upstream gradient), so ``grad_norm`` is logged as 0.0; the eval loss is
  NaN (its filter keeps NaN when no loss is finite).
* ``slow_loader``  healthy, but the train Dataset's ``__getitem__`` sleeps once the first
  half of the samples has been read, ramping linearly from 0 to 250 ms per batch of 16 over
  the third quarter and held there (``dataloader_num_workers=0``): the steps of the last
  quarter take several times those of the first half and are mostly spent waiting for data.
* ``fp16_overflow``  not produced. On CPU ``fp16=True`` is accepted by TrainingArguments
  but accelerate (1.15) only enables native fp16 autocast and a GradScaler when the
  device is not the CPU, so the run is silently plain fp32 (checked with forward hooks:
  every activation is float32); ``bf16=True`` does autocast on CPU but bfloat16 has the
  float32 exponent range, so nothing overflows. Faking an overflow would not be the
  framework's behaviour, so the rig refuses this configuration.

Negatives (nothing is broken; a correct linter stays below FAIL):

* ``converged``  healthy for 400 steps: reaches its floor by ~step 150, then a long,
  flat-ish tail that still improves slowly.
* ``terminal_spike``  healthy, but the very last optimizer step gets one poisoned batch
  (labels replaced by uniformly random tokens): one spike of loss and gradient norm at the
  last logged step only.
* ``noisy_small_batch``  ``per_device_train_batch_size=1``, lr 1e-3, 300 steps: a very
  noisy per-step loss that still trends down.
* ``cosine_restarts``  ``lr_scheduler_type="cosine_with_restarts"`` with
  ``lr_scheduler_kwargs={"num_cycles": 4}``: the learning rate falls to ~0 and jumps back
  to its peak three times.

Usage (CPU only; 5-40 s per run, about 10 min for all 36 runs on a shared 2-core machine)::

    python examples/rigs/hf_rig.py                          # every configuration, seeds 0 1 2
    python examples/rigs/hf_rig.py --config healthy --seed 0 --out /tmp/gallery

Output: ``<out>/hf/<config>/seed<K>/`` with ``trainer_state.json``,
``runs/<date>_<host>/events.out.tfevents.*`` and ``run_meta.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import transformers  # noqa: E402
from torch import nn  # noqa: E402
from transformers import (  # noqa: E402
    GPT2Config,
    GPT2LMHeadModel,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)

VOCAB = 64
SEQ = 32
N_TRAIN = 4096
N_EVAL = 256
DATA_SEED = 1234
SEEDS = (0, 1, 2)

BASE = {
    "lr": 3e-3,
    "batch": 16,
    "steps": 200,
    "n_train": N_TRAIN,
    "scheduler": "linear",
    "scheduler_kwargs": None,
    "labels": "true",  # true | shuffled | masked
    "severed": False,
    "slow_loader": False,
    "poison_last_step": False,
}


def _cfg(**kw):
    out = dict(BASE)
    out.update(kw)
    return out


CONFIGS = {
    "healthy": _cfg(),
    "lr_hot": _cfg(lr=10.0),
    "lr_zero": _cfg(lr=0.0),
    "frozen": _cfg(severed=True),
    "bad_labels": _cfg(labels="shuffled"),
    "overfit": _cfg(n_train=8, batch=8, steps=300),
    "fp16_overflow": None,  # see the module docstring: not reproducible on CPU
    "masked_labels": _cfg(labels="masked"),
    "slow_loader": _cfg(slow_loader=True),
    "converged": _cfg(steps=400),
    "terminal_spike": _cfg(poison_last_step=True),
    "noisy_small_batch": _cfg(batch=1, lr=1e-3, steps=300),
    "cosine_restarts": _cfg(scheduler="cosine_with_restarts", scheduler_kwargs={"num_cycles": 4}),
}

# The truth of each mechanism, fixed before any linter output was looked at.
# (kind, broken, expected_verdict, expected_rules, expected_compare)
META = {
    "healthy": ("healthy", None, "PASS", [], None),
    "lr_hot": (
        "broken",
        "learning rate 10.0, over 3000x the healthy 3e-3 (AdamW): the loss jumps from ~4 to ~100 and stays far above its best level.",
        "FAIL",
        ["TP-DIVERGE"],
        "FAIL",
    ),
    "lr_zero": (
        "broken",
        "learning_rate=0.0 for the whole run: the weights never change.",
        "FAIL",
        ["TP-ZERO-LR", "TP-DEAD-RUN"],
        "FAIL",
    ),
    "frozen": (
        "broken",
        "graph severed: compute_loss returns loss.detach() + 0 * a dummy parameter, so every gradient is None or exactly 0 (grad_norm 0.0) and nothing is learned.",
        "FAIL",
        ["TP-ZERO-GRAD", "TP-DEAD-RUN"],
        "FAIL",
    ),
    "bad_labels": (
        "broken",
        "labels are another sequence's tokens (fixed permutation), so inputs carry no information about labels; the loss only falls to the token-frequency entropy.",
        "PASS",
        [],
        "FAIL",
    ),
    "overfit": (
        "broken",
        "8 training sequences trained for 300 epochs with a held-out eval set: train loss goes towards 0 while eval loss rises far above its minimum.",
        "WARN",
        ["TP-OVERFIT"],
        None,
    ),
    "masked_labels": (
        "broken",
        "every label is -100: HF's loss is 0/0 = NaN each step, logged as 0.0 by logging_nan_inf_filter, grad_norm exactly 0.0 and eval_loss NaN.",
        "FAIL",
        ["TP-ZERO-LOSS", "TP-ZERO-GRAD", "TP-NAN-EVAL"],
        "FAIL",
    ),
    "slow_loader": (
        "broken",
        "the train Dataset's __getitem__ sleeps once half the samples were read, ramping from 0 to 250 ms per batch (held over the last quarter): step time climbs several-fold, mostly data wait.",
        "WARN",
        ["TP-STEP-CLIFF", "TP-LOADER-BOUND"],
        "PASS",
    ),
    "converged": ("negative", None, "PASS", [], None),
    "terminal_spike": ("negative", None, "PASS", [], None),
    "noisy_small_batch": ("negative", None, "PASS", [], None),
    "cosine_restarts": ("negative", None, "PASS", [], None),
}


# --------------------------------------------------------------------------- data
def markov_chain(gen: torch.Generator):
    """A fixed transition table: 4 successors per token, Zipf-skewed towards low ids."""
    popularity = 1.0 / torch.arange(1, VOCAB + 1, dtype=torch.float64) ** 0.7
    probs = torch.tensor([0.6, 0.25, 0.1, 0.05], dtype=torch.float64)
    table = torch.zeros(VOCAB, VOCAB, dtype=torch.float64)
    for tok in range(VOCAB):
        succ = torch.multinomial(popularity, 4, replacement=False, generator=gen)
        table[tok, succ] = probs
    return table


def sample_sequences(table, n, gen):
    # start tokens from (approximately) the stationary distribution
    stationary = torch.linalg.matrix_power(table, 64)[0]
    seq = torch.empty(n, SEQ, dtype=torch.long)
    seq[:, 0] = torch.multinomial(stationary, n, replacement=True, generator=gen)
    for t in range(1, SEQ):
        seq[:, t] = torch.multinomial(table[seq[:, t - 1]], 1, generator=gen).squeeze(1)
    return seq


class SeqDataset(torch.utils.data.Dataset):
    """input_ids + labels; optionally slow (sleeps more and more after the middle)."""

    def __init__(self, inputs, labels, slow_after=None, slow_total=None, slow_max_s=0.1, batch=16):
        self.inputs, self.labels = inputs, labels
        self.slow_after, self.slow_total = slow_after, slow_total
        self.per_item_max = slow_max_s / batch
        self.reads = 0

    def __len__(self):
        return len(self.inputs)

    def __getitem__(self, i):
        self.reads += 1
        if self.slow_after is not None and self.reads > self.slow_after:
            # linear ramp over the third quarter of the run, then held at the maximum
            frac = min(1.0, 2 * (self.reads - self.slow_after) / (self.slow_total - self.slow_after))
            time.sleep(self.per_item_max * frac)
        return {"input_ids": self.inputs[i], "labels": self.labels[i]}


def build_data(cfg):
    gen = torch.Generator().manual_seed(DATA_SEED)
    table = markov_chain(gen)
    train_x = sample_sequences(table, cfg["n_train"], gen)
    eval_x = sample_sequences(table, N_EVAL, torch.Generator().manual_seed(DATA_SEED + 1))

    def labels_for(x, g):
        if cfg["labels"] == "shuffled":
            return x[torch.randperm(len(x), generator=g)].clone()
        if cfg["labels"] == "masked":
            return torch.full_like(x, -100)
        return x.clone()

    lg = torch.Generator().manual_seed(DATA_SEED + 2)
    train_y, eval_y = labels_for(train_x, lg), labels_for(eval_x, lg)
    slow = {}
    if cfg["slow_loader"]:
        total = cfg["steps"] * cfg["batch"]
        slow = {"slow_after": total // 2, "slow_total": total, "slow_max_s": 0.25, "batch": cfg["batch"]}
    return SeqDataset(train_x, train_y, **slow), SeqDataset(eval_x, eval_y)


# --------------------------------------------------------------------------- trainer
class _StepClock(TrainerCallback):
    """Wall time between consecutive optimizer-step ends, evaluation time left out."""

    def __init__(self, trainer):
        self.trainer = trainer

    def on_train_begin(self, args, state, control, **kw):
        self.trainer._mark = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        now = time.perf_counter()
        self.trainer._step_acc += now - self.trainer._mark
        self.trainer._step_n += 1
        self.trainer._mark = now

    def on_evaluate(self, args, state, control, **kw):
        self.trainer._mark = time.perf_counter()


class RigTrainer(Trainer):
    def __init__(self, *a, severed=False, poison_last_step=False, **kw):
        super().__init__(*a, **kw)
        self.severed = severed
        self.poison_last_step = poison_last_step
        self._mark = time.perf_counter()
        self._step_acc = self._data_acc = 0.0
        self._step_n = 0
        self.add_callback(_StepClock(self))

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        t0 = time.perf_counter()
        out = super().get_batch_samples(epoch_iterator, num_batches, device)
        self._data_acc += time.perf_counter() - t0
        return out

    def training_step(self, model, inputs, num_items_in_batch=None):
        if self.poison_last_step and self.state.global_step == self.state.max_steps - 1:
            # one corrupted batch at the very last step: labels are random tokens
            g = torch.Generator().manual_seed(99)
            inputs = dict(inputs)
            inputs["labels"] = torch.randint(0, VOCAB, inputs["labels"].shape, generator=g)
        return super().training_step(model, inputs, num_items_in_batch)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        res = super().compute_loss(model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch)
        if self.severed and model.training:
            loss, outputs = res if return_outputs else (res, None)
            loss = loss.detach() + 0.0 * model.anchor  # the graph is cut here
            return (loss, outputs) if return_outputs else loss
        return res

    def log(self, logs, start_time=None):
        if "loss" in logs and self._step_n:
            logs["step_time"] = self._step_acc / self._step_n
            logs["data_time"] = self._data_acc / self._step_n
            self._step_acc = self._data_acc = 0.0
            self._step_n = 0
        super().log(logs, start_time)


def build_model(seed):
    transformers.set_seed(seed)
    config = GPT2Config(
        n_layer=2,
        n_embd=32,
        n_head=2,
        vocab_size=VOCAB,
        n_positions=SEQ,
        activation_function="gelu",
        bos_token_id=0,
        eos_token_id=0,
        loss_type="ForCausalLM",
    )
    return GPT2LMHeadModel(config)


def run(name, seed, out_root: Path):
    cfg = CONFIGS[name]
    if cfg is None:
        raise SystemExit(f"{name}: not reproducible with the HF Trainer on CPU (see the module docstring)")
    torch.set_num_threads(1)
    out = out_root / "hf" / name / f"seed{seed}"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    train_ds, eval_ds = build_data(cfg)
    model = build_model(seed)
    if cfg["severed"]:
        model.anchor = nn.Parameter(torch.zeros(()))
    args = TrainingArguments(
        output_dir=str(out),
        use_cpu=True,
        seed=seed,
        data_seed=seed,
        max_steps=cfg["steps"],
        per_device_train_batch_size=cfg["batch"],
        per_device_eval_batch_size=N_EVAL,
        learning_rate=cfg["lr"],
        weight_decay=0.0,
        warmup_steps=10,
        lr_scheduler_type=cfg["scheduler"],
        lr_scheduler_kwargs=cfg["scheduler_kwargs"] or {},
        max_grad_norm=1.0,
        logging_strategy="steps",
        logging_steps=1,
        logging_first_step=True,
        eval_strategy="steps",
        eval_steps=20,
        save_strategy="no",
        report_to=["tensorboard"],
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    trainer = RigTrainer(
        model=model,
        args=args,
        train_dataset=train_ds,
        eval_dataset=eval_ds,
        severed=cfg["severed"],
        poison_last_step=cfg["poison_last_step"],
    )
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    trainer.save_state()  # output_dir/trainer_state.json, as HF's example scripts do
    # keep only the logs
    logs = []
    for p in sorted(out.rglob("*")):
        if p.is_file():
            rel = p.relative_to(out).as_posix()
            if rel == "trainer_state.json" or (rel.startswith("runs/") and ".tfevents." in p.name):
                logs.append(rel)
            else:
                p.unlink()
    for p in sorted(out.rglob("*"), reverse=True):
        if p.is_dir() and not any(p.iterdir()):
            p.rmdir()
    kind, broken, verdict, rules, compare = META[name]
    meta = {
        "framework": "hf",
        "framework_version": transformers.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "config": name,
        "seed": seed,
        "broken": broken,
        "kind": kind,
        "expected_verdict": verdict,
        "expected_rules": rules,
        "expected_compare": compare,
        "logs": logs,
        "steps": int(trainer.state.global_step),
        "wall_time_s": round(wall, 3),
    }
    (out / "run_meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return out, meta


def main(argv=None):
    here = Path(__file__).resolve().parents[1]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--config",
        action="append",
        choices=sorted(CONFIGS),
        help="configuration to run (repeatable; default: every reproducible one)",
    )
    ap.add_argument("--seed", action="append", type=int, help="seed (repeatable; default 0 1 2)")
    ap.add_argument("--out", type=Path, default=here / "gallery", help="gallery root (default examples/gallery)")
    a = ap.parse_args(argv)
    transformers.logging.set_verbosity_error()
    names = a.config or [n for n, c in CONFIGS.items() if c is not None]
    seeds = a.seed or list(SEEDS)
    for name in names:
        if CONFIGS[name] is None:
            print(f"skip {name}: not reproducible with the HF Trainer on CPU (see the module docstring)")
            continue
        for seed in seeds:
            out, meta = run(name, seed, a.out)
            print(f"{name} seed{seed}: {meta['steps']} steps, {meta['wall_time_s']:.1f} s -> {out}")


if __name__ == "__main__":
    main()
