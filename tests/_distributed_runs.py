"""One process of a 2-process (gloo, CPU) training run with a trainproof callback.

Run by tests/integrations/test_callbacks_distributed.py under ``python -m torch.distributed.run
--nproc_per_node=2 tests/_distributed_runs.py FRAMEWORK OUT``. Every process trains the
runs of FRAMEWORK (``hf`` or ``lightning``) one after the other and writes, per run,
``OUT/<run>.<rank>.json``: the step training ended at, the callback's ``stopped_at``, the
steps it judged at, the ids it alerted on and the trainproof lines it printed (its stderr
goes to ``OUT/err.<rank>``, its pid to ``OUT/pid.<rank>``).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
warnings.filterwarnings("ignore")

RANK = int(os.environ.get("RANK", "0"))


class Seen:
    """What one process's callback did in one run."""

    def __init__(self, cb) -> None:
        self.cb = cb
        self.alerts: list[str] = []
        self.judged: list[float] = []
        check = cb.live.check

        def counted() -> bool:
            self.judged.append(cb.live._last_step)
            return check()

        cb.live.check = counted
        cb.live.on_alert = lambda f: self.alerts.append(f.id)
        self.err_at = sys.stderr.tell()

    def write(self, out: Path, run: str, ended: int) -> None:
        sys.stderr.flush()
        with open(out / f"err.{RANK}", encoding="utf-8") as f:
            f.seek(self.err_at)
            printed = [line.rstrip("\n") for line in f if line.startswith("trainproof")]
        rep = self.cb.report
        got = {
            "rank": RANK,
            "ended": ended,
            "stopped_at": self.cb.stopped_at,
            "judged": self.judged,
            "alerts": self.alerts,
            "printed": printed,
            "fails": sorted(f.id for f in rep.findings if f.level.value == "FAIL") if rep else [],
        }
        (out / f"{run}.{RANK}.json").write_text(json.dumps(got))


def hf(out: Path) -> None:
    import transformers
    from _hf_runs import random_tokens
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    from trainproof.integrations.hf import TrainproofCallback

    transformers.logging.set_verbosity_error()
    # Adam at lr 5 without clipping diverges within a few steps; lr 1e-3 is healthy.
    for run, lr, clip in (("broken", 5.0, 0.0), ("healthy", 1e-3, 1.0)):
        transformers.set_seed(0)
        model = GPT2LMHeadModel(
            GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=32, bos_token_id=0, eos_token_id=0)
        )
        args = TrainingArguments(
            output_dir=str(out / run),
            max_steps=40,
            logging_steps=1,
            report_to=[],
            use_cpu=True,
            ddp_backend="gloo",
            save_strategy="no",
            learning_rate=lr,
            max_grad_norm=clip,
            per_device_train_batch_size=8,
            disable_tqdm=True,
            seed=0,
        )
        cb = TrainproofCallback(policy="stop_on_fail")
        seen = Seen(cb)
        trainer = Trainer(model=model, args=args, train_dataset=random_tokens(), callbacks=[cb])
        trainer.train()
        seen.write(out, run, trainer.state.global_step)


def lightning(out: Path) -> None:
    import lightning.pytorch as pl
    import torch
    from _lightning_runs import clusters, mlp

    from trainproof.integrations.lightning import TrainproofCallback
    from trainproof.live import guardian

    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    logging.getLogger("lightning.fabric").setLevel(logging.ERROR)
    real = guardian.Guardian.affordable
    calls = [0]

    def uneven(self, now=None) -> bool:
        # Rank 0 can always afford a judgement, rank 1 every other time it is asked.
        calls[0] += 1
        return RANK == 0 or calls[0] % 2 == 0

    # SGD at lr 10 gives NaN within ~7 steps; Adam at 1e-3 is healthy.
    for run, opt, lr, afford in (
        ("broken", "sgd", 10.0, real),
        ("healthy", "adam", 1e-3, real),
        ("uneven", "sgd", 10.0, uneven),
    ):
        guardian.Guardian.affordable = afford
        pl.seed_everything(0, verbose=False)
        cb = TrainproofCallback(policy="stop_on_fail", check_every=2)
        seen = Seen(cb)
        trainer = pl.Trainer(
            accelerator="cpu",
            devices=2,
            strategy="ddp",
            max_steps=40,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            callbacks=[cb],
            val_check_interval=10,
            check_val_every_n_epoch=None,
        )
        train = torch.utils.data.DataLoader(clusters(2048, 1), batch_size=32, shuffle=True)
        val = torch.utils.data.DataLoader(clusters(128, 2), batch_size=64)
        trainer.fit(mlp(opt, lr), train, val)
        seen.write(out, run, int(trainer.global_step))
    guardian.Guardian.affordable = real


def warm_up() -> None:
    """Judge a few records once, so the first judgement of a run does not pay for loading
    the rules (which would make :meth:`Guardian.affordable` ration the next ones by wall
    time, and the stop step depend on the machine's speed)."""
    from trainproof.live.guardian import Guardian

    g = Guardian()
    for i in range(20):
        g.add(i, {"loss": 1.0 / (i + 1), "grad_norm": 1.0, "lr": 1e-3})
    g.judge()


def main() -> None:
    framework, out = sys.argv[1], Path(sys.argv[2])
    (out / f"pid.{RANK}").write_text(str(os.getpid()))  # for the parent to kill on a hang
    sys.stderr = open(out / f"err.{RANK}", "w", encoding="utf-8", buffering=1)  # noqa: SIM115
    warm_up()
    {"hf": hf, "lightning": lightning}[framework](out)


if __name__ == "__main__":
    main()
