"""Lesson files (``seqviz/lessons/data/*.toml``) read and checked: a lesson is a list of steps, each a view.

A step names a goal, a predict-first question whose options are right when a boolean number of
the view says so (``when``), one view with its fixed ``params`` (a declared view of ``seqviz.views.registry`` by
its name, ``gradients.scalar_rnn``, with the ``choice`` its control sets; or a ``seqviz.lessons.views`` adapter),
the one control that moves it, "what to notice" templates filled from the view's numbers, an optional
``slip`` (shown when the view's ``slip`` number is true: where the seed's own table is wrong) and a
link to the full page. English text in the file is the msgid; the app translates it.
"""

from __future__ import annotations

import string
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode


DATA = Path(__file__).with_name("data")
KINDS = ("slider", "select_slider", "selectbox", "radio")
# The adapters a step may name besides the declared views: seqviz.lessons.views.VIEWS (a test holds the two equal),
# listed here so that reading
# the lessons, as the lesson page does before it shows anything, needs no torch.
VIEW_NAMES = ("padding", "clipping", "gate_means", "memory", "switch_off", "three_cells", "perplexity", "analogy",
              "bottleneck", "alignment", "alignment_map", "injection", "memory_race", "decay_by_token")
TEXT_FIELDS = ("title", "summary", "goal", "question", "text", "notice", "slip", "label", "seed")


class LessonError(ValueError):
    """A lesson file that cannot be used, with the file and the reason."""


@dataclass(frozen=True)
class Control:
    kind: str  # one of KINDS
    label: str  # msgid
    default: object
    options: tuple = ()  # select_slider / selectbox / radio
    min: float | None = None  # slider
    max: float | None = None
    step: float | None = None

    def valid(self, value) -> bool:
        if self.kind == "slider":
            return isinstance(value, (int, float)) and self.min <= value <= self.max
        return value in self.options


@dataclass(frozen=True)
class Link:
    page: str  # url_path of the full page
    model_type: str | None = None  # the sidebar picker's query parameter
    checkpoint: str | None = None  # "{value}": the control's value names the checkpoint
    control: str | None = None  # the page's widget key that takes the control's value
    params: dict = field(default_factory=dict, hash=False)  # other widget keys -> values ("{name}": a view number)

    def query(self, value, numbers: dict | None = None) -> dict:
        """The page's widget keys -> values; a string param with ``{name}`` is filled from the view's ``numbers``."""
        q = {k: v.format(**(numbers or {})) if isinstance(v, str) and "{" in v else v for k, v in self.params.items()}
        if self.control:
            q[self.control] = value
        if self.model_type and self.checkpoint:
            q[self.model_type] = value if self.checkpoint == "{value}" else self.checkpoint
        return q

    def url(self, value, lang: str | None = None, numbers: dict | None = None) -> str:
        q = self.query(value, numbers) | ({"lang": lang} if lang and lang != "en" else {})
        return f"/{self.page}?{urlencode({k: _plain(v) for k, v in q.items()})}"


def _plain(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


@dataclass(frozen=True)
class Step:
    title: str
    goal: str
    view: str
    models: tuple  # checkpoint names the view gets
    control: Control
    question: str
    options: tuple  # ((text, when), ...)
    notice: tuple  # templates
    link: Link
    params: dict = field(default_factory=dict, hash=False)
    slip: str = ""
    station: str = ""  # "S4" in the station game
    cards: tuple = ()  # checkpoint names whose card.json the view reads
    notice_when: tuple = ()  # per note: the boolean number that must be true for it to show ("" = always)
    choice: str = ""  # a declared view's choice the control sets (the numbers are then the view's own facts)
    table: bool = False  # a declared view's table shown beside its chart

    def asked_about(self, value) -> dict:
        """What the question may name before the view is shown (its placeholders): the control's ``value``,
        the step's params, ``at`` = the character of the ``text`` param at position ``value`` (⏎ for a
        newline, ␣ for a space), and for a param that maps control values, its entry for ``value``."""
        facts = {"value": value, **{k: v for k, v in self.params.items() if not isinstance(v, dict)}}
        for name, table in self.params.items():
            if isinstance(table, dict) and str(value) in table:
                facts[name] = table[str(value)]
        text = self.params.get("text")
        if isinstance(text, str) and isinstance(value, int) and 0 <= value < len(text):
            facts["at"] = {"\n": "⏎", " ": "␣"}.get(text[value], text[value])
        return facts

    def notes_shown(self, numbers: dict) -> tuple:
        """The note templates the view's numbers call for: a note with a ``when`` only where that number is true."""
        whens = self.notice_when or ("",) * len(self.notice)
        return tuple(t for t, when in zip(self.notice, whens) if not when or numbers.get(when))


@dataclass(frozen=True)
class Lesson:
    id: str
    title: str
    summary: str
    seed: str  # which seed it follows (shown)
    steps: tuple


def _step(raw: dict, where: str) -> Step:
    try:
        c = raw["control"]
        control = Control(c["kind"], c["label"], c["default"], tuple(c.get("options", ())), c.get("min"),
                          c.get("max"), c.get("step"))
        lk = raw["link"]
        link = Link(lk["page"], lk.get("model_type"), lk.get("checkpoint"), lk.get("control"), lk.get("params", {}))
        step = Step(raw["title"], raw["goal"], raw["view"], tuple(raw.get("models", ())), control,
                    raw["question"], tuple((o["text"], o["when"]) for o in raw["options"]),
                    tuple(n if isinstance(n, str) else n["text"] for n in raw["notice"]),
                    link, raw.get("params", {}), raw.get("slip", ""), raw.get("station", ""),
                    tuple(raw.get("cards", ())), tuple("" if isinstance(n, str) else n["when"] for n in raw["notice"]),
                    raw.get("choice", ""), bool(raw.get("table", False)))
    except KeyError as e:
        raise LessonError(f"{where}: missing field {e.args[0]!r}") from None
    if step.view not in VIEW_NAMES:
        _check_declared(step, where)
    if control.kind not in KINDS:
        raise LessonError(f"{where}: control kind must be one of {KINDS}")
    if not control.valid(control.default):
        raise LessonError(f"{where}: the control's default {control.default!r} is outside its range")
    if not 2 <= len(step.options) <= 4 or not 2 <= len(step.notice) + bool(step.slip) <= 4:
        raise LessonError(f"{where}: a step has 2-4 options and 2-3 notes")
    try:
        step.question.format(**step.asked_about(control.default))
    except (KeyError, IndexError, ValueError) as e:
        raise LessonError(f"{where}: the question names {e} that it cannot know before the view") from None
    return step


def quoted(step: Step) -> set[str]:
    """Every number a step reads of its view: the notes' and the slip's placeholders, the options' and notes' ``when``."""
    names = {field.split(".")[0].split("[")[0] for text in (*step.notice, step.slip)
             for _, field, _, _ in string.Formatter().parse(text) if field}
    return names | {when for _, when in step.options} | {w for w in step.notice_when if w} | ({"slip"} if step.slip else set())


def _check_declared(step: Step, where: str) -> None:
    """A step on a declared view: its choice and params are the view's choices, and every number it quotes is one of
    the view's declared facts (a renamed fact is refused here, when the lessons load, not when a visitor opens it)."""
    from seqviz.views.registry import named

    try:
        view = named(step.view)
    except ValueError:
        raise LessonError(f"{where}: unknown view {step.view!r}") from None
    takes = set(view.choices) | ({"text"} if "ids" in view.choices else set())
    if step.choice not in view.choices:
        raise LessonError(f"{where}: {view.name}'s control sets one of {', '.join(view.choices)}, not {step.choice!r}")
    if set(step.params) - takes:
        raise LessonError(f"{where}: {view.name} takes no {', '.join(sorted(set(step.params) - takes))}")
    facts = view.fact_names()
    if facts is None:
        raise LessonError(f"{where}: {view.name} declares no facts for a lesson to quote")
    missing = quoted(step) - facts
    if missing:
        raise LessonError(f"{where}: quotes {', '.join(sorted(missing))}, which {view.name} does not have "
                          f"(its facts: {', '.join(sorted(facts))})")


def read_lesson(path: Path) -> Lesson:
    """One lesson file; LessonError (file and reason) when it is not a usable lesson."""
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise LessonError(f"{Path(path).name}: {e}") from None
    steps = tuple(_step(s, f"{Path(path).name} step {i + 1}") for i, s in enumerate(raw.get("steps", ())))
    if not steps:
        raise LessonError(f"{Path(path).name}: a lesson needs at least one step")
    return Lesson(raw.get("id", Path(path).stem), raw["title"], raw.get("summary", ""), raw.get("seed", ""), steps)


def lessons(folder: Path = DATA) -> dict[str, Lesson]:
    """Every lesson under ``folder`` by id, in file-name order."""
    found = [read_lesson(p) for p in sorted(Path(folder).glob("*.toml"))]
    return {lesson.id: lesson for lesson in found}


def texts(raw) -> list[str]:
    """Every user-visible English string of a parsed lesson file (the msgids), in file order."""
    out = []
    if isinstance(raw, dict):
        for k, v in raw.items():
            if k in TEXT_FIELDS and isinstance(v, str) and v:
                out.append(v)
            elif k in TEXT_FIELDS and isinstance(v, list):
                out.extend(x for n in v for x in ([n] if isinstance(n, str) else texts(n)))  # {text, when}
            elif k not in ("params",):
                out.extend(texts(v))
    elif isinstance(raw, list):
        for v in raw:
            out.extend(texts(v))
    return out
