"""Framework callbacks: trainproof judging a run from inside its trainer.

One module per framework, each with a ``TrainproofCallback``:

* :mod:`trainproof.integrations.hf` — Hugging Face ``Trainer`` (``pip install "trainproof[hf]"``)
* :mod:`trainproof.integrations.lightning` — PyTorch Lightning (``pip install "trainproof[lightning]"``)
* :mod:`trainproof.integrations.keras` — Keras 3 (``pip install "trainproof[keras]"``)

Each callback only turns what its framework logs into records; a shared
:class:`~trainproof.integrations._common.LiveRun` feeds them to a
:class:`~trainproof.live.guardian.Guardian` (the rules of ``trainproof judge``) and applies
the policy: ``"warn"`` prints new findings, ``"stop_on_fail"`` also stops the run at the
first FAIL. Importing this package imports no framework; importing one of its modules
imports that framework only.

Alerting, for the ``on_alert`` argument of the callbacks and of :func:`trainproof.watch`:

* :mod:`trainproof.integrations.wandb_alert` — ``WandbAlert()`` posts each new WARN or FAIL
  finding as a W&B alert on the active run (``pip install "trainproof[wandb]"``; wandb is
  imported when one is created)
"""

# No __all__ naming the submodules: `from trainproof.integrations import *` must not import
# every framework.
