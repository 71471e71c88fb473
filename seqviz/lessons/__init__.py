"""Lessons: the seeds' stations as guided paths of steps, each a live view on the shipped models (no Streamlit).

Reading the lessons needs no torch (the lesson page reads them before it shows anything); the views do,
so ``VIEWS``, ``View`` and ``run_view`` are imported from ``seqviz.lessons.views`` when first asked for.
"""

from seqviz.lessons.load import Lesson, LessonError, Step, lessons, read_lesson

__all__ = ["Lesson", "LessonError", "Step", "VIEWS", "View", "lessons", "read_lesson", "run_view"]


def __getattr__(name: str):
    if name in ("VIEWS", "View", "run_view"):
        from seqviz.lessons import views

        return getattr(views, name)
    raise AttributeError(f"module 'seqviz.lessons' has no attribute {name!r}")
