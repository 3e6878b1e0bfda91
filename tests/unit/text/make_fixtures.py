#!/usr/bin/env python3
"""Trains small tokenizer.json files with the `tokenizers` package, one of each kind
SexpGPU reads, and writes the strings the comparison encodes.

    make_fixtures.py OUT_DIR

Writes OUT_DIR/{bert,gpt2,llama3,llama2,mistral,roberta,assorted,whitespace}.json and OUT_DIR/strings.jsonl. The
corpus and the strings are fixed, so the files are the same on every run.
"""

import json
import random
import sys
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

CORPUS = [
    "The quick brown fox jumps over the lazy dog. It's a dog's life, isn't it?",
    "Tokenizers split text into pieces; models read the pieces' ids.",
    "Naïve café owners résumé: crème brûlée, jalapeño, façade, Ångström.",
    "東京は日本の首都です。北京是中国的首都。서울은 한국의 수도입니다.",
    "Emoji 😀 and flags 🇫🇷 and hands 👍🏽 in 2024, numbers 12345 and 3.14159.",
    "مرحبا بالعالم — שלום עולם — Привет, мир! Γειά σου Κόσμε.",
    "def main():\n\treturn {'a': [1, 2, 3]}  # code with\ttabs\n\n",
    "We're going, they've gone, I'm here, you'll see, he'd know, she's OK.",
    "   leading spaces, trailing spaces   and    runs     of spaces  ",
    "UPPER lower MiXeD case WORDS and hyphen-ated words, e-mail@example.com",
]

SPECIALS = {"bert": ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]}

# The Llama 3 split: contractions (any case), words with one leading non-letter, up to
# three digits, punctuation runs, newlines, spaces.
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def corpus():
    return CORPUS * 20


def byte_level_trainer(vocab_size, special_tokens):
    return trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False, special_tokens=special_tokens,
                               initial_alphabet=pre_tokenizers.ByteLevel.alphabet())


def bert():
    tk = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=24))
    tk.normalizer = normalizers.BertNormalizer(lowercase=True)
    tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tk.train_from_iterator(corpus(), trainers.WordPieceTrainer(vocab_size=400, show_progress=False, special_tokens=SPECIALS["bert"]))
    cls, sep = tk.token_to_id("[CLS]"), tk.token_to_id("[SEP]")
    tk.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    tk.decoder = decoders.WordPiece(prefix="##")
    return tk


def gpt2():
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.post_processor = processors.ByteLevel(trim_offsets=False)
    tk.train_from_iterator(corpus(), byte_level_trainer(500, ["<|endoftext|>"]))
    return tk


def llama3():
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(corpus(), byte_level_trainer(500, ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]))
    bos = tk.token_to_id("<|begin_of_text|>")
    tk.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
        special_tokens=[("<|begin_of_text|>", bos)],
    )
    return tk


def byte_fallback_bpe(pre_tokenizer, normalizer, decoder):
    """A BPE trained on ▁-marked words, with the 256 <0xNN> tokens and byte fallback."""
    trainer_tk = Tokenizer(models.BPE(unk_token="<unk>"))
    trainer_tk.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    trainer_tk.train_from_iterator(
        corpus(),
        trainers.BpeTrainer(vocab_size=450, show_progress=False, special_tokens=["<unk>", "<s>", "</s>"], limit_alphabet=60),
    )
    trained = json.loads(trainer_tk.to_str())["model"]
    vocab = dict(trained["vocab"])
    for b in range(256):
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    merges = [tuple(m.split(" ")) for m in trained["merges"]]
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tk.add_special_tokens(["<unk>", "<s>", "</s>"])
    if normalizer is not None:
        tk.normalizer = normalizer
    if pre_tokenizer is not None:
        tk.pre_tokenizer = pre_tokenizer
    tk.decoder = decoder
    tk.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B:1", special_tokens=[("<s>", tk.token_to_id("<s>"))]
    )
    return tk


def llama2():
    return byte_fallback_bpe(
        None,
        normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]),
        decoders.Sequence(
            [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
        ),
    )


def mistral():
    return byte_fallback_bpe(
        pre_tokenizers.Metaspace(replacement="▁", add_prefix_space=True, prepend_scheme="first"),
        None,
        decoders.Sequence([decoders.Metaspace(replacement="▁", add_prefix_space=True), decoders.ByteFallback(),
                           decoders.Fuse()]),
    )


def roberta():
    """Byte-level BPE with a prefix space, <mask> taking the space before it, RoBERTa's
    post-processor, and truncation and padding on the left."""
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(corpus(), byte_level_trainer(450, ["<s>", "<pad>", "</s>", "<unk>"]))
    tk.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=False)])
    tk.add_tokens([AddedToken("dog's", single_word=True), AddedToken("QUICK", normalized=True)])
    tk.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    tk.enable_truncation(40, direction="left")
    tk.enable_padding(direction="left", pad_id=1, pad_token="<pad>", pad_to_multiple_of=8)
    return tk


def assorted():
    """The other stages: NFKC, lowercase, stripped accents and ends; words, punctuation and
    single digits apart; BPE with a subword prefix and a word-end suffix; BERT's
    post-processor."""
    tk = Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##", end_of_word_suffix="</w>"))
    tk.normalizer = normalizers.Sequence(
        [normalizers.NFKC(), normalizers.NFD(), normalizers.StripAccents(), normalizers.Lowercase(),
         normalizers.Strip(), normalizers.NFC()]
    )
    tk.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation("isolated"),
         pre_tokenizers.Digits(individual_digits=True)]
    )
    tk.decoder = decoders.BPEDecoder(suffix="</w>")
    tk.train_from_iterator(
        corpus(),
        trainers.BpeTrainer(vocab_size=500, show_progress=False, special_tokens=["[UNK]", "[CLS]", "[SEP]"],
                            continuing_subword_prefix="##", end_of_word_suffix="</w>", limit_alphabet=70),
    )
    tk.post_processor = processors.BertProcessing(("[SEP]", 2), ("[CLS]", 1))
    return tk


def whitespace():
    """WordPiece behind the Whitespace pre-tokenizer (runs of word characters, and runs of
    the rest), NFD with the accents kept."""
    tk = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tk.normalizer = normalizers.NFD()
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tk.decoder = decoders.WordPiece(cleanup=False)
    tk.train_from_iterator(corpus(), trainers.WordPieceTrainer(vocab_size=300, show_progress=False,
                                                               special_tokens=["[UNK]"]))
    return tk


def strings():
    """Hand-picked edge cases, then seeded mixes of their pieces: several hundred."""
    fixed = [
        "", " ", "  ", "\t", "\n", "\r\n", " \t \n ", "a", "A", "hello", "Hello world", " hello", "hello ",
        "hello  world", "hello\tworld", "hello\nworld\n\nagain", "It's", "IT'S", "we'RE", "don't", "y'all'd've",
        "naïve café", "Nai\u0308ve cafe\u0301", "Ångström", "ÅNGSTRÖM", "ﬁne ﬂour", "①②③", "ＡＢＣ１２３",
        "東京は日本", "北京是中国的首都", "한국어 텍스트", "日本語とEnglishの混在", "😀", "😀😀😀", "👍🏽", "🇫🇷🇩🇪",
        "👨‍👩‍👧‍👦 family", "e\u0301\u0302\u0303", "\u0301starts with a mark", "مرحبا بالعالم", "שלום עולם",
        "RTL\u200fmark\u200eLTR", "zero\u200bwidth", "soft\u00adhyphen", "nbsp\u00a0here", "ideographic\u3000space",
        "control\u0007bell", "null\u0000byte", "replacement\ufffdchar", "private\ue000use", "unassigned\u0378here", "new emoji \U0001fae8", "ΣΊΣΥΦΟΣ σίσυφος",
        "İstanbul", "straße", "ǅungla", "12345678901234567890", "3.14159", "1,000,000", "$100.00", "100%",
        "a" * 30, "b" * 300, "supercalifragilisticexpialidocious", "x" + "é" * 40, "😀" * 20,
        "[CLS] inside [SEP] text", "[MASK]", "x[MASK]y", "<|endoftext|>", "a<|endoftext|>b", "<|begin_of_text|>hi",
        "<s>", "a</s>b", " <s> ", "hi<s>hi", "<s>hi", "hi <s> hi", "hi</s> hi", "a\x0bb", "a\x85b", "x\u2028y",
        "vertical\x0b\x0c tab", "  \x0b  ", "<unk>", "<s><s>", "[PAD][PAD]", "a <mask> b", "a<mask>", "  <mask>  x", "the dog's bone", "dogs dog's",
        "the QUICK fox", "quick QUICK Quick", "<0x41>", "▁", "▁▁hello", "hello▁world",
        "'s", "'", "''", "\"quoted\"", "(parens) [brackets] {braces}", "a.b,c;d:e!f?g", "--- *** ___",
        "path/to/file.txt", "https://example.com/a?b=c&d=e", "user@example.com", "#hashtag @mention",
        "tab\tseparated\tvalues", "line1\nline2\r\nline3\rline4", "   \n\n   \n", "end with newline\n",
        "ÀÉÎÕÜ àéîõü", "ĳ Ĳ ŉ", "Ⅻ ⅻ", "½ ¼ ¾", "x² y³", "℃ ℉", "™ ©", "…", "—", "«»", "„“", "¿¡",
        "ไทย ภาษา", "हिन्दी भाषा", "தமிழ்", "ქართული", "Ελληνικά", "Русский язык", "Україна",
        "\U00020000\U0002a6d6", "\u4e00\u9fff", "\uf900", "ᄀᄁ", "가각",
    ]
    pieces = [s for s in fixed if s] + [w for line in CORPUS for w in line.split(" ") if w]
    rng = random.Random(46)
    mixed = []
    for _ in range(260):
        n = rng.randint(1, 6)
        seps = [" ", "", "  ", "\t", "\n", " "]
        mixed.append("".join(rng.choice(pieces) + rng.choice(seps) for _ in range(n)))
    # Random characters from the blocks tokenizers treat apart: spaces and controls, Latin
    # with accents, combining marks, Greek, Cyrillic, Hebrew, Arabic, Devanagari, Thai,
    # Hangul, CJK, full-width forms, emoji with joiners and variation selectors.
    blocks = [(0x09, 0x0D), (0x20, 0x7E), (0x80, 0xFF), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF),
              (0x590, 0x5FF), (0x600, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x2000, 0x206F),
              (0x3000, 0x303F), (0x4E00, 0x4E80), (0xAC00, 0xAC80), (0xFE00, 0xFE0F), (0xFF00, 0xFFEF),
              (0x1F300, 0x1F64F), (0x1F900, 0x1F9FF)]
    scrambled = []
    for _ in range(100):
        chars = []
        for _ in range(rng.randint(1, 12)):
            lo, hi = rng.choice(blocks)
            c = chr(rng.randint(lo, hi))
            chars.append(c if not 0xD800 <= ord(c) <= 0xDFFF else "x")
        scrambled.append("".join(chars))
    return fixed + CORPUS + mixed + scrambled


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    kinds = [("bert", bert), ("gpt2", gpt2), ("llama3", llama3), ("llama2", llama2), ("mistral", mistral),
             ("roberta", roberta), ("assorted", assorted), ("whitespace", whitespace)]
    for name, make in kinds:
        make().save(str(out / f"{name}.json"))
    with open(out / "strings.jsonl", "w", encoding="utf-8") as f:
        for s in strings():
            f.write(json.dumps(s) + "\n")


if __name__ == "__main__":
    main()
