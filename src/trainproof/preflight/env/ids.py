"""The ids the environment check (`trainproof env`) emits, with their documentation:
declarations only, beside the checks that emit them (:mod:`.probe`, :mod:`.checkpoints`,
:mod:`.resources`, :mod:`.judge`).

The rule registry imports this module by name, through this package, whose ``__init__``
imports no check (:func:`trainproof.rules.registry.preflight_id_modules`): so ``trainproof
rules``, RULES.md and judging a run know these ids without loading the checks.
"""

from __future__ import annotations

from ...findings import Level
from ...rules.registry import declare

GROUP = "env"
#: Where this family is listed among the preflight families (trainproof rules, RULES.md).
ORDER = 2

declare(
    "TP-ENV-PYTHON-INFO",
    Level.INFO,
    GROUP,
    "The interpreter the imports were probed with",
    detects="The version and path of the Python interpreter (`--python`, default the one running trainproof) that "
    "ran the import probes.",
    why="An import that works under one interpreter fails under another; the findings name the one they are about.",
    not_mean="Not a verdict. It does not mean the run will use this interpreter: a launcher (torchrun, accelerate, "
    "a Slurm script) may pick another one.",
    causes="Always reported when imports are probed or `--python` is given.",
    try_="Pass the interpreter the run will use with `--python`, e.g. `--python .venv/bin/python`.",
)
declare(
    "TP-ENV-PYTHON-UNUSABLE",
    Level.NOT_CHECKED,
    GROUP,
    "The --python interpreter cannot run",
    detects="The interpreter given with `--python` does not exist, is not executable, is not Python, did not answer "
    "within `--timeout`, or exited without reporting its version.",
    why="No import can be probed with it, and the run cannot start with it either.",
    not_mean="It does not say whether the modules import; they were not probed (NOT-CHECKED).",
    causes="A wrong path, a virtual environment that was deleted or moved (its `bin/python` symlink now dangles), "
    "a conda environment that is not activated, a wrapper script that fails.",
    try_="Run the path with `-c 'import sys; print(sys.version)'` yourself; recreate the environment if its "
    "interpreter link is broken.",
)
declare(
    "TP-ENV-CWD-MISSING",
    Level.NOT_CHECKED,
    GROUP,
    "The --cwd directory does not exist",
    detects="The directory given with `--cwd`, which the run starts from, does not exist or is not a directory.",
    why="Imports are probed from there (editable installs and local packages resolve relative to it); from "
    "anywhere else the answer would be about another setup.",
    not_mean="It does not say whether the modules import; they were not probed (NOT-CHECKED).",
    causes="A typo, a checkout that is not there yet on this machine, a path on a filesystem that is not mounted.",
    try_="Give the directory the training command runs from, e.g. the repository root.",
)
declare(
    "TP-ENV-IMPORT-OK",
    Level.PASS,
    GROUP,
    "The module imports",
    detects="`import MODULE` finished without an exception in a child interpreter started from `--cwd`.",
    why="The run will get past its imports of this module on this machine.",
    not_mean="It does not mean the module works: a CUDA extension can import and fail at its first kernel, and a "
    "version can import and lack an API the run calls.",
    causes="The environment has the module and everything it imports at load time.",
    try_="Nothing to do. Check the version in the evidence if the run needs a particular one.",
)
declare(
    "TP-ENV-IMPORT-FAIL",
    Level.FAIL,
    GROUP,
    "The module raises on import",
    detects="`import MODULE` raised a Python exception; the finding gives its type, its message and the file:line "
    "it was raised at (the deepest frame outside the import machinery), with the import chain in `data`.",
    why="The run dies at its first line, after waiting in the queue for its machine.",
    not_mean="It does not mean the module is broken: an import can fail because of the environment (a missing "
    "optional dependency, a wrong working directory, an environment variable).",
    causes="A package not installed in this environment; a version mismatch between packages (an `ImportError: "
    "cannot import name`); a compiled extension built for another Python, torch or CUDA version; a "
    "SyntaxError in a local module.",
    try_="Open the file:line in the evidence; install or pin the package the message names; run the same "
    "`--python` with `-c 'import MODULE'` from `--cwd` to reproduce.",
)
declare(
    "TP-ENV-IMPORT-CRASH",
    Level.FAIL,
    GROUP,
    "Importing the module kills the interpreter",
    detects="The child interpreter importing the module died from a signal (SIGSEGV, SIGABRT, SIGBUS, SIGILL, "
    "SIGKILL, ...), or exited without a Python exception. With `-X faulthandler` the child prints the Python "
    "line it crashed at, which the finding cites when present.",
    why="A crash in a compiled extension takes the whole run down with no Python traceback; trainproof survives it "
    "because the import ran in another process.",
    not_mean="It does not mean the machine is faulty: the crash is in the imported code or its libraries.",
    causes="A compiled extension built against another ABI (torch, numpy 1 vs 2, CUDA); two libraries bundling "
    "conflicting copies of a shared library; SIGILL from a binary compiled for newer CPU instructions; "
    "SIGKILL from the OOM killer; a module calling `os._exit`.",
    try_="Reinstall the extension from a build that matches this Python, torch and CUDA; import its dependencies "
    "one by one with `--module` to find which one crashes.",
)
declare(
    "TP-ENV-IMPORT-TIMEOUT",
    Level.FAIL,
    GROUP,
    "Importing the module did not finish within --timeout",
    detects="`import MODULE` was still running after `--timeout` seconds and was stopped. The child dumps its "
    "Python stack at the timeout (faulthandler); the finding cites the innermost frame it was waiting in.",
    why="An import that hangs hangs the run before it logs anything, which looks like a queue problem rather than "
    "an environment one.",
    not_mean="It does not prove the import would never finish: a cold import of a large stack from a network "
    "filesystem can take minutes. Raise `--timeout` to tell slow from stuck.",
    causes="An import that waits on the network (a download, a license server, a hub lookup without "
    "`HF_HUB_OFFLINE`), a lock left by another process, compiling an extension at import time (JIT, "
    "Triton), a slow shared filesystem.",
    try_="Look at the file:line in the evidence; set the library's offline variables; run the import by hand with "
    "`python -X importtime -c 'import MODULE'`.",
)
declare(
    "TP-ENV-CKPT-OK",
    Level.PASS,
    GROUP,
    "The torch checkpoint is a complete archive with intact entries",
    detects="A torch checkpoint (a ZIP archive, as `torch.save` writes since 1.6) whose central directory reads, "
    "whose entries lie under one top folder with a `data.pkl`, whose every entry matches its CRC-32, and "
    "whose `data.pkl` imports only what `torch.load(weights_only=True)` accepts (read from its opcodes).",
    why="The file was written to the end and has not changed since: `torch.load` will not stop on a cut or flipped "
    "byte.",
    not_mean="It does not mean the checkpoint is the right one or loads into your model: the pickle is never "
    "executed, so keys, shapes and dtypes are not compared with anything. A checkpoint saved with "
    "`torch.serialization.set_crc32_options(False)` records no CRCs; the evidence then says its contents "
    "were not verified.",
    causes="The save finished.",
    try_="Nothing to do. Load it with `torch.load(..., weights_only=True)` to keep unpickling safe.",
)
declare(
    "TP-ENV-CKPT-UNSAFE-PICKLE",
    Level.WARN,
    GROUP,
    "The torch checkpoint's pickle imports code beyond what weights_only loading accepts",
    detects="A torch ZIP checkpoint whose `data.pkl` imports a global (a GLOBAL, INST or STACK_GLOBAL opcode) "
    "outside the set `torch.load(weights_only=True)` accepts by default (containers, dtypes, tensor and "
    "storage types, the tensor rebuild functions), or one whose name is computed while loading, or a "
    "`data.pkl` too large to list (over 16 MiB). The imports are read from the opcodes; nothing is "
    "unpickled. The archive itself is intact (its CRCs were checked first).",
    why="Unpickling imports each such global and can call it: `torch.load(weights_only=False)` (the default before "
    "torch 2.6, and what many resume paths still pass) on a checkpoint importing `os.system` runs a shell "
    "command with the trainer's rights. A checkpoint that arrives with a pull request is input from its author.",
    not_mean="It does not prove the file is malicious: a checkpoint that pickles a whole model object, an "
    "optimizer's custom class, NumPy arrays or an argparse Namespace imports those classes too. "
    "`weights_only=True` refuses such a file unless they are allowlisted.",
    causes="`torch.save(model)` instead of `torch.save(model.state_dict())`; training arguments or NumPy values "
    "saved next to the weights; a checkpoint crafted to run code when loaded.",
    try_="Load it only with `torch.load(path, weights_only=True)`, allowlisting the named globals you trust "
    "(`torch.serialization.add_safe_globals`); re-save the state dict alone, or as safetensors.",
)
declare(
    "TP-ENV-CKPT-MISSING",
    Level.FAIL,
    GROUP,
    "The checkpoint does not exist",
    detects="The path given with `--checkpoint` does not exist (or is a symlink to nothing), or is a directory with "
    "no checkpoint file in it.",
    why="A run told to resume from it or initialise from it stops at load time, or silently starts from scratch "
    "when the training script treats a missing checkpoint as optional.",
    not_mean="It does not mean the checkpoint was never written: it may be on another machine or filesystem.",
    causes="A typo; a relative path meant from another directory; a scratch filesystem cleaned since; a checkpoint "
    "directory that only holds the trainer's JSON files.",
    try_="Check the path from where trainproof runs; copy or mount the checkpoint on this machine.",
)
declare(
    "TP-ENV-CKPT-EMPTY",
    Level.FAIL,
    GROUP,
    "The checkpoint file is empty (0 bytes)",
    detects="The checkpoint file exists and has 0 bytes.",
    why="`torch.load` fails on it; the file was created and nothing was written.",
    not_mean="It does not mean the training that produced it was bad: the save itself failed.",
    causes="The process was killed right after opening the file; the disk was full; a copy that failed; a "
    "placeholder created by a script.",
    try_="Use the previous checkpoint; check free space where checkpoints are written (`--checkpoint-gb`).",
)
declare(
    "TP-ENV-CKPT-TRUNCATED",
    Level.FAIL,
    GROUP,
    "The torch checkpoint ends early: the save did not finish",
    detects="The file starts as a ZIP archive but has no end-of-central-directory record (or a cut central "
    "directory): the archive stops before its end. The evidence lists the entries that were started.",
    why="`torch.save` writes the directory last; a file without it was cut during the save or the copy and "
    '`torch.load` fails on it ("failed finding central directory").',
    not_mean="It does not mean the earlier entries are damaged; but the weights cannot be read safely without "
    "the directory.",
    causes="The job was killed, preempted or ran out of time while saving; the disk filled up during the save; an "
    "interrupted copy or download (scp, rsync, a hub download).",
    try_="Use the previous checkpoint; save to a temporary name and rename when done, so a cut save never replaces "
    "a good one; copy again and compare sizes.",
)
declare(
    "TP-ENV-CKPT-CORRUPT",
    Level.FAIL,
    GROUP,
    "The torch checkpoint archive is damaged or is not a checkpoint",
    detects="The ZIP archive reads but an entry fails its CRC-32 (its bytes changed after writing), an entry "
    "cannot be read where the directory says it is, or the archive has no `<top>/data.pkl` (a ZIP that is "
    "not a torch checkpoint). A shard index that is not valid JSON is reported here too.",
    why="`torch.load` either fails or, for a flipped byte inside a tensor, loads wrong weights without a word.",
    not_mean="It does not say which tensor values are wrong; it says which entry changed.",
    causes="Storage or transfer corruption (a bad disk, a flaky network copy); a file edited in place; two "
    "processes writing the same path at once (several ranks saving without a rank-0 guard).",
    try_="Copy the checkpoint again from its source and compare checksums; save from rank 0 only.",
)
declare(
    "TP-ENV-CKPT-LEGACY",
    Level.NOT_CHECKED,
    GROUP,
    "A legacy (pre-1.6) bare-pickle checkpoint: not opened",
    detects="The file is a bare pickle stream (the format of `torch.save` before 1.6, or with "
    "`_use_new_zipfile_serialization=False`) or a pre-0.4 tar checkpoint.",
    why="Such a file has no directory and no checksums, so it can only be checked by unpickling it, and unpickling "
    "runs arbitrary code. trainproof refuses to open it.",
    not_mean="It does not mean the file is damaged or malicious; it was not checked (NOT-CHECKED).",
    causes="An old checkpoint; a script that saves with `_use_new_zipfile_serialization=False`; a plain "
    "`pickle.dump` of a model.",
    try_="If you trust its source, load it once with `torch.load` and save it again with a current `torch.save`, "
    "or convert the weights to safetensors.",
)
declare(
    "TP-ENV-CKPT-UNREADABLE",
    Level.NOT_CHECKED,
    GROUP,
    "The checkpoint cannot be read",
    detects="The checkpoint path exists but cannot be opened or read (permissions, an I/O error), or is not a "
    "regular file (a FIFO, a socket, a device).",
    why="Nothing could be verified; the run will most likely fail to read it too.",
    not_mean="It does not say whether the contents are intact (NOT-CHECKED).",
    causes="File permissions of another user or group; a filesystem that is not fully mounted; a stale NFS handle.",
    try_="Check `ls -l` and the mount; run trainproof as the user the run will run as.",
)
declare(
    "TP-ENV-CKPT-LFS-POINTER",
    Level.FAIL,
    GROUP,
    "The checkpoint is a Git LFS pointer, not the weights",
    detects="The file is a small text file starting with `version https://git-lfs.github.com/spec/v1`: the "
    "placeholder git leaves when LFS objects were not fetched.",
    why="`torch.load` or `safetensors` fails on it (\"invalid load key, 'v'\", a header-too-large error), far from "
    "the cause.",
    not_mean="It does not mean the weights are lost: they are on the LFS server.",
    causes="A clone without `git lfs install`; `GIT_LFS_SKIP_SMUDGE=1`; a CI checkout without `lfs: true`.",
    try_="Run `git lfs pull` in the repository (or `huggingface-cli download` for hub models).",
)
declare(
    "TP-ENV-CKPT-UNKNOWN-FORMAT",
    Level.NOT_CHECKED,
    GROUP,
    "The checkpoint is in no format trainproof checks",
    detects="The file is neither a torch ZIP archive, a legacy pickle, a safetensors file nor an LFS pointer.",
    why="Nothing could be verified about it.",
    not_mean="It does not mean the file is bad: it may be a format trainproof does not read (GGUF, HDF5, ONNX, "
    "a NumPy array, a DeepSpeed or TensorFlow checkpoint).",
    causes="A file in another format; a download that saved an HTML error page under the checkpoint's name.",
    try_="Check what the file is with `file PATH` or `head -c 200 PATH`.",
)
declare(
    "TP-ENV-SAFETENSORS-OK",
    Level.PASS,
    GROUP,
    "The safetensors file is complete and consistent",
    detects="A safetensors file whose header length and JSON header read, every tensor's dtype and shape match its "
    "byte range, and the ranges cover the data area exactly, without gaps, overlaps or trailing bytes.",
    why="The file is whole: `safetensors` will open it and every tensor has all its bytes.",
    not_mean="It does not mean the values are right: safetensors stores no checksum, so a flipped byte inside a "
    "tensor cannot be seen. Nor does it check the tensors fit your model.",
    causes="The save finished.",
    try_="Nothing to do.",
)
declare(
    "TP-ENV-SAFETENSORS-TRUNCATED",
    Level.FAIL,
    GROUP,
    "The safetensors file ends early",
    detects="The file is shorter than its own header says: under 8 bytes, a header that ends past the end of the "
    "file, or a consistent header whose last tensors need bytes the file does not have. The evidence names "
    "the tensors cut.",
    why='`safetensors` refuses the file ("incomplete metadata, file not fully covered") and the run stops at load.',
    not_mean="It does not mean the earlier tensors are damaged. A header edited to point past the end while staying "
    "consistent looks the same as a cut file.",
    causes="An interrupted save, copy or download; a disk that filled up during the save.",
    try_="Copy or download the file again and compare its size with the source; use the previous checkpoint.",
)
declare(
    "TP-ENV-SAFETENSORS-CORRUPT",
    Level.FAIL,
    GROUP,
    "The safetensors header is invalid or inconsistent",
    detects="The header length is absurd (over 100 MB, the format's limit), the header is not a JSON object, a "
    "tensor entry lacks a dtype, shape or offsets, a tensor's byte range does not match its dtype and shape, "
    "ranges overlap or leave gaps, bytes follow the last tensor, or a shard lacks a tensor its index "
    "assigns to it.",
    why="`safetensors` refuses such a file, or a hand-rolled reader would read the wrong bytes as weights.",
    not_mean="It does not say the tensor values are wrong; it says the file's own description of them is.",
    causes="A writer other than the `safetensors` library with a bug; a file edited in place; bytes appended by a "
    "failed concatenation; an index written for another set of shards.",
    try_="Write the file again with `safetensors.torch.save_file`; re-download it.",
)
declare(
    "TP-ENV-SHARD-MISSING",
    Level.FAIL,
    GROUP,
    "A sharded checkpoint lacks a shard",
    detects="A `*.index.json` in a checkpoint directory names a file that does not exist, or numbered shards "
    "(`NAME-0000i-of-0000n.EXT`) are not all present.",
    why="Loading stops at the missing shard, or, with a loader that skips what it cannot find, the model starts "
    "with part of its weights at their initial values.",
    not_mean="It does not say whether the shards that are present are intact: they are checked on their own.",
    causes="An interrupted download or copy; a partial `rsync`/`scp`; an index copied from another export.",
    try_="Download or copy the missing shards; compare the listing with the source.",
)
declare(
    "TP-ENV-MEM-OK",
    Level.PASS,
    GROUP,
    "Enough RAM is available",
    detects="The RAM available now, from psutil or the cgroup memory limit when lower, is at least `--required-gb` "
    "plus the headroom `env_mem_headroom`.",
    why="The run's host-memory footprint fits without swapping or the OOM killer.",
    not_mean="It is a snapshot: other processes may take the memory before the run does. It does not cover GPU memory.",
    causes="The machine has the memory free.",
    try_="Nothing to do.",
    thresholds=("env_mem_headroom",),
)
declare(
    "TP-ENV-MEM-TIGHT",
    Level.WARN,
    GROUP,
    "RAM is available but with less than the headroom",
    detects="The RAM available is at least `--required-gb`, but less than that plus `env_mem_headroom` of it.",
    why="A requirement is an estimate of the steady state; start-up (a checkpoint loaded next to a freshly built "
    "model, data-loader workers forking) and other processes can take the rest.",
    not_mean="It does not mean the run will be killed; it means there is little room for error.",
    causes="Other processes on the machine; page cache pinned by a tmpfs; a cgroup limit close to the requirement.",
    try_="Free memory or ask for more (`--mem` in Slurm); load checkpoints with `torch.load(..., mmap=True)`; use "
    "fewer data-loader workers.",
    thresholds=("env_mem_headroom",),
)
declare(
    "TP-ENV-MEM-INSUFFICIENT",
    Level.FAIL,
    GROUP,
    "Less RAM is available than the run needs",
    detects="The RAM available now (psutil, or the cgroup memory limit when lower) is below `--required-gb`.",
    why="The run will swap to a crawl or be killed by the OOM killer, usually without a Python traceback.",
    not_mean="It does not mean the machine has too little RAM installed: other processes or a cgroup limit may be "
    "holding it.",
    causes="Other jobs on a shared node; a container or Slurm job with a memory limit below the requirement; an "
    "estimate of the requirement that includes GPU memory.",
    try_="Ask for more memory for the job; stop other processes; lower the batch size, the number of data-loader "
    "workers, or load with `mmap=True`.",
)
declare(
    "TP-ENV-MEM-INFO",
    Level.INFO,
    GROUP,
    "RAM available (no requirement given)",
    detects="The RAM available now and the machine's total (and the cgroup limit, when one applies), reported "
    "when no `--required-gb` was given.",
    why="Context for the run's memory settings.",
    not_mean="Not a verdict: without `--required-gb` nothing was compared.",
    causes="`--required-gb` was not given.",
    try_="Give `--required-gb` for a verdict.",
)
declare(
    "TP-ENV-MEM-UNKNOWN",
    Level.NOT_CHECKED,
    GROUP,
    "Available RAM could not be measured",
    detects="`--required-gb` was given but psutil is not installed or could not read the memory figures.",
    why="The requirement could not be compared with anything.",
    not_mean="It does not mean there is too little memory (NOT-CHECKED).",
    causes="psutil missing from the environment trainproof runs in; an unusual platform.",
    try_="Install psutil (`pip install psutil`).",
)
declare(
    "TP-ENV-DISK-OK",
    Level.PASS,
    GROUP,
    "Enough disk space for the checkpoints",
    detects="Free space under `--output-dir` is at least `--checkpoint-gb` × (`--keep` + "
    "`env_disk_headroom_checkpoints`).",
    why="The run will not die at a save hours in because the disk is full.",
    not_mean="It is a snapshot: other writers share the filesystem. Logs, caches and optimizer states not counted "
    "in `--checkpoint-gb` are not included.",
    causes="The filesystem has the space.",
    try_="Nothing to do.",
    thresholds=("env_disk_headroom_checkpoints",),
)
declare(
    "TP-ENV-DISK-TIGHT",
    Level.WARN,
    GROUP,
    "Disk space holds the kept checkpoints but not one more",
    detects="Free space under `--output-dir` is at least `--checkpoint-gb` × `--keep` but less than "
    "`--checkpoint-gb` × (`--keep` + `env_disk_headroom_checkpoints`).",
    why="Trainers write a new checkpoint before deleting the oldest one (the HF Trainer rotates after saving), so "
    "for a moment one checkpoint more than `--keep` is on disk.",
    not_mean="It does not mean the run will fail; the save that needs the extra room may fail, late in the run.",
    causes="A shared or small filesystem; earlier runs' checkpoints still there.",
    try_="Free space, save to a larger filesystem, or lower `save_total_limit` / `--keep`.",
    thresholds=("env_disk_headroom_checkpoints",),
)
declare(
    "TP-ENV-DISK-INSUFFICIENT",
    Level.FAIL,
    GROUP,
    "Not enough disk space for the checkpoints",
    detects="Free space under `--output-dir` is below `--checkpoint-gb` × `--keep`.",
    why="A save will fail with `No space left on device`, often hours into the run, and may leave a truncated "
    "checkpoint behind.",
    not_mean="It does not mean the disk is small: other data may be filling it.",
    causes="Old runs' checkpoints; a home directory or container overlay with a quota; a scratch disk shared with "
    "other jobs.",
    try_="Point the output directory at a larger filesystem; delete old checkpoints; keep fewer.",
)
declare(
    "TP-ENV-DISK-INFO",
    Level.INFO,
    GROUP,
    "Free disk space (no requirement given)",
    detects="Free and total space of the filesystem holding `--output-dir` (or `--cwd`), reported when no "
    "`--checkpoint-gb` was given.",
    why="Context for where the run will write.",
    not_mean="Not a verdict: without `--checkpoint-gb` nothing was compared.",
    causes="`--checkpoint-gb` was not given.",
    try_="Give `--checkpoint-gb` (and `--keep`) for a verdict.",
)
declare(
    "TP-ENV-DISK-UNKNOWN",
    Level.NOT_CHECKED,
    GROUP,
    "Free disk space could not be measured",
    detects="The output directory is a file, or its filesystem could not be queried.",
    why="The requirement could not be compared with anything.",
    not_mean="It does not mean there is too little space (NOT-CHECKED).",
    causes="`--output-dir` names an existing file; a filesystem that does not answer (a hung NFS mount) or denies "
    "access.",
    try_="Give a directory (it need not exist yet: its nearest existing parent is measured).",
)
declare(
    "TP-ENV-GPU-INFO",
    Level.INFO,
    GROUP,
    "GPUs seen by NVML and their free memory",
    detects="With `pynvml` (nvidia-ml-py) importable: each NVIDIA device, its free and total memory and the driver "
    "version; or why NVML could not be queried.",
    why="Context: a device already full of another process's memory is a common reason a run dies at its first batch.",
    not_mean="Never a verdict: trainproof does not know how much GPU memory the run needs, nor which devices "
    "`CUDA_VISIBLE_DEVICES` will give it.",
    causes="Reported whenever pynvml is importable.",
    try_="Install `nvidia-ml-py` to see devices; `nvidia-smi` shows which processes hold memory.",
)
