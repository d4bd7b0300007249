"""Vocabulary size as a lever: the same masked-LM recipe with WordPiece vocabularies of several sizes,
trained on the built-in corpus for the same number of steps, and scored as the shipped checkpoints' cards
are (held-out masked-token accuracy beside the most-frequent-token baseline, everyday blanks through
transformers' fill-mask pipeline).

    python benchmarks/vocabulary_size.py --vocab-sizes 4000 8000 16000 --steps 6000

Accuracy is not comparable across vocabularies: a smaller one cuts more words into pieces, and a
masked piece such as "##ing" is easier to guess than a whole word. The script prints what makes the
comparison readable: tokens per word of the held-out text, the baseline of each vocabulary, and the
blanks, which are scored word by word (a blank whose accepted words are all cut into pieces cannot be
filled by one [MASK]: the last column counts the blanks each vocabulary can fill at all). Runs are
kept in --runs and reused when finished; several sizes can go side by side, one process each
(OMP_NUM_THREADS=1). Not a test: a script that prints figures.
"""

import argparse
import os

from scored_run import train_and_score

import minibert
from minibert.training.trainer import machine
from minibert.data.blanks import EVERYDAY_BLANKS


def tokens_per_word(tokenizer, documents):
    sentences = [s for doc in documents for s in doc]
    tokens = sum(len(ids) for ids in tokenizer(sentences, add_special_tokens=False)["input_ids"])
    return tokens / sum(len(s.split()) for s in sentences)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab-sizes", type=int, nargs="+", default=[4000, 8000, 16000])
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--runs", default="runs/vocabulary", help="folder of the training runs")
    args = parser.parse_args()
    corpus = minibert.load_corpus()
    _, heldout_docs = minibert.split_corpus(corpus)
    print(f"machine: {machine()}; mlm, tiny preset, {args.steps} steps of 64 x 64 tokens, lr 1e-3, wsd")
    print(f"{'vocabulary':>10} {'tokens/word':>12} {'accuracy %':>11} {'most frequent %':>16} {'loss':>6} "
          f"{'blanks top-1 %':>15} {'top-5 %':>8} {'fillable':>9} {'minutes':>8}")
    for size in args.vocab_sizes:
        run = os.path.join(args.runs, f"mlm-vocab-{size}")
        scores, minutes, tokenizer = train_and_score(run, preset="tiny", steps=args.steps, batch_size=64,
                                                     max_length=64, vocab_size=size,
                                                     eval_every=max(1, args.steps // 4))
        fillable = sum(any(len(tokenizer.tokenize(w)) == 1 for w in words) for _, words in EVERYDAY_BLANKS)
        print(f"{len(tokenizer):>10,} {tokens_per_word(tokenizer, heldout_docs):>12.2f} {scores['mlm_accuracy']:>11.2f} "
              f"{scores['mlm_most_frequent_token_accuracy']:>16.2f} {scores['mlm_loss']:>6.2f} "
              f"{scores['blanks_top1']:>15.0f} {scores['blanks_top5']:>8.0f} "
              f"{fillable:>4} of {len(EVERYDAY_BLANKS):<3} {minutes:>7.1f}", flush=True)


if __name__ == "__main__":
    main()
