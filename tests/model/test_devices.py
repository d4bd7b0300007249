"""Every tensor a model makes takes its inputs' device, so that the same call works on a GPU (Colab) as on
the CPU. Checked on a CPU: under `with torch.device("meta")` a tensor made without a device lands on the
meta device and clashes with the CPU tensors around it, exactly where it would land on the CPU beside
CUDA tensors."""

import itertools

import pytest
import torch

import minibert

CONFIG = dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
              max_position_embeddings=32, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
HEADS = ["BertModel", "BertForMaskedLM", "BertForPreTraining", "BertForCausalLM", "BertForNextSentencePrediction",
         "BertForSequenceClassification"]


def inputs():
    torch.manual_seed(0)
    ids = torch.randint(5, 50, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[0, :2] = 0
    return ids, mask


def on_meta_by_default(call):
    """Run call() with meta as the default device; the model and its inputs stay on the CPU."""
    with torch.device("meta"):
        return call()


@pytest.mark.parametrize("head, masked, attentions, hidden, training",
                         list(itertools.product(HEADS, [False, True], [False, True], [False, True], [False, True])))
def test_a_forward_pass_makes_its_tensors_on_its_inputs_device(head, masked, attentions, hidden, training):
    model = getattr(minibert, head)(minibert.BertConfig(**CONFIG)).train(training)
    ids, mask = inputs()
    out = on_meta_by_default(lambda: model(ids, attention_mask=mask if masked else None,
                                           output_attentions=attentions, output_hidden_states=hidden))
    assert out[0].device.type == "cpu"


@pytest.mark.parametrize("head", ["BertForMaskedLM", "BertForPreTraining", "BertForCausalLM",
                                  "BertForNextSentencePrediction", "BertForSequenceClassification"])
def test_a_training_step_with_labels_makes_its_tensors_on_its_inputs_device(head):
    model = getattr(minibert, head)(minibert.BertConfig(**CONFIG)).train()
    ids, mask = inputs()
    pair = torch.tensor([0, 1])
    labels = {"BertForMaskedLM": dict(labels=ids.masked_fill(mask == 0, -100)),
              "BertForCausalLM": dict(labels=ids.clone()),
              "BertForPreTraining": dict(labels=ids.masked_fill(mask == 0, -100), next_sentence_label=pair),
              }.get(head, dict(labels=pair))
    loss = on_meta_by_default(lambda: model(ids, attention_mask=mask, **labels).loss)
    on_meta_by_default(loss.backward)
    assert loss.device.type == "cpu" and model.get_input_embeddings().weight.grad is not None


@pytest.mark.parametrize("settings", [dict(), dict(do_sample=True, top_k=5, top_p=0.9, temperature=0.7),
                                      dict(num_beams=2), dict(use_cache=False), dict(repetition_penalty=1.3)])
@pytest.mark.parametrize("masked", [False, True])
def test_generation_and_its_cache_make_their_tensors_on_the_prompts_device(settings, masked):
    model = minibert.BertForCausalLM(minibert.BertConfig(**CONFIG)).eval()
    ids, mask = inputs()
    out = on_meta_by_default(lambda: model.generate(ids, attention_mask=mask if masked else None, max_new_tokens=3,
                                                    pad_token_id=0, **settings))
    assert out.device.type == "cpu" and out.shape[1] == 10
    cached = on_meta_by_default(lambda: model(ids, use_cache=True).past_key_values)
    on_meta_by_default(lambda: model(ids[:, -1:], past_key_values=cached, output_attentions=True))
