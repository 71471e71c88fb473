"""Hidden-state trajectories: the path h_t walks while a model reads, in a space fitted once on a reference sample."""

import streamlit as st

from appkit import models as cm
from appkit import texts as tx
from appkit.i18n import N_, _, error_lead, localize_chart
from appkit.export import export_buttons, view_button
from appkit.sections import trajectories as sec
from appkit.widgets import lazy_tabs
from appkit.sidebar import checkpoint_picker
from appkit.state import follow_link, keep_option
from seqviz.export import state_line
from seqviz.introspect.projection import METHODS, metadata_tsv, points_csv, tensors_tsv

st.title(_("Hidden-state trajectories"))
st.caption(_("Each token moves the hidden state h_t. The states are projected to 2-D (or 3-D) with a projection "
             "fitted once on a reference sample of held-out text and kept, so every text lands in the same space."))

ref = checkpoint_picker("recurrent_lm")
if ref is None:
    st.stop()
model = cm.model(ref)
cfg = model.config
exports = view_button("trajectories", f"Hidden-state trajectories · {ref.label}", model)
DEFAULT = ("To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n---\n"
           "HAMLET.\nThe rest is silence.\n---\nThe quick brown fox jumps over the lazy dog.")
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
                help=_("3-D is shown as two linked 2-D views sharing the second axis."))
dims = 3 if view == "3-D" else 2
steps = cm.snapshots(ref)
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

ids, notices = tx.read_texts(model, raw)
for notice in notices:
    st.warning(notice)
if not ids:
    st.info(_("Type a text above to see its trajectory."))
    st.stop()
names = [f"text {b + 1}" for b in range(len(ids))]  # the frame's text labels (seqviz.introspect.projection)
heads = dict(zip(names, (t.strip().splitlines()[0][:32] if t.strip() else "" for t in tx.split_texts(raw))))
keep_option("traj_show", ["all"] + names, names[0])
shown_name = lambda o: _("all texts") if o == "all" else _("text {i}: {start}").format(  # noqa: E731
    i=o.split()[-1], start=heads.get(o, ""))
follow_link("traj_show", ["all"] + names, shown_name)
shown = st.selectbox(_("Texts drawn"), ["all"] + names, index=1, key="traj_show", bind="query-params",
                     format_func=shown_name,
                     help=_("One text at a time keeps its path readable; every text keeps its labels sparse."))
heading = sec.title(sec.model_name(model), layer, step)
try:
    space = ref.at(step if own else None)  # the snapshot whose fitted space the states are drawn in
    proj = cm.projection(space, layer, method, dims)
    trace = cm.trace(ref.at(step), tuple(ids))
    frame = cm.trajectory(ref.at(step), space, layer, method, dims, tuple(ids))
    spec = cm.view_spec(sec.trajectory_spec, ref.at(step), space, layer, method, dims, tuple(ids), shown,
                        heading)
except (OSError, ValueError) as e:  # e.g. a snapshot file that does not fit the config (CheckpointError)
    st.error(error_lead(e, _("Could not read this checkpoint at step {step}:").format(step=step)
                        if step is not None else None))
    st.stop()
label = ref.label
spec = localize_chart(spec)
cm.show(st, spec, width="content" if dims == 3 else "stretch")
exports.footnote = state_line(label, raw, layer=layer, projection=proj.describe(), view=view, step=step,
                           space="its own" if own else None)
export_buttons(spec, "Trajectory", exports.footnote, frame, exports, csv=False)
st.caption(_("Grey: the reference sample ({sample}). {projection}. Hover a point for its token, step, ‖h_t‖ "
             "and next-token loss.").format(sample=proj.info["sample"], projection=sec.describe(proj)))

d1, d2, d3 = st.columns(3)
d1.download_button(_("Points (CSV)"), lambda: points_csv(frame), "trajectory_points.csv", "text/csv")
states = trace[f"layers.{layer}.h"][trace["mask"]].numpy()  # every valid token's full h_t
meta = frame[["text", "step", "token", "norm", "loss"]]
d2.download_button(_("Embeddings for TensorBoard (tensors.tsv)"), lambda: tensors_tsv(states),
                   "tensors.tsv", "text/tab-separated-values")  # a callable: built only when clicked
d3.download_button(_("Metadata for TensorBoard (metadata.tsv)"), lambda: metadata_tsv(meta),
                   "metadata.tsv", "text/tab-separated-values")
st.caption(_("Load both TSV files at projector.tensorflow.org (or TensorBoard's Projector tab) to explore "
             "the full-dimensional states."))

# Lazy tabs: only the open one runs, so a new layer or text redraws the main chart and one section, not both
# (each draws three charts); the open tab is in the URL.
SECTIONS = {N_("RNN vs GRU vs LSTM"): lambda: sec.comparison(raw, layer, method, exports),
            N_("Padding and masks"): lambda: sec.padding_study(trace, proj, ids, raw, layer, label, exports)}
opened, tab = lazy_tabs(list(SECTIONS), "traj_tab")
with tab:
    SECTIONS[opened]()
