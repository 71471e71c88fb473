"""The page registry: one line per page drives the navigation, the AppTest pass and the browser pass.

To add a page: write what it draws as declared views in the library (``seqviz/views/<topic>.py``, ``@declare``:
``(model, **choices) -> View``); write ``pages/<name>.py``, which reads its widgets, gets a ``ModelRef`` from
``appkit.sidebar.deferred_picker("<model_type>")``, draws ``appkit.cache.view(views.<fn>, ref, **choices)`` and
formats its captions from the view's facts (a topic that is several things is several tabs or pages, each within
its ``budget`` of code lines, which tests/app/test_pages.py checks); then append one ``PageSpec(...)`` to ``PAGES``.
``app.py`` builds ``st.navigation`` from it, ``tests/app/test_pages.py`` runs every entry through AppTest and
``tests/browser/test_browser.py`` opens every entry in chromium and moves its ``main_control``. A listed page whose
file does not exist yet is skipped everywhere, so the line can land before the page does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from appkit.i18n import N_

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = (N_("Start"), N_("Lessons"), N_("Recurrent models"), N_("Embeddings"), N_("Seq2seq"))  # shown with _()
# Widget kinds the browser and AppTest passes know how to move (see tests/browser/test_browser.py).
CONTROL_KINDS = ("slider", "select_slider", "selectbox", "radio", "checkbox", "toggle",
                 "number_input", "text_input", "text_area", "button", "segmented_control")


@dataclass(frozen=True)
class PageSpec:
    """One page of the app."""

    path: str  # file name under pages/, e.g. "language_model.py"
    title: str  # shown in the navigation and the browser tab (marked N_, shown with _())
    icon: str  # an emoji or ":material/<name>:"
    section: str  # one of SECTIONS: the navigation group
    model_type: str | None  # config.json model_type the page's picker offers; None = no model
    main_control: tuple | None = None  # (kind in CONTROL_KINDS, label[, text to type, else " and more" is added])
    expects: tuple[str, ...] = ()  # AppTest element types present when a checkpoint exists: ("vega_lite_chart", ...)
    summary: str = ""  # one sentence (marked N_, shown with _()) for the zoo's "what each page shows" guide
    default: bool = False  # the landing page (exactly one)
    budget: int = 175  # code lines at most (no blank, comment or docstring line): tests/app/test_pages.py checks it

    def __post_init__(self) -> None:
        if self.section not in SECTIONS:
            raise ValueError(f"{self.path}: section must be one of {SECTIONS}, got {self.section!r}")
        if self.main_control is not None and self.main_control[0] not in CONTROL_KINDS:
            raise ValueError(f"{self.path}: main_control kind must be one of {CONTROL_KINDS}")

    @property
    def file(self) -> Path:
        return ROOT / "pages" / self.path

    @property
    def exists(self) -> bool:
        return self.file.is_file()

    @property
    def url_path(self) -> str:
        """The page's URL segment, as Streamlit derives it from the file name; the default page's is "" (it lives at
        the root: /zoo would open a "Page not found" dialog)."""
        return "" if self.default else Path(self.path).stem


PAGES: list[PageSpec] = [
    PageSpec("zoo.py", N_("Model zoo"), ":material/grid_view:", "Start", None,
             main_control=("selectbox", "Sort by"), expects=("markdown",), default=True,
             summary=N_("every shipped checkpoint: architecture, size, corpus, validation loss, "
                     "perplexity, and where and how long it trained")),
    PageSpec("language_model.py", N_("Language model"), ":material/text_fields:", "Recurrent models",
             "recurrent_lm", main_control=("slider", "Temperature"),
             expects=("metric", "vega_lite_chart"),
             summary=N_("how surprised the model is by each token of a text (loss in nats), the "
                     "text's perplexity, sampled continuations, and RNN vs GRU vs LSTM side by side")),
    PageSpec("word2vec.py", N_("word2vec"), ":material/hub:", "Embeddings", "word2vec",
             main_control=("text_input", "c (... as c is to ?)", "prince"), expects=("vega_lite_chart", "metric"),
             summary=N_("king − man + woman ≈ queen with 3CosAdd/3CosMul, the same query on CBOW vs skip-gram, "
                     "a word's neighbours, and the he − she axis")),
    PageSpec("word_map.py", N_("Word map"), ":material/bubble_chart:", "Embeddings", "word2vec",
             main_control=("radio", "Projection"), expects=("vega_lite_chart", "metric"),
             summary=N_("the vocabulary in 2-D (t-SNE, PCA, or a PCA of one analogy) with the analogy's offset "
                     "arrows, its trustworthiness, and TensorBoard projector files")),
    PageSpec("word2vec_evaluation.py", N_("Word-vector evaluation"), ":material/fact_check:", "Embeddings",
             "word2vec", main_control=("button", "Recompute on these vectors"), expects=("metric",),
             summary=N_("the Google analogies (with the nearest-to-c control), WordSim-353 and SimLex-999, each "
                     "with its coverage, from the checkpoint's card or recomputed")),
    PageSpec("attention.py", N_("Attention"), ":material/translate:", "Seq2seq", "seq2seq",
             main_control=("slider", "Temperature"), expects=("vega_lite_chart",),
             summary=N_("a typed sentence translated live with its Bahdanau alignment (temperature 0.1-5, one "
                     "target word's weights, the entropy of each), on seqviz's, transformers' or your own "
                     "encoder-decoder")),
    PageSpec("bleu_length.py", N_("BLEU by length"), ":material/show_chart:", "Seq2seq", "seq2seq",
             main_control=("button", "Measure BLEU by length now"), expects=("vega_lite_chart",),
             summary=N_("the bottleneck: BLEU against source length with and without attention, as stored with "
                     "each checkpoint or measured now on its held-out pairs or your own pairs file")),
    PageSpec("trajectories.py", N_("Hidden-state trajectories"), ":material/timeline:", "Recurrent models",
             "recurrent_lm", main_control=("radio", "View"), expects=("vega_lite_chart",),
             summary=N_("the path h_t walks while the model reads, in a PCA/t-SNE space fitted once on held-out "
                     "text; several texts overlaid, RNN vs GRU vs LSTM, over training, padding and masks")),
    PageSpec("gates.py", N_("Gate activations"), ":material/tune:", "Recurrent models", "recurrent_lm",
             main_control=("slider", "Position"), expects=("vega_lite_chart",),
             summary=N_("token x unit gate heatmaps, per-token gate means, the forget product (what the memory "
                     "keeps, and for how long) and parameter counts")),
    PageSpec("units.py", N_("Single units"), ":material/scatter_plot:", "Recurrent models", "recurrent_lm",
             main_control=("select_slider", "A gate is saturated below / above"), expects=("vega_lite_chart",),
             summary=N_("Karpathy-style saturation of every unit, one unit on your text and the text features units "
                     "follow, LSTMVis pattern search over the held-out corpus")),
    PageSpec("interventions.py", N_("Switch units off"), ":material/power_settings_new:", "Recurrent models",
             "recurrent_lm", main_control=("selectbox", "Layer"), expects=("vega_lite_chart",),
             summary=N_("what units do, shown by changing them: switch chosen units off (zero or their mean) over "
                     "a span, or carry their state in from another text, against k random units")),
    PageSpec("gradient_flow.py", N_("Gradient flow"), ":material/trending_down:", "Recurrent models",
             "recurrent_lm", main_control=("slider", "Tokens"), expects=("vega_lite_chart",),
             summary=N_("how ‖∂L_t/∂h_k‖ decays with the distance t − k on the real RNN, GRU and LSTM, per layer "
                     "and over training; the LSTM's cell-state path; which input tokens a prediction reads")),
    PageSpec("exploding_vanishing.py", N_("Exploding and vanishing"), ":material/science:", "Recurrent models",
             "recurrent_lm", main_control=("select_slider", "Spectral radius ρ of W_hh"), expects=("vega_lite_chart",),
             summary=N_("W_hh rescaled to a spectral radius ρ on both sides of 1, what-ifs on W_hh and the forget "
                     "bias, clipping on a small RNN trained twice, and the chapter's worked examples")),
    PageSpec("exposure_bias.py", N_("Exposure bias"), ":material/error_med:", "Seq2seq", "seq2seq",
             main_control=("slider", "Inject at position"), expects=("vega_lite_chart", "metric"),
             budget=160, summary=N_("teacher-forced vs free-running decoding of one sentence, an injected error "
                                    "that recovers or snowballs, and error rates by position over the held-out set "
                                    "or your own pairs (teacher forcing vs scheduled sampling, across training)")),
    PageSpec("decoding.py", N_("Decoding strategies"), ":material/account_tree:", "Seq2seq", "seq2seq",
             main_control=("slider", "Beam size k"), expects=("vega_lite_chart",),
             summary=N_("beam search on one sentence as a tree (where the reference falls off the beam), and BLEU "
                     "and time per sentence of greedy, beam and sampling over held-out pairs or your own")),
    PageSpec("exposure_bias_lm.py", N_("Exposure bias (LM)"), ":material/error_med:", "Recurrent models",
             "recurrent_lm", main_control=("slider", "Prompt (tokens)"), expects=("vega_lite_chart", "metric"),
             summary=N_("a character model continuing a real text on its own vs reading it: log p of the real next "
                     "character, KL and state distance per position, and where its own text first departs")),
    PageSpec("lessons.py", N_("Lessons"), ":material/school:", "Lessons", None,
             main_control=("button", "Next →"), expects=("radio",),
             summary=N_("the seeds' lessons as guided steps (the station game S0 → S9, attention and teacher "
                     "forcing): predict first, one live view on the shipped models, what to notice, presenter mode")),
]


def available_pages() -> list[PageSpec]:
    """The entries whose page file exists, in PAGES order."""
    return [p for p in PAGES if p.exists]


def by_section() -> dict[str, list[PageSpec]]:
    """Existing pages grouped by section, sections in SECTIONS order, empty ones dropped."""
    groups: dict[str, list[PageSpec]] = {s: [] for s in SECTIONS}
    for page in available_pages():
        groups[page.section].append(page)
    return {s: ps for s, ps in groups.items() if ps}
