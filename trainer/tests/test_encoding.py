"""Samples as token ids: only completion tokens carry loss; truncation keeps the completion."""

from attune_trainer.contract.schemas import Sample
from attune_trainer.encoding import encode_sample, pad_batch
from attune_trainer.update import losses as L


def _sample(prompt: list[dict], completion: str) -> Sample:
    return Sample.model_validate({"prompt": prompt, "completion": completion, "reward": 0.0})


def test_prompt_tokens_are_masked(engine):
    from conftest import tiny_run

    engine.create_run(tiny_run("m"))
    run = engine.loaded["m"]
    tok = run.tokenizer
    prompt = [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "I feel sad"}]
    enc = encode_sample(tok, _sample(prompt, "I hear you"), run.hp, tok.eos_token_id)
    comp = tok("I hear you", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    assert enc.ids[enc.n_prompt :] == comp
    text = tok.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
    assert enc.ids[: enc.n_prompt] == tok(text, add_special_tokens=False)["input_ids"]
    enc2 = encode_sample(tok, _sample(prompt, "ok"), run.hp, tok.eos_token_id)
    ids, attn, mask = pad_batch([enc, enc2], tok.pad_token_id, engine.device)
    assert mask.sum(1).tolist() == [enc.n_completion, enc2.n_completion]
    # the mask selects exactly the positions predicting completion tokens
    assert ids[0, 1:][mask[0] > 0].tolist() == comp
    # gradient of a masked token loss is zero at every prompt and padding position
    logits = run.policy(input_ids=ids, attention_mask=attn).logits[:, :-1].detach().requires_grad_(True)
    lp, _ = L.token_logprobs(logits, ids[:, 1:])
    ((-lp) * mask).sum().backward()
    g = logits.grad.abs().sum(-1)
    assert (g[mask == 0] == 0).all() and (g[mask > 0] > 0).all()


def test_truncation_keeps_the_completion(engine):
    from conftest import tiny_run

    engine.create_run(tiny_run("t", max_length=32))
    run = engine.loaded["t"]
    tok = run.tokenizer
    enc = encode_sample(
        tok, _sample([{"role": "user", "content": "word " * 200}], "I hear you"), run.hp, tok.eos_token_id
    )
    assert len(enc.ids) == 32
    assert enc.ids[enc.n_prompt :] == tok("I hear you", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
