"""The ids the objective check (`trainproof targets`) emits, with their documentation:
declarations only, beside the checks that emit them (:mod:`.checks`, :mod:`.reports`).

The rule registry imports this module by name, through this package, whose ``__init__``
imports no check (:func:`trainproof.rules.registry.preflight_id_modules`): so ``trainproof
rules``, RULES.md and judging a run know these ids without loading the checks.
"""

from __future__ import annotations

from ...findings import Level
from ...rules.registry import declare

GROUP = "objective"
#: Where this family is listed among the preflight families (trainproof rules, RULES.md).
ORDER = 3

declare(
    "TP-OBJ-IGNORE-INDEX-COLLISION",
    Level.FAIL,
    GROUP,
    "The loss's ignore_index is a real class",
    detects="The loss's `ignore_index` is a valid class id: 0 <= ignore_index < num_classes. Decided from the two "
    "integers alone, before any data is read.",
    why="Cross-entropy drops every target equal to `ignore_index` from the loss, so that class is never a target "
    "and the model is never trained to predict it. When the id is the end-of-sequence token the model never "
    "learns to stop; when it is class 0 of a classifier, that class is never learned. No loss curve shows it: "
    "the dropped targets are simply not in the loss.",
    not_mean="It does not mean targets with that id occur in the data (a class can exist and be unused). It does "
    "not say which of the two numbers is wrong: if the id really is padding, num_classes may be counting "
    "the padding id as a class.",
    causes="`ignore_index` set to the pad token id while pad == EOS (models without a pad token are often given "
    "EOS as pad); `ignore_index=0` for a background or padding class that is also a real class; a "
    "segmentation 'void' value of 255 with a head of 256 outputs.",
    try_="Mask with a value outside the classes (-100, the PyTorch and Hugging Face default) instead of a real id; "
    "if padding needs an id of its own, give it one past the last class and keep it out of num_classes.",
)
declare(
    "TP-OBJ-IGNORE-INDEX-OK",
    Level.INFO,
    GROUP,
    "The ignore_index sits one past the last class",
    detects="`ignore_index` equals num_classes: the first id after the last class. Any other value outside "
    "[0, num_classes), such as the usual -100, gets no finding at all.",
    why="It is a valid choice that sits at the edge: one more output in the head (a token added to the vocabulary "
    "and the embeddings resized) turns it into a class and into TP-OBJ-IGNORE-INDEX-COLLISION.",
    not_mean="Not a problem and not a verdict: nothing is ignored that the model could predict, as long as "
    "num_classes is the size of the model's output layer.",
    causes="Padding given the id right after the classes (a pad token appended to a vocabulary of num_classes "
    "tokens), or segmentation masks labelling 'void' with the next free index.",
    try_="Make sure num_classes is the size of the output layer actually trained, not the size of the label set "
    "before tokens were added; -100 avoids the question.",
)
declare(
    "TP-OBJ-TARGET-OUT-OF-RANGE",
    Level.FAIL,
    GROUP,
    "Targets outside [0, num_classes)",
    detects="At least one target id is below 0 or at least num_classes and is not the `ignore_index`. The finding "
    "gives how many, the smallest and largest such values and the first batch that held one.",
    why="PyTorch's cross-entropy raises on CPU, and on CUDA stops the run with a device-side assert that surfaces "
    "at a later, unrelated call; a loss that clamps, wraps or one-hot encodes ids without a check trains on "
    "the wrong class without a word. Labels numbered from 1 also leave class 0 unused (TP-OBJ-DEAD-CLASS).",
    not_mean="It does not say the targets inside the range are right: a wrong but in-range label map is invisible "
    "here.",
    causes="Labels numbered 1..num_classes instead of 0..num_classes-1; num_classes taken from one split while "
    "another has more classes; a padding value (-1, 255) that differs from `ignore_index`; tokens added to "
    "a tokenizer without resizing the output layer; labels made with another tokenizer.",
    try_="Look at the offending values in the evidence; map labels to 0..num_classes-1; pad labels with the "
    "`ignore_index`; resize the output layer after adding tokens (`model.resize_token_embeddings(len("
    "tokenizer))`).",
)
declare(
    "TP-OBJ-TARGET-RANGE-OK",
    Level.PASS,
    GROUP,
    "Every target is a class id or the ignore_index",
    detects="Every target seen lies in [0, num_classes) or equals the `ignore_index`.",
    why="Every target indexes an output the model has, so the loss reads the class it was given.",
    not_mean="It does not say the labels are correct, only that each is a possible class; nor that every class "
    "appears (see TP-OBJ-DEAD-CLASS).",
    causes="Labels encoded from 0 with the label set of the model's head.",
    try_="Nothing to do.",
)
declare(
    "TP-OBJ-DEAD-CLASS",
    Level.FAIL,
    GROUP,
    "A class never appears as a target although the others are covered",
    detects="A class id never appears as a target although at least `obj_coverage_min_per_class` valid targets per "
    "class were seen (valid targets / num_classes; ignored and out-of-range targets do not count) and at "
    "most `obj_dead_class_max_missing` classes are missing. Counted over every batch given to "
    "`TargetCoverage.update`.",
    why="A class that is never a target has its output pushed down at every step and is never predicted. Loss and "
    "accuracy still improve, because the missing class contributes nothing to either; it shows only when the "
    "model meets that class after training.",
    not_mean="It does not prove the class is absent from the whole dataset, only from the targets seen. A class "
    "at a tenth of its fair share goes unseen by chance with probability e^-5 (0.7%) at the default "
    "coverage; if the class is that rare, feed more batches.",
    causes="An `ignore_index` or a mask value equal to a real id (EOS masked as padding while pad == EOS); an "
    "off-by-one label map (1-based labels shifted down, or the last class cut off); a filtering or "
    "deduplication step that removed every example of a class; num_classes one too large.",
    try_="Look for the missing ids in the raw data and follow them through the label mapping and masking; if a "
    "class is truly absent, drop it from the head or add examples of it.",
    thresholds=("obj_coverage_min_per_class", "obj_dead_class_max_missing"),
)
declare(
    "TP-OBJ-COVERAGE-INSUFFICIENT",
    Level.INFO,
    GROUP,
    "Too few targets seen to tell a dead class from a rare one",
    detects="The dead-class check did not decide: fewer than `obj_coverage_min_per_class` valid targets per class "
    "were seen, or more than `obj_dead_class_max_missing` classes never appeared (a label space too sparse "
    "to name dead classes in). The finding gives how many classes were seen and how many targets a "
    "decision needs.",
    why="Naming a class dead from a small sample would be a guess: a rare class misses a small sample by chance.",
    not_mean="Not a verdict and not a problem found: the check reached no conclusion. Many never-seen ids in a "
    "language-model vocabulary are ordinary (reserved special tokens, byte tokens that never occur in "
    "UTF-8 text).",
    causes="A few batches of a task with many classes (a vocabulary of 32,000 tokens needs 1.6 million targets at "
    "the default coverage); a label space with unused ids by design; num_classes much larger than the "
    "label set.",
    try_="Feed more batches to `TargetCoverage.update` (counting an epoch's targets is cheap), or more targets to "
    "`--targets`; pass the real number of classes.",
    thresholds=("obj_coverage_min_per_class", "obj_dead_class_max_missing"),
)
declare(
    "TP-OBJ-DEAD-CLASS-OK",
    Level.PASS,
    GROUP,
    "Every class appears as a target",
    detects="Every class id in [0, num_classes) appeared as a target at least once.",
    why="Every output of the head is trained towards at least sometimes.",
    not_mean="It does not say the classes are balanced, or that any class has enough examples to be learned: one "
    "occurrence is enough to pass.",
    causes="A label set that matches the head, with no class masked or filtered away.",
    try_="Nothing to do. Check the per-class counts (`TargetCoverage.counts`) if some classes are very rare.",
)
declare(
    "TP-OBJ-LABEL-SHIFT-DOUBLE",
    Level.FAIL,
    GROUP,
    "Labels shifted by the data and again by the loss",
    detects="The caller states that the loss shifts labels itself (`loss_shifts_labels=True`, "
    "`--loss-shifts-labels`; Hugging Face causal LMs compare logits[:, :-1] with labels[:, 1:]) and the "
    "labels are already shifted: labels[t] == input_ids[t+1] at most compared positions of most sequences. "
    "Positions whose label is the `ignore_index`, and positions where input_ids[t] == input_ids[t+1] "
    "(which match both alignments), are not compared. Each sequence votes; a strict majority of the "
    "sequences with a position to compare decides.",
    why="Shifted twice, the model is trained to predict the token two positions ahead. The loss still falls (the "
    "task is learnable, only harder and wrong), so the curve looks like a mediocre run while generation is "
    "garbage.",
    not_mean="It does not apply to a loss that does not shift: there, pre-shifted labels are right. trainproof "
    "knows only what `loss_shifts_labels` says about the loss; without that statement it never FAILs.",
    causes="A collator or preprocessing step that builds labels as input_ids[1:] (as a hand-written training loop "
    "does) feeding a Hugging Face `*ForCausalLM` model, which shifts again; code ported from a plain "
    "PyTorch loop to the HF Trainer.",
    try_="Give Hugging Face causal LMs labels = input_ids (padding set to -100) and let the model shift; or keep "
    "the pre-shifted labels and compute the loss yourself without shifting.",
)
declare(
    "TP-OBJ-LABEL-SHIFT-OK",
    Level.PASS,
    GROUP,
    "Labels are aligned as the stated loss expects",
    detects="The labels align as the stated loss needs, in a strict majority of sequences: labels[t] == "
    "input_ids[t] when the loss shifts them (`loss_shifts_labels=True`), labels[t] == input_ids[t+1] when "
    "it does not (`False`).",
    why="Each position is trained to predict the next token, once.",
    not_mean="It does not check the sequences in the minority (the evidence counts them), nor that the statement "
    "about the loss is true.",
    causes="Labels built the way the loss expects.",
    try_="Nothing to do.",
)
declare(
    "TP-OBJ-LABEL-SHIFT-OBSERVED",
    Level.INFO,
    GROUP,
    "Label alignment measured, not judged",
    detects="The alignment was measured (labels equal input_ids at the same position, or one position ahead, in a "
    "strict majority of sequences) but not judged: the caller did not say whether the loss shifts the "
    "labels (`loss_shifts_labels=None`, no `--loss-shifts-labels` flag), or said it does not while the "
    "labels are not shifted.",
    why="The same labels are right for one loss and wrong for the other; without knowing the loss, a verdict "
    "would be a guess.",
    not_mean="Not a verdict. Unshifted labels with a loss that does not shift train each position to copy its own "
    "input: right for objectives that reconstruct the input, wrong for next-token prediction (a loss "
    "that falls to near zero at once shows that case on the curve).",
    causes="No statement about the loss was given.",
    try_="State the loss: `loss_shifts_labels=True` (`--loss-shifts-labels`) for Hugging Face `*ForCausalLM` "
    "models, `False` (`--loss-does-not-shift-labels`) for a loss computed on pre-shifted labels.",
)
declare(
    "TP-OBJ-LABEL-SHIFT-NOT-MEASURED",
    Level.INFO,
    GROUP,
    "Label alignment could not be told",
    detects="No alignment could be told: no sequence had a position to compare (every label is the "
    "`ignore_index`, sequences of one token, runs of one repeated token), or neither alignment won a "
    "strict majority of sequences (labels that match neither, as in token classification, or a mix).",
    why="Without a measured alignment there is nothing to judge; a guess would be noise.",
    not_mean="Not a verdict and not a problem found. Labels that are not token ids of the input (classification "
    "tags, another tokenizer's ids) always end here.",
    causes="Labels that are not next-token ids; a batch that is all prompt (masked) within the first "
    "`max_positions` positions; a mix of collators.",
    try_="Pass a batch of the causal-LM data with its `input_ids` and `labels`; raise `max_positions` when long "
    "masked prompts hide the completions.",
)
