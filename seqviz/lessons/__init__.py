"""Lessons: the seeds' stations as guided paths of steps, each a live view on the shipped models (no Streamlit)."""

from seqviz.lessons.load import Lesson, LessonError, Step, lessons, read_lesson
from seqviz.lessons.views import VIEWS, View, run_view

__all__ = ["Lesson", "LessonError", "Step", "VIEWS", "View", "lessons", "read_lesson", "run_view"]
