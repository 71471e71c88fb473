"""Page sections: the tab bodies, fragments and helpers of the long pages, moved out so each page keeps only its
top-level flow (title, caption, picker, main controls, the tab/section dispatch). Each function takes what it
needs explicitly; ``@st.fragment`` stays on the moved fragments, and ``_()`` is called at run time only."""
