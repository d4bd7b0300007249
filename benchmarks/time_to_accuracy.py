"""Wall-clock time to a held-out masked-token accuracy: minibert.pretrain against the same recipe
written with plain transformers.

    python benchmarks/time_to_accuracy.py                      # tiny preset, target 14%
    python benchmarks/time_to_accuracy.py --preset mini --target 12 --steps 3000

Both sides start from the same weights (minibert's initialisation, output bias at the unigram
prior), see the same examples in the same order (the built-in corpus, 16 x 64 tokens per step), use
AdamW with the same groups, betas, weight decay, clipping and warm-up-stable-decay schedule, and the
same precision (bf16 where the CPU has it natively). transformers' side is BertForMaskedLM with
DataCollatorForLanguageModeling, with whichever of its attention implementations ("eager" or "sdpa")
trains faster on this machine in a short probe (or the one --attention names); minibert's is
`minibert.pretrain`. Every `--eval-every` steps each
side is scored by the same function on the same held-out examples and masks (transformers' weights
are copied into a minibert model for it: the two are interchangeable); evaluation time is excluded
from both clocks. The runs go back to back in one process; the figure to read is the ratio of the
times to reach the target. Not a test: a script that prints figures.
"""

import argparse
import dataclasses
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
import transformers  # noqa: E402

from minibert.training.metrics import evaluate  # noqa: E402
from minibert.training.trainer import machine  # noqa: E402
from minibert.training.trainer import BertConfig, TrainArgs, default_lr, init_prior, learning_rate, model_class, prepare_data, pretrain, resolve_bf16


def first_time_at(curve, target):
    """The training seconds of the first evaluation at or above target (None if never)."""
    return next((seconds for seconds, accuracy in curve if accuracy >= target), None)


def run_minibert(args, tokenizer, model, eval_every):
    curve, clock = [], {"eval": 0.0}

    def on_step(trainer):  # evaluate outside the trainer's clock: subtract the time it takes
        if trainer.step % eval_every == 0:
            seconds = trainer.seconds - clock["eval"]  # trainer.seconds counts the earlier evaluations
            start = time.perf_counter()
            accuracy = evaluate(trainer.model, "mlm", heldout, tokenizer)["mlm_accuracy"]
            clock["eval"] += time.perf_counter() - start
            curve.append((seconds, 100 * accuracy))
            print(f"  minibert      step {trainer.step:>5}  {curve[-1][0]:6.1f} s  {curve[-1][1]:.1f}%", flush=True)

    # the trainer's own evaluations are pushed past the end of the run: the callback does them
    pretrain("mlm", model=model, tokenizer=tokenizer, callback=on_step, progress=False, verbose=False,
             eval_every=args.steps + 1, **{k: getattr(args, k) for k in RECIPE})
    return curve


def fastest_attention(config, args, bf16, steps=5):
    """transformers' attention implementation whose BertForMaskedLM step is the shorter here (median of
    a few steps on a random batch of the recipe's shape)."""
    ids = torch.randint(5, config.vocab_size, (args.batch_size, args.max_length))
    labels = torch.where(torch.rand(ids.shape) < args.mlm_probability, ids, -100)
    seconds = {}
    for impl in ("eager", "sdpa"):
        model = transformers.BertForMaskedLM(transformers.BertConfig(**config.to_dict(), attn_implementation=impl))
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        times = []
        for _ in range(steps + 1):  # the first is a warm-up
            start = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = model(input_ids=ids, labels=labels).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            times.append(time.perf_counter() - start)
        seconds[impl] = sorted(times[1:])[steps // 2]
    return min(seconds, key=seconds.get), seconds


def run_transformers(args, tokenizer, model, train, eval_every, bf16, attention):
    torch.manual_seed(args.seed)
    theirs = transformers.BertForMaskedLM(transformers.BertConfig(**model.config.to_dict(),
                                                                  attn_implementation=attention))
    theirs.load_state_dict(minibert_to_transformers(model.state_dict()), strict=False)
    theirs.tie_weights()
    theirs.train()
    decay = [p for p in theirs.parameters() if p.dim() >= 2]
    no_decay = [p for p in theirs.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, args.beta2))
    collator = transformers.DataCollatorForLanguageModeling(tokenizer, mlm_probability=args.mlm_probability)
    order = torch.randperm(len(train), generator=torch.Generator().manual_seed(args.seed * 7919)).tolist()
    scorer = model_class("mlm")(model.config)
    curve, seconds = [], 0.0
    for step in range(args.steps):
        start = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(args, step / args.steps)
        rows = [order[(step * args.batch_size + i) % len(order)] for i in range(args.batch_size)]
        batch = collator([{"input_ids": train[i]["input_ids"]} for i in rows])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = theirs(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                          labels=batch["labels"]).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(theirs.parameters(), args.max_grad_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        seconds += time.perf_counter() - start
        if (step + 1) % eval_every == 0:
            scorer.load_state_dict(transformers_to_minibert(theirs.state_dict()), strict=False)
            accuracy = evaluate(scorer, "mlm", heldout, tokenizer)["mlm_accuracy"]
            curve.append((seconds, 100 * accuracy))
            print(f"  transformers  step {step + 1:>5}  {seconds:6.1f} s  {curve[-1][1]:.1f}%", flush=True)
    return curve


def minibert_to_transformers(state):
    state = {k: v for k, v in state.items() if k != "cls.predictions.decoder.weight"}
    state["cls.predictions.decoder.bias"] = state["cls.predictions.bias"]
    return state


def transformers_to_minibert(state):
    return {k: v for k, v in state.items() if k != "cls.predictions.decoder.bias"}


RECIPE = ("steps", "batch_size", "max_length", "lr", "warmup", "schedule", "weight_decay", "beta2", "max_grad_norm",
          "mlm_probability", "seed", "bf16")

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--batch-size", type=int, default=16, help="sequences per step (the README's table: 16)")
    parser.add_argument("--eval-every", type=int, default=500)
    parser.add_argument("--target", type=float, default=14.0, help="held-out masked-token accuracy, %%")
    parser.add_argument("--bf16", action=argparse.BooleanOptionalAction, help="default: where native")
    parser.add_argument("--attention", choices=["eager", "sdpa"],
                        help="transformers' attention implementation (default: the faster here, in a short probe)")
    a = parser.parse_args()
    args = TrainArgs(objective="mlm", preset=a.preset, steps=a.steps, batch_size=a.batch_size, bf16=a.bf16)
    tokenizer, train, heldout = prepare_data(args, None, None)
    heldout = heldout[:args.eval_examples]
    bf16 = resolve_bf16(args.bf16, torch.device("cpu"))
    torch.manual_seed(args.seed)
    model = model_class("mlm")(BertConfig.preset(args.preset, vocab_size=len(tokenizer)))
    init_prior(model, "mlm", train, tokenizer)
    args = dataclasses.replace(args, lr=args.lr or default_lr(model.config), bf16=bf16)
    print(f"{a.preset} preset, {args.steps} steps of {args.batch_size} x {args.max_length} tokens, lr {args.lr:g}, "
          f"{'bf16' if bf16 else 'fp32'}, {torch.get_num_threads()} threads; {machine()}")
    attention = a.attention
    if attention is None:
        attention, probe = fastest_attention(model.config, args, bf16)
        print("transformers' step: " + ", ".join(f"{k} {1000 * v:.0f} ms" for k, v in probe.items())
              + f"; racing with {attention}")
    start_weights = {k: v.clone() for k, v in model.state_dict().items()}
    theirs = run_transformers(args, tokenizer, model, train, a.eval_every, bf16, attention)
    model.load_state_dict(start_weights)
    ours = run_minibert(args, tokenizer, model, a.eval_every)
    t_ours, t_theirs = first_time_at(ours, a.target), first_time_at(theirs, a.target)
    print(f"\ntime to {a.target:g}% held-out masked-token accuracy: minibert {t_ours and f'{t_ours:.1f} s'}, "
          f"transformers ({attention} attention) {t_theirs and f'{t_theirs:.1f} s'}"
          + (f", speed-up {t_theirs / t_ours:.2f}x" if t_ours and t_theirs else ""))
    print(f"final accuracy: minibert {ours[-1][1]:.1f}%, transformers {theirs[-1][1]:.1f}%")
