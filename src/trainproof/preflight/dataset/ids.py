"""The ids the dataset check (`trainproof dataset`) emits, with their documentation:
declarations only, beside the checks that emit them (:mod:`.checks`, :mod:`.judge`).

The rule registry imports this module by name, through this package, whose ``__init__``
imports no check (:func:`trainproof.rules.registry.preflight_id_modules`): so ``trainproof
rules``, RULES.md and judging a run know these ids without loading the checks.
"""

from __future__ import annotations

from ...findings import Level
from ...rules.registry import declare

GROUP = "preflight"
#: Where this family is listed among the preflight families (trainproof rules, RULES.md).
ORDER = 1

declare(
    "TP-PRE-MALFORMED-JSONL",
    Level.FAIL,
    GROUP,
    "Lines of the dataset are not valid JSON objects",
    detects="Lines of a JSON Lines dataset (or elements of a .json array, or a whole .json document) that are "
    "not a JSON object: invalid JSON, invalid UTF-8, or a bare value or array. Gives the count, the "
    "line numbers (element indices for an array) of the first ones and the parser's reason.",
    why="Loaders disagree about bad lines: `datasets.load_dataset('json')` stops at the first one, a hand-written "
    "loop may skip them silently, pandas may coerce them. Either the run dies at start-up or it trains on "
    "less data than you think.",
    not_mean="Blank lines are not malformed (they are skipped, and counted in a note). The valid records were "
    "still read and judged; this says nothing about whether they hold what you expect.",
    causes="Files concatenated without a final newline, a truncated last line from an interrupted write, "
    "pretty-printed JSON saved as .jsonl, a log or CSV line mixed in, or text in a non-UTF-8 encoding.",
    try_="Look at the reported lines (`sed -n '<line>p' FILE`), fix or drop them, and write the file with one "
    "`json.dumps(record)` per line; for a truncated tail, rerun the export.",
)
declare(
    "TP-PRE-EMPTY-TEXT",
    Level.FAIL,
    GROUP,
    "Records with no text to train on",
    detects="Records whose trained text is empty or whitespace-only, null, not a string, or missing the field "
    "the detected shape reads. The trained text is `text`, the `completion`, the Alpaca `output`, the "
    "Dolly `response`, the assistant messages of a chat (all messages when none is from the assistant) "
    "or the --text-field value. Gives the record indices (0-based, as `dataset[i]`), their lines and how "
    "many of each kind.",
    why="An empty sample takes a slot in the batch and teaches nothing; with completion-only loss it gives a "
    "batch without labels (NaN loss). A field missing from some records makes the tokenising map raise a "
    "KeyError or TypeError part-way through preprocessing, after the job has started.",
    not_mean="A short text is not flagged, only an absent one. An empty Alpaca `input` or Dolly `context` is "
    "normal and not counted. The other records may still have problems of their own.",
    causes="Rows blanked by an upstream filter, a failed generation or scraping step that wrote empty strings, "
    "nulls from a dataframe export, or a schema change between shards (some records use another key).",
    try_="Filter them out before training (for example `ds.filter(lambda r: r['text'].strip())`) or fix the step that "
    "wrote them; if some records use another key, normalise the schema or pass --text-field.",
)
declare(
    "TP-PRE-DUPLICATE-TEXT",
    Level.WARN,
    GROUP,
    "Records that exactly duplicate an earlier record's text",
    detects="Records whose full text (every field the shape reads, in order; chat roles included) is identical "
    "to an earlier record's. Gives the number of extra copies, how many distinct texts repeat, and the "
    "first (earlier, later) pairs of record indices. Empty records are left to TP-PRE-EMPTY-TEXT.",
    why="A duplicate is trained on several times per epoch: it is over-weighted and memorised, and when the same "
    "text is also in the evaluation split the eval loss is optimistic.",
    not_mean="Only exact matches are found: near-duplicates (whitespace, casing, one changed word) are not. Some "
    "repetition is deliberate (upsampling a small source).",
    causes="A file concatenated with itself or with an overlapping shard, a scraper that revisited pages, a "
    "resumed export that rewrote its last chunk, or templated records without a variable part.",
    try_="Deduplicate on the text (a hash set while writing, `drop_duplicates`) and check the train/eval split "
    "for overlap; if the repetition is intended, --mute TP-PRE-DUPLICATE-TEXT.",
)
declare(
    "TP-PRE-NO-TEXT-FIELD",
    Level.NOT_CHECKED,
    GROUP,
    "No usable text field: the dataset could not be judged",
    detects="No record has a shape trainproof knows (`text`; `prompt`+`completion`; Alpaca `instruction`+"
    "`output`; Dolly `instruction`+`response`; chat `messages`; ShareGPT `conversations`), or no record "
    "has the --text-field path. Lists the keys seen, with how many records hold each (and, for a dotted "
    "path, the keys found at its deepest existing part).",
    why="Without the text nothing about the samples can be judged (exit 2), and the training script's formatting "
    "function will fail for the same reason, or train on a stringified record.",
    not_mean="The data is not necessarily bad: it may keep its text under another name. The file was read; only "
    "the text checks could not run.",
    causes="The text sits under a project-specific key (`content`, `body`, `question`/`answer`), is nested "
    "(`data.body`), or the --text-field path is misspelt.",
    try_="Pass --text-field with the key or dotted path that holds the text (for example --text-field data.body), "
    "chosen from the keys listed.",
)
declare(
    "TP-PRE-MISSING-EOS-TOKEN",
    Level.FAIL,
    GROUP,
    "The tokenizer has no EOS token",
    detects="The tokenizer has no end-of-sequence token, or names one its vocabulary does not contain. For a "
    "directory loaded by transformers that is `tokenizer.eos_token`; for a bare tokenizer.json see "
    "`trainproof.preflight.dataset` (config files next to it, then the post-processor, then well-known "
    "names).",
    why="A causal LM learns to stop only from an EOS at the end of its training samples. Without one the "
    "fine-tuned model generates until max_new_tokens, generation code that stops on eos_token_id never "
    "stops, and trainers that append `eos_token` to each sample (TRL's SFTTrainer) fail or append nothing.",
    not_mean="For an encoder or classification model ([CLS]/[SEP], BERT-style) no EOS is normal; this is about "
    "training a generative language model.",
    causes="A tokenizer.json copied without its tokenizer_config.json / special_tokens_map.json, a tokenizer "
    "trained from scratch with no end token among its special tokens, or a config naming a token the "
    "vocabulary lacks.",
    try_="Set the model's end token and save it with the tokenizer (`tokenizer.eos_token = '</s>'`, "
    "`save_pretrained`), or copy the model's tokenizer_config.json and special_tokens_map.json next to "
    "tokenizer.json; check the model config's eos_token_id agrees.",
)
declare(
    "TP-PRE-MISSING-PAD-TOKEN",
    Level.WARN,
    GROUP,
    "The tokenizer has no pad token",
    detects="The tokenizer has no padding token (or names one its vocabulary does not contain).",
    why="Batching samples of different lengths pads them: transformers raises `Asking to pad but the tokenizer "
    "does not have a padding token` at the first padded batch, and the usual quick fix, `pad_token = "
    "eos_token`, causes what TP-PRE-PAD-EQUALS-EOS describes.",
    not_mean="A run that never pads (packed fixed-length blocks, batch size 1) does not need one; many base LLM "
    "tokenizers (Llama, Mistral, GPT-2) ship without a pad token on purpose.",
    causes="The base model was pre-trained on packed sequences and never padded, or the pad token is set in the "
    "training script instead of being saved with the tokenizer.",
    try_="Set a pad token distinct from EOS (an unused special token such as a reserved `<|finetune_right_pad_id|>`"
    ", or `tokenizer.add_special_tokens({{'pad_token': '<pad>'}})` plus `model.resize_token_embeddings`) and "
    "save the tokenizer with the run.",
)
declare(
    "TP-PRE-PAD-EQUALS-EOS",
    Level.WARN,
    GROUP,
    "The pad token is the EOS token: EOS labels get masked",
    detects="The pad token id equals the EOS token id.",
    why="The usual causal-LM collator (`DataCollatorForLanguageModeling(mlm=False)`) sets the label of every "
    "position whose id is pad_token_id to -100. With pad == EOS the EOS ending each sample is masked as "
    "well, the model never gets a loss on EOS and never learns to stop: generations run to max_new_tokens.",
    not_mean="Harmless when the collator masks padding by the attention mask or by position (packing without "
    "padding, collators that build labels before padding), or when stopping is not learned from EOS. "
    "Check what your collator does to the labels before changing the tokenizer.",
    causes="`tokenizer.pad_token = tokenizer.eos_token`, the common fix for a missing pad token, saved with the "
    "tokenizer; some model repositories ship it that way.",
    try_="Use a distinct pad token (an unused special token, or add `<pad>` and resize the embeddings) or a "
    "collator that masks by attention mask; after a short run, check that generations end with EOS.",
)
declare(
    "TP-PRE-NO-EOS-APPEND",
    Level.WARN,
    GROUP,
    "Encoded samples do not end with EOS",
    detects="Encoding the records as a trainer does (`add_special_tokens=True`; chat records through the chat "
    "template when the tokenizer has one) gives ids that do not end with the EOS id (whitespace-only "
    "tokens after it, like the newline after `<|im_end|>`, are allowed). Gives how many records, the "
    "first indices, and whether the tokenizer appends EOS by itself (most decoder tokenizers do not).",
    why="If nothing appends EOS, the model never sees one at the end of a sample, is never trained to emit it, "
    "and does not learn to stop.",
    not_mean="Trainers that append EOS themselves (TRL's SFTTrainer adds eos_token to each text or completion, "
    "as do many preprocessing functions) make this harmless: check the preprocessing first.",
    causes="Decoder tokenizers add no EOS when encoding (Llama and Mistral add only BOS, GPT-2 adds nothing) and "
    "the text does not carry the EOS string; a preprocessing function that joins fields without `+ eos_token`.",
    try_="Append `tokenizer.eos_token` to each training text (or completion), or make sure the trainer does; for "
    "chat data, use the model's chat template, which ends each turn with its end token.",
)
declare(
    "TP-PRE-BOS-TOKEN-INFO",
    Level.INFO,
    GROUP,
    "The BOS token, and whether encoding prepends it",
    detects="Reports the tokenizer's BOS token and where it was found, whether encoding prepends it, and how "
    "many records start with BOS twice (the text already holds it and encoding adds another).",
    why="A model is pre-trained with one start convention; a fine-tune that drops the BOS, or doubles it (a chat "
    "template that writes `<s>` encoded again with add_special_tokens=True), moves the first positions away "
    "from what the model knows and quietly costs quality.",
    not_mean="Context only, never part of the verdict: many tokenizers (GPT-2, Qwen) have no BOS by design.",
    causes="The tokenizer's configuration decides it (`add_bos_token`, the post-processor template); a doubled "
    "BOS comes from text that already starts with it.",
    try_="If records start with BOS twice, encode rendered chat text with add_special_tokens=False or drop the "
    "BOS from the text; if the model expects a BOS and encoding does not add one, set add_bos_token=True.",
)
declare(
    "TP-PRE-CONTEXT-OVERFLOW",
    Level.WARN,
    GROUP,
    "Records longer than --max-len tokens will be truncated",
    detects="Counts the records whose encoded length exceeds --max-len, and gives the longest (tokens, record "
    "index) and the share truncation cuts, of the records and of all tokens. Lengths are lower bounds: "
    "a prompt template of your own adds tokens (see `meta.tokens.length_basis`).",
    why="Truncation cuts the end of a sample: in instruction data that is the answer and its EOS, so the model "
    "learns cut-off answers and not to stop; packed pre-training silently loses the tails.",
    not_mean="No loss for a corpus that is chunked into max-len blocks instead of truncated; a trainer that "
    "drops over-long records loses them whole instead.",
    causes="A max length set below the data (copied from another task, or lowered to fit memory), a few "
    "abnormally long records (scraped pages, concatenated conversations), or a tokenizer that splits this "
    "text (code, another language) into more tokens than expected.",
    try_="Look at the longest record first (outliers are often broken data), then filter or split long records, "
    "raise max_seq_length if memory allows, or chunk/pack for continued pre-training.",
)
declare(
    "TP-PRE-CONTEXT-CHECK-SKIPPED",
    Level.INFO,
    GROUP,
    "Truncation was not checked: no --max-len",
    detects="--tokenizer was given without --max-len, so truncation is not judged. Gives the longest record and "
    "the 50th/95th percentile lengths to choose a max length from (and the tokenizer's "
    "model_max_length when it sets a real one).",
    why="Whether samples get truncated depends on the max_seq_length of the run, which the dataset does not "
    "record; a skipped check is not a passed one.",
    not_mean="Nothing was found or ruled out about truncation.",
    causes="The command was run without --max-len.",
    try_="Rerun with --max-len set to the run's max_seq_length (block_size, cutoff_len, ...).",
)
declare(
    "TP-PRE-OK",
    Level.PASS,
    GROUP,
    "The dataset passed every preflight check that ran",
    detects="Every dataset check that ran found nothing: all lines parsed, every record has text, no exact "
    "duplicates; with --tokenizer, EOS and pad are set and distinct, encoded samples end with EOS and, "
    "with --max-len, none is truncated.",
    why="A clean, machine-readable result (exit 0) that a CI step can gate a training job on.",
    not_mean="It does not say the data suits the task: labels, near-duplicates, train/eval leakage, language mix "
    "and content are not checked, and checks reported as skipped did not run.",
    causes="The dataset (and tokenizer) are consistent for every check that ran.",
    try_="Nothing to fix; keep the command in CI so a regenerated dataset is checked again.",
)
