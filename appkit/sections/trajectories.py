"""Sections of the trajectories page (pages/trajectories.py): the model comparison and the padding study."""

import pandas as pd
import streamlit as st

from appkit import models as cm
from appkit import texts as tx
from appkit.export import export_buttons
from appkit.i18n import N_, _, error_lead, localize_chart
from seqviz.export import state_line
from seqviz.introspect.projection import KNN, mask_study, pick_texts, points_csv
from seqviz.charts import trajectory as trajectory_charts

READINGS = {"mask respected (last real token)": N_("mask respected (last real token)"),
            "mask ignored (position T-1)": N_("mask ignored (position T-1)")}


def describe(p) -> str:
    """How the space was made, in the session's language (``Projection.describe`` in English goes to exports)."""
    if p.method == "pca":
        parts = ", ".join(f"PC{i + 1} {100 * v:.1f} %" for i, v in enumerate(p.explained))
        return _("{parts} of the reference variance (together {total:.1f} %)").format(
            parts=parts, total=100 * sum(p.explained))
    return _("t-SNE of {n:,} reference states (perplexity {perplexity:g}); a new state is placed at the weighted "
             "mean of its {k} nearest reference states").format(
        n=p.info.get("n_reference", len(p.ref_points)), perplexity=p.info.get("perplexity", 30), k=KNN)


def title(name: str, layer: int, step: int | None = None) -> str:
    """A trajectory chart's title in the session's language: the model's name, layer[, step]."""
    return (_("{model} · layer {layer}").format(model=name, layer=layer)
            + (" · " + _("step {step}").format(step=step) if step is not None else ""))


def model_name(model) -> str:
    return model.card.get("name") or _("model")


def trajectory_spec(at, space, layer: int, method: str, dims: int, ids: tuple, shown: str, heading: str) -> dict:
    """The page's trajectory chart (``shown``: "all" or one text's label) as a Vega-Lite spec: the states
    of ``at`` in the space fitted for ``space``. The page asks ``models.view_spec`` for it."""
    proj = cm.projection(space, layer, method, dims)
    frame = cm.trajectory(at, space, layer, method, dims, ids)
    ref = pd.DataFrame(proj.ref_points, columns=list("xyz")[:dims])
    drawn = pick_texts(frame, None if shown == "all" else shown)
    if dims == 3:
        return cm.chart_spec(trajectory_charts.pair_views, drawn, proj.axis_names, ref, heading)
    return cm.chart_spec(trajectory_charts.trajectory_chart, drawn, proj.axis_names, ref, title=heading)


def comparison_spec(c_ref, layer: int, method: str, ids: tuple, heading: str) -> dict:
    """One model's small trajectory chart in the comparison, in its own space (through ``models.view_spec``)."""
    proj = cm.projection(c_ref, layer, method, 2)
    frame = cm.trajectory(c_ref, c_ref, layer, method, 2, ids)
    return cm.chart_spec(trajectory_charts.trajectory_chart, frame, proj.axis_names,
                         pd.DataFrame(proj.ref_points, columns=["x", "y"]), title=heading, width=300, height=280)


@st.fragment  # choosing the models reruns this section only (issue 14)
def comparison(raw: str, layer: int, method: str, exports: list):
    exports[:] = [s for s in exports if not s.heading.startswith("Trajectory ")]
    st.subheader(_("RNN vs GRU vs LSTM on the same text"))
    shipped = cm.list_checkpoints("recurrent_lm")
    chosen = st.multiselect(_("Models"), [c.name for c in shipped], default=[c.name for c in shipped][:3],
                            key="traj_compare", bind="query-params",
                            help=_("Each model is drawn in its own space, fitted on the same reference sample."))
    first = tx.split_texts(raw)[:1]
    cols = st.columns(max(len(chosen), 1))
    for col, c in zip(cols, [c for c in shipped if c.name in chosen]):
        try:
            c_ref = c.ref()
            m = cm.model(c_ref)
            m_ids = tx.read_texts(m, "\n".join(first))[0]
            if not m_ids:
                col.info(_("{model}: the first text has no token this model knows.").format(model=c.name))
                continue
            m_layer = min(layer, m.config.n_layers - 1)
            m_proj = cm.projection(c_ref, m_layer, method, 2)
            m_frame = cm.trajectory(c_ref, c_ref, m_layer, method, 2, tuple(m_ids))
            m_spec = localize_chart(cm.view_spec(comparison_spec, c_ref, m_layer, method, tuple(m_ids),
                                                 title(c.name, m_layer)))
        except (OSError, ValueError) as e:  # CheckpointError is a ValueError
            col.warning(f"{c.name}: {error_lead(e)}")
            continue
        cm.show(col, m_spec, width="stretch")
        with col:
            export_buttons(m_spec, f"Trajectory {c.name}", state_line(c.name, "\n".join(first), layer=m_layer,
                           projection=m_proj.describe()), m_frame, exports, csv=False)
        col.caption(describe(m_proj))
        col.download_button("CSV", lambda f=m_frame: points_csv(f), f"trajectory_{c.name}.csv", "text/csv",
                            key=f"traj_dl_{c.name}")


def padding_study(trace, proj, ids: list, raw: str, layer: int, label: str, exports: list):
    """Padding and masks: the texts right-padded into one batch, read with and without the mask."""
    st.subheader(_("Padding and masks (variable length in one batch)"))
    st.caption(_("The texts above are right-padded into one batch. A recurrent layer keeps stepping over the pad "
                 "tokens, so the 'final' state read at the last position (mask ignored) differs from the state "
                 "at each text's own last token (mask respected), which equals reading the text alone."))
    if len(ids) < 2:
        st.info(_("Give at least two texts of different lengths (separated by {separator}) to see the padding "
                  "study.").format(separator=tx.SEPARATOR))
        st.stop()
    study = mask_study(trace, layer)
    padding = state_line(label, raw, layer=layer, texts=len(ids))
    grid_spec = localize_chart(cm.chart_spec(trajectory_charts.padding_grid_chart, study.grid))
    cm.show(st, grid_spec, width="stretch")
    export_buttons(grid_spec, "Padded batch", padding, study.grid, exports)
    g1, g2 = st.columns(2)
    dist_spec = localize_chart(cm.chart_spec(trajectory_charts.mask_distance_chart, study.table))
    cm.show(g1, dist_spec, width="stretch")
    with g1:
        export_buttons(dist_spec, "Mask distance", padding, study.table, exports)
    ends = pd.concat([pd.DataFrame(proj.transform(s)[:, :2], columns=["x", "y"]).assign(
        text=study.table["text"], reading=_(READINGS[r])) for s, r in ((study.respected, "mask respected (last real token)"),
                                                                      (study.ignored, "mask ignored (position T-1)"))])
    ends_spec = localize_chart(cm.chart_spec(trajectory_charts.final_states_chart, ends, proj.axis_names))
    cm.show(g2, ends_spec, width="stretch")
    with g2:
        export_buttons(ends_spec, "Final states", padding, ends, exports)
    st.dataframe(study.table, hide_index=True, column_config={
        c: st.column_config.NumberColumn(format="%.4f") for c in
        ("distance", "cosine", "norm_respected", "norm_ignored", "loss_masked", "loss_pads_counted")})
    st.caption(_("loss_masked: mean next-token loss over the real tokens; loss_pads_counted: the same mean when an "
                 "unmasked loss also scores predicting <pad> at the padded positions."))
    st.download_button(_("Padding study (CSV)"), study.table.to_csv(index=False), "padding_study.csv", "text/csv")
