"""Hidden-state trajectories: the path h_t walks while a model reads, in a space fitted once on a reference sample."""

import streamlit as st

from appkit import cache as cm
from appkit.draw import export_buttons, show, view_button
from appkit.i18n import N_, _, error_lead
from appkit.widgets import lazy_tabs
from appkit.sidebar import deferred_picker
from appkit.state import follow_link, keep_option
from seqviz import inputs as tx
from seqviz.export import state_line
from seqviz.introspect.projection import METHODS, metadata_tsv, points_csv, tensors_tsv
from seqviz.refs import classic_cells, snapshots
from seqviz.tables import readable
from seqviz.views import trajectories as views


st.title(_("Hidden-state trajectories"))
st.caption(_("Each token moves the hidden state h_t. The states are projected to 2-D (or 3-D) with a projection "
             "fitted once on a reference sample of held-out text and kept, so every text lands in the same space."))

picked = deferred_picker("recurrent_lm")
if picked is None:
    st.stop()
ref = picked.ref
info = picked.info()  # config, tokenizer, card: no torch while the first charts come shipped
cfg = info.config
exports = view_button("trajectories", f"Hidden-state trajectories · {ref.label}", info.card)
DEFAULT = f"\n{tx.SEPARATOR}\n".join(views.DEFAULT_TEXTS)
raw = st.text_area(_("Texts (several: separate them with a line holding only {separator})").format(
                   separator=tx.SEPARATOR), DEFAULT, key="traj_text", height=150, bind="query-params",
                   help=_("Each text is read from an empty state; up to {n:,} tokens each.").format(n=tx.MAX_TOKENS))
c1, c2, c3, c4 = st.columns(4)
layer = c1.selectbox(_("Layer"), list(range(cfg.n_layers)), index=cfg.n_layers - 1, key="traj_layer",
                     bind="query-params", help=_("Which layer's h_t to project (0 reads the embeddings)."))
method = c2.segmented_control(_("Projection"), list(METHODS), format_func=METHODS.get, default="pca",
                              required=True, key="traj_method", bind="query-params",
                              help=_("PCA maps new points exactly; t-SNE places each new state among its "
                                     "8 nearest reference states (t-SNE cannot map points it was not fitted on)."))
view_name = lambda v: _("2-D") if v == "2-D" else _("3-D")  # noqa: E731
follow_link("traj_view", ["2-D", "3-D"], view_name)  # a link made in another language names it there
view = c3.radio(_("View"), ["2-D", "3-D"], horizontal=True, key="traj_view", bind="query-params", format_func=view_name,
                help=_("3-D: drag the turn and tilt sliders under the chart to rotate the three axes."))
dims = 3 if view == "3-D" else 2
steps = snapshots(ref)
step, own = None, False
if steps:
    step_name = lambda s: _("final") if s == "final" else s  # noqa: E731
    follow_link("traj_step", [str(s) for s in steps] + ["final"], step_name)
    label = c4.select_slider(_("Over training (step)"), [str(s) for s in steps] + ["final"], value="final",
                             key="traj_step", bind="query-params", format_func=step_name)
    step = None if label == "final" else int(label)
    own = st.toggle(_("Fit each snapshot's own space"), key="traj_own", bind="query-params",
                    help=_("Off: every snapshot is drawn in the final model's space, so the frame stays still."))
else:
    c4.caption(_("This checkpoint keeps no training snapshots."))

ids, notices = tx.read_texts(info, raw)
for notice in notices:
    st.warning(notice)
if not ids:
    st.info(_("Type a text above to see its trajectory."))
    st.stop()
names = [f"text {b + 1}" for b in range(len(ids))]  # the frame's text labels (seqviz.introspect.projection)
heads = dict(zip(names, (t.strip().splitlines()[0][:32] if t.strip() else "" for t in tx.split_texts(raw))))
keep_option("traj_show", ["all"] + names, "all")
shown_name = lambda o: _("all texts") if o == "all" else _("text {i}: {start}").format(  # noqa: E731
    i=o.split()[-1], start=heads.get(o, ""))
follow_link("traj_show", ["all"] + names, shown_name)
shown = st.selectbox(_("Texts drawn"), ["all"] + names, index=0, key="traj_show", bind="query-params",
                     format_func=shown_name,
                     help=_("One text at a time keeps its path readable; every text keeps its labels sparse."))
# The snapshot whose fitted space the states are drawn in (None: the model's own).
space = None if step is None or own else ref.at(None)
try:
    main = cm.view(views.trajectory, ref.at(step), ids=tuple(ids), layer=layer, method=method, dims=dims,
                   shown=shown, space=space, step=step)
except (OSError, ValueError) as e:  # e.g. a snapshot file that does not fit the config (CheckpointError)
    st.error(error_lead(e, _("Could not read this checkpoint at step {step}:").format(step=step)
                        if step is not None else None))
    st.stop()
facts = main.facts  # main.data (the points) is made only when a file asks for it: a shipped view loads no model
show(st, main.spec, width="content" if dims == 3 else "stretch")
exports.footnote = state_line(ref.label, raw, layer=layer, projection=facts["projection"], view=view, step=step,
                              space="its own" if own else None)
export_buttons(main.spec, "Trajectory", exports.footnote, lambda: main.data, exports, csv=False)
st.caption(_("Grey: the reference sample ({sample}). {projection}. Tap or hover a point for its token, step, ‖h_t‖ "
             "and next-token loss.").format(sample=views.describe_sample(facts["sample"]),
                                           projection=views.describe(facts)))

d1, d2, d3 = st.columns(3)
d1.download_button(_("Points (CSV)"), lambda: points_csv(main.data), "trajectory_points.csv", "text/csv")
d2.download_button(_("Embeddings for TensorBoard (tensors.tsv)"),  # a callable: built only when clicked
                   lambda: tensors_tsv(cm.view(views.hidden_states, ref.at(step), ids=tuple(ids), layer=layer).data
                                       .drop(columns=["text", "step"]).to_numpy()), "tensors.tsv",
                   "text/tab-separated-values")
d3.download_button(_("Metadata for TensorBoard (metadata.tsv)"),
                   lambda: metadata_tsv(main.data[["text", "step", "token", "norm", "loss"]]), "metadata.tsv",
                   "text/tab-separated-values")
st.caption(_("Load both TSV files at projector.tensorflow.org (or TensorBoard's Projector tab) to explore "
             "the full-dimensional states."))


@st.fragment  # choosing the models reruns this section only (issue 14)
def comparison_tab():
    """The same text read by several shipped models, each drawn in its own space."""
    exports[:] = [s for s in exports if not s.heading.startswith("Trajectory ")]
    st.subheader(_("RNN vs GRU vs LSTM on the same text"))
    shipped = cm.list_checkpoints("recurrent_lm")
    names = [c.name for c in shipped]
    chosen = st.multiselect(_("Models"), names, default=classic_cells(names),
                            key="traj_compare", bind="query-params",
                            help=_("Each model is drawn in its own space, fitted on the same reference sample."))
    first = "\n".join(tx.split_texts(raw)[:1])
    by_name = {c.name: c for c in shipped}
    for col, c in zip(st.columns(max(len(chosen), 1)), [by_name[n] for n in chosen if n in by_name]):  # as chosen
        try:
            c_ref = c.ref()
            m = cm.info(c_ref)  # no torch while its view comes shipped
            m_ids = tx.read_texts(m, first)[0]
            if not m_ids:
                col.info(_("{model}: the first text has no token this model knows.").format(model=c.name))
                continue
            m_layer = min(layer, m.config.n_layers - 1)
            small = cm.view(views.trajectory, c_ref, ids=tuple(m_ids), layer=m_layer, method=method, dims=2,
                            name=c.name, compact=True)
        except (OSError, ValueError) as e:  # CheckpointError is a ValueError
            col.warning(f"{c.name}: {error_lead(e)}")
            continue
        show(col, small.spec, width="stretch")
        with col:
            export_buttons(small.spec, f"Trajectory {c.name}", state_line(c.name, first, layer=m_layer,
                           projection=small.facts["projection"]), lambda s=small: s.data, exports, csv=False)
        col.caption(views.describe(small.facts))
        col.download_button("CSV", lambda s=small: points_csv(s.data), f"trajectory_{c.name}.csv", "text/csv",
                            key=f"traj_dl_{c.name}")


def padding_tab():
    """Padding and masks: the texts right-padded into one batch, read with and without the mask."""
    st.subheader(_("Padding and masks (variable length in one batch)"))
    st.caption(_("The texts above are right-padded into one batch. A recurrent layer keeps stepping over the pad "
                 "tokens, so the 'final' state read at the last position (mask ignored) differs from the state "
                 "at each text's own last token (mask respected), which equals reading the text alone."))
    if len(ids) < 2:
        st.info(_("Give at least two texts of different lengths (separated by {separator}) to see the padding "
                  "study.").format(separator=tx.SEPARATOR))
        return
    at, texts = ref.at(step), tuple(ids)
    footnote = state_line(ref.label, raw, layer=layer, texts=len(ids))
    grid = cm.view(views.padded_batch, at, ids=texts, layer=layer)
    show(st, grid.spec, width="stretch")
    export_buttons(grid.spec, "Padded batch", footnote, grid.data, exports)
    g1, g2 = st.columns(2)
    for where, shown in ((g1, cm.view(views.mask_distance, at, ids=texts, layer=layer)),
                         (g2, cm.view(views.final_states, at, ids=texts, layer=layer, method=method, dims=dims,
                                      space=space))):
        show(where, shown.spec, width="stretch")
        with where:
            export_buttons(shown.spec, shown.title, footnote, shown.data, exports)
    table = cm.view(views.mask_distance, at, ids=texts, layer=layer).data
    st.dataframe(readable(table, **views.PADDING_TABLE), hide_index=True)
    st.caption(_("Loss, pads masked: mean next-token loss over the real tokens; loss, pads counted: the same mean "
                 "when an unmasked loss also scores predicting <pad> at the padded positions."))
    st.download_button(_("Padding study (CSV)"), table.to_csv(index=False), "padding_study.csv", "text/csv")


# Lazy tabs: only the open one runs, so a new layer or text redraws the main chart and one section, not both
# (each draws three charts); the open tab is in the URL.
SECTIONS = {N_("RNN vs GRU vs LSTM"): comparison_tab, N_("Padding and masks"): padding_tab}
opened, tab = lazy_tabs(list(SECTIONS), "traj_tab")
with tab:
    SECTIONS[opened]()
picked.finish()  # after the charts: the sidebar says what was found; the model loads for the next move
