"""Generated parallel corpora: Chinese->English from a small grammar, and date normalisation.

Both are seeded and reproducible (``random.Random(seed)`` only). The grammar knows,
for every English word, which Chinese unit it translates (``Pair.align``), so the
alignment a trained attention model learns can be scored against the truth.

Word order, the point of the corpus: a Chinese clause is
``[time] subject [time] [aux] [在 place] verb [了] [object]`` while its English clause is
``subject [aux] verb [object] [place] [time]`` — the time word (昨天 -> yesterday)
moves from the front to the END, the place moves behind the object, articles
("the park", "an apple") have no source word, and measure words (个, 本) have no
target word. Clauses chain with ，+ 然后/而且/但是/所以 into sentences of 3 to ~90 units.
"""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass

# ---------------------------------------------------------------- the lexicon
# subject: Chinese units -> English words (an "_" word has no source unit: an article)
SUBJECTS = [("我", "i"), ("你", "you"), ("他", "he"), ("她", "she"), ("我们", "we"), ("他们", "they"),
            ("老师", "_the teacher"), ("学生们", "_the students"), ("医生", "_the doctor"),
            ("小明", "xiaoming"), ("小红", "xiaohong"), ("我的 朋友", "my friend"), ("妈妈", "mom")]
# time word -> English, and the tenses it allows
TIMES = [("昨天", "yesterday", "past"), ("昨晚", "last night", "past"), ("上周", "last week", "past"),
         ("去年", "last year", "past"), ("今天", "today", "both"), ("今晚", "tonight", "both"),
         ("明天", "tomorrow", "future"), ("下周", "next week", "future"), ("明年", "next year", "future")]
# 在 + place -> preposition [the] noun
PLACES = [("公园", "in _the park"), ("学校", "at school"), ("家", "at home"), ("图书馆", "in _the library"),
          ("商店", "at _the store"), ("超市", "at _the supermarket"), ("北京", "in beijing"),
          ("上海", "in shanghai"), ("餐厅", "in _the restaurant"), ("办公室", "in _the office"),
          ("医院", "at _the hospital"), ("咖啡馆", "in _the cafe"), ("火车站", "at _the station")]
# noun, measure word, singular, plural; a container measure word (杯 cup) makes "a cup of tea"
NOUNS = {"苹果": ("个", "apple", "apples"), "橙子": ("个", "orange", "oranges"), "鸡蛋": ("个", "egg", "eggs"),
         "蛋糕": ("个", "cake", "cakes"), "书": ("本", "book", "books"), "杂志": ("本", "magazine", "magazines"),
         "信": ("封", "letter", "letters"), "电影": ("部", "movie", "movies"), "车": ("辆", "car", "cars"),
         "自行车": ("辆", "bicycle", "bicycles"), "照片": ("张", "photo", "photos"), "地图": ("张", "map", "maps"),
         "衬衫": ("件", "shirt", "shirts"), "歌": ("首", "song", "songs"), "诗": ("首", "poem", "poems"),
         "猫": ("只", "cat", "cats"), "狗": ("只", "dog", "dogs"), "文章": ("篇", "article", "articles"),
         "茶": ("杯", "tea", None), "咖啡": ("杯", "coffee", None), "水": ("瓶", "water", None),
         "牛奶": ("瓶", "milk", None), "米饭": ("碗", "rice", None), "面条": ("碗", "noodles", None),
         "饼干": ("盒", "cookies", None)}
CONTAINERS = {"杯": ("cup", "cups"), "瓶": ("bottle", "bottles"), "碗": ("bowl", "bowls"), "盒": ("box", "boxes")}
ADJECTIVES = [("新", "new"), ("旧", "old"), ("大", "big"), ("小", "small"), ("好", "good")]
NUMBERS = [("一", None), ("两", "two"), ("三", "three"), ("四", "four"), ("五", "five")]
# verb: past, base, objects it takes ("" = intransitive)
VERBS = [("吃", "ate", "eat", "苹果 橙子 鸡蛋 蛋糕 米饭 面条 饼干"), ("喝", "drank", "drink", "茶 咖啡 水 牛奶"),
         ("买", "bought", "buy", "苹果 橙子 蛋糕 书 杂志 车 自行车 地图 衬衫 咖啡 牛奶 饼干 猫 狗"),
         ("读", "read", "read", "书 杂志 信 文章 诗"), ("写", "wrote", "write", "信 文章 诗 歌"),
         ("看", "watched", "watch", "电影"), ("唱", "sang", "sing", "歌"), ("画", "drew", "draw", "猫 狗 地图"),
         ("拍", "took", "take", "照片"), ("卖", "sold", "sell", "车 自行车 书 蛋糕"),
         ("找到", "found", "find", "猫 狗 书 地图 自行车"), ("洗", "washed", "wash", "衬衫 车 苹果"),
         ("做", "made", "make", "蛋糕 米饭 面条"), ("借", "borrowed", "borrow", "书 杂志 自行车"),
         ("修", "fixed", "fix", "车 自行车"), ("走", "left", "leave", ""), ("来", "came", "come", ""),
         ("睡觉", "slept", "sleep", ""), ("笑", "laughed", "laugh", ""), ("哭", "cried", "cry", ""),
         ("游泳", "swam", "swim", ""), ("工作", "worked", "work", ""), ("休息", "rested", "rest", "")]
CONJUNCTIONS = [("然后", "then"), ("而且", "and"), ("但是", "but"), ("所以", "so")]
FUNCTION_WORDS = {"the", "a", "an", "in", "at", "of", "will", "did", "not", "my", ",",
                  "then", "and", "but", "so"}
VOWEL_SOUND = tuple("aeiou")


@dataclass(frozen=True)
class Pair:
    """One source/target pair; ``align[k]`` = the source index target word k translates, or -1."""

    src: tuple[str, ...]
    tgt: tuple[str, ...]
    align: tuple[int, ...]

    def content(self) -> list[bool]:
        """Target words that carry meaning and have a source word (where alignment is scored)."""
        return [a >= 0 and w not in FUNCTION_WORDS for w, a in zip(self.tgt, self.align)]


class _Builder:
    """Collects Chinese units and English words; English words point at a Chinese unit."""

    def __init__(self):
        self.zh: list[str] = []
        self.parts: dict[str, list[tuple[str, int]]] = {}

    def add(self, slot: str, zh: str, en: str, link: list[int] | None = None) -> None:
        """Append Chinese units; English words of the slot link to them ("_word" has no source).

        ``link[k]`` is the index (within ``zh``) of English word k's source; by default
        each English word links to the last Chinese unit of the slot.
        """
        start, units = len(self.zh), zh.split()
        self.zh += units
        words = en.split()
        plain = [w for w in words if not w.startswith("_")]
        link = link or [len(units) - 1] * len(plain)
        out, k = self.parts.setdefault(slot, []), 0
        for w in words:
            if w.startswith("_"):
                out.append((w[1:], -1))
            else:
                out.append((w, start + link[k] if link[k] >= 0 else -1))
                k += 1


def _article(next_word: str) -> str:
    return "an" if next_word.startswith(VOWEL_SOUND) else "a"


def _clause(rng: random.Random, b: _Builder) -> None:
    """One clause into the builder, Chinese in Chinese order, English parts by slot."""
    subj_zh, subj_en = rng.choice(SUBJECTS)
    tense = rng.choice(("past", "future"))
    times = [t for t in TIMES if t[2] in (tense, "both")]
    time = rng.choice(times) if rng.random() < 0.6 else None
    place = rng.choice(PLACES) if rng.random() < 0.5 else None
    if time and rng.random() < 0.25:  # 昨天 我 ... : also grammatical, time before the subject
        b.add("time", time[0], time[1])
        time = None
    n_subj = len(subj_zh.split())
    b.add("subject", subj_zh, subj_en, list(range(n_subj)) if n_subj > 1 else None)
    if time:
        b.add("time", time[0], time[1])
    verb, past, base, objects = rng.choice(VERBS)
    negated = rng.random() < 0.15
    # The auxiliary (会 will, 没 did not) comes before the place in Chinese: 我 会 在 公园 吃
    if tense == "past" and negated:
        b.add("aux", "没", "did not", [0, 0])
    elif tense == "future":
        b.add("aux", "不 会" if negated else "会", "will not" if negated else "will", [1, 0] if negated else [0])
    if place:
        b.add("place", "在 " + place[0], place[1], [0, 1])  # in -> 在, park -> 公园
    if tense == "past" and not negated:
        b.add("verb", f"{verb} 了", past, [0])  # 了 marks the past; it has no English word
    else:
        b.add("verb", verb, base)
    if objects:
        _object(rng, b, rng.choice(objects.split()))


def _object(rng: random.Random, b: _Builder, noun: str) -> None:
    measure, singular, plural = NOUNS[noun]
    container = CONTAINERS.get(measure)
    form = rng.random()
    if form < 0.15:  # bare noun: 喝 了 茶 -> drank tea, 买 了 书 -> bought books
        b.add("object", noun, plural or singular)
        return
    if form < 0.3:  # demonstrative: 这 本 书 -> this book
        det, en = rng.choice((("这", "this"), ("那", "that")))
        if container:
            b.add("object", f"{det} {measure} {noun}", f"{en} {container[0]} _of {singular}", [0, 1, 2])
        else:
            b.add("object", f"{det} {measure} {noun}", f"{en} {singular}", [0, 2])
        return
    num_zh, num_en = rng.choice(NUMBERS)
    many = num_en is not None
    adj = rng.choice(ADJECTIVES) if not container and rng.random() < 0.3 else None
    if container:
        head = container[1] if many else container[0]
        words = [num_en or _article(head), head, "_of", singular]
        b.add("object", f"{num_zh} {measure} {noun}", " ".join(words), [0, 1, 2])
        return
    noun_en = plural if many else singular
    first = adj[1] if adj else noun_en
    words = [num_en or _article(first)] + ([adj[1]] if adj else []) + [noun_en]
    zh = f"{num_zh} {measure} {adj[0]} {noun}" if adj else f"{num_zh} {measure} {noun}"
    b.add("object", zh, " ".join(words), [0, 2, 3] if adj else [0, 2])


def zh_en_pair(rng: random.Random, min_clauses: int = 1, max_clauses: int = 7) -> Pair:
    """One sentence of 1..max_clauses clauses joined by ， + a conjunction."""
    zh: list[str] = []
    tgt: list[tuple[str, int]] = []
    for k in range(rng.randint(min_clauses, max_clauses)):
        b = _Builder()
        if k:
            conj = rng.choice(CONJUNCTIONS)
            b.add("conj", f"， {conj[0]}", f", {conj[1]}", [0, 1])
        _clause(rng, b)
        for slot in ("conj", "subject", "aux", "verb", "object", "place", "time"):  # English order
            tgt += [(w, a + len(zh) if a >= 0 else -1) for w, a in b.parts.get(slot, [])]
        zh += b.zh
    return Pair(tuple(zh), tuple(w for w, _ in tgt), tuple(a for _, a in tgt))


# ---------------------------------------------------------------- dates
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


DATE_FORMATS = [  # each: date -> one written form; slashes are month/day/year (US), dots day.month.year
    lambda d: f"{MONTHS[d.month - 1]} {d.day}, {d.year}",
    lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}",
    lambda d: f"{MONTHS[d.month - 1][:3]} {d.day} {d.year}",
    lambda d: f"{d.day} {MONTHS[d.month - 1][:3].lower()} {d.year}",
    lambda d: f"{DAYS[d.weekday()]}, {MONTHS[d.month - 1]} {d.day}, {d.year}",
    lambda d: f"{DAYS[d.weekday()][:3]} {d.day} {MONTHS[d.month - 1][:3]} {d.year}",
    lambda d: f"the {_ordinal(d.day)} of {MONTHS[d.month - 1]}, {d.year}",
    lambda d: f"{MONTHS[d.month - 1].lower()} {_ordinal(d.day)} {d.year}",
    lambda d: f"{d.month}/{d.day}/{d.year}",
    lambda d: f"{d.month:02d}/{d.day:02d}/{d.year % 100:02d}" if 2000 <= d.year < 2050 else f"{d.month}/{d.day}/{d.year}",
    lambda d: f"{d.day}.{d.month}.{d.year}",
    lambda d: f"{d.year}年{d.month}月{d.day}日",
    lambda d: f"{d.year}{d.month:02d}{d.day:02d}",
]


def date_pair(rng: random.Random) -> Pair:
    """A date from 1950-01-01 to 2049-12-31 in one of many written forms -> ISO 8601, by character."""
    day = datetime.date(1950, 1, 1) + datetime.timedelta(days=rng.randrange(36524))
    text = rng.choice(DATE_FORMATS)(day)
    iso = day.isoformat()
    return Pair(tuple(text), tuple(iso), tuple([-1] * len(iso)))


# ---------------------------------------------------------------- splits
TASKS = {"zh-en": ("unit", "unit"), "dates": ("char", "char")}  # task -> (source, target) vocab kinds
GENERATED = "generated"  # how a card's "data" line starts when its pairs came from ``generate`` (a grammar)


@dataclass
class Splits:
    """Train / validation / test pairs of one task; held-out sources never occur in train."""

    task: str
    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]
    seed: int
    kinds: tuple[str, str] | None = None  # (source, target) vocab kinds; None: TASKS[task]
    origin: str = ""  # where the pairs came from when not generated (seqviz.seq2seq.hf_data)

    def describe(self) -> str:
        origin = self.origin or f"{GENERATED} '{self.task}' pairs"
        return (f"{origin}, seed {self.seed}: {len(self.train)} train, "
                f"{len(self.valid)} validation, {len(self.test)} test (held-out sources not in train)")


def generate(task: str, n: int, seed: int, max_clauses: int = 7) -> list[Pair]:
    """``n`` pairs of a task, the same for the same seed on every machine."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose from {', '.join(TASKS)}")
    rng = random.Random(f"{task}:{seed}")
    if task == "dates":
        return [date_pair(rng) for _ in range(n)]
    return [zh_en_pair(rng, 1, max_clauses) for _ in range(n)]


def make_splits(task: str, n_train: int, n_valid: int, n_test: int, seed: int = 0,
                max_clauses: int = 7) -> Splits:
    train = generate(task, n_train, seed, max_clauses)
    seen = {p.src for p in train}
    held: list[Pair] = []
    stream = 1
    while len(held) < n_valid + n_test:  # fresh streams until enough unseen sources
        for p in generate(task, 2 * (n_valid + n_test), seed + 1000 * stream, max_clauses):
            if p.src not in seen and len(held) < n_valid + n_test:
                seen.add(p.src)
                held.append(p)
        stream += 1
    return Splits(task, train, held[:n_valid], held[n_valid:], seed)
