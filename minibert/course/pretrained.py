"""The course's pretrained checkpoints (checkpoints/): how each was trained, exported and scored.

Each checkpoint is a training run of the CLI on the built-in corpus, exported as a transformers
folder: config.json, model.safetensors (bfloat16 weights, loaded as float32), the tokenizer,
training_args.json and a model card (README.md) whose scores `score` recomputes from the weights.

    make pretrained                                       # retrain and export all of them
    python -m minibert pretrain ... --out runs/bert-mlm   # RECIPES[name] as a command: command(name)
    python -m minibert export runs/bert-mlm checkpoints/bert-mlm
"""

import copy
import dataclasses
import json
import os
import warnings

import torch

CHECKPOINTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "checkpoints")

# name -> the CLI options of its training run. Chosen by measurement on a 2-core CPU (docs/experiments.md):
# the large corpus (minibert.data.corpus) and a fixed number of steps, so that a rerun on any machine sees
# the same batches. The tiny preset (2 layers of width 128) trains in about two and a half hours on two
# cores. The mini preset (4 layers of width 256, the tiny ones' tokenizer) takes many hours on one thread:
# it trains in pieces, each landed in checkpoints/ as it stands (`main`), and continues on whichever machine
# comes next.
MLM_RECIPE = dict(preset="tiny", steps=50_000, batch_size=64, max_length=64, corpus="large")
CLM_RECIPE = dict(objective="clm", preset="tiny", steps=30_000, batch_size=16, max_length=128, dropout=0.1,
                  corpus="large")
MINI = dict(preset="mini", eval_every=2000, tokenizer="bert-mlm")
RECIPES = {
    "bert-mlm-nsp": dict(objective="mlm+nsp", **MLM_RECIPE),
    "bert-clm": CLM_RECIPE,
    "bert-mlm": dict(objective="mlm", **MLM_RECIPE),
    "bert-mlm-sop": dict(objective="mlm+sop", **MLM_RECIPE),
    "bert-mini-mlm-nsp": dict(objective="mlm+nsp", **{**MLM_RECIPE, **MINI, "steps": 30_000}),
    # a third of the tiny run's steps: what was left of the 16 one-thread CPU hours of the two mini runs
    "bert-mini-clm": {**CLM_RECIPE, **MINI, "steps": 10_000},
}
TASKS = {  # objective -> the pipeline tag of its card
    "mlm": "fill-mask", "mlm+nsp": "fill-mask", "mlm+sop": "fill-mask", "clm": "text-generation",
    "nsp": "text-classification", "sop": "text-classification",
}


def path(name):
    """The folder of a shipped checkpoint: checkpoints/<name> beside the package."""
    if name not in RECIPES:
        raise ValueError(f"no shipped checkpoint {name!r}; they are {', '.join(RECIPES)}")
    return os.path.join(CHECKPOINTS, name)


def tokenizer():
    """The shipped checkpoints' tokenizer: one for all of them, trained on their corpus, so that their
    scores (and a run that uses it) count the same tokens."""
    from transformers import AutoTokenizer  # imported here: transformers is slow to import
    return AutoTokenizer.from_pretrained(path(next(iter(RECIPES))))


def model_class_of(name):
    """The minibert class a shipped checkpoint was trained as (BertForPreTraining, BertForCausalLM, ...)."""
    from ..training.trainer import model_class
    return model_class(RECIPES[name]["objective"])


def command(name, out=None, settings=None):
    """The command line that trains a checkpoint's run (from its recipe, or from the given settings)."""
    settings = dict(settings or RECIPES[name])
    if "tokenizer" in settings:  # a shipped checkpoint's name: its folder, from the repository's root
        settings["tokenizer"] = os.path.join("checkpoints", settings["tokenizer"])
    options = " ".join(f"--{k.replace('_', '-')} {v:g}" if isinstance(v, float) else f"--{k.replace('_', '-')} {v}"
                       for k, v in settings.items() if v is not None)
    return f"python -m minibert pretrain {options} --out {out or os.path.join('runs', name)}"


# ---- scores: held-out documents of the run, beside the baselines ----
def load_args(folder):
    from ..training.trainer import TrainArgs
    file = os.path.join(folder, "training_args.json")
    if not os.path.isfile(file):
        raise ValueError(f"{folder!r} has no training_args.json: it is not an exported minibert checkpoint")
    with open(file, encoding="utf-8") as f:
        return TrainArgs(**json.load(f)["args"])


@torch.no_grad()
def score(folder, corpus=None, examples=None, batches=None):
    """Every held-out score of a checkpoint and its baselines, as percentages (perplexities as is).
    Rebuilds the run's held-out documents (same corpus, split and seed) with the checkpoint's own
    tokenizer; masks and random negatives come from fixed seeds, so the result is the same each time.
    corpus: score on the held-out documents of another corpus instead (a load_corpus name), e.g. the
    built-in one where the large corpus is not installed. examples: score only that many held-out
    examples, evenly spaced, and no hard negatives: a quicker check that the model learned, not the card's
    scores. batches: a list that receives the held-out evaluation's sums batch by batch (evaluate)."""
    from transformers import AutoTokenizer

    from ..data.corpus import load_corpus, split_corpus
    from ..training.metrics import baselines, evaluate
    from ..training.trainer import build_examples, model_class
    args = load_args(folder)
    if corpus is not None:
        args = dataclasses.replace(args, corpus=corpus)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a pretraining checkpoint has no weights to miss here
        model = model_class(args.objective).from_pretrained(folder)
    train_docs, heldout_docs = split_corpus(load_corpus(args.corpus), args.heldout, seed=args.seed)
    train, heldout = build_examples(args, train_docs, tokenizer), build_examples(args, heldout_docs, tokenizer, 1)
    if examples is not None:  # spread over all the held-out documents
        heldout = heldout[::max(1, len(heldout) // examples)][:examples]
    metrics = evaluate(model, args.objective, heldout, tokenizer, batches=batches)
    base = baselines(args.objective, train, heldout, tokenizer)
    scores = {"examples": len(heldout)}
    if "mlm_accuracy" in metrics:
        scores.update(mlm_accuracy=100 * metrics["mlm_accuracy"], mlm_loss=metrics["mlm_loss"],
                      mlm_most_frequent_token_accuracy=100 * base["mlm_most_frequent_token_accuracy"],
                      mlm_unigram_loss=base["mlm_unigram_loss"])
    if "clm_perplexity" in metrics:
        scores.update(clm_perplexity=metrics["clm_perplexity"], clm_accuracy=100 * metrics["clm_accuracy"],
                      clm_unigram_perplexity=base["clm_unigram_perplexity"])
    for task in ("nsp", "sop"):
        if f"{task}_accuracy" in metrics:
            scores[f"{task}_accuracy"] = 100 * metrics[f"{task}_accuracy"]
            scores[f"{task}_majority_class_accuracy"] = 100 * base[f"{task}_majority_class_accuracy"]
    if "nsp_accuracy" in metrics and args.negatives == "random" and examples is None:  # B from the same document
        hard_args = dataclasses.replace(args, negatives="hard")
        hard_train = build_examples(hard_args, train_docs, tokenizer)
        hard = build_examples(hard_args, heldout_docs, tokenizer, 1)
        scores["nsp_hard_accuracy"] = 100 * evaluate(model, args.objective, hard, tokenizer)["nsp_accuracy"]
        scores["nsp_hard_majority_class_accuracy"] = 100 * baselines(
            args.objective, hard_train, hard, tokenizer)["nsp_majority_class_accuracy"]
    return scores


def blank_scores(folder):
    """Top-1 and top-5 hit rates (%) of transformers' fill-mask pipeline on minibert.data.blanks."""
    from transformers import pipeline

    from ..data.blanks import fill_blanks
    result = fill_blanks(pipeline("fill-mask", model=folder, device="cpu"))
    return {"blanks_top1": 100 * result["top1"], "blanks_top5": 100 * result["top5"]}, result["rows"]


# everyday prompts for a causal checkpoint's card; its continuations are printed there as generated
PROMPTS = ["She opened the door and", "After dinner we", "The little girl", "Every morning he",
           "It was a cold night, and"]
SAMPLING = dict(do_sample=True, top_k=40, temperature=0.8, max_new_tokens=25)  # seed 0 before each prompt


@torch.no_grad()
def continuations(folder, prompts=PROMPTS):
    """What transformers' own generate writes after each prompt with a causal checkpoint: sampled with
    SAMPLING, seed 0 before each prompt, so the card's lines come back the same on this machine."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    texts = []
    for prompt in prompts:
        ids = tokenizer(prompt, return_tensors="pt")["input_ids"][:, :-1]  # [CLS] prompt, without the final [SEP]
        torch.manual_seed(0)
        out = model.generate(ids, attention_mask=torch.ones_like(ids), pad_token_id=tokenizer.pad_token_id,
                             eos_token_id=tokenizer.sep_token_id, **SAMPLING)
        texts.append(tokenizer.decode(out[0], skip_special_tokens=True))
    return texts


# ---- export: a run folder -> a checkpoint folder with its card ----
def check_export_folder(run, dest):
    """The absolute folder an export writes: new or empty, or an earlier export of ours (replaced
    whole); never the run itself (its float32 weights and optimizer state), another run, or other files."""
    from ..training.trainer import STATE_FILE
    if os.fspath(dest) == "":
        raise ValueError('dest="" names no folder: give the folder to export the checkpoint to')
    path = os.path.realpath(dest)
    if path == os.path.realpath(run):
        raise ValueError(f"exporting {os.fspath(run)!r} onto itself would replace the run's float32 weights by bfloat16 ones "
                         "(and --resume would continue from them): give another folder")
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"{os.fspath(dest)!r} is a file; an exported checkpoint is a folder: choose another path")
    if os.path.isdir(path) and os.listdir(path) and (os.path.isfile(os.path.join(path, STATE_FILE))
                                                     or not os.path.isfile(os.path.join(path, "training_args.json"))):
        found = sorted(os.listdir(path))
        what = "a training run" if STATE_FILE in found else "a folder of other files"
        raise ValueError(f"{os.fspath(dest)!r} is {what}: {', '.join(found[:5])}{' ...' if len(found) > 5 else ''}. "
                         "An export goes to a new or empty folder, or replaces an earlier export: choose another folder")
    return path


def export(run, dest, note=None, unfinished=False):
    """Write the checkpoint of a finished run: bfloat16 weights (half the size; they load as float32),
    the tokenizer, training_args.json, eval_results.json and README.md, whole or not at all. note: a
    sentence for the card about how the run was made (e.g. beside other runs on a shared machine).
    unfinished: export the run's last save although its budget is not spent: a piece of a training that
    continues later, perhaps on another machine (pretrain(continue_from=dest)); its card says so."""
    from ..model.hub import atomic_folder, write_weights
    from ..training.trainer import load_result, machine, read_state
    state = read_state(run)
    if not state["finished"] and not unfinished:
        raise ValueError(f"{run!r} has not finished training (step {state['step']}); resume it first, or export "
                         "this piece of it with --unfinished")
    dest = check_export_folder(run, dest)
    result = load_result(run, state)
    name = os.path.basename(os.path.normpath(dest))
    pieces = list(state.get("pieces") or [])
    first = pieces[0]["from"] if pieces else state["step"]
    if first > 0:  # steps saved before pieces were recorded: one piece, its machine unknown
        pieces.insert(0, {"from": 0, "to": first, "start": "new", "machine": "not recorded", "threads": None,
                          "bf16": None, "world_size": state.get("world_size", 1),
                          "seconds": state["seconds"] - sum(p["seconds"] for p in pieces)})
    with atomic_folder(dest, carry_over=False) as tmp:  # an export is complete: nothing of an older one stays
        half = copy.deepcopy(result.model).to(torch.bfloat16)
        write_weights(half, tmp, load_as=torch.float32)  # stored in bf16, half the size; computed in float32
        result.tokenizer.save_pretrained(tmp)
        info = {"args": dataclasses.asdict(result.args), "steps": state["step"], "finished": state["finished"],
                "minutes": round(state["seconds"] / 60, 1), "machine": pieces[-1]["machine"] if pieces else machine(),
                "bf16": state.get("bf16"),
                "threads": state.get("threads"), "note": note, "pieces": pieces,
                "evals": state["evals"], "baselines": state["baselines"],  # the run's learning curve
                "data_key": state.get("data_key")}  # a continued piece checks that it trains on the same text
        with open(os.path.join(tmp, "training_args.json"), "w", encoding="utf-8") as f:
            json.dump(info, f, indent=2)
        scores = score(tmp)
        blank_rows = texts = None
        if TASKS[result.args.objective] == "fill-mask":
            blanks, blank_rows = blank_scores(tmp)
            scores.update(blanks)
        if TASKS[result.args.objective] == "text-generation":
            texts = continuations(tmp)
        scores = {k: round(v, 2) if isinstance(v, float) else v for k, v in scores.items()}
        with open(os.path.join(tmp, "eval_results.json"), "w", encoding="utf-8") as f:
            json.dump(scores, f, indent=2)
        with open(os.path.join(tmp, "README.md"), "w", encoding="utf-8") as f:
            f.write(card(name, result.args, info, scores, blank_rows, texts, result.model.num_parameters(),
                         os.path.getsize(os.path.join(tmp, "model.safetensors"))))
    return scores


# ---- the model card, in the layout of the Hugging Face Hub's ----
METRICS = [  # key in scores, its name on the card, its baseline's key, the baseline's name
    ("mlm_accuracy", "masked-token accuracy (%)", "mlm_most_frequent_token_accuracy", "always the most frequent token"),
    ("mlm_loss", "masked-token loss (nats)", "mlm_unigram_loss", "unigram frequencies"),
    ("nsp_accuracy", "next sentence prediction, random negatives (%)", "nsp_majority_class_accuracy",
     "majority class"),
    ("nsp_hard_accuracy", "next sentence prediction, negatives from the same document (%)",
     "nsp_hard_majority_class_accuracy", "majority class"),
    ("sop_accuracy", "sentence order prediction (%)", "sop_majority_class_accuracy", "majority class"),
    ("clm_perplexity", "next-token perplexity", "clm_unigram_perplexity", "unigram frequencies"),
    ("clm_accuracy", "next-token accuracy (%)", None, None),
    ("blanks_top1", "everyday fill-in-the-blank sentences, top-1 (%)", None, None),
    ("blanks_top5", "everyday fill-in-the-blank sentences, top-5 (%)", None, None),
]


def corpus_description(args):
    """What the card says of a run's corpus: its name and sources, and its size, counted now."""
    from ..data.corpus import load_corpus
    stats = load_corpus(args.corpus).stats()
    size = f"{stats['documents']:,} documents, {stats['words'] / 1e6:.2f} million words"
    if args.corpus in (None, "default"):
        return f"the built-in one (gensim's Wikipedia sample and the Lee news corpus: {size})", size
    if args.corpus == "large":
        return (f"the large one (`--corpus large`, data card in docs/corpus.md: Gutenberg stories, the Bible in "
                f"Basic English, WordNet's usage examples, State of the Union addresses and the built-in text: "
                f"{size})"), size
    return f"{args.corpus} ({size})", size


def interval(key, scores, blank_rows):
    """The 95% interval of a score that is a share of independent items (sentence pairs, blank
    sentences), as "[low, high]"; "" for scores of tokens inside the same blocks."""
    from ..training.metrics import proportion
    n = {"nsp_accuracy": scores["examples"], "nsp_hard_accuracy": scores["examples"],
         "sop_accuracy": scores["examples"]}.get(key) or (len(blank_rows) if key.startswith("blanks_") else 0)
    if not n:
        return ""
    iv = proportion(round(scores[key] / 100 * n), n)
    return f"[{100 * iv.low:.1f}, {100 * iv.high:.1f}]"


def card(name, args, info, scores, blank_rows, texts, parameters, weight_bytes):
    import yaml
    task = TASKS[args.objective]
    metrics = [{"name": label, "type": key, "value": scores[key]} for key, label, _, _ in METRICS if key in scores]
    meta = {"language": "en", "license": "mit", "library_name": "transformers", "pipeline_tag": task,
            "tags": ["bert", "minibert", "course", args.objective],
            "model-index": [{"name": name, "results": [{
                "task": {"type": task},
                "dataset": {"name": f"minibert {args.corpus or 'built-in'} corpus, held-out documents",
                            "type": f"minibert-{args.corpus or 'builtin'}",
                            "split": f"held-out {args.heldout:.0%} of documents, seed {args.seed}"},
                "metrics": metrics}]}]}
    rows = "\n".join(f"| {label} | {scores[key]:g} | {interval(key, scores, blank_rows)} | "
                     + (f"{scores[base]:g} ({what})" if base else "") + " |"
                     for key, label, base, what in METRICS if key in scores)
    size = f"{parameters / 1e6:.2f} M parameters, {weight_bytes / 1e6:.1f} MB of bfloat16 weights"
    use = {"fill-mask": f'pipeline("fill-mask", model="checkpoints/{name}")("The [MASK] was hot.")',
           "text-generation": (f'AutoModelForCausalLM.from_pretrained("checkpoints/{name}")  '
                               "# generate with do_sample or greedy")}.get(task, "")
    corpus, corpus_size = corpus_description(args)
    lines = [
        "---", yaml.safe_dump(meta, sort_keys=False).strip(), "---", "",
        f"# {name}", "",
        f"A small BERT ({args.preset} preset: {size}) pretrained with **{args.objective}** by the course's own "
        "CLI, for the notebooks of the minibert course. It is a standard transformers checkpoint: "
        f"`{'BertLMHeadModel' if args.objective == 'clm' else 'BertForPreTraining / BertForMaskedLM'}` in "
        "transformers, the same class names in minibert.", "",
        *in_training(name, args, info),
        "## Training", "",
        "```bash", command_of(name, args, info), "```", "",
        f"- corpus: {corpus}, {1 - args.heldout:.0%} of its documents; the other {args.heldout:.0%} (seed {args.seed}) are held out for the scores below",
        f"- {info['steps']:,} steps of {args.batch_size} sequences x {args.max_length} tokens, AdamW at peak "
        f"learning rate {args.lr:g}, {args.schedule} schedule, {args.warmup:.0%} warm-up, "
        f"{'bf16 autocast' if info.get('bf16') else 'fp32'}",
        f"- wall time {info['minutes']} minutes (evaluations included) " + where_trained(info)
        + (f"; {info['note']}" if info.get("note") else ""),
        "- `make pretrained` retrains and re-exports every shipped checkpoint", "",
        *pieces_table(info),
        "## Held-out scores", "",
        "| metric | this model | 95% interval | baseline |", "|---|---|---|---|", rows, "",
        f"Scored on {scores['examples']} held-out examples by `minibert.course.pretrained.score`; a test recomputes "
        "them from the weights and fails if they drift from this card by more than half a point (the held-out "
        "scores where the corpus is installed: `make corpus`). The intervals are 95% bootstrap intervals over "
        "the sentence pairs or the blank sentences: how much a score depends on which items were drawn.", "",
    ]
    if blank_rows:
        lines += ["## Everyday fill-in-the-blank sentences", "",
                  f"{len(blank_rows)} sentences written for the course (`minibert.data.blanks`). None of them occurs in "
                  "the training text: the corpus drops every sentence that contains one with an accepted word filled "
                  "in, and `python -m minibert corpus large` checks it. "
                  "A sentence is filled when an accepted word is among the top 5 of "
                  "`pipeline(\"fill-mask\")`. Some of them:", "",
                  "| sentence | top 5 |", "|---|---|"]
        lines += [f"| {r['sentence']} | {', '.join(r['guesses'])} |" for r in blank_rows[:8]]
        lines += [""]
    if texts:
        settings = ", ".join(f"{k}={v}" for k, v in SAMPLING.items())
        lines += ["## Continuations of everyday prompts", "",
                  f"Written by transformers' `generate` ({settings}, `torch.manual_seed(0)` before each prompt; "
                  "`minibert.course.pretrained.continuations`), unedited:", ""]
        lines += [f"- {text}" for text in texts]
        lines += [""]
    lines += [
        "## Intended use and limitations", "",
        "For teaching: to look inside a BERT that has learned something (fill-mask, attention, probes, "
        "generation) on a laptop CPU, in the notebooks of the course. Its training data is small "
        f"({corpus_size}) and its training short: it knows "
        "frequent words and local grammar, little about the world, and nothing about text unlike its corpus; "
        "expect wrong and repetitive outputs. Lowercased WordPiece vocabulary of "
        f"{args.vocab_size} tokens trained on the same documents. Not for any real application.", "",
        f"Use: `{use}`" if use else "", "",
    ]
    return "\n".join(lines)


STARTS = {"new": "from scratch", "resumed": "resumed from its run folder (optimizer state and all)",
          "continued": "from the exported weights before it: fresh optimizer, warm-up of {} steps"}


def in_training(name, args, info):
    """The card's first words for a piece of a longer training: how far it is, and how to go on."""
    if info.get("finished", True):
        return []
    return [f"**In training: step {info['steps']:,} of {args.steps:,}.** These are the weights of the run's last "
            "save, and the scores below are theirs at that step: the run goes on, and this folder is replaced "
            "as it goes. On any machine, from the repository's root, this continues it from these weights "
            "(the same data from the same step on, a fresh optimizer; an unfinished run folder of its own in "
            "`runs/` is resumed instead):", "",
            "```bash", f"python -m minibert.course.pretrained {name}", "```", ""]


def where_trained(info):
    """The machine and threads of a run trained in one go; a run in pieces names them piece by piece."""
    if len(info.get("pieces") or []) > 1:
        return f"in {len(info['pieces'])} pieces, each on the machine and threads listed below"
    threads = info.get("threads")
    return f"on {info['machine']}" + (f", {threads} thread{'s' if threads != 1 else ''}" if threads else "")


def pieces_table(info):
    """Where each piece of a run trained, when it trained in more than one or is unfinished."""
    from ..training.trainer import REWARMUP
    pieces = info.get("pieces") or []
    if len(pieces) < 2 and info.get("finished", True):
        return []
    rows = ["Trained in pieces, each on the machine it had:", "",
            "| steps | started | machine | threads | precision | minutes |", "|---|---|---|---|---|---|"]
    precision = {True: "bf16 autocast", False: "fp32", None: "not recorded"}
    rows += [f"| {p['from']:,} to {p['to']:,} | {STARTS[p['start']].format(REWARMUP)} | {p['machine']} | "
             f"{p['threads'] or 'not recorded'} | {precision[p['bf16']]} | {p['seconds'] / 60:.0f} |" for p in pieces]
    return rows + [""]


def command_of(name, args, info):
    """The command that trained this run, with the options of its recipe (all of the run's settings
    that differ from the defaults, for a checkpoint outside RECIPES)."""
    from ..training.trainer import TrainArgs
    if name in RECIPES:
        return command(name, settings={k: v if k == "tokenizer" else getattr(args, k) for k, v in RECIPES[name].items()})
    keys = [f.name for f in dataclasses.fields(TrainArgs) if getattr(args, f.name) != f.default or f.name == "objective"]
    return command(name, settings={k: getattr(args, k) for k in keys})


def card_scores(folder):
    """The scores a checkpoint's card states: {metric key: value}, from its YAML header."""
    import yaml
    with open(os.path.join(folder, "README.md"), encoding="utf-8") as f:
        text = f.read()
    if not text.startswith("---\n"):
        raise ValueError(f"{folder!r}: README.md has no YAML header with the scores")
    meta = yaml.safe_load(text.split("---\n")[1])
    return {m["type"]: m["value"] for m in meta["model-index"][0]["results"][0]["metrics"]}


def table():
    """The shipped checkpoints as a markdown table, from their cards: what the README shows."""
    rows = ["| checkpoint | objective | steps | minutes | held-out scores (baseline) | everyday blanks top-1 / top-5 "
            "| size (folder) |", "|---|---|---|---|---|---|---|"]
    for name in RECIPES:
        folder = path(name)
        with open(os.path.join(folder, "training_args.json"), encoding="utf-8") as f:
            info = json.load(f)
        s = card_scores(folder)
        base = json.load(open(os.path.join(folder, "eval_results.json"), encoding="utf-8"))
        parts = []
        if "mlm_accuracy" in s:
            parts.append(f"masked-token accuracy {s['mlm_accuracy']:.1f}% ({base['mlm_most_frequent_token_accuracy']:.1f}%)")
        for task, what in (("nsp", "NSP"), ("nsp_hard", "NSP, hard negatives"), ("sop", "SOP")):
            if f"{task}_accuracy" in s:
                parts.append(f"{what} {s[f'{task}_accuracy']:.1f}% ({base[f'{task}_majority_class_accuracy']:.1f}%)")
        if "clm_perplexity" in s:
            parts.append(f"perplexity {s['clm_perplexity']:.1f} ({base['clm_unigram_perplexity']:.0f})")
        blanks = f"{s['blanks_top1']:.0f}% / {s['blanks_top5']:.0f}%" if "blanks_top5" in s else "-"
        size = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)) / 1e6
        steps = f"{info['steps']:,}" if info.get("finished", True) else \
            f"{info['steps']:,} of {info['args']['steps']:,} (in training)"
        rows.append(f"| `{name}` | {info['args']['objective']} | {steps} | {info['minutes']:g} | "
                    f"{'; '.join(parts)} | {blanks} | {size:.1f} MB |")
    return "\n".join(rows)


SIDE_BY_SIDE = "trained side by side with the other shipped checkpoints on the same cores"


def main(names, note=None):
    """Train (or finish, after an interruption) and export each named checkpoint; `make pretrained`
    runs the tiny ones side by side, one thread each, then the mini ones, as the shipped ones were made.
    An interrupted run continues where it stopped: from its run folder in runs/ where this machine has
    one (exactly), else from the unfinished checkpoint that landed in checkpoints/ (its weights and step)."""
    from ..training.trainer import SAVE_EVERY, STATE_FILE, pretrain, read_exported
    for name in names or RECIPES:
        run, shipped = os.path.join("runs", name), path(name)
        resume = os.path.isfile(os.path.join(run, STATE_FILE))  # then continue it exactly where it stopped
        piece = not resume and os.path.isdir(shipped) and not read_exported(shipped).get("finished", True)
        print("$", command(name, run), "--resume" if resume else f"--continue-from {shipped}" if piece else "",
              flush=True)
        recipe = dict(RECIPES[name])
        if "tokenizer" in recipe:  # another checkpoint's: every shipped checkpoint counts the same tokens
            from transformers import AutoTokenizer
            recipe["tokenizer"] = None if resume or piece else AutoTokenizer.from_pretrained(path(recipe["tokenizer"]))
        pretrain(recipe.pop("objective"), recipe.pop("preset"), out=run, resume=resume, save_every=SAVE_EVERY,
                 continue_from=shipped if piece else None, **recipe)
        scores = export(run, shipped, note)
        print(f"{name}: " + ", ".join(f"{k} {v:g}" for k, v in scores.items()), flush=True)


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(prog="python -m minibert.course.pretrained",
                                     description="train and export the shipped checkpoints (make pretrained)")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"checkpoints to make (default: all of {', '.join(RECIPES)})")
    parser.add_argument("--table", action="store_true", help="print the README's table of the shipped checkpoints")
    parser.add_argument("--side-by-side", action="store_true", help="say in the cards that the runs shared the cores")
    a = parser.parse_args()
    unknown = [name for name in a.names if name not in RECIPES]
    if unknown:
        parser.error(f"no shipped checkpoint {unknown[0]!r}; they are {', '.join(RECIPES)}")
    if a.table:
        print(table())
    else:
        main(a.names, SIDE_BY_SIDE if a.side_by_side else None)
