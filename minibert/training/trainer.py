"""Pretraining: one loop for every objective, on a CPU, a GPU, or several processes under torchrun.

    result = minibert.pretrain("mlm", preset="tiny", steps=300)
    result.model, result.tokenizer, result.history, result.evals, result.baselines

AdamW with warm-up then linear or cosine decay, gradient clipping, optional bf16 autocast, a step or
a time budget, held-out evaluation printed beside its trivial baseline, and checkpoints in
transformers' format that resume exactly (same data order, masks, dropout and optimizer state).
"""

import dataclasses
import json
import math
import os
import platform
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from ..cache import fingerprint, training_lock
from ..data.corpus import load_corpus, split_corpus
from ..data.examples import check_documents, make_lm_examples, make_nsp_examples, make_sop_examples
from ..data.tokenizer import train_tokenizer
from ..model import heads
from ..model.config import BertConfig
from ..model.hub import atomic_folder, damaged, write_weights
from .metrics import baselines, evaluate, format_metrics, target_tokens
from .memory import check_memory
from .objectives import OBJECTIVES, check_objective, make_collator, model_inputs

# The modules whose code decides a trained model: a change to any of them is a new result (run_key).
TRAINING_CODE = ("values.py", "model/config.py", "model/bert.py", "model/heads.py", "model/losses.py",
                 "model/compat.py", "data/examples.py", "data/collators.py", "training/objectives.py",
                 "training/metrics.py", "training/trainer.py", "training/memory.py", "model/hub.py")

STATE_FILE, TENSORS_FILE = "trainer_state.json", "training_state.pt"
SCHEDULES = ("linear", "cosine", "wsd")


# Seeds: every random stream of a run derives from args.seed, each in its own range so that none repeats
# another: the masks of process `rank` (COLLATOR_SEEDS apart), the order of the examples in each epoch, and
# the sentence pairs (offset 0: the first epoch's, 1: the held-out ones, REDRAWN_PAIRS + e: epoch e's).
COLLATOR_SEEDS = 1000  # seed * COLLATOR_SEEDS + rank: one mask stream per process
ORDER_SEED = 7919  # seed * ORDER_SEED + epoch: the shuffle of each epoch, far from the other streams
HELDOUT_PAIRS, REDRAWN_PAIRS = 1, 1000  # seed offsets of the held-out pairs and of each epoch's new pairs
EVALUATIONS = 5  # without eval_every, a run is evaluated at each fifth of its budget
LOSS_SMOOTHING = 0.95  # the progress bar shows an exponential moving average of the loss
SAVE_EVERY = 1000  # steps between the saves of a command-line run: an interrupted run resumes from the last
BASE_LR, BASE_LR_WIDTH = 1e-3, 256  # the default peak learning rate, scaled down for models wider than this
MIN_POSITIONS = 512  # the position table covers at least BERT's 512 tokens, whatever max_length is
WSD_DECAY = 0.2  # the share of the run over which the wsd schedule decays
RESUMABLE = ("steps", "minutes", "eval_every", "bf16")  # what a resumed run may change: its budget, its reports
REWARMUP = 200  # steps over which a run continued from exported weights (fresh optimizer) warms up again


@dataclass
class TrainArgs:
    objective: str = "mlm"  # clm | mlm | nsp | sop | mlm+nsp | mlm+sop
    preset: str = "tiny"  # model size when no config or model is given
    steps: int | None = None  # stop after this many optimizer steps ...
    minutes: float | None = None  # ... or after this much time, whichever comes first
    # The defaults suit minutes-long runs on a CPU: 64 short sequences a step at lr 1e-3, held at its
    # peak until the last fifth of the run (wsd). Each choice learned faster than the alternatives in
    # the comparisons of docs/experiments.md ("A recipe that learns faster").
    batch_size: int = 64  # sequences per step (per process under torchrun)
    max_length: int = 64  # tokens per sequence; for a sentence pair, both segments and [CLS] [SEP] [SEP]
    lr: float | None = None  # peak learning rate; None: 1e-3, x 256 / hidden_size above width 256 (small 5e-4)
    warmup: float = 0.05  # share of the run spent warming up from 0 to lr
    schedule: str = "wsd"  # decay after warm-up, to 0: linear, cosine, or wsd (constant, then the last 20%)
    weight_decay: float = 0.01  # not applied to biases and LayerNorm
    beta2: float = 0.98  # Adam's second-moment decay (RoBERTa's 0.98 adapts faster than 0.999)
    max_grad_norm: float = 1.0
    bf16: bool | None = None  # autocast matrix multiplies to bfloat16; None: where the hardware does it natively
    eval_every: int | None = None  # steps between evaluations; default: 5 spread over the budget
    eval_examples: int = 512  # held-out examples per evaluation
    mlm_probability: float = 0.15
    mask_replace_prob: float = 0.8  # of the selected tokens, the share replaced by [MASK] ...
    random_replace_prob: float = 0.1  # ... and by a random token; the rest stay as they are (BERT's 80/10/10)
    dropout: float | None = None  # hidden and attention dropout of a new model; None: the preset's (0)
    negatives: str = "random"  # NSP negatives: random | hard
    prior_init: bool = True  # a new model's output bias starts at the log unigram frequencies
    vocab_size: int = 8000  # when a tokenizer is trained here
    corpus: str | None = None  # load_corpus name or path; None = the built-in one
    heldout: float = 0.1  # share of documents kept for evaluation
    seed: int = 0

    def __post_init__(self):
        check_objective(self.objective)  # once: `task` reads it from here on
        if self.steps is None and self.minutes is None:
            raise ValueError("give a budget: steps=..., minutes=..., or both")
        for name in ("steps", "minutes", "batch_size", "max_length", "lr", "eval_every", "eval_examples"):
            value = getattr(self, name)
            if value is not None and not value > 0:  # also catches NaN
                raise ValueError(f"{name} must be positive, got {value!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}; got {self.schedule!r}")
        if not 0 <= self.warmup < 1:
            raise ValueError(f"warmup is a share of the run, in [0, 1); got {self.warmup}")
        if not 0 < self.mlm_probability <= 1:  # also catches NaN
            raise ValueError(f"mlm_probability is the share of tokens masked, in (0, 1]; got {self.mlm_probability}")
        for name in ("mask_replace_prob", "random_replace_prob"):
            value = getattr(self, name)
            if not 0 <= value <= 1:  # also catches NaN
                raise ValueError(f"{name} is a share of the selected tokens, in [0, 1]; got {value}")
        if self.mask_replace_prob + self.random_replace_prob > 1:
            raise ValueError(f"mask_replace_prob ({self.mask_replace_prob}) + random_replace_prob "
                             f"({self.random_replace_prob}) must be at most 1; the rest is kept unchanged")

    @property
    def task(self):
        """The objective's head class, pair task and masked LM (objectives.OBJECTIVES)."""
        return OBJECTIVES[self.objective]


@dataclass
class PretrainResult:
    model: torch.nn.Module
    tokenizer: object
    history: list  # one row per step: step, seconds, lr, loss (and mlm_loss / nsp_loss)
    evals: list  # one row per evaluation: step, seconds, held-out metrics
    baselines: dict  # trivial scores on the same held-out data
    args: TrainArgs

    @property
    def final(self):
        return self.evals[-1] if self.evals else {}

    def report(self):
        return format_metrics(self.final, self.baselines)


def learning_rate(args, progress):
    """Warm-up to args.lr over the first `warmup` share of the run, then decay to 0: linearly, along a
    cosine, or (wsd: warm-up, stable, decay) only over the last fifth of the run."""
    if progress < args.warmup:
        return args.lr * progress / args.warmup
    decay = (progress - args.warmup) / (1 - args.warmup)
    if args.schedule == "cosine":
        return args.lr * 0.5 * (1 + math.cos(math.pi * min(decay, 1.0)))
    if args.schedule == "wsd":
        return args.lr * min(1.0, max(0.0, (1 - progress) / WSD_DECAY))
    return args.lr * max(0.0, 1 - decay)


def default_lr(config):
    """1e-3 for the tiny and mini presets (the best of 5e-4, 1e-3 and 2e-3 for mini in
    docs/experiments.md); wider models need smaller steps."""
    return BASE_LR * min(1.0, BASE_LR_WIDTH / config.hidden_size)


def build_examples(args, documents, tokenizer, seed_offset=0):
    pairs = args.task.pair_task
    if pairs == "nsp":
        return make_nsp_examples(documents, tokenizer, args.max_length, negatives=args.negatives,
                                 seed=args.seed + seed_offset)
    if pairs == "sop":
        return make_sop_examples(documents, tokenizer, args.max_length, seed=args.seed + seed_offset)
    return make_lm_examples(documents, tokenizer, args.max_length)


def model_class(objective):
    return getattr(heads, check_objective(objective).model_class)


def bf16_is_native(device):
    """Does this device multiply in bfloat16 natively? GPUs from Ampere on (compute capability 8) and CPUs
    with AVX-512 BF16 or AMX do, and bf16 roughly halves their step. Other CPUs (AVX2 only: most laptops)
    convert every product in software, and there a bf16 step is several times slower than a float32 one."""
    if device.type == "cuda":  # a T4 (Colab's free GPU) emulates bf16, slowly: not native
        return torch.cuda.is_bf16_supported(including_emulation=False)
    if device.type == "cpu":
        cpu = torch.cpu
        has = any(getattr(cpu, check, lambda: False)() for check in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"))
        return has and avx512_kernels()
    return False


def avx512_kernels():
    """Do PyTorch and oneDNN use their AVX-512 kernels? ATEN_CPU_CAPABILITY=avx2 and ONEDNN_MAX_CPU_ISA=AVX2
    make an AVX-512 machine run as a laptop without it does, bf16 included (converted in software)."""
    isa = os.environ.get("ONEDNN_MAX_CPU_ISA", "ALL").upper()
    capped = isa not in ("ALL", "DEFAULT") and not isa.startswith(("AVX512_CORE_BF16", "AVX512_CORE_AMX", "AVX10"))
    return torch.backends.cpu.get_cpu_capability().startswith("AVX512") and not capped


def machine(device=torch.device("cpu")):
    """The processor (or GPU) a run trains on, in words, for its record and its model card."""
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)}, torch {torch.__version__.split('+')[0]}"
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    native = "native bf16" if bf16_is_native(device) else "no native bf16"
    return f"{cpu}, {os.cpu_count()} cores ({native}), torch {torch.__version__.split('+')[0]}"


def resolve_bf16(requested, device, verbose=True):
    """bf16 where it is fast: by default where it is native; asked for where it is not, fp32 with a note."""
    native = bf16_is_native(device)
    if requested and not native and verbose:
        print(f"note: this {device.type.upper()} has no native bf16 (AVX-512 BF16, AMX or a recent GPU), where "
              "bf16 is several times slower than fp32: training in fp32", flush=True)
    return native if requested is None else bool(requested) and native


def setup_distributed():
    """(rank, world size, device). Under torchrun: gloo on CPU, nccl on GPUs, one GPU per process."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
    if torch.cuda.is_available():
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        return rank, world, torch.device("cuda", local)
    return rank, world, torch.device("cpu")


def run_key(args, train_examples, model):
    """A fingerprint of everything that decides a run's outcome: settings, the source of the modules
    that train, the training examples and the initial weights. A saved run is reused only under the
    same key."""
    weights = (t.detach().cpu().contiguous().numpy().tobytes() for t in model.state_dict().values())
    return fingerprint(dataclasses.asdict(args), [e["input_ids"] for e in train_examples], code=TRAINING_CODE,
                       blobs=weights)


class Trainer:
    def __init__(self, model, tokenizer, train_examples, heldout_examples, args, out=None, save_every=None,
                 progress=True, verbose=True, fresh_examples=None):
        self.rank, self.world, self.device = setup_distributed()
        if args.lr is None:
            args = dataclasses.replace(args, lr=default_lr(model.config))
        self.args, self.tokenizer, self.out, self.save_every = args, tokenizer, out, save_every
        self.train_examples, self.heldout_examples = train_examples, heldout_examples[:args.eval_examples]
        if len(train_examples) < args.batch_size * self.world:
            raise ValueError(f"{len(train_examples)} training examples cannot fill one step of "
                             f"{args.batch_size} x {self.world} processes; use more text or a smaller batch_size")
        self.bf16 = resolve_bf16(args.bf16, self.device, verbose and self.rank == 0)
        # Before the first allocation of training: a batch too large is refused with the batch size that fits,
        # not killed by the kernel mid-step. On a CPU, torchrun's processes share this machine's memory.
        scored = 0.0  # the share of positions scored over the vocabulary: none for a pair task alone,
        if args.objective == "clm":
            scored = 1.0  # every one for next-token prediction,
        elif args.task.masked_lm:
            scored = args.mlm_probability + 1 / args.max_length  # the masked ones (and [CLS]) for a masked LM
        check_memory(model, args.batch_size, args.max_length, self.device, scored_share=scored, bf16=self.bf16,
                     processes=int(os.environ.get("LOCAL_WORLD_SIZE", "1")) if self.device.type == "cpu" else 1)
        self.model = model.to(self.device).train()
        self.ddp = DistributedDataParallel(self.model) if self.world > 1 else self.model
        decay = [p for n, p in self.model.named_parameters() if p.dim() >= 2]
        no_decay = [p for n, p in self.model.named_parameters() if p.dim() < 2]  # biases, LayerNorm
        self.optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                                            {"params": no_decay, "weight_decay": 0.0}], lr=args.lr,
                                           betas=(0.9, args.beta2))
        self.collator = make_collator(args.objective, tokenizer, args.mlm_probability,
                                      seed=args.seed * COLLATOR_SEEDS + self.rank, mask_replace_prob=args.mask_replace_prob,
                                      random_replace_prob=args.random_replace_prob)
        self.baselines = baselines(args.objective, train_examples, self.heldout_examples, tokenizer)
        self.step, self.seconds, self.history, self.evals = 0, 0.0, [], []
        self.progress_bar, self.verbose = progress and self.rank == 0, verbose and self.rank == 0
        self.fresh_examples, self.orders, self.drawn = fresh_examples, {}, {}
        self.run_key, self.data_key, self.saved_step, self.documents_in_memory = None, None, 0, False
        # Where each piece of the run trained (a run may be resumed, or continued on another machine from
        # exported weights), and the step where a fresh optimizer began (None: the run's own, from step 0).
        self.pieces, self.restart = [], None

    # ---- data: a deterministic stream of examples, each process taking its own slice of every step ----
    # Position i of the stream is example order(e)[i mod n] of epoch e = i // n. Sentence pairs are
    # drawn again for every epoch (new cuts and new random negatives, as BERT's dupe_factor did):
    # with one fixed set, a small corpus is seen dozens of times and the pair head learns the pairs
    # by heart instead of what makes B follow A.
    def epoch_examples(self, epoch):
        if epoch == 0 or self.fresh_examples is None:
            return self.train_examples
        if epoch not in self.drawn:
            self.drawn = {epoch: self.fresh_examples(epoch)}
        return self.drawn[epoch]

    def order(self, epoch):
        if epoch not in self.orders:
            g = torch.Generator().manual_seed(self.args.seed * ORDER_SEED + epoch)
            self.orders = {epoch: torch.randperm(len(self.epoch_examples(epoch)), generator=g).tolist()}
        return self.orders[epoch]

    def batch_indices(self, step):
        """The stream positions of this process's share of a step."""
        start = (step * self.world + self.rank) * self.args.batch_size
        return list(range(start, start + self.args.batch_size))

    def example(self, i):
        epoch, j = divmod(i, len(self.train_examples))
        order = self.order(epoch)  # an epoch drawn again may hold a few examples more or fewer
        return self.epoch_examples(epoch)[order[j % len(order)]]

    def next_batch(self):
        batch = self.collator([self.example(i) for i in self.batch_indices(self.step)])
        return {k: v.to(self.device) for k, v in batch.items()}

    # ---- the loop ----
    def progress(self):
        """How far through the budget the run is, from 0 to 1 (steps or time, whichever is further)."""
        done = 0.0
        if self.args.steps:
            done = self.step / self.args.steps
        if self.args.minutes:
            done = max(done, self.seconds / (60 * self.args.minutes))
        if self.world > 1 and self.args.minutes:  # every process must stop at the same step
            t = torch.tensor([done], device=self.device)
            dist.broadcast(t, 0)
            done = t.item()
        return done

    def train(self, callback=None):
        args = self.args
        bar = tqdm(total=args.steps, disable=not self.progress_bar, desc=args.objective, unit="step",
                   initial=self.step)
        started = time.perf_counter() - self.seconds
        running = None
        p = self.progress()
        if p < 1:
            how = "new" if self.step == 0 else "continued" if self.restart == self.step else "resumed"
            self.pieces.append({"from": self.step, "to": self.step, "start": how, "machine": machine(self.device),
                                "threads": torch.get_num_threads(), "bf16": self.bf16, "world_size": self.world,
                                "seconds": 0.0})
        while p < 1:
            lr = learning_rate(args, p)
            if self.restart is not None:  # Adam's moments start again from zero: warm up to the schedule again
                lr *= min(1.0, (self.step - self.restart + 1) / REWARMUP)
            for group in self.optimizer.param_groups:
                group["lr"] = lr
            batch = self.next_batch()
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
                out = self.ddp(**model_inputs(args.objective, batch))
            loss = out.loss.item()
            if not math.isfinite(loss):  # stop before the update: the weights and the last checkpoint stay good
                raise FloatingPointError(
                    f"the loss became {loss} at step {self.step + 1} (learning rate {lr:.2g}); training stopped"
                    + (f" and {self.out!r} still holds the checkpoint of step {self.saved_step}"
                       if self.out and self.saved_step else " before any checkpoint was saved")
                    + ": lower the learning rate (--lr) or turn off bf16 (--no-bf16)")
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), args.max_grad_norm)
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            self.step += 1
            now = time.perf_counter() - started
            piece = self.pieces[-1]
            piece["to"], piece["seconds"] = self.step, piece["seconds"] + now - self.seconds
            self.seconds = now
            p = self.progress()
            row = {"step": self.step, "seconds": round(self.seconds, 3), "lr": lr, "loss": loss}
            for part in ("mlm_loss", "nsp_loss"):
                if getattr(out, part, None) is not None:
                    row[part] = getattr(out, part).item()
            self.history.append(row)
            running = row["loss"] if running is None else LOSS_SMOOTHING * running + (1 - LOSS_SMOOTHING) * row["loss"]
            bar.update(1)
            bar.set_postfix(loss=f"{running:.3f}", lr=f"{lr:.1e}")
            if callback is not None:
                callback(self)
            if (self.step % args.eval_every == 0 if args.eval_every else p >= (len(self.evals) + 1) / EVALUATIONS):
                self.evaluate()  # every eval_every steps, or at each fifth of the budget (steps or time)
            if self.out and self.save_every and self.step % self.save_every == 0:
                self.save(self.out)
        bar.close()
        if not self.evals or self.evals[-1]["step"] != self.step:
            self.evaluate()
        if self.out:
            self.save(self.out)
        return self.result()

    def evaluate(self):
        metrics = evaluate(self.model, self.args.objective, self.heldout_examples, self.tokenizer,
                           batch_size=self.args.batch_size, mlm_probability=self.args.mlm_probability)
        self.evals.append({"step": self.step, "seconds": round(self.seconds, 3), **metrics})
        if self.verbose:
            line = f"step {self.step:>5} | {self.seconds:6.1f} s | {format_metrics(metrics, self.baselines)}"
            tqdm.write(line) if self.progress_bar else print(line, flush=True)
        return metrics

    def result(self):
        return PretrainResult(self.model, self.tokenizer, self.history, self.evals, self.baselines, self.args)

    # ---- checkpoints: weights, tokenizer, optimizer, random states, history; whole or not at all ----
    def save(self, path):
        rng = {"torch": torch.get_rng_state(),
               "collator": self.collator.generator.get_state() if hasattr(self.collator, "generator") else None}
        ranks = [None] * self.world
        if self.world > 1:
            dist.all_gather_object(ranks, rng)
        else:
            ranks = [rng]
        finished = self.progress() >= 1  # every process calls progress(): under torchrun it broadcasts
        if self.rank == 0:
            kept = f"the checkpoint of step {self.saved_step} in {path!r} is intact" if self.saved_step \
                else "nothing had been saved yet"
            with atomic_folder(path, kept=kept, retry="--resume") as tmp:
                write_weights(self.model, tmp)
                self.tokenizer.save_pretrained(tmp)
                torch.save({"optimizer": self.optimizer.state_dict(), "rng": ranks}, os.path.join(tmp, TENSORS_FILE))
                state = {"args": dataclasses.asdict(self.args), "step": self.step, "seconds": self.seconds,
                         "world_size": self.world, "run_key": self.run_key, "data_key": self.data_key,
                         "finished": finished,
                         "documents_in_memory": self.documents_in_memory, "bf16": self.bf16,
                         "threads": torch.get_num_threads(), "pieces": self.pieces, "restart": self.restart,
                         "history": self.history, "evals": self.evals, "baselines": self.baselines}
                with open(os.path.join(tmp, STATE_FILE), "w", encoding="utf-8") as f:
                    json.dump(state, f)
        self.saved_step = self.step
        if self.world > 1:
            dist.barrier()

    def restore(self, path):
        with open(os.path.join(path, STATE_FILE), encoding="utf-8") as f:
            state = json.load(f)
        if state["world_size"] != self.world:
            raise ValueError(f"{path!r} was saved by {state['world_size']} processes; resume it with as many "
                             f"(this run has {self.world}) so that each sees the same data")
        tensors = torch.load(os.path.join(path, TENSORS_FILE), map_location="cpu", weights_only=True)
        self.optimizer.load_state_dict(tensors["optimizer"])
        rng = tensors["rng"][self.rank]
        torch.set_rng_state(rng["torch"])
        if rng["collator"] is not None:
            self.collator.generator.set_state(rng["collator"])
        self.step, self.seconds = state["step"], state["seconds"]
        self.saved_step = self.step
        self.history, self.evals, self.run_key = state["history"], state["evals"], state["run_key"]
        self.pieces, self.restart = state.get("pieces", []), state.get("restart")

    def continue_from(self, info):
        """Start where an exported piece of this run stopped (its training_args.json: step, clock,
        evaluations, pieces): the same data position (the step decides which examples come next), a fresh
        optimizer warmed up again over REWARMUP steps, and new masks and dropout."""
        self.step, self.seconds = info["steps"], 60 * info["minutes"]
        self.saved_step, self.evals = 0, list(info["evals"])
        self.pieces, self.restart = list(info.get("pieces") or []), self.step


def read_state(path):
    file = os.path.join(path, STATE_FILE)
    if not os.path.isfile(file):
        raise ValueError(f"{path!r} is not a minibert training run (no {STATE_FILE}); "
                         "train one with `python -m minibert pretrain --out DIR`")
    try:
        with open(file, encoding="utf-8") as f:
            return json.load(f)
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError is a ValueError
        raise damaged(file, f"it is not valid JSON ({e})") from None


def read_exported(folder):
    """An exported checkpoint's record of its run (training_args.json): settings, steps, clock, evaluations."""
    file = os.path.join(folder, "training_args.json")
    if not os.path.isfile(file):
        raise ValueError(f"{os.fspath(folder)!r} is not an exported minibert checkpoint (no training_args.json): "
                         "--continue-from takes a folder written by `python -m minibert export`")
    try:
        with open(file, encoding="utf-8") as f:
            info = json.load(f)
        info["args"], info["steps"], info["minutes"], info["evals"]  # noqa: B018 -- each must be there
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise ValueError(f"{file!r} is damaged ({type(e).__name__}: {e}): it cannot say where its run "
                         "stopped") from None
    return info


def prepare_data(args, corpus, tokenizer, fresh=False):
    """Split documents (held-out ones are never trained on), train a tokenizer if none is given, and
    build the examples of the objective for both sides. fresh=True adds a function epoch -> the
    training examples drawn again for that epoch (None where nothing is random: single sequences)."""
    documents = load_corpus(args.corpus) if corpus is None else corpus
    check_documents(documents, pairs_for={"nsp": "next sentence prediction", "sop": "sentence order prediction"}.get(
        args.task.pair_task))  # before a tokenizer is trained on them
    train_docs, heldout_docs = split_corpus(documents, args.heldout, seed=args.seed)
    tokenizer = tokenizer or train_tokenizer(train_docs, args.vocab_size)
    data = tokenizer, build_examples(args, train_docs, tokenizer), build_examples(args, heldout_docs, tokenizer, HELDOUT_PAIRS)
    if not fresh:
        return data
    if not args.task.pair_task:
        return (*data, None)

    def redraw(epoch):
        return build_examples(args, train_docs, tokenizer, seed_offset=REDRAWN_PAIRS + epoch)
    return (*data, redraw)


def pretrain(objective=None, preset=None, *, config=None, model=None, corpus=None, tokenizer=None, out=None,
             resume=False, reuse=False, continue_from=None, save_every=None, progress=True, verbose=True,
             callback=None, **kwargs):
    """Pretrain a model with one objective and return a PretrainResult.

    objective / preset: "mlm" and "tiny" for a new run; with resume, the run's own (say them only to check);

    config / model: what to train (default: a fresh model of `preset` size for the objective);
    corpus: documents, or a name or path for load_corpus (default: the built-in Wikipedia + news
        corpus); split by document into train and held-out;
    out: a folder for checkpoints (every save_every steps and at the end);
    resume: continue the run saved in `out` exactly where it stopped (steps/minutes may be raised);
    reuse: if `out` holds a finished run with the same settings and code, load it instead of training;
    continue_from: an exported checkpoint of an unfinished run (`export(..., unfinished=True)`, e.g. a
        shipped folder trained in pieces): continue that run on this machine into `out`, from its weights
        and its step, with a fresh optimizer (the exported folder holds none) warmed up over REWARMUP steps.
    Other keyword arguments are TrainArgs fields (steps, minutes, batch_size, lr, ...).
    """
    if sum(map(bool, (resume, reuse, continue_from))) > 1:
        raise ValueError("choose one of resume (continue a run folder), reuse (load a finished one) and "
                         "continue_from (continue an exported piece), not several")
    if continue_from is not None and (model is not None or config is not None):
        raise ValueError("continue_from trains the exported model itself: give no model or config")
    if out is None or int(os.environ.get("RANK", "0")) != 0:  # under torchrun, process 0 holds the folder
        return train_run(objective, preset, config, model, corpus, tokenizer, out, resume, reuse, save_every,
                         progress, verbose, callback, kwargs, continue_from)
    path = run_folder(out)
    if resume and not os.path.isdir(os.path.dirname(path)):  # nothing to resume: said before the lock makes a folder
        check_out(out, resume)
    with training_lock(path, wait=reuse):  # reuse waits for a run that is being trained; the others are refused
        return train_run(objective, preset, config, model, corpus, tokenizer, out, resume, reuse, save_every,
                         progress, verbose, callback, kwargs, continue_from)


def train_run(objective, preset, config, model, corpus, tokenizer, out, resume, reuse, save_every, progress, verbose,
              callback, kwargs, continue_from=None):
    """pretrain's body, with `out` held by this process: weights and state are read from one save."""
    if isinstance(corpus, (str, os.PathLike)):  # a name or path: recorded, so `eval` can rebuild the data
        kwargs["corpus"], corpus = os.fspath(corpus), None
    if isinstance(kwargs.get("corpus"), str) and os.path.exists(kwargs["corpus"]):
        kwargs["corpus"] = os.path.abspath(kwargs["corpus"])  # so that eval and export work from any folder
    if out is not None:
        out = check_out(out, resume)  # before training: a run never ends unable to save
        if not reuse:  # reuse may only read: a class's shared cache, say
            check_writable(out)
    exported = read_exported(continue_from) if continue_from is not None else None
    if resume or exported:
        saved = read_state(out)["args"] if resume else exported["args"]
        what = f"--resume continues {out!r}" if resume else \
            f"--continue-from {os.fspath(continue_from)!r} continues its run"
        given = {**kwargs, **({"objective": objective} if objective else {}), **({"preset": preset} if preset else {})}
        changed = {k: v for k, v in given.items() if k not in RESUMABLE and saved.get(k) != v}
        if changed:
            raise ValueError(f"{what} as it was trained; it cannot change "
                             + ", ".join(f"{k} ({saved.get(k)!r} -> {v!r})" for k, v in changed.items())
                             + f". A resume may change only {', '.join(RESUMABLE)}; start a new run in another folder "
                             "to change the rest")
        args = TrainArgs(**{**saved, **kwargs})
    else:
        args = TrainArgs(objective=objective or "mlm", preset=preset or "tiny", **kwargs)
    if exported and args.steps is not None and args.steps <= exported["steps"]:
        raise ValueError(f"{os.fspath(continue_from)!r} already holds {exported['steps']:,} steps of this run, "
                         f"and its budget is {args.steps:,}: give a larger --steps to train it further")
    if (resume or exported) and tokenizer is None:  # the run's own vocabulary, saved beside its weights
        from transformers import AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained(out if resume else continue_from)
    torch.manual_seed(args.seed)
    tokenizer, train_examples, heldout_examples, redraw = prepare_data(args, corpus, tokenizer, fresh=True)
    cls = model_class(args.objective)
    if resume or exported:
        model = cls.from_pretrained(out if resume else continue_from)  # exported bf16 weights load as float32
    elif model is None:
        dropout = {} if args.dropout is None else dict(hidden_dropout_prob=args.dropout,
                                                        attention_probs_dropout_prob=args.dropout)
        config = config or BertConfig.preset(args.preset, vocab_size=len(tokenizer),
                                             max_position_embeddings=max(MIN_POSITIONS, args.max_length), **dropout)
        model = cls(config)
        if args.prior_init and hasattr(model.cls, "predictions"):
            init_prior(model, args.objective, train_examples, tokenizer)
    if model.config.vocab_size < len(tokenizer):
        raise ValueError(f"the model's vocab_size ({model.config.vocab_size}) is smaller than the tokenizer's "
                         f"({len(tokenizer)})")
    if resume or exported:
        check_finite(model, out if resume else continue_from)
    data = data_key(train_examples, heldout_examples)
    if resume or exported:
        check_same_data(read_state(out) if resume else exported, data, out if resume else continue_from)
    key = None if resume or exported else run_key(args, train_examples, model)
    if reuse and out and os.path.isfile(os.path.join(out, STATE_FILE)):
        saved = read_state(out)
        if saved["finished"] and saved["run_key"] == key:  # on the device it would have trained on, as if it had
            return load_result(out, saved, device=setup_distributed()[2])
    if reuse and out:
        check_writable(out)  # it trains after all
    trainer = Trainer(model, tokenizer, train_examples, heldout_examples, args, out, save_every, progress, verbose,
                      fresh_examples=redraw)
    trainer.run_key, trainer.data_key = key, data
    trainer.documents_in_memory = corpus is not None  # then `python -m minibert eval` cannot rebuild them
    if resume:
        trainer.restore(out)
    if exported:
        trainer.continue_from(exported)
    return trainer.train(callback)


def data_key(train_examples, heldout_examples):
    """A fingerprint of the examples a run trains on and is scored on: a resume, an eval or a continued piece
    compares it with the one the run recorded."""
    return fingerprint([e["input_ids"] for e in train_examples], [e["input_ids"] for e in heldout_examples])


def check_same_data(saved, key, folder):
    """Refuse to go on with other text than the run was trained on: a corpus file edited since, say. The
    held-out documents could then hold text the run trained on, and its scores would measure memory."""
    if saved.get("data_key") not in (None, key):  # None: saved before runs recorded it
        raise ValueError(f"{os.fspath(folder)!r} was trained on other text than the corpus gives now (its file "
                         "changed since the run was saved?): its held-out documents could now hold text it "
                         "trained on. Restore the corpus as it was, or start a new run")


def check_finite(model, folder):
    """Weights that are NaN or infinite cannot be trained on from: the file is damaged, or the run had
    diverged before it was saved."""
    broken = [name for name, p in model.named_parameters() if not torch.isfinite(p).all()]
    if broken:
        raise ValueError(f"{os.fspath(folder)!r} holds weights that are NaN or infinite ({len(broken)} tensors, e.g. "
                         f"{broken[0]}): nothing can be trained from them. The file was damaged, or the run had "
                         "diverged before this save: start again from an earlier save, or anew")


def run_folder(out):
    """The absolute folder a run saves into; never "" or a file. A symlink is followed, so that the
    link stays a link."""
    if os.fspath(out) == "":
        raise ValueError('out="" names no folder: give the folder to save the run in (or out=None to keep nothing)')
    path = os.path.realpath(out)
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"out={os.fspath(out)!r} is a file; a checkpoint is a folder: choose another path")
    return path


def check_out(out, resume):
    """The run folder (`run_folder`), checked before the first step once this process holds it: new or
    empty, or a training run of ours (to resume, to reuse, or to replace); never a folder of other files."""
    path = run_folder(out)
    ours = os.path.isfile(os.path.join(path, STATE_FILE))
    if resume and not ours:
        raise ValueError(f"{os.fspath(out)!r} is not a minibert training run (no {STATE_FILE}): nothing to resume")
    if os.path.isdir(path) and not ours and os.listdir(path):
        found = sorted(os.listdir(path))
        what = "an exported checkpoint (its model card and scores would no longer match)" \
            if "training_args.json" in found else "a folder of other files"
        raise ValueError(f"out={os.fspath(out)!r} is {what}: {', '.join(found[:5])}{' ...' if len(found) > 5 else ''}. "
                         "A run saves into a new or empty folder, or into a run of its own: choose another folder")
    return path


def check_writable(path):
    """Before the first step: the folder that will hold the run's saves can be written."""
    parent = os.path.dirname(path)  # where the save's temporary folder and its swap happen
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PermissionError(f"cannot save the run in {path!r}: {parent!r} is not writable for you; "
                              "choose a folder of your own")
    if os.path.isdir(path) and not os.access(path, os.W_OK | os.X_OK):  # a save replaces the folder's files
        raise PermissionError(f"cannot save the run in {path!r}: the folder is read-only for you; make it "
                              f"writable (chmod -R u+w {path}) or copy it and resume the copy")


def init_prior(model, objective, examples, tokenizer):
    """Set the output bias to log p(token) of the training data: before reading any context the model
    already predicts as well as the unigram baseline, and its first steps go into using context
    (a bias learns about lr per step with Adam, so finding the prior alone would take thousands)."""
    counts = torch.ones(model.config.vocab_size)  # add-one smoothing
    tokens = torch.tensor(target_tokens(objective, examples, tokenizer))
    counts += torch.bincount(tokens, minlength=model.config.vocab_size)[:model.config.vocab_size]
    with torch.no_grad():
        model.cls.predictions.bias.copy_(counts.log() - counts.sum().log())


def load_result(path, state=None, device="cpu"):
    """A finished run from its folder: the model (on `device`), its tokenizer and everything it recorded."""
    from transformers import AutoTokenizer
    state = state or read_state(path)
    args = TrainArgs(**state["args"])
    model = model_class(args.objective).from_pretrained(path).to(device)
    return PretrainResult(model, AutoTokenizer.from_pretrained(path), state["history"], state["evals"],
                          state["baselines"], args)

