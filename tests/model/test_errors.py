"""Bad input gets a sentence that names the problem, not an IndexError from deep inside torch."""

import pytest
import torch

import minibert


@pytest.fixture(scope="module")
def models():
    torch.manual_seed(0)
    config = minibert.BertConfig.tiny(vocab_size=50, max_position_embeddings=16)
    return {cls: cls(config).eval() for cls in (minibert.BertModel, minibert.BertForMaskedLM,
                                                 minibert.BertForPreTraining, minibert.BertForCausalLM,
                                                 minibert.BertForNextSentencePrediction)}


ids = torch.randint(1, 50, (2, 8))


@pytest.mark.parametrize("bad, error, message", [
    (dict(input_ids=torch.tensor([[1, 2, 50]])), ValueError, "outside 0..49.*vocab_size=50"),
    (dict(input_ids=torch.tensor([[1, -3, 2]])), ValueError, "contains -3"),
    (dict(input_ids=torch.randint(1, 50, (1, 17))), ValueError, "17 tokens.*max_position_embeddings=16"),
    (dict(input_ids=ids.float()), TypeError, "integer ids"),
    (dict(input_ids=ids[0]), ValueError, r"shape \(batch, seq_len\)"),
    (dict(input_ids=ids, attention_mask=torch.ones(2, 7)), ValueError, "attention_mask has shape"),
    (dict(input_ids=ids, token_type_ids=torch.full((2, 8), 2)), ValueError, "type_vocab_size=2"),
    (dict(input_ids=ids, token_type_ids=torch.zeros(2, 5, dtype=torch.long)), ValueError, "token_type_ids has shape"),
    (dict(), ValueError, "exactly one of input_ids or inputs_embeds"),
])
def test_bad_inputs_raise_clear_errors(models, bad, error, message):
    for model in models.values():
        with pytest.raises(error, match=message):
            model(**bad)


def test_wrong_labels_raise_clear_errors(models):
    mlm, pre, causal, nsp = (models[c] for c in (minibert.BertForMaskedLM, minibert.BertForPreTraining,
                                                  minibert.BertForCausalLM, minibert.BertForNextSentencePrediction))
    with pytest.raises(ValueError, match=r"labels has shape \(2, 7\).*\(2, 8\)"):
        mlm(input_ids=ids, labels=ids[:, 1:])
    with pytest.raises(ValueError, match="labels contains 77"):
        mlm(input_ids=ids, labels=torch.full_like(ids, 77))
    with pytest.raises(ValueError, match="labels has shape"):
        causal(input_ids=ids[:, :-1], labels=ids[:, 1:].reshape(-1))
    with pytest.raises(ValueError, match="at least 2 tokens"):
        causal(input_ids=ids[:, :1], labels=ids[:, :1])
    with pytest.raises(ValueError, match=r"0 = IsNext, 1 = NotNext\) contains 2"):
        nsp(input_ids=ids, labels=torch.tensor([0, 2]))
    with pytest.raises(ValueError, match="next_sentence_label.*shape"):
        pre(input_ids=ids, next_sentence_label=torch.tensor([0, 1, 1]))
    with pytest.raises(TypeError, match="integer class ids"):
        mlm(input_ids=ids, labels=ids.float())


def test_bad_configs_raise_clear_errors():
    with pytest.raises(ValueError, match="multiple of num_attention_heads"):
        minibert.BertConfig(hidden_size=100, num_attention_heads=3)
    with pytest.raises(ValueError, match="hidden_act 'tanh' is not supported"):
        minibert.BertConfig(hidden_act="tanh")
    with pytest.raises(ValueError, match="needs is_decoder=True"):
        minibert.BertConfig(add_cross_attention=True)
    with pytest.raises(ValueError, match="unknown preset 'huge'"):
        minibert.BertConfig.preset("huge")
    with pytest.raises(TypeError, match=r"config must be a BertConfig \(minibert.s or transformers.\), got dict"):
        minibert.BertModel({"hidden_size": 128})


def test_fill_mask_without_a_mask_token_says_so(models):
    class Tok:  # just enough of a tokenizer to reach the check
        mask_token, mask_token_id, pad_token_id = "[MASK]", 4, 0

        def __call__(self, *args, **kwargs):
            return {"input_ids": torch.tensor([[2, 7, 8, 3]]), "attention_mask": torch.ones(1, 4, dtype=torch.long),
                    "token_type_ids": torch.zeros(1, 4, dtype=torch.long)}
    with pytest.raises(ValueError, match=r"at least one \[MASK\]"):
        models[minibert.BertForMaskedLM].fill_mask(Tok(), "no mask here")


def test_sampling_settings_are_checked():
    logits = torch.zeros(1, 5)
    for temperature in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
            minibert.sample_next_token(logits, temperature=temperature)
    with pytest.raises(ValueError, match=r"top_p must be in \(0, 1\]"):
        minibert.sample_next_token(logits, top_p=1.5)


def test_multi_label_targets_are_named_as_such():
    model = minibert.BertForSequenceClassification(minibert.BertConfig(vocab_size=30, hidden_size=8, num_labels=3,
                                                                       num_hidden_layers=1, num_attention_heads=2,
                                                                       intermediate_size=16))
    with pytest.raises(ValueError, match=r"multi-label targets: give them as floats \(labels.float\(\)\), or set "
                                         r"config.problem_type='multi_label_classification'"):
        model(torch.randint(5, 30, (2, 6)), labels=torch.tensor([[1, 0, 1], [0, 1, 0]]))
