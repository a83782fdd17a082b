"""Console captures (``nohup.out``, ``slurm-*.out``, ``train.log``) of training scripts.

Two readings share one pass over the lines:

* HF Trainer's log dicts, printed as Python literals:
  ``{'loss': 1.234, 'grad_norm': 0.56, 'learning_rate': 2e-05, 'epoch': 0.1}`` (newer
  versions quote the numbers: ``{'loss': '1.234', …}``). They are parsed with
  ``ast.literal_eval`` (never ``eval``); bare ``nan``/``inf`` become values. The step is
  the ``'step'`` key when present, else the running count of train dicts. Eval dicts
  (``{'eval_loss': …}``) take the step of the last train dict; the end-of-training summary
  (``{'train_runtime': …}``) is kept as meta.
* Every other printout, by one tokenizer of ``name <sep> number`` pairs, the separator
  being ``:``, ``=``, blanks, a ``|`` table cell or a ``[``: ``iter 100: loss 3.21``,
  ``step=100 loss=3.2``, ``| epoch 1 | lr 20.00 | loss 5.91 |``, ``Epoch [1/50], Train
  Loss: 1.94``, ``Ep. 3 : Up. 1000 : Cost 4.21``, ``train/CrossEntropyLoss=3.98``. A name
  is up to six words; a value may carry ``%`` or ``s`` (dropped) and a ``/total``, and
  may be printed as a tensor (``loss: tensor(0.53, device='cuda:0')``, in a dict too). A
  train loss printed with no value on a line with a step (``step 100 loss: None``,
  ``null``, ``N/A``) is a record that holds the loss empty, so that a loss that stops is
  told (TP-LOSS-STOPPED). Which
  pairs are the step is decided per line, in this order (see :func:`_step_of`):

  1. a global counter: a name containing ``global``, ``num_updates``, ``total_timesteps``,
     Marian's ``Up.``;
  2. an epoch together with a step, batch or iteration counter: ``(e-1)*S + s`` (``e*S + s``
     for a run that counts epochs from 0) where the
     counter prints its per-epoch total ``S`` (``Epoch [e/E], Step [s/S]``); without a
     total, a counter that starts again when the epoch changes is offset by where the
     previous epoch ended, and one that does not is the step itself;
  3. a step, batch or iteration counter alone (``iter 100``, ``Step 100/5000``);
  4. an epoch with a position in it: a tqdm bar's ``n/N`` (Lightning's ``Epoch 0: 45%|██|
     45/100 [..., loss=0.123]``), ``200/2983 batches``, mmengine's ``Epoch(train)
     [e][n/N]``: ``(e-1)*N + n``;
  5. an epoch alone (``Epoch 3/10 | Loss: 0.5``).

  Once a run has a step axis, a line with only an epoch (``Epoch 1 completed. Average
  Loss: 4.68``, an end-of-epoch validation) takes the last step, as an eval dict does.

  A line is a training record when it has a step and a loss-like name (``loss`` in it,
  ``cost``, a cross-entropy): a step printed alone (``Epoch 3/10``, ``[step=100/5000]``)
  opens a block that the following lines of pairs fill (Keras' epoch summary, OLMo's
  indented ``train/CrossEntropyLoss=3.98`` lines); a Keras progress frame ``12/128 [==>..]``
  short of its total is skipped, so each epoch gives the summary line only.
  Stable-Baselines3 tables (``| train/loss | 0.12 |`` rows between ``-----`` rulers) give one
  record per table at its ``total_timesteps``.

Names are kept as the log prints them, normalised: lower case, words and ``CamelCase`` parts
joined by ``_`` (``Train Loss``, ``TrainLoss`` -> ``train_loss``; ``L.r.`` -> ``lr``). A line
whose leading text marks it as validation (``[valid]``, ``| valid |``, ``Epoch(val)``,
``valid on 'valid' subset``) prefixes its names with ``val_`` (``test_`` for a test line),
and there a cross-entropy is ``val_loss``; Marian's training ``Cost`` is ``loss``. A
hand-rolled ``Train: 0.07 | Val: 0.09`` on a step line, with no loss-like name, no ``%`` and no
accuracy on the line, is read as ``train_loss``/``val_loss``. Running bests (``best_loss``)
are not observations and are left out. An evaluation printed with no step joins the train
step before it: a validation line at once (``Validation loss: 0.45``), a test line once
training goes on after it (PyTorch's MNIST example's ``Test set: Average loss: 0.0475,
Accuracy: 9846/10000 (98%)`` after every epoch; a test printed once after training is no
point of the run), the ImageNet script's `` * Acc@1 … Acc@5 …`` summary with the running
average of its last ``Test: [n/N]`` line's loss. An accuracy printed as ``c/N`` is c/N.

Restarted runs: when the step goes back, a value at the run's start (at or below the step of
its second record, as a restart may count from 0 or from 1) starts a new run, and only one
run is judged: the last with at least 8 train points and a quarter of the longest run's (a
capture appended to by a script run again after a fix or a preemption is about its latest
attempt; a short test loop or sanity check printed after training is not), else the longest
(the most records, the later on a tie: it holds the most evidence); a value inside the run is a
resume from a checkpoint, whose records replace the earlier ones from
that step on. A line that goes back only to repeat values already logged at that step (the
best epoch re-printed when its checkpoint is saved or loaded) is no step back and is
skipped. Runs and resumes are named in notes. The records of the current run and of the
earlier one that would be judged are held until the file ends.

A line is read from its message on: a log record's prefix (a time stamp, then host, rank,
logger and ``file.py:line`` up to the level, as Python's ``logging`` and OLMo's trainer
write it; glog's ``I1226 19:16:08.325 138614 run.py:803]``) holds no metrics. A
configuration or argument dump (``TrainConfig(…)``, ``Namespace(…)``: several assignments
of ``None``, booleans, strings) gives no pairs, and neither does a line trainproof itself
printed into the capture (the in-loop monitor's ``trainproof: FAIL at step …``, a finding).

llm.c's ``main.log`` is read in its own dialect: ``s:<step> trl:<loss> lr:<lr>
norm:<grad norm>``, ``s:<step> tel:<val loss>``, ``s:<step> eval:<accuracy>`` give ``loss``,
``lr``, ``grad_norm``, ``eval_loss`` and ``eval_accuracy`` (``norm`` means a gradient norm
there only).

A log whose loss lines print no step (``batch loss:4.0292``, at least :data:`MIN_STEPLESS`
lines of one loss name, nothing but pairs) takes the line order as its x axis and says so
in a note; so does a capture of HF dicts without ``'step'`` (its steps are log rows).

ANSI escapes and carriage-return progress output are ignored. A capture with none of these
lines is not a training log.
"""

from __future__ import annotations

import ast
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from ..aliases.loss_fallback import LOSS_WORDS
from ..aliases.vocabulary import console_words, is_eval_key, key_words
from ..runlog import Record
from ._io import HEAD_BYTES, ReadError, open_binary, open_text
from .coqui import ANSI
from .lines import Lines

name = "console"
description = "console capture: HF Trainer log dicts or trainer printouts of 'name: value' pairs"
file_names = ()
suffixes = (".log", ".txt", ".out")
run_suffixes = ()
#: A line's meaning depends on the lines before it (epoch headers, progress bars).
tail_mode = "whole"
preference = 6
#: Whether outputs anchor a finding at its line (a finding's line is the capture's line).
line_anchors = True

_DICT = re.compile(r"\{'(?:loss|eval_[A-Za-z0-9_]+|train_runtime|learning_rate|grad_norm|epoch)'\s*:[^{}]*\}")
#: Any flat Python dict with a quoted first key (see :func:`_dict_matches`).
_PY_DICT = re.compile(r"\{'[A-Za-z_][\w/.-]*'\s*:[^{}]*\}")
_DICT_KEYS = re.compile(r"""(?:'[^'\\\n]*'|"[^"\\\n]*")[ \t]*:""")
#: The epoch a printed dict ends with, or its epoch and then its step: the shape of HF's
#: ``Trainer.log`` (it adds the epoch to the logs it prints, and newer versions the step
#: after it), not of a checkpoint's metadata or a results table that holds an epoch among
#: other keys.
_EPOCH_KEY = re.compile(r"[{,]\s*'epoch'\s*:\s*[^,{}']+(?:,\s*'step'\s*:\s*[^,{}']+)?\s*\}$")


#: A JSON dict logged after a record prefix (fairseq's ``--log-format json``: ``… | INFO |
#: train_inner | {"epoch": 1, "update": 0.17, "loss": "2.875", …, "num_updates": "10"}``):
#: read as an HF dict is, when one of its keys names a loss.
#: Only after a blank (the prefix's): a line that is a JSON value itself is no capture's.
_JSON_DICT = re.compile(r'(?<=\s)\{"[A-Za-z_][A-Za-z0-9_]*"\s*:[^{}]*\}')


def _dict_step_key(key: str) -> bool:
    """Whether a logged dict's ``key`` is its step counter (see :data:`_DICT_GLOBAL`)."""
    if key in _DICT_GLOBAL:
        return True
    split, _, rest = key.partition("_")
    return rest in _DICT_GLOBAL and split in _DICT_SPLITS


def _dict_matches(line: str) -> Iterator[tuple[re.Match, dict]]:
    """The logged dicts of ``line``: HF's Python literals, other Python dicts of numbers
    alone with a loss key after an epoch or step head (Accelerate's examples print ``epoch
    0: {'accuracy': 0.58, 'train_loss': 1.93, 'epoch': 0}``), and JSON dicts with a loss key
    (a dict of settings alone, a printed configuration, is none). Each with its values
    (:func:`_dict_values`); a dict that does not parse is left out."""
    if "{'" in line:
        hf = False
        for m in _DICT.finditer(line):
            hf = True
            vals = _dict_values(m.group(0))
            if vals is not None:
                yield m, vals
        if not hf and ("loss" in line or "'epoch'" in line):
            for m in _PY_DICT.finditer(line):
                text = m.group(0)
                headed = "loss" in text and _DICT_HEAD.search(line, 0, m.start())
                # HF's Trainer.log ends every dict it prints with the epoch (and the
                # step), whatever the first key (TRL's PPO prints 'eps' first, a
                # likelihood model 'nll')
                if headed or _EPOCH_KEY.search(text):
                    vals = _dict_values(text)
                    # numbers only: a dict of metrics, not of settings
                    if vals and len(vals) == len(_DICT_KEYS.findall(text)):
                        yield m, vals
    if '{"' in line:
        for m in _JSON_DICT.finditer(line):
            if "loss" in m.group(0):
                vals = _dict_values(m.group(0))
                if vals is not None:
                    yield m, vals


#: ``str(tensor)`` in a printed dict (``'loss': tensor(0.53, device='cuda:0',
#: grad_fn=<NllLossBackward0>)``), numpy 2's ``np.float32(0.53)`` (sentence-transformers'
#: evaluator dicts) and ``tf.Tensor(0.53, shape=(), dtype=float32)``: the value is its first
#: argument.
_TENSOR = re.compile(
    r"(?:tensor|tf\.Tensor|(?:np|numpy)\.(?:float|int|uint)(?:8|16|32|64)?)\(\s*([-+]?[\w.]{1,40})\s*"
    r"(?:,(?:[^(){}]|\(\)){0,200})?\)"
)
_BARE = re.compile(r"(?<=[:\[,\s])(-?inf|nan)(?=\s*[,}\]])")

# --------------------------------------------------------------------------- the tokenizer

# A word: a letter, then letters/digits/underscores, with inner ``.``, ``/``, ``-`` joins
# (``train/loss``, ``ce-mean-words``, ``ms/batch``) and an optional abbreviation dot
# (``Ep.``, ``L.r.``). The inner joins need a word character after them, so there is one
# way only to split a word: no backtracking on long runs.
_WORD = r"[A-Za-z_][A-Za-z0-9_]*(?:[./-][A-Za-z0-9_]+)*\.?"
# A number: thousands groups (``12,345``), a decimal with exponent, nan/inf. The unit that
# may follow is ``%`` or ``s``; any other letter glued to it (``41ms``, ``8.7it/s``,
# ``nanoGPT``), a hyphen and a word (``5-step``, ``3-layer``: an adjective in prose) or a
# clock's ``:`` + digit (``0:10:00``) makes it no value, and so does a digit right after it: a number is read whole or not at all (never ``41`` of ``41.23ms``).
_NUM = (
    r"[-+]?(?:\d{1,3}(?:,\d{3})+(?![\d.,])|\d+,\d+(?![\d.,])|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?"
    r"|(?i:nan|inf(?:inity)?)(?:\.0(?!\d))?)"
)
# A word of a name is never a non-finite value: ``loss nan lr 0.01`` is ``loss`` = NaN and
# ``lr`` = 0.01, not ``loss_nan_lr`` = 0.01.
_NAME_WORD = r"(?!(?i:nan|inf(?:inity)?)(?:\.0)?(?![\w.]))" + _WORD
# Separators: ``\s*[:=|]\s*`` has one required character between its blank runs, so a long
# blank run splits one way only; ``\s*\[\s*`` likewise; ``\s+`` alone is the third way.
# ``=[`` / ``: [`` opens a printed Python list (``lr=[0.0001, 0.0001]``, one learning rate
# per parameter group, as DeepSpeed and ``scheduler.get_last_lr()`` print them): its first
# value is read (:func:`_pairs` leaves a counter opened so to the bracketed-step readers).
_PAIR = re.compile(
    rf"(?<![\w./-])(?P<name>{_WORD}(?: {_NAME_WORD}){{0,5}})(?:\s*[:=|]\s*|\s*\[\s*|(?P<list>\s*[:=]\s*\[\s*)|\s+)"
    rf"(?:tensor\(\s*)?(?P<num>{_NUM})(?!\.?\d|,\d)(?P<unit>%|s(?![\w])|(?![\w]|:\d|-[A-Za-z]))(?:\s*/\s*(?P<tot>\d+)(?![\w.]))?"
)
#: The rest of a bracketed range after its first number (``-20]`` of ``Batch [10-20]``).
_BATCH_RANGE = re.compile(r"-(\d{1,12})\s*\]")
#: A number whose comma can only be a decimal one: ``0,5``, or not three digits after it.
_DECIMAL_COMMA = re.compile(r"(?<![\d.,])(?:[-+]?0,\d+|\d+,(?:\d{1,2}|\d{4,}))(?![\d.,])")
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+")
#: A name that ends in a function word is prose, and the number after it no value of it:
#: Keras' ``val_loss improved from inf to 0.96310`` (read as ``val_loss_improved_from`` =
#: inf, a healthy run's eval loss non-finite), Megatron-LM's ``number of nan iterations: 0``.
#: After a ``nan``/``inf`` there, the pair glued by a blank (``iterations: 0``) is the same
#: phrase; after a number it is a pair of its own (``Batch 5 of 100 loss 0.3``).
_PROSE_END = re.compile(r"(?i)(?:^|[ _])(?:of|the|with|for|per|no|a|an|from|to|than|at|by|in|on|into|as)$")
#: A loss printed with no value (``step 100 loss: None``, ``loss=nan`` is a value): the
#: record holds the loss empty (a hole), so that a loss that stops is told.
_ABSENT_PAIR = re.compile(
    rf"(?<![\w./-])(?P<name>{_WORD}(?: {_NAME_WORD}){{0,5}})(?:\s*[:=|]\s*|\s+)(?:None|null|N/A|<NA>|#N/A)(?![\w/>])"
)
_ABSENT_HINT = re.compile(r"None|null|N/A|<NA>")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_JOIN = re.compile(r"[^a-z0-9]+")
_LEVEL = frozenset({"info", "debug", "warning", "warn", "error", "trace", "notice"})


def _mark(words: frozenset[str]) -> re.Pattern:
    """A whole printed word of ``words``, in any case (longest first: one try each)."""
    alts = "|".join(sorted(words, key=lambda w: (-len(w), w)))
    return re.compile(rf"(?<![\w/.])(?:{alts})(?![\w/.])", re.I)


# The split words and the step words come from the alias vocabulary (aliases.vocabulary.VOCABULARY),
# as a console line reads them.
_EVAL_MARK = _mark(console_words("eval"))
_TEST_MARK = _mark(console_words("test"))
_ACC = re.compile(r"acc", re.I)
#: A normalised key that names an accuracy (``accuracy``, ``test_acc``, ``acc_1``), whose
#: ``n/N`` is n correct of N.
_ACC_KEY = re.compile(r"(?:^|_)acc(?:uracy)?(?:_|\d|$)")
#: TF Estimator's line of evaluation results, ``Saving dict for global step 1000: accuracy =
#: 0.85, global_step = 1000, loss = 0.388``: its loss is the eval loss.
_TF_EVAL_RESULT = re.compile(r"Saving dict for global step")
# A tqdm bar's position: ``45%|████ | 45/100``; the bar is bounded so a line of pipes
# cannot make the search long.
_TQDM = re.compile(r"(?<![\d.])\d+%\|[^|\n]{0,400}\|\s*(\d+)/(\d+)")
# PyTorch Ignite's ProgressBar puts the position before the bar: ``Epoch [1/10]: [57/63]
# 90%|█████████ , loss=0.396 [00:00<00:00]`` (its description, then ``[n/total]``).
_IGNITE_BAR = re.compile(r"\[(\d+)/(\d+)\]\s+\d+%\|[^|\n]{0,400}?(?:\||,\s)")
# Between a bar's position and the first metric of its postfix: the bracket opened, not closed.
_POSTFIX_OPEN = re.compile(r"\s*\[[^\]\n]*")
_BATCHES = re.compile(r"(?<![\w.])(\d+)\s*/\s*(\d+)\s+(?:batches|batch|steps|iters|iterations)\b", re.I)
#: The PyTorch MNIST example's position right after the epoch, ``Train Epoch: 1 [640/60000
#: (1%)]``: the samples done in the epoch of its total.
_DONE_OF = re.compile(r"\s*\[\s*(\d+)\s*/\s*(\d+)\s*\(\s*\d+(?:\.\d+)?%\)\s*\]")
# mmengine: ``Epoch(train) [1][50/500]``, ``Iter(train) [50/1000]``; MMCV 1.x's text logger
# writes its train lines with no mode, ``Epoch [1][50/500]\tlr: 2.000e-02, …`` and ``Iter
# [50/1000]\tlr: …`` (its evaluations ``Epoch(val) [1][500]``): the modeless form is read
# only where the learning rate follows, as MMCV prints it first.
_MMENGINE = re.compile(
    r"\b(Epoch|Iter)(?:\((train|val|test)\)|(?=\s*\[[^\]\n]{1,20}\](?:\s*\[[^\]\n]{1,20}\])?\s+lr))"
    r"\s*\[\s*(\d+)(?:\s*/\s*(\d+))?\s*\](?:\s*\[\s*(\d+)\s*/\s*(\d+)\s*\])?"
)
# pytorch/examples' ProgressMeter (its ImageNet script, copied into many loops): a train
# line ``Epoch: [0][ 10/100]\tTime ...\tLoss 1.2429e+00 (1.3428e+00)\t...`` (each meter's
# value, then its running average in brackets) and a validation batch ``Test: [ 10/ 20]``,
# whose running values are no train step (its epoch's result is the `` * Acc@1`` line).
# Searched, not matched at the start: a progress frame can be glued before it.
_PROGRESS_METER = re.compile(
    r"(?<![\w.])(?:Epoch:\s*\[\s*(\d+)\s*\]\s*\[\s*(\d+)\s*/\s*(\d+)\s*\]|(Test):\s*\[\s*\d+\s*/\s*\d+\s*\])"
)
#: A ProgressMeter validation line's loss meter: its value, then its running average over
#: the batches so far (the average is the evaluation's loss up to that batch).
_METER_AVG_LOSS = re.compile(r"\bLoss\s+[-+.\deE]+\s+\(\s*([-+]?\d[-+.\deE]*)\s*\)")
#: The ImageNet script's summary of an evaluation, `` * Acc@1 22.266 Acc@5 64.141``.
_METER_SUMMARY = re.compile(r"\s*\*\s+Acc@1\s+(\d+(?:\.\d+)?)\s+Acc@5\s+(\d+(?:\.\d+)?)\s*$")
#: A line that is only an epoch header, ``Epoch 3/6`` (Keras; PaddlePaddle's ``Model.fit``,
#: whose ``step 10/100 - loss: …`` lines under it count within the epoch).
_EPOCH_HEADER = re.compile(r"\s*Epoch\s+(\d+)\s*/\s*\d+\s*$")
#: PaddlePaddle's ``Model.fit`` evaluates between ``Eval begin...`` and ``Eval samples: N``;
#: its ``step 16/16 - loss: …`` lines there count the evaluation's batches, and the last
#: one holds the evaluation's result.
_HAPI_EVAL_BEGIN = "Eval begin..."
_HAPI_EVAL_END = re.compile(r"\s*Eval samples:\s*\d+\s*$")
#: ESPnet2's trainer line head, ``1epoch:train:201-300batch: iter_time=…, loss=…``: the
#: epoch and the last batch of the span within it; its epoch summary ``1epoch results:
#: [train] … [valid] … loss=1.329, …`` holds the evaluation after ``[valid]``.
_ESPNET_BATCH = re.compile(r"\s*(\d+)epoch:train:\d+-(\d+)batch:\s*")
_ESPNET_RESULTS = re.compile(r"\s*(\d+)epoch results: ")
_ESPNET_VALID = re.compile(r"\[valid\]\s*([^\[\n]*)")
#: Flair's ModelTrainer: ``EPOCH 3 done: loss 1.4713 - lr 0.05`` restates the epoch's mean
#: (no step of the per-iteration series), and ``DEV : loss 1.43 - f1-score (micro avg)
#: 0.20`` is the evaluation on the dev split after it.
_FLAIR_EPOCH_DONE = re.compile(r"(?<![\w-])EPOCH \d+ done: ")
#: fairseq's per-interval line, ``train_inner | epoch 002:   100 / 1100 loss=…,
#: num_updates=1200, …`` (before its Hydra era ``| epoch 002:   100 / 1100 …``; with
#: ``--log-format tqdm`` a bar ``epoch 002:   9%|…| 100/1100 [… num_updates=1200 …]``), and
#: the end-of-epoch line after "end of epoch 2 (average epoch stats below)", ``train |
#: epoch 002 | loss 9.707 | … | num_updates 2200`` (``| epoch 002 | loss …``, ``epoch 002 |
#: loss …``): the epoch's mean restated at the last update, above the per-interval curve of
#: a falling loss. Where per-interval lines are logged it is no point of the curve; where
#: they are not (a log interval longer than an epoch) it is the curve. fairseq pads the
#: epoch to 3 digits and names ``num_updates`` on both.
_FAIRSEQ_INNER = re.compile(r"(?:train(?:_inner)?\s*)?\|?\s*epoch \d{3,}:.*\bnum_updates=\d")
_FAIRSEQ_EPOCH_MEAN = re.compile(r"(?:train\s*)?\|?\s*epoch \d{3,} \|(?!\s*valid on).*\|\s*num_updates \d")
_FLAIR_DEV = re.compile(r"(?<![\w-])DEV\s*:\s+")
#: The rows of the results.txt that YOLOv5 (before v6, 2021) and ultralytics/yolov3 write
#: once an epoch, with no header: ``epoch/last``, the GPU memory (``3.41G``), then 13
#: numbers in fixed-width columns (train.py's ``'%10s' * 2 + '%10.4g' * 13``). Named as
#: YOLOv5's later results.csv names them (its plot_results reads the same columns): the
#: epoch's mean box, objectness and class losses and their total, the labels and image
#: size of its last batch, precision, recall, mAP@0.5 and mAP@0.5:0.95 (yolov3 writes an
#: F1 there), and the validation box, objectness and class losses.
_YOLO_RESULTS = re.compile(r"\s*(\d+)/(\d+)\s+\d+(?:\.\d+)?G((?:\s+(?:%s)){13})\s*" % _NUM)
_YOLO_RESULTS_NAMES = (
    "train/box_loss",
    "train/obj_loss",
    "train/cls_loss",
    "train/total_loss",
    "labels",
    "img_size",
    "metrics/precision",
    "metrics/recall",
    "metrics/mAP_0.5",
    "metrics/mAP_0.5:0.95",
    "val/box_loss",
    "val/obj_loss",
    "val/cls_loss",
)
# A Keras progress or summary line: ``12/128 [==>...]``, ``128/128 ━━━━``, ``128/128 - 5s``.
_KERAS = re.compile(r"^\s*(\d+)/(\d+)\s+(?:\[|━|- )")
_RULER = re.compile(r"^\s*-{5,}\s*$")
# A log record's prefix: a time stamp (after the host in brackets, as ESPnet writes it),
# then what the logging library adds before the message (host, rank, logger, ``file.py:line``, process id) up to the level, or glog's
# ``I1226 19:16:08.325 138614 file.py:803]``. Its ``name:number`` parts (``host:0``,
# ``olmo.train:990``) are no metrics, so the line is read from its message on. The part
# before the level holds no ``=``, so a message that prints a level word later keeps its pairs.
# After the level, the logger's location in brackets: ``[train.py:120]``, or a dotted
# module and its line with the rank (OLMo's rich handler: ``[olmo.train:816, rank=0]``); a
# name with no dot (``[step:10]``) stays the message's.
_LOG_PREFIX = re.compile(
    r"^\s*(?:\[[^\]\s]{1,100}\]\s+)?\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?"
    r"[^=\n]{0,100}?(?<![\w/.-])(?:INFO|DEBUG|WARNING|WARN|ERROR|CRITICAL|TRACE|NOTICE)(?![\w/.-])\]?\s*[:|\-]?\s*"
    r"(?:\[(?:[\w.-]{1,100}\.py|[\w-]{1,100}(?:\.[\w-]{1,100}){1,10}):\d+(?::\w{1,100})?(?:,\s?rank=\d{1,6})?\]\s*)?"
    r"(?:\[Rank \d+\]\s*)?"
    r"|^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+\s+[^\]\s]{1,200}\]\s?"
)
#: A tqdm frame at a line's start, up to the end of its bracket (``Map:  45%|████▌ |
#: 4500/10000 [00:01<00:01, 4410.12 examples/s]``).
_GLUED_BAR = re.compile(r"[^|\n]{0,200}?\d+%\|[^|\n]{0,400}\|[^\[\n]{0,100}\[[^\]\n]{0,200}\]")
# An assignment whose value is no number (``None``, ``True``, a quoted string, a nested
# ``Config(``): a configuration or argument dump (``TrainConfig(...)``, ``Namespace(...)``),
# whose numbers (``global_train_batch_size=512``, ``auxiliary_loss_multiplier=1e-4``) are
# settings, not metrics. A line with :data:`_CONFIG_MIN` of them gives no pairs.
# A quoted value is bounded, so a line of unclosed quotes costs one short scan per ``=``.
_CONFIG_ASSIGN = re.compile(r"(?<![\w.])[A-Za-z_]\w*=(?:None|True|False|'[^'\n]{0,200}'|\"[^\"\n]{0,200}\"|[A-Z]\w*\()")
_CONFIG_MIN = 3
#: The prefix a multi-process launcher puts on each rank's lines: torchrun's ``--tee``
#: (``[rank1]:``, or the role and local rank: ``[default1]:``), mpirun's ``--tag-output``
#: (``[1,3]<stdout>:``). Group 1 or 2 is the rank.
_RANK_PREFIX = re.compile(
    r"\[(?:rank|default|worker|trainer)(\d{1,6})\]:[ \t]?|\[\d{1,6},(\d{1,6})\]<std(?:out|err)>:[ \t]?"
)
# llm.c's ``main.log``: ``s:<step> trl:<train loss> lr:<lr> norm:<grad norm>``, ``s:<step>
# tel:<val loss>`` and ``s:<step> eval:<HellaSwag accuracy>``. Its short names are read
# in this dialect only (``norm`` alone means no gradient norm elsewhere).
_LLMC = re.compile(r"^s:(\d+)((?:[ \t]+(?:trl|tel|lr|norm|eval):\S+)+)[ \t]*$")
_LLMC_NAMES = {"trl": "loss", "tel": "eval_loss", "lr": "lr", "norm": "grad_norm", "eval": "eval_accuracy"}
#: A line trainproof itself prints (the in-loop monitor's alerts on stderr, a finding of a
#: report) inside a capture of the run: its numbers are trainproof's, not the run's.
_OWN_LINE = re.compile(r"^(?:trainproof(?: \(rank \d+\))?: |\s*(?:PASS|INFO|WARN|FAIL|NOT-CHECKED)\s+TP-[A-Z0-9-]+: )")

_EPOCH_WORDS = console_words("epoch")
_COUNTER_WORDS = console_words("step")
#: An epoch or step head right before a printed dict (``epoch 3: {…}``, ``Step [20/100] {…}``).
_DICT_HEAD = re.compile(
    rf"(?<![\w/.])(?:{'|'.join(sorted(_EPOCH_WORDS | _COUNTER_WORDS, key=lambda w: (-len(w), w)))})"
    r"\s*\[?\s*\d+(?:\s*/\s*\d+)?\s*\]?\s*[:|,-]?\s*$",
    re.I,
)
_GLOBAL_WORDS = console_words("global")
#: The last words of a ``global…`` name that make it a counter (``global_step``,
#: ``trainer/global_step``, ``global_batch``, ``global_iter``); any other (``size``,
#: ``tokens``, ``norm``) names a quantity.
_COUNTER_TAILS = _COUNTER_WORDS | key_words("step") | {w.rsplit("_", 1)[-1] for w in _GLOBAL_WORDS}
#: The global counts that win over another global word on the same line (SB3 prints
#: ``total_timesteps`` beside its ``n_updates``): the environment steps are the x axis.
_GLOBAL_FIRST = ("total_timesteps", "num_updates")
#: The prefixes of an eval or test key: the split words no other split word starts
#: (``val`` for ``valid``, ``validation``; ``eval``; ``test``).
_SPLIT_WORDS = console_words("eval", "test")
_EVAL_KEYS = tuple(sorted(w for w in _SPLIT_WORDS if not any(v != w and w.startswith(v) for v in _SPLIT_WORDS)))
#: The counters a logged dict gives its step by, besides ``step``: the global counts of more
#: than one word (``num_updates``, ``global_step``; ``update`` alone is fairseq's fractional
#: epoch), bare or after a split word (fairseq's ``valid_num_updates``, ``train_num_updates``).
_DICT_GLOBAL = frozenset(w for w in _GLOBAL_WORDS if "_" in w)
_DICT_SPLITS = _SPLIT_WORDS | key_words("train")
#: The key prefixes of a logged dict of held-out metrics (HF's ``eval_``, fairseq's ``valid_``).
_DICT_EVAL_PREFIXES = tuple(sorted(w + "_" for w in _SPLIT_WORDS))
_SPLIT_NAMES = {
    "train": "train_loss",
    "training": "train_loss",
    "val": "val_loss",
    "valid": "valid_loss",
    "validation": "validation_loss",
    "eval": "eval_loss",
    "test": "test_loss",
}
_CE_NAMES = frozenset({"cross_entropy", "ce_mean_words", "ce_mean", "ce_sum", "ce", "xent", "nll"})
_CE_ENDINGS = tuple("_" + c for c in _CE_NAMES)
#: What a line needs before it is tokenized: the prefilter that keeps the pure-Python pass
#: off progress bars and banners. Plain substring tests of the lower-cased line (a regex
#: alternation with ``re.I`` costs ten times more per line); ``-----`` lets a table's ruler
#: through.


def _triggered(line: str) -> bool:
    low = line.lower()
    return (
        "loss" in low
        or "=" in low
        or "epoch" in low
        or "step" in low
        or "iter" in low
        or "train" in low
        or "val" in low
        or "cost" in low
        or "batch" in low
        or "up." in low
        or "ep." in low
        or "entropy" in low
        or "-----" in low
        or low.startswith("s:")
        or " avg" in low  # darknet's "1: 23.67, 23.67 avg, 0.001000 rate, …"
        or "acc@1" in low  # the ImageNet script's " * Acc@1 … Acc@5 …" evaluation summary
    )


def _body(line: str) -> str:
    """The message of a line: ``line`` without a log record's prefix (:data:`_LOG_PREFIX`),
    also where a progress bar's last frame is glued in front of it (no line end after it)."""
    if line[:1].isdigit() or line[:1] in "[ IWEF":
        m = _LOG_PREFIX.match(line)
        if m is not None:
            return line[m.end() :]
    cut = _after_glued_bar(line)
    if cut:
        m = _LOG_PREFIX.match(line[cut:])
        if m is not None:
            return line[cut + m.end() :]
    return line


def _after_glued_bar(line: str) -> int:
    """Where a line starts after a progress bar's last frame glued in front of it (no line
    end after the frame, :data:`_GLUED_BAR`); 0 when there is none."""
    if "%|" not in line:
        return 0
    bar = _GLUED_BAR.match(line)
    return bar.end() if bar is not None else 0


def _is_config_dump(line: str) -> bool:
    """Whether a line is a configuration or argument dump (see :data:`_CONFIG_ASSIGN`)."""
    return "=" in line and len(_CONFIG_ASSIGN.findall(line, 0, MAX_TOKENIZED)) >= _CONFIG_MIN


def _llmc(line: str) -> _Parsed | None:
    """The parse of an llm.c ``main.log`` line (:data:`_LLMC`), ``None`` for any other."""
    m = _LLMC.match(line)
    if m is None:
        return None
    p = _Parsed()
    p.counter = float(m.group(1))
    for item in m.group(2).split():
        name, _, num = item.partition(":")
        try:
            p.values[_LLMC_NAMES[name]] = float(num)
        except ValueError:
            return None
    p.spans = [(0, len(line))]
    p.has_loss = "loss" in p.values or "eval_loss" in p.values
    p.is_eval = "loss" not in p.values and ("eval_loss" in p.values or "eval_accuracy" in p.values)
    return p


#: darknet's (pjreddie, AlexeyAB) training line: ``  12: 23.67, 23.60 avg loss, 0.001000
#: rate, 4.1 seconds, 768 images[, 6.8 hours left]``: the iteration, that batch's loss, its
#: running mean. Its rate is kept under its own name, not read as the learning rate: the
#: burn-in prints it as 0.000000 for the first hundreds of iterations (lr x (i/burn_in)^4).
_DARKNET = re.compile(
    r"\s*(\d+):\s*([-+]?(?:nan|inf|\d+(?:\.\d*)?(?:e[-+]?\d+)?)),\s*"
    r"([-+]?(?:nan|inf|\d+(?:\.\d*)?(?:e[-+]?\d+)?)) avg(?: loss)?,\s*(\d+(?:\.\d*)?(?:e[-+]?\d+)?) rate,",
    re.I,
)


def _darknet(line: str) -> _Parsed | None:
    """The parse of a darknet training line (:data:`_DARKNET`), ``None`` for any other."""
    m = _DARKNET.match(line) or _DARKNET.match(line, _after_glued_bar(line) or len(line))
    if m is None:
        return None
    p = _Parsed()
    p.counter = float(m.group(1))
    p.values = {"loss": float(m.group(2)), "avg_loss": float(m.group(3)), "rate": float(m.group(4))}
    p.spans = [(0, m.end())]
    p.has_loss = True
    return p


def _norm(raw: str) -> str:
    """A printed name as a key: ``Train Loss`` and ``TrainLoss`` -> ``train_loss``, ``L.r.``
    -> ``lr`` (an abbreviation of single letters), a leading log level dropped, a ``value``
    after ``loss`` dropped (``lm loss value`` -> ``lm_loss``), as an ``is`` (``loss is`` ->
    ``loss``)."""
    parts = raw.split(" ")
    if len(parts) > 1 and parts[0].lower() in _LEVEL:
        parts = parts[1:]
    words: list[str] = []
    for i, p in enumerate(parts):
        if i < len(parts) - 1 and p.endswith(".") and len(p) > 4 and "." not in p[:-1]:
            words = []  # a sentence ends here ("Epoch 1 completed. Average Loss"): the name follows it
            continue
        bits = p.rstrip(".").split(".")
        if len(bits) > 1 and all(len(b) <= 1 for b in bits):
            p = "".join(bits)  # ``L.r.`` is one abbreviated word, not ``l_r``
        words.append(_CAMEL.sub("_", p))
    key = _JOIN.sub("_", " ".join(words).lower()).strip("_")
    # "lm loss value" (Megatron-LM's validation line) is the loss itself, as is MindSpore's
    # LossMonitor's "loss is 2.302" ("epoch: 1 step: 100, loss is 2.302").
    if key.endswith("loss_value"):
        return key[:-6]
    return key[:-3] if key.endswith("loss_is") else key


def _is_loss(key: str) -> bool:
    """Whether a normalised key names a loss: ``loss`` or ``cost`` in it, a cross-entropy's
    name, or a word of the alias vocabulary's loss words (:data:`LOSS_WORDS`: a regression
    loop's ``mse``, a VAE's ``nelbo``, a byte model's ``bpb``), as the JSONL reader's
    mapping reads the same key."""
    return (
        "loss" in key
        or "cost" in key
        or key in _CE_NAMES
        or key.endswith(_CE_ENDINGS)
        or not LOSS_WORDS.isdisjoint(key.split("_"))
    )


class _Pair:
    __slots__ = ("key", "kind", "value", "total", "start", "end", "unit")

    def __init__(self, key, kind, value, total, start, end, unit):
        self.key, self.kind, self.value, self.total = key, kind, value, total
        self.start, self.end, self.unit = start, end, unit


def _pairs(line: str) -> list[_Pair]:
    out = []
    # A line that prints one number with a decimal comma (``0,0030``, ``2,2214``: no
    # thousands group) prints them all so (``loss: 1,234`` is 1.234 there, not 1234).
    decimal_comma = "," in line and _DECIMAL_COMMA.search(line) is not None
    glued = -1  # where a pair that continues a skipped name would start
    for m in _PAIR.finditer(line):
        if m.group("unit") == "%" and line.startswith("|", m.end()):
            continue  # a progress bar's percentage ("Map:  45%|███"), not a metric
        if m.start() == glued:
            continue  # the rest of a phrase (see _PROSE_END)
        if _PROSE_END.search(m.group("name")):
            if m.group("num")[:1].isalpha():  # "nan"/"inf" here is a word of the phrase
                rest = line[m.end() :]
                glued = m.end() + len(rest) - len(rest.lstrip(" \t"))
            continue
        key = _norm(m.group("name"))
        if not key:
            continue
        try:
            num = m.group("num")
            # tqdm's postfix prints a NaN loss as ``nan.0``
            if "," in num:
                num = num.replace(",", "." if decimal_comma or not _THOUSANDS.fullmatch(num.lstrip("+-")) else "")
            value = float(num[:-2] if num[-2:] == ".0" and num[-3:-2].isalpha() else num)
        except ValueError:
            continue
        tot = m.group("tot")
        kind = _kind(m.group("name"), key)
        if kind is not None and m.group("list") is not None:
            continue  # ``Epoch: [0][ 10/5005]``: a bracketed counter, read by its own pattern
        end = m.end()
        if kind == "counter" and line.startswith("-", end):
            # a range of batches in brackets, MXNet's Speedometer ``Batch [10-20]``: the
            # batches done are its end
            r = _BATCH_RANGE.match(line, end)
            if r is not None and "[" in line[m.end("name") : m.start("num")]:
                value, end = float(r.group(1)), r.end()
        out.append(
            _Pair(
                key,
                kind,
                value,
                float(tot) if tot and len(tot) <= 18 else None,
                m.start("name"),
                end,
                m.group("unit"),
            )
        )
    return out


def _kind(raw: str, key: str) -> str | None:
    """``"global"``, ``"counter"``, ``"epoch"`` for a step-like name, else ``None``.

    The last printed word decides (``INFO Epoch``, ``Global Batch``); a word with a ``/`` is
    a rate or a namespaced metric (``ms/batch``, ``time/batch``), never a counter, unless it
    names a global step (``trainer/global_step``). A name with ``global`` in it is a global
    counter only when it ends in a counter's word (``global_step``, ``Global Batch``), not
    in a size (Megatron's ``global batch size: 32`` beside its ``iteration 10/ 500``).
    """
    if key in _GLOBAL_WORDS or ("global" in key and key.rsplit("_", 1)[-1] in _COUNTER_TAILS):
        return "global"
    last = raw.rsplit(" ", 1)[-1].lower().rstrip(".")
    if "/" in last:
        return None
    last = _JOIN.sub("_", last)
    if last in _EPOCH_WORDS:
        return "epoch"
    if last in _COUNTER_WORDS:
        return "counter"
    return None


class _Parsed:
    """What one line says: step parts and metric values."""

    __slots__ = (
        "glob",
        "epoch",
        "counter",
        "counter_total",
        "position",
        "values",
        "has_loss",
        "spans",
        "is_eval",
        "holes",
    )

    def __init__(self) -> None:
        self.glob: float | None = None
        self.epoch: float | None = None
        self.counter: float | None = None
        self.counter_total: float | None = None
        self.position: tuple[float, float] | None = None
        self.values: dict[str, float] = {}
        self.has_loss = False
        self.spans: list[tuple[int, int]] = []  # where the pairs are, in order
        self.is_eval = False
        self.holes: tuple[str, ...] = ()  # train losses printed with no value ("loss: None")

    @property
    def has_step(self) -> bool:
        return self.glob is not None or self.epoch is not None or self.counter is not None or self.position is not None


#: The PyTorch CIFAR-10 tutorial's print, ``[epoch, batch] loss: 2.173`` (``print(f'[{epoch +
#: 1}, {i + 1:5d}] loss: …')``): an epoch and a batch counter that starts again each epoch.
#: Read right before the first metric (a progress bar may be glued in front of it).
_EPOCH_BATCH = re.compile(r"\[\s*(\d+),\s*(\d+)\]\s*$")
#: timm's train.py line head, ``Train: 3 [ 100/1251 (  8%)]``: the epoch (from 0) and the
#: 0-based index of the batch just done out of the epoch's batches, right before a metric.
_TIMM_TRAIN = re.compile(r"(?:^|[\s\]])Train:\s*(\d+)\s*\[\s*(\d+)/(\d+)\s*\(\s*\d+%\)\]\s*$")
#: A step in brackets alone before the first metric, at the line's start or after a blank
#: (clu's ``[20] train_loss=2.31``, XGBoost's ``[10]\tvalidation_0-logloss:0.52``).
_BRACKET_STEP = re.compile(r"(?:^|\s)\[\s*(\d+)\s*\]\s*$")
#: The word that names such a bracket, right before it (``Epoch: [``).
_BRACKET_NAME = re.compile(r"([A-Za-z]+)\s*:?\s*\[$")
#: The header of a table of blank-separated columns (fastai, Chainer's PrintReport with
#: its ``main/loss``): names only, at least three.
_WS_HEADER = re.compile(r"[A-Za-z_][\w/]*(?:[ \t]+[A-Za-z_][\w/]*){2,15}")
#: The table transformers' ``NotebookProgressCallback`` draws in a notebook (Unsloth's too),
#: as text copied from the cell: a header ``Step``/``Epoch``, ``Training Loss``, then
#: ``Validation Loss`` and the evaluation's metrics (``Accuracy``, ``F1``…) where the run
#: evaluates, cells apart by a tab (or two blanks or more, as pasted into a README). A
#: cell holds a number or ``No log`` (no training loss logged yet).
_NB_SPLIT = re.compile(r"\t|\s{2,}")
_NB_NAMES = {"training loss": "training_loss", "validation loss": "validation_loss"}
_NB_FIRST = _EPOCH_WORDS | _COUNTER_WORDS
#: A frame of YOLOv5/YOLOv8's epoch bar under such a header (``Epoch GPU_mem box_loss …
#: Size``): ``  3/30  3.52G  1.31  3.02  1.51  232  640:  45%|███ | 9/20 [...]``, the epoch
#: (of the total) and the other columns up to the colon before the bar.
_YOLO_ROW = re.compile(r"\s*(\d+)/\d+\s+([^:|\n]{1,200}?):\s+\d+%\|")
#: YOLOv5 before v7 heads its loss columns ``box obj cls`` (``labels img_size`` after them).
_YOLO_V5_LOSSES = {"box": "box_loss", "obj": "obj_loss", "cls": "cls_loss", "total": "loss"}
#: torchtune's progress-bar description, ``1|25|Loss: 1.5432:   4%|▍ | 25/600 […]``: the epoch
#: and the global step, right before the first metric.
_EPOCH_GLOBAL = re.compile(r"(?<![\w.|])(\d+)\|(\d+)\|\s*$")


#: LightGBM's evaluation line (its ``log_evaluation`` callback), ``[11]\ttraining's
#: binary_logloss: 0.54\tvalid_1's binary_logloss: 0.57``: the round in brackets, then each
#: metric after its data set's name and ``'s``, read as one name (``training_binary_logloss``).
_LGBM_ROUND = re.compile(r"\s*\[\d+\]\t")
_LGBM_SET = re.compile(r"(?<=\t)([A-Za-z_]\w*)'s (?=[A-Za-z_])")


#: A counter numbered with ``#`` (Tianshou's ``Epoch #3: 10001it [..., loss=0.212, rew=105.37]``,
#: hand-written ``Step #400 loss=…``): read as the counter it names when the word is one.
_NUMBERED = re.compile(r"(?<![\w./-])([A-Za-z]+)\s*#\s*(?=\d)")


def _unnumbered(m: re.Match) -> str:
    word = m.group(1).lower()
    return f"{m.group(1)} " if word in _EPOCH_WORDS or word in _COUNTER_WORDS else m.group(0)


def _parse(line: str) -> _Parsed | None:
    """The step parts and metric values of one (ANSI-free) line, ``None`` when it has no
    pair at all."""
    if "'s " in line and _LGBM_ROUND.match(line):
        line = _LGBM_SET.sub(r"\1_", line)
    if "#" in line:
        line = _NUMBERED.sub(_unnumbered, line)
    if "epoch:train:" in line:
        es = _ESPNET_BATCH.match(line)
        if es is not None:
            line = f"epoch={es.group(1)}, batch={es.group(2)}, {line[es.end() :]}"
    if line.startswith("s:"):
        llmc = _llmc(line)
        if llmc is not None:
            return llmc
    if " avg" in line and " rate," in line:
        dk = _darknet(line)
        if dk is not None:
            return dk
    mm = _MMENGINE.search(line)
    pm = _PROGRESS_METER.search(line) if mm is None else None
    if pm is not None and pm.group(4):
        return None  # a validation batch's running values
    pairs = _pairs(line)
    if not pairs and mm is None:
        return None
    p = _Parsed()
    p.spans = [(pr.start, pr.end) for pr in pairs]
    metrics: list[_Pair] = []
    epoch_end = 0
    for pr in pairs:
        kind = pr.kind
        if (
            kind is None
            and pr is pairs[0]
            and pr.key == "steps"
            and pr.value.is_integer()
            and not line[: pr.start].strip()
        ):
            # DeepSpeed's engine prints ``steps: 10 loss: 6.0157 iter time (s): …``: a line that
            # opens with "steps" counts them (elsewhere "Total steps: 1000" is a count)
            kind = "counter"
        if kind == "global":
            if p.glob is None or pr.key in _GLOBAL_FIRST:
                p.glob = pr.value
        elif kind == "epoch":
            if p.epoch is None:
                p.epoch, epoch_end = pr.value, pr.end
        elif kind == "counter":
            if p.counter is None:
                p.counter, p.counter_total = pr.value, pr.total
        elif not pr.key.startswith("best"):
            metrics.append(pr)
    if not metrics and mm is None and pairs and (p.counter is not None or p.glob is not None):
        # A step with nothing else on its line, named by an evaluation word (PaddleDetection's
        # "Eval iter: 0" at each evaluation), counts the evaluation loop's batches: no train
        # step, so it neither opens a block nor reads as a restart.
        if _EVAL_MARK.search(line, 0, pairs[0].end) or _TEST_MARK.search(line, 0, pairs[0].end):
            return None
    mode = None
    if mm is None and pm is None and p.counter is None and p.glob is None and metrics and "Train:" in line:
        # timm's "Train: 3 [ 100/1251 (  8%)]  Loss: …": its "Train: 3" pair is the epoch,
        # the bracket the 0-based index of the batch just done
        for i, mt in enumerate(metrics):
            tm = _TIMM_TRAIN.search(line, 0, mt.start)
            if tm is not None:
                p.epoch, p.position = float(tm.group(1)), (float(tm.group(2)) + 1, float(tm.group(3)))
                metrics = [m for m in metrics[i:] if m.start >= tm.end()]
                break
    if mm is None and pm is None and p.epoch is None and p.counter is None and p.glob is None and metrics:
        eb = _EPOCH_BATCH.search(line, 0, metrics[0].start)
        if eb is not None:
            p.epoch, p.counter = float(eb.group(1)), float(eb.group(2))
        else:
            eg = _EPOCH_GLOBAL.search(line, 0, metrics[0].start)
            if eg is not None:
                p.epoch, p.glob = float(eg.group(1)), float(eg.group(2))
            else:
                # right before one of the metrics: a glued bar or prefix may hold pairs first
                # (whose pairs are then no metrics of the line)
                for i, mt in enumerate(metrics):
                    bs = _BRACKET_STEP.search(line, 0, mt.start)
                    if bs is not None:
                        # after an epoch's name, the bracket is that epoch (deepspeech.pytorch's
                        # "Validation Summary Epoch: [1]\tAverage WER …")
                        named = _BRACKET_NAME.search(line, 0, line.index("[", bs.start()) + 1)
                        if named is not None and _kind(named.group(1), named.group(1).lower()) == "epoch":
                            p.epoch = float(bs.group(1))
                        else:
                            p.counter = float(bs.group(1))
                        metrics = metrics[i:]
                        break
    if mm is not None:
        unit, mode = mm.group(1).lower(), mm.group(2) or "train"
        if unit == "epoch":
            p.epoch = float(mm.group(3))
            if mm.group(5) and mode == "train":  # a val loop's position is not a train step
                # the library's own count within the epoch, as a resume line's ``resumed
                # epoch 2, iter 200`` is (MMCV): one source of steps, not two that rank apart
                p.counter, p.counter_total = float(mm.group(5)), float(mm.group(6))
        else:
            p.counter = float(mm.group(3))
        if mode == "train":
            mode = None
    elif pm is not None:
        # the 0-based index of the batch just done: the (index + 1)-th step of the epoch
        p.epoch = float(pm.group(1))
        p.position = (float(pm.group(2)) + 1, float(pm.group(3)))
    if mode is None and p.has_step and _ABSENT_HINT.search(line):
        p.holes = tuple(
            k
            for k in (_norm(m.group("name")) for m in _ABSENT_PAIR.finditer(line))
            if _is_loss(k) and k not in p.values
        )
    first = metrics[0].start if metrics else len(line)
    if mm is None and p.epoch is not None and p.counter is None and p.glob is None and p.position is None:
        # A bar's position is the step of the metrics that follow it (tqdm's postfix) when it
        # follows the epoch (``Epoch 0:  45%|██| 45/100``); a bar before the epoch or after
        # the metrics is another progress line glued to this one.
        t = (
            _TQDM.search(line, epoch_end, first)
            or _BATCHES.search(line, epoch_end, first)
            or _IGNITE_BAR.search(line, epoch_end, first)
        )
        done = _DONE_OF.match(line, epoch_end, first) if t is None else None
        if done is not None:
            # a count within the epoch, printed on every line: no bar to hold
            p.counter, p.counter_total = float(done.group(1)), float(done.group(2))
        if t is not None:
            p.position = (float(t.group(1)), float(t.group(2)))
    elif mm is None and p.epoch is None and p.counter is None and p.glob is None and metrics:
        # A bar with no epoch in its description (``train: 45%|██| 180/400 [..., loss=0.5]``,
        # tqdm's set_postfix in a plain loop): its position is the step, counted on across
        # bars that start again (one bar per epoch, see _Steps.bar_step).
        t = _TQDM.search(line, 0, first)
        # Only the bar's own postfix: the metrics inside the bracket that follows it, not a
        # line glued after another bar (``Map: 45%|██| 4500/10000 [...]Epoch 1 | Train: …``).
        if t is not None and _POSTFIX_OPEN.fullmatch(line, t.end(), first):
            p.position = (float(t.group(1)), float(t.group(2)))
        elif t is None:
            ig = _IGNITE_BAR.search(line, 0, first)
            if ig is not None and ig.end() >= first - 4:  # the metrics right after the bar
                p.position = (float(ig.group(1)), float(ig.group(2)))
    if not metrics:
        return p
    prefix = line[:first]
    if mode is None:
        if _EVAL_MARK.search(prefix) or _TF_EVAL_RESULT.search(prefix):
            mode = "val"
        elif _TEST_MARK.search(prefix):
            mode = "test"
    any_loss = any(_is_loss(m.key) for m in metrics)
    # Only a line that prints its own step: a config dump's "- val: 0.1" is no loss.
    split_ok = p.has_step and not any_loss and not _ACC.search(line)
    for m in metrics:
        key = m.key
        if split_ok and key in _SPLIT_NAMES and m.unit != "%":
            key = _SPLIT_NAMES[key]
        elif key == "cost" and mode is None:
            key = "loss"  # Marian's training cost is its loss
        if mode is not None and not key.startswith(_EVAL_KEYS):
            key = "val_loss" if mode == "val" and key in _CE_NAMES else f"{mode}_{key}"
        value = m.value
        if m.total and 0 <= value <= m.total and _ACC_KEY.search(key):
            value /= m.total  # ``Accuracy: 9846/10000``: the share correct, not the count
        p.values[key] = value
    p.has_loss = any(_is_loss(k) for k in p.values)
    if (
        p.position is not None
        and p.epoch is None
        and mm is None
        and not any(_is_loss(k) and not k.startswith(_EVAL_KEYS) for k in p.values)
    ):
        # A bar with no epoch whose postfix holds no train loss (an outer epoch bar carrying
        # the last val_loss, a validation bar whose postfix is a running partial sum) counts
        # something else: its position is no step, and its values are not read.
        p.position = None
    # A validation line with a step is a record whatever it measures (Marian prints each
    # validator on its own line: perplexity, BLEU); a train line needs a loss.
    p.is_eval = mode is not None
    return p


#: The most characters of one line the tokenizer reads. A longer line is progress output
#: that lost its carriage returns (frames glued together, whose end is the latest state) or
#: junk; it is read from its last this-many characters, cut at a blank, which bounds the
#: time one line can take.
MAX_TOKENIZED = 1 << 14


def _tail(line: str) -> str:
    if len(line) <= MAX_TOKENIZED:
        return line
    tail = line[-MAX_TOKENIZED:]
    cut = tail.find(" ")
    return tail[cut + 1 :] if cut >= 0 else tail


# --------------------------------------------------------------------------- runs and steps


#: The fewest train points (steps with a value that is not an evaluation's) of a run
#: that makes it the judged one when it comes last in a capture of several runs: the least a
#: shape rule judges (``min_trend_points``, 8 logged points).
LAST_RUN_RECORDS = 8
#: ... and at least this share of the train points of the longest run before it: a test
#: loop, an evaluation script or a one-batch sanity check printed after training (10-20
#: batches after 300-500 logged steps) restarts the counter too, and is no rerun. A rerun
#: stopped early (it diverged, it was preempted) logged 40-60% of the curve in a new
#: user's captures. Engineering choice between the two.
LAST_RUN_SHARE = 0.25


def _merge_ranks(plain: list[Record], ranks: dict[int, list[Record]], state) -> list[Record]:
    """One curve from the records of the unprefixed lines (``plain``) and of each rank's
    prefixed lines (``ranks``, by rank), in line order: a value of a name at a step comes
    from the unprefixed lines, else from the lowest rank that printed it, so ranks that
    print copies of one loop's lines are read once (rank 0's), a pipeline's last stage that
    alone prints the loss is read, and a rank that alone prints an evaluation keeps it. A
    non-finite value any rank printed for a name at a step is kept over a finite one: a
    rank whose loss went NaN is not hidden by another rank's."""
    sources = [(-1, plain), *ranks.items()]
    best: dict[tuple, tuple[int, float]] = {}
    for prio, recs in sources:
        for r in recs:
            for k, v in r.values.items():
                key = (r.step, k)
                cur = best.get(key)
                if cur is None or (not math.isfinite(v) and math.isfinite(cur[1])):
                    best[key] = (prio, v)
    out = []
    for prio, recs in sources:
        for r in recs:
            vals = {k: v for k, v in r.values.items() if best[(r.step, k)][0] == prio}
            if vals:
                out.append(Record(r.step, vals, r.line, r.holes))
    out.sort(key=lambda r: r.line)
    printed = [r for r, recs in ranks.items() if recs]
    if len(printed) > 1 or (printed and plain):
        state.notes.append(
            f"lines prefixed by {len(ranks)} rank(s) ({', '.join(str(r) for r in list(ranks)[:8])}): each value is "
            "read from the unprefixed lines, else from the lowest rank that printed it at that step (a non-finite "
            "value on any rank is kept), never the ranks' copies merged into one curve"
        )
    return out


def _train_records(records: list[Record]) -> int:
    """How many steps of ``records`` hold a value that is not an evaluation's (a progress
    bar's frames at one step are one point)."""
    return len({r.step for r in records if any(not is_eval_key(k) for k in r.values)})


class _Runs:
    """The records of the tokenizer, split into runs where the step goes back.

    ``add`` takes each record in file order; ``finish`` yields the records of the run that
    is judged and writes the notes. A step that goes back to the run's start (at or below the
    step of its second record: a restart may log its first step as 0 or as 1) starts a new
    run; a step further in is a resume, whose records replace those from that step on. Only
    the current run and the earlier one that would be judged are held.
    """

    def __init__(self, state, prefer_last: bool = True) -> None:
        self.state = state
        # Log dicts with no step (HF's) are numbered by row: their runs are told apart by
        # the end-of-training summary, and what follows the last one is often the result
        # dicts of other scripts, not a curve; the longest of them is judged.
        self.prefer_last = prefer_last
        self.current: list[Record] = []
        self.first: float | None = None  # the steps of the run's first two records
        self.second: float | None = None
        self.last: float | None = None
        self.best: list[Record] = []  # the earlier run that would be judged (only it may still be)
        self.best_index = 0
        self.best_is_last = False
        self.longest_points = 0  # the most train points of a run so far
        self.summary: list[tuple[int, int, int]] = []  # (first line, last line, records) of each run
        self.resumes: list[tuple[int, float, int]] = []  # (line, step, records replaced)

    def add(self, rec: Record) -> str | None:
        """Take the next record; ``"new"`` when it starts a new run, ``"resume"`` when it
        resumes the current one, else ``None``."""
        s = rec.step
        event = None
        if s is not None and self.last is not None and s < self.last:
            if self._restates(rec):
                return None
            if rec.values and all(is_eval_key(k) for k in rec.values):
                # An evaluation reported after later training lines (an evaluator that
                # runs behind, a result printed when its checkpoint is picked up) belongs
                # to its step: no resume and no new run, which the train lines tell.
                self.current.append(rec)
                return None
            if self.second is not None and s <= self.second:
                self.start_new()
                event = "new"
            else:
                keep = [r for r in self.current if r.step is None or r.step < s]
                self.resumes.append((rec.line, s, len(self.current) - len(keep)))
                self.current = keep
                event = "resume"
        if s is not None:
            if self.first is None:
                self.first = s
            elif self.second is None:
                self.second = s
        if s is not None:
            self.last = s
        self.current.append(rec)
        return event

    def join_last(self, step: float | None, values: dict[str, float]) -> None:
        """Add ``values`` to the current run's last record when it is at ``step`` (new
        names only): more of that step's values, printed on a line of their own."""
        if self.current and self.current[-1].step == step:
            last = self.current[-1].values
            for k, v in values.items():
                last.setdefault(k, v)

    def start_new(self) -> None:
        """End the current run: the next record starts a new one whatever its step (a log
        that says its run ended, as HF Trainer's end-of-training summary does)."""
        self._end_run()
        self.current = []
        self.first = self.second = self.last = None

    def _restates(self, rec: Record) -> bool:
        """Whether an earlier record of the run at the same step holds the same values: a
        log re-printing the best epoch when it saves or loads that checkpoint ("Loaded …
        (epoch=20, val_loss=1.05)"), which is no step back."""
        for r in reversed(self.current):
            if r.step == rec.step:
                if all(r.values.get(k) == v for k, v in rec.values.items()):
                    return True
            elif r.step is not None and r.step < rec.step:  # type: ignore[operator]
                return False
        return False

    def _end_run(self) -> None:
        if not self.current:
            return
        self.summary.append((self.current[0].line, self.current[-1].line, len(self.current)))
        # The last run with a curve to judge is the one the capture is about (a script run
        # again after a fix, a restart after a preemption, appended to one file); a shorter
        # last attempt, stopped before it logged a curve, leaves the longest one judged.
        points = _train_records(self.current)
        self.longest_points = max(self.longest_points, points)
        last = self.prefer_last and points >= max(LAST_RUN_RECORDS, LAST_RUN_SHARE * self.longest_points)
        if last or len(self.current) >= len(self.best):
            self.best, self.best_index = self.current, len(self.summary)
            self.best_is_last = last

    def finish(self) -> Iterator[Record]:
        """The records of the judged run, after its notes are written: the last run with at
        least :data:`LAST_RUN_RECORDS` train points and :data:`LAST_RUN_SHARE` of the
        longest earlier run's (the latest attempt the capture holds: an earlier one was run
        again, after a fix or a preemption), else (or where runs of
        row-numbered log dicts are told apart: ``prefer_last`` false) the longest run (the
        most records; the later one on a tie), as it holds the most evidence."""
        self._end_run()
        self.current = []
        runs = self.summary
        if len(runs) > 1:
            listed = "; ".join(f"run {i + 1}: lines {a}-{b}, {k} records" for i, (a, b, k) in enumerate(runs[:8])) + (
                " …" if len(runs) > 8 else ""
            )
            which = "the last with a curve to judge" if self.best_is_last else "the longest"
            if self.prefer_last and self.best_index < len(runs):
                which += (
                    f" (the {len(runs) - self.best_index} run(s) after it hold under {LAST_RUN_SHARE:.0%} of the "
                    "longest run's train points: a test loop, an evaluation or a check, or an attempt stopped early)"
                )
            self.state.notes.append(
                f"the capture holds {len(runs)} runs (the step counter starts again, or a run prints its end, "
                f"{len(runs) - 1} time(s)); only run {self.best_index}, {which}, is judged, never the runs merged "
                f"into one curve ({listed})"
            )
        for line, step, k in self.resumes[:5]:
            self.state.notes.append(
                f"resumed at step {step:g} (line {line}): the {k} earlier record(s) from that step on "
                "were replaced by the resumed run's"
            )
        yield from self.best


class _Steps:
    """Per-run step bookkeeping for lines that print an epoch with an in-epoch counter."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.mode: str | None = None  # "within" | "global" for an epoch + counter without total
        self.last_e: float | None = None
        self.last_c: float | None = None
        self.base = 0.0
        self.rank = 0  # the best source of steps the run has printed (see step_of)
        self.zero_based = False  # the run counts epochs from 0
        self.own: dict[int, float] = {}  # the last step each source gave, by rank
        self.last_step: float | None = None
        self.bar_offset = 0.0  # the steps of the bars before this one (bar_step)
        self.bar_last: tuple[float, float] | None = None

    def bar_step(self, n: float, total: float) -> float:
        """The step of position ``n`` of a bar of ``total`` with no epoch in its description:
        a bar of the same total that starts again (its position goes back) is the next
        epoch's, counted on from where the last one ended."""
        if self.bar_last is not None and total == self.bar_last[1] and n < self.bar_last[0]:
            self.bar_offset += self.bar_last[1]
        self.bar_last = (n, total)
        return self.bar_offset + n

    def went_back(self, p: _Parsed) -> bool:
        """Whether an epoch + counter pair goes back (a restart), before it is used."""
        if p.epoch is None or self.last_e is None:
            return False
        if p.counter is None and p.position is None and self.rank > 1:
            # A bare epoch on a run stepped by a better source is a lesser counter (a
            # library's own line counting epochs from 0 beside the script's from 1).
            return False
        if p.epoch < self.last_e:
            return True
        return p.epoch == self.last_e and p.counter is not None and self.last_c is not None and p.counter < self.last_c

    def step_of(self, p: _Parsed) -> float | None:
        """The step of a parsed line (see the module doc for the order), ``None`` when the
        line has none.

        A run keeps to its best source of steps: once a line has printed a better one (a
        global counter over an epoch's bar position, any step over a bare epoch), a line
        with only a lesser source takes the last step, so two counters never interleave on
        one axis.
        """
        if p.glob is not None:
            rank, step = 4, p.glob
        elif p.epoch is not None and p.counter is not None:
            # An epoch with its counter ranks above a bare counter: a library's own log
            # lines (DeepSpeed's "step=50, skipped=0, lr=[…]") count otherwise than the
            # script's "[2,    20] loss: 0.204" beside them, and must not interleave with it.
            rank, step = 3.5, self._composed(p.epoch, p.counter, p.counter_total)
        elif p.counter is not None:
            rank, step = 3, p.counter
        elif p.epoch is not None and p.position is not None:
            n, total = p.position
            rank, step = 2, (p.epoch - self._first_epoch(p.epoch)) * total + n if total > 0 else p.epoch
        elif p.position is not None:
            rank, step = 2, self.bar_step(*p.position)
        elif p.epoch is not None:
            rank, step = 1, p.epoch
        else:
            return None
        prev, self.own[rank] = self.own.get(rank), step
        if rank < self.rank and self.last_step is not None:
            if prev is None or step >= prev:
                return self.last_step
            # Its own counter started again: a new run begins with this line (its records
            # would otherwise land on the last step of the run before).
            self.own = {rank: step}
        self.rank = rank
        self.last_step = step
        return step

    def _first_epoch(self, e: float) -> float:
        """The number the run counts epochs from: 0 once an epoch 0 is printed (Lightning,
        Python's ``range``), else 1."""
        if e == 0:
            self.zero_based = True
        return 0.0 if self.zero_based else 1.0

    def _composed(self, e: float, c: float, total: float | None) -> float:
        if self.last_e is not None and e > self.last_e and self.mode is None:
            self.mode = "within" if self.last_c is not None and c <= self.last_c else "global"
        if self.last_e is not None and e > self.last_e and self.mode == "within" and self.last_c is not None:
            self.base += self.last_c
        self.last_e, self.last_c = e, c
        if self.mode == "global":
            return c
        if total:
            return (e - self._first_epoch(e)) * total + c
        return self.base + c


# --------------------------------------------------------------------------- HF dicts

# Python refuses integer literals longer than this many digits (a ValueError, which would
# skip the whole dict); such a number is written as the float it rounds to, as the JSON
# readers read it.
_MAX_DIGITS = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
_HUGE_INT = re.compile(r"(?<![\w.])\d{%d,}(?![\w.])" % (_MAX_DIGITS + 1)) if _MAX_DIGITS else None


#: ``ast.literal_eval`` only ever sees a bounded text: a logged metrics dict is a few
#: hundred characters; anything longer than this is not one (and is skipped).
MAX_DICT_CHARS = 1 << 16


# A flat dict of quoted keys (no backslash) and plain decimal numbers, the shape HF
# Trainer prints: read with one regular expression instead of ast.literal_eval, which
# compiles each line (two thirds of the time a console capture of 1e5 dicts took). The
# numbers are exactly the literals Python accepts (an integer with a leading zero is a
# SyntaxError there, so it is left to literal_eval), and float() of each is what
# float(literal_eval(...)) gives; anything else takes the literal_eval path.
_DICT_NUM = r"[-+]?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|0+|[1-9]\d*)"
_DICT_KEY = r"""(?:'([^'\\\n]*)'|"([^"\\\n]*)")"""
_DICT_PAIR = _DICT_KEY + r"[ \t]*:[ \t]*(" + _DICT_NUM + r")(?![\w.])"
_FLAT_DICT = re.compile(r"\{[ \t]*(?:" + _DICT_PAIR + r"[ \t]*(?:,[ \t]*|(?=\})))*\}")
_FLAT_PAIR = re.compile(_DICT_PAIR)


def _flat_dict_values(text: str) -> dict | None:
    """The values of a flat dict of quoted keys and decimal numbers (see ``_FLAT_DICT``),
    or ``None`` when ``text`` is not one."""
    if not _FLAT_DICT.fullmatch(text):
        return None
    out: dict[str, float] = {}
    for sq, dq, v in _FLAT_PAIR.findall(text):
        if "." in v or "e" in v or "E" in v:
            out[sq or dq] = float(v)
            continue
        # an integer literal, as literal_eval reads it: -0 is the int 0, and one too large
        # for a float is an infinity (float() of the int overflows)
        try:
            out[sq or dq] = float(int(v))
        except OverflowError:
            out[sq or dq] = float("-inf") if v[0] == "-" else float("inf")
    return out


def _dict_values(text: str) -> dict | None:
    if len(text) > MAX_DICT_CHARS:
        return None
    if _HUGE_INT is not None:
        text = _HUGE_INT.sub("1e999", text)
    if "tensor(" in text or "Tensor(" in text or "np." in text or "numpy." in text:
        text = _TENSOR.sub(r"\1", text)
    flat = _flat_dict_values(text)
    if flat is not None:
        return flat
    try:
        obj = ast.literal_eval(_BARE.sub(lambda m: f"'{m.group(1)}'", text))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    out: dict[str, float] = {}
    for k, v in obj.items():
        if not isinstance(k, str) or isinstance(v, bool):
            continue
        if isinstance(v, (int, float)):
            try:
                out[k] = float(v)
            except OverflowError:  # an integer literal too large for a float
                out[k] = float("inf") if v > 0 else float("-inf")
        elif isinstance(v, str):
            try:
                out[k] = float(v)
            except ValueError:
                continue
    return out


# --------------------------------------------------------------------------- the line machine


#: Lines with a loss and no step that make a log of one (see :meth:`_Machine._emit_stepless`).
MIN_STEPLESS = 3
#: Records in a run that all print one step before that step is read as no x axis: a few
#: records on one step can be that step's lines (its metrics printed over several), eight
#: or more each with a loss are a series whose counter does not move.
ONE_STEP_MIN = 8


class _Machine:
    """The reading of the tokenizer's lines: blocks, Keras epochs, SB3 tables, runs.

    ``feed`` takes one ANSI-free line and its number; ``finish`` closes what is open.
    Records go to ``runs``.
    """

    def __init__(self, state, runs: _Runs | None) -> None:
        self.state = state
        self.runs = runs
        self.steps = _Steps()
        self.block_step: float | None = None  # the step a header line opened
        self.block: dict[str, float] = {}
        self.block_line = 0
        self.keras = False  # the open block is a Keras epoch (replaced, not merged, by each frame)
        self.header_epoch: float | None = None  # the epoch of the last bare ``Epoch 3/6`` line
        self.hapi_eval: dict[str, float] | None = None  # Paddle's evaluation being read
        self.table: dict[str, float] | None = None  # an SB3 table being read
        self.table_line = 0
        self.section = ""
        self.found = 0  # records with a loss
        self._last_parsed: _Parsed | None = None  # the line whose record is being added
        self.stepped = False  # a line with a step has been seen
        self.stepless: list[Record] = []  # lines of pairs with a loss and no step, until a step is seen
        # A tqdm bar frame held until the bar moves on: (step, values, line, parsed).
        self.bar_frame: tuple | None = None
        self.bar_seen: dict[str, float] = {}  # the postfix values of the bar frames emitted
        self.ws_header: list[str] | None = None  # the columns of a blank-separated epoch table
        self.nb_header: list[str] | None = None  # the columns of a notebook progress table
        self.nb_loss: str | None = None  # that table's training loss cell in the row before
        # The loss running average of the last ProgressMeter validation line (see _meter_eval).
        self.meter_loss: float | None = None
        # A test-split line with no step, held until training goes on after it (see _join_test).
        self.test_pending: tuple[float | None, dict[str, float]] | None = None
        # values of a step printed before its record (see feed), joined when it comes
        self.ahead: tuple[float | None, dict[str, float]] | None = None
        self.tests_joined = 0  # test lines joined to the train step before them
        self.fairseq_inner = False  # a fairseq per-interval line was read (see _FAIRSEQ_INNER)

    def _emit(self, step: float | None, values: dict[str, float], line: int, holes: tuple[str, ...] = ()) -> None:
        if not values and not holes:
            return
        # A held bar frame comes before any later record; lines that give none (warnings,
        # other bars) leave it held, so a redraw after them still replaces it.
        self._flush_bar()
        if self.ahead is not None:
            if self.ahead[0] == step and step is not None:
                values = {**self.ahead[1], **values}
            self.ahead = None
        if any(_is_loss(k) for k in values):
            self.found += 1
        if self.runs is not None and self.runs.add(Record(step, dict(values), line, holes)) == "new":
            # The counters of the new run start afresh, from the line that started it.
            self.steps.reset()
            if self._last_parsed is not None:
                self.steps.step_of(self._last_parsed)

    def _fresh(self, values: dict[str, float]) -> dict[str, float]:
        """``values`` of a progress bar's frame without the held-out values it carries on
        unchanged since they were last read: that evaluation again, not a new one."""
        seen = self.bar_seen
        return {
            k: v for k, v in values.items() if not (k.startswith(_EVAL_KEYS) and seen.get(k) == v and not math.isnan(v))
        }

    def _flush_bar(self) -> None:
        """Emit the last frame at the held bar position (see :meth:`feed`)."""
        if self.bar_frame is None:
            return
        step, values, lineno, p = self.bar_frame
        self.bar_frame = None  # before _emit, which flushes a held frame first
        self.bar_seen.update(p.values)
        if any(_is_loss(k) for k in values) or p.is_eval:
            self._last_parsed = p
            self._emit(step, values, lineno)
            self._last_parsed = None

    def _close_block(self) -> None:
        if self.block and any(_is_loss(k) for k in self.block):
            self._emit(self.block_step, self.block, self.block_line)
        self.block = {}
        self.keras = False

    def _close_table(self) -> None:
        t, self.table = self.table, None
        self.section = ""
        if not t:
            return
        step = None
        for k in ("time/total_timesteps", "total_timesteps", "time/iterations", "train/n_updates"):
            if k in t:
                step = t.pop(k) if k.endswith("total_timesteps") else t[k]
                break
        if step is None:
            return
        self._emit(step, t, self.table_line)

    def _table_row(self, line: str) -> bool:
        s = line.strip()
        if not (s.startswith("|") and s.endswith("|")) or s.count("|") != 3:
            return False
        name_cell, value_cell = (c.strip() for c in s[1:-1].split("|"))
        if name_cell.endswith("/") and not value_cell:
            self.section = name_cell
            return True
        try:
            v = float(value_cell)
        except ValueError:
            return bool(name_cell)
        # A section's rows keep it as a namespace, as SB3 writes the same keys to
        # TensorBoard (``rollout/ep_rew_mean``, ``train/loss``): the alias table reads them so.
        key = _norm(name_cell)
        if key and self.section:
            key = f"{_norm(self.section)}/{key}"
        if key:
            assert self.table is not None
            self.table[key] = v
        return True

    def _ws_table(self, line: str, lineno: int) -> bool:
        """A header or a row of a table of blank-separated columns whose first column is the
        epoch (fastai's ``epoch  train_loss  valid_loss  accuracy  time``); True when the
        line was one. A row has as many fields as the header and an integer epoch; a field
        that is no number (its ``00:01`` time, ``#na#``) is left out."""
        yolo = _YOLO_ROW.match(line)
        # a progress bar's frame may be glued in front (no line end after its \r)
        s = line.rsplit("]", 1)[-1].strip() if yolo is None else ""
        if _WS_HEADER.fullmatch(s):
            names = [_norm(t) for t in s.split()]
            if names[0] in _EPOCH_WORDS and "gpu_mem" in names:
                names = [_YOLO_V5_LOSSES.get(n, n) for n in names]
            if names[0] in _EPOCH_WORDS and any(_is_loss(n) for n in names[1:]):
                self._flush_bar()
                self.ws_header = names
                return True
            return False
        if self.ws_header is None:
            return False
        fields = s.split() if yolo is None else [yolo.group(1), *yolo.group(2).split()]
        if len(fields) != len(self.ws_header) or not fields[0].isdigit():
            return False
        values: dict[str, float] = {}
        for name, f in zip(self.ws_header[1:], fields[1:]):
            try:
                values[name] = float(f)
            except ValueError:
                continue
        if not any(_is_loss(k) for k in values):
            return True
        if yolo is None:
            self._emit(float(fields[0]), values, lineno)
            return True
        # Each frame of the epoch's bar prints the epoch's running mean losses: the last
        # frame of an epoch holds its values, kept as a bar frame until the epoch moves on.
        step = float(fields[0])
        if self.bar_frame is not None and self.bar_frame[0] != step:
            self._flush_bar()
        p = _Parsed()
        p.epoch, p.values = step, values
        self.bar_frame = (step, values, lineno, p)
        return True

    def _notebook_table(self, line: str, lineno: int) -> bool:
        """A header or a row of the table of transformers' notebook progress callback (see
        :data:`_NB_SPLIT`); True when the line was one. The step is the table's first column
        (the epoch where it is ``Epoch``). Where the table holds evaluations, each row
        repeats the newest training loss logged before it: a training loss cell equal to the
        one in the row before is that same log, not a new point, and is left out."""
        if self.nb_header is None:
            # the callback writes its column names so: a literal test keeps the split off
            # every other line that names a loss
            if "Training Loss" not in line and "Validation Loss" not in line:
                return False
            s = line[_after_glued_bar(line) :].strip()
            cells = [c.strip().lower() for c in _NB_SPLIT.split(s)]
            if len(cells) < 2 or cells[0] not in _NB_FIRST or not any(c in _NB_NAMES for c in cells[1:]):
                return False
            self._flush_bar()
            self.nb_header = [cells[0]] + [_NB_NAMES.get(c) or "eval_" + _norm(c) for c in cells[1:]]
            self.nb_loss = None
            return True
        s = line[_after_glued_bar(line) :].strip()
        if not s:
            return True
        fields = s.replace("No log", "-").split()
        if len(fields) != len(self.nb_header) or not fields[0].isdigit():
            self.nb_header = None
            return False
        values: dict[str, float] = {}
        for name, f in zip(self.nb_header[1:], fields[1:]):
            if name == "training_loss" and "validation_loss" in self.nb_header:
                fresh = f != self.nb_loss
                self.nb_loss = f
                if not fresh:
                    continue
            try:
                values[name] = float(f)
            except ValueError:
                continue
        self.stepped = True
        self._emit(float(fields[0]), values, lineno)
        return True

    def _yolo_results(self, line: str, lineno: int) -> None:
        """Emit a row of YOLOv5's header-less results.txt (see :data:`_YOLO_RESULTS`) at its
        epoch; a line that is none is left alone."""
        row = _yolo_row(line)
        if row is None:
            return
        epoch, vals = row
        self.stepped = True
        self._emit(epoch, {"epoch": epoch, **dict(zip(_YOLO_RESULTS_NAMES, vals))}, lineno)

    def _hapi_eval(self, line: str) -> bool:
        """A line of PaddlePaddle's evaluation block (see :data:`_HAPI_EVAL_END`); True when
        it was one. The block's last line's values are the evaluation's, added to the last
        train step's record as ``eval_*``."""
        if _HAPI_EVAL_BEGIN in line:
            self._flush_bar()
            self.hapi_eval = {}
            return True
        assert self.hapi_eval is not None
        end = _HAPI_EVAL_END.match(line, _after_glued_bar(line))
        p = _parse(line) if end is None else None
        if p is not None and p.counter is not None and p.values:
            self.hapi_eval = p.values
            return True
        self._close_hapi_eval()
        return end is not None

    def _close_hapi_eval(self) -> None:
        values, self.hapi_eval = self.hapi_eval, None
        self._join_eval(values or {}, "eval")

    def _meter_eval(self, line: str) -> bool:
        """The ImageNet script's evaluation (pytorch/examples' ProgressMeter): its ``Test: [
        n/N]`` batch lines are no step, but the running average of their loss meter at the
        last one printed is the evaluation's loss so far, and the `` * Acc@1 … Acc@5 …``
        summary that ends the evaluation joins the last train step with that loss as
        ``val_loss`` and its accuracies as ``val_acc@1`` / ``val_acc@5`` (percent). True
        when the line was one of these."""
        pm = _PROGRESS_METER.search(line) if "Test" in line else None
        if pm is not None and pm.group(4):
            avg = _METER_AVG_LOSS.search(line, pm.end())
            if avg is not None:
                try:
                    self.meter_loss = float(avg.group(1))
                except ValueError:
                    self.meter_loss = None
            return True
        summary = _METER_SUMMARY.match(line) if "Acc@1" in line else None
        if summary is None:
            return False
        values = {"val_acc@1": float(summary.group(1)), "val_acc@5": float(summary.group(2))}
        if self.meter_loss is not None:
            values["val_loss"] = self.meter_loss
        self.meter_loss = None
        if self.stepped:
            self._flush_bar()  # the meter's last train line is held as a position's frame
            self._join_eval(values, None)
        return True

    def _join_eval(self, values: dict[str, float], split: str | None) -> None:
        """An evaluation printed with no step (Flair's ``DEV :``, ESPnet's ``[valid]``, Paddle's
        evaluation block, a ``Validation loss:`` line): joined to the last train step's
        record, each name not already held-out taking ``split`` in front (``None``: names
        as printed, the line names its split itself)."""
        if values and self.runs is not None:
            if split is not None:
                values = {k if k.startswith(_EVAL_KEYS) else f"{split}_{k}": v for k, v in values.items()}
            self.runs.join_last(self.steps.last_step, values)

    def feed(self, line: str, lineno: int) -> None:
        if (self.nb_header is not None or "Loss" in line or "loss" in line) and self._notebook_table(line, lineno):
            return
        if (self.ws_header is not None or "epoch" in line or "Epoch" in line) and self._ws_table(line, lineno):
            return
        if self.table is None and not _triggered(line):
            if "/" in line:
                self._yolo_results(line, lineno)
            return
        line = _body(_tail(line))
        if _OWN_LINE.match(line) or _is_config_dump(line):
            return
        if _RULER.match(line):
            if self.table:
                self._close_table()
            else:
                self._close_block()
                self.table, self.table_line, self.section = {}, lineno, ""
            return
        if self.table is not None:
            if self._table_row(line):
                if not self.table_line or not self.table:
                    self.table_line = lineno
                return
            self._close_table()
            if not _triggered(line):
                return
        k = _KERAS.match(line)
        if k is not None and self.block_step is not None:
            if float(k.group(1)) < float(k.group(2)):
                return  # an intermediate frame: the epoch's summary comes with the total
            p = _parse(line)
            if p is not None and p.values and not p.has_step:
                self.block = dict(p.values)
                self.block_line = lineno
                self.keras = True
            return
        if "EPOCH" in line and _FLAIR_EPOCH_DONE.search(line):
            return
        if "epoch" in line:
            if not self.fairseq_inner and _FAIRSEQ_INNER.match(line):
                self.fairseq_inner = True
            elif self.fairseq_inner and _FAIRSEQ_EPOCH_MEAN.match(line):
                return
        dev = _FLAIR_DEV.search(line) if "DEV" in line else None
        if dev is not None:
            p = _parse(line[dev.end() :])
            self._join_eval(p.values if p is not None else {}, "dev")
            return
        if "epoch results:" in line and _ESPNET_RESULTS.match(line):
            valid = _ESPNET_VALID.search(line)
            p = _parse(valid.group(1)) if valid is not None else None
            self._join_eval(p.values if p is not None else {}, "valid")
            return  # its [train] part restates the epoch's mean, no step of its own
        if self.hapi_eval is not None or _HAPI_EVAL_BEGIN in line:
            if self._hapi_eval(line):
                return
        if ("Test" in line or "*" in line) and self._meter_eval(line):
            return
        header = _EPOCH_HEADER.match(line, _after_glued_bar(line)) if "Epoch" in line else None
        if header is not None:
            self.header_epoch = float(header.group(1))
        p = _parse(line)
        if p is None:
            return
        if self.header_epoch is not None and p.counter is not None and p.epoch is None and p.glob is None:
            # a count under a bare epoch header counts within that epoch, or on across epochs
            # (_Steps._composed tells which at the first new epoch)
            p.epoch = self.header_epoch
        bar = p.position is not None and p.counter is None and p.glob is None
        if (
            bar
            and self.bar_frame is not None
            and not (p.position == self.bar_frame[3].position and p.epoch == self.bar_frame[3].epoch)
        ):
            self._flush_bar()
        if bar and p.position[0] == 0:
            return  # a bar reset to 0/N has finished no step: its postfix is the last epoch's
        if p.has_step:
            self._join_test()
            self.stepped = True
            self.stepless = []
            self._close_block()
            if self.steps.went_back(p):
                self.steps.reset()
            step = self.steps.step_of(p)
            if not p.values and not p.holes:
                self.block_step, self.block_line = step, lineno
                return
            self.block_step = None  # a line with its own metrics opens no block
            if bar and p.values:
                # tqdm redraws a bar at each position twice or more: with the count moved on
                # and the postfix of the step before, then with its own. The last frame at a
                # position holds that step's values; a held-out value the postfix carries over
                # unchanged from the frame before is that evaluation again, not a new one.
                self.bar_frame = (step, self._fresh(p.values), lineno, p)
                return
            if p.has_loss or p.is_eval or p.holes:
                values = p.values
                glued = _after_glued_bar(line)
                if "%|" in line and not (glued and p.spans and p.spans[0][0] >= glued):
                    # A progress bar that prints its own step counter (Lightning's and NeMo's
                    # "global_step=149.0" in the postfix) carries the last validation loss on
                    # in every frame, as any bar does. A log line glued after a bar's last
                    # frame (an evaluation bar that ended without a line end) is no postfix:
                    # its values are its own, an eval loss repeated to the bit included.
                    values = self._fresh(values)
                    self.bar_seen.update(p.values)
                self._last_parsed = p
                self._emit(step, values, lineno, p.holes)
                self._last_parsed = None
            elif self.runs is not None:
                # The rest of the step's values on a line of their own, right after its
                # loss line (Caffe's "Iteration 20, lr = 0" after "Iteration 20 (…), loss
                # = 2.35"), or right before it (DeepSpeed's "[Rank 0] step=10, skipped=0,
                # lr=[…]" before its "steps: 10 loss: …"): held for the next record.
                self.runs.join_last(step, p.values)
                self.ahead = (step, p.values)
            return
        if self.block_step is not None and p.values and not self.keras and _pure(line, p):
            if not self.block:
                self.block_line = lineno
            self.block.update(p.values)
        elif self.block_step is None and not self.stepped and p.has_loss and _pure(line, p):
            self.stepless.append(Record(None, dict(p.values), lineno))
        elif self.stepped and _held_out_only(p.values) and _pure(line, p, labelled=True):
            # An evaluation printed on a line of its own with no step (``Validation loss:
            # 0.45`` after a training line) belongs to the last train step.
            self._join_eval(p.values, None)
        elif self.stepped and _held_out_only(p.values, _TEST_KEYS) and _pure(line, p, labelled=True):
            self.test_pending = (self.steps.last_step, dict(p.values))

    def _join_test(self) -> None:
        """Join the held test line to the train step before it, now that training goes on.

        A test set's loss printed once after training is no point of the run's eval series,
        but one printed after every epoch while training goes on (PyTorch's MNIST example:
        ``Test set: Average loss: 0.0475, Accuracy: 9846/10000 (98%)``) is the run's
        evaluation: the test line joins the train step before it once a train line follows
        it, and the last one at the end of the file joins when an earlier one did."""
        if self.test_pending is None or self.runs is None:
            self.test_pending = None
            return
        step, values = self.test_pending
        self.test_pending = None
        self.runs.join_last(step, values)
        self.tests_joined += 1

    def finish(self) -> None:
        if self.tests_joined:
            self._join_test()
        self._flush_bar()
        if self.hapi_eval is not None:
            self._close_hapi_eval()
        if self.table:
            self._close_table()
        self._close_block()
        if not self.stepped:
            self._emit_stepless()

    def _emit_stepless(self) -> None:
        """The records of a log whose loss lines print no step (``batch loss:4.0292``): the
        line order is the x axis, the n-th line with the train loss being step n; a line
        with only an eval loss takes the step of the train line before it. The train loss
        is the loss name most lines print, and it takes :data:`MIN_STEPLESS` lines, so a
        sentence that happens to name a loss is no log."""
        counts: dict[str, int] = {}
        for r in self.stepless:
            for k in r.values:
                if _is_loss(k) and not k.startswith(_EVAL_KEYS):
                    counts[k] = counts.get(k, 0) + 1
        if not counts:
            return
        key = max(counts, key=lambda k: counts[k])  # the first seen of a tie
        if counts[key] < MIN_STEPLESS:
            return
        n = 0
        for r in self.stepless:
            if key in r.values:
                n += 1
            elif not all(k.startswith(_EVAL_KEYS) for k in r.values if _is_loss(k)):
                continue  # another train loss than the one judged: not on this axis
            self._emit(float(n), r.values, r.line)
        self.stepless = []
        if self.state is not None:
            self.state.notes.append(
                f"no step in the log: the x axis is the line order (the n-th line with {key} is step n)"
            )


_LETTERS = re.compile(r"[A-Za-z]{2,}")
#: A word that is a value, not prose: a non-finite number printed where a metric went NaN
#: (PyTorch's DCGAN example: ``D(x): nan`` beside the losses, under a key no pair reads).
_NONFINITE_WORD = re.compile(r"(?i:nan|inf(?:inity)?)")


def _prose_between(line: str, start: int, end: int | None = None) -> bool:
    """Whether ``line[start:end]`` holds a word of two letters or more that is not a
    non-finite value (:data:`_NONFINITE_WORD`)."""
    for m in _LETTERS.finditer(line, start, len(line) if end is None else end):
        if not _NONFINITE_WORD.fullmatch(m.group()):
            return True
    return False


#: The key heads of a validation during training (a test set's loss, printed once after
#: training, is no point of the run's eval series).
_VALIDATION_KEYS = tuple(w for w in _EVAL_KEYS if w not in console_words("test"))


#: The key heads of a test split (``test_loss``).
_TEST_KEYS = tuple(sorted(w for w in _EVAL_KEYS if w in console_words("test")))


def _held_out_only(values: dict[str, float], heads: tuple[str, ...] = _VALIDATION_KEYS) -> bool:
    """Whether ``values`` are an evaluation of the split ``heads`` name (by default
    validation: ``val_loss``, ``validation_loss``, ``eval_loss``): every loss among them is
    one, and there is one; or, with no loss, every value is one (scikit-learn's
    ``Validation score: 0.25``, a ``Validation accuracy: 0.81`` line)."""
    losses = [k for k in values if _is_loss(k)]
    if losses:
        return all(k.startswith(heads) for k in losses)
    return bool(values) and all(k.startswith(heads) for k in values)


def _pure(line: str, p: _Parsed, labelled: bool = False) -> bool:
    """Whether a line is nothing but pairs (besides blanks, punctuation and units): a
    continuation of a block, unlike prose that happens to hold a ``name: number``.
    ``labelled``: text before the first pair may label the split (``Test set:``,
    ``Validation results:``) when it holds a split word."""
    at = 0
    if labelled and p.spans:
        head = line[: p.spans[0][0]]
        if _EVAL_MARK.search(head) or _TEST_MARK.search(head):
            at = p.spans[0][0]
    for a, b in p.spans:
        if _prose_between(line, at, a):
            return False
        at = b
    return not _prose_between(line, at)


# --------------------------------------------------------------------------- sniff and read

#: How far :func:`sniff` reads past the head for a training line, in characters: a capture
#: often opens with a long preamble (package installs, a notebook's source, a config dump).
#: The bound keeps a large text file that is no log cheap to reject.
DEEP_SNIFF_CHARS = 8 << 20


def _yolo_row(line: str) -> tuple[float, list[float]] | None:
    """The epoch and the 13 values of a row of YOLOv5's results.txt (:data:`_YOLO_RESULTS`)
    in ``line``, after a progress bar's last redraw glued in front of it, or ``None``. The
    row must hold together as that file's rows do, so that another table of numbers with a
    ``k/N`` first column is not read as one: the memory in ``G``, whole numbers of labels
    and pixels, an epoch within the last, and the total loss the sum of the three printed
    before it (each to 4 significant digits; NaN where one of them is)."""
    m = _YOLO_RESULTS.fullmatch(line.rstrip("\r\n"), _after_glued_bar(line))
    if m is None or int(m.group(1)) > int(m.group(2)):
        return None
    vals = [float(f.replace(",", "")) for f in m.group(3).split()]
    if not all(math.isfinite(x) and x >= 0 and x.is_integer() for x in vals[4:6]):
        return None
    box, obj, cls, total = vals[:4]
    parts = box + obj + cls
    if math.isnan(parts) or math.isnan(total):
        if not (math.isnan(parts) and math.isnan(total)):
            return None
    elif not abs(total - parts) <= 2e-3 * max(abs(total), abs(parts)) + 1e-12:
        return None
    return float(m.group(1)), vals


def _lines_have_training(lines) -> bool:
    m = _Machine(None, None)
    for i, raw in enumerate(lines, 1):
        line = ANSI.sub("", raw) if "\x1b" in raw else raw
        for _ in _dict_matches(line):
            return True
        m.feed(line.rstrip("\r\n"), i)
        if m.found:
            return True
    m.finish()
    return m.found > 0


def sniff(path: Path, head: str) -> bool:
    """At least one HF log dict or one training line (a step and a loss-like pair): in the
    head, else within the first :data:`DEEP_SNIFF_CHARS` characters of the file."""
    if _lines_have_training(head.splitlines()):
        return True
    try:
        if path.stat().st_size <= HEAD_BYTES and not _is_gzip(path):
            return False
    except (OSError, ReadError):
        return False
    try:
        with open_text(path) as f:
            return _lines_have_training(_bounded(Lines(f), DEEP_SNIFF_CHARS))
    except (OSError, ValueError, EOFError, ReadError):
        return False


def _is_gzip(path: Path) -> bool:
    with open_binary(path) as f:
        return f.read(2) == b"\x1f\x8b"


def _bounded(lines, limit: int):
    seen = 0
    for ln in lines:
        seen += len(ln)
        if seen > limit:
            return
        yield ln


# A Python traceback's first line, and the exception line that ends it (``RuntimeError:
# CUDA out of memory…``, ``torch.OutOfMemoryError: …``, ``KeyboardInterrupt``), after a
# log record's or a rank's prefix (``[rank0]: ``), or after a progress bar's last redraw
# on the same line (tqdm ends a line only when the bar closes, so the traceback of a run
# killed mid-epoch starts right after ``… 38.96it/s]``).
_TRACEBACK = re.compile(r"(?:^|\]:?\s*)Traceback \(most recent call last\):")
_EXCEPTION = re.compile(
    r"^(?:\[[^\]]*\]:\s*)?((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit))\b(?::\s*(.*))?$"
)
#: A program stopping training because its loss became non-finite, in its own words:
#: detectron2's ``FloatingPointError: Loss became infinite or NaN at iteration=499!``, the
#: torchvision/DETR/DeiT/MAE references' ``Loss is nan, stopping training``, Keras'
#: TerminateOnNaN ``Batch 3: Invalid loss, terminating training``.
_NONFINITE_STOP = re.compile(
    r"\bLoss became infinite or NaN\b|\bLoss is [-+]?(?:nan|inf)\b,? stopping training|"
    r"\bInvalid loss, terminating training",
    re.I,
)
#: The words one of those lines holds, as programs print them (``INFO`` is none): a
#: literal scan that keeps the two regexes off the ordinary loss lines of a capture.
_NONFINITE_HINT = re.compile(r"nan|NaN|NAN|Nan|inf(?!o)|Inf(?!o)|INF(?!O)|finite|FINITE|nvalid|NVALID")
#: An exception's message naming a non-finite loss (``ValueError: Loss is NaN``;
#: SpeechBrain's ``ValueError: Loss is not finite and patience is exhausted``, raised once
#: more non-finite batches came than it skips).
_NONFINITE_LOSS = re.compile(r"\bloss\b.{0,40}?\b(?:nan|inf|infinite|non-finite|not finite)\b", re.I)


def _nonfinite_stop(line: str) -> bool:
    """Whether ``line`` says training stopped on a non-finite loss (see above)."""
    if _NONFINITE_STOP.search(line):
        return True
    e = _EXCEPTION.match(line.strip())
    return e is not None and bool(e.group(2)) and _NONFINITE_LOSS.search(e.group(2)) is not None


# The shell's word for a process the kernel's out-of-memory killer ended.
_KILLED = re.compile(r"^(?:.*:\s*)?Killed\s*$")


def read(path: Path, state) -> Iterator[Record]:
    """Yield the records of the judged run of the log dicts, then those of the other
    printouts (see the module doc).

    Raises:
        ReadError: the file cannot be opened or decoded.
    """
    with open_text(path) as f:
        yield from read_text(f, state)


def read_text(f, state) -> Iterator[Record]:
    """:func:`read` of a text stream ``f`` (a notebook's cell outputs, :mod:`.notebook`):
    the records of a capture whose lines are numbered from 1 in ``f``.

    Raises:
        ReadError: the stream cannot be decoded.
    """
    train_count = 0
    rows_noted = False
    last_step: float | None = None
    # The log dicts are a run of their own (HF prints no step in them): a train dict after
    # the end-of-training summary starts the next run of a capture appended to (nohup.out).
    dict_runs = _Runs(state, prefer_last=False)
    ended = False
    runs = _Runs(state)
    machine = _Machine(state, runs)
    crash: dict | None = None  # the last traceback or kill seen, and where
    stop: dict | None = None  # the first line saying the loss became non-finite
    in_traceback = 0
    lines = Lines(f)
    # Lines a launcher prefixed with their rank go to that rank's own reading (its steps
    # are its own: a rank that lags goes back in step against the others).
    per_rank: dict[int, tuple[_Machine, _Runs]] = {}
    # Of a run of blank lines only the first comes out: the rest change nothing here.
    for lineno, raw in lines.numbered():
        if raw == "\n" and machine.table is None:
            # A blank line outside a table holds no dict and does not trigger: half the
            # lines of a capture whose progress bar redraws with a carriage return.
            continue
        # A capture is mostly progress-bar lines: the substring tests skip the regexes
        # on the lines that cannot match them.
        line = ANSI.sub("", raw) if "\x1b" in raw else raw
        if "Traceback" in line and _TRACEBACK.search(line):
            in_traceback = lineno
        elif in_traceback and not line.startswith((" ", "\t")):
            e = _EXCEPTION.match(line.strip())
            if e is not None:
                crash = {"line": in_traceback, "error": line.strip()[:300]}
                in_traceback = 0
        if "Killed" in line and _KILLED.match(line.strip()):
            crash = {"line": lineno, "error": "Killed (the kernel's out-of-memory killer, or a scheduler)"}
        if ("oss" in line or "OSS" in line) and _NONFINITE_HINT.search(line) and _nonfinite_stop(line):
            # a statement, not a logged value: its words are read as no metric
            if stop is None:
                stop = {"line": lineno, "message": line.strip()[:300]}
            continue
        target = machine
        if line[:1] == "[" and (rk := _RANK_PREFIX.match(line)) is not None:
            # Every rank of a data-parallel launch may print its own copy of the loop's
            # lines (torchrun --tee: ``[rank1]:``, ``[default1]:``; mpirun --tag-output):
            # each rank is read on its own and merged by :func:`_merge_ranks`.
            r = int(rk.group(1) or rk.group(2))
            if r not in per_rank:
                rank_runs = _Runs(state)
                per_rank[r] = (_Machine(state, rank_runs), rank_runs)
            target = per_rank[r][0]
            line, raw = line[rk.end() :], raw[rk.end() :]
        found = False
        for _, vals in _dict_matches(line):
            found = True
            if "train_runtime" in vals:
                state.meta.setdefault("summary", {}).update(vals)
                ended = True
                continue
            step = vals.pop("step", None)
            if step is None:
                step = next((vals.pop(k) for k in list(vals) if _dict_step_key(k)), None)
            if any(k.startswith(_DICT_EVAL_PREFIXES) for k in vals):
                dict_runs.add(Record(step if step is not None else last_step, vals, lineno))
                continue
            if ended:
                # A run that reran with the same seed repeats the last one's first values,
                # which is no restatement: the summary said that run had ended.
                dict_runs.start_new()
                if step is None:
                    train_count = 0
            ended = False
            train_count += 1
            if step is None and not rows_noted:
                rows_noted = True
                state.notes.append(
                    "the log dicts carry no 'step': their steps are log rows (the count of train dicts), "
                    "not training steps"
                )
            last_step = step if step is not None else float(train_count)
            dict_runs.add(Record(last_step, vals, lineno))
        if found:
            continue
        if not raw.endswith(("\n", "\r")) and _triggered(line):
            # The last line has no line end: unfinished, its last number may be cut
            # ("0.6924" torn to "0.6"). A log dict is read whole or not at all, so only
            # the other printouts wait for their line end.
            p = _parse(_body(_tail(line)))
            if p is not None and p.has_loss:
                state.drop(
                    f"the last line ({lineno}) has no line end: a training line cut "
                    "mid-write (a run killed or still writing?), so it was not read"
                )
                continue
        if target.table is not None or target.ws_header is not None or target.nb_header is not None or _triggered(line):
            target.feed(line.rstrip("\r\n"), lineno)
        elif "/" in line:
            # the one kind of line read with no trigger word (YOLOv5's results.txt), parsed
            # here once rather than fed to the machine to fail its trigger again
            target._yolo_results(line.rstrip("\r\n"), lineno)
    lines.note(state)
    machine.finish()
    for m, _ in per_rank.values():
        m.finish()
    last, first = 0, 0
    for rec in dict_runs.finish():
        last, first = max(last, rec.line), min(first or rec.line, rec.line)
        yield rec
    recs = list(runs.finish())
    if per_rank:
        recs = _merge_ranks(recs, {r: list(rr.finish()) for r, (_, rr) in sorted(per_rank.items())}, state)
    if len(recs) >= ONE_STEP_MIN and all(r.step == recs[0].step for r in recs):
        # scikit-learn's partial_fit prints "-- Epoch 1" at every call: a step that never
        # moves is no x axis, and the judged curve must keep its order
        state.notes.append(
            f"every record of the run prints the same step ({recs[0].step:g}): it is no x axis, so the "
            "records are stepped by their order (the n-th is step n)"
        )
        recs = [Record(float(i + 1), r.values, r.line, r.holes) for i, r in enumerate(recs)]
    for rec in recs:
        last, first = max(last, rec.line), min(first or rec.line, rec.line)
        yield rec
    # A traceback (or a kill) after the last record the run is judged on: the run crashed
    # there. One with records after it was caught, or a run that started again.
    if crash is not None and crash["line"] > last > 0:
        state.meta["crash"] = crash
    # The program's own word that the loss became non-finite, inside the judged run (after
    # its first record, before any later run of the capture starts).
    if stop is not None and 0 < first < stop["line"]:
        later = [
            a for r in (dict_runs, runs, *(rr for _, rr in per_rank.values())) for a, _, _ in r.summary if a > last
        ]
        if not later or stop["line"] < min(later):
            state.meta["nonfinite_stop"] = stop
