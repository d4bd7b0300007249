"""The course around the package: the notebooks' standard runs (runs.py), the shipped checkpoints
(pretrained.py), the figures in figures/ (figures.py), and the notebooks' student versions, prose
budgets and website (notebooks.py, and `python -m minibert.course`)."""

from ..cache import cached
from .runs import COURSE_RUNS, course_run, run_dir, say, verdict

__all__ = ["COURSE_RUNS", "course_run", "run_dir", "say", "verdict", "cached"]
