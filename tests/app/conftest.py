"""AppTest isolation: Streamlit's caches are process-wide, so each app test starts with them empty.

Without this, a model, trace or fitted projection cached by one test (under one environment,
e.g. a monkeypatched corpus path) would be served to the next test at the same checkpoint path.
"""

import pytest
import streamlit as st


@pytest.fixture(autouse=True)
def empty_streamlit_caches():
    st.cache_data.clear()
    st.cache_resource.clear()
    yield
