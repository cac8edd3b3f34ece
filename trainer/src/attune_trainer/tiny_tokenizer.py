"""A small byte-level BPE tokenizer built locally (no downloads) for the `tiny-random` model.

Every byte has a token, so any text (English or not) round-trips. On top of the 256 byte tokens,
a few hundred common English words (with their leading space, GPT-2 style "Ġword") are single
tokens, built from hand-made merges so the result is fully deterministic. The chat template is
ChatML (`<|im_start|>role\\n...<|im_end|>\\n`), like Qwen2.5 and SmolLM2.
"""

from __future__ import annotations

from tokenizers import Tokenizer, decoders, models, pre_tokenizers

PAD = "<|pad|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIALS = [PAD, IM_START, IM_END]

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# Common English words, including the vocabulary of emotional support dialogues.
WORDS = """
the be to of and a in that have i it for not on with he as you do at this but his by from they
we say her she or an will my one all would there their what so up out if about who get which go
me when make can like time no just him know take people into year your good some could them see
other than then now look only come its over think also back after use two how our work first well
way even new want because any these give day most us is are was were been has had did does am
feel feeling felt sad happy angry upset tired lonely alone worried anxious afraid scared hurt
sorry thank thanks please help understand hear listen really very much more so hard easy okay
fine great bad better worse love hate friend family mother father mom dad sister brother partner
job boss work school life today tomorrow yesterday night morning week month sometimes always
never maybe yes why where here there talk tell said told ask asked need needs want wants try
trying sounds seems must should might let lets feel together support care cares calm breathe
stress stressed pain heart mind thoughts emotions emotion hope hopeful proud glad excited
nervous frustrated overwhelmed ashamed guilty jealous confused lost stuck safe kind gentle
honest right wrong sure enough little bit lot things thing something nothing everything
anything someone everyone anyone nobody still again already yet ever every each many few
home house money sleep eat food body health doctor week weekend plan plans goal goals future
past moment moments day days hours minutes words say saying mean means meant matter matters
that's it's i'm you're don't can't won't didn't doesn't isn't i've you've i'll you'll
what's how's let's there's
""".split()

CAPITALIZED = [
    "I",
    "You",
    "It",
    "That",
    "The",
    "This",
    "What",
    "How",
    "Why",
    "We",
    "My",
    "Thank",
    "Sorry",
    "Yes",
    "No",
    "Hello",
    "Hi",
    "Maybe",
    "Please",
    "Okay",
    "So",
    "And",
    "But",
]


def _byte_alphabet() -> list[str]:
    return sorted(pre_tokenizers.ByteLevel.alphabet())


def build_tiny_tokenizer():
    """Return a transformers fast tokenizer with a chat template; deterministic, offline."""
    from transformers import PreTrainedTokenizerFast

    vocab: dict[str, int] = {}
    for tok in SPECIALS:
        vocab[tok] = len(vocab)
    for ch in _byte_alphabet():
        vocab[ch] = len(vocab)

    # words -> byte-level strings with the leading space ("Ġ"); merges build each word left to
    # right, ordered by length so that every chain of merges can complete.
    seen: set[str] = set()
    targets: list[str] = []
    for w in list(dict.fromkeys(WORDS + CAPITALIZED)):
        bw = "Ġ" + "".join(_BYTE_TO_CHAR[b] for b in w.encode("utf-8"))
        if bw not in seen:
            seen.add(bw)
            targets.append(bw)
    merges_by_len: dict[int, list[tuple[str, str]]] = {}
    merged: set[str] = set()
    for bw in targets:
        for k in range(2, len(bw) + 1):
            prefix = bw[:k]
            if prefix in merged:
                continue
            merged.add(prefix)
            merges_by_len.setdefault(k, []).append((bw[: k - 1], bw[k - 1]))
    merges: list[tuple[str, str]] = []
    for k in sorted(merges_by_len):
        for a, b in merges_by_len[k]:
            merges.append((a, b))
            vocab[a + b] = len(vocab)

    model = models.BPE(vocab=vocab, merges=merges)
    tk = Tokenizer(model)
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens(SPECIALS)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk,
        pad_token=PAD,
        eos_token=IM_END,
        bos_token=None,
        unk_token=None,
        model_max_length=2048,
    )
    tok.chat_template = CHAT_TEMPLATE
    return tok


def _bytes_to_unicode() -> dict[int, str]:
    # GPT-2's reversible byte -> printable unicode map (as used by tokenizers' ByteLevel).
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


_BYTE_TO_CHAR = _bytes_to_unicode()
