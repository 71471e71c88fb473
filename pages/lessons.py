"""Lesson mode: the seeds' stations as guided steps — goal, predict first, one live view, what to notice, link."""

import streamlit as st

from appkit import lessons as ls
from appkit.i18n import _

found = ls.all_lessons()
lesson_id, index, present = ls.position()
lesson = found[lesson_id]
step = lesson.steps[index]
n = len(lesson.steps)
if present:
    st.html(ls.PRESENTER_CSS)
else:
    st.title(_("Lessons"))
    st.caption(_("Each step: a goal, a question to answer before the view reveals it, one live view on the "
                 "shipped models with the one control that makes the point, and what to notice in its numbers. "
                 "The step is in the address: copy it to open a class at the same step."))

titles = {k: _(found[k].title) for k in found}  # translated now: a format_func may be called outside this run
top = st.columns([3, 2])
top[0].selectbox(_("Lesson"), list(found), list(found).index(lesson_id), key="lesson_pick", format_func=titles.get,
                 on_change=lambda: ls.go(st.session_state["lesson_pick"], 0, present))
top[1].toggle(_("Presenter mode"), present, key="lesson_present",
              on_change=lambda: ls.go(lesson_id, index, st.session_state["lesson_present"]))
if lesson.seed and not present:
    st.caption(_("Follows the textbook: {seed}").format(seed=_(lesson.seed)))

nav = st.columns([1, 2, 1])
nav[0].button(_("← Previous"), key="lesson_prev", disabled=index == 0, width="stretch",
              on_click=ls.go, args=(lesson_id, index - 1, present))
nav[1].markdown(_("**Step {i} of {n}**").format(i=index + 1, n=n) +
                (f" · {step.station}" if step.station else ""))
nav[2].button(_("Next →"), key="lesson_next", disabled=index == n - 1, width="stretch",
              on_click=ls.go, args=(lesson_id, index + 1, present))

st.subheader(_(step.title))
st.markdown(_("**Goal:** {goal}").format(goal=_(step.goal)))

prefix = f"lesson_{lesson_id}_{index}"
options = [_(text) for text, _when in step.options]
guess = ls.guess(step, f"{prefix}_guess", options)
shown = guess is not None or st.session_state.get(f"{prefix}_shown", False) or st.query_params.get("reveal") == "1"
if not shown:
    st.info(_("Commit to an answer: the live view appears once you have chosen."))
    st.button(_("Show the view without answering"), key=f"{prefix}_reveal",
              on_click=lambda: st.session_state.update({f"{prefix}_shown": True}))
    st.stop()

value = ls.control(step, f"{prefix}_value")
numbers = ls.draw_view(step, value, present)
if numbers is None:
    st.stop()
right = ls.right_options(step, numbers)
answers = " / ".join(options[i] for i in right)
if guess is not None and guess in right:
    st.success(_("Your prediction holds here: {answer}.").format(answer=answers))
elif guess is not None:
    st.warning(_("The view says otherwise: {answer}.").format(answer=answers))
else:
    st.info(_("The view says: {answer}.").format(answer=answers))

st.markdown("#### " + _("What to notice"))
st.markdown("\n".join(f"- {line}" for line in ls.notes(step, numbers)))
if (wrong := ls.slip(step, numbers)) is not None:
    st.warning(_("**Where the seed slips.** {text}").format(text=wrong))
st.markdown(_("[Open the full page in this state]({url})").format(url=ls.link(step, value, numbers)))
