from attune_trainer.tiny_tokenizer import build_tiny_tokenizer


def test_roundtrip_arbitrary_text_and_chat_template():
    tok = build_tiny_tokenizer()
    for s in [
        "Hello there, I feel so sad today.",
        "Émotions 😊 — “quotes”\ttabs  and\nnewlines",
        "<think>x</think>ok",
        "",
        "   ",
        "1234567890 !@#$%^&*()",
    ]:
        ids = tok(s, add_special_tokens=False)["input_ids"]
        assert tok.decode(ids) == s
    ids = tok(" feel sad", add_special_tokens=False)["input_ids"]
    assert len(ids) == 2  # common words are single tokens
    text = tok.apply_chat_template(
        [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "hi"}],
        add_generation_prompt=True,
        tokenize=False,
    )
    assert text == "<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|pad|>"


def test_deterministic():
    a, b = build_tiny_tokenizer(), build_tiny_tokenizer()
    assert a.get_vocab() == b.get_vocab()
