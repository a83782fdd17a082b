"""The loss fallback: which key is the train (or eval) loss when no alias names it.

When no alias names the train loss (or the eval loss), the loss is chosen among the keys
whose *words* name a loss (:func:`loss_candidate`). A key is split into lower-case words at
every non-alphanumeric character and at every lower-to-upper case change
(``train/CrossEntropyLoss`` -> ``train cross entropy loss``;
:func:`~trainproof.aliases.vocabulary.words`). A key is a
candidate when one word is a loss word (:data:`LOSS_WORDS`: ``loss``, ``losses``,
``cost``, ``nll``, ``nelbo``, the cross-entropies in bits ``bpd``, ``bpb``, ``bpc`` (per
dimension, byte, character), ``mse``, or any word ending in ``loss`` such as
``logloss``; or a maximised objective negated, :data:`MAXIMISED_WORDS`), and never when one word says it is something else (:data:`NOT_LOSS_WORDS`:
an accuracy, a learning rate, a count, a time, a scale, a gradient norm, a weight, a
best-so-far, a min/max band…). Each candidate has a split (a word from
:data:`EVAL_WORDS` makes it an eval loss, one from :data:`TRAIN_WORDS` a train loss, else
unmarked: read as train), a kind (a *total* when its other words are only total words,
:data:`TOTAL_WORDS`, or none; a *component* otherwise: ``loss_cls``, ``train/box_loss``)
and a granularity (per step: ``step``/``batch``/``iter`` words; per epoch: ``epoch``;
else unmarked, between the two). The train loss is the first train or unmarked candidate
in the order

1. a total before a component (``total_loss`` beats ``loss_cls``);
2. train before unmarked (``train_loss_batch`` beats ``mean_loss``);
3. per step, then unmarked, then per epoch (``loss_step`` beats ``loss_epoch``);
4. fewer words, then the alphabetically first key (so column order never matters).

The eval loss is the first eval candidate in the same order: a log whose only loss is a
validation or test loss gets it as ``eval_loss``, never ignored. When the best train (or
eval) candidate is a component, there is no total to read:

* components of one objective (YOLO's ``train/box_loss``, ``train/obj_loss``,
  ``train/cls_loss``; detectron2's ``loss_*`` without ``total_loss``; a VAE's
  ``recon_loss`` and ``kld_loss``; a loss named only by its kind beside them, such as
  RT-DETR's ``train/l1_loss`` beside ``train/giou_loss`` and ``train/cls_loss``, is one
  of them) are summed into the total the optimiser minimises,
  reported as ``how: "fallback"`` with ``sum_of`` listing them, over the steps where every
  one of them is logged (:class:`~trainproof.runlog.RunLogBuilder` builds the sum; a
  component that is exactly zero by construction, such as a one-class detector's class
  loss, then cannot pass for a collapsed loss);
* components of separate networks (RL ``loss_actor``/``loss_critic``,
  ``policy_gradient_loss``/``value_loss``, a GAN's generator and discriminator:
  :data:`SEPARATE_NETWORK_WORDS`) have no meaningful sum, and none of them is a loss that
  must fall in a healthy run (an actor's ``-Q`` falls or rises with the returns, a
  critic's TD error grows with them): no loss is mapped, and the run is not judged on a
  loss (``TP-NO-LOSS``) rather than judged on the wrong curve. A total beside them
  (``total_loss`` with ``value_loss`` and ``policy_gradient_loss``) is read as usual.

Auxiliary terms (:data:`AUXILIARY_WORDS`: a mixture-of-experts router's load-balancing
loss, a z-loss, an ``aux`` head) beside a loss of the objective are set aside before the
order is read: never the loss, never summed into it (listed last under ``ignored``). A
one-word loss name's prefix (``zloss``, ``valloss``) counts as a separate word would.

The report's ``mapping`` says ``how: "fallback"`` and lists the other candidates under
``ignored`` (the first of them is the runner-up).

The fallback is a judgement of its own (what is a loss, which of several is *the* loss, when
components are summed) beside the alias table's plain ranking: it reads keys by their words
(:mod:`.vocabulary`), never by the table, and :func:`~trainproof.aliases.mapping.resolve`
asks it only for keys no alias claims.
"""

from __future__ import annotations

from collections.abc import Iterable

from .runs import is_band
from .vocabulary import key_words, words

#: Words that name a loss. A word ending in ``loss`` (``logloss``, ``bceloss``) is one too,
#: and so are the words ``cross entropy`` together (MXNet's ``cross-entropy`` metric):
#: OpenNMT-py prints its train loss as ``xent``, Keras' metric as ``crossentropy``.
#: Cross-entropies in bits per dimension, byte or character: losses, in bits, not nats.
BITS_LOSS_WORDS = frozenset({"bpd", "bpb", "bpc"})
LOSS_WORDS = frozenset({"loss", "losses", "cost", "nll", "nelbo", "mse", "xent", "crossentropy"}) | BITS_LOSS_WORDS
#: Words of an objective that training maximises (the evidence lower bound, a
#: log-likelihood): a loss only where the key negates it (``neg_elbo``,
#: ``negative_log_likelihood``) or names a loss beside it (``elbo_loss``). A key that names
#: the objective alone (``elbo``, ``train/elbo``) has the sign its writer chose (a VAE
#: tutorial logs the ELBO rising; Pyro's SVI returns its negative, falling) and is no loss:
#: read as one, a rising ELBO is a divergence.
MAXIMISED_WORDS = frozenset({"elbo", "likelihood"})
#: Words that negate a maximised objective into a loss.
NEGATION_WORDS = frozenset({"neg", "negative", "minus"})

#: Words that make a key something other than a loss even when it has a loss word: an
#: accuracy, a learning rate, a count, a time, the mixed-precision scale, a gradient norm,
#: a loss weight or coefficient, a best-so-far or a band, a ratio or share.
NOT_LOSS_WORDS = frozenset(
    {
        "acc",
        "accuracy",
        "lr",
        "learning",
        "rate",
        "count",
        "counts",
        "num",
        "number",
        "n",
        "time",
        "timestamp",
        "duration",
        "sec",
        "secs",
        "seconds",
        "ms",
        "scale",
        "scaler",
        "grad",
        "grads",
        "gradients",
        "norm",
        "weight",
        "weights",
        "coef",
        "coeff",
        "coefficient",
        "lambda",
        "alpha",
        "beta",
        "best",
        "min",
        "max",
        "ratio",
        "std",
        "var",
        "variance",
        "percent",
        "pct",
        "frac",
        "fraction",
        "improvement",
        "delta",
        "diff",
        "threshold",
        "patience",
        "clip",
        "clipped",
        "skipped",
        "nan",
        "inf",
        "is",
        "has",
        # a perplexity is exp(loss): logged beside its loss (Megatron's ``lm loss PPL``), it
        # is another reading of the same number, never a term to add to it
        "ppl",
        "perplexity",
    }
)

#: Words that mark an evaluation split (validation, test, dev, held-out).
EVAL_WORDS = key_words("eval", "test")

#: Words that mark the training split.
TRAIN_WORDS = key_words("train")

#: Words that leave a loss a total: an aggregate, or a running/smoothed reading of it.
TOTAL_WORDS = frozenset(
    {
        "total",
        "overall",
        "combined",
        "full",
        "sum",
        "all",
        "mean",
        "avg",
        "average",
        "current",
        "running",
        "smoothed",
        "smooth",
        "ema",
        "reduced",
        "global",
        "stats",
        "iter",
        "logs",
        "metrics",
    }
)

#: Words that name what kind of loss it is (cross-entropy, NLL, a regression error), not a
#: part of it: ``train/CrossEntropyLoss``, ``val/rmse_loss`` and Keras'
#: ``sparse_categorical_crossentropy`` are totals.
LOSS_KIND_WORDS = frozenset(
    {
        *("ce", "bce", "xent", "crossentropy", "nll", "mse", "rmse", "mae", "l1", "l2", "huber", "ctc"),
        *("lm", "mlm", "clm", "binary", "categorical", "sparse"),
    }
)

_STEP_WORDS = key_words("step")
_EPOCH_WORDS = key_words("epoch")

#: Component words of separate networks or objectives whose sum means nothing (RL
#: actor-critic and policy/value terms, GAN generator and discriminator, entropy bonuses).
SEPARATE_NETWORK_WORDS = frozenset(
    {
        "actor",
        "critic",
        "policy",
        "pg",
        "value",
        "vf",
        "qf",
        "q",
        "entropy",
        "generator",
        "discriminator",
        "gen",
        "disc",
        "objective",
    }
)

#: A GAN's discriminator and generator by their letters (``d_loss``/``g_loss``,
#: ``loss_D``/``loss_G``, ``lossD``/``lossG``): separate networks when both are there (one
#: ``d`` alone may name another term, a depth loss).
GAN_PAIR = frozenset({"d", "g"})

#: Words of an auxiliary term that rides beside the objective with a small weight and is
#: logged unweighted: a mixture-of-experts router's load-balancing loss (weight ~1e-2) and
#: z-loss (~1e-3; Zoph et al. 2022, ST-MoE), an auxiliary head's loss. Beside a loss of
#: the objective itself they are never summed into it (their plain sum is not what the
#: optimiser minimises, and a z-loss may rise while the model learns), nor read as it.
AUXILIARY_WORDS = frozenset({"aux", "auxiliary", "router", "balance", "balancing", "lb", "moe"})
#: Coordinate parts beside which a ``z`` component is the third coordinate's loss (``x_loss``,
#: ``y_loss``, ``z_loss`` of a 3-D regression), not a z-loss.
_COORDINATE_WORDS = frozenset({"x", "y"})

#: Prefixes that make a word ending in ``loss`` the name of a kind of loss (CatBoost's
#: ``Logloss``, torch's ``BCELoss`` written as one word); any other prefix is a part
#: (OLMo's ``train/ZLoss`` read as ``zloss`` is the z-loss, a component).
_KIND_PREFIXES = frozenset({"log"})

#: At most this many components are summed into a synthesized total; more than that are
#: several groups (a multi-agent log), not one objective.
MAX_SUM_PARTS = 8


def _is_loss_word(w: str) -> bool:
    return w in LOSS_WORDS or (w.endswith("loss") and len(w) > 4)


def _loss_word_prefix(w: str) -> str | None:
    """The part a one-word loss name carries before ``loss`` (``zloss`` -> ``z``,
    ``auxloss`` -> ``aux``), or ``None`` where there is none or it names the loss's kind
    (``logloss``, ``bceloss``), its split or its aggregate (``valloss``, ``meanloss``: the
    prefix marks the split, or names a total, and is no part)."""
    if w in LOSS_WORDS or not w.endswith("loss"):
        return None
    p = w[:-4]
    plain = LOSS_KIND_WORDS | _KIND_PREFIXES | EVAL_WORDS | TRAIN_WORDS | TOTAL_WORDS | _STEP_WORDS | _EPOCH_WORDS
    return None if not p or p in plain else p


def loss_candidate(raw: str) -> dict | None:
    """How the fallback order sees one raw key, or ``None`` when it is no loss.

    Returns:
        ``{"split": "train"|"eval"|"unmarked", "total": bool, "granularity":
        "step"|"unmarked"|"epoch", "parts": [the words that make it a component],
        "words": [...]}``.
    """
    if is_band(raw):
        return None
    ws = words(raw)
    wset = set(ws)
    negated = bool(wset & MAXIMISED_WORDS and wset & NEGATION_WORDS)
    named = (
        negated or any(_is_loss_word(w) for w in ws) or any(a == "cross" and b == "entropy" for a, b in zip(ws, ws[1:]))
    )
    if not named or any(w in NOT_LOSS_WORDS for w in ws):
        return None
    # a one-word loss name's prefix marks its split and granularity as a separate word
    # does: ``valloss`` is a validation loss, ``trainloss`` a train loss
    marks = wset | {w[:-4] for w in ws if w.endswith("loss") and len(w) > 4}
    split = "eval" if marks & EVAL_WORDS else "train" if marks & TRAIN_WORDS else "unmarked"
    gran = "step" if marks & _STEP_WORDS else "epoch" if marks & _EPOCH_WORDS else "unmarked"
    # "cross entropy" is a kind of loss; a bare "entropy" loss is an RL entropy bonus.
    kinds = ws if "cross" not in wset else [w for w in ws if w not in ("cross", "entropy")]
    parts = [p for w in kinds if (p := _loss_word_prefix(w)) is not None] + [
        w
        for w in kinds
        if not (
            _is_loss_word(w)
            or w in MAXIMISED_WORDS  # the objective's name is the kind of loss, as "cross entropy" is
            or (negated and w in NEGATION_WORDS)
            or (w == "log" and "likelihood" in wset)
            or w in EVAL_WORDS
            or w in TRAIN_WORDS
            or w in TOTAL_WORDS
            or w in LOSS_KIND_WORDS
            or w in _STEP_WORDS
            or w in _EPOCH_WORDS
        )
    ]
    total = not parts or bool(wset & {"total", "overall", "combined", "full", "sum"})
    return {"split": split, "total": total, "granularity": gran, "parts": parts, "words": ws}


_SPLIT_RANK = {"train": 0, "unmarked": 1, "eval": 0}
_GRAN_RANK = {"step": 0, "unmarked": 1, "epoch": 2}


def _order(key: str, c: dict) -> tuple:
    return (not c["total"], _SPLIT_RANK[c["split"]], _GRAN_RANK[c["granularity"]], len(c["words"]), key)


def _as_sibling(c: dict, cands: list[dict]) -> dict:
    """A candidate that is a total only by its kind (``train/l1_loss``: its other words
    all :data:`LOSS_KIND_WORDS`, none of :data:`TOTAL_WORDS`) beside a component of the
    same split and granularity is one more component, its kind its part: RT-DETR logs
    ``train/giou_loss``, ``train/cls_loss`` and ``train/l1_loss``, a VAE ``mse_loss`` and
    ``kld_loss``, and the objective is their sum. Any other candidate is returned as it is."""
    ws = set(c["words"])
    kinds = [w for w in c["words"] if w in LOSS_KIND_WORDS]
    if not c["total"] or not kinds or ws & TOTAL_WORDS:
        return c
    for o in cands:
        if not o["total"] and o["split"] == c["split"] and o["granularity"] == c["granularity"]:
            return {**c, "total": False, "parts": kinds}
    return c


def _auxiliary(c: dict, coordinates: bool) -> bool:
    """Whether a candidate is an auxiliary term (:data:`AUXILIARY_WORDS`, or the z-loss:
    a ``z`` part where no other candidate has an ``x`` or ``y`` coordinate part)."""
    parts = set(c["parts"])
    return bool(parts & AUXILIARY_WORDS) or ("z" in parts and not coordinates)


def auxiliary_terms(keys: Iterable[str]) -> list[str]:
    """The keys among ``keys`` that name an auxiliary train term (a router's load-balancing
    loss, a z-loss, an ``aux`` loss: :func:`_auxiliary`), in the order given: the terms the
    fallback sets aside beside a loss of the objective, which the training still adds to
    the objective it steps on. Eval-split keys are not train terms."""
    found = [(k, c) for k in keys if (c := loss_candidate(k)) is not None and c["split"] != "eval"]
    coordinates = any(set(c["parts"]) & _COORDINATE_WORDS for _, c in found)
    return [k for k, c in found if _auxiliary(c, coordinates)]


def fallback_entry(canon: str, keys: Iterable[str]) -> dict | None:
    """The mapping entry the loss fallback order gives ``canon`` (``loss`` or
    ``eval_loss``) among ``keys``, or ``None`` when no key is a candidate for it.

    Returns:
        ``{"source", "ignored", "how": "fallback", "why"}``, plus ``"sum_of"`` (the
        component keys, sorted; ``source`` is then their names joined by ``+``) when the
        loss is the sum of one objective's components.
    """
    want_eval = canon == "eval_loss"
    found = [(k, c) for k in keys if (c := loss_candidate(k)) is not None and (c["split"] == "eval") == want_eval]
    if not found:
        return None
    coordinates = any(set(c["parts"]) & _COORDINATE_WORDS for _, c in found)
    aux = [(k, c) for k, c in found if _auxiliary(c, coordinates)]
    main = [(k, c) for k, c in found if not _auxiliary(c, coordinates)]
    if main:
        # an auxiliary term beside a loss of the objective is neither it nor a part of it
        found = main
    cands = [(k, _as_sibling(c, [o for _, o in found])) for k, c in found]
    cands = sorted((_order(k, c), k, c) for k, c in cands)
    _, best, bc = cands[0]
    ranked = [k for _, k, _ in cands] + (
        [k for _, k, _ in sorted((_order(k, c), k, c) for k, c in aux)] if main else []
    )
    split = {"train": "train", "eval": "evaluation", "unmarked": "unmarked (read as train)"}[bc["split"]]
    if bc["total"]:
        gran = {"step": ", logged per step", "epoch": ", logged per epoch", "unmarked": ""}[bc["granularity"]]
        why = f"no alias names it: the first {split} total loss by the fallback order{gran}"
        return {"source": best, "ignored": ranked[1:], "how": "fallback", "why": why}
    # No total: the components of the best (split, granularity) class.
    same = [
        (o, k, c)
        for o, k, c in cands
        if not c["total"] and c["split"] == bc["split"] and c["granularity"] == bc["granularity"]
    ]
    parts = {w for _, _, c in same for w in c["parts"]}
    separate = bool(parts & SEPARATE_NETWORK_WORDS) or GAN_PAIR <= parts
    if separate:
        # An actor's loss (-Q), a policy-gradient term or a GAN's losses need not fall in a
        # healthy run, and a critic's TD loss grows with the returns it predicts: none of
        # them can be judged as "the" training loss, so none is mapped (TP-NO-LOSS says so).
        return None
    if len(same) < 2 or len(same) > MAX_SUM_PARTS:
        chosen = best
        why = (
            f"no total loss; {len(same)} components, too many to be one objective: the first "
            "by the fallback order is read"
            if len(same) > MAX_SUM_PARTS
            else "no total loss; its only component is read"
        )
        return {"source": chosen, "ignored": [k for k in ranked if k != chosen], "how": "fallback", "why": why}
    parts = sorted(k for _, k, _ in same)
    why = f"no total loss: the sum of its {len(parts)} {split} components, over the steps where every one is logged"
    return {
        "source": "+".join(parts),
        "ignored": [k for k in ranked if k not in parts],
        "how": "fallback",
        "why": why,
        "sum_of": parts,
    }
