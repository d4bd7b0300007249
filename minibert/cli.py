"""Command line:

    python -m minibert pretrain --objective mlm --preset mini --minutes 5 --out runs/mlm
    python -m minibert eval runs/mlm
    python -m minibert export runs/mlm checkpoints/my-bert     # bf16 weights + model card with scores
    python -m minibert export runs/mlm checkpoints/my-bert --unfinished     # a piece of a long training ...
    python -m minibert pretrain --continue-from checkpoints/my-bert --out runs/mlm2   # ... continued elsewhere
    python -m minibert fill-mask runs/mlm "The [MASK] barks loudly."
    python -m minibert generate runs/clm "Deep learning is"
    python -m minibert next-sentence runs/nsp "It rained all day." "The streets were flooded."
    python -m minibert corpus large                            # what a corpus holds, source by source

Several processes or GPUs: torchrun --nproc_per_node 4 -m minibert pretrain ...
"""

import argparse
import json
import os
import sys
import warnings

from .model.config import PRESETS
from .training.objectives import OBJECTIVES
from .training.trainer import SAVE_EVERY, SCHEDULES, STATE_FILE, TrainArgs

HEAD_NEEDS = {"mlm": "cls.predictions", "nsp": "cls.seq_relationship"}
TRAIN_OPTIONS = ("steps", "minutes", "batch_size", "max_length", "lr", "warmup", "schedule", "negatives",
                 "vocab_size", "corpus", "seed", "eval_every", "dropout",
                 "mlm_probability")  # passed to pretrain only when given


def load_head(folder, cls, needs=None):
    """Load the head a command needs from a checkpoint folder, or say why it cannot be done."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = cls.from_pretrained(folder)
    missing = [k for k in model.loading_info["missing_keys"] if needs and k.startswith(HEAD_NEEDS[needs])]
    if missing:
        raise ValueError(f"{folder!r} has no {needs.upper()} head ({', '.join(missing[:2])} missing): "
                         f"train one with --objective {needs} or mlm+nsp")
    from transformers import AutoTokenizer
    if not os.path.isfile(os.path.join(folder, "tokenizer.json")):
        raise ValueError(f"{folder!r} has no tokenizer.json: save the tokenizer beside the model")
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder)
    except Exception as e:  # the tokenizers library's own errors name no file
        from .model.hub import damaged
        raise damaged(os.path.join(folder, "tokenizer.json"), f"{type(e).__name__}: {e}") from None
    check_loaded(folder, model, tokenizer, needs)
    return model, tokenizer


def check_loaded(folder, model, tokenizer, needs):
    """What would make a command answer garbage without a word: weights that are not numbers, a config that
    contradicts how the weights were trained, a tokenizer from another vocabulary."""
    from .training.trainer import check_finite
    check_finite(model, folder)
    config = saved_config(folder) if needs == "mlm" else {}
    trained = trained_as(folder, config) if config else None
    if config.get("is_decoder") and trained != "BertLMHeadModel":
        raise ValueError(f"{folder!r}: its config.json says is_decoder=true, so the model would read only the words "
                         f"to the left of each position, but the weights were trained as {trained}, "
                         "reading both sides: set is_decoder to false in config.json")
    if len(tokenizer) != model.config.vocab_size or tokenizer.pad_token_id != model.config.pad_token_id:
        raise ValueError(f"{folder!r}: its tokenizer ({len(tokenizer):,} tokens, [PAD] = {tokenizer.pad_token_id}) "
                         f"is not the vocabulary the model was trained with ({model.config.vocab_size:,} tokens, "
                         f"[PAD] = {model.config.pad_token_id}): put the run's own tokenizer.json beside the weights")


def cmd_pretrain(a):
    from .training.trainer import pretrain
    given = {k: getattr(a, k) for k in TRAIN_OPTIONS if getattr(a, k) is not None}  # the rest: TrainArgs' defaults
    preset = a.preset or (None if a.resume or a.continue_from else "mini")  # the command line's default is larger
    tokenizer = None
    if a.tokenizer and not a.resume and not a.continue_from:  # a resumed run reads its own, saved beside its weights
        from transformers import AutoTokenizer
        if not os.path.isfile(os.path.join(a.tokenizer, "tokenizer.json")):
            raise ValueError(f"--tokenizer {a.tokenizer!r} is not a folder with a tokenizer.json (a checkpoint "
                             "folder, e.g. checkpoints/bert-mlm)")
        tokenizer = AutoTokenizer.from_pretrained(a.tokenizer)
    result = pretrain(a.objective, preset, out=a.out, resume=a.resume, continue_from=a.continue_from,
                      save_every=a.save_every, bf16=a.bf16, tokenizer=tokenizer, **given)
    print(f"saved to {a.out} after {result.history[-1]['step']} steps: {result.report()}")


def cmd_eval(a):
    from .data.corpus import load_corpus, split_corpus
    from .model.heads import BertForMaskedLM
    from .training.metrics import baselines, evaluate, format_metrics
    from .model.scoring import pseudo_perplexity
    from .training.trainer import check_same_data, data_key, model_class, prepare_data, read_state
    if a.examples < 1:
        raise ValueError(f"--examples must be at least 1 (how many held-out examples to score), got {a.examples}")
    state = read_state(a.dir)
    if state.get("documents_in_memory"):
        raise ValueError(f"{a.dir!r} was trained on documents passed in memory (pretrain(corpus=[...])), which "
                         "`eval` cannot rebuild: evaluate it in Python with minibert.training.metrics.evaluate")
    args = TrainArgs(**state["args"])
    model, tokenizer = load_head(a.dir, model_class(args.objective))
    _, train_examples, heldout_examples = prepare_data(args, None, tokenizer)
    check_same_data(state, data_key(train_examples, heldout_examples), a.dir)  # a corpus edited since: scores of memory
    heldout_examples = heldout_examples[:a.examples]
    metrics = evaluate(model, args.objective, heldout_examples, tokenizer)
    print(f"{args.objective} on {len(heldout_examples)} held-out examples: "
          f"{format_metrics(metrics, baselines(args.objective, train_examples, heldout_examples, tokenizer))}")
    if "mlm" in args.objective and a.pppl_sentences:
        heldout_docs = split_corpus(load_corpus(args.corpus), args.heldout, seed=args.seed)[1]
        sentences = [s for doc in heldout_docs for s in doc][:a.pppl_sentences]
        mlm, _ = load_head(a.dir, BertForMaskedLM, "mlm")
        print(f"pseudo-perplexity on {len(sentences)} held-out sentences: {pseudo_perplexity(mlm, tokenizer, sentences):.1f}")


def cmd_corpus(a):
    from .data.corpus import large_corpus_report, load_corpus
    if a.name == "large":
        rows, narrative = large_corpus_report()
        print(f"{'source':<10}{'documents':>10}{'sentences':>11}{'words':>11}  sentences dropped (held a blank)")
        for source, documents, sentences, words, dropped in rows:
            print(f"{source:<10}{documents:>10,}{sentences:>11,}{words:>11,}  {dropped}")
        print(f"{'all':<10}{sum(r[1] for r in rows):>10,}{sum(r[2] for r in rows):>11,}{sum(r[3] for r in rows):>11,}")
        print(f"narrative and example text: {narrative:.1%} of the words")
    else:
        print(load_corpus(a.name))


def saved_config(folder):
    """A checkpoint's config.json as saved (a class such as BertForCausalLM sets is_decoder when it loads)."""
    from .model.hub import read_config
    read_config(folder)  # a missing or broken config.json is named here
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        return json.load(f)


def trained_as(folder, config=None):
    """The architecture a checkpoint's config.json names (BertForPreTraining, BertLMHeadModel, ...)."""
    return ((config or saved_config(folder)).get("architectures") or ["an unnamed architecture"])[0]


def cmd_fill_mask(a):
    from .model.heads import BertForMaskedLM
    model, tokenizer = load_head(a.dir, BertForMaskedLM, "mlm")
    if trained_as(a.dir) == "BertLMHeadModel":
        print("note: this checkpoint is a causal LM, trained to read only the words to the left of each "
              "position; it never learned to fill a [MASK] from both sides", file=sys.stderr)
    for i, candidates in enumerate(model.fill_mask(tokenizer, a.text, top_k=a.top_k)):
        print(f"[MASK] {i + 1}: " + "  ".join(f"{token} {p:.1%}" for token, p in candidates))


def cmd_generate(a):
    import torch
    from .model.heads import BertForCausalLM
    from .model.helpers import encode_text
    model, tokenizer = load_head(a.dir, BertForCausalLM, "mlm")
    if model.loading_info["missing_keys"] or trained_as(a.dir) != "BertLMHeadModel":
        print(f"note: this checkpoint was trained as {trained_as(a.dir)}, not as a causal LM; its continuations "
              "show what it learned about the next token without being taught it (little)", file=sys.stderr)
    enc = encode_text(tokenizer, a.prompt, drop_final_sep=True)
    out = model.generate(enc["input_ids"], attention_mask=enc["attention_mask"], max_new_tokens=a.max_new_tokens,
                         do_sample=a.sample, temperature=a.temperature, num_beams=a.num_beams,
                         top_k=a.top_k, top_p=a.top_p, eos_token_id=tokenizer.sep_token_id,
                         generator=torch.Generator().manual_seed(a.seed))
    print(tokenizer.decode(out[0], skip_special_tokens=True))


def cmd_next_sentence(a):
    from .model.heads import BertForNextSentencePrediction
    model, tokenizer = load_head(a.dir, BertForNextSentencePrediction, "nsp")
    p = model.predict_proba_from_text(tokenizer, a.a, a.b)[0]
    if pair_task_of(a.dir) == "sop":  # the same head, asked another question: is the order right?
        print(f"P(A then B is the right order) = {p[0]:.1%}   P(swapped) = {p[1]:.1%}   (label 0 = in order, 1 = swapped)")
    else:
        print(f"P(B follows A) = {p[0]:.1%}   P(B is random) = {p[1]:.1%}   (label 0 = IsNext, 1 = NotNext)")


def pair_task_of(folder):
    """"sop" for a checkpoint trained on sentence order, as its run state or its export records, else "nsp"."""
    from .training.trainer import read_exported, read_state
    for name, read in ((STATE_FILE, read_state), ("training_args.json", read_exported)):  # a run, an export
        if os.path.isfile(os.path.join(folder, name)):
            return "sop" if "sop" in str(read(folder).get("args", {}).get("objective", "")) else "nsp"
    return "nsp"


def cmd_export(a):
    from .course.pretrained import export
    scores = export(a.run_dir, a.dest, a.note, unfinished=a.unfinished)
    print(f"exported {a.run_dir} to {a.dest}: " + ", ".join(f"{k} {v:g}" for k, v in scores.items()))


def parser():
    top = argparse.ArgumentParser(prog="python -m minibert", description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pretrain", help="pretrain a model with one objective and save it")
    p.add_argument("--objective", choices=list(OBJECTIVES), help="(default mlm; with --resume, the run's own)")
    p.add_argument("--preset", choices=PRESETS, help="(default mini; with --resume, the run's own)")
    p.add_argument("--minutes", type=float, help="time budget")
    p.add_argument("--steps", type=int, help="step budget")
    p.add_argument("--out", required=True, help="checkpoint folder (transformers format)")
    p.add_argument("--resume", action="store_true", help="continue the run saved in --out")
    p.add_argument("--continue-from", metavar="FOLDER",
                   help="continue the unfinished run exported to FOLDER (export --unfinished), from its weights and "
                        "step, with a fresh optimizer, into --out: a long training moved to another machine")
    p.add_argument("--save-every", type=int, default=SAVE_EVERY,
                   help=f"steps between checkpoints (default {SAVE_EVERY})")
    p.add_argument("--batch-size", type=int, help=f"sequences per step (default {TrainArgs.batch_size})")
    p.add_argument("--max-length", type=int, help=f"tokens per sequence, both segments of a pair together (default {TrainArgs.max_length})")
    p.add_argument("--lr", type=float, help="peak learning rate (default 1e-3; x 256 / hidden size for presets wider than 256)")
    p.add_argument("--warmup", type=float, help=f"share of the run spent warming up (default {TrainArgs.warmup:g})")
    p.add_argument("--schedule", choices=SCHEDULES, help=f"decay after warm-up (default {TrainArgs.schedule})")
    p.add_argument("--bf16", action=argparse.BooleanOptionalAction,
                   help="bf16 autocast (default: on where the CPU or GPU multiplies bf16 natively, else fp32)")
    p.add_argument("--dropout", type=float,
                   help="hidden and attention dropout of the new model (default: the preset's, 0): against overfitting "
                        "a small corpus in long runs")
    p.add_argument("--mlm-probability", type=float,
                   help=f"share of the tokens masked for masked LM (default {TrainArgs.mlm_probability:g}; 0.3 formed "
                        "a neighbour head sooner in docs/experiments.md)")
    p.add_argument("--negatives", choices=["random", "hard"], help=f"NSP negatives (default {TrainArgs.negatives})")
    p.add_argument("--vocab-size", type=int,
                   help=f"WordPiece vocabulary trained for the run (default {TrainArgs.vocab_size})")
    p.add_argument("--corpus", help="a text file, folder or dataset, or large (needs `make corpus`) "
                                    "(default: built-in Wikipedia + news)")
    p.add_argument("--eval-every", type=int, help="steps between evaluations (default: 5 per run)")
    p.add_argument("--tokenizer", help="train with the tokenizer of this folder (a checkpoint's) instead of "
                   "training one on the corpus")
    p.add_argument("--seed", type=int, help=f"(default {TrainArgs.seed})")
    p.set_defaults(run=cmd_pretrain)
    p = sub.add_parser("eval", help="held-out metrics of a saved run, beside their baselines")
    p.add_argument("dir")
    p.add_argument("--examples", type=int, default=512)
    p.add_argument("--pppl-sentences", type=int, default=20, help="sentences for MLM pseudo-perplexity (0: skip)")
    p.set_defaults(run=cmd_eval)
    p = sub.add_parser("export", help="a finished run as a shippable checkpoint: bf16 weights, model card, scores")
    p.add_argument("run_dir", metavar="RUN", help="a finished run folder (pretrain --out)")
    p.add_argument("dest", help="the checkpoint folder to write")
    p.add_argument("--note", help="a sentence for the model card about how the run was made")
    p.add_argument("--unfinished", action="store_true",
                   help="export the last save of a run that is still training (its card says so); "
                        "pretrain --continue-from continues it")
    p.set_defaults(run=cmd_export)
    p = sub.add_parser("fill-mask", help="the likeliest words for each [MASK]")
    p.add_argument("dir")
    p.add_argument("text")
    p.add_argument("--top-k", type=int, default=5)
    p.set_defaults(run=cmd_fill_mask)
    p = sub.add_parser("generate", help="continue a prompt with a causal LM")
    p.add_argument("dir")
    p.add_argument("prompt")
    p.add_argument("--max-new-tokens", type=int, default=30)
    p.add_argument("--sample", action="store_true", help="sample instead of greedy decoding")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-k", type=int, help="sample among the k likeliest tokens (default 50; 0: all)")
    p.add_argument("--top-p", type=float)
    p.add_argument("--num-beams", type=int, default=1, help="beam search with this many beams")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=cmd_generate)
    p = sub.add_parser("next-sentence", help="does B follow A?")
    p.add_argument("dir")
    p.add_argument("a")
    p.add_argument("b")
    p.set_defaults(run=cmd_next_sentence)
    p = sub.add_parser("corpus", help="documents, sentences and words of a corpus (large: per source)")
    p.add_argument("name", nargs="?", default="default", help="default, wiki, lee, large, or a path")
    p.set_defaults(run=cmd_corpus)
    return top


def main(argv=None):
    from .cache import CacheFolderError, RunInUse
    args = parser().parse_args(argv)
    try:
        args.run(args)
    except (ValueError, OSError, RunInUse, CacheFolderError) as e:  # a full disk, a folder that cannot be read
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if args.run is cmd_pretrain:
            print(f"\ninterrupted: {args.out!r} keeps the last checkpoint saved; to continue the run, give the "
                  "same command with --resume", file=sys.stderr)
        else:
            print("\ninterrupted", file=sys.stderr)
        return 130
    return 0
